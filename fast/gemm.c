/*
fast/gemm.c: the blocked matrix multiply that fast/gemm.h declares (sgemm and its kin):
compiled on its own by make (fast/gemm.o), or included by fast/matmul.h in a one-file build.
*/
#ifndef FAST_GEMM_C
#define FAST_GEMM_C
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE  // madvise(MADV_HUGEPAGE), fast/alloc.h
#endif
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include "../util/io.h"
#include "gemm.h"
#include "gemm_kernel.h"  // the tile, the packing, the float32 micro-kernel
#include "bf16.h"         // the bfloat16 packing and kernel (-prec bf16), on gemm_kernel.h
#ifdef USE_BLAS
#include "blas.h"
#endif

// sgemm: deterministic single-precision matrix multiply (OpenMP + AVX-512 intrinsics;
// a kernel in vector extensions for AVX2, NEON and any other CPU: see below)
//
//   C[M,N] (= or +=) op(A)[M,K] * op(B)[K,N]
//
// Blocking (GotoBLAS / BLIS style)
// --------------------------------
// The loops, outermost first (inside one thread's share of C):
//
//   for jc in N, step NC        B block column
//     for pc in K, step KC      pack op(B)[pc:pc+KC, jc:jc+NC] -> Bp  (KC x NC, lives in L2/L3)
//       for ic in M, step MC    pack op(A)[ic:ic+MC, pc:pc+KC] -> Ap  (MC x KC, lives in L2)
//         for jr in NC, step NR     one KC x NR sliver of Bp (stays in L1 for the whole ir loop)
//           for ir in MC, step MR   one MR x KC sliver of Ap (streamed from L2)
//             micro-kernel: MR x NR block of C += Ap-sliver * Bp-sliver
//
// (When a thread's share of C spans several NC blocks of columns and all of its op(A) fits
// the packing buffer, op(A) is packed at jc = 0 only, every (pc, ic) block in a place of its
// own, and read again for the other jc: keep_A in gemm_block_in.)
//
// Packing copies each sliver into k-major order (for every k: MR floats of A,
// resp. NR floats of B), zero-padded to full MR / NR, so the micro-kernel
// reads both operands with unit stride and never needs an edge case inside
// its k loop. transA/transB only change how the packing routines read memory.
//
// Micro-kernel (AVX-512): MR=14 rows x NR=32 columns = 14 x 2 zmm = 28
// accumulators (of 32 registers). Per k: 2 vector loads of B, 14 broadcasts
// of A, 28 FMAs. Zen 5 has 2 FMA pipes with 4-cycle latency, so >= 8
// independent chains are needed; 28 is plenty and the 16 loads per 28 FMAs
// stay under the 2-loads-per-cycle limit. 6x64, 8x48 and 12x32 were 2-5% slower. An edge
// panel of m < MR rows runs the same kernel for 2, 4 or 8 rows when they hold m (GEMM_BY_ROWS).
//
// Cache sizes (tuned on Zen 5: L1D 48 KB, L2 1 MB per core):
//   B sliver  KC*NR*4 = 256*32*4 = 32 KB  -> fits L1 next to the A stream
//   A block   MC*KC*4 = 168*256*4 = 168 KB -> comfortably in L2
//   B block   KC*NC*4 = 256*768*4 = 768 KB -> L2 next to the A block; each
//             sliver is pulled into L1 once per ic block and reused MC/MR = 12
//             times. (NC=768 beat 3072 by ~5% on the 50304-wide LM head, where B
//             streams from DRAM; elsewhere NC made no measurable difference.)
// MC and NC keep those shares of the L2 cache the CPU reports at run time, at most these
// constants (gemm_blocking in gemm_kernel.h; a 512 KB L2: MC = 84, NC = 384); KC stays.
//
// Determinism: each element of C belongs to exactly one thread. Its value is
// C (or 0) + sum over K blocks in increasing order, where each block sum is a
// sequential FMA chain k = pc, pc+1, ... started from 0. KC is a constant (per precision) and
// edge tiles run the same kernel on zero-padded data, so the result does not
// depend on the thread count, on where the thread boundaries fall, or on MC and NC.
// Threads split C by whole MR-row or NR-column panels (whichever of M, N is
// larger), and every thread packs its own operands: no barriers, no sharing.
//
// Other CPUs: one kernel written in GCC/Clang vector extensions (gemm_vf, GEMM_VW floats),
// its tile shaped to the register file so that the accumulators, the vectors of B and a
// broadcast of A stay in registers; chosen at compile time:
//   AVX2 + FMA  6 x 16: 12 ymm accumulators + 2 of B + 1 broadcast = 15 of 16 registers
//   NEON        8 x 12: 24 q accumulators + 3 of B + 1 of A = 28 of 32
//   SSE2        6 x 8:  12 xmm accumulators + 2 + 1 = 15 of 16 (no FMA: a multiply, an add)
//   any other   4 x 8   (the compiler lowers the vectors to whatever the CPU has)
// An element's chain of sums does not depend on the tile's shape, so where the CPU has FMA
// (-ffp-contract=fast fuses acc += a * b) the products are the AVX-512 build's bit for bit.
// GEMM_KERNEL_NAME names the kernel built ("avx2+fma 6x16"); the run's header prints it.
// The tiles, the packing and the kernels are fast/gemm_kernel.h's (float32) and fast/bf16.h's
// (bfloat16, built on the former); this file is the driver that blocks, packs and shares.

// Per-thread packing buffers, allocated on first use and kept for the thread's lifetime
// (OpenMP worker threads persist). _Thread_local also keeps callers in different
// threads of an outer parallel region from sharing a buffer. Under bf16 the same buffers
// hold the slivers as pairs of bf16 (one uint32_t, the size of a float, per pair of k).
// gemm_Ap holds one MC x KC block of op(A), or all of a share's op(A) where it fits
// (gemm_block_in): 1M floats, 4 MB (the LM head's 256 x 768 input at 124M is 0.2M).
static _Thread_local float* gemm_Ap;
static _Thread_local float* gemm_Bp;
static _Thread_local int gemm_Bp_cols;  // gemm_Bp's columns: GEMM_KC x gemm_Bp_cols floats
#define GEMM_AP_FLOATS ((size_t)1 << 20)
#ifndef GEMM_KEEP_A
#define GEMM_KEEP_A 1
#endif

// a sliver of R rows (GEMM_MR of A, GEMM_NR of B), kc deep, of which n are real: from a
// matrix whose sliver lies in rows (by_rows) or in columns; float32 (bf16 = 0), pairs of bf16
// (1), or those pairs widened to float32, 2 (kc + 1) / 2 deep (2: BF16_PACKED, fast/bf16.h), or
// pairs in AMX's layout, bf16_amx_depth(kc) deep (3: BF16_AMX);
// under bf16 an operand among the weights is packed from their bf16 copy
__attribute__((always_inline))
static inline void gemm_pack(const GemmPrecision* p, int bf16, int by_rows, const float* src, int ld, int n,
                             int R, int kc, float* dst) {
    const uint16_t* copy = bf16 ? gemm_bf16_copy_of(p, src) : NULL;
    uint32_t* pairs = (uint32_t*)dst;
#if defined(BF16_HAS_AMX)
    if (bf16 == 3 && R == GEMM_MR) pairs = bf16_amx_pairs;  // A's, swapped below
#endif
    if (bf16 == 2) {  // from src rounded, or from the copy
        if (by_rows) bf16_pack_rows_widened(copy ? NULL : src, copy, ld, n, R, kc, dst);
        else         bf16_pack_cols_widened(copy ? NULL : src, copy, ld, n, R, kc, dst);
    } else if (copy) {
        if (by_rows) bf16_pack_rows_copy(copy, ld, n, R, kc, pairs);
        else         bf16_pack_cols_copy(copy, ld, n, R, kc, pairs);
    } else if (bf16) {
        if (by_rows) bf16_pack_rows(src, ld, n, R, kc, pairs);
        else         bf16_pack_cols(src, ld, n, R, kc, pairs);
    } else {
        if (by_rows) gemm_pack_rows(src, ld, n, R, kc, dst);
        else         gemm_pack_cols(src, ld, n, R, kc, dst);
    }
#if defined(BF16_HAS_AMX)
    if (bf16 == 3)  // AMX's layout (fast/bf16.h): A's sliver (R = GEMM_MR) swapped, both padded
        bf16_amx_layout(pairs, (kc + 1) / 2, R, bf16_amx_depth(kc), R == GEMM_MR, (uint32_t*)dst);
#endif
}

// One thread's share: the m x n block of C whose top-left is C, with A and B already
// offset to the matching row / column. bf16 is a constant where this is called (gemm_pack's),
// so each precision compiles to its own loops; a sliver is ks rows deep: kc floats, (kc + 1) / 2
// pairs of bf16, or those pairs widened, 2 (kc + 1) / 2 floats.
__attribute__((always_inline))
static inline void gemm_block_in(const GemmPrecision* p, int bf16, int tA, int tB, int m, int n, int K,
                                 const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                                 int accumulate, const float* bias) {
    const GemmBlocking* blocks = gemm_blocking();  // (from the caches, set once: gemm_kernel.h)
    int MC = blocks->mc, NC = blocks->nc;
    if (bf16 == 2) gemm_blocks_widened(blocks, &MC, &NC);
    if (!gemm_Ap || gemm_Bp_cols < NC) {  // (the first time, or wider blocks: the tests set them)
        aligned_free(gemm_Ap), aligned_free(gemm_Bp);
        gemm_Bp_cols = (NC + GEMM_NR - 1) / GEMM_NR * GEMM_NR;
        gemm_Ap = compat_aligned_alloc(64, sizeof(float) * GEMM_AP_FLOATS);
        gemm_Bp = compat_aligned_alloc(64, sizeof(float) * GEMM_KC_BF16 * gemm_Bp_cols);  // (bf16 == 2's)
        if (!gemm_Ap || !gemm_Bp) die("out of memory for the matmul packing buffers");
    }
    float *Ap = gemm_Ap, *Bp = gemm_Bp;
    int KC = bf16 ? GEMM_KC_BF16 : GEMM_KC;
    int KS = bf16 == 1 || bf16 == 3 ? (KC + 1) / 2 : KC;  // (KS: a block's depth)
    // op(A) is packed again for every block of columns, unless all of it fits gemm_Ap: then
    // once, at jc = 0, each (pc, ic) block in a place of its own, and read again by the
    // other blocks (a thread's share of the 124M LM head spans 33 blocks of columns)
    size_t m_pad = (size_t)(m + GEMM_MR - 1) / GEMM_MR * GEMM_MR;
    int keep_A = GEMM_KEEP_A && n > NC && m_pad * KS * ((K + KC - 1) / KC) <= GEMM_AP_FLOATS;
    for (int jc = 0; jc < n; jc += NC) {
        int nc = gemm_imin(NC, n - jc);
        for (int pc = 0; pc < K; pc += KC) {
            int kc = gemm_imin(KC, K - pc), ks = bf16 == 1 ? (kc + 1) / 2 : bf16 == 3 ? bf16_amx_depth(kc)
                                                : bf16 ? (kc + 1) / 2 * 2 : kc;
            float* A_pc = keep_A ? Ap + m_pad * KS * (pc / KC) : Ap;  // this K block's op(A)
            for (int jr = 0; jr < nc; jr += GEMM_NR) {
                int w = gemm_imin(GEMM_NR, nc - jr);
                if (tB) gemm_pack(p, bf16, 1, B + (size_t)(jc + jr) * ldb + pc, ldb, w, GEMM_NR, kc,
                                  Bp + (size_t)jr * ks);
                else    gemm_pack(p, bf16, 0, B + (size_t)pc * ldb + jc + jr, ldb, w, GEMM_NR, kc,
                                  Bp + (size_t)jr * ks);
            }
            for (int ic = 0; ic < m; ic += MC) {
                int mc = gemm_imin(MC, m - ic);
                float* A_ic = keep_A ? A_pc + (size_t)ic * ks : Ap;
                if (!keep_A || jc == 0)  // (kept: packed at jc = 0 already)
                    for (int ir = 0; ir < mc; ir += GEMM_MR) {
                        int h = gemm_imin(GEMM_MR, mc - ir);
                        if (tA) gemm_pack(p, bf16, 0, A + (size_t)pc * lda + ic + ir, lda, h, GEMM_MR, kc,
                                          A_ic + (size_t)ir * ks);
                        else    gemm_pack(p, bf16, 1, A + (size_t)(ic + ir) * lda + pc, lda, h, GEMM_MR, kc,
                                          A_ic + (size_t)ir * ks);
                    }
                for (int jr = 0; jr < nc; jr += GEMM_NR)
                    for (int ir = 0; ir < mc; ir += GEMM_MR) {
                        const float *a = A_ic + (size_t)ir * ks, *b = Bp + (size_t)jr * ks;
                        float* c = C + (size_t)(ic + ir) * ldc + jc + jr;
                        int mr = gemm_imin(GEMM_MR, mc - ir), nr = gemm_imin(GEMM_NR, nc - jr);
                        int overwrite = !accumulate && pc == 0;
                        const float* bias_j = bias ? bias + jc + jr : NULL;
#if defined(BF16_HAS_AMX)
                        if (bf16 == 3)
                            gemm_kernel_bf16_amx(ks, (const uint32_t*)a, (const uint32_t*)b, c, ldc, mr, nr,
                                                 overwrite, bias_j);
                        else
#endif
                        if (bf16 == 1)
                            gemm_kernel_bf16(ks, (const uint32_t*)a, (const uint32_t*)b, c, ldc, mr, nr,
                                             overwrite, bias_j);
                        else
                            gemm_kernel(ks, a, b, c, ldc, mr, nr, overwrite, bias_j);
                    }
            }
        }
    }
}

static void gemm_block(const GemmPrecision* p, int tA, int tB, int m, int n, int K, const float* A, int lda,
                       const float* B, int ldb, float* C, int ldc, int accumulate, const float* bias) {
#ifdef USE_BLAS
    if (gemm_kind(p) == GEMM_FP32) {  // make BLAS=1: the library's kernel (blas.h)
        blas_block(tA, tB, m, n, K, A, lda, B, ldb, C, ldc, accumulate, bias);
        return;
    }
#endif
#if defined(BF16_HAS_AMX)
    if (gemm_kind(p) == GEMM_BF16 && bf16_kernel_amx())
        gemm_block_in(p, 3, tA, tB, m, n, K, A, lda, B, ldb, C, ldc, accumulate, bias);
    else
#endif
    if (gemm_kind(p) == GEMM_BF16 && bf16_kernel_packed())  // (chosen once, bf16.h)
        gemm_block_in(p, 2, tA, tB, m, n, K, A, lda, B, ldb, C, ldc, accumulate, bias);
    else if (gemm_kind(p) == GEMM_BF16)
        gemm_block_in(p, 1, tA, tB, m, n, K, A, lda, B, ldb, C, ldc, accumulate, bias);
    else
        gemm_block_in(p, 0, tA, tB, m, n, K, A, lda, B, ldb, C, ldc, accumulate, bias);
}

// Thread t of a team of T computes its share of C = op(A) op(B) + bias (see sgemm_bias), its
// operands read in the precision p (NULL: float32). C is split along the larger dimension in
// whole GEMM_MR / GEMM_NR panels. (Each thread re-packs the whole operand along the other
// dimension, so split the dimension that makes that duplicated operand the smaller one.)
void sgemm_share(const GemmPrecision* p, int t, int T, int transA, int transB, int M, int N, int K,
                 const float* A, int lda, const float* B, int ldb, float* C, int ldc, int accumulate,
                 const float* bias) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {  // empty sum
        if (!accumulate && t == 0)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++)
                    C[(size_t)i * ldc + j] = bias ? bias[j] : 0.0f;
        return;
    }
    int splitN = N > M;
    int panels = splitN ? (N + GEMM_NR - 1) / GEMM_NR : (M + GEMM_MR - 1) / GEMM_MR;
    // thread 0 (which starts first: the others have to wake up) takes the larger share
    int p0 = (int)(((long)panels * t + T - 1) / T), p1 = (int)(((long)panels * (t + 1) + T - 1) / T);
    if (splitN) {
        int j0 = p0 * GEMM_NR, j1 = gemm_imin(N, p1 * GEMM_NR);
        if (j1 > j0)
            gemm_block(p, transA, transB, M, j1 - j0, K, A, lda, transB ? B + (size_t)j0 * ldb : B + j0, ldb,
                       C + j0, ldc, accumulate, bias ? bias + j0 : NULL);
    } else {
        int i0 = p0 * GEMM_MR, i1 = gemm_imin(M, p1 * GEMM_MR);
        if (i1 > i0)
            gemm_block(p, transA, transB, i1 - i0, N, K, transA ? A + i0 : A + (size_t)i0 * lda, lda, B, ldb,
                       C + (size_t)i0 * ldc, ldc, accumulate, bias);
    }
}

// threads worth using for a product of M x N x K: 1 when already inside a parallel region
// (a nested call) or when the product is too small to pay for waking a second thread
int sgemm_threads(int M, int N, int K) {
#ifdef _OPENMP
    if (omp_get_level() == 0 && 2.0 * M * N * K >= GEMM_MIN_PAR_FLOPS) return omp_get_max_threads();
#else
    (void)M; (void)N; (void)K;
#endif
    return 1;
}

// C = op(A) op(B) + bias (bias: N values added to every row, or NULL), or, with
// accumulate, C += op(A) op(B) (bias ignored); the operands read in the precision p (NULL:
// float32)
void sgemm_bias(const GemmPrecision* p, int transA, int transB, int M, int N, int K, const float* A, int lda,
                const float* B, int ldb, float* C, int ldc, int accumulate, const float* bias) {
    int nt = sgemm_threads(M, N, K);
    if (nt == 1) {  // (even an inactive parallel region costs a call into the OpenMP runtime)
        sgemm_share(p, 0, 1, transA, transB, M, N, K, A, lda, B, ldb, C, ldc, accumulate, bias);
        return;
    }
    #pragma omp parallel num_threads(nt)
    sgemm_share(p, team_thread(), team_size(), transA, transB, M, N, K, A, lda, B, ldb, C, ldc,
                accumulate, bias);
}

// C = op(A) op(B) (or C +=), float32
void sgemm(int transA, int transB, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
           float* C, int ldc, int accumulate) {
    sgemm_bias(NULL, transA, transB, M, N, K, A, lda, B, ldb, C, ldc, accumulate, NULL);
}

// what computes the float32 products, in words: the kernel, or the library (make BLAS=1)
const char* gemm_products_name(void) {
#ifdef USE_BLAS
    return GEMM_BLAS_NAME;
#else
    return GEMM_KERNEL_NAME;
#endif
}

const GemmKernels gemm_kernels = {
    gemm_kernel, gemm_kernel_bf16, gemm_kernel_bf16_widen, gemm_kernel_bf16_plain,
#if defined(__AVX512BF16__)
    gemm_kernel_bf16_dp,
#else
    NULL,
#endif
    gemm_kernel_bf16_packed, bf16_pack_rows, bf16_pack_cols,
};

#endif
