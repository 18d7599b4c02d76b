/*
fast/blas.h: make BLAS=1 routes the float32 products through the system's cblas_sgemm
(OpenBLAS on Linux, Accelerate on macOS, whose matrix unit is much faster than NEON)
instead of our blocked kernel (gemm.c). Part of the speed engine: a reader of the model
may skip it. Plain twin: the same as gemm.h's, sgemm_plain in test_gpt2.c, which make test
checks every product against.

What changes and what does not:
- The split of C over our threads stays ours (sgemm_share): each thread calls
  cblas_sgemm on its own block, and the library runs single-threaded inside it, so the
  layers that share one team over several products (matmul_backward) keep working and no
  two thread pools fight over the cores.
- The library orders each element's sums its own way, so the losses differ from our
  kernel's in the last bits (within the tests' tolerances, which compare with PyTorch in
  float64); they are still the same on every run of one build.
- -prec bf16 keeps our kernel: cblas has no bfloat16 product.
*/
#ifndef FAST_BLAS_H
#define FAST_BLAS_H

#if defined(__APPLE__)
#define ACCELERATE_NEW_LAPACK
#include <Accelerate/Accelerate.h>
#define GEMM_BLAS_NAME "Accelerate cblas_sgemm"
#else
#include <cblas.h>
#define GEMM_BLAS_NAME "OpenBLAS cblas_sgemm"
#endif

// one thread's block of C: C[m,n] (= or +=) op(A)[m,K] op(B)[K,n] (+ bias, when writing)
static void blas_block(int tA, int tB, int m, int n, int K, const float* A, int lda, const float* B,
                       int ldb, float* C, int ldc, int accumulate, const float* bias) {
#if defined(OPENBLAS_VERSION)
    static int single_threaded;  // our threads split C: the library must not start threads of its own
    #pragma omp critical(blas_threads)
    if (!single_threaded) {
        openblas_set_num_threads(1);
        single_threaded = 1;
    }
#endif
    cblas_sgemm(CblasRowMajor, tA ? CblasTrans : CblasNoTrans, tB ? CblasTrans : CblasNoTrans, m, n, K,
                1.0f, A, lda, B, ldb, accumulate ? 1.0f : 0.0f, C, ldc);
    if (!accumulate && bias)  // C = op(A) op(B) + bias
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                C[(size_t)i * ldc + j] += bias[j];
}

#endif
