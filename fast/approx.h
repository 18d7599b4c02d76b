/*
fast/approx.h: exp and tanh that the compiler can vectorise. Part of the speed engine: a
reader of the model may skip it. Plain twins: expf and tanhf from <math.h> (test_gpt2.c
checks both against them).
*/
#ifndef FAST_APPROX_H
#define FAST_APPROX_H

#include <math.h>
#include <stdint.h>
#include <string.h>

// The C library's expf and tanhf are function calls the compiler will not turn into
// vector code (without -ffast-math), and in GELU they took 40% of a training step.
// exp_approx: Cody-Waite range reduction, e^x = 2^n e^r with |r| <= ln2/2, and a
// degree-7 Taylor polynomial for e^r: relative error about 2e-7.
static inline float exp_approx(float x) {
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);  // e^x stays a normal float
    float n = floorf(x * 1.44269504f + 0.5f);      // nearest integer to x / ln 2
    float r = x - n * 0.693145752f - n * 1.42860677e-6f; // x - n ln2, in two parts for accuracy
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.66666672e-1f + r * (4.16666679e-2f
              + r * (8.33333377e-3f + r * (1.38888892e-3f + r * 1.98412701e-4f))))));
    uint32_t bits = (uint32_t)(x == x ? (int32_t)n + 127 : 127) << 23; // 2^n in the exponent field
    float scale;                                   // (a NaN input keeps scale 1, so NaN comes out)
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

// tanh(u) = 1 - 2 / (1 + e^(2u)); absolute error about 2e-7 (test_gpt2.c measures 1.8e-7)
static inline float tanh_approx(float u) { return 1.0f - 2.0f / (1.0f + exp_approx(2.0f * u)); }

#endif
