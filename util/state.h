/*
util/state.h: the training-state file beside each checkpoint, and finding the newest
checkpoint. Plumbing; the model's own checkpoint is written by train_gpt2.c.

The training state is everything besides the weights that a resumed run needs to continue
exactly: AdamW's moments, the step, the data position, the sampler's random stream. Our
own format (magic 20241124, version 2; doc/formats.md): a header of 256 int32, then m and
v as float32 in parameter order. Version 2 adds what decides the order of the batches (the
seed, -sh, the training file's length), so that a state from another run is refused.
*/
#ifndef UTIL_STATE_H
#define UTIL_STATE_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "io.h"

#define STATE_MAGIC 20241124

typedef struct {
    int step;          // updates done
    int B, T;
    long epoch;        // data loader position
    size_t batch_index;
    uint64_t sampler_rng;
    uint64_t seed;        // -sd, -sh and the training file's tokens: with the position, they
    int shuffle;          //   fix the batches to come (version 1 files lack them: 0)
    uint64_t data_tokens;
} TrainState;

static void put_u64(int32_t* h, int i, uint64_t v) {
    h[i] = (int32_t)(v & 0xffffffffu);
    h[i + 1] = (int32_t)(v >> 32);
}
static uint64_t get_u64(const int32_t* h, int i) {
    return (uint64_t)(uint32_t)h[i] | ((uint64_t)(uint32_t)h[i + 1] << 32);
}

// writes st and AdamW's moments m and v (n floats each, in parameter order), atomically
void write_train_state(const char* path, const TrainState* st, const float* m, const float* v, size_t n) {
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    int32_t h[256] = {0};
    h[0] = STATE_MAGIC; h[1] = 2; h[2] = st->step; h[3] = st->B; h[4] = st->T;
    put_u64(h, 5, n);
    put_u64(h, 7, (uint64_t)st->epoch);
    put_u64(h, 9, st->batch_index);
    put_u64(h, 11, st->sampler_rng);
    put_u64(h, 13, st->seed);
    h[15] = st->shuffle;
    put_u64(h, 16, st->data_tokens);
    fwrite_check(h, sizeof(int32_t), 256, f, tmp);
    fwrite_check(m, sizeof(float), n, f, tmp);
    fwrite_check(v, sizeof(float), n, f, tmp);
    atomic_commit(f, tmp, path);
}

// reads st and the moments into m and v (n floats each); the file must hold exactly n of each
void read_train_state(const char* path, TrainState* st, float* m, float* v, size_t n) {
    FILE* f = fopenCheck(path, "rb");
    int32_t h[256];
    read_header(f, path, h, STATE_MAGIC, "training state file");
    if (h[1] != 1 && h[1] != 2)
        die("'%s': training state version %d is not supported (expected 1 or 2)", path, h[1]);
    if (get_u64(h, 5) != n)
        die("'%s' belongs to a model with %llu parameters, this one has %zu", path,
            (unsigned long long)get_u64(h, 5), n);
    long expected = 1024L + 2L * (long)(n * sizeof(float));
    if (file_size(f) != expected)
        die("'%s' is truncated or too long: %ld bytes, expected %ld", path, file_size(f), expected);
    st->step = h[2]; st->B = h[3]; st->T = h[4];
    st->epoch = (long)get_u64(h, 7);
    st->batch_index = (size_t)get_u64(h, 9);
    st->sampler_rng = get_u64(h, 11);
    st->seed = get_u64(h, 13);
    st->shuffle = h[15];
    st->data_tokens = get_u64(h, 16);
    fread_check(m, sizeof(float), n, f, path, "AdamW moments");
    fread_check(v, sizeof(float), n, f, path, "AdamW moments");
    fclose(f);
}

// A resumed run must be the run that wrote the state: the same step as its checkpoint, the
// same -b and -t, and (version 2) the same seed, -sh and training data, or the batches to come
// would not be the ones the state's position points to. now: this run's, at the same step.
void check_resumed_state(const TrainState* saved, TrainState now_value, const char* checkpoint) {
    const TrainState* now = &now_value;
    const char* what = saved->step != now->step ? "the step" : saved->B != now->B ? "-b"
                     : saved->T != now->T ? "-t" : !saved->data_tokens ? NULL  // version 1: no more to check
                     : saved->seed != now->seed ? "-sd" : saved->shuffle != now->shuffle ? "-sh"
                     : saved->data_tokens != now->data_tokens ? "-i" : NULL;
    if (what)
        die("the training state beside '%s' belongs to another run (%s differs): it has step %d, "
            "-b %d -t %d, -sd %llu -sh %d, %llu training tokens; this run step %d, -b %d -t %d, -sd %llu "
            "-sh %d, %llu tokens", checkpoint, what, saved->step, saved->B, saved->T,
            (unsigned long long)saved->seed, saved->shuffle, (unsigned long long)saved->data_tokens,
            now->step, now->B, now->T, (unsigned long long)now->seed, now->shuffle,
            (unsigned long long)now->data_tokens);
}

// the newest step in dir that has both model_%08d.bin and state_%08d.bin; -1 if none
int latest_checkpoint(const char* dir) {
    DIR* d = opendir(dir);
    if (!d) return -1;
    int best = -1;
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        int step;
        char name[64], model_path[4096];
        struct stat sb;
        if (sscanf(e->d_name, "state_%8d", &step) != 1 || step <= best) continue;
        snprintf(name, sizeof name, "state_%08d.bin", step);
        if (strcmp(name, e->d_name) != 0) continue;  // e.g. a leftover .tmp file
        snprintf(model_path, sizeof model_path, "%s/model_%08d.bin", dir, step);
        if (stat(model_path, &sb) == 0) best = step;
    }
    closedir(d);
    return best;
}

#endif
