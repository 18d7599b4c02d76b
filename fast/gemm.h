/*
fast/gemm.h: the speed engine's matrix multiply, behind every matmul of the model and
the matrix products of attention. A reader of the model may skip it: the products it
computes are named by their formulas (matmul_AB, matmul_ABt, matmul_AtB, at the end),
and its plain twin is the triple loop sgemm_plain in test_gpt2.c, which the tests check
it against (every transpose, accumulation, bias, odd sizes and strides).

This header declares; fast/gemm.c computes (the blocking, the packing, the kernels of
fast/gemm_kernel.h and fast/bf16.h). make compiles fast/gemm.c once, on its own, and links
it, so that an edit of train_gpt2.c recompiles the model and not the kernels; a one-file
build (cc train_gpt2_main.c) takes it in through fast/matmul.h.
*/
#ifndef FAST_GEMM_H
#define FAST_GEMM_H

#include <stddef.h>
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "bf16_round.h"  // bf16_round, bf16_round_all: the model's bf16 copy of its weights

// The precision of a product's operands, passed with each product (NULL: float32): kind
// GEMM_FP32, or GEMM_BF16 (-prec bf16: each operand rounded to bfloat16 as it is packed, the
// products summed in float32; bf16.h). Under bf16 an operand that lies among the n floats
// at weights (a model's parameters) is packed from the same place of copy, their bf16
// rounding, which the model keeps (NULL: none, every operand rounded as it is packed).
enum { GEMM_FP32 = 0, GEMM_BF16 = 1 };
typedef struct {
    int kind;
    const float* weights;
    const uint16_t* copy;
    size_t n;
} GemmPrecision;

static inline int gemm_kind(const GemmPrecision* p) { return p ? p->kind : GEMM_FP32; }

// the bf16 copy of the operand src, if it lies among p's weights
static inline const uint16_t* gemm_bf16_copy_of(const GemmPrecision* p, const float* src) {
    uintptr_t at = (uintptr_t)src, lo = (uintptr_t)p->weights;
    return p->copy && at >= lo && at < lo + p->n * sizeof(float) ? p->copy + (at - lo) / sizeof(float) : NULL;
}

// this thread's number and the size of its team (0 and 1 outside a parallel region)
static inline int team_thread(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
static inline int team_size(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

// The products of this file, defined in fast/gemm.c (below their uses here)
void sgemm_share(const GemmPrecision* p, int t, int T, int transA, int transB, int M, int N, int K,
                 const float* A, int lda, const float* B, int ldb, float* C, int ldc, int accumulate,
                 const float* bias);
int sgemm_threads(int M, int N, int K);
void sgemm_bias(const GemmPrecision* p, int transA, int transB, int M, int N, int K, const float* A, int lda,
                const float* B, int ldb, float* C, int ldc, int accumulate, const float* bias);
void sgemm(int transA, int transB, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
           float* C, int ldc, int accumulate);
// what computes the float32 products ("avx512 14x32", or the library's name under BLAS=1), the
// bf16 products' kernel and why (fast/bf16.h), the cache blocking (fast/gemm_kernel.h), in words
const char* gemm_products_name(void);
const char* bf16_kernel_describe(void);
int bf16_kernel_exact(void);  // 1: the chosen kernel computes the plain twin's sums bit for bit
const char* gemm_blocking_describe(void);

// The matrix products of attention, named by their formulas. Each runs on the calling
// thread (attention calls them inside its parallel loop over heads). Every matrix is
// row-major with its own row stride (ld), so a head's slice of Q, K or V (hs columns of
// a row of 3C) is passed as it lies in memory. They stay float32 under -prec bf16: they
// are small (K = hs or T), where rounding and packing pairs cost what the bf16 kernel
// saves (measured, with the loss: doc/precision.md).

// C (M,N) = A (M,K) B^T, with B (N,K): every row of A against every row of B
static inline void matmul_ABt(float* C, int ldc, const float* A, int lda, const float* B, int ldb,
                              int M, int N, int K) {
    sgemm_share(NULL, 0, 1, 0, 1, M, N, K, A, lda, B, ldb, C, ldc, 0, NULL);
}

// C (M,N) = A (M,K) B (K,N)
static inline void matmul_AB(float* C, int ldc, const float* A, int lda, const float* B, int ldb,
                             int M, int N, int K) {
    sgemm_share(NULL, 0, 1, 0, 0, M, N, K, A, lda, B, ldb, C, ldc, 0, NULL);
}

// C (M,N) = A^T B, with A (K,M) and B (K,N)
static inline void matmul_AtB(float* C, int ldc, const float* A, int lda, const float* B, int ldb,
                              int M, int N, int K) {
    sgemm_share(NULL, 0, 1, 1, 0, M, N, K, A, lda, B, ldb, C, ldc, 0, NULL);
}

// C (M,N) += A^T B: grouped-query attention sums a shared K/V head's gradient over its group
static inline void matmul_AtB_add(float* C, int ldc, const float* A, int lda, const float* B, int ldb,
                                  int M, int N, int K) {
    sgemm_share(NULL, 0, 1, 1, 0, M, N, K, A, lda, B, ldb, C, ldc, 1, NULL);
}

#endif
