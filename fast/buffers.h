/*
fast/buffers.h: operations over a whole buffer of floats (all the gradients: megabytes),
split over the threads. Part of the speed engine: a reader of the model may skip it.
Plain twins: memset, and the one-accumulator loop  for (i) s += g[i] * g[i]  in double
(test_gpt2.c checks sum_of_squares against it).
*/
#ifndef FAST_BUFFERS_H
#define FAST_BUFFERS_H

#include <stddef.h>
#include <string.h>

// memset(p, 0, n floats), in chunks shared among the threads
static void zero_floats(float* p, size_t n) {
    const size_t chunk = 16384;
    #pragma omp parallel for schedule(static) if (n >= 4 * chunk)
    for (size_t k = 0; k < n; k += chunk)
        memset(p + k, 0, (n - k < chunk ? n - k : chunk) * sizeof(float));
}

// g[0]^2 + ... + g[n-1]^2. The sum is split into a fixed number of chunks, each summed in
// double from float sums of short blocks (which vectorise), and the chunks are combined in
// order: the result does not depend on the number of threads.
static double sum_of_squares(const float* g, size_t n) {
    enum { CHUNKS = 64, BLOCK = 1024 };
    double partial[CHUNKS];
    #pragma omp parallel for
    for (int k = 0; k < CHUNKS; k++) {
        size_t lo = n * k / CHUNKS, hi = n * (k + 1) / CHUNKS;
        double s = 0.0;
        for (size_t b = lo; b < hi; b += BLOCK) {
            size_t e = b + BLOCK < hi ? b + BLOCK : hi;
            float block = 0.0f;
            #pragma omp simd reduction(+ : block)
            for (size_t i = b; i < e; i++)
                block += g[i] * g[i];
            s += block;
        }
        partial[k] = s;
    }
    double total = 0.0;
    for (int k = 0; k < CHUNKS; k++)
        total += partial[k];
    return total;
}

#endif
