/*
util/pairs.h: source/target pairs for the encoder-decoder, from a pair token file
(written by `data/prepare -m pairs`; magic 20241125, doc/formats.md), and their batches
with padding. Plumbing.

Tokens are characters (PAD = 0, BOS = 1, EOS = 2, the characters from 3 on). The file
holds the bare source and target of each pair; a batch adds the specials:

    src     (B,Ts)  the source, then PAD                      Ts = longest source of the batch
    dec_in  (B,Tt)  BOS, the target, then PAD                 Tt = longest target + 1
    dec_tgt (B,Tt)  the target, EOS, then -1 (carries no loss)

so the decoder reads dec_in[t] and learns to predict dec_tgt[t] (teacher forcing: the
true previous character, not its own guess). The reader checks everything before using
it: the header, every length against the file's size before allocating, every token.
*/
#ifndef UTIL_PAIRS_H
#define UTIL_PAIRS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io.h"
#include "random.h"

#define PAIRS_MAGIC 20241125
#define PAIR_PAD 0
#define PAIR_BOS 1
#define PAIR_EOS 2
#define PAIR_FIRST_CHAR 3   // the first character's id
#define PAIR_MAX_LEN 65535  // lengths are uint16

typedef struct {
    int num_pairs, vocab_size, max_src, max_tgt;
    uint16_t* tokens;             // the file after its header: per pair 2 lengths, source, target
    size_t* offset;               // (num_pairs) where pair i's source starts in tokens; target follows
    int* src_len; int* tgt_len;   // (num_pairs)
    int first_line;               // the line of the pair text that pair 0 came from
} PairSet;

// "pair 7 (line 19 of the pair text)": where pair i of the file came from, for errors
static const char* pair_where(const PairSet* ps, int i) {
    static char where[96];
    snprintf(where, sizeof where, "pair %d (line %d of the pair text)", i, ps->first_line + i);
    return where;
}

// the pair lengths at p (the index of its source length in tokens), checked against what is left
static void pairs_read_one(PairSet* ps, int i, size_t p, size_t words, const char* path) {
    if (words - p < 2) die("'%s' is truncated: it ends before %s", path, pair_where(ps, i));
    int s = ps->tokens[p], t = ps->tokens[p + 1];
    if (s < 1 || t < 1) die("'%s': %s has an empty %s", path, pair_where(ps, i), s < 1 ? "source" : "target");
    if (s > ps->max_src || t > ps->max_tgt)
        die("'%s': %s is longer (%d, %d) than the header's longest source and target (%d, %d)", path,
            pair_where(ps, i), s, t, ps->max_src, ps->max_tgt);
    if (words - p - 2 < (size_t)s + (size_t)t)
        die("'%s' is truncated: it ends inside %s", path, pair_where(ps, i));
    ps->offset[i] = p + 2;
    ps->src_len[i] = s;
    ps->tgt_len[i] = t;
    for (size_t k = p + 2; k < p + 2 + (size_t)s + (size_t)t; k++)
        if (ps->tokens[k] < PAIR_FIRST_CHAR || ps->tokens[k] >= ps->vocab_size)
            die("'%s': token %d of %s is not a character of the vocabulary (%d..%d)", path, ps->tokens[k],
                pair_where(ps, i), PAIR_FIRST_CHAR, ps->vocab_size - 1);
}

void pairs_load(PairSet* ps, const char* path) {
    memset(ps, 0, sizeof *ps);
    FILE* f = fopenCheck(path, "rb");
    int32_t h[256];
    read_header(f, path, h, PAIRS_MAGIC, "pair token file");
    if (h[1] != 1) die("'%s': pair file version %d is not supported (expected 1)", path, h[1]);
    if (h[2] < 1) die("'%s': %d pairs in the header; a pair file holds at least one", path, h[2]);
    if (h[3] <= PAIR_FIRST_CHAR || h[3] > 65536)
        die("'%s': vocabulary size %d in the header is not in %d..65536", path, h[3],
            PAIR_FIRST_CHAR + 1);
    if (h[4] < 1 || h[4] > PAIR_MAX_LEN || h[5] < 1 || h[5] > PAIR_MAX_LEN)
        die("'%s': longest source %d or target %d in the header is not in 1..%d", path, h[4], h[5],
            PAIR_MAX_LEN);
    // before allocating: the file must hold at least two lengths and two tokens per pair
    long long body = file_size_of(f, path) - 1024;
    if (body < 8LL * h[2])
        die("'%s' is truncated: %d pairs need at least %lld bytes after the header, it has %lld", path,
            h[2], 8LL * h[2], body);
    if (h[6] < 1 || h[6] > INT32_MAX - h[2])
        die("'%s': first text line %d in the header is not >= 1, or with %d pairs passes 2^31-1", path,
            h[6], h[2]);
    *ps = (PairSet){.num_pairs = h[2], .vocab_size = h[3], .max_src = h[4], .max_tgt = h[5],
                    .first_line = h[6]};
    if (body % 2) die("'%s' has an odd size: a pair file holds uint16 values after its header", path);
    size_t words = (size_t)body / 2, p = 0;
    ps->tokens = mallocCheck((size_t)body);
    fread_check(ps->tokens, sizeof(uint16_t), words, f, path, "pairs");
    fclose(f);
    ps->offset = mallocCheck((size_t)ps->num_pairs * sizeof(size_t));
    ps->src_len = mallocCheck((size_t)ps->num_pairs * sizeof(int));
    ps->tgt_len = mallocCheck((size_t)ps->num_pairs * sizeof(int));
    int longest_src = 0, longest_tgt = 0;
    for (int i = 0; i < ps->num_pairs; i++) {
        pairs_read_one(ps, i, p, words, path);
        p = ps->offset[i] + (size_t)ps->src_len[i] + (size_t)ps->tgt_len[i];
        if (ps->src_len[i] > longest_src) longest_src = ps->src_len[i];
        if (ps->tgt_len[i] > longest_tgt) longest_tgt = ps->tgt_len[i];
    }
    if (p != words)
        die("'%s' is longer than its %d pairs (%zu bytes more)", path, ps->num_pairs, 2 * (words - p));
    if (longest_src != ps->max_src || longest_tgt != ps->max_tgt)
        die("'%s': the header's longest source and target (%d, %d) are not the pairs' (%d, %d)", path,
            ps->max_src, ps->max_tgt, longest_src, longest_tgt);
}

// A model whose sequences hold at most maxT positions reads sources of up to maxT tokens and
// targets of up to maxT - 1 (the decoder reads BOS + target, and predicts target + EOS).
void pairs_check_max_len(const PairSet* ps, const char* path, int maxT) {
    if (ps->max_src <= maxT && ps->max_tgt + 1 <= maxT) return;
    for (int i = 0; i < ps->num_pairs; i++) {
        if (ps->src_len[i] > maxT)
            die("'%s': %s has a source of %d characters, more than the model's maxT %d", path,
                pair_where(ps, i), ps->src_len[i], maxT);
        if (ps->tgt_len[i] + 1 > maxT)
            die("'%s': %s has a target of %d characters; the model's maxT %d holds targets of at most %d "
                "(the decoder reads BOS + target)", path, pair_where(ps, i), ps->tgt_len[i], maxT, maxT - 1);
    }
}

void pairs_free(PairSet* ps) {
    free(ps->tokens); free(ps->offset); free(ps->src_len); free(ps->tgt_len);
}

// ----------------------------------------------------------------------------
// batches: sources and targets of different lengths, padded to the longest of the batch

typedef struct {
    int B, Ts, Tt;   // Ts = longest source in this batch; Tt = longest target + 1 (BOS/EOS)
    int* src;        // (B,Ts) source tokens, PAD after src_len[b]
    int* src_len;    // (B) real source tokens of row b (>= 1)
    int* dec_in;     // (B,Tt) BOS, then the target, PAD after
    int* dec_tgt;    // (B,Tt) the target, then EOS, then -1 (no loss) after
    int* tgt_len;    // (B) target length + 1 (positions carrying loss)
    int max_B, max_src, max_tgt;  // what the buffers hold (pair_batch_alloc)
} PairBatch;

// room for batches of up to B pairs with sources of up to max_src and targets of up to max_tgt
void pair_batch_alloc(PairBatch* pb, int B, int max_src, int max_tgt) {
    memset(pb, 0, sizeof *pb);
    pb->max_B = B; pb->max_src = max_src; pb->max_tgt = max_tgt;
    size_t n_src = (size_t)B * max_src, n_dec = (size_t)B * (max_tgt + 1);
    pb->src = mallocCheck(n_src * sizeof(int));
    pb->dec_in = mallocCheck(n_dec * sizeof(int));
    pb->dec_tgt = mallocCheck(n_dec * sizeof(int));
    pb->src_len = mallocCheck((size_t)B * sizeof(int));
    pb->tgt_len = mallocCheck((size_t)B * sizeof(int));
}

void pair_batch_free(PairBatch* pb) {
    free(pb->src); free(pb->dec_in); free(pb->dec_tgt); free(pb->src_len); free(pb->tgt_len);
}

// the pairs pair_ids[0..B) as one batch; the rows are laid out with this batch's Ts and Tt
void pair_batch_fill(PairBatch* pb, const PairSet* ps, const int* pair_ids, int B) {
    if (B < 1 || B > pb->max_B) die("pair batch: %d pairs do not fit a batch of %d", B, pb->max_B);
    pb->B = B; pb->Ts = 0; pb->Tt = 0;
    for (int b = 0; b < B; b++) {
        int i = pair_ids[b];
        if (i < 0 || i >= ps->num_pairs)
            die("pair batch: pair %d is not one of the %d pairs", i, ps->num_pairs);
        if (ps->src_len[i] > pb->max_src || ps->tgt_len[i] > pb->max_tgt)
            die("pair batch: pair %d (%d, %d) is longer than the batch holds (%d, %d)", i, ps->src_len[i],
                ps->tgt_len[i], pb->max_src, pb->max_tgt);
        pb->src_len[b] = ps->src_len[i];
        pb->tgt_len[b] = ps->tgt_len[i] + 1;
        if (pb->src_len[b] > pb->Ts) pb->Ts = pb->src_len[b];
        if (pb->tgt_len[b] > pb->Tt) pb->Tt = pb->tgt_len[b];
    }
    for (int b = 0; b < B; b++) {
        const uint16_t* src = ps->tokens + ps->offset[pair_ids[b]];
        const uint16_t* tgt = src + pb->src_len[b];
        int* s = pb->src + (size_t)b * pb->Ts;
        int *in = pb->dec_in + (size_t)b * pb->Tt, *out = pb->dec_tgt + (size_t)b * pb->Tt;
        int n_tgt = pb->tgt_len[b] - 1;
        for (int t = 0; t < pb->Ts; t++)
            s[t] = t < pb->src_len[b] ? src[t] : PAIR_PAD;
        for (int t = 0; t < pb->Tt; t++) {
            in[t] = t == 0 ? PAIR_BOS : t <= n_tgt ? tgt[t - 1] : PAIR_PAD;
            out[t] = t < n_tgt ? tgt[t] : t == n_tgt ? PAIR_EOS : -1;
        }
    }
}

// perm = a permutation of 0..n-1 drawn from (seed, epoch) alone (Fisher-Yates), so that a
// resumed run sees the same order; the same stream as util/dataloader.h's shuffle
void pairs_order(int* perm, int n, uint64_t seed, int epoch) {
    for (int i = 0; i < n; i++)
        perm[i] = i;
    uint64_t rng = seed ^ splitmix64((uint64_t)epoch);
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(random_u64(&rng) % (uint64_t)(i + 1));
        int t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
}

#endif
