/*
util/dataloader.h: batches of tokens from an llm.c token file (magic 20240520, uint16
tokens after the header; doc/formats.md). Plumbing.

Sequential (llm.c's way, -sh 0): a batch is B*T+1 consecutive tokens, inputs the first
B*T and targets the same shifted by one; batches follow each other through the file and
wrap around. Shuffled (-sh 1, the default): the file is cut into windows of T+1 tokens,
at an offset drawn anew each epoch, and each batch takes B windows in a random order, so
consecutive steps see unrelated text (as nanoGPT's random windows do) while every epoch
still covers the file once. Validation is always sequential.
*/
#ifndef UTIL_DATALOADER_H
#define UTIL_DATALOADER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io.h"
#include "random.h"

typedef struct {
    const char* path;
    uint16_t* tokens;
    size_t num_tokens;
    int B, T;
    size_t num_batches;  // batches per epoch
    int shuffle;         // windows in a random order, shifted by a random offset
    uint64_t seed;
    size_t* order;       // sequential: batch order; shuffled: window order
    size_t offset;       // shuffled: where this epoch's windows start (0..T-1)
    long epoch;          // the position: batch batch_index of epoch comes next
    size_t batch_index;
    int* inputs;         // (B,T)
    int* targets;        // (B,T)
} DataLoader;

static void load_token_file(DataLoader* d, const char* path, int V) {
    FILE* f = fopenCheck(path, "rb");
    int32_t h[256];
    read_header(f, path, h, 20240520, "llm.c token file");
    if (h[1] != 1) die("'%s': token file version %d is not supported (expected 1)", path, h[1]);
    if (h[2] < 0) die("'%s': negative token count %d in the header", path, h[2]);
    size_t n = (size_t)h[2];
    long expected = 1024L + 2L * (long)n, actual = file_size(f);
    if (actual < expected)
        die("'%s' is truncated: its header promises %zu tokens (%ld bytes), the file has %ld bytes",
            path, n, expected, actual);
    if (actual > expected)
        die("'%s' is longer than its header says (%ld bytes, expected %ld)", path, actual, expected);
    d->tokens = mallocCheck(n * sizeof(uint16_t) + 1);
    fread_check(d->tokens, sizeof(uint16_t), n, f, path, "tokens");
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (d->tokens[i] >= V)
            die("'%s': token %d at position %zu is outside the model's vocabulary (0..%d)",
                path, d->tokens[i], i, V - 1);
    d->num_tokens = n;
}

// windows of T+1 tokens that fit after any offset < T
static size_t dataloader_num_windows(const DataLoader* d) { return (d->num_tokens - d->T) / d->T; }

// the order of this epoch: identity when sequential, a seeded permutation of the windows
// (and a seeded offset) when shuffled; recomputable from (seed, epoch) alone, so a
// resumed run continues exactly
static void dataloader_shuffle(DataLoader* d) {
    size_t n = d->shuffle ? dataloader_num_windows(d) : d->num_batches;
    for (size_t i = 0; i < n; i++)
        d->order[i] = i;
    if (!d->shuffle) return;
    uint64_t rng = d->seed ^ splitmix64((uint64_t)d->epoch);
    d->offset = random_u64(&rng) % d->T;
    for (size_t i = n - 1; i > 0; i--) {   // Fisher-Yates
        size_t j = random_u64(&rng) % (i + 1);
        size_t t = d->order[i]; d->order[i] = d->order[j]; d->order[j] = t;
    }
}

void dataloader_init(DataLoader* d, const char* path, int B, int T, int V, int shuffle, uint64_t seed,
                     const char* flags) {
    memset(d, 0, sizeof *d);
    d->path = path; d->B = B; d->T = T; d->shuffle = shuffle; d->seed = seed;
    load_token_file(d, path, V);
    size_t need = (size_t)B * T + 1;
    if (d->num_tokens < need)
        die("'%s' has %zu tokens, fewer than one batch of B*T+1 = %zu (%s)",
            path, d->num_tokens, need, flags);
    d->num_batches = shuffle ? dataloader_num_windows(d) / B : (d->num_tokens - 1) / ((size_t)B * T);
    if (d->num_batches == 0)  // shuffled windows can need up to T-1 more tokens
        die("'%s' has %zu tokens, too few for one shuffled batch of %d windows of %d (%s, or -sh 0)",
            path, d->num_tokens, B, T + 1, flags);
    d->order = mallocCheck((shuffle ? dataloader_num_windows(d) : d->num_batches) * sizeof(size_t));
    d->inputs = mallocCheck((size_t)B * T * sizeof(int));
    d->targets = mallocCheck((size_t)B * T * sizeof(int));
    dataloader_shuffle(d);
}

// copies T+1 tokens starting at src into row r of inputs/targets
static void dataloader_fill_row(DataLoader* d, int r, const uint16_t* src) {
    for (int t = 0; t < d->T; t++) {
        d->inputs[(size_t)r * d->T + t] = src[t];
        d->targets[(size_t)r * d->T + t] = src[t + 1];
    }
}

// loads sequential batch number k of the file (k < (num_tokens-1) / (B*T))
void dataloader_load_batch(DataLoader* d, size_t k) {
    for (int r = 0; r < d->B; r++)
        dataloader_fill_row(d, r, d->tokens + (k * d->B + r) * d->T);
}

void dataloader_next_batch(DataLoader* d) {
    if (d->shuffle) {
        for (int r = 0; r < d->B; r++)
            dataloader_fill_row(d, r, d->tokens + d->offset + d->order[d->batch_index * d->B + r] * d->T);
    } else {
        dataloader_load_batch(d, d->order[d->batch_index]);
    }
    if (++d->batch_index == d->num_batches) { d->batch_index = 0; d->epoch++; dataloader_shuffle(d); }
}

void dataloader_seek(DataLoader* d, long epoch, size_t batch_index) {
    if (batch_index >= d->num_batches)
        die("'%s': saved data position %zu is past its %zu batches", d->path, batch_index, d->num_batches);
    d->epoch = epoch;
    d->batch_index = batch_index;
    dataloader_shuffle(d);
}

void dataloader_free(DataLoader* d) {
    free(d->tokens); free(d->order); free(d->inputs); free(d->targets);
}

#endif
