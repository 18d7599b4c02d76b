/*
fast/vec.h: vectors of floats for the CPUs whose kernels are not written in AVX-512
intrinsics (the matmul's micro-kernel in fast/gemm_kernel.h, the weighted rows of fast/rows.h):
GCC/Clang vector extensions, which the compiler maps to the CPU's registers (ymm with
AVX/AVX2, q with NEON, xmm with SSE2, and whatever another CPU has). VEC_W floats each.

vec_fma(acc, a, b) = acc + a * b for a scalar a, rounded once (one FMA instruction) where
the CPU has FMA (VEC_FUSED 1): written as the instruction, so the bits do not hang on the
compiler contracting a * b + c (gcc -O1 does not); elsewhere a multiply, then an add.
*/
#ifndef FAST_VEC_H
#define FAST_VEC_H

#if defined(__AVX__)
#include <immintrin.h>
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#if defined(__AVX512F__)
#define VEC_W 16
#elif defined(__AVX__)
#define VEC_W 8
#else
#define VEC_W 4
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
// NEON's own type, which takes + and * as the others do
typedef float32x4_t vec_f;
static inline vec_f vec_load(const float* p) { return vld1q_f32(p); }
static inline void vec_store(float* p, vec_f v) { vst1q_f32(p, v); }
#else
typedef float vec_f __attribute__((vector_size(4 * VEC_W)));
// the same vector at any float's address (rows of a matrix, a bias)
typedef float vec_fu __attribute__((vector_size(4 * VEC_W), aligned(4), may_alias));

static inline vec_f vec_load(const float* p) { return *(const vec_fu*)p; }
static inline void vec_store(float* p, vec_f v) { *(vec_fu*)p = v; }
#endif

#if defined(__AVX512F__)
#define VEC_FUSED 1
static inline vec_f vec_fma(vec_f acc, float a, vec_f b) {
    return (vec_f)_mm512_fmadd_ps(_mm512_set1_ps(a), (__m512)b, (__m512)acc);
}
#elif defined(__AVX__) && defined(__FMA__)
#define VEC_FUSED 1
static inline vec_f vec_fma(vec_f acc, float a, vec_f b) {
    return (vec_f)_mm256_fmadd_ps(_mm256_set1_ps(a), (__m256)b, (__m256)acc);
}
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define VEC_FUSED 1
// (the instruction in asm, not vfmaq_n_f32: gcc 12's aarch64 builtins may read memory as far
// as the optimiser knows, so the kernel's accumulators were stored to the stack at every k)
static inline vec_f vec_fma(vec_f acc, float a, vec_f b) {
    __asm__("fmla %0.4s, %1.4s, %2.s[0]" : "+w"(acc) : "w"(b), "w"(a));
    return acc;
}
#else
#define VEC_FUSED 0  // (SSE2 has no FMA; another CPU: the compiler's -ffp-contract decides)
static inline vec_f vec_fma(vec_f acc, float a, vec_f b) {
    return acc + a * b;
}
#endif

#endif
