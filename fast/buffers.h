/*
fast/buffers.h: operations over a whole buffer of floats (all the gradients: megabytes),
split over the threads. Part of the speed engine: a reader of the model may skip it.
Plain twins: memset, and the one-accumulator loop  for (i) s += g[i] * g[i]  in double
(test_gpt2.c checks sum_of_squares and sum_of_squares_list against it).
*/
#ifndef FAST_BUFFERS_H
#define FAST_BUFFERS_H

#include <stddef.h>
#include <string.h>

// memset(p, 0, n floats), in chunks shared among the threads
static inline void zero_floats(float* p, size_t n) {
    const size_t chunk = 16384;
    #pragma omp parallel for schedule(static) if (n >= 4 * chunk)
    for (size_t k = 0; k < n; k += chunk)
        memset(p + k, 0, (n - k < chunk ? n - k : chunk) * sizeof(float));
}

// The norm's chunks: sum_of_squares_list splits each buffer into SQUARES_CHUNKS; a ZeRO-1
// shard (util/dist.h) is a run of whole chunks of the gradient buffer, so that the shards'
// partial sums, added in chunk order, are the unsharded sum's bits
enum { SQUARES_CHUNKS = 64 };

// the squares of chunk j of g[0..len), summed in double from float sums of short blocks
// (which vectorise)
static inline double chunk_squares(const float* g, size_t len, int j) {
    enum { BLOCK = 1024 };
    size_t lo = len * j / SQUARES_CHUNKS, hi = len * (j + 1) / SQUARES_CHUNKS;
    double s = 0.0;
    for (size_t b = lo; b < hi; b += BLOCK) {
        size_t e = b + BLOCK < hi ? b + BLOCK : hi;
        float block = 0.0f;
        #pragma omp simd reduction(+ : block)
        for (size_t i = b; i < e; i++)
            block += g[i] * g[i];
        s += block;
    }
    return s;
}

// The squares of several buffers p[s] of n[s] floats (at most 16), all summed in one
// parallel region. Each buffer is split into SQUARES_CHUNKS chunks, and the chunks are
// combined in order (buffer 0's, then buffer 1's, ...): the result does not depend on the
// number of threads.
static inline double sum_of_squares_list(const float* const* p, const size_t* n, int count) {
    enum { CHUNKS = SQUARES_CHUNKS, MAX_BUFFERS = 16 };
    double partial[MAX_BUFFERS * CHUNKS];
    if (count > MAX_BUFFERS) count = MAX_BUFFERS;
    size_t all = 0;
    for (int s = 0; s < count; s++)
        all += n[s];
    (void)all;  // (read only by the pragma: a build without OpenMP would warn)
    #pragma omp parallel for schedule(static) if (all >= 65536)
    for (int j = 0; j < count * CHUNKS; j++)
        partial[j] = chunk_squares(p[j / CHUNKS], n[j / CHUNKS], j % CHUNKS);
    double total = 0.0;
    for (int j = 0; j < count * CHUNKS; j++)
        total += partial[j];
    return total;
}

// partial[j] = the squares of chunk j of g[0..n), for the chunks first .. last - 1 (a
// ZeRO-1 shard's); the sum of all SQUARES_CHUNKS in order is sum_of_squares(g, n)
static inline void sum_of_squares_chunks(const float* g, size_t n, int first, int last, double* partial) {
    #pragma omp parallel for schedule(static) if (n >= 65536)
    for (int j = first; j < last; j++)
        partial[j] = chunk_squares(g, n, j);
}

// The squares of layer l's slices of count tensors that lie one after the other from p,
// tensor k of sizes[k] floats holding L slices of sizes[k] / L (the model's layer weights).
// The model sums a layer's gradients so as soon as its backward is done, still in the cache.
static inline double sum_of_squares_layer(const float* p, const size_t* sizes, int count, int L, int l) {
    const float* slices[16];
    size_t n[16];
    for (int k = 0; k < count && k < 16; p += sizes[k], k++) {
        n[k] = sizes[k] / L;
        slices[k] = p + l * n[k];
    }
    return sum_of_squares_list(slices, n, count);
}

// g[0]^2 + ... + g[n-1]^2, as above
static inline double sum_of_squares(const float* g, size_t n) {
    return sum_of_squares_list(&g, &n, 1);
}

#endif
