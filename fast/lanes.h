/*
fast/lanes.h: sums and maxima of a row in 16 running lanes (one AVX-512 register).
Part of the speed engine. Plain twins: the one-accumulator loops
    for (i = 0; i < n; i++) s += x[i];   (sum_lanes, and dot_lanes with y[i] * x[i])
    for (i = 0; i < n; i++) m = fmaxf(m, x[i]);   (max_lanes)
which give the same values up to the order of the float additions (test_gpt2.c).
*/
#ifndef FAST_LANES_H
#define FAST_LANES_H

#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#define ROUND16(n) (((n) + 15) / 16 * 16)

// Reductions over n floats, n a multiple of 16, in 16 running lanes (one vector
// register). C does not let the compiler reorder a float sum by itself; written this way
// the order is fixed and vectorises. The 16 lanes are combined by halving; with AVX-512
// the intrinsic does the same halving in registers (GCC's own version of the loop goes
// through memory and stalls).
static inline float reduce16(const float v[16], int take_max) {  // the maximum, or the sum
#ifdef __AVX512F__
    __m512 x = _mm512_loadu_ps(v);
    return take_max ? _mm512_reduce_max_ps(x) : _mm512_reduce_add_ps(x);
#else
    float r[16];
    memcpy(r, v, sizeof r);
    for (int w = 8; w > 0; w /= 2)
        for (int j = 0; j < w; j++)
            r[j] = take_max ? (r[j + w] > r[j] ? r[j + w] : r[j]) : r[j] + r[j + w];
    return r[0];
#endif
}
static inline float max16(const float m[16]) { return reduce16(m, 1); }
static inline float sum16(const float s[16]) { return reduce16(s, 0); }

// the largest of x[0..n-1]; n a multiple of 16
static inline float max_lanes(const float* x, int n) {
    float m[16];
    for (int j = 0; j < 16; j++)
        m[j] = x[j];
    for (int i = 16; i < n; i += 16)
        for (int j = 0; j < 16; j++)
            m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
    return max16(m);
}

// x[0] + ... + x[n-1]; n a multiple of 16
static inline float sum_lanes(const float* x, int n) {
    float s[16] = {0};
    for (int i = 0; i < n; i += 16)
        for (int j = 0; j < 16; j++)
            s[j] += x[i + j];
    return sum16(s);
}

// x[0] y[0] + ... + x[n-1] y[n-1]; n a multiple of 16
static inline float dot_lanes(const float* x, const float* y, int n) {
    float s[16] = {0};
    for (int i = 0; i < n; i += 16)
        for (int j = 0; j < 16; j++)
            s[j] += x[i + j] * y[i + j];
    return sum16(s);
}

#endif
