/*
fast/bf16.h: the matrix multiply with bfloat16 operands (-prec bf16), on gemm_kernel.h.

bfloat16 is the top half of a float32: the same sign and 8 exponent bits (the same range,
so no loss scaling is needed), 8 significant bits instead of 24 (a relative rounding
error up to 2^-9 = 0.2%). With -prec bf16 every operand of a product is rounded to it
(round to nearest, ties to even) as the blocked sgemm packs it, and the products are
accumulated in float32. Two bf16 numbers multiply exactly into a float32 (8 x 8 = 16
significant bits), so the only roundings are the operands' and the float32 sums'.

Zen 5 and recent Xeons do this in one instruction, vdpbf16ps: for each of 16 float32
lanes, acc += a[2l+1]*b[2l+1], then acc += a[2l]*b[2l], from 32 bf16 pairs; per
instruction twice the multiply-adds of a float32 FMA. So the packed slivers hold pairs of
consecutive k: A's sliver, for each pair p, MR pairs (a[i][2p], a[i][2p+1]); B's, for each
p, NR pairs (b[2p][j], b[2p+1][j]); an odd kc is padded with a zero.

Plain twin: gemm_kernel_bf16_plain (and the plain packing loops), the same pairs and the
same two rounded additions per pair in C; test_gpt2.c checks the instruction against it
bit for bit, and it is what runs on a CPU without AVX512-BF16.

The weights are rounded once per step, not in every product: the model keeps a bf16 copy
of them (made at its first bf16 forward, then rewritten by AdamW as it writes the new
float32 weights, as llm.c's GPU trainer keeps its bf16 parameters) and passes it with the
precision of each product (GemmPrecision, gemm.h); an operand that lies among those weights
is packed from the copy, which reads half the bytes and rounds nothing (on 124M, 1.12-1.18
s a step against 1.35-1.57 s rounding while packing, Intel Xeon). The same rounding of the
same floats: the products are bit for bit those of rounding while packing (test_gpt2.c).
*/
#ifndef FAST_BF16_H
#define FAST_BF16_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../util/io.h"  // die, now_seconds
#include "alloc.h"
#include "gemm_kernel.h"  // the tile (GEMM_MR x GEMM_NR), its two ends, GEMM_BY_ROWS

#include "bf16_round.h"  // bf16_round, bf16_to_float, bf16_pair, bf16_round_all

// bf16_pack_rows and bf16_pack_cols (below) from the copy: pairs of bf16 already rounded
static void bf16_pack_rows_copy(const uint16_t* src, int ld, int rows, int R, int kc, uint32_t* dst) {
    int kc2 = (kc + 1) / 2;
#if defined(__AVX512BF16__)
    if (kc % 2 == 0) {
        for (int r0 = 0; r0 < R; r0 += 16) {  // 16 rows x 16 pairs, transposed as 32-bit words
            int nr = rows - r0, w = gemm_imin(16, R - r0);
            for (int p0 = 0; p0 < kc2; p0 += 16) {
                int np = gemm_imin(16, kc2 - p0);
                __m512 v[16];
                for (int i = 0; i < 16; i++) {
                    const uint16_t* s = src + (size_t)(r0 + i) * ld + 2 * p0;
                    v[i] = i >= nr ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(gemm_lanes(np), s);
                }
                transpose16(v);
                for (int p = 0; p < np; p++)
                    _mm512_mask_storeu_ps((float*)(dst + (size_t)(p0 + p) * R + r0), gemm_lanes(w), v[p]);
            }
        }
        return;
    }
#endif
    for (int r = 0; r < R; r++) {
        const uint16_t* s = src + (size_t)r * ld;
        for (int p = 0; p < kc2; p++) {
            int k = 2 * p;
            uint32_t odd = r < rows && k + 1 < kc ? s[k + 1] : 0;  // (rows past the matrix: not read)
            dst[(size_t)p * R + r] = r >= rows ? 0 : (uint32_t)s[k] | odd << 16;
        }
    }
}

static void bf16_pack_cols_copy(const uint16_t* src, int ld, int cols, int R, int kc, uint32_t* dst) {
    int kc2 = (kc + 1) / 2;
    for (int p = 0; p < kc2; p++) {
        const uint16_t* even = src + (size_t)(2 * p) * ld;
        const uint16_t* odd = 2 * p + 1 < kc ? even + ld : NULL;
        uint32_t* d = dst + (size_t)p * R;
#if defined(__AVX512BF16__)
        for (int c = 0; c < R; c += 16) {  // 16 columns: widen both rows, the odd one to the top half
            __mmask16 real = gemm_lanes(cols - c);  // (columns past the matrix: 0, not read)
            __m512i e = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(real, even + c));
            __m512i o = odd ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(real, odd + c))
                            : _mm512_setzero_si512();
            _mm512_mask_storeu_epi32(d + c, gemm_lanes(R - c), _mm512_or_si512(e, _mm512_slli_epi32(o, 16)));
        }
#else
        for (int c = 0; c < R; c++)
            d[c] = c >= cols ? 0 : (uint32_t)even[c] | (uint32_t)(odd ? odd[c] : 0) << 16;
#endif
    }
}

// dst[p*R + r] = pair (src[r*ld + 2p], src[r*ld + 2p+1]) for r < rows, 0 for rows <= r < R:
// rows of src contiguous in k
static void bf16_pack_rows(const float* src, int ld, int rows, int R, int kc, uint32_t* dst) {
#if defined(__AVX512BF16__)
    for (int r0 = 0; r0 < R; r0 += 16) {  // 16 rows x 32 k: round, then transpose the 16 x 16 pairs
        int nr = rows - r0, w = gemm_imin(16, R - r0);
        for (int k0 = 0; k0 < kc; k0 += 32) {
            int nk = kc - k0, np = gemm_imin(16, (nk + 1) / 2);
            __m512 v[16];
            for (int i = 0; i < 16; i++) {
                const float* s = src + (size_t)(r0 + i) * ld + k0;
                v[i] = i >= nr ? _mm512_setzero_ps()  // (rows past the matrix are not read)
                               : (__m512)_mm512_cvtne2ps_pbh(
                                     _mm512_maskz_loadu_ps(gemm_lanes(nk - 16), s + 16),
                                     _mm512_maskz_loadu_ps(gemm_lanes(nk), s));
            }
            transpose16(v);  // v[p]: pair p of each of the 16 rows
            for (int p = 0; p < np; p++)
                _mm512_mask_storeu_ps((float*)(dst + (size_t)(k0 / 2 + p) * R + r0), gemm_lanes(w), v[p]);
        }
    }
    return;
#endif
    int kc2 = (kc + 1) / 2;
    for (int r = 0; r < R; r++) {
        const float* s = src + (size_t)r * ld;
        int p = 0;
        if (r < rows)  // VEC_W pairs at a time: 2 vectors rounded, then the pairs' halves joined
            for (; 2 * (p + VEC_W) <= kc; p += VEC_W) {
                _Alignas(64) bf16_vw top[2];
                top[0] = bf16_round_top(*(const bf16_vwu*)(s + 2 * p));
                top[1] = bf16_round_top(*(const bf16_vwu*)(s + 2 * p + VEC_W));
                const uint32_t* t = (const uint32_t*)top;
                for (int q = 0; q < VEC_W; q++)
                    dst[(size_t)(p + q) * R + r] = t[2 * q] >> 16 | (t[2 * q + 1] & 0xffff0000u);
            }
        for (; p < kc2; p++) {
            int k = 2 * p;
            dst[(size_t)p * R + r] = r >= rows ? 0 : bf16_pair(s[k], k + 1 < kc ? s[k + 1] : 0.0f);
        }
    }
}

// dst[p*R + c] = pair (src[2p*ld + c], src[(2p+1)*ld + c]) for c < cols, 0 for cols <= c < R:
// rows of src contiguous in c
static void bf16_pack_cols(const float* src, int ld, int cols, int R, int kc, uint32_t* dst) {
    int kc2 = (kc + 1) / 2;
#if defined(__AVX512BF16__)
    __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                     23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
#endif
    for (int p = 0; p < kc2; p++) {
        const float* even = src + (size_t)(2 * p) * ld;
        const float* odd = 2 * p + 1 < kc ? even + ld : NULL;
        uint32_t* d = dst + (size_t)p * R;
#if defined(__AVX512BF16__)
        // 16 columns at a time, masked at the edge (an A sliver is GEMM_MR = 14 wide): round
        // both rows, interleave them
        for (int c = 0; c < R; c += 16) {
            __mmask16 real = gemm_lanes(cols - c);  // (columns past the matrix: 0, not read)
            __m512 e = _mm512_maskz_loadu_ps(real, even + c);
            __m512 o = odd ? _mm512_maskz_loadu_ps(real, odd + c) : _mm512_setzero_ps();
            __m512i both = (__m512i)_mm512_cvtne2ps_pbh(o, e);  // e's 16 bf16, then o's
            _mm512_mask_storeu_epi32(d + c, gemm_lanes(R - c), _mm512_permutexvar_epi16(order, both));
        }
#else
        int c = 0;
        for (; c + VEC_W <= cols && c + VEC_W <= R; c += VEC_W) {  // VEC_W columns: round, join
            bf16_vw e = bf16_round_top(*(const bf16_vwu*)(even + c));
            bf16_vw o = odd ? bf16_round_top(*(const bf16_vwu*)(odd + c)) : (bf16_vw){0};
            *(bf16_vwu*)(d + c) = e >> 16 | (o & 0xffff0000u);
        }
        for (; c < R; c++)
            d[c] = c >= cols ? 0 : bf16_pair(even[c], odd ? odd[c] : 0.0f);
#endif
    }
}

// Plain twin of the kernel: C[m x n] (=, or +=) a-sliver * b-sliver over kc2 pairs of k,
// each pair adding the odd product, then the even one, rounded to float32 each time
static inline void gemm_kernel_bf16_plain(int kc2, const uint32_t* a, const uint32_t* b, float* C, int ldc,
                                   int m, int n, int overwrite, const float* bias) {
    float acc[GEMM_MR][GEMM_NR];
    memset(acc, 0, sizeof acc);
    for (int p = 0; p < kc2; p++, a += GEMM_MR, b += GEMM_NR)
        for (int i = 0; i < GEMM_MR; i++)
            for (int j = 0; j < GEMM_NR; j++) {
                float a0 = bf16_to_float((uint16_t)a[i]), a1 = bf16_to_float((uint16_t)(a[i] >> 16));
                float b0 = bf16_to_float((uint16_t)b[j]), b1 = bf16_to_float((uint16_t)(b[j] >> 16));
                acc[i][j] += a1 * b1;  // exact products: each sum rounds once to float32
                acc[i][j] += a0 * b0;
            }
    gemm_tile_store_plain(acc, C, ldc, m, n, overwrite, bias);
}

#if defined(__AVX512BF16__)
// the kernel with vdpbf16ps, for the first `rows` rows of the tile (gemm_kernel.h's GEMM_BY_ROWS):
// per pair of k, 2 loads of B (2 x 16 columns of pairs), rows broadcasts of A's pairs,
// 2 x rows instructions of 32 products each
__attribute__((always_inline))
static inline void gemm_kernel_bf16_rows(const int rows, int kc2, const uint32_t* restrict a,
                                         const uint32_t* restrict b, float* C, int ldc, int m, int n,
                                         int overwrite, const float* bias) {
    __m512 acc[GEMM_MR][GEMM_NV];
    gemm_tile_start(acc, C, ldc, m, n);
    for (int p = 0; p < kc2; p++, a += GEMM_MR, b += GEMM_NR) {
        __m512bh bv[GEMM_NV];
#pragma GCC unroll 4
        for (int j = 0; j < GEMM_NV; j++)
            bv[j] = (__m512bh)_mm512_load_si512(b + 16 * j);
#pragma GCC unroll 16
        for (int i = 0; i < rows; i++) {
            __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[i]);
#pragma GCC unroll 4
            for (int j = 0; j < GEMM_NV; j++)
                acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, bv[j]);
        }
    }
    gemm_tile_store(acc, C, ldc, m, n, overwrite, bias);
}

static void gemm_kernel_bf16_dp(int kc2, const uint32_t* restrict a, const uint32_t* restrict b, float* C,
                                int ldc, int m, int n, int overwrite, const float* bias) {
    GEMM_BY_ROWS(m, gemm_kernel_bf16_rows, kc2, a, b, C, ldc, m, n, overwrite, bias);
}
#endif

// The widened kernel: every CPU with float32 FMA, and the AVX512-BF16 CPUs whose vdpbf16ps
// is slower than two FMAs (Intel's Sapphire and Emerald Rapids: half the FMA's flops). A pair
// of bf16 in one 32-bit word widens to two float32 with one instruction each: the odd k is
// the word with its low half cleared, the even k the word shifted up by 16. Then the plain
// twin's two sums per pair, odd first, each one FMA: the product is exact, so the FMA rounds
// once, as the plain twin's sum does, and the bits are the plain twin's (tests/bf16_checks.h).
// Per pair the tile runs two passes, the odd k then the even k, so that one pass's widened
// vectors of B, a broadcast of A and the accumulators fit the registers (AVX-512: 28 + 2 + 1
// of 32); A's pairs are widened once per pair into two short arrays, which the passes
// broadcast from memory (a load, not an instruction beside the FMAs).
#define BF16_HIGH 0xffff0000u  // the odd k of a pair: the top half of the word

#ifdef __AVX512F__
__attribute__((always_inline))
static inline void gemm_kernel_bf16w_rows(const int rows, int kc2, const uint32_t* restrict a,
                                          const uint32_t* restrict b, float* C, int ldc, int m, int n,
                                          int overwrite, const float* bias) {
    __m512 acc[GEMM_MR][GEMM_NV];
    gemm_tile_start(acc, C, ldc, m, n);
    const __m512i high = _mm512_set1_epi32((int)BF16_HIGH);
    _Alignas(64) float a_odd[16], a_even[16];  // this pair's A, widened (GEMM_MR <= 16)
    for (int p = 0; p < kc2; p++, a += GEMM_MR, b += GEMM_NR) {
        __m512i aw = _mm512_maskz_loadu_epi32(gemm_lanes(GEMM_MR), a);
        _mm512_store_si512(a_odd, _mm512_and_si512(aw, high));
        _mm512_store_si512(a_even, _mm512_slli_epi32(aw, 16));
#pragma GCC unroll 4
        for (int j = 0; j < GEMM_NV; j++) {  // one vector of B's columns at a time: odd k, even k
            __asm__("" : "+m"(a_odd), "+m"(a_even));  // (broadcast again, not kept in registers)
            __m512 bv = _mm512_castsi512_ps(_mm512_and_si512(_mm512_load_si512(b + 16 * j), high));
#pragma GCC unroll 16
            for (int i = 0; i < rows; i++)
                acc[i][j] = _mm512_fmadd_ps(_mm512_set1_ps(a_odd[i]), bv, acc[i][j]);
            bv = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_load_si512(b + 16 * j), 16));
#pragma GCC unroll 16
            for (int i = 0; i < rows; i++)
                acc[i][j] = _mm512_fmadd_ps(_mm512_set1_ps(a_even[i]), bv, acc[i][j]);
        }
    }
    gemm_tile_store(acc, C, ldc, m, n, overwrite, bias);
}
#else
// the same in vectors of GEMM_VW floats (fast/vec.h), as gemm_kernel.h's kernel of these CPUs
typedef uint32_t gemm_vu __attribute__((vector_size(4 * GEMM_VW)));
typedef uint32_t gemm_vuu __attribute__((vector_size(4 * GEMM_VW), aligned(4), may_alias));

static inline float bf16_bits_float(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}

__attribute__((always_inline))
static inline void gemm_kernel_bf16w_rows(const int rows, int kc2, const uint32_t* restrict a,
                                          const uint32_t* restrict b, float* C, int ldc, int m, int n,
                                          int overwrite, const float* bias) {
    gemm_vf acc[GEMM_MR][GEMM_NV];
#pragma GCC unroll 16
    for (int i = 0; i < GEMM_MR; i++)
#pragma GCC unroll 8
        for (int j = 0; j < GEMM_NV; j++)
            acc[i][j] = (gemm_vf){0};
    for (int i = 0; i < m; i++)  // C is needed only at the end: start fetching it now
        __builtin_prefetch(C + (size_t)i * ldc);
    float a_odd[GEMM_MR], a_even[GEMM_MR];  // this pair's A, widened
    for (int p = 0; p < kc2; p++, a += GEMM_MR, b += GEMM_NR) {
#pragma GCC unroll 16
        for (int i = 0; i < GEMM_MR; i++) {
            a_odd[i] = bf16_bits_float(a[i] & BF16_HIGH);
            a_even[i] = bf16_bits_float(a[i] << 16);
        }
        __asm__("" : "+m"(a_odd), "+m"(a_even));  // (broadcast from memory: a load, no shuffle)
        gemm_vf bv[GEMM_NV];
#pragma GCC unroll 8
        for (int j = 0; j < GEMM_NV; j++)
            bv[j] = (gemm_vf)(*(const gemm_vuu*)(b + GEMM_VW * j) & BF16_HIGH);
#pragma GCC unroll 16
        for (int i = 0; i < GEMM_MR; i++) {  // (a constant count: clang unrolls only such loops)
            if (i >= rows) break;
#pragma GCC unroll 8
            for (int j = 0; j < GEMM_NV; j++)
                acc[i][j] = vec_fma(acc[i][j], a_odd[i], bv[j]);
        }
#pragma GCC unroll 8
        for (int j = 0; j < GEMM_NV; j++)
            bv[j] = (gemm_vf)(*(const gemm_vuu*)(b + GEMM_VW * j) << 16);
#pragma GCC unroll 16
        for (int i = 0; i < GEMM_MR; i++) {
            if (i >= rows) break;
#pragma GCC unroll 8
            for (int j = 0; j < GEMM_NV; j++)
                acc[i][j] = vec_fma(acc[i][j], a_even[i], bv[j]);
        }
    }
    gemm_vtile_store(acc, C, ldc, m, n, overwrite, bias);
}
#endif

static void gemm_kernel_bf16_widen(int kc2, const uint32_t* restrict a, const uint32_t* restrict b, float* C,
                                   int ldc, int m, int n, int overwrite, const float* bias) {
    GEMM_BY_ROWS(m, gemm_kernel_bf16w_rows, kc2, a, b, C, ldc, m, n, overwrite, bias);
}

// Widened once, when packed: a sliver of R rows of kc2 pairs becomes R rows of 2 kc2 float32,
// each pair as the widened kernel takes it, its odd k first, then its even k. The float32
// kernel (gemm_kernel.h) then makes the widened kernel's FMAs in the widened kernel's order,
// so the bits are the same, without the widening beside the FMAs: a block's sliver is
// widened once and read by every tile of its row or column (sgemm packs it so, gemm.c).
static void bf16_widen_sliver(const uint32_t* restrict pairs, int kc2, int R, float* restrict dst) {
    for (int p = 0; p < kc2; p++)
        for (int r = 0; r < R; r++) {
            uint32_t w = pairs[(size_t)p * R + r], odd = w & BF16_HIGH, even = w << 16;
            memcpy(dst + (size_t)(2 * p) * R + r, &odd, sizeof odd);
            memcpy(dst + (size_t)(2 * p + 1) * R + r, &even, sizeof even);
        }
}

// The same sliver in one pass, as sgemm packs for the packed kernel: each value rounded to
// bf16 (as the pairs' packing rounds it) and kept in a float32's top half, a pair's odd k
// first; ks = kc rounded up to even rows of R (an odd kc's last pair: 0, then its even k).
// From float32 (rounding) or from the weights' bf16 copy (widening only); a sliver lying in
// rows of src (by_rows, contiguous in k) or in columns (each k a row of src).
#if defined(__AVX512BF16__)
static inline __m512 bf16_round16(__m512 x) {  // vcvtneps2bf16: as bf16_pack_* round (denormals: 0)
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(x)), 16));
}
#elif defined(__AVX512F__)
static inline __m512 bf16_round16(__m512 x) {  // bf16_round_top, 16 lanes
    bf16_vw u = bf16_round_top((bf16_vw)_mm512_castps_si512(x)) & BF16_HIGH;
    return _mm512_castsi512_ps((__m512i)u);
}
#endif

#ifdef __AVX512F__
// 16 values of a row of the source: f's rounded, or (f NULL) h's widened
static inline __m512 bf16_load16(const float* f, const uint16_t* h, size_t at, __mmask16 lanes) {
    if (f) return bf16_round16(_mm512_maskz_loadu_ps(lanes, f + at));
    __m512i words = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(lanes, h + at));
    return _mm512_castsi512_ps(_mm512_slli_epi32(words, 16));
}
#else
// Elsewhere a sliver lying in columns is rounded VEC_W values at a time as its rows are
// copied. One lying in rows, or not whole vectors wide (GEMM_MR 6 of AVX2's 8 lanes), is placed
// first as float32's is (f's values as they are, h's widened), then rounded in place over its
// whole length: at the vectors' rate, not one value at a time.
static inline float bf16_load1(const float* f, const uint16_t* h, size_t at) {
    return f ? f[at] : bf16_to_float(h[at]);
}
static void bf16_round_sliver(float* d, size_t n) {  // each float rounded as bf16_round_float
    size_t i = 0;
    for (; i + VEC_W <= n; i += VEC_W)
        *(bf16_vwu*)(d + i) = bf16_round_top(*(const bf16_vwu*)(d + i)) & BF16_HIGH;
    for (; i < n; i++)
        d[i] = bf16_round_float(d[i]);
}
// VEC_W values of a row of the source into d: f's rounded, or (f NULL) h's widened
typedef uint16_t bf16_vhu __attribute__((vector_size(2 * VEC_W), aligned(2), may_alias));
static inline void bf16_load_vec(const float* f, const uint16_t* h, size_t at, float* d) {
    if (f) *(bf16_vwu*)d = bf16_round_top(*(const bf16_vwu*)(f + at)) & BF16_HIGH;
    else   *(bf16_vwu*)d = __builtin_convertvector(*(const bf16_vhu*)(h + at), bf16_vw) << 16;
}
#endif

// from the float32 f (rounding) or from h, the weights' bf16 copy (f NULL): rows of the
// source contiguous in k
static void bf16_pack_rows_widened(const float* f, const uint16_t* h, int ld, int rows, int R, int kc,
                                   float* dst) {
#ifdef __AVX512F__
    for (int r0 = 0; r0 < R; r0 += 16) {  // 16 rows x 16 k: load, swap each pair's two k, transpose
        int nr = rows - r0, w = gemm_imin(16, R - r0);
        for (int k0 = 0; k0 < kc; k0 += 16) {
            int nk = gemm_imin(16, kc - k0), nk2 = (nk + 1) / 2 * 2;
            __m512 v[16];
            for (int i = 0; i < 16; i++) {
                size_t at = (size_t)(r0 + i) * ld + k0;  // (rows past the matrix are not read)
                v[i] = i >= nr ? _mm512_setzero_ps() : bf16_load16(f, h, at, gemm_lanes(nk));
                v[i] = _mm512_permute_ps(v[i], 0xB1);
            }
            transpose16(v);
            for (int k = 0; k < nk2; k++)
                _mm512_mask_storeu_ps(dst + (size_t)(k0 + k) * R + r0, gemm_lanes(w), v[k]);
        }
    }
#else
    for (int r = 0; r < R; r++)
        for (int k = 0; k < kc; k += 2) {
            size_t at = (size_t)r * ld + k;
            dst[(size_t)k * R + r] = r < rows && k + 1 < kc ? bf16_load1(f, h, at + 1) : 0.0f;  // odd k
            dst[(size_t)(k + 1) * R + r] = r < rows ? bf16_load1(f, h, at) : 0.0f;
        }
    if (f) bf16_round_sliver(dst, (size_t)(kc + 1) / 2 * 2 * R);
#endif
}

// one row of a sliver lying in columns: d[c] = the source's row at `at`, c < cols, then 0 up to R
// (no row: 0)
__attribute__((always_inline))
static inline void bf16_widened_row(const float* f, const uint16_t* h, size_t at, int has_row, int cols,
                                    int R, float* d) {
#ifdef __AVX512F__
    for (int c = 0; c < R; c += 16) {
        __m512 v = has_row ? bf16_load16(f, h, at + c, gemm_lanes(cols - c)) : _mm512_setzero_ps();
        _mm512_mask_storeu_ps(d + c, gemm_lanes(R - c), v);
    }
#else
    int n = has_row ? gemm_imin(cols, R) : 0, c = 0;
    if (f && n == R && R % VEC_W) {  // (a whole row narrower than its vectors: as float32's
        memcpy(d, f + at, sizeof(float) * R);  // packing copies it; rounded after)
        return;
    }
    for (; c + VEC_W <= n; c += VEC_W)
        bf16_load_vec(f, h, at + c, d + c);
    for (; c < n; c++)  // (f's: rounded after, with the sliver: bf16_pack_cols_widened)
        d[c] = bf16_load1(f, h, at + c);
    for (; c < R; c++)
        d[c] = 0.0f;
#endif
}

// the same, each k a row of the source: row k + 1 (the pair's odd k) first, then row k
__attribute__((always_inline))
static inline void bf16_pack_cols_widened(const float* f, const uint16_t* h, int ld, int cols, int R, int kc,
                                          float* dst) {
    for (int k = 0; k < kc; k += 2) {
        bf16_widened_row(f, h, (size_t)(k + 1) * ld, k + 1 < kc, cols, R, dst + (size_t)k * R);
        bf16_widened_row(f, h, (size_t)k * ld, 1, cols, R, dst + (size_t)(k + 1) * R);
    }
#ifndef __AVX512F__
    if (f && gemm_imin(cols, R) % VEC_W)  // (columns past the last whole vector: once rounded
        bf16_round_sliver(dst, (size_t)(kc + 1) / 2 * 2 * R);  // again, the same values)
#endif
}

// the same as a kernel of pairs (the probe, the tests): both slivers widened, then float32's
static _Thread_local float* bf16_widened;  // the two slivers widened, 2 kc2 deep
static _Thread_local int bf16_widened_kc2;
static void gemm_kernel_bf16_packed(int kc2, const uint32_t* restrict a, const uint32_t* restrict b, float* C,
                                    int ldc, int m, int n, int overwrite, const float* bias) {
    size_t a_floats = (2 * (size_t)kc2 * GEMM_MR + 15) / 16 * 16;  // (bw aligned: the kernel's loads)
    if (kc2 > bf16_widened_kc2) {
        aligned_free(bf16_widened);
        bf16_widened = alignedMallocCheck(sizeof(float) * (a_floats + 2 * (size_t)kc2 * GEMM_NR));
        bf16_widened_kc2 = kc2;
    }
    float *aw = bf16_widened, *bw = bf16_widened + a_floats;
    bf16_widen_sliver(a, kc2, GEMM_MR, aw);
    bf16_widen_sliver(b, kc2, GEMM_NR, bw);
    gemm_kernel(2 * kc2, aw, bw, C, ldc, m, n, overwrite, bias);
}

// AMX (Intel Sapphire Rapids and later): tile registers of 16 rows x 64 bytes, and
// tdpbf16ps, C_tile += A_tile B_tile over 16 rows of A (16 pairs of k each) and 16 pairs of
// k of B (16 columns each): 8,192 products an instruction. A tile row holds consecutive
// pairs of one row of A, so A's sliver is laid out [row][pair] here (bf16_amx_layout), B's
// as the other kernels have it, [pair][column]; both are padded with zero pairs to a depth
// of 16. The tile adds its pairs in its own order (inside the instruction), so its sums
// are not the plain twin's bits: they differ as float32 sums of the same exact products in
// another order, which tests/bf16_checks.h bounds (doc/precision.md). Linux hands a process
// the tiles' 8 KB of state only when asked (arch_prctl), once; each thread loads the tiles'
// shapes before its first product.
enum { BF16_AMX_DEPTH = 16 };  // pairs of k per tile
static inline int bf16_amx_depth(int kc) {  // a sliver's pairs, padded to whole tiles
    return ((kc + 1) / 2 + BF16_AMX_DEPTH - 1) / BF16_AMX_DEPTH * BF16_AMX_DEPTH;
}
#if defined(__AMX_BF16__) && defined(__AMX_TILE__) && defined(__linux__) && defined(__x86_64__) \
    && GEMM_MR <= 16 && GEMM_NR == 32
#define BF16_HAS_AMX 1

// 1 if Linux grants this process the tiles' state: arch_prctl(ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA), called by its numbers (glibc has no wrapper); asked once
enum { AMX_SYS_ARCH_PRCTL = 158, AMX_ARCH_REQ_XCOMP_PERM = 0x1023, AMX_XFEATURE_XTILEDATA = 18 };
static int bf16_amx_usable(void) {
    static int state;  // 0: not asked, 1: granted, -1: refused (an old kernel, or no AMX)
    if (!state) {
        long ret;
        __asm__ volatile("syscall" : "=a"(ret)
                         : "a"((long)AMX_SYS_ARCH_PRCTL), "D"((long)AMX_ARCH_REQ_XCOMP_PERM),
                           "S"((long)AMX_XFEATURE_XTILEDATA)
                         : "rcx", "r11", "memory");
        state = ret == 0 ? 1 : -1;
    }
    return state == 1;
}

// this thread's tile shapes: tmm0, tmm1 the two halves of C's tile (GEMM_MR rows of 16
// floats), tmm2 A's (GEMM_MR rows of 16 pairs), tmm3, tmm4 B's halves (16 pairs of 16 columns)
static _Thread_local int bf16_amx_configured;
static void bf16_amx_configure(void) {
    struct { uint8_t palette, start_row, reserved[14]; uint16_t colsb[16]; uint8_t rows[16]; }
        config = {.palette = 1};
    for (int t = 0; t < 5; t++)
        config.colsb[t] = 64, config.rows[t] = t < 3 ? GEMM_MR : BF16_AMX_DEPTH;
    _tile_loadconfig(&config);
    bf16_amx_configured = 1;
}

// the slivers in the tiles' layout, from the pairs as bf16_pack_* wrote them ([pair][R], kc2
// deep): A's (a_rows) swapped into [row][pair], B's in place; ks (a multiple of 16) deep
static void bf16_amx_layout(uint32_t* pairs, int kc2, int R, int ks, int a_rows, uint32_t* dst) {
    if (!a_rows) {
        memset(pairs + (size_t)kc2 * R, 0, sizeof(uint32_t) * (size_t)(ks - kc2) * R);
        return;
    }
    for (int i = 0; i < R; i++)
        for (int p = 0; p < ks; p++)
            dst[(size_t)i * ks + p] = p < kc2 ? pairs[(size_t)p * R + i] : 0;
}
static _Thread_local uint32_t bf16_amx_pairs[GEMM_MR * GEMM_KC_BF16 / 2];  // A's pairs, before

// C[m x n] (=, or +=) a-sliver * b-sliver over ks pairs (a multiple of 16): GEMM_MR x 32 of C
// in two tiles, from zero; then C = acc (+ bias) or C += acc, as the plain twin ends
static void gemm_kernel_bf16_amx(int ks, const uint32_t* restrict a, const uint32_t* restrict b, float* C,
                                 int ldc, int m, int n, int overwrite, const float* bias) {
    if (!bf16_amx_configured) bf16_amx_configure();
    _tile_zero(0);
    _tile_zero(1);
    for (int p = 0; p < ks; p += BF16_AMX_DEPTH) {
        _tile_loadd(2, a + p, ks * sizeof(uint32_t));  // row i: a[i ks + p ...]
        _tile_loadd(3, b + (size_t)p * GEMM_NR, GEMM_NR * sizeof(uint32_t));
        _tile_loadd(4, b + (size_t)p * GEMM_NR + 16, GEMM_NR * sizeof(uint32_t));
        _tile_dpbf16ps(0, 2, 3);
        _tile_dpbf16ps(1, 2, 4);
    }
    float acc[GEMM_MR][GEMM_NR];
    _tile_stored(0, &acc[0][0], GEMM_NR * sizeof(float));
    _tile_stored(1, &acc[0][16], GEMM_NR * sizeof(float));
    gemm_tile_store_plain(acc, C, ldc, m, n, overwrite, bias);
}
#endif

// Which kernel runs the products: three compute the same sums. vdpbf16ps where the CPU has
// it and it is the faster (Zen 5: 1.9x the FMA's flops; Sapphire and Emerald Rapids: 0.5x);
// else the widened FMAs, widened once as sgemm packs its slivers and run by the float32
// kernel ("packed", at float32's speed), or widened inside the kernel beside the FMAs
// ("widen", which packs half the bytes). The first bf16 product measures them on one tile
// (bf16_kernel_probe, a few ms) and keeps the fastest; BF16_KERNEL=dpbf16, packed, widen or
// amx in the environment forces one (the tests, the benchmark). All compute the plain twin's
// sums; vdpbf16ps differs only where it flushes a denormal float32 (a sum or product below
// 2^-126) to 0, which the FMA keeps (doc/precision.md). A fourth, AMX's tiles, runs wherever
// the build, the CPU and Linux have them, without a measurement: 1.9x float32's 124M step on
// an Intel Xeon with AMX. Its sums are in the tile's order, within a tested bound of the plain
// twin's but not its bits, so a choice that followed the machine's load could change a run's
// bits from one run to the next; a rule cannot. BF16_KERNEL=packed there runs the FMAs.
enum { BF16_UNCHOSEN = 0, BF16_DPBF16 = 1, BF16_WIDEN = 2, BF16_PACKED = 3, BF16_AMX = 4 };
static const char* const BF16_KERNEL_NAMES[] = {"", "dpbf16", "widen", "packed", "amx"};
static _Atomic int bf16_kernel = BF16_UNCHOSEN;
static double bf16_probe_times[5];  // the probe's seconds per tile of each kernel; 0: not measured
static const char* bf16_kernel_how = "";  // "measured", "forced by BF16_KERNEL"

// seconds per call of a kernel on the probe's tile: the best of 3 rounds of `calls` calls
static double bf16_probe_time(int kind, const uint32_t* a, const uint32_t* b, const float* aw,
                              const float* bw, float* c, int kc2, int calls) {
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = now_seconds();
        for (int k = 0; k < calls; k++) {
#if defined(__AVX512BF16__)
            if (kind == BF16_DPBF16) gemm_kernel_bf16_dp(kc2, a, b, c, GEMM_NR, GEMM_MR, GEMM_NR, !k, NULL);
#endif
            if (kind == BF16_WIDEN) gemm_kernel_bf16_widen(kc2, a, b, c, GEMM_NR, GEMM_MR, GEMM_NR, !k, NULL);
            if (kind == BF16_PACKED) gemm_kernel(2 * kc2, aw, bw, c, GEMM_NR, GEMM_MR, GEMM_NR, !k, NULL);
        }
        double dt = (now_seconds() - t0) / calls;
        best = dt < best ? dt : best;
    }
    return best;
}

// the fastest kernel on a full tile 256 pairs deep (operands in L1, as in the blocked
// product), alternating them; the packed one as sgemm runs it, its slivers widened before.
// vdpbf16ps wins only if 10% faster (the FMAs are the plain twin's own arithmetic,
// denormals included), the widened one only if 10% faster than the packed one (which reads
// each sliver widened once, where the widened kernel widens it for every tile)
static int bf16_kernel_probe(void) {
    int kc2 = 256;
    uint32_t* a = compat_aligned_alloc(64, sizeof(uint32_t) * kc2 * (GEMM_MR + GEMM_NR));
    float* aw = compat_aligned_alloc(64, sizeof(float) * 2 * kc2 * (GEMM_MR + GEMM_NR));
    float* c = compat_aligned_alloc(64, sizeof(float) * GEMM_MR * GEMM_NR);
    if (!a || !aw || !c) die("out of memory for the bf16 kernel's probe");
    uint32_t* b = a + (size_t)kc2 * GEMM_MR;
    float* bw = aw + 2 * (size_t)kc2 * GEMM_MR;
    for (int i = 0; i < kc2 * (GEMM_MR + GEMM_NR); i++)
        a[i] = bf16_pair(1.0f + (float)(i % 7) / 64, 1.0f - (float)(i % 5) / 64);
    bf16_widen_sliver(a, kc2, GEMM_MR, aw);
    bf16_widen_sliver(b, kc2, GEMM_NR, bw);
    double* t = bf16_probe_times;
    t[BF16_DPBF16] = t[BF16_WIDEN] = t[BF16_PACKED] = 1e30;
    for (int round = 0; round < 3; round++)
        for (int kind = BF16_DPBF16; kind <= BF16_PACKED; kind++) {
#if !defined(__AVX512BF16__)
            if (kind == BF16_DPBF16) continue;
#endif
            double dt = bf16_probe_time(kind, a, b, aw, bw, c, kc2, 40);
            t[kind] = dt < t[kind] ? dt : t[kind];
        }
    aligned_free(a);
    aligned_free(aw);
    aligned_free(c);
    int fma = t[BF16_WIDEN] * 1.1 < t[BF16_PACKED] ? BF16_WIDEN : BF16_PACKED;
#if defined(__AVX512BF16__)
    if (t[BF16_DPBF16] * 1.1 < t[fma]) return BF16_DPBF16;
#else
    t[BF16_DPBF16] = 0;
#endif
    return fma;
}

// 1 if this build has AMX's kernel and Linux grants this process the tiles
static int bf16_amx_present(void) {
#if defined(BF16_HAS_AMX)
    return bf16_amx_usable();
#else
    return 0;
#endif
}

// chooses the kernel once (BF16_KERNEL, AMX where present, or the probe); any thread may
// call it, the first call chooses
static int bf16_kernel_choose(void) {
    int k = atomic_load_explicit(&bf16_kernel, memory_order_acquire);
    if (k) return k;
    #pragma omp critical(bf16_kernel_choice)
    {
        k = atomic_load_explicit(&bf16_kernel, memory_order_relaxed);
        if (!k) {
            const char* force = getenv("BF16_KERNEL");
            if (force && force[0]) {
                for (int i = BF16_DPBF16; i <= BF16_AMX; i++)
                    if (strcmp(force, BF16_KERNEL_NAMES[i]) == 0) k = i;
                if (!k)
                    die("BF16_KERNEL=%s: expected dpbf16, packed, widen or amx (or unset: measured at start)",
                        force);
#if defined(BF16_HAS_AMX)
                if (k == BF16_AMX && !bf16_amx_usable())
                    die("BF16_KERNEL=amx: Linux refused this process AMX's tile state (arch_prctl); use "
                        "packed, or unset it");
#else
                if (k == BF16_AMX)
                    die("BF16_KERNEL=amx: this build has no AMX (an x86-64 Linux build for a CPU with "
                        "AMX-BF16, as -march=native on one); use packed, or unset it");
#endif
#if !defined(__AVX512BF16__)
                if (k == BF16_DPBF16)
                    die("BF16_KERNEL=dpbf16: this build has no vdpbf16ps (AVX512-BF16); use packed or widen, "
                        "or unset it");
#endif
                bf16_kernel_how = "forced by BF16_KERNEL";
            } else if (bf16_amx_present())
                k = BF16_AMX, bf16_kernel_how = "the CPU has AMX";
            else
                k = bf16_kernel_probe(), bf16_kernel_how = "measured";
            atomic_store_explicit(&bf16_kernel, k, memory_order_release);
        }
    }
    return k;
}

// 1 if the chosen kernel computes the plain twin's sums bit for bit: all but AMX's (the tests)
int bf16_kernel_exact(void) { return bf16_kernel_choose() != BF16_AMX; }

// the chosen kernel, its BF16_KERNEL name first, then in words, for the run's header and the
// benchmark ("packed, widened to float32 when packed, float32's kernel (measured: ...)")
const char* bf16_kernel_describe(void) {
    static const char* const words[] = {"", "vdpbf16ps", "widened to float32 FMA in the kernel",
                                        "widened to float32 when packed, float32's kernel",
                                        "AMX tiles, tdpbf16ps, sums in the tile's order"};
    static char text[240];
    int k = bf16_kernel_choose();
    const double* t = bf16_probe_times;
    int n = snprintf(text, sizeof text, "%s, %s (%s", BF16_KERNEL_NAMES[k], words[k], bf16_kernel_how);
    if (t[BF16_PACKED] > 0) {  // each kernel's speed against the packed one's
        double widen = t[BF16_PACKED] / t[BF16_WIDEN];
        n += snprintf(text + n, sizeof text - n, ": widened in the kernel %.2fx", widen);
        if (t[BF16_DPBF16] > 0)
            n += snprintf(text + n, sizeof text - n, ", vdpbf16ps %.2fx", t[BF16_PACKED] / t[BF16_DPBF16]);
        n += snprintf(text + n, sizeof text - n, " the packed one's speed");
    }
    snprintf(text + n, sizeof text - n, ")");
    return text;
}

// the kind sgemm packs its slivers for: pairs of bf16, or float32 already widened (BF16_PACKED)
static int bf16_kernel_packed(void) { return bf16_kernel_choose() == BF16_PACKED; }
#if defined(BF16_HAS_AMX)
static int bf16_kernel_amx(void) { return bf16_kernel_choose() == BF16_AMX; }  // [row][pair]
#endif

// C[m x n] (=, or +=) a-sliver * b-sliver over kc2 pairs of k, with the chosen kernel
static void gemm_kernel_bf16(int kc2, const uint32_t* restrict a, const uint32_t* restrict b, float* C,
                             int ldc, int m, int n, int overwrite, const float* bias) {
#if defined(__AVX512BF16__)
    if (atomic_load_explicit(&bf16_kernel, memory_order_relaxed) == BF16_DPBF16) {
        gemm_kernel_bf16_dp(kc2, a, b, C, ldc, m, n, overwrite, bias);
        return;
    }
#endif
    if (atomic_load_explicit(&bf16_kernel, memory_order_relaxed) == BF16_PACKED)
        gemm_kernel_bf16_packed(kc2, a, b, C, ldc, m, n, overwrite, bias);
    else
        gemm_kernel_bf16_widen(kc2, a, b, C, ldc, m, n, overwrite, bias);
}

#endif
