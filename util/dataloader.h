/*
util/dataloader.h: batches of tokens from llm.c token files (magic 20240520, uint16
tokens after the header; doc/formats.md). Plumbing.

-i and -j name one file or, as llm.c's do, a glob pattern over shards
(fineweb_train_*.bin): the shards are walked in sorted order, one in memory at a time,
and batches do not cross from one shard into the next. The position is (pass, batch):
pass counts the shards finished since the start, so shard = pass % shards and the
epoch is pass / shards; with one file a pass is an epoch. The training-state file
stores that position, so a resumed run continues in the same shard at the same batch.

Sequential (llm.c's way, -sh 0): a batch is B*T+1 consecutive tokens, inputs the first
B*T and targets the same shifted by one; batches follow each other through the shard and
wrap around. Shuffled (-sh 1, the default): the shard is cut into windows of T+1 tokens,
at an offset drawn anew each pass, and each batch takes B windows in a random order, so
consecutive steps see unrelated text (as nanoGPT's random windows do) while every pass
still covers the shard once. Validation is always sequential.
*/
#ifndef UTIL_DATALOADER_H
#define UTIL_DATALOADER_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "compat.h"  // glob (Windows has none)
#include "io.h"
#include "random.h"

typedef struct {
    char** shards;       // the files, sorted (one when -i names a file)
    int num_shards;
    size_t* shard_tokens;  // (num_shards) each shard's token count, from its header
    size_t total_tokens;   // all shards together
    size_t total_batches;  // batches in one pass over every shard (one epoch)
    int shard;           // the shard in memory, or -1
    const char* path;    // its file
    uint16_t* tokens;    // its tokens
    size_t num_tokens;
    int B, T, V;
    int force_vocab;     // -fv 1: accept tokens that look like another vocabulary's
    size_t num_batches;  // batches per pass over the shard in memory
    int shuffle;         // windows in a random order, shifted by a random offset
    uint64_t seed;
    size_t* order;       // sequential: batch order; shuffled: window order
    size_t offset;       // shuffled: where this pass's windows start (0..T-1)
    long epoch;          // the position: batch batch_index of pass `epoch` comes next
    size_t batch_index;
    const char* flags;   // the flags that set B and T, for the errors
    int* inputs;         // (B,T)
    int* targets;        // (B,T)
} DataLoader;

// the token count of a token file, from its header; the size must be exactly the header's
static size_t read_token_header(FILE* f, const char* path) {
    int32_t h[256];
    read_header(f, path, h, 20240520, "llm.c token file");
    if (h[1] != 1) die("'%s': token file version %d is not supported (expected 1)", path, h[1]);
    if (h[2] < 0) die("'%s': negative token count %d in the header", path, h[2]);
    size_t n = (size_t)h[2];
    long long expected = 1024LL + 2LL * (long long)n, actual = file_size_of(f, path);
    if (actual < expected)
        die("'%s' is truncated: its header promises %zu tokens (%lld bytes), the file has %lld bytes",
            path, n, expected, actual);
    if (actual > expected)
        die("'%s' is longer than its header says (%lld bytes, expected %lld)", path, actual, expected);
    return n;
}

// Tokens must be ids of the model's vocabulary of V. A token >= V cannot be embedded: an
// error always (a character-level model on GPT-2's tokens). The reverse, a large
// vocabulary on a file whose largest id is tiny (GPT-2 on character-level tokens: every
// id below 256 while V is 50257), trains on nonsense: an error unless forced (-fv 1).
static void check_vocabulary(const uint16_t* tokens, size_t n, int V, int force, const char* path) {
    int largest = 0;
    for (size_t i = 0; i < n; i++) {
        if (tokens[i] >= V)
            die("'%s': token %d at position %zu is outside the model's vocabulary (0..%d): the file was "
                "made with another tokenizer", path, tokens[i], i, V - 1);
        if (tokens[i] > largest) largest = tokens[i];
    }
    if (!force && n >= 4096 && largest < 256 && V > 4096)
        die("'%s': its %zu tokens are all below 256, the model's vocabulary has %d: it looks like "
            "character-level data for a model with another tokenizer (-fv 1 uses it anyway)", path, n, V);
}

static void load_token_file(DataLoader* d, const char* path, int V) {
    FILE* f = fopenCheck(path, "rb");
    size_t n = read_token_header(f, path);
    d->tokens = mallocCheck(n * sizeof(uint16_t) + 1);
    fread_check(d->tokens, sizeof(uint16_t), n, f, path, "tokens");
    fclose(f);
    check_vocabulary(d->tokens, n, V, d->force_vocab, path);
    d->num_tokens = n;
}

// windows of T+1 tokens that fit after any offset < T
static size_t dataloader_num_windows(const DataLoader* d, size_t tokens) { return (tokens - d->T) / d->T; }

// a shard's batches per pass: whole batches of B*T+1 tokens, or of B shuffled windows
static size_t shard_batches(const DataLoader* d, size_t tokens) {
    if (tokens < (size_t)d->B * d->T + 1) return 0;
    return d->shuffle ? dataloader_num_windows(d, tokens) / d->B : (tokens - 1) / ((size_t)d->B * d->T);
}

// the order of this pass: identity when sequential, a seeded permutation of the windows
// (and a seeded offset) when shuffled; recomputable from (seed, pass) alone, so a
// resumed run continues exactly
static void dataloader_shuffle(DataLoader* d) {
    size_t n = d->shuffle ? dataloader_num_windows(d, d->num_tokens) : d->num_batches;
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

// brings shard s into memory (a no-op when it is there already)
static void dataloader_load_shard(DataLoader* d, int s) {
    if (d->shard == s) return;
    free(d->tokens);
    d->tokens = NULL;
    d->shard = s;
    d->path = d->shards[s];
    load_token_file(d, d->path, d->V);
    if (d->num_tokens != d->shard_tokens[s]) die("'%s' changed while training", d->path);
    d->num_batches = shard_batches(d, d->num_tokens);
}

// the files of -i or -j: the pattern's matches in sorted order, or the one file it names (a
// name with a wildcard character in it, 'run[1].bin', that matches nothing but itself exists)
static void dataloader_find_shards(DataLoader* d, const char* pattern, const char* flag) {
    glob_t g;
    struct stat sb;
    int rc = strpbrk(pattern, "*?[") ? glob(pattern, 0, NULL, &g) : -1;
    if (rc == GLOB_NOMATCH && stat(pattern, &sb) == 0) rc = -1;
    if (rc == GLOB_NOMATCH) die("%s '%s': no file matches the pattern", flag, pattern);
    if (rc < 0 && stat(pattern, &sb) != 0) die("%s '%s': %s", flag, pattern, strerror(errno));
    if (rc > 0) die("%s '%s': cannot read the directories of the pattern", flag, pattern);
    d->num_shards = rc == 0 ? (int)g.gl_pathc : 1;
    d->shards = mallocCheck((size_t)d->num_shards * sizeof(char*));
    for (int s = 0; s < d->num_shards; s++) {
        const char* p = rc == 0 ? g.gl_pathv[s] : pattern;
        d->shards[s] = mallocCheck(strlen(p) + 1);
        strcpy(d->shards[s], p);
    }
    if (rc == 0) globfree(&g);
}

// flag: -i or -j; flags: those that set B and T, for the errors
void dataloader_init(DataLoader* d, const char* pattern, int B, int T, int V, int shuffle, uint64_t seed,
                     const char* flag, const char* flags, int force_vocab) {
    memset(d, 0, sizeof *d);
    d->B = B; d->T = T; d->V = V; d->shuffle = shuffle; d->seed = seed; d->shard = -1;
    d->force_vocab = force_vocab; d->flags = flags;
    dataloader_find_shards(d, pattern, flag);
    d->shard_tokens = mallocCheck((size_t)d->num_shards * sizeof(size_t));
    size_t most = 0, need = (size_t)B * T + 1;
    for (int s = 0; s < d->num_shards; s++) {  // every shard's header now: a bad one fails at once
        FILE* f = fopenCheck(d->shards[s], "rb");
        size_t n = d->shard_tokens[s] = read_token_header(f, d->shards[s]);
        fclose(f);
        if (n < need)
            die("'%s' has %zu tokens, fewer than one batch of B*T+1 = %zu (%s)", d->shards[s], n, need,
                flags);
        if (shard_batches(d, n) == 0)  // shuffled windows can need up to T-1 more tokens
            die("'%s' has %zu tokens, too few for one shuffled batch of %d windows of %d (%s, or -sh 0)",
                d->shards[s], n, B, T + 1, flags);
        d->total_tokens += n;
        d->total_batches += shard_batches(d, n);
        if (n > most) most = n;
    }
    size_t orders = shuffle ? dataloader_num_windows(d, most) : shard_batches(d, most);
    d->order = mallocCheck(orders * sizeof(size_t));
    d->inputs = mallocCheck((size_t)B * T * sizeof(int));
    d->targets = mallocCheck((size_t)B * T * sizeof(int));
    dataloader_load_shard(d, 0);
    dataloader_shuffle(d);
}

// copies T+1 tokens starting at src into row r of inputs/targets
static void dataloader_fill_row(DataLoader* d, int r, const uint16_t* src) {
    for (int t = 0; t < d->T; t++) {
        d->inputs[(size_t)r * d->T + t] = src[t];
        d->targets[(size_t)r * d->T + t] = src[t + 1];
    }
}

// the position: batch batch_index of pass `epoch` comes next (its shard is loaded)
void dataloader_seek(DataLoader* d, long epoch, size_t batch_index) {
    dataloader_load_shard(d, (int)(epoch % d->num_shards));
    if (batch_index >= d->num_batches)
        die("'%s': saved data position %zu is past its %zu batches", d->path, batch_index, d->num_batches);
    d->epoch = epoch;
    d->batch_index = batch_index;
    dataloader_shuffle(d);
}

void dataloader_next_batch(DataLoader* d) {
    if (d->shuffle) {
        for (int r = 0; r < d->B; r++)
            dataloader_fill_row(d, r, d->tokens + d->offset + d->order[d->batch_index * d->B + r] * d->T);
    } else {
        for (int r = 0; r < d->B; r++)
            dataloader_fill_row(d, r, d->tokens + (d->order[d->batch_index] * d->B + r) * d->T);
    }
    if (++d->batch_index == d->num_batches) dataloader_seek(d, d->epoch + 1, 0);
}

void dataloader_free(DataLoader* d) {
    for (int s = 0; s < d->num_shards; s++)
        free(d->shards[s]);
    free(d->shards); free(d->shard_tokens);
    free(d->tokens); free(d->order); free(d->inputs); free(d->targets);
}

#endif
