/*
fast/matmul.h: the matmul layer as the model runs it, out = inp @ weight^T + bias and its
backward, through the blocked sgemm. Part of the speed engine: a reader of the model may
skip it. Plain twins: matmul_forward_plain and matmul_backward_plain in train_gpt2.c, the
three loops to read first; test_gpt2.c checks these against them on awkward shapes, and
by finite differences. Shapes as there: inp is (BT,C), weight is (OC,C), bias is (OC) or
NULL.
*/
#ifndef FAST_MATMUL_H
#define FAST_MATMUL_H

#include "gemm.h"
#ifndef FAST_GEMM_SEPARATE  // gemm.h's code: make compiles it apart (fast/gemm.o), a one-file build here
#include "gemm.c"
#endif
#include "rows.h"
#include "buffers.h"

// out (BT,OC) = inp (BT,C) @ weight^T + bias, the operands read in the precision p (NULL:
// float32; a model's -prec, fast/gemm.h)
static inline void matmul_forward_in(const GemmPrecision* p, float* out, const float* inp,
                                     const float* weight, const float* bias, int BT, int C, int OC) {
    sgemm_bias(p, 0, 1, BT, OC, C, inp, C, weight, C, out, OC, 0, bias);
}
static inline void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                                  int BT, int C, int OC) {
    matmul_forward_in(NULL, out, inp, weight, bias, BT, C, OC);
}

// dbias (OC) += the column sums of dout (BT,OC) (= without add): a weighted sum of
// dout's rows with every weight 1 (w_stride 0). Thread t of T takes its share of the
// 64-column blocks; each column's sum runs down the rows in order.
static inline void bias_grad_share(int t, int T, float* dbias, const float* dout, int BT, int OC, int add) {
    static const float one = 1.0f;
    int blocks = (OC + 63) / 64;
    for (int k = blocks * t / T; k < blocks * (t + 1) / T; k++) {
        int width = OC - 64 * k < 64 ? OC - 64 * k : 64;
        if (!add) memset(dbias + 64 * k, 0, width * sizeof(float));
        add_weighted_rows(dbias + 64 * k, &one, 0, dout + 64 * k, OC, BT, width);
    }
}

// dinp = dout @ weight (written); dweight += dout^T @ inp; dbias += column sums of dout
// (dweight and dbias written instead when add is 0: the story's GRAD_STORE; GRAD_ADD is 1);
// the operands read in the precision p (NULL: float32).
// The three products are independent: one team computes its share of each in turn,
// with no barrier between them (a second and third parallel region would cost a thread
// wake-up each, and the team's uneven shares even out over the three).
static inline void matmul_backward_in(const GemmPrecision* p, float* dinp, float* dweight, float* dbias,
                                      const float* dout, const float* inp, const float* weight, int BT, int C,
                                      int OC, int add) {
    int nt = sgemm_threads(BT, C, OC);
    (void)nt;  // (read only by the pragma: a build without OpenMP would warn)
    #pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = team_thread(), T = team_size();
        // dinp = dout @ weight
        sgemm_share(p, t, T, 0, 0, BT, C, OC, dout, OC, weight, C, dinp, C, 0, NULL);
        // dweight += dout^T @ inp. (The shares are counted from the other end, so the
        // thread with the larger share of dinp gets the smaller share of dweight.)
        sgemm_share(p, T - 1 - t, T, 1, 0, OC, C, BT, dout, OC, inp, C, dweight, C, add, NULL);
        if (dbias) bias_grad_share(t, T, dbias, dout, BT, OC, add);
    }
}
static inline void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                   const float* inp, const float* weight, int BT, int C, int OC, int add) {
    matmul_backward_in(NULL, dinp, dweight, dbias, dout, inp, weight, BT, C, OC, add);
}

#endif
