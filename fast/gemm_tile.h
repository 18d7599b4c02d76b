/*
fast/gemm_tile.h: the shape of this build's matrix multiply, and its kernels one by one.
The tile of C each micro-kernel computes (GEMM_MR x GEMM_NR, per CPU), the depth of a
block (GEMM_KC) and the cache blocks (GemmBlocking); the kernels themselves live in
fast/gemm_kernel.h and fast/bf16.h, compiled in fast/gemm.c, and gemm_kernels hands them
out to test_gpt2, which checks each against its plain twin.
*/
#ifndef FAST_GEMM_TILE_H
#define FAST_GEMM_TILE_H

#include <stdint.h>
#include "vec.h"

#if defined(__AVX512F__)
#define GEMM_ISA "avx512"
#define GEMM_MR_DEFAULT 14
#define GEMM_NR_DEFAULT 32
#elif defined(__AVX__)
#define GEMM_ISA_FMA "avx2+fma"  // (AVX without FMA: Sandy Bridge, Ivy Bridge)
#define GEMM_MR_DEFAULT 6
#define GEMM_NR_DEFAULT 16
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define GEMM_ISA "neon"
#define GEMM_MR_DEFAULT 8
#define GEMM_NR_DEFAULT 12
#elif defined(__SSE2__)
#define GEMM_ISA "sse2"
#define GEMM_MR_DEFAULT 6
#define GEMM_NR_DEFAULT 8
#else
#define GEMM_ISA "generic"
#define GEMM_MR_DEFAULT 4
#define GEMM_NR_DEFAULT 8
#endif
#if defined(GEMM_ISA_FMA)
#if defined(__AVX2__) && defined(__FMA__)
#define GEMM_ISA GEMM_ISA_FMA
#else
#define GEMM_ISA "avx"
#endif
#endif
#define GEMM_VW VEC_W  // floats in a vector register (fast/vec.h)
#ifndef GEMM_MR
#define GEMM_MR GEMM_MR_DEFAULT
#endif
#ifndef GEMM_NR
#define GEMM_NR GEMM_NR_DEFAULT  // (a multiple of GEMM_VW)
#endif
#define GEMM_STR_(x) #x
#define GEMM_STR(x) GEMM_STR_(x)
#define GEMM_KERNEL_NAME GEMM_ISA " " GEMM_STR(GEMM_MR) "x" GEMM_STR(GEMM_NR)
#ifndef GEMM_KC
#define GEMM_KC 256
#endif
// The cache blocks (gemm.c): GEMM_MC rows of op(A) and GEMM_NC columns of op(B), both
// GEMM_KC deep. KC is a constant: it fixes the order of the sums, and so the bits. MC and NC
// change only when each block is computed, not a bit of C, so they follow the caches the
// CPU reports (gemm_blocking): op(A)'s block about 1/6 of the L2 cache, op(B)'s 3/4 of it,
// the proportions of the constants tuned on Zen 5 (1 MiB of L2 per core: MC = 168, NC = 768),
// which stay where the CPU reports nothing and bound the blocks where it reports more (a
// smaller L2 shrinks them; a larger one was slower: doc/speed.md). GEMM_BLOCKING=fixed keeps
// the constants anyway (to compare; =caches: the default); -DGEMM_MC=.. -DGEMM_NC=.. fix them
// at build time.
#define GEMM_MC_FIXED ((168 + GEMM_MR - 1) / GEMM_MR * GEMM_MR)  // (AVX-512: 12 x 14; 168 KB of A)
#define GEMM_NC_FIXED 768
typedef struct {
    int mc, nc;          // the blocks' rows of op(A), columns of op(B)
    long l1, l2;         // the caches' bytes, as reported (0: not reported)
    const char* source;  // "from the caches", or why the constants
} GemmBlocking;
// -prec bf16: a block of KC pairs of k (2 * GEMM_KC values) is as many bytes as GEMM_KC
// floats, so the same cache blocking holds twice the k, and each tile of C is loaded and
// stored half as often per product
#ifndef GEMM_KC_BF16
#define GEMM_KC_BF16 (2 * GEMM_KC)
#endif
#define GEMM_MIN_PAR_FLOPS 2e6  // below this, one thread is faster than waking a second

// the blocks, set once (any thread; the first call reads the caches); gemm_blocks is what
// it returns (the tests set other blocks through it)
const GemmBlocking* gemm_blocking(void);
extern GemmBlocking gemm_blocks;

// The micro-kernels and the bf16 packing, by pointer (fast/gemm.c): C[m x n] (= or +=, + bias)
// from an A sliver and a B sliver kc deep (float32), or kc2 pairs of k deep (bf16)
typedef struct {
    void (*f32)(int kc, const float* a, const float* b, float* C, int ldc, int m, int n, int overwrite,
                const float* bias);
    // bf16: the chosen kernel; widen: widened to float32 FMAs; plain: the twin in C; dp:
    // vdpbf16ps (NULL without AVX512-BF16)
    void (*bf16)(int kc2, const uint32_t* a, const uint32_t* b, float* C, int ldc, int m, int n,
                 int overwrite, const float* bias);
    void (*bf16_widen)(int kc2, const uint32_t* a, const uint32_t* b, float* C, int ldc, int m, int n,
                       int overwrite, const float* bias);
    void (*bf16_plain)(int kc2, const uint32_t* a, const uint32_t* b, float* C, int ldc, int m, int n,
                       int overwrite, const float* bias);
    void (*bf16_dp)(int kc2, const uint32_t* a, const uint32_t* b, float* C, int ldc, int m, int n,
                    int overwrite, const float* bias);
    // packed: both slivers widened to float32 (each pair odd k, even k), then the f32 kernel
    void (*bf16_packed)(int kc2, const uint32_t* a, const uint32_t* b, float* C, int ldc, int m, int n,
                        int overwrite, const float* bias);
    // a sliver of R rows of pairs from rows (pack_rows) or columns (pack_cols) of src
    void (*pack_rows)(const float* src, int ld, int rows, int R, int kc, uint32_t* dst);
    void (*pack_cols)(const float* src, int ld, int cols, int R, int kc, uint32_t* dst);
} GemmKernels;
extern const GemmKernels gemm_kernels;

#endif
