/*
util/state.h: the training-state file beside each checkpoint, and finding the newest
checkpoint. Plumbing; the model's own checkpoint is written by train_gpt2.c.

The training state is everything besides the weights that a resumed run needs to continue
exactly: AdamW's moments, the step, the data position, the sampler's random stream. Our
own format (magic 20241124, version 4; doc/formats.md): a header of 256 int32, then m and
v as float32 in parameter order. Version 2 added what decides the order of the batches (the
seed, -sh, the training file's length), so that a state from another run is refused; version
3 a checksum (CRC-32C, slot 255), so that a damaged one is refused too; version 4 the CRC-32C
of the checkpoint written with it (slot 19), so that a checkpoint of another run, or a damaged
one (llm.c's version 3 has no checksum of its own), is refused beside it.
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
#define STATE_VERSION 4  // 3: with a checksum (CRC-32C, slot 255); 4: and its checkpoint's (slot 19)

typedef struct {
    int step;          // updates done
    int B, T;
    long epoch;        // data loader position
    size_t batch_index;
    uint64_t sampler_rng;
    uint64_t seed;        // -sd, -sh and the training file's tokens: with the position, they
    int shuffle;          //   fix the batches to come (version 1 files lack them: 0)
    uint64_t data_tokens;
    int max_steps;        // -x of the run that wrote it: the schedule's length (0: not recorded)
} TrainState;

static void put_u64(int32_t* h, int i, uint64_t v) {
    h[i] = (int32_t)(v & 0xffffffffu);
    h[i + 1] = (int32_t)(v >> 32);
}
static uint64_t get_u64(const int32_t* h, int i) {
    return (uint64_t)(uint32_t)h[i] | ((uint64_t)(uint32_t)h[i + 1] << 32);
}

// writes st and AdamW's moments m and v (n floats each, in parameter order), atomically, with
// model_crc, the CRC-32C of the checkpoint's file written with it (atomic_committed_crc)
void write_train_state(const char* path, const TrainState* st, uint32_t model_crc, const float* m,
                       const float* v, size_t n) {
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    int32_t h[256] = {0};
    h[0] = STATE_MAGIC; h[1] = STATE_VERSION; h[2] = st->step; h[3] = st->B; h[4] = st->T;
    put_u64(h, 5, n);
    put_u64(h, 7, (uint64_t)st->epoch);
    put_u64(h, 9, st->batch_index);
    put_u64(h, 11, st->sampler_rng);
    put_u64(h, 13, st->seed);
    h[15] = st->shuffle;
    put_u64(h, 16, st->data_tokens);
    h[18] = st->max_steps;
    h[19] = (int32_t)model_crc;
    uint32_t crc = crc32c_update(header_checksum(h), m, n * sizeof(float));
    h[255] = (int32_t)crc32c_update(crc, v, n * sizeof(float));
    fwrite_check(h, sizeof(int32_t), 256, f, tmp);
    fwrite_check(m, sizeof(float), n, f, tmp);
    fwrite_check(v, sizeof(float), n, f, tmp);
    atomic_commit(f, tmp, path);
}

// every field of a state read back, within what a run can have written: a damaged file
// (or a version 1 or 2 one, which has no checksum) is refused here, never used as an index
static void check_state_fields(const char* path, const TrainState* st) {
    const char* bad = st->step < 0 ? "step" : st->B < 1 ? "B" : st->T < 1 ? "T"
                    : st->epoch < 0 || st->epoch > INT32_MAX ? "data pass (slots 7-8)"
                    : st->batch_index > ((size_t)1 << 40) ? "batch index (slots 9-10)"
                    : st->shuffle != 0 && st->shuffle != 1 ? "-sh (slot 15)"
                    : st->max_steps < 0 ? "-x (slot 18)" : NULL;
    if (bad) die("'%s' is damaged: its %s is out of range", path, bad);
}

// reads st and the moments into m and v (n floats each); the file must hold exactly n of each.
// Returns the CRC-32C of its checkpoint's file, or -1 for a version 1, 2 or 3 file (none
// recorded), which is read, its unused slots required to be 0.
int64_t read_train_state(const char* path, TrainState* st, float* m, float* v, size_t n) {
    FILE* f = fopenCheck(path, "rb");
    int32_t h[256];
    read_header(f, path, h, STATE_MAGIC, "training state file");
    if (h[1] < 1 || h[1] > STATE_VERSION)
        die("'%s': training state version %d is not supported (expected 1 to %d)", path, h[1],
            STATE_VERSION);
    check_unused_slots(path, h, h[1] == 1 ? 13 : h[1] < 4 ? 19 : 20, h[1] >= 3 ? 254 : 255);
    if (get_u64(h, 5) != n)
        die("'%s' belongs to a model with %llu parameters, this one has %zu", path,
            (unsigned long long)get_u64(h, 5), n);
    long long expected = 1024LL + 2LL * (long long)(n * sizeof(float));
    long long actual = file_size_of(f, path);
    if (actual != expected)
        die("'%s' is truncated or too long: %lld bytes, expected %lld", path, actual, expected);
    fread_check(m, sizeof(float), n, f, path, "AdamW moments");
    fread_check(v, sizeof(float), n, f, path, "AdamW moments");
    fclose(f);
    if (h[1] >= 3)
        check_checksum(path, h, crc32c_update(crc32c_update(header_checksum(h), m, n * sizeof(float)), v,
                                              n * sizeof(float)));
    st->step = h[2]; st->B = h[3]; st->T = h[4];
    st->epoch = (long)(int64_t)get_u64(h, 7);
    st->batch_index = (size_t)get_u64(h, 9);
    st->sampler_rng = get_u64(h, 11);
    st->seed = get_u64(h, 13);
    st->shuffle = h[15];
    st->data_tokens = get_u64(h, 16);
    st->max_steps = h[18];
    if (get_u64(h, 7) > INT32_MAX) st->epoch = -1;  // (long is 32 bits on Windows)
    check_state_fields(path, st);
    return h[1] >= 4 ? (int64_t)(uint32_t)h[19] : -1;
}

// A resumed run must be the run that wrote the state: the same step as its checkpoint, the
// same -b and -t, and (version 2) the same seed, -sh and training data, or the batches to come
// would not be the ones the state's position points to. now: this run's, at the same step.
void check_resumed_state(const TrainState* saved, TrainState now_value, const char* checkpoint) {
    const TrainState* now = &now_value;
    const char* what = saved->step != now->step ? "the step" : saved->B != now->B ? "-b"  // or -d
                     : saved->T != now->T ? "-t" : !saved->data_tokens ? NULL  // version 1: no more to check
                     : saved->seed != now->seed ? "-sd" : saved->shuffle != now->shuffle ? "-sh"
                     : saved->data_tokens != now->data_tokens ? "-i" : NULL;
    if (what)
        die("the training state beside '%s' belongs to another run (%s differs): it has step %d, "
            "%d rows of -t %d a step (-b x processes x -d/(B*T)), -sd %llu -sh %d, %llu training tokens; "
            "this run step %d, %d rows of -t %d, -sd %llu -sh %d, %llu tokens", checkpoint, what, saved->step,
            saved->B, saved->T,
            (unsigned long long)saved->seed, saved->shuffle, (unsigned long long)saved->data_tokens,
            now->step, now->B, now->T, (unsigned long long)now->seed, now->shuffle,
            (unsigned long long)now->data_tokens);
}

// the step of a checkpoint file's name, model_%08d.bin or state_%08d.bin; -1 for another name
// (a leftover .tmp file, say)
static int checkpoint_step(const char* name, const char* kind) {
    int step;
    char prefix[16], exact[64];
    snprintf(prefix, sizeof prefix, "%s_%%8d", kind);
    if (sscanf(name, prefix, &step) != 1 || step < 0) return -1;
    snprintf(exact, sizeof exact, "%s_%08d.bin", kind, step);
    return strcmp(exact, name) == 0 ? step : -1;
}

// the newest step in dir with a checkpoint, -1 if none. pair: both model_%08d.bin and
// state_%08d.bin (one to resume from); otherwise either file (llm.c's checkpoints too, whose
// state files are named otherwise)
int latest_checkpoint(const char* dir, int pair) {
    DIR* d = opendir(dir);
    if (!d) return -1;
    int best = -1;
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        int step = checkpoint_step(e->d_name, "state"), model_step = checkpoint_step(e->d_name, "model");
        char model_path[4096];
        struct stat sb;
        if (!pair && model_step > step) step = model_step;
        if (step <= best) continue;
        snprintf(model_path, sizeof model_path, "%s/model_%08d.bin", dir, step);
        if (!pair || stat(model_path, &sb) == 0) best = step;
    }
    closedir(d);
    return best;
}

static int compare_steps_descending(const void* a, const void* b) {
    return *(const int*)b - *(const int*)a;
}

// -nk keep: removes every checkpoint (model_ and state_ of one step) of dir but the newest
// keep ones and those of steps that are multiples of major (-nm; 0 = none); keep 0 removes
// all (-ow 1). Returns the number of steps removed.
int prune_checkpoints(const char* dir, int keep, int major) {
    DIR* d = opendir(dir);
    if (!d) return 0;
    int* steps = NULL;
    int n = 0, cap = 0, removed = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        int step = checkpoint_step(e->d_name, "model");
        if (step < 0) step = checkpoint_step(e->d_name, "state");
        if (step < 0) continue;
        int seen = 0;
        for (int i = 0; i < n && !seen; i++) seen = steps[i] == step;
        if (seen) continue;
        if (n == cap) steps = realloc(steps, (size_t)(cap = 2 * cap + 16) * sizeof(int));
        if (!steps) die("out of memory listing the checkpoints of '%s'", dir);
        steps[n++] = step;
    }
    closedir(d);
    qsort(steps, (size_t)n, sizeof(int), compare_steps_descending);
    for (int i = keep; i < n; i++) {
        char path[4096];
        if (major > 0 && steps[i] % major == 0) continue;
        snprintf(path, sizeof path, "%s/model_%08d.bin", dir, steps[i]);
        remove(path);
        snprintf(path, sizeof path, "%s/state_%08d.bin", dir, steps[i]);
        remove(path);
        removed++;
    }
    free(steps);
    return removed;
}

#endif
