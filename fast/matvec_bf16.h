/*
fast/matvec_bf16.h: generation (the KV cache's one position per token) from weights kept in
bfloat16, with -prec bf16. Part of the speed engine: a reader of the model may skip it.

A token's matrix-vector products read every weight once (for GPT-2 124M, 497 MB in float32,
the largest wte for the logits: 50257 x 768), so generation runs at the memory's speed, and
half the bytes is nearly twice the tokens. WeightsBF16 is a copy of ALL the parameters,
rounded once to bf16 (fast/bf16.h's bf16_round_packed, as the products' packing rounds) at
the same offsets as the float32 ones: a layer's float32 pointer finds its copy by its
offset, so gpt2_forward_token keeps its calls and names. When the model keeps a bf16 copy
of its own (a -prec bf16 forward made it, and AdamW rewrites it at every update),
generate() reads that one; otherwise it makes a copy, afresh for every call (training
changes the weights between two samples).

The product: each bf16 weight is widened back to float32 (exact: bf16 is the top half of
a float32) and multiplied by the float32 input in an FMA, so the input is not rounded and
the sums are float32, in the order of matvec_forward (fast/rows.h): 4 rows at a time, 16
partial sums per row. The result is the float32 product of the rounded weights; the only
error against the float32 model is the weights' rounding (relative 2^-9 each).

Plain twin: matvec_bf16_rows_plain, the same sums in C with fmaf (one rounding per
multiply-add, as the kernel's FMA); test_gpt2.c checks the AVX-512 kernel against it bit
for bit, and both against matvec_forward on the rounded weights: bit for bit where the
compiler fuses all of matvec_forward's sums too (the Makefile's -O3 -ffp-contract=fast), within
matvec_forward's own tolerance in any build (make asan's -O1 fuses none).
*/
#ifndef FAST_MATVEC_BF16_H
#define FAST_MATVEC_BF16_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "alloc.h"  // alignedMallocCheck, aligned_free
#include "gemm.h"   // GEMM_BF16 (-prec), bf16_round_all
#include "rows.h"  // matvec_forward: the float32 path

typedef struct {
    const uint16_t* w;  // (n) bf16 copy of the parameters; NULL: generation reads the float32 ones
    uint16_t* own;      // the copy made here (w == own), or NULL when w is the model's own copy
    const float* base;  // the float32 parameters it copies (a weight's copy is at w + (weight - base))
    size_t n;
} WeightsBF16;

static inline void weights_bf16_free(WeightsBF16* c) {
    aligned_free(c->own);
    *c = (WeightsBF16){0};
}

// (re)makes the copy of the n parameters at params, allocating it on first use
static inline void weights_bf16_refresh(WeightsBF16* c, const float* params, size_t n) {
    if (!c->own || c->n != n) {
        weights_bf16_free(c);
        c->own = alignedMallocCheck(n * sizeof(uint16_t));
    }
    c->w = c->own, c->base = params, c->n = n;
    bf16_round_all(c->own, params, n);
}

// before generating: with -prec bf16 (kind GEMM_BF16, fast/gemm.h) the model's own copy
// `kept` if it has one (current: AdamW rewrites it), else a fresh copy; without, none
static inline void weights_bf16_sync(WeightsBF16* c, int kind, const float* params, size_t n,
                                     const uint16_t* kept) {
    if (kind != GEMM_BF16 || kept) weights_bf16_free(c);
    if (kind != GEMM_BF16) return;
    if (kept) c->w = kept, c->base = params, c->n = n;  // read, never freed, here
    else weights_bf16_refresh(c, params, n);
}

// out[o] (o < OC) = sum over i < IC of bf16 weight[o*IC + i] * x[i], + bias[o]: rows o0..o0+3,
// 16 partial sums each (lane j sums i = j, j+16, ...), then the tail i >= IC/16*16, then the
// lanes in order. Plain twin of the AVX-512 kernel below.
static inline void matvec_bf16_rows_plain(float* out, const float* x, const uint16_t* weight, const float* bias,
                                          int IC, int o0, int rows) {
    float acc[4][16] = {{0}};
    int i = 0;
    for (; i + 16 <= IC; i += 16)
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < 16; j++)
                acc[r][j] = fmaf(bf16_to_float(weight[(size_t)(o0 + r) * IC + i + j]), x[i + j], acc[r][j]);
    for (int r = 0; r < rows; r++) {
        float sum = 0.0f;
        for (int k = i; k < IC; k++)
            sum = fmaf(bf16_to_float(weight[(size_t)(o0 + r) * IC + k]), x[k], sum);
        for (int j = 0; j < 16; j++)
            sum += acc[r][j];
        out[o0 + r] = sum + (bias ? bias[o0 + r] : 0.0f);
    }
}

#if defined(__AVX512F__)
// 16 bf16 weights widened to float32: zero-extend to 32 bits, shift into the top half
static inline __m512 bf16x16_load(const uint16_t* p) {
    __m512i widened = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const void*)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(widened, 16));
}

// the same sums with four rows' 16 lanes in four registers (four independent FMA chains)
static inline void matvec_bf16_rows(float* out, const float* x, const uint16_t* weight, const float* bias,
                                    int IC, int o0, int rows) {
    if (rows < 4 || IC % 16) {
        matvec_bf16_rows_plain(out, x, weight, bias, IC, o0, rows);
        return;
    }
    const uint16_t* w = weight + (size_t)o0 * IC;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    // the hardware prefetcher starts late on rows this short (768 bf16: 24 cache lines), so
    // the next 4 rows (the next call's, 128 bytes per 16 columns) are fetched while these sum
    const char* next = (const char*)(w + 4 * (size_t)IC);
    for (int i = 0; i < IC; i += 16) {
        _mm_prefetch(next + 8 * (size_t)i, _MM_HINT_T0);
        _mm_prefetch(next + 8 * (size_t)i + 64, _MM_HINT_T0);
        __m512 xv = _mm512_loadu_ps(x + i);
        a0 = _mm512_fmadd_ps(bf16x16_load(w + i), xv, a0);
        a1 = _mm512_fmadd_ps(bf16x16_load(w + IC + i), xv, a1);
        a2 = _mm512_fmadd_ps(bf16x16_load(w + 2 * (size_t)IC + i), xv, a2);
        a3 = _mm512_fmadd_ps(bf16x16_load(w + 3 * (size_t)IC + i), xv, a3);
    }
    float acc[4][16];
    _mm512_storeu_ps(acc[0], a0), _mm512_storeu_ps(acc[1], a1);
    _mm512_storeu_ps(acc[2], a2), _mm512_storeu_ps(acc[3], a3);
    for (int r = 0; r < 4; r++) {
        float sum = 0.0f;
        for (int j = 0; j < 16; j++)
            sum += acc[r][j];
        out[o0 + r] = sum + (bias ? bias[o0 + r] : 0.0f);
    }
}
#else
#define matvec_bf16_rows matvec_bf16_rows_plain
#endif

// out (OC) = W (OC,IC) x (IC) + b with W in bf16: one position through a linear layer
static inline void matvec_bf16(float* out, const float* x, const uint16_t* weight, const float* bias,
                               int IC, int OC) {
    #pragma omp parallel for schedule(static)
    for (int o0 = 0; o0 < OC; o0 += 4)
        matvec_bf16_rows(out, x, weight, bias, IC, o0, OC - o0 < 4 ? OC - o0 : 4);
}

// the KV cache's product: from the bf16 copy when there is one, else from the float32 weight
static inline void matvec_token(const WeightsBF16* c, float* out, const float* x, const float* weight,
                                const float* bias, int IC, int OC) {
    if (c->w) matvec_bf16(out, x, c->w + (weight - c->base), bias, IC, OC);
    else matvec_forward(out, x, weight, bias, IC, OC);
}

#endif
