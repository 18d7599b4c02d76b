/*
fast/rows.h: one output row from many input rows: add_weighted_rows (a weighted sum of
rows, summed in registers) and matvec_forward (one position through a linear layer); and
row_max, the largest value of one row (attention's softmax).
Part of the speed engine: a reader of the model may skip it. Plain twins: the double
loop in test_weighted_rows (test_gpt2.c), matmul_forward_plain with one row
(train_gpt2.c), and the max loop of attention_forward_plain (test_gpt2.c, through
test_fast_attention); test_gpt2.c checks each against them.
*/
#ifndef FAST_ROWS_H
#define FAST_ROWS_H

#include <stddef.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include "vec.h"

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define NOINLINE
#define ALWAYS_INLINE inline
#endif

// the largest of x[0..n), n >= 1 (attention's softmax subtracts it from the row). gcc
// vectorises the max reduction the pragma asks for; clang 14 cannot (not without
// -ffinite-math-only) and warns that it did not (-Wpass-failed), so clang gets the plain
// loop, which is what it compiled before. A max is exact: any order gives the same value.
static inline float row_max(const float* x, int n) {
    float m = x[0];
#if !defined(__clang__)
    #pragma omp simd reduction(max : m)
#endif
    for (int i = 1; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

// add_weighted_rows (below): one output row += a weighted sum of many rows, summed in
// vector registers. The bias gradient uses it with every weight 1 (the column sums), and
// the KV cache's attention for the weighted sum of the cached values (step 8).
// The kernel: 16*NV outputs summed in registers, NV = 1, 2 or 4 vectors of 16 floats,
// in 4 partial sums (rows t2 = 0,4,8.. / 1,5,9.. / ...) so that 4*NV independent FMA
// chains hide the adder's latency. One body, instantiated below for the three widths
// with NV a constant, because fixed-size accumulators are what stay in vector registers.
// (Plain C arrays of this size were spilled to memory by GCC, so the AVX-512 build uses
// intrinsics, and the other CPUs fast/vec.h's vectors.)
static ALWAYS_INLINE void weighted_rows_kernel(float* restrict out, const float* w, size_t w_stride,
                                               const float* rows, size_t stride, int count, const int NV) {
#ifdef __AVX512F__
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++)
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++)
            acc[u][j] = _mm512_setzero_ps();
    int t2 = 0;
    for (; t2 + 4 <= count; t2 += 4)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            __m512 wt = _mm512_set1_ps(w[(t2 + u) * w_stride]);
            const float* r = rows + (t2 + u) * stride;
#pragma GCC unroll 4
            for (int j = 0; j < NV; j++)
                acc[u][j] = _mm512_fmadd_ps(wt, _mm512_loadu_ps(r + 16 * j), acc[u][j]);
        }
#pragma GCC unroll 3
    for (int u = 0; u < 3; u++) {  // the last count % 4 rows
        if (t2 + u >= count) break;
        __m512 wt = _mm512_set1_ps(w[(t2 + u) * w_stride]);
        const float* r = rows + (t2 + u) * stride;
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++)
            acc[u][j] = _mm512_fmadd_ps(wt, _mm512_loadu_ps(r + 16 * j), acc[u][j]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < NV; j++) {
        __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[0][j], acc[1][j]), _mm512_add_ps(acc[2][j], acc[3][j]));
        _mm512_storeu_ps(out + 16 * j, _mm512_add_ps(_mm512_loadu_ps(out + 16 * j), sum));
    }
#else
    // the same sums in fast/vec.h's vectors, 2 vectors of columns at a time (AVX2: 16 columns,
    // 8 ymm accumulators; SSE2 and NEON: 8 columns): the 4 x NV vectors of AVX-512 would not
    // stay in 16 registers. Each column's sum is its own, so the chunks change no bits.
    for (int j0 = 0; j0 < 16 * NV; j0 += 2 * VEC_W) {
        vec_f acc[4][2];
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++)
            acc[u][0] = acc[u][1] = (vec_f){0};
        int t2 = 0;
        for (; t2 + 4 <= count; t2 += 4)
#pragma GCC unroll 4
            for (int u = 0; u < 4; u++) {
                float wt = w[(t2 + u) * w_stride];
                const float* r = rows + (t2 + u) * stride + j0;
                acc[u][0] = vec_fma(acc[u][0], wt, vec_load(r));
                acc[u][1] = vec_fma(acc[u][1], wt, vec_load(r + VEC_W));
            }
#pragma GCC unroll 3
        for (int u = 0; u < 3; u++) {  // the last count % 4 rows
            if (t2 + u >= count) break;
            float wt = w[(t2 + u) * w_stride];
            const float* r = rows + (t2 + u) * stride + j0;
            acc[u][0] = vec_fma(acc[u][0], wt, vec_load(r));
            acc[u][1] = vec_fma(acc[u][1], wt, vec_load(r + VEC_W));
        }
#pragma GCC unroll 2
        for (int j = 0; j < 2; j++) {
            float* o = out + j0 + VEC_W * j;
            vec_store(o, vec_load(o) + ((acc[0][j] + acc[1][j]) + (acc[2][j] + acc[3][j])));
        }
    }
#endif
}
#define ADD_WEIGHTED_ROWS_BLOCK(WIDTH)                                                              \
static NOINLINE void add_weighted_rows_##WIDTH(float* restrict out, const float* w, size_t w_stride, \
                                               const float* rows, size_t stride, int count) {       \
    weighted_rows_kernel(out, w, w_stride, rows, stride, count, WIDTH / 16);                        \
}
ADD_WEIGHTED_ROWS_BLOCK(64)
ADD_WEIGHTED_ROWS_BLOCK(32)
ADD_WEIGHTED_ROWS_BLOCK(16)

// out (n) += sum over t2 < count of w[t2 * w_stride] * rows[t2 * stride .. + n]: a
// weighted sum of rows. The outputs are summed in registers, 64, 32 or 16 at a time (the
// wider, the more independent FMA chains hide the adder's latency), instead of going
// through memory for every t2; each output's sum still runs over t2 in order.
static inline void add_weighted_rows(float* restrict out, const float* w, size_t w_stride,
                                     const float* rows, size_t stride, int count, int n) {
    int i = 0;
    for (; i + 64 <= n; i += 64)
        add_weighted_rows_64(out + i, w, w_stride, rows + i, stride, count);
    for (; i + 32 <= n; i += 32)
        add_weighted_rows_32(out + i, w, w_stride, rows + i, stride, count);
    for (; i + 16 <= n; i += 16)
        add_weighted_rows_16(out + i, w, w_stride, rows + i, stride, count);
    for (; i < n; i++) {
        float acc = 0.0f;
        for (int t2 = 0; t2 < count; t2++)
            acc += w[t2 * w_stride] * rows[t2 * stride + i];
        out[i] += acc;
    }
}

// out (OC) = W (OC,IC) x (IC) + b: one position through a linear layer. It reads every
// weight once, so its speed is the memory bandwidth: four rows at a time keep four
// independent streams (and FMA chains) going, and 16 partial sums per row let the compiler
// use full vector registers while each row's order of summation stays fixed.
static inline float dot16_finish(const float acc[16], const float* w, const float* x, int i, int IC) {
    float sum = 0.0f;
    for (; i < IC; i++)
        sum += w[i] * x[i];
    for (int j = 0; j < 16; j++)
        sum += acc[j];
    return sum;
}

static inline void matvec_forward(float* out, const float* x, const float* weight, const float* bias, int IC,
                                  int OC) {
    #pragma omp parallel for schedule(static)
    for (int o0 = 0; o0 < OC; o0 += 4) {
        int rows = OC - o0 < 4 ? OC - o0 : 4;
        const float* w[4];
        for (int r = 0; r < 4; r++)
            w[r] = weight + (size_t)(o0 + (r < rows ? r : 0)) * IC;
        float acc[4][16] = {{0}};
        // the next 4 rows (256 bytes per 16 columns) fetched while these sum: the hardware
        // prefetcher starts late on rows this short (768 floats: 48 cache lines)
        const char* next = (const char*)(weight + (size_t)(o0 + 4) * IC);
        int i = 0;
        for (; i + 16 <= IC; i += 16) {
            for (int k = 0; k < 4; k++)
                __builtin_prefetch(next + 16 * (size_t)i + 64 * k);
            for (int r = 0; r < 4; r++) {
                #pragma omp simd
                for (int j = 0; j < 16; j++)
                    acc[r][j] += w[r][i + j] * x[i + j];
            }
        }
        for (int r = 0; r < rows; r++)
            out[o0 + r] = dot16_finish(acc[r], w[r], x, i, IC) + (bias ? bias[o0 + r] : 0.0f);
    }
}

#endif
