/*
util/sampler.h: the next token from the model's logits (temperature, top-k). Plumbing,
separate from the model, as in llama2.c.
*/
#ifndef UTIL_SAMPLER_H
#define UTIL_SAMPLER_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "io.h"
#include "random.h"

typedef struct {
    float temperature;  // 0 = always the most likely token
    int top_k;          // keep the k most likely tokens; 0 = all
    uint64_t rng;       // counter of the random stream (saved in checkpoints)
    int V;
    float* probs;       // (V) scratch
    int* order;         // (V) scratch for top-k
} Sampler;

static inline void sampler_init(Sampler* s, int V, float temperature, int top_k, uint64_t seed) {
    s->V = V; s->temperature = temperature; s->top_k = top_k; s->rng = splitmix64(seed);
    s->probs = mallocCheck((size_t)V * sizeof(float));
    s->order = mallocCheck((size_t)V * sizeof(int));
}

static inline void sampler_free(Sampler* s) { free(s->probs); free(s->order); }

static const float* sort_probs;  // for qsort's comparator
static int compare_by_prob(const void* a, const void* b) {
    int i = *(const int*)a, j = *(const int*)b;
    if (sort_probs[i] != sort_probs[j]) return sort_probs[i] > sort_probs[j] ? -1 : 1;
    return i - j;  // ties by id, so the order is deterministic
}

static inline int sampler_sample(Sampler* s, const float* logits) {
    int V = s->V;
    if (s->temperature <= 0.0f) {
        int best = 0;
        for (int i = 1; i < V; i++)
            if (logits[i] > logits[best]) best = i;
        return best;
    }
    float maxval = -INFINITY;
    for (int i = 0; i < V; i++)
        if (logits[i] > maxval) maxval = logits[i];
    for (int i = 0; i < V; i++) {
        s->probs[i] = expf((logits[i] - maxval) / s->temperature);
        s->order[i] = i;
    }
    int n = V;
    if (s->top_k > 0 && s->top_k < V) {
        sort_probs = s->probs;
        qsort(s->order, V, sizeof(int), compare_by_prob);
        n = s->top_k;
    }
    double total = 0.0;
    for (int i = 0; i < n; i++)
        total += s->probs[s->order[i]];
    double r = random_f32(&s->rng) * total, cdf = 0.0;
    for (int i = 0; i < n; i++) {
        cdf += s->probs[s->order[i]];
        if (r < cdf) return s->order[i];
    }
    return s->order[n - 1];
}

#endif
