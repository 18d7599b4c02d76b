/*
util/schedulers.h: the learning rate of each step, llm.c's schedules (llmc/schedulers.h),
chosen with -k. Part of the optimiser (train_gpt2.c's AdamW section), kept apart as llm.c
keeps it.
*/
#ifndef UTIL_SCHEDULERS_H
#define UTIL_SCHEDULERS_H

#include <math.h>

enum { LR_COSINE, LR_LINEAR, LR_CONSTANT, LR_WSD };  // -k: llm.c's schedules (util/cli.h: LR_SCHEDULES)

// llm.c's schedules (llmc/schedulers.h): linear warmup over `warmup` steps, then a decay to
// final_frac * lr at max_steps along half a cosine (the default) or a line; or (wsd:
// warmup-stable-decay) lr until 80% of max_steps, then down as 1 - sqrt(progress); or the
// constant lr, without warmup
static inline float learning_rate(int schedule, int step, float lr, int warmup, int max_steps,
                                  float final_frac) {
    if (schedule == LR_CONSTANT) return lr;
    if (step < warmup) return lr * (step + 1) / warmup;
    int start = schedule == LR_WSD ? (int)(0.8f * max_steps) : warmup;  // where the decay starts
    if (max_steps <= start || step < start) return lr;
    double ratio = (double)(step - start) / (max_steps - start);
    if (ratio > 1.0) ratio = 1.0;
    double coeff = schedule == LR_LINEAR ? 1.0 - ratio : schedule == LR_WSD ? 1.0 - sqrt(ratio)
                 : 0.5 * (1.0 + cos(M_PI * ratio));
    float lr_min = lr * final_frac;
    return (float)(lr_min + coeff * (lr - lr_min));
}

#endif
