/*
fast/gemm_kernel.h: the ground floor of the matrix multiply: the tile of C each kernel
computes (its shape per CPU, GEMM_MR x GEMM_NR), the packing of float32 slivers, the ends
every kernel shares (gemm_tile_start, gemm_tile_store) and the float32 micro-kernel
(gemm_kernel). fast/bf16.h builds its bfloat16 kernel on these; fast/gemm.c, the driver
(blocking, threads, sgemm), stands on both. How the pieces fit: gemm.c's first comment.
*/
#ifndef FAST_GEMM_KERNEL_H
#define FAST_GEMM_KERNEL_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include "../util/io.h"  // die
#include "caches.h"  // the cache sizes the blocking follows
#include "vec.h"
#include "gemm_tile.h"  // GEMM_MR x GEMM_NR, GEMM_KC, GemmBlocking

GemmBlocking gemm_blocks;
static _Atomic int gemm_blocks_set;

static int gemm_round_to(long x, int unit, long lo, long hi) {
    x = x < lo ? lo : x > hi ? hi : x;
    return (int)(x / unit * unit);
}

// the blocks, set once (any thread; the first call reads the caches)
const GemmBlocking* gemm_blocking(void) {
    if (atomic_load_explicit(&gemm_blocks_set, memory_order_acquire)) return &gemm_blocks;
    #pragma omp critical(gemm_blocking)
    if (!atomic_load_explicit(&gemm_blocks_set, memory_order_relaxed)) {
        GemmBlocking g = {GEMM_MC_FIXED, GEMM_NC_FIXED, cache_size(1), cache_size(2), ""};
        const char* fixed = getenv("GEMM_BLOCKING");
#if defined(GEMM_MC) || defined(GEMM_NC)
        g.source = "fixed at build time";
#else
        if (fixed && fixed[0] && strcmp(fixed, "fixed") != 0 && strcmp(fixed, "caches") != 0)
            die("GEMM_BLOCKING=%s: expected fixed or caches (the default)", fixed);
        if (fixed && strcmp(fixed, "fixed") == 0) g.source = "the constants: GEMM_BLOCKING=fixed";
        else if (g.l2 <= 0) g.source = "the constants: no L2 size reported";
        else {
            // (never larger than the constants: on the Xeon's 2 MiB, MC 336 / NC 1536 made the
            // 124M step 1.5-2.1% slower than 168 / 768 on 2 threads; doc/speed.md)
            long row = (long)GEMM_KC * sizeof(float);  // bytes of one row of a block
            g.mc = gemm_round_to(g.l2 / 6 / row, GEMM_MR, GEMM_MR, GEMM_MC_FIXED);
            g.nc = gemm_round_to(g.l2 * 3 / 4 / row, GEMM_NR, 4 * GEMM_NR, GEMM_NC_FIXED);
            g.source = "from the L2 size, at most the constants";
        }
#endif
        (void)fixed;
#ifdef GEMM_MC
        g.mc = GEMM_MC;
#endif
#ifdef GEMM_NC
        g.nc = GEMM_NC;
#endif
        gemm_blocks = g;
        atomic_store_explicit(&gemm_blocks_set, 1, memory_order_release);
    }
    return &gemm_blocks;
}

// bf16's widened pairs (fast/bf16.h's packed kernel) make blocks 2 KC floats deep: half the
// rows and columns of float32's fill the same cache
static void gemm_blocks_widened(const GemmBlocking* g, int* mc, int* nc) {
    *mc = gemm_round_to(g->mc / 2, GEMM_MR, GEMM_MR, g->mc);
    *nc = gemm_round_to(g->nc / 2, GEMM_NR, GEMM_NR, g->nc);
}

// the blocking in words, for the benchmark and the tests
const char* gemm_blocking_describe(void) {
    static char text[256];
    const GemmBlocking* g = gemm_blocking();
    int mc2, nc2;
    gemm_blocks_widened(g, &mc2, &nc2);
    snprintf(text, sizeof text, "MC %d x KC %d x NC %d (bf16's widened pairs: %d x %d x %d), %s (L1d %ld KiB, "
             "L2 %ld KiB)", g->mc, GEMM_KC, g->nc, mc2, GEMM_KC_BF16, nc2, g->source, g->l1 >> 10, g->l2 >> 10);
    return text;
}
static int gemm_imin(int a, int b) { return a < b ? a : b; }

#ifdef __AVX512F__
static __mmask16 gemm_lanes(int n) { return n >= 16 ? 0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

// transpose 16 rows of 16 floats in place
static void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    }
}
#endif

// dst[k*R + r] = src[r*ld + k] for r < rows (rows of src are contiguous in k), 0 for rows <= r < R
static void gemm_pack_rows(const float* src, int ld, int rows, int R, int kc, float* dst) {
#ifdef __AVX512F__
    for (int r0 = 0; r0 < R; r0 += 16) {
        int nr = rows - r0, w = gemm_imin(16, R - r0);
        for (int k0 = 0; k0 < kc; k0 += 16) {
            int nk = gemm_imin(16, kc - k0);
            __m512 v[16];
            for (int i = 0; i < nr && i < 16; i++)  // long strided streams: help the prefetcher
                _mm_prefetch((const char*)(src + (size_t)(r0 + i) * ld + k0 + 64), _MM_HINT_T0);
            for (int i = 0; i < 16; i++)
                v[i] = i < nr ? _mm512_maskz_loadu_ps(gemm_lanes(nk), src + (size_t)(r0 + i) * ld + k0)
                              : _mm512_setzero_ps();
            transpose16(v);
            for (int k = 0; k < nk; k++)
                _mm512_mask_storeu_ps(dst + (size_t)(k0 + k) * R + r0, gemm_lanes(w), v[k]);
        }
    }
#else
    for (int r = 0; r < R; r++)
        for (int k = 0; k < kc; k++)
            dst[(size_t)k * R + r] = r < rows ? src[(size_t)r * ld + k] : 0.0f;
#endif
}

// dst[k*R + c] = src[k*ld + c] for c < cols (rows of src are contiguous in c), 0 for cols <= c < R
static void gemm_pack_cols(const float* src, int ld, int cols, int R, int kc, float* dst) {
    for (int k = 0; k < kc; k++) {
        const float* s = src + (size_t)k * ld;
        float* d = dst + (size_t)k * R;
#ifdef __AVX512F__
        for (int c0 = 0; c0 < R; c0 += 16)
            _mm512_mask_storeu_ps(d + c0, gemm_lanes(R - c0),
                                  _mm512_maskz_loadu_ps(gemm_lanes(cols - c0), s + c0));
#else
        if (cols == R) {  // (a full sliver: a copy)
            memcpy(d, s, sizeof(float) * R);
            continue;
        }
        for (int c = 0; c < R; c++)
            d[c] = c < cols ? s[c] : 0.0f;
#endif
    }
}

// The two ends every kernel shares (float32 and bf16, fast and plain): a tile of sums
// starts at zero while C's rows are fetched, and ends as C = tile (+ bias) or C += tile.
#ifdef __AVX512F__
enum { GEMM_NV = GEMM_NR / 16 };  // vectors of 16 floats across a tile's row

__attribute__((always_inline))
static inline void gemm_tile_start(__m512 acc[GEMM_MR][GEMM_NV], const float* C, int ldc, int m, int n) {
#pragma GCC unroll 16
    for (int i = 0; i < GEMM_MR; i++)
#pragma GCC unroll 4
        for (int j = 0; j < GEMM_NV; j++)
            acc[i][j] = _mm512_setzero_ps();
    for (int i = 0; i < m; i++)  // C is needed only at the end: start fetching it now
        for (int j = 0; j < n; j += 16)
            _mm_prefetch((const char*)(C + (size_t)i * ldc + j), _MM_HINT_T0);
}

__attribute__((always_inline))
static inline void gemm_tile_store(__m512 acc[GEMM_MR][GEMM_NV], float* C, int ldc, int m, int n,
                                   int overwrite, const float* bias) {
#pragma GCC unroll 16
    for (int i = 0; i < GEMM_MR; i++) {
        if (i >= m) break;
        float* c = C + (size_t)i * ldc;
#pragma GCC unroll 4
        for (int j = 0; j < GEMM_NV; j++) {
            __mmask16 mk = gemm_lanes(n - 16 * j);
            __m512 v = acc[i][j];
            if (!overwrite) v = _mm512_add_ps(_mm512_maskz_loadu_ps(mk, c + 16 * j), v);
            else if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, bias + 16 * j));
            _mm512_mask_storeu_ps(c + 16 * j, mk, v);
        }
    }
}
#endif

// the plain kernels' end: C (m x n of the tile) = acc (+ bias), or C += acc
static inline void gemm_tile_store_plain(float acc[GEMM_MR][GEMM_NR], float* C, int ldc, int m, int n,
                                         int overwrite, const float* bias) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            C[(size_t)i * ldc + j] = overwrite ? acc[i][j] + (bias ? bias[j] : 0.0f)
                                               : C[(size_t)i * ldc + j] + acc[i][j];
}

// An edge panel of C, whose rows stop before GEMM_MR (M = 256: 18 panels of 14, then 4 rows),
// runs a kernel that computes fewer rows: GEMM_BY_ROWS(m, kernel, args) calls kernel(rows, args)
// with rows = 2, 4 or 8 (the first that holds m), else GEMM_MR: a constant in each call, so its
// loops unroll as the full kernel's do. The rows past m read the sliver's zero padding and are
// not stored. Each element of C is its own chain of sums, so fewer rows change no bits. (One
// instance per row count 1..13 saved at most 3 rows' FMAs more and doubled fast/gemm.o's
// compile time: 7.9-11.7 s against 3.9-5.0 s, Intel Xeon.)
#define GEMM_EDGE(r) ((r) < GEMM_MR ? (r) : GEMM_MR)  // (r past a smaller tile: a branch never taken)
#define GEMM_BY_ROWS(m, kernel, ...)                                                    \
    do {                                                                                \
        if (GEMM_MR > 2 && (m) <= 2) kernel(GEMM_EDGE(2), __VA_ARGS__);                 \
        else if (GEMM_MR > 4 && (m) <= 4) kernel(GEMM_EDGE(4), __VA_ARGS__);            \
        else if (GEMM_MR > 8 && (m) <= 8) kernel(GEMM_EDGE(8), __VA_ARGS__);            \
        else kernel(GEMM_MR, __VA_ARGS__);                                              \
    } while (0)

#ifdef __AVX512F__
// the first `rows` rows of the tile: C[m x n] (=, or +=) a-sliver * b-sliver, m <= rows
__attribute__((always_inline))
static inline void gemm_kernel_rows(const int rows, int kc, const float* restrict a, const float* restrict b,
                                    float* C, int ldc, int m, int n, int overwrite, const float* bias) {
    __m512 acc[GEMM_MR][GEMM_NV];
    gemm_tile_start(acc, C, ldc, m, n);
    for (int k = 0; k < kc; k++, a += GEMM_MR, b += GEMM_NR) {
        __m512 bv[GEMM_NV];
#pragma GCC unroll 4
        for (int j = 0; j < GEMM_NV; j++)
            bv[j] = _mm512_load_ps(b + 16 * j);
#pragma GCC unroll 16
        for (int i = 0; i < rows; i++) {
            __m512 av = _mm512_set1_ps(a[i]);
#pragma GCC unroll 4
            for (int j = 0; j < GEMM_NV; j++)
                acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
        }
    }
    gemm_tile_store(acc, C, ldc, m, n, overwrite, bias);
}
#endif

#ifndef __AVX512F__
// The kernel of the other CPUs: the same loops as gemm_kernel_rows above, in vectors of
// GEMM_VW floats (vec_f, fast/vec.h) that the compiler maps to the CPU's registers, with
// one FMA instruction per multiply-add where the CPU has FMA (vec_fma)
typedef vec_f gemm_vf;
enum { GEMM_NV = GEMM_NR / GEMM_VW };  // vectors across a tile's row

// the tile's end, as gemm_tile_store: C = acc (+ bias), or C += acc, for m x n of the tile
__attribute__((always_inline))
static inline void gemm_vtile_store(gemm_vf acc[GEMM_MR][GEMM_NV], float* C, int ldc, int m, int n,
                                    int overwrite, const float* bias) {
#pragma GCC unroll 16
    for (int i = 0; i < GEMM_MR; i++) {
        if (i >= m) break;
        float* c = C + (size_t)i * ldc;
#pragma GCC unroll 8
        for (int j = 0; j < GEMM_NV; j++) {
            float* cj = c + GEMM_VW * j;
            gemm_vf v = acc[i][j];
            if (n >= GEMM_VW * (j + 1)) {
                if (!overwrite) v = vec_load(cj) + v;
                else if (bias) v = v + vec_load(bias + GEMM_VW * j);
                vec_store(cj, v);
            } else {  // the last columns of an edge tile, one at a time
                for (int l = 0; l < n - GEMM_VW * j; l++)
                    cj[l] = !overwrite ? cj[l] + v[l] : bias ? v[l] + bias[GEMM_VW * j + l] : v[l];
                break;
            }
        }
    }
}

// the first `rows` rows of the tile: C[m x n] (=, or +=) a-sliver * b-sliver, m <= rows
__attribute__((always_inline))
static inline void gemm_kernel_rows(const int rows, int kc, const float* restrict a, const float* restrict b,
                                    float* C, int ldc, int m, int n, int overwrite, const float* bias) {
    gemm_vf acc[GEMM_MR][GEMM_NV];
#pragma GCC unroll 16
    for (int i = 0; i < GEMM_MR; i++)
#pragma GCC unroll 8
        for (int j = 0; j < GEMM_NV; j++)
            acc[i][j] = (gemm_vf){0};
    for (int i = 0; i < m; i++)  // C is needed only at the end: start fetching it now
        __builtin_prefetch(C + (size_t)i * ldc);
    for (int k = 0; k < kc; k++, a += GEMM_MR, b += GEMM_NR) {
        gemm_vf bv[GEMM_NV];
#pragma GCC unroll 8
        for (int j = 0; j < GEMM_NV; j++)
            bv[j] = vec_load(b + GEMM_VW * j);
#pragma GCC unroll 16
        for (int i = 0; i < GEMM_MR; i++) {  // (a constant count: clang unrolls only such loops)
            if (i >= rows) break;
            float ai = a[i];
#pragma GCC unroll 8
            for (int j = 0; j < GEMM_NV; j++)
                acc[i][j] = vec_fma(acc[i][j], ai, bv[j]);
        }
    }
    gemm_vtile_store(acc, C, ldc, m, n, overwrite, bias);
}
#endif

// C[m x n] (=, or += if !overwrite) a-sliver (kc x GEMM_MR) * b-sliver (kc x GEMM_NR);
// m <= GEMM_MR, n <= GEMM_NR. When overwriting, bias (n values, one per column) is added
// if not NULL.
static void gemm_kernel(int kc, const float* restrict a, const float* restrict b, float* C, int ldc,
                        int m, int n, int overwrite, const float* bias) {
    GEMM_BY_ROWS(m, gemm_kernel_rows, kc, a, b, C, ldc, m, n, overwrite, bias);
}

#endif
