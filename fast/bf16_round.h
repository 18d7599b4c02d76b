/*
fast/bf16_round.h: float32 <-> bfloat16, one number at a time, and the bf16 copy of a
model's weights (bf16_round_all). What the model and the tests need of -prec bf16 without
the kernels (fast/bf16.h, compiled with the matrix multiply in fast/gemm.c).
*/
#ifndef FAST_BF16_ROUND_H
#define FAST_BF16_ROUND_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "vec.h"  // VEC_W

// float32 -> bf16, rounding to nearest even (a NaN stays a NaN)
static inline uint16_t bf16_round(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

// bf16_round as the packing rounds: vcvtne2ps2bf16 also flushes a denormal to a signed 0
// (where the instruction packs). The weights' bf16 copy is made with it.
static inline uint16_t bf16_round_packed(float x) {
#if defined(__AVX512BF16__)
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0) return (uint16_t)((u >> 16) & 0x8000);
#endif
    return bf16_round(x);
}

static inline float bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

// x rounded as the packing rounds it, as a float32
static inline float bf16_round_float(float x) { return bf16_to_float(bf16_round_packed(x)); }

// bf16_round of VEC_W floats at once (the packing, where there is no vcvtne2ps2bf16): each
// word's rounded bf16 in its top half (the bottom half: left over)
typedef uint32_t bf16_vw __attribute__((vector_size(4 * VEC_W)));
typedef uint32_t bf16_vwu __attribute__((vector_size(4 * VEC_W), aligned(4), may_alias));
// (a NaN gets no increment, which could carry into its exponent, but its quiet bit; the
// magnitudes compare as signed words: one instruction where unsigned ones take more)
typedef int32_t bf16_vi __attribute__((vector_size(4 * VEC_W)));
static inline bf16_vw bf16_round_top(bf16_vw u) {
    bf16_vw nan = (bf16_vw)((bf16_vi)(u & 0x7fffffffu) > 0x7f800000);  // (all ones where a NaN)
    return (u | (nan & 0x400000u)) + (~nan & (0x7fffu + ((u >> 16) & 1u)));
}

// a pair of bf16 as one 32-bit word: the even k in the low half, as the instruction reads it
static inline uint32_t bf16_pair(float even, float odd) {
    return (uint32_t)bf16_round(even) | (uint32_t)bf16_round(odd) << 16;
}

// dst[i] = bf16_round_packed(src[i]) for i < n, over the threads: a bf16 copy of weights
// (the model's copy for its products, and generation's, fast/matvec_bf16.h)
static inline void bf16_round_all(uint16_t* dst, const float* src, size_t n) {
    #pragma omp parallel for schedule(static) if (n >= 65536)
    for (size_t i = 0; i < n; i++)
        dst[i] = bf16_round_packed(src[i]);
}

#endif
