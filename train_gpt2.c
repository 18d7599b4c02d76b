/*
train_gpt2.c: GPT-2 trained on the CPU, written to be read top to bottom.

Every layer is here with its forward pass and, right beside it, its hand-derived
backward pass; then the model, AdamW, one training step and generation with a KV cache.
It reads and writes llm.c's file formats (doc/formats.md). Reading order:
  1. the layers: encoder (llm.c's name for the embedding), layernorm, matmul, attention, gelu,
     residual, dropout, softmax + cross-entropy, each _forward next to its _backward;
  2. the model: GPT2Config, parameters, activations, initialisation, checkpoints (their
     structs, as every struct the model uses, are in train_gpt2.h: read it first);
  3. gpt2_forward and gpt2_backward: the layers chained (block_forward, block_backward);
  4. AdamW, one name per level: adamw_update (the formula), gpt2_update (on the model),
     gpt2_optimizer_step (norm, clipping, learning rate), gpt2_train_step (the whole step);
  5. the KV cache and generate(): inference one token at a time;
  6. the program is train_gpt2_main.c, compiled apart against train_gpt2.h: the training loop
     (train() calls run_step() once per step) and main(), which only sets up (setup_model,
     setup_generation, setup_data: plumbing, the model, data and sampler from the flags).
No global switch changes what a layer computes: a backward adds (+=) into its parameters'
gradients unless its call says GRAD_STORE (=, a step's first writer; GradWrite below), the plain
twins as the fast kernels; with -kernels plain every matrix product runs this file's loops.
Attention carries comments numbered like the steps of the article "因果自注意力"
(causal self-attention): forward steps 1-8, backward steps 1-8 (grep "step 1 (").
The block variants of articles 003 and 004 (GQA, RoPE, sinusoidal positions, post-LN,
ReLU, no mask) are a few lines in the layers they change; doc/variants.md derives each.

Two folders beside this file can be skipped on a first reading:
  fast/  the speed engine: the blocked matrix multiply (sgemm) behind every matmul and
         attention's matrix products, vectorisable exp, row kernels, aligned memory.
         Each fast kernel names its plain twin; test_gpt2.c checks one against the other.
  util/  the plumbing: errors and checked I/O, random numbers, data loader, tokenizer,
         sampler, training-state file, command line, the run around a model (run.h:
         resume, checkpoints, stops, the step's line; train_seq2seq's too), pictures.
One process, whole shapes: several processes (data, ZeRO-1 and tensor parallelism) are the
sequel train_gpt2_parallel.c, which reaches in at one point, a model's ParallelHooks (NULL here).

Shapes: B batch, T time (sequence length), C channels, NH heads, hs = C/NH head size,
V vocabulary, Vp vocabulary padded to a multiple of 128, L layers, OC output channels,
F the MLP's hidden width (4C), NKV key/value heads (NH; fewer with GQA).
*/
#include "train_gpt2.h"  // the model's data (GPT2Config, GPT2, ...) and this file's functions, by name
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/io.h"          // die(), fopenCheck(), mallocCheck(), atomic writes
#include "util/random.h"      // splitmix64, random_u64, random_normal
#include "util/tokenizer.h"   // Tokenizer: ids <-> text
#include "util/sampler.h"     // Sampler: logits -> next token
#include "util/schedulers.h"  // learning_rate: llm.c's learning-rate schedules (-k)
#include "fast/alloc.h"       // alignedMallocCheck: big buffers on huge pages
#include "fast/buffers.h"     // zero_floats, sum_of_squares: whole buffers over the threads
#include "fast/approx.h"      // exp_approx, tanh_approx (plain twins: expf, tanhf)
#include "fast/rows.h"        // add_weighted_rows, matvec_forward, row_max
#include "fast/gemm.h"        // sgemm, and matmul_AB / matmul_ABt / matmul_AtB
#include "fast/matmul.h"      // matmul_forward / matmul_backward (plain twins below)
#include "fast/matvec_bf16.h" // WeightsBF16, matvec_token: generation from bf16 weights (-prec bf16)

// ----------------------------------------------------------------------------
// dropout masks: a hash of (seed, step, layer, site, element index)
// Each element decides alone whether it is dropped, so a mask needs no storage (the
// backward recomputes it), is the same for any thread count, and a resumed run gets
// the same masks. data/make_reference.py implements the same function in numpy.

// DropoutMask and the sites DROP_*: train_gpt2.h

DropoutMask dropout_mask(float p, uint64_t seed, uint64_t step, int layer, int site) {
    DropoutMask m = {p, 1.0f / (1.0f - p), (uint32_t)floor((double)p * 16777216.0),
                     splitmix64(splitmix64(splitmix64(seed) ^ step) ^ (uint64_t)(layer * 4 + site)), 0, 0, 0};
    return m;
}

int dropout_keep(const DropoutMask* m, uint64_t idx) {
    if (m->block) idx = idx / m->block * m->stride + idx % m->block;  // the slice's place in the whole
    return (uint32_t)(splitmix64(m->key ^ (m->first + idx)) >> 40) >= m->threshold;
}

// ----------------------------------------------------------------------------
// the layers: each forward with its backward. Backward functions ADD (+=) into the
// gradients of parameters (a weight used at every position sums its gradient over all of
// them), unless the call says GRAD_STORE (=: a step's first writer), and
// into the residual stream's gradient
// (layernorm_backward: the stream feeds a layernorm and also passes on through the residual,
// and the two gradients add up). The gradient of an activation that has one user is
// WRITTEN (=): no buffer has to be zeroed before a layer's backward.

// How a backward writes a parameter's gradient, an argument of every call: GRAD_ADD (+=, the
// layers' contract; -d's micro-batches add up), or GRAD_STORE (=), which a step's first writer
// of each gradient passes after gpt2_zero_grad, so that no pass over the gradients has to zero
// them first: the stored value is the same float as 0 + the sum. (GRAD_ADD is 1, as sgemm's
// accumulate flag, which fast/matmul.h takes.)
// GradWrite, GRAD_STORE = 0 or GRAD_ADD = 1: train_gpt2.h

// encoder: token embedding plus position embedding (llm.c's name; not the encoder stack of
// articles 002 and 003, which is train_seq2seq.c's seq2seq_encode)
// out is (B,T,C); inp is (B,T) token ids; wte is (Vp,C); wpe is (maxT,C): learned (GPT-2),
// fixed sinusoids (-pe sin), or NULL (-pe rope: positions enter the attention instead)
void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) {
    #pragma omp parallel for collapse(2) if (B * T > 1)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            float* out_bt = out + ((size_t)b * T + t) * C;
            const float* wte_ix = wte + (size_t)inp[b * T + t] * C;
            const float* wpe_t = wpe ? wpe + (size_t)t * C : NULL;
            for (int i = 0; i < C; i++)
                out_bt[i] = wte_ix[i] + (wpe_t ? wpe_t[i] : 0.0f);
        }
    }
}

// Several positions may hold the same token, so dwte rows receive several additions.
// To stay deterministic without locks, each thread owns a slice of the channels and
// walks all positions in order. dwpe is NULL when the positions are not learned. dwte's rows
// are added to (GPT-2's first writer of dwte is the tied output head): with GRAD_STORE only
// dwpe is written, its rows 0..T-1 (the positions past T have no gradient: the caller's).
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C,
                      GradWrite gw_wpe) {
    #pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 16) {
        int c1 = c0 + 16 < C ? c0 + 16 : C;
        for (int b = 0; b < B; b++) {
            for (int t = 0; t < T; t++) {
                const float* dout_bt = dout + ((size_t)b * T + t) * C;
                float* dwte_ix = dwte + (size_t)inp[b * T + t] * C;
                float* dwpe_t = dwpe ? dwpe + (size_t)t * C : NULL;
                for (int i = c0; i < c1; i++) {
                    dwte_ix[i] += dout_bt[i];
                    if (dwpe_t) dwpe_t[i] = (gw_wpe == GRAD_STORE && b == 0 ? 0.0f : dwpe_t[i]) + dout_bt[i];
                }
            }
        }
    }
}

// layernorm over the channels of each of N = B*T rows
// out = (x - mean) * rstd * weight + bias, rstd = 1/sqrt(var + 1e-5); mean and rstd are
// cached (N,) for the backward
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int N, int C) {
    const float eps = 1e-5f;
    #pragma omp parallel for if (N > 1)
    for (int n = 0; n < N; n++) {
        const float* x = inp + (size_t)n * C;
        float m = 0.0f;
        #pragma omp simd reduction(+ : m)
        for (int i = 0; i < C; i++)
            m += x[i];
        m /= C;
        float v = 0.0f;
        #pragma omp simd reduction(+ : v)
        for (int i = 0; i < C; i++) {
            float d = x[i] - m;
            v += d * d;
        }
        v /= C;
        float s = 1.0f / sqrtf(v + eps);
        float* o = out + (size_t)n * C;
        for (int i = 0; i < C; i++)
            o[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

// With xhat = (x - mean) * rstd and g = dout * weight, the gradient through the
// normalisation is dx = rstd * (g - mean(g) - xhat * mean(g * xhat)): the two means
// remove the parts of g that the centring and the scaling cancel.
// dweight and dbias sum over all N rows; each thread owns a slice of the channels.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C,
                        GradWrite gw) {
    #pragma omp parallel  // one team for both loops: they write different outputs (nowait)
    {
        #pragma omp for nowait
        for (int n = 0; n < N; n++) {
            const float* x = inp + (size_t)n * C;
            const float* dy = dout + (size_t)n * C;
            float m = mean[n], s = rstd[n];
            float g_mean = 0.0f, gx_mean = 0.0f;
            #pragma omp simd reduction(+ : g_mean, gx_mean)
            for (int i = 0; i < C; i++) {
                float g = dy[i] * weight[i];
                g_mean += g;
                gx_mean += g * (x[i] - m) * s;
            }
            g_mean /= C;
            gx_mean /= C;
            float* dx = dinp + (size_t)n * C;
            for (int i = 0; i < C; i++) {
                float xhat = (x[i] - m) * s;
                dx[i] += s * (dy[i] * weight[i] - g_mean - xhat * gx_mean);
            }
        }
        // dweight and dbias: sums over all positions, 16 channels per task, each summed
        // down the rows in order in a local (register) accumulator
        #pragma omp for schedule(static)
        for (int c0 = 0; c0 < C; c0 += 16) {
            int w = C - c0 < 16 ? C - c0 : 16;
            float db[16] = {0}, dw[16] = {0};
            for (int n = 0; n < N; n++) {
                const float* x = inp + (size_t)n * C + c0;
                const float* dy = dout + (size_t)n * C + c0;
                float m = mean[n], s = rstd[n];
                for (int i = 0; i < w; i++) {
                    db[i] += dy[i];
                    dw[i] += dy[i] * (x[i] - m) * s;
                }
            }
            for (int i = 0; i < w; i++) {  // (GRAD_STORE: 0 + the sum, the first writer)
                dbias[c0 + i] = (gw == GRAD_STORE ? 0.0f : dbias[c0 + i]) + db[i];
                dweight[c0 + i] = (gw == GRAD_STORE ? 0.0f : dweight[c0 + i]) + dw[i];
            }
        }
    }
}

// ----------------------------------------------------------------------------
// matmul: out = inp @ weight^T + bias (PyTorch's nn.Linear layout)
// inp is (BT,C), weight is (OC,C), bias is (OC) or NULL, out is (BT,OC)
//
// The plain pair below is the one to read: three loops, the maths as it is. The model
// calls matmul_forward / matmul_backward (fast/matmul.h), which hand the same products
// to a cache- and register-blocked sgemm, unless it runs with -kernels plain: then these
// (model_matmul_forward below). test_gpt2.c checks one pair against the other.

void matmul_forward_plain(float* out, const float* inp, const float* weight, const float* bias,
                          int BT, int C, int OC) {
    #pragma omp parallel for
    for (int bt = 0; bt < BT; bt++) {
        const float* x = inp + (size_t)bt * C;
        for (int o = 0; o < OC; o++) {
            const float* w = weight + (size_t)o * C;
            float sum = bias ? bias[o] : 0.0f;
            #pragma omp simd reduction(+ : sum)
            for (int i = 0; i < C; i++)
                sum += x[i] * w[i];
            out[(size_t)bt * OC + o] = sum;
        }
    }
}

// With out = x W^T + b: dx = dout W, dW = dout^T x, db = column sums of dout.
// dinp is written; dweight and dbias are added to, or written (GRAD_STORE), as gw says.
void matmul_backward_plain(float* dinp, float* dweight, float* dbias, const float* dout,
                           const float* inp, const float* weight, int BT, int C, int OC, GradWrite gw) {
    #pragma omp parallel for
    for (int bt = 0; bt < BT; bt++) {
        const float* dy = dout + (size_t)bt * OC;
        float* dx = dinp + (size_t)bt * C;
        for (int i = 0; i < C; i++)
            dx[i] = 0.0f;
        for (int o = 0; o < OC; o++) {
            const float* w = weight + (size_t)o * C;
            for (int i = 0; i < C; i++)
                dx[i] += dy[o] * w[i];
        }
    }
    #pragma omp parallel for
    for (int o = 0; o < OC; o++) {
        float* dw = dweight + (size_t)o * C;
        float db = 0.0f;
        if (gw == GRAD_STORE)
            for (int i = 0; i < C; i++)
                dw[i] = 0.0f;
        for (int bt = 0; bt < BT; bt++) {
            float dy = dout[(size_t)bt * OC + o];
            const float* x = inp + (size_t)bt * C;
            for (int i = 0; i < C; i++)
                dw[i] += dy * x[i];
            db += dy;
        }
        if (dbias) dbias[o] = (gw == GRAD_STORE ? 0.0f : dbias[o]) + db;
    }
}

// The plain twin of attention's products (fast/gemm.h's matmul_ABt, _AB, _AtB): C (M,N) =
// op(A) op(B) (+ C when add); op(A) is A (M,K), or with tA A^T for A (K,M); op(B) is B (K,N),
// or with tB B^T for B (N,K). Rows lie ld floats apart: a head's slice is passed as it lies.
void matmul_plain(float* Cm, int ldc, const float* A, int lda, int tA, const float* Bm, int ldb, int tB,
                  int M, int N, int K, int add) {
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            #pragma omp simd reduction(+ : sum)
            for (int k = 0; k < K; k++)
                sum += (tA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) *
                       (tB ? Bm[(size_t)j * ldb + k] : Bm[(size_t)k * ldb + j]);
            Cm[(size_t)i * ldc + j] = (add ? Cm[(size_t)i * ldc + j] : 0.0f) + sum;
        }
    }
}

// ----------------------------------------------------------------------------
// causal multi-head self-attention, following the article "因果自注意力"; the same steps
// serve the encoder's unmasked self-attention and the decoder's cross-attention (article 003)
//
// q is (B,T,q_stride): Q in channels [0,C) of each row. Head h owns channels h*hs..(h+1)*hs-1
//   of Q ("多头计算"), and of K and V too unless NKV < NH (then it reads K/V head h / (NH/NKV)).
// kv is (B,Tk,kv_stride): K in channels [0, NKV hs), V right after it. Self-attention passes the
//   fused Q,K,V projection (article: "输入与注意力权重矩阵相乘"; the training forward keeps it,
//   it is the qkv activation) as q = qkv, kv = qkv + C; cross-attention passes the decoder's
//   queries as q and the K,V that a decoder layer projects from the encoder's output as kv.
// att_scores is (B,NH,T,Tk): scaled, masked scores (steps 1-3); masked entries are -inf
// att_probs is (B,NH,T,Tk): softmax probabilities (steps 4-5)
// att_dropped is (B,NH,T,Tk) or NULL: the probabilities after dropout (steps 6-7); with
//   dropout off it is att_probs itself, so nothing is copied
// out is (B,T,C): the heads' outputs side by side (step 8), ready for the projection
// drop describes the dropout of this layer's attention probabilities (drop->p == 0: off)
//
// attention_forward and attention_backward follow the article's steps. The matrix
// products of a head (steps 1 and 8 of the forward; 1, 2, 7 and 8 of the backward) are
// named by their formulas: matmul_ABt(C, .., A, .., B, ..) is C = A B^T, matmul_AB is
// C = A B, matmul_AtB is C = A^T B (fast/gemm.h; each argument is a pointer and its row
// stride, then the sizes M, N, K of C (M,N) and of the sum K).

// AttentionShape, the sizes of one attention call: train_gpt2.h

// the scores' factor: a model's -as, or 0 for the articles' 1/sqrt(hs) (the one place it is written)
float attention_scale(float scale, int hs) { return scale != 0.0f ? scale : 1.0f / sqrtf((float)hs); }

// the products of one head's slices, named by their formulas, computed as s.plain says
static void head_ABt(AttentionShape s, float* Cm, int ldc, const float* A, int lda, const float* Bm, int ldb,
                     int M, int N, int K) {  // C = A B^T
    if (s.plain) matmul_plain(Cm, ldc, A, lda, 0, Bm, ldb, 1, M, N, K, 0);
    else matmul_ABt(Cm, ldc, A, lda, Bm, ldb, M, N, K);
}
static void head_AB(AttentionShape s, float* Cm, int ldc, const float* A, int lda, const float* Bm, int ldb,
                    int M, int N, int K) {  // C = A B
    if (s.plain) matmul_plain(Cm, ldc, A, lda, 0, Bm, ldb, 0, M, N, K, 0);
    else matmul_AB(Cm, ldc, A, lda, Bm, ldb, M, N, K);
}
static void head_AtB(AttentionShape s, float* Cm, int ldc, const float* A, int lda, const float* Bm, int ldb,
                     int M, int N, int K, int add) {  // C = A^T B, or C += A^T B
    if (s.plain) matmul_plain(Cm, ldc, A, lda, 1, Bm, ldb, 0, M, N, K, add);
    else if (add) matmul_AtB_add(Cm, ldc, A, lda, Bm, ldb, M, N, K);
    else matmul_AtB(Cm, ldc, A, lda, Bm, ldb, M, N, K);
}

// the zero fields filled in (Tk = T, rows of C3 = C + 2 NKV hs); an impossible shape dies here
AttentionShape attention_shape_filled(AttentionShape s) {
    int C3 = s.C + 2 * s.NKV * (s.C / s.NH);
    s.Tk = s.Tk ? s.Tk : s.T;
    s.q_stride = s.q_stride ? s.q_stride : C3, s.kv_stride = s.kv_stride ? s.kv_stride : C3;
    s.scale = attention_scale(s.scale, s.C / s.NH);
    if (s.causal && s.Tk != s.pos0 + s.T)
        die("attention: the causal mask needs Tk == pos0 + T (Tk %d, pos0 %d, T %d)", s.Tk, s.pos0, s.T);
    for (int b = 0; s.key_len && b < s.B; b++)
        if (s.key_len[b] < 1 || s.key_len[b] > s.Tk)
            die("attention: key_len[%d] = %d is outside 1..Tk (Tk %d)", b, s.key_len[b], s.Tk);
    return s;
}
// the last key query t of sequence b may see: not after t if causal, not in the padding
static int last_key(AttentionShape s, int b, int t) {
    int last = s.causal ? s.pos0 + t : s.Tk - 1;
    return s.key_len && s.key_len[b] <= last ? s.key_len[b] - 1 : last;
}

// Steps 1 and 8 are matrix products of one head's slices. Steps 2-7 go row by row: row t
// of the scores is query t against every key; keys after `last` are the future or padding.
void attention_forward(float* out, float* att_scores, float* att_probs, float* att_dropped,
                       const float* q, const float* kv, AttentionShape s, const DropoutMask* drop) {
    s = attention_shape_filled(s);
    int B = s.B, T = s.T, Tk = s.Tk, C = s.C, NH = s.NH, hs = C / NH, group = NH / s.NKV;
    float scale = s.scale;
    int dropping = drop && drop->p > 0.0f;
    if (!dropping) att_dropped = att_probs;
    #pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float* q_h = q + (size_t)b * T * s.q_stride + h * hs;  // Q_h: (T,hs) at row stride q_stride
            const float* k_h = kv + (size_t)b * Tk * s.kv_stride + h / group * hs;  // K_h, V_h: (Tk,hs)
            const float* v_h = k_h + s.NKV * hs;
            size_t head = ((size_t)b * NH + h) * T * Tk;         // this head's (T,Tk) matrices
            // step 1 (计算注意力分数): att = Q_h K_h^T, every query against every key
            head_ABt(s, att_scores + head, Tk, q_h, s.q_stride, k_h, s.kv_stride, T, Tk, hs);
            for (int t = 0; t < T; t++) {
                float* scores_row = att_scores + head + (size_t)t * Tk;
                float* probs_row = att_probs + head + (size_t)t * Tk;
                int last = last_key(s, b, t);  // the last key query t may see
                // step 2 (注意力分数缩放): times 1/sqrt(hs) (or -as), so the scores' spread does
                //   not grow with the head size and the softmax does not saturate
                // step 3 (因果掩码): keys after t are the future, keys from key_len[b] on are
                //   padding: -inf, so softmax gives 0
                for (int t2 = 0; t2 < Tk; t2++)
                    scores_row[t2] = t2 <= last ? scores_row[t2] * scale : -INFINITY;
                // step 4 (计算 att Softmax): subtract the row maximum first so exp never
                //   overflows; the result is unchanged. The future gets exactly 0.
                // step 5: att_probs is the cache of this step's result
                float maxval = row_max(scores_row, last + 1);  // over the keys it may see
                float sum = 0.0f;
                #pragma omp simd reduction(+ : sum)
                for (int t2 = 0; t2 <= last; t2++) {
                    probs_row[t2] = exp_approx(scores_row[t2] - maxval);
                    sum += probs_row[t2];
                }
                float inv_sum = 1.0f / sum;
                for (int t2 = 0; t2 < Tk; t2++)
                    probs_row[t2] = t2 <= last ? probs_row[t2] * inv_sum : 0.0f;
                // step 6 (对 att 应用 dropout): drop probabilities, scale the kept ones by 1/(1-p)
                // step 7: att_dropped is the cache of this step's result
                if (dropping) {
                    float* dropped_row = att_dropped + head + (size_t)t * Tk;
                    for (int t2 = 0; t2 < Tk; t2++) {
                        int keep = t2 <= last && dropout_keep(drop, head + (size_t)t * Tk + t2);
                        dropped_row[t2] = keep ? probs_row[t2] * drop->scale : 0.0f;
                    }
                }
            }
            // step 8 (计算 att · V): the output of position t is the weighted sum of values,
            //   out_h = att_dropped V_h
            head_AB(s, out + (size_t)b * T * C + h * hs, C, att_dropped + head, Tk, v_h, s.kv_stride, T, hs,
                    Tk);
        }
    }
}

// attention_backward's steps 3-6 on one head of sequence b: grad_att (T,Tk) holds the
// gradient of the dropped-out probabilities on entry and the gradient of the scores on exit
static void attention_rows_backward(float* grad_att, const float* att_probs, AttentionShape s, int b,
                                    float scale, const DropoutMask* drop, size_t head) {
    int dropping = drop && drop->p > 0.0f, Tk = s.Tk;
    for (int t = 0; t < s.T; t++) {
        float* datt_row = grad_att + (size_t)t * Tk;
        const float* probs_row = att_probs + (size_t)t * Tk;
        int last = last_key(s, b, t);
        // step 3 (dropout 层反向传播): the same mask as the forward, the same 1/(1-p)
        if (dropping) {
            for (int t2 = 0; t2 <= last; t2++) {
                int keep = dropout_keep(drop, head + (size_t)t * Tk + t2);
                datt_row[t2] = keep ? datt_row[t2] * drop->scale : 0.0f;
            }
        }
        // step 4 (Softmax 层反向传播): with P the probabilities, dP their gradient,
        //   dS = P * (dP - sum_j P_j dP_j), the Jacobian of softmax applied to dP
        float dot = 0.0f;
        #pragma omp simd reduction(+ : dot)
        for (int t2 = 0; t2 <= last; t2++)
            dot += probs_row[t2] * datt_row[t2];
        // step 5 (因果掩码反向传播): masked scores (the future, the padding) were constants
        //   (-inf), so their gradient is zero (P is 0 there)
        // step 6 (缩放因子): the forward multiplied by the scale (1/sqrt(hs)), so does the backward
        for (int t2 = 0; t2 < Tk; t2++)
            datt_row[t2] = t2 <= last ? probs_row[t2] * (datt_row[t2] - dot) * scale : 0.0f;
    }
}

// dq is (B,T,q_stride): receives dQ in q's channels; dkv is (B,Tk,kv_stride): receives dK and dV
// in kv's (self-attention: dq = dqkv, dkv = dqkv + C; a padded key gets exactly 0). Both
// are written, not added to. dout is (B,T,C), the gradient of the heads' outputs (the
// article's G_in, after the projection's backward). Cross-attention's dkv goes back through
// its layer's K,V projection into the gradient of the encoder's output, to which every
// decoder layer adds its share (doc/attention.md derives it).
// As in the article, each head gets a (T,Tk) grad_att matrix (per-thread scratch). Steps
// 1, 2, 7 and 8 are matrix products of one head's slices (the masked zeros take part in
// them, which costs twice the FLOPs but runs at the matrix kernel's speed); steps 3-6 go
// row by row. One task is a (b, K/V head) pair: it runs that K/V head's group of query
// heads in order and alone writes their slices of dq and dkv, so the threads never touch
// the same gradient and the sums are in a fixed order.
void attention_backward(float* dq, float* dkv, const float* dout, const float* q, const float* kv,
                        const float* att_probs, const float* att_dropped,
                        AttentionShape s, const DropoutMask* drop) {
    s = attention_shape_filled(s);
    int B = s.B, T = s.T, Tk = s.Tk, C = s.C, NH = s.NH, hs = C / NH, group = NH / s.NKV;
    float scale = s.scale;
    int dropping = drop && drop->p > 0.0f;
    if (!dropping) att_dropped = att_probs;
    #pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++) {
        for (int kvh = 0; kvh < s.NKV; kvh++) {
            for (int g = 0; g < group; g++) {
                int h = kvh * group + g;
                size_t q_at = (size_t)b * T * s.q_stride + h * hs;
                size_t k_at = (size_t)b * Tk * s.kv_stride + kvh * hs;
                const float* q_h = q + q_at;                    // Q_h: (T,hs) at row stride q_stride
                const float* k_h = kv + k_at;                   // K_h, V_h: (Tk,hs) at row stride kv_stride
                const float* v_h = k_h + s.NKV * hs;
                float* dq_h = dq + q_at;                        // dQ_h, dK_h, dV_h: the same layouts
                float* dk_h = dkv + k_at;
                float* dv_h = dk_h + s.NKV * hs;
                const float* dy = dout + (size_t)b * T * C + h * hs; // G_in of this head: (T,hs) at stride C
                size_t head = ((size_t)b * NH + h) * T * Tk;
                float* grad_att = thread_scratch((size_t)T * Tk);    // (T,Tk)
                // step 1 (计算输入梯度对注意力的梯度): grad_att = G_in V_h^T, the gradient of
                //   the (dropped-out) probabilities
                head_ABt(s, grad_att, Tk, dy, C, v_h, s.kv_stride, T, Tk, hs);
                // step 2 (计算输入梯度对 V_h 的梯度): grad_v = att_dropped^T G_in; value t2
                //   collects att_dropped[t][t2] dy_t from every query t that saw it. With GQA
                //   a K/V head's gradient is the sum over its group's query heads (the
                //   backward of repeat_kv's copies): the first head writes it, the others add
                head_AtB(s, dv_h, s.kv_stride, att_dropped + head, Tk, dy, C, Tk, hs, T, g > 0);
                attention_rows_backward(grad_att, att_probs + head, s, b, scale, drop, head);
                // step 7 (计算对 Q_h 的梯度): grad_q = grad_att K_h, row t of dQ a weighted sum of keys
                head_AB(s, dq_h, s.q_stride, grad_att, Tk, k_h, s.kv_stride, T, hs, Tk);
                // step 8 (计算对 K_h 的梯度): grad_k = grad_att^T Q_h, key t2 collects
                //   grad_att[t][t2] q_t (summed over the group, as dV)
                head_AtB(s, dk_h, s.kv_stride, grad_att, Tk, q_h, s.q_stride, Tk, hs, T, g > 0);
            }
        }
    }
}

// ----------------------------------------------------------------------------
// positions without a learned table (articles 003 and 004; -pe sin, -pe rope)

// article 003's fixed sinusoids, added to the token embeddings: channel pair (2i, 2i+1) of
// position pos holds sin and cos of pos / 10000^(2i/C). table is (maxT,C).
void sinusoids_init(float* table, int maxT, int C) {
    for (int pos = 0; pos < maxT; pos++)
        for (int i = 0; i < C; i++) {
            double angle = pos / pow(10000.0, (double)(i - i % 2) / C);
            table[(size_t)pos * C + i] = (float)(i % 2 ? cos(angle) : sin(angle));
        }
}

// RoPE (article 004's apply_rotary_emb): q and k of each head are rotated by angles that
// grow with the position, pair (2i, 2i+1) by pos * theta_i, theta_i = 10000^(-2i/hs).
// A rotation keeps lengths, and rotations compose: q rotated by pos1 dotted with k
// rotated by pos2 depends only on pos1 - pos2, so the scores see relative positions.
// angles is (maxT, hs/2, 2): the cos and sin of each position's angles.
void rope_angles_init(float* angles, int maxT, int hs) {
    for (int pos = 0; pos < maxT; pos++)
        for (int i = 0; i < hs / 2; i++) {
            double angle = pos * pow(10000.0, -2.0 * i / hs);
            angles[((size_t)pos * hs / 2 + i) * 2] = (float)cos(angle);
            angles[((size_t)pos * hs / 2 + i) * 2 + 1] = (float)sin(angle);
        }
}

// x is (B,T,stride); the first heads*hs channels of a row (Q's heads, then K's) are
// rotated in place; row (b,t) is at position pos0 + t (the KV cache passes its position):
// (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos)
void rope_forward(float* x, const float* angles, int B, int T, int stride, int heads, int hs, int pos0) {
    #pragma omp parallel for collapse(2) if (B * T > 1)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float* cs = angles + (size_t)(pos0 + t) * hs;
            float* row = x + ((size_t)b * T + t) * stride;
            for (int j = 0; j < heads * hs; j += 2) {
                float c = cs[j % hs], s = cs[j % hs + 1], x0 = row[j], x1 = row[j + 1];
                row[j] = x0 * c - x1 * s;
                row[j + 1] = x0 * s + x1 * c;
            }
        }
    }
}

// The backward of y = R x is dx = R^T dy, and R^T is the rotation by minus the angle.
// In place: dx receives the gradient of the rotated q and k and leaves with the unrotated.
void rope_backward(float* dx, const float* angles, int B, int T, int stride, int heads, int hs) {
    #pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float* cs = angles + (size_t)t * hs;
            float* drow = dx + ((size_t)b * T + t) * stride;
            for (int j = 0; j < heads * hs; j += 2) {
                float c = cs[j % hs], s = cs[j % hs + 1], dy0 = drow[j], dy1 = drow[j + 1];
                drow[j] = dy0 * c + dy1 * s;
                drow[j + 1] = dy1 * c - dy0 * s;
            }
        }
    }
}

// ----------------------------------------------------------------------------
// GELU, tanh approximation (GPT-2's):
// gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
#define GELU_SCALE 0.7978845608028654f  // sqrt(2/pi)

// (a few thousand elements, one position of the KV cache, are not worth waking a thread)
#define PARALLEL_MIN 16384

void gelu_forward(float* out, const float* inp, size_t N) {
    #pragma omp parallel for schedule(static) if (N >= PARALLEL_MIN)
    for (size_t i = 0; i < N; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        out[i] = 0.5f * x * (1.0f + tanh_approx(u));
    }
}

// d gelu/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx,
// du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t N) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        float th = tanh_approx(u);
        float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = dout[i] * (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du);
    }
}

// ReLU, the original Transformer's non-linearity (article 003; -act relu): max(0, x), and
// its gradient passes where x > 0
void relu_forward(float* out, const float* inp, size_t N) {
    #pragma omp parallel for schedule(static) if (N >= PARALLEL_MIN)
    for (size_t i = 0; i < N; i++)
        out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

void relu_backward(float* dinp, const float* inp, const float* dout, size_t N) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++)
        dinp[i] = inp[i] > 0.0f ? dout[i] : 0.0f;
}

// squared ReLU (-act relu2; Primer, So et al. 2021): max(0, x)^2, whose gradient 2x is
// continuous at 0 (unlike ReLU's step), so finite differences check it anywhere
void relu2_forward(float* out, const float* inp, size_t N) {
    #pragma omp parallel for schedule(static) if (N >= PARALLEL_MIN)
    for (size_t i = 0; i < N; i++)
        out[i] = inp[i] > 0.0f ? inp[i] * inp[i] : 0.0f;
}

void relu2_backward(float* dinp, const float* inp, const float* dout, size_t N) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++)
        dinp[i] = inp[i] > 0.0f ? 2.0f * inp[i] * dout[i] : 0.0f;
}

// ----------------------------------------------------------------------------
// residual: out = inp1 + inp2. Its backward is the identity on both inputs: the
// gradient flows unchanged into the branch and into the stream. block_backward does it
// by handing the same gradient buffer to both (no copy, no residual_backward function).

void residual_forward(float* out, const float* inp1, const float* inp2, size_t N) {
    #pragma omp parallel for if (N >= PARALLEL_MIN)
    for (size_t i = 0; i < N; i++)
        out[i] = inp1[i] + inp2[i];
}

// ----------------------------------------------------------------------------
// dropout (inverted): in training, each element is zeroed with probability p and the
// rest are scaled by 1/(1-p), so the expected value is unchanged and evaluation needs
// no rescaling. In place: the backward needs only the mask, which it recomputes.

void dropout_forward(float* x, size_t N, const DropoutMask* drop) {
    if (drop->p <= 0.0f) return;
    #pragma omp parallel for
    for (size_t i = 0; i < N; i++)
        x[i] = dropout_keep(drop, i) ? x[i] * drop->scale : 0.0f;
}

void dropout_backward(float* dinp, const float* dout, size_t N, const DropoutMask* drop) {
    #pragma omp parallel for
    for (size_t i = 0; i < N; i++)
        dinp[i] = (drop->p <= 0.0f || dropout_keep(drop, i)) ? dout[i] * drop->scale : 0.0f;
}

// the gradient before a dropout site: dinp filled by dropout_backward, or dout itself
// when the site is off, which saves a copy
static const float* dropout_grad(float* dinp, const float* dout, size_t N, const DropoutMask* drop) {
    if (drop->p <= 0.0f) return dout;
    dropout_backward(dinp, dout, N, drop);
    return dinp;
}

// ----------------------------------------------------------------------------
// softmax + cross-entropy over the vocabulary
// logits and probs are (BT,Vp); only the first V entries of a row are real tokens:
// the padded ones get probability 0 and gradient 0

void softmax_forward(float* probs, const float* logits, int BT, int V, int Vp) {
    #pragma omp parallel for
    for (int bt = 0; bt < BT; bt++) {
        const float* z = logits + (size_t)bt * Vp;
        float* p = probs + (size_t)bt * Vp;
        float maxval = -INFINITY;
        for (int i = 0; i < V; i++)
            maxval = z[i] > maxval ? z[i] : maxval;
        float sum = 0.0f;
        #pragma omp simd reduction(+ : sum)
        for (int i = 0; i < V; i++) {
            p[i] = exp_approx(z[i] - maxval);
            sum += p[i];
        }
        float inv_sum = 1.0f / sum;
        for (int i = 0; i < V; i++)
            p[i] *= inv_sum;
        for (int i = V; i < Vp; i++)
            p[i] = 0.0f;
    }
}

// losses is (BT): -log p[target]
void crossentropy_forward(float* losses, const float* probs, const int* targets, int BT, int Vp) {
    for (int bt = 0; bt < BT; bt++)
        losses[bt] = -logf(probs[(size_t)bt * Vp + targets[bt]]);
}

// The gradient of -log softmax(z)[y] with respect to z is p - onehot(y): softmax and
// cross-entropy fused, which is both simpler and more accurate than chaining them.
void crossentropy_softmax_backward(float* dlogits, const float* dlosses, const float* probs,
                                   const int* targets, int BT, int V, int Vp) {
    #pragma omp parallel for
    for (int bt = 0; bt < BT; bt++) {
        float* dz = dlogits + (size_t)bt * Vp;
        const float* p = probs + (size_t)bt * Vp;
        float dl = dlosses[bt];
        for (int i = 0; i < V; i++)
            dz[i] = (p[i] - (i == targets[bt] ? 1.0f : 0.0f)) * dl;
        for (int i = V; i < Vp; i++)
            dz[i] = 0.0f;  // padding: not a real logit
    }
}

// ----------------------------------------------------------------------------
// the model: configuration, parameters, activations

// the block variants of articles 003 and 004 (PosEncoding, LnPlace, Activation, Mask): train_gpt2.h

// each value's word, as its flag spells it (util/cli.h's VARIANT_WORDS; test_gpt2 checks that
// they agree); NULL past the last value, so the values are 0 up to the first without a word
const char* pos_encoding_word(int v) {
    switch ((PosEncoding)v) {
    case POS_LEARNED: return "learned";
    case POS_ROPE: return "rope";
    case POS_SIN: return "sin";
    }
    return NULL;
}
const char* ln_place_word(int v) {
    switch ((LnPlace)v) {
    case LN_PRE: return "pre";
    case LN_POST: return "post";
    }
    return NULL;
}
const char* activation_word(int v) {
    switch ((Activation)v) {
    case ACT_GELU: return "gelu";
    case ACT_RELU: return "relu";
    case ACT_RELU2: return "relu2";
    }
    return NULL;
}
const char* mask_word(int v) {  // -causal's value
    switch ((Mask)v) {
    case MASK_CAUSAL: return "1";
    case MASK_NONE: return "0";
    }
    return NULL;
}

// the MLP's non-linearity, -act: out = act(inp) (in place allowed), and its backward
static void activation_forward(float* out, const float* inp, size_t N, int act) {
    switch ((Activation)act) {
    case ACT_GELU: gelu_forward(out, inp, N); return;
    case ACT_RELU: relu_forward(out, inp, N); return;
    case ACT_RELU2: relu2_forward(out, inp, N); return;
    }
}
static void activation_backward(float* dinp, const float* inp, const float* dout, size_t N, int act) {
    switch ((Activation)act) {
    case ACT_GELU: gelu_backward(dinp, inp, dout, N); return;
    case ACT_RELU: relu_backward(dinp, inp, dout, N); return;
    case ACT_RELU2: relu2_backward(dinp, inp, dout, N); return;
    }
}

// GPT2Config, the model's shape and variants: train_gpt2.h

// the MLP's hidden width: -ff, or 4C (article 003's toy layer has 2d; the paper 4d)
int ff_channels(GPT2Config c) { return c.ff ? c.ff : 4 * c.channels; }
// the size of a head, hs = C/NH
int head_size(GPT2Config c) { return c.head_size ? c.head_size : c.channels / c.num_heads; }
// the channels of the heads' outputs side by side, NH hs (= C)
int attention_channels(GPT2Config c) { return c.num_heads * head_size(c); }

// a row of the fused Q,K,V projection: NH query heads, NKV key and NKV value heads: 3C
// channels, or (NH + 2 NKV) hs with GQA
int qkv_channels(GPT2Config c) { return (c.num_heads + 2 * c.num_kv_heads) * head_size(c); }

static AttentionShape attention_shape(GPT2Config c, int B, int T) {
    return (AttentionShape){.B = B, .T = T, .C = attention_channels(c), .NH = c.num_heads,
                            .NKV = c.num_kv_heads, .causal = c.mask == MASK_CAUSAL, .scale = c.att_scale};
}

// The parameters, the activations and the backward's scratch each live in one
// allocation, with named pointers into it (as llm.c): these two helpers lay them out.
size_t sum_sizes(const size_t* sizes, int n) {
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += sizes[i];
    return total;
}

// points the n tensors *ptrs[i] of sizes[i] floats one after the other into memory
// (NULL for an empty one); returns memory
static float* point_tensors(float** const* ptrs, int n, float* memory, const size_t* sizes) {
    float* p = memory;
    for (int i = 0; i < n; i++) {
        *ptrs[i] = sizes[i] ? p : NULL;
        p += sizes[i];
    }
    return memory;
}

// ParameterTensors, all parameters in llm.c's file order (PARAMETER_DECAYS: AdamW's): train_gpt2.h

void fill_in_parameter_sizes(size_t* sizes, GPT2Config cfg) {
    size_t Vp = cfg.padded_vocab_size, C = cfg.channels, maxT = cfg.max_seq_len, L = cfg.num_layers;
    size_t C3 = qkv_channels(cfg), wpe = cfg.pos_encoding == POS_LEARNED ? maxT * C : 0;
    size_t F = ff_channels(cfg), CA = attention_channels(cfg);
    size_t shapes[NUM_PARAMETER_TENSORS] = {
        Vp * C, wpe, L * C, L * C, L * C3 * C, L * C3, L * C * CA, L * C,
        L * C, L * C, L * F * C, L * F, L * C * F, L * C, C, C};
    memcpy(sizes, shapes, sizeof shapes);
}

float* point_parameters(ParameterTensors* params, float* memory, const size_t* sizes) {
    float** ptrs[NUM_PARAMETER_TENSORS] = {
        &params->wte, &params->wpe, &params->ln1w, &params->ln1b, &params->qkvw, &params->qkvb,
        &params->attprojw, &params->attprojb, &params->ln2w, &params->ln2b, &params->fcw, &params->fcb,
        &params->fcprojw, &params->fcprojb, &params->lnfw, &params->lnfb};
    return point_tensors(ptrs, NUM_PARAMETER_TENSORS, memory, sizes);
}

// ActivationTensors, what the forward keeps for the backward: train_gpt2.h

// Tk: the keys a query's attention rows hold, T (or with a KV cache maxT: keys_per_query)
static void fill_in_activation_sizes(size_t* sizes, GPT2Config cfg, int B, int T, int Tk, int dropout) {
    size_t C = cfg.channels, NH = cfg.num_heads, L = cfg.num_layers, Vp = cfg.padded_vocab_size;
    size_t BT = (size_t)B * T, att = L * B * NH * T * Tk, C3 = qkv_channels(cfg), F = ff_channels(cfg);
    size_t s[NUM_ACTIVATION_TENSORS] = {
        BT * C, L * BT * C, L * BT, L * BT, L * BT * C3, L * BT * attention_channels(cfg), att, att,
        dropout ? att : 0,
        L * BT * C, L * BT * C, L * BT * C, L * BT, L * BT, L * BT * F, L * BT * F,
        L * BT * C, L * BT * C, BT * C, BT, BT, BT * Vp, BT * Vp};
    memcpy(sizes, s, sizeof s);
}

static void point_activations(ActivationTensors* a, float* memory, const size_t* sizes) {
    float** ptrs[NUM_ACTIVATION_TENSORS] = {
        &a->encoded, &a->ln1, &a->ln1_mean, &a->ln1_rstd, &a->qkv, &a->atty, &a->att_scores,
        &a->att_probs, &a->att_dropped, &a->attproj, &a->residual2, &a->ln2, &a->ln2_mean,
        &a->ln2_rstd, &a->fch, &a->fch_act, &a->fcproj, &a->residual3, &a->lnf, &a->lnf_mean,
        &a->lnf_rstd, &a->logits, &a->probs};
    point_tensors(ptrs, NUM_ACTIVATION_TENSORS, memory, sizes);
}

// BackwardScratch, the gradients of one layer's activations: train_gpt2.h

static void fill_in_scratch_sizes(size_t* sizes, GPT2Config cfg, int B, int T) {
    size_t C = cfg.channels, BT = (size_t)B * T, post = cfg.ln_place == LN_POST, F = ff_channels(cfg);
    size_t s[NUM_SCRATCH_TENSORS] = {BT * C, BT * C, BT * C, BT * attention_channels(cfg),
                                     BT * qkv_channels(cfg), BT * F, BT * F, BT, BT, post * BT * C};
    memcpy(sizes, s, sizeof s);
}

static void point_scratch(BackwardScratch* s, float* memory, const size_t* sizes) {
    float** ptrs[NUM_SCRATCH_TENSORS] = {&s->dres, &s->dbranch, &s->dln, &s->datty, &s->dqkv,
        &s->dfch, &s->dfch_act, &s->dlosses, &s->losses, &s->dsum};
    point_tensors(ptrs, NUM_SCRATCH_TENSORS, memory, sizes);
}

// ParallelHooks, the one extension point (the sequel's), and GPT2, the model: train_gpt2.h

// checks a configuration read from a file or the command line; names the source on failure
void check_config(GPT2Config c, const char* source) {
    if (c.max_seq_len <= 0 || c.vocab_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 || c.channels <= 0)
        die("%s: model shape must be positive (maxT %d, V %d, L %d, NH %d, C %d)", source,
            c.max_seq_len, c.vocab_size, c.num_layers, c.num_heads, c.channels);
    if (!c.head_size && c.channels % c.num_heads != 0)
        die("%s: channels %d are not divisible by heads %d", source, c.channels, c.num_heads);
    if (c.padded_vocab_size < c.vocab_size)
        die("%s: padded vocabulary %d is smaller than the vocabulary %d", source, c.padded_vocab_size,
            c.vocab_size);
    if (c.vocab_size > 65536 || c.padded_vocab_size > 1 << 20 || c.channels > 1 << 16 ||  // no size overflows
        c.num_layers > 1 << 12 || c.max_seq_len > 1 << 20)
        die("%s: model shape out of range (V %d: at most 65536, uint16 tokens; Vp %d, C %d, L %d, maxT %d)",
            source, c.vocab_size, c.padded_vocab_size, c.channels, c.num_layers, c.max_seq_len);
    if (c.num_kv_heads <= 0 || c.num_heads % c.num_kv_heads != 0)
        die("%s: key/value heads %d must divide the heads %d", source, c.num_kv_heads, c.num_heads);
    if (c.pos_encoding == POS_ROPE && head_size(c) % 2 != 0)
        die("%s: RoPE rotates pairs of channels; the head size %d is odd", source, head_size(c));
    if (c.ff < 0 || c.ff > 1 << 18)
        die("%s: MLP width d_ff %d out of range (1..262144, or 0 for 4C)", source, c.ff);
    if (!(c.att_scale >= 0.0f && c.att_scale < 1e6f))
        die("%s: attention scale %g out of range (0 < scale < 1e6; 0 = 1/sqrt(hs))", source, c.att_scale);
    if (!pos_encoding_word(c.pos_encoding) || !ln_place_word(c.ln_place) || !activation_word(c.activation) ||
        !mask_word(c.mask))
        die("%s: unknown variant setting (positions %d, layernorm %d, activation %d, mask %d)", source,
            c.pos_encoding, c.ln_place, c.activation, c.mask);
}

void gpt2_allocate_parameters(GPT2* model, GPT2Config config) {
    memset(model, 0, sizeof *model);
    model->config = config;
    fill_in_parameter_sizes(model->param_sizes, config);
    model->num_parameters = sum_sizes(model->param_sizes, NUM_PARAMETER_TENSORS);
    model->params_memory = point_parameters(&model->params,
        alignedMallocCheck(model->num_parameters * sizeof(float)), model->param_sizes);
    model->mean_loss = -1.0f;
    model->dropout_step = -1;
    int maxT = config.max_seq_len, C = config.channels, hs = head_size(config);
    if (config.pos_encoding == POS_SIN)
        sinusoids_init(model->sinusoids = mallocCheck((size_t)maxT * C * sizeof(float)), maxT, C);
    if (config.pos_encoding == POS_ROPE)
        rope_angles_init(model->rope_angles = mallocCheck((size_t)maxT * hs * sizeof(float)), maxT, hs);
}

// GPT-2's initialisation: weights and embeddings N(0, 0.02), the projections that write
// into the residual stream (attproj, fcproj) scaled by 1/sqrt(2L) so the stream's
// variance does not grow with depth, biases 0, layernorm weights 1. Padding rows of wte
// stay 0.
void gpt2_init_random(GPT2* model, GPT2Config config, uint64_t seed) {
    if (config.num_kv_heads == 0) config.num_kv_heads = config.num_heads;
    if ((long long)config.ff == 4LL * config.channels) config.ff = 0;  // GPT-2's width, one spelling
    check_config(config, "the fresh model (-nl, -nh, -nc, -mt, -kv, -ff)");
    gpt2_allocate_parameters(model, config);
    ParameterTensors p = model->params;
    size_t C = config.channels, L = config.num_layers, F = ff_channels(config);
    memset(model->params_memory, 0, model->num_parameters * sizeof(float));
    uint64_t rng = splitmix64(seed);
    float residual_std = 0.02f / sqrtf(2.0f * L);
    struct { float* t; size_t n; float std; } normal_init[] = {
        {p.wte, (size_t)config.vocab_size * C, 0.02f}, {p.wpe, model->param_sizes[1], 0.02f},
        {p.qkvw, model->param_sizes[4], 0.02f}, {p.attprojw, L * C * C, residual_std},
        {p.fcw, L * F * C, 0.02f}, {p.fcprojw, L * C * F, residual_std}};
    for (size_t k = 0; k < sizeof normal_init / sizeof normal_init[0]; k++)
        for (size_t i = 0; i < normal_init[k].n; i++)
            normal_init[k].t[i] = normal_init[k].std * random_normal(&rng);
    for (size_t i = 0; i < L * C; i++) {
        p.ln1w[i] = 1.0f;
        p.ln2w[i] = 1.0f;
    }
    for (size_t i = 0; i < C; i++)
        p.lnfw[i] = 1.0f;
}

// llm.c's checkpoint (doc/formats.md): a 256-int header with the shape, then every parameter.
// A model with a block variant is written as version 104, which llm.c refuses (it reads
// only 3), so it never misreads one; the variant settings are in the spare slots 8-13, and
// slot 255 holds a checksum (CRC-32C). Version 103, the same without the checksum, is read.
// GPT-2 itself stays llm.c's version 3, byte for byte, with no checksum: llm.c's readers
// accept only 3 (and its slots are llm.c's to give).
// (CHECKPOINT_VARIANTS, _NO_CHECKSUM, and the encoder-decoder's CHECKPOINT_SEQ2SEQ: train_gpt2.h)

int is_gpt2(GPT2Config c) {
    return c.num_kv_heads == c.num_heads && c.pos_encoding == POS_LEARNED && c.ln_place == LN_PRE &&
           c.activation == ACT_GELU && c.mask == MASK_CAUSAL && ff_channels(c) == 4 * c.channels &&
           c.att_scale == 0.0f;
}

// weights that are nan or inf are refused on load and before every export: they would
// print garbage, a val loss of nan with exit status 0, or a file no one can use
void check_finite_weights(const float* params, size_t n, const char* what) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(params[i]))
            die("%s: weight %zu of %zu is %s", what, i, n, isnan(params[i]) ? "nan" : "inf");
}

// a checkpoint is its 1024-byte header and n float parameters, no more, no less: checked
// before anything is allocated for them
void check_checkpoint_size(FILE* f, const char* path, size_t n) {
    long long expected = 1024 + 4 * (long long)n, actual = file_size_of(f, path);
    if (actual != expected)
        die("'%s' is %s: its header describes %lld parameters (%lld bytes), the file has %lld bytes", path,
            actual < expected ? "truncated" : "longer than its header says", (long long)n, expected, actual);
}

// the n parameters after a checkpoint's header into params; checksummed: slot 255 must be
// the CRC-32C of the header and the parameters
void read_checkpoint_parameters(FILE* f, const char* path, const int32_t h[256], float* params, size_t n,
                                int checksummed) {
    fread_check(params, sizeof(float), n, f, path, "parameters");
    fclose(f);
    if (checksummed) check_checksum(path, h, crc32c_update(header_checksum(h), params, n * sizeof(float)));
    char what[4200];
    snprintf(what, sizeof what, "'%s'", path);
    check_finite_weights(params, n, what);
}

// The block variants' header slots (version 104, doc/formats.md), the one table that the
// writer and the reader share: a new setting of GPT2Config gets a row here (and a term of
// is_gpt2), or check_header_holds refuses to save a model that has it.
static const struct { int slot; const char* flag; size_t field; } VARIANT_SLOTS[] = {
    {8, "-kv", offsetof(GPT2Config, num_kv_heads)}, {9, "-pe", offsetof(GPT2Config, pos_encoding)},
    {10, "-ln", offsetof(GPT2Config, ln_place)}, {11, "-act", offsetof(GPT2Config, activation)},
    {12, "-causal", offsetof(GPT2Config, mask)}, {13, "-ff", offsetof(GPT2Config, ff)}};
#define NUM_VARIANT_SLOTS ((int)(sizeof VARIANT_SLOTS / sizeof VARIANT_SLOTS[0]))
static int* config_setting(GPT2Config* c, int i) { return (int*)((char*)c + VARIANT_SLOTS[i].field); }

// before a checkpoint is written: its header, read back as gpt2_build_from_checkpoint reads
// it, must give the model's settings (c, -ff's 4C as 0); a setting the format would lose is
// refused with its flag (a variant that is_gpt2 calls GPT-2), or as a field with no slot
static void check_header_holds(const int32_t h[256], GPT2Config c, const char* path) {
    GPT2Config back = {.max_seq_len = h[2], .vocab_size = h[3], .num_layers = h[4], .num_heads = h[5],
                       .channels = h[6], .padded_vocab_size = h[7], .num_kv_heads = h[5]};
    for (int i = 0; h[1] != 3 && i < NUM_VARIANT_SLOTS; i++)
        *config_setting(&back, i) = h[VARIANT_SLOTS[i].slot];
    if (h[1] != 3) memcpy(&back.att_scale, &h[14], sizeof back.att_scale);  // -as: slot 14, a float
    for (int i = 0; i < NUM_VARIANT_SLOTS; i++)
        if (*config_setting(&back, i) != *config_setting(&c, i))
            die("'%s': checkpoint version %d cannot hold %s %d (is_gpt2 calls this model GPT-2)", path, h[1],
                VARIANT_SLOTS[i].flag, *config_setting(&c, i));
    if (memcmp(&back, &c, sizeof c) != 0)
        die("'%s': a setting of this model has no slot in the checkpoint's header (VARIANT_SLOTS)", path);
}

void gpt2_build_from_checkpoint(GPT2* model, const char* path) {
    FILE* f = fopenCheck(path, "rb");
    int32_t h[256];
    read_header(f, path, h, 20240326, "llm.c model checkpoint");
    if (h[1] == CHECKPOINT_SEQ2SEQ || h[1] == CHECKPOINT_SEQ2SEQ_NO_CHECKSUM)
        die("'%s' is an encoder-decoder checkpoint (version %d): use train_seq2seq", path, h[1]);
    int variants = h[1] == CHECKPOINT_VARIANTS || h[1] == CHECKPOINT_VARIANTS_NO_CHECKSUM;
    if (h[1] != 3 && !variants)
        die("'%s': checkpoint version %d is not supported (3: float32 parameters; %d: with block variants)%s",
            path, h[1], CHECKPOINT_VARIANTS, h[1] == 5 ? "; version 5 is llm.c's bfloat16 format" : "");
    GPT2Config c = {.max_seq_len = h[2], .vocab_size = h[3], .num_layers = h[4], .num_heads = h[5],
                    .channels = h[6], .padded_vocab_size = h[7], .num_kv_heads = h[5]};
    if (variants) {  // -ff's slot 0: 4C (version 103 and older 104 files)
        for (int i = 0; i < NUM_VARIANT_SLOTS; i++)
            *config_setting(&c, i) = h[VARIANT_SLOTS[i].slot];
        memcpy(&c.att_scale, &h[14], sizeof c.att_scale);  // -as, a float; 0: 1/sqrt(hs) (older files)
        check_unused_slots(path, h, 15, h[1] == CHECKPOINT_VARIANTS ? 254 : 255);
    }
    check_config(c, path);
    size_t sizes[NUM_PARAMETER_TENSORS];  // the file must hold them all before they are allocated
    fill_in_parameter_sizes(sizes, c);
    check_checkpoint_size(f, path, sum_sizes(sizes, NUM_PARAMETER_TENSORS));
    gpt2_allocate_parameters(model, c);
    read_checkpoint_parameters(f, path, h, model->params_memory, model->num_parameters,
                               h[1] == CHECKPOINT_VARIANTS);
}

void gpt2_write_checkpoint(const GPT2* model, const char* path) {
    int32_t h[256] = {0};
    GPT2Config c = model->config;
    if (ff_channels(c) == 4 * c.channels) c.ff = 0;  // GPT-2's width, one spelling
    h[0] = 20240326; h[1] = 3; h[2] = c.max_seq_len; h[3] = c.vocab_size;
    h[4] = c.num_layers; h[5] = c.num_heads; h[6] = c.channels; h[7] = c.padded_vocab_size;
    if (!is_gpt2(c)) {  // GPT-2 itself stays llm.c's version 3, byte for byte
        h[1] = CHECKPOINT_VARIANTS;
        for (int i = 0; i < NUM_VARIANT_SLOTS; i++)
            h[VARIANT_SLOTS[i].slot] = *config_setting(&c, i);
        memcpy(&h[14], &c.att_scale, sizeof c.att_scale);  // -as: a float, outside VARIANT_SLOTS
        h[255] = (int32_t)crc32c_update(header_checksum(h), model->params_memory,
                                        model->num_parameters * sizeof(float));
    }
    check_header_holds(h, c, path);  // before the file is opened: nothing is left behind
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    fwrite_check(h, sizeof(int32_t), 256, f, tmp);
    fwrite_check(model->params_memory, sizeof(float), model->num_parameters, f, tmp);
    atomic_commit(f, tmp, path);
}

// the keys each query's attention rows hold: its sequence's T, or generating, room for maxT
static int keys_per_query(const GPT2* model, int T) {
    return model->cache ? model->config.max_seq_len : T;
}

// the forward's cache and the backward's scratch for batches up to B x T; grows (once,
// outside the training loop in practice) when a larger batch comes
static void gpt2_allocate_activations(GPT2* model, int B, int T) {
    GPT2Config c = model->config;
    if (T > c.max_seq_len) die("sequence length %d is larger than the model's maxT %d", T, c.max_seq_len);
    int dropout = model->dropout_p > 0.0f;
    if (model->acts_memory) {
        if (B <= model->batch_size && T <= model->seq_len && (!dropout || model->acts.att_dropped)) return;
        B = B > model->batch_size ? B : model->batch_size;
        T = T > model->seq_len ? T : model->seq_len;
        aligned_free(model->acts_memory); aligned_free(model->scratch_memory);
        free(model->inputs); free(model->targets);
    }
    model->batch_size = B;
    model->seq_len = T;
    fill_in_activation_sizes(model->act_sizes, c, B, T, keys_per_query(model, T), dropout);
    size_t num_acts = sum_sizes(model->act_sizes, NUM_ACTIVATION_TENSORS);
    model->acts_memory = alignedMallocCheck(num_acts * sizeof(float));
    point_activations(&model->acts, model->acts_memory, model->act_sizes);
    size_t scratch_sizes[NUM_SCRATCH_TENSORS];
    fill_in_scratch_sizes(scratch_sizes, c, B, T);
    size_t num_scratch = sum_sizes(scratch_sizes, NUM_SCRATCH_TENSORS);
    model->scratch_memory = alignedMallocCheck(num_scratch * sizeof(float));
    point_scratch(&model->scratch, model->scratch_memory, scratch_sizes);
    model->inputs = mallocCheck((size_t)B * T * sizeof(int));
    model->targets = mallocCheck((size_t)B * T * sizeof(int));
}

// -prec bf16: the weights were written by code other than AdamW (which rewrites their bf16
// copy as it writes them): the copy is made again, so that the next forward reads the new
// weights. The first forward makes it the first time. (An edit of params_memory that skips
// this call is not seen by the products under bf16: they read the copy.)
void gpt2_weights_written(GPT2* model) {
    if (model->precision != GEMM_BF16) return;
    size_t n = model->num_parameters;
    if (!model->params_bf16) model->params_bf16 = alignedMallocCheck(n * sizeof(uint16_t));
    bf16_round_all(model->params_bf16, model->params_memory, n);
}

void gpt2_free(GPT2* model) {
    aligned_free(model->params_memory); aligned_free(model->grads_memory);
    aligned_free(model->m_memory); aligned_free(model->v_memory);
    free(model->sinusoids); free(model->rope_angles);
    aligned_free(model->params_bf16);
    aligned_free(model->acts_memory); aligned_free(model->scratch_memory);
    free(model->inputs); free(model->targets);
    memset(model, 0, sizeof *model);
}


// ----------------------------------------------------------------------------
// the forward and backward passes of the whole model

// generation's cache (the end of this file): layer l's keys and values, the positions it holds,
// the weights its one-position products read
static float* kvcache_layer(KVCache* kv, int l);
static int kvcache_pos(const KVCache* kv);
static const WeightsBF16* kvcache_weights(const KVCache* kv);

// the matmul as the model runs it: with -kernels plain the plain pair of this file, which a
// reader reads; else fast/matmul.h's, which computes the same products faster, or, for
// generation's one position, fast/matvec_bf16.h's (from bf16 weights under -prec bf16)
// the precision of the model's products (-prec), with its weights' bf16 copy
static GemmPrecision model_precision(const GPT2* model) {
    return (GemmPrecision){model->precision, model->params_memory, model->params_bf16, model->num_parameters};
}
static void model_matmul_forward(const GPT2* model, float* out, const float* inp, const float* weight,
                                 const float* bias, int BT, int C, int OC) {
    GemmPrecision p = model_precision(model);
    if (model->plain) matmul_forward_plain(out, inp, weight, bias, BT, C, OC);
    else if (model->cache) matvec_token(kvcache_weights(model->cache), out, inp, weight, bias, C, OC);
    else matmul_forward_in(&p, out, inp, weight, bias, BT, C, OC);
}
static void model_matmul_backward(const GPT2* model, float* dinp, float* dweight, float* dbias,
                                  const float* dout, const float* inp, const float* weight, int BT, int C,
                                  int OC, GradWrite gw) {
    GemmPrecision p = model_precision(model);
    if (model->plain) matmul_backward_plain(dinp, dweight, dbias, dout, inp, weight, BT, C, OC, gw);
    else matmul_backward_in(&p, dinp, dweight, dbias, dout, inp, weight, BT, C, OC, gw);
}

static AttentionShape model_attention_shape(const GPT2* model, int B, int T) {
    AttentionShape s = attention_shape(model->config, B, T);
    s.plain = model->plain;
    return s;
}

// LayerParams, layer l's slices of the parameters (or gradients): train_gpt2.h

LayerParams layer_params(ParameterTensors p, GPT2Config c, int l) {
    size_t C = c.channels, C3 = qkv_channels(c), F = ff_channels(c), CA = attention_channels(c);
    LayerParams lp = {p.ln1w + l * C, p.ln1b + l * C, p.qkvw + l * C3 * C, p.qkvb + l * C3,
                      p.attprojw + l * C * CA, p.attprojb + l * C, p.ln2w + l * C, p.ln2b + l * C,
                      p.fcw + l * F * C, p.fcb + l * F, p.fcprojw + l * F * C, p.fcprojb + l * C};
    return lp;
}

// LayerActs, layer l's slices of the cached activations: train_gpt2.h

// the output of block l: residual3 (pre-LN), or the second layernorm's output (post-LN)
float* block_output(const GPT2* model, int l, int B, int T) {
    float* out = model->config.ln_place == LN_POST ? model->acts.ln2 : model->acts.residual3;
    return out + (size_t)l * B * T * model->config.channels;
}

static LayerActs layer_acts(const GPT2* model, int l, int B, int T) {
    const ActivationTensors* a = &model->acts;
    GPT2Config c = model->config;
    size_t C = c.channels, NH = c.num_heads, BT = (size_t)B * T, CA = attention_channels(c);
    size_t att = NH * BT * keys_per_query(model, T), C3 = qkv_channels(c), F = ff_channels(c);
    LayerActs la = {
        l == 0 ? a->encoded : block_output(model, l - 1, B, T),
        a->ln1 + l * BT * C, a->ln1_mean + l * BT, a->ln1_rstd + l * BT, a->qkv + l * BT * C3,
        a->atty + l * BT * CA, a->att_scores + l * att, a->att_probs + l * att,
        a->att_dropped ? a->att_dropped + l * att : NULL,
        a->attproj + l * BT * C, a->residual2 + l * BT * C, a->ln2 + l * BT * C, a->ln2_mean + l * BT,
        a->ln2_rstd + l * BT, a->fch + l * BT * F, a->fch_act + l * BT * F,
        a->fcproj + l * BT * C, a->residual3 + l * BT * C};
    return la;
}

// the dropout mask of one site for the current forward; p = 0 in evaluation
static DropoutMask model_dropout(const GPT2* model, int layer, int site) {
    float p = model->dropout_step >= 0 ? model->dropout_p : 0.0f;
    DropoutMask m = dropout_mask(p, model->dropout_seed, (uint64_t)model->dropout_step, layer, site);
    int T = model->cur_T, NH = model->config.num_heads, C = model->config.channels;
    m.first = (uint64_t)model->dropout_row0 * (site == DROP_ATT_PROBS ? NH * T * T : T * C);  // rows before
    if (site == DROP_ATT_PROBS && model->parallel)
        model->parallel->dropout_slice(&m, NH, model->dropout_row0, T);
    return m;
}

// the end of a branch, out = x W^T + b: its bias, and (several processes) the sum of their parts
static const float* branch_bias(const GPT2* model, const float* bias) {
    return model->parallel ? model->parallel->branch_bias(bias) : bias;
}
static void branch_sum(const GPT2* model, float* x, size_t n) {
    if (model->parallel) model->parallel->branch_sum(x, n);
}

// the keys and values layer l's attention reads: in training the forward's own (qkv + CA);
// generating, the cache's, after this forward's are appended: Tk = pos0 + T keys, where the
// queries are the positions pos0.. (a row of the cache is a row of qkv's K and V heads)
static const float* attention_keys(const GPT2* model, int l, const float* qkv, int T, AttentionShape* s) {
    GPT2Config c = model->config;
    int CA = attention_channels(c), C3 = qkv_channels(c);
    if (!model->cache) return qkv + CA;
    float* cached = kvcache_layer(model->cache, l);
    int row = C3 - CA, pos0 = kvcache_pos(model->cache);
    for (int t = 0; t < T; t++)
        memcpy(cached + (size_t)(pos0 + t) * row, qkv + (size_t)t * C3 + CA, row * sizeof(float));
    s->pos0 = pos0, s->Tk = pos0 + T, s->kv_stride = row;
    return cached;
}

// attention branch: attproj = dropout(proj(attention(qkv(in)))), with q and k rotated
// between the projection and the scores when the positions are RoPE's
static void attention_branch_forward(GPT2* model, int l, const float* in, int B, int T) {
    GPT2Config c = model->config;
    int C = c.channels, BT = B * T, C3 = qkv_channels(c), hs = head_size(c), CA = attention_channels(c);
    LayerParams w = layer_params(model->params, c, l);
    LayerActs a = layer_acts(model, l, B, T);
    DropoutMask att_drop = model_dropout(model, l, DROP_ATT_PROBS);
    DropoutMask att_out_drop = model_dropout(model, l, DROP_ATT_OUT);
    model_matmul_forward(model, a.qkv, in, w.qkvw, w.qkvb, BT, C, C3);  // qkv is (B,T,C3): Q, then K, then V
    int pos0 = model->cache ? kvcache_pos(model->cache) : 0;  // (RoPE's angles: absolute positions)
    if (c.pos_encoding == POS_ROPE)
        rope_forward(a.qkv, model->rope_angles, B, T, C3, c.num_heads + c.num_kv_heads, hs, pos0);
    AttentionShape s = model_attention_shape(model, B, T);
    const float* kv = attention_keys(model, l, a.qkv, T, &s);
    attention_forward(a.atty, a.att_scores, a.att_probs, a.att_dropped, a.qkv, kv, s, &att_drop);
    model_matmul_forward(model, a.attproj, a.atty, w.attprojw, branch_bias(model, w.attprojb), BT, CA, C);
    branch_sum(model, a.attproj, (size_t)BT * C);
    dropout_forward(a.attproj, (size_t)BT * C, &att_out_drop);
}

// MLP branch: fcproj = dropout(proj(act(fc(in)))), act GELU or ReLU
static void mlp_branch_forward(GPT2* model, int l, const float* in, int B, int T) {
    GPT2Config c = model->config;
    int C = c.channels, BT = B * T;
    LayerParams w = layer_params(model->params, c, l);
    LayerActs a = layer_acts(model, l, B, T);
    DropoutMask mlp_out_drop = model_dropout(model, l, DROP_MLP_OUT);
    int F = ff_channels(c);  // d_ff: only the shapes depend on it
    model_matmul_forward(model, a.fch, in, w.fcw, w.fcb, BT, C, F);
    activation_forward(a.fch_act, a.fch, (size_t)BT * F, c.activation);
    model_matmul_forward(model, a.fcproj, a.fch_act, w.fcprojw, branch_bias(model, w.fcprojb), BT, F, C);
    branch_sum(model, a.fcproj, (size_t)BT * C);
    dropout_forward(a.fcproj, (size_t)BT * C, &mlp_out_drop);
}

// One transformer block. The same buffers serve both layernorm placements: with post-LN,
// ln1 holds the stream between the two halves and ln2 the block's output, and the sums
// residual2 and residual3 are what the layernorms read.
static void block_forward(GPT2* model, int l, int B, int T) {
    GPT2Config c = model->config;
    int C = c.channels, BT = B * T;
    size_t BTC = (size_t)BT * C;
    LayerParams w = layer_params(model->params, c, l);
    LayerActs a = layer_acts(model, l, B, T);
    if (c.ln_place == LN_PRE) {  // GPT-2: x + attn(ln1(x)), then + mlp(ln2(.))
        layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, a.residual, w.ln1w, w.ln1b, BT, C);
        attention_branch_forward(model, l, a.ln1, B, T);
        residual_forward(a.residual2, a.residual, a.attproj, BTC);
        layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.residual2, w.ln2w, w.ln2b, BT, C);
        mlp_branch_forward(model, l, a.ln2, B, T);
        residual_forward(a.residual3, a.residual2, a.fcproj, BTC);
    } else {                     // the original Transformer: ln1(x + attn(x)), then ln2(. + mlp(.))
        attention_branch_forward(model, l, a.residual, B, T);
        residual_forward(a.residual2, a.residual, a.attproj, BTC);
        layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, a.residual2, w.ln1w, w.ln1b, BT, C);
        mlp_branch_forward(model, l, a.ln1, B, T);
        residual_forward(a.residual3, a.ln1, a.fcproj, BTC);
        layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.residual3, w.ln2w, w.ln2b, BT, C);
    }
}

// the table added to the token embeddings: GPT-2's learned wpe, article 003's fixed
// sinusoids, or none (RoPE rotates q and k inside the attention instead)
static const float* position_table(const GPT2* model) {
    switch ((PosEncoding)model->config.pos_encoding) {
    case POS_LEARNED: return model->params.wpe;
    case POS_SIN: return model->sinusoids;
    case POS_ROPE: return NULL;
    }
    return NULL;
}

// inputs, targets are (B,T) token ids; targets may be NULL (then no loss).
// step >= 0 is a training forward whose dropout masks depend on the step; step < 0 is
// evaluation (no dropout). Returns the mean loss, or -1 without targets. Generation runs
// the same forward on one sequence (B = 1) whose earlier positions a KV cache holds
// (model->cache): its T positions follow them, and their keys and values join them.
float gpt2_forward(GPT2* model, const int* inputs, const int* targets, int B, int T, long step) {
    GPT2Config c = model->config;
    int C = c.channels, L = c.num_layers, V = c.vocab_size, Vp = c.padded_vocab_size, BT = B * T;
    if (B <= 0 || T <= 0) die("batch size %d and sequence length %d must be positive", B, T);
    int pos0 = model->cache ? kvcache_pos(model->cache) : 0;  // the position of inputs[0]
    if (model->cache && (B != 1 || pos0 + T > c.max_seq_len))
        die("the KV cache holds one sequence of at most maxT %d positions: %d more after %d, B %d",
            c.max_seq_len, T, pos0, B);
    gpt2_allocate_activations(model, B, T);
    check_tokens(inputs, (size_t)BT, V, "inputs");
    if (targets) check_tokens(targets, (size_t)BT, V, "targets");
    memcpy(model->inputs, inputs, (size_t)BT * sizeof(int));
    if (targets) memcpy(model->targets, targets, (size_t)BT * sizeof(int));
    model->dropout_step = step;
    if (model->precision == GEMM_BF16 && !model->params_bf16 && !model->cache) gpt2_weights_written(model);
    model->cur_B = B;
    model->cur_T = T;

    ActivationTensors a = model->acts;
    const ParallelHooks* par = model->parallel;
    const int* ids = inputs;
    const float* wte = par ? par->embedding_rows(model->params.wte, inputs, BT, C, &ids) : model->params.wte;
    const float* positions = position_table(model);
    encoder_forward(a.encoded, ids, wte, positions ? positions + (size_t)pos0 * C : NULL, B, T, C);
    DropoutMask embed_drop = model_dropout(model, 0, DROP_EMBED);
    dropout_forward(a.encoded, (size_t)BT * C, &embed_drop);
    for (int l = 0; l < L; l++) {
        if (par) par->weights_ready(l);
        block_forward(model, l, B, T);
    }
    if (par) par->weights_ready(L);
    const float* last = block_output(model, L - 1, B, T);
    layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, last, model->params.lnfw, model->params.lnfb, BT, C);
    model_matmul_forward(model, a.logits, a.lnf, model->params.wte, NULL, BT, C, Vp);  // tied output head
    softmax_forward(a.probs, a.logits, BT, V, Vp);
    model->mean_loss = -1.0f;
    if (targets) {
        crossentropy_forward(model->scratch.losses, a.probs, targets, BT, Vp);
        double sum = 0.0;
        for (int i = 0; i < BT; i++)
            sum += model->scratch.losses[i];
        model->mean_loss = (float)(sum / BT);
    }
    return model->mean_loss;
}

void gpt2_zero_grad(GPT2* model) {
    model->grads_held = 0;  // (no pass over them: the next backward's first writers store, not add)
}

// The branches' backward passes: dout is the gradient of the branch's output (fcproj or
// attproj, before its dropout); each writes the gradient of its input, in, into s->dln,
// and its weights' gradients as gw says (fast/buffers.h).
static void mlp_branch_backward(GPT2* model, int l, const float* in, const float* dout, int B, int T,
                                GradWrite gw) {
    GPT2Config c = model->config;
    int C = c.channels, BT = B * T;
    size_t BTC = (size_t)BT * C;
    LayerParams w = layer_params(model->params, c, l);
    LayerParams dw = layer_params(model->grads, c, l);  // their gradients, the same layout
    LayerActs a = layer_acts(model, l, B, T);
    BackwardScratch* s = &model->scratch;
    DropoutMask mlp_out_drop = model_dropout(model, l, DROP_MLP_OUT);
    const float* dfcproj = dropout_grad(s->dbranch, dout, BTC, &mlp_out_drop);
    int F = ff_channels(c);  // d_ff: the same steps as with 4C, other shapes
    model_matmul_backward(model, s->dfch_act, dw.fcprojw, dw.fcprojb, dfcproj, a.fch_act, w.fcprojw, BT, F, C,
                          gw);
    activation_backward(s->dfch, a.fch, s->dfch_act, (size_t)BT * F, c.activation);
    model_matmul_backward(model, s->dln, dw.fcw, dw.fcb, s->dfch, in, w.fcw, BT, C, F, gw);
    branch_sum(model, s->dln, BTC);
}

static void attention_branch_backward(GPT2* model, int l, const float* in, const float* dout, int B, int T,
                                      GradWrite gw) {
    GPT2Config c = model->config;
    int C = c.channels, BT = B * T, C3 = qkv_channels(c), hs = head_size(c), CA = attention_channels(c);
    LayerParams w = layer_params(model->params, c, l);
    LayerParams dw = layer_params(model->grads, c, l);
    LayerActs a = layer_acts(model, l, B, T);
    BackwardScratch* s = &model->scratch;
    DropoutMask att_drop = model_dropout(model, l, DROP_ATT_PROBS);
    DropoutMask att_out_drop = model_dropout(model, l, DROP_ATT_OUT);
    const float* dattproj = dropout_grad(s->dbranch, dout, (size_t)BT * C, &att_out_drop);
    model_matmul_backward(model, s->datty, dw.attprojw, dw.attprojb, dattproj, a.atty, w.attprojw, BT, CA, C,
                          gw);
    attention_backward(s->dqkv, s->dqkv + CA, s->datty, a.qkv, a.qkv + CA, a.att_probs,
                       a.att_dropped, model_attention_shape(model, B, T), &att_drop);
    if (c.pos_encoding == POS_ROPE)  // dq and dk back through the rotation
        rope_backward(s->dqkv, model->rope_angles, B, T, C3, c.num_heads + c.num_kv_heads, hs);
    model_matmul_backward(model, s->dln, dw.qkvw, dw.qkvb, s->dqkv, in, w.qkvw, BT, C, C3, gw);
    branch_sum(model, s->dln, (size_t)BT * C);
}

// post-LN: the stream between two layernorms feeds both a branch and the residual sum after
// it, so its gradient is the sum of the two paths' gradients
static void stream_backward(float* dstream, const float* dsum, const float* dbranch_in, size_t N) {
    #pragma omp parallel for if (N >= PARALLEL_MIN)
    for (size_t i = 0; i < N; i++)
        dstream[i] = dsum[i] + dbranch_in[i];
}

// One block backward: s->dres holds the gradient of the block's output on entry and that
// of its input on exit. The order is the forward's, reversed. Pre-LN: every residual
// backward is the identity on both of its inputs (see residual_forward): the branch reads
// s->dres as its output gradient, and the layernorm that opens the branch adds its input
// gradient into s->dres, which turns it into the gradient of the residual before. Every
// weight gradient of the layer is written once, as gw says.
void block_backward(GPT2* model, int l, int B, int T, GradWrite gw) {
    GPT2Config c = model->config;
    int C = c.channels, BT = B * T;
    size_t BTC = (size_t)BT * C;
    LayerParams w = layer_params(model->params, c, l);
    LayerParams dw = layer_params(model->grads, c, l);
    LayerActs a = layer_acts(model, l, B, T);
    BackwardScratch* s = &model->scratch;
    if (c.ln_place == LN_PRE) {
        // MLP branch: residual3 = residual2 + mlp(ln2(residual2))
        mlp_branch_backward(model, l, a.ln2, s->dres, B, T, gw);
        layernorm_backward(s->dres, dw.ln2w, dw.ln2b, s->dln, a.residual2, w.ln2w, a.ln2_mean, a.ln2_rstd,
                           BT, C, gw);
        // attention branch: residual2 = residual + attn(ln1(residual))
        attention_branch_backward(model, l, a.ln1, s->dres, B, T, gw);
        layernorm_backward(s->dres, dw.ln1w, dw.ln1b, s->dln, a.residual, w.ln1w, a.ln1_mean, a.ln1_rstd,
                           BT, C, gw);
        return;
    }
    // post-LN: out = ln2(mid + mlp(mid)) with mid = ln1(x + attn(x)); ln1 holds mid
    zero_floats(s->dsum, BTC);
    layernorm_backward(s->dsum, dw.ln2w, dw.ln2b, s->dres, a.residual3, w.ln2w, a.ln2_mean, a.ln2_rstd,
                       BT, C, gw);
    mlp_branch_backward(model, l, a.ln1, s->dsum, B, T, gw);
    stream_backward(s->dres, s->dsum, s->dln, BTC);  // d mid
    zero_floats(s->dsum, BTC);
    layernorm_backward(s->dsum, dw.ln1w, dw.ln1b, s->dres, a.residual2, w.ln1w, a.ln1_mean, a.ln1_rstd,
                       BT, C, gw);
    attention_branch_backward(model, l, a.residual, s->dsum, B, T, gw);
    stream_backward(s->dres, s->dsum, s->dln, BTC);  // d x
}

// the sum of the squares of layer l's gradients: its slice of each per-layer tensor
// (LAYER_TENSORS), in an order that does not depend on the thread count (fast/buffers.h)
static double layer_grad_squares(const GPT2* model, int l) {
    int first = LAYER_TENSORS[0], count = LAYER_TENSORS[1] - LAYER_TENSORS[0];
    // tensor `first` is ln1w; the other per-layer tensors follow it in the buffer
    return sum_of_squares_layer(model->grads.ln1w, model->param_sizes + first, count,
                                model->config.num_layers, l);
}

// gradients of the mean loss of the last forward (which must have had targets), added
// into model->grads (after gpt2_zero_grad: stored); their squares summed as each is final
void gpt2_backward(GPT2* model) {
    if (model->mean_loss < 0.0f) die("gpt2_backward needs a forward pass with targets first");
    GPT2Config c = model->config;
    if (!model->grads_memory) {
        model->grads_memory = point_parameters(&model->grads,
            alignedCallocCheck(model->num_parameters, sizeof(float)), model->param_sizes);
    }
    int B = model->cur_B, T = model->cur_T;  // the last forward's batch
    int C = c.channels, L = c.num_layers, V = c.vocab_size, Vp = c.padded_vocab_size, BT = B * T;
    size_t BTC = (size_t)BT * C;
    ActivationTensors a = model->acts;
    BackwardScratch* s = &model->scratch;

    // the loss is the mean over B*T positions, so each position's loss has weight 1/(B*T);
    // over the B*T*n positions of n accumulated micro-batches, 1/(B*T*n)
    int n = model->grad_accum > 1 ? model->grad_accum : 1;
    const ParallelHooks* par = model->parallel;
    if (par) par->backward_begin(model->grads_memory, model->param_sizes, NUM_PARAMETER_TENSORS,
                                 LAYER_TENSORS, L, n);
    for (int i = 0; i < BT; i++)
        s->dlosses[i] = 1.0f / (BT * n);
    float* dlogits = a.logits;  // the logits are not needed any more: reuse their memory
    crossentropy_softmax_backward(dlogits, s->dlosses, a.probs, model->targets, BT, V, Vp);
    // after gpt2_zero_grad, each gradient's first writer stores (no pass zeroes them); else add
    GradWrite gw = model->grads_held ? GRAD_ADD : GRAD_STORE;
    model_matmul_backward(model, s->dln, model->grads.wte, NULL, dlogits, a.lnf, model->params.wte, BT, C, Vp,
                          gw);
    if (par) par->head_grads_done(model->grads.wte, Vp, C);
    zero_floats(s->dres, BTC);  // the final layernorm is the only user of the last residual
    const float* last = block_output(model, L - 1, B, T);
    layernorm_backward(s->dres, model->grads.lnfw, model->grads.lnfb, s->dln, last,
                       model->params.lnfw, a.lnf_mean, a.lnf_rstd, BT, C, gw);
    int own_norm = !par;  // (several processes: the norm is of their sum, taken after it lands)
    model->grad_squares = own_norm ? sum_of_squares(model->grads.lnfw, 2 * (size_t)C) : 0.0;  // lnfw, lnfb
    for (int l = L - 1; l >= 0; l--) {
        block_backward(model, l, B, T, gw);
        if (par) par->layer_grads_done(l);
        if (own_norm) model->grad_squares += layer_grad_squares(model, l);
    }
    // s->dres is now the gradient of the (dropped-out) embedding sum
    DropoutMask embed_drop = model_dropout(model, 0, DROP_EMBED);
    const float* dencoded = dropout_grad(s->dbranch, s->dres, BTC, &embed_drop);
    if (par) par->embedding_grads_begin();
    encoder_backward(model->grads.wte, model->grads.wpe, dencoded, model->inputs, B, T, C, gw);
    if (gw == GRAD_STORE && model->grads.wpe)  // the positions past T: none wrote them
        memset(model->grads.wpe + (size_t)T * C, 0, (size_t)(c.max_seq_len - T) * C * sizeof(float));
    if (own_norm)  // wte and wpe, the buffer's first two tensors
        model->grad_squares += sum_of_squares(model->grads_memory,
                                              model->param_sizes[0] + model->param_sizes[1]);
    model->grads_held = 1;
}

// ----------------------------------------------------------------------------
// AdamW, gradient clipping, learning-rate schedule

// the global L2 norm of all gradients, sqrt(sum of g^2), in double, in an order that does
// not depend on the number of threads (fast/buffers.h): summed by gpt2_backward as they were
// written
float gpt2_grad_norm(const GPT2* model) { return (float)sqrt(model->grad_squares); }

// the factor that brings the gradients' global norm down to max_norm (1 when it is already
// below, or when max_norm is 0 = no clipping); AdamW applies it as it reads each gradient,
// which saves a pass over all of them
float grad_clip_scale(float norm, float max_norm) {
    return (max_norm > 0.0f && norm > max_norm) ? max_norm / norm : 1.0f;
}

// AdamW's moments of n parameters, zero until the first update (or read from a training-state
// file)
void allocate_moments(float** m, float** v, size_t n) {
    if (*m) return;
    *m = alignedCallocCheck(n, sizeof(float));
    *v = alignedCallocCheck(n, sizeof(float));
}

// AdamWConfig, the optimiser's settings: train_gpt2.h

// AdamW (Loshchilov & Hutter): Adam's update on bias-corrected moments plus a weight
// decay that acts on the weights directly rather than through the gradient.
// n tensors of sizes[k] floats lie one after the other in params (and grads, m, v);
// decays[k] says whether tensor k is decayed. grad_scale multiplies every gradient first
// (clipping); t is the 1-based update number. One pass: params_bf16, if not NULL, gets the
// new weights rounded to bf16 (-prec bf16's copy) as they are written.
void adamw_update(float* params, uint16_t* params_bf16, const float* grads, float* m_all, float* v_all,
                  const size_t* sizes, const int* decays, int n, const AdamWConfig* opt, float lr,
                  float grad_scale, int t) {
    float beta1 = opt->beta1, beta2 = opt->beta2, eps = opt->eps;
    float bc1 = (float)(1.0 - pow(beta1, t)), bc2 = (float)(1.0 - pow(beta2, t));
    #pragma omp parallel  // one team for all tensors; no barrier between them (nowait)
    {
        size_t offset = 0;
        for (int k = 0; k < n; k++) {
            float wd = decays[k] ? opt->weight_decay : 0.0f;
            float* p = params + offset;
            const float* g = grads + offset;
            float* m = m_all + offset;
            float* v = v_all + offset;
            #pragma omp for nowait
            for (size_t i = 0; i < sizes[k]; i++) {
                float gi = g[i] * grad_scale;
                m[i] = beta1 * m[i] + (1.0f - beta1) * gi;
                v[i] = beta2 * v[i] + (1.0f - beta2) * gi * gi;
                float m_hat = m[i] / bc1, v_hat = v[i] / bc2;
                p[i] -= lr * (m_hat / (sqrtf(v_hat) + eps) + wd * p[i]);
                if (params_bf16) params_bf16[offset + i] = bf16_round_packed(p[i]);
            }
            offset += sizes[k];
        }
    }
}

void gpt2_update(GPT2* model, const AdamWConfig* opt, float lr, float grad_scale, int t) {
    allocate_moments(&model->m_memory, &model->v_memory, model->num_parameters);
    adamw_update(model->params_memory, model->params_bf16, model->grads_memory, model->m_memory,
                 model->v_memory, model->param_sizes, PARAMETER_DECAYS, NUM_PARAMETER_TENSORS, opt, lr,
                 grad_scale, t);
}

// ----------------------------------------------------------------------------
// one training step: forward, backward, clip, AdamW

// StepStats, what a step reports (loss, norm, learning rate): train_gpt2.h

// The end of a training step, its gradients summed in model->grads: their global norm,
// clipping, and AdamW at the scheduled learning rate.
// A non-finite norm leaves the weights untouched (the trainer stops).
StepStats gpt2_optimizer_step(GPT2* model, int step, const AdamWConfig* opt) {
    StepStats s = {model->mean_loss, gpt2_grad_norm(model), 0.0f};
    s.lr = learning_rate(opt->schedule, step, opt->lr, opt->warmup, opt->max_steps, opt->final_lr_frac);
    if (isfinite(s.norm)) gpt2_update(model, opt, s.lr, grad_clip_scale(s.norm, opt->grad_clip), step + 1);
    return s;
}

// one training step on a batch: inputs and targets are (B,T); step numbers the dropout
// masks and the learning rate. A non-finite loss leaves the weights untouched. The
// program's run_step() (train_gpt2_main.c) makes the same calls itself, to write a
// checkpoint after the forward and to accumulate micro-batches (-d).
StepStats gpt2_train_step(GPT2* model, const int* inputs, const int* targets, int B, int T, int step,
                          const AdamWConfig* opt) {
    float loss = gpt2_forward(model, inputs, targets, B, T, step);
    if (!isfinite(loss)) return (StepStats){loss, 0.0f, 0.0f};
    gpt2_zero_grad(model);
    gpt2_backward(model);
    return gpt2_optimizer_step(model, step, opt);
}

// ----------------------------------------------------------------------------
// inference with a KV cache (article 004, on the KV cache, GQA and RoPE):
// generating token t+1 needs the keys and values of positions 0..t. They do not change
// once computed (a position only attends to earlier ones), so we keep them and compute
// only the new position: one query against all cached keys. It runs the training forward
// itself (gpt2_forward with model->cache): the same blocks, the same attention, the same
// options, on one position whose mask offset is its position (the query is the last, so
// it sees every cached key), and nothing is kept for a backward pass.

// struct KVCache, the cached keys and values: train_gpt2.h

static float* kvcache_layer(KVCache* kv, int l) {
    GPT2Config c = kv->model.config;
    return kv->kv + (size_t)l * c.max_seq_len * 2 * c.num_kv_heads * head_size(c);
}
static int kvcache_pos(const KVCache* kv) { return kv->pos; }
static const WeightsBF16* kvcache_weights(const KVCache* kv) { return &kv->bf16; }

void kvcache_init(KVCache* kv, GPT2Config c) {
    size_t L = c.num_layers, maxT = c.max_seq_len, row = 2 * (size_t)c.num_kv_heads * head_size(c);
    // Zeroed, so touched, here: a fresh page costs microseconds on this kind of machine,
    // and a cache touched on first use would make every token or two of the generation
    // pay for one (for GPT-2 124M, about 0.4 ms per token).
    kv->kv = alignedCallocCheck(L * maxT * row, sizeof(float));
    kv->tokens = mallocCheck(maxT * sizeof(int));
    kv->pos = 0, kv->bf16 = (WeightsBF16){0};
    kv->model = (GPT2){.config = c};
}

void kvcache_free(KVCache* kv) {
    aligned_free(kv->kv); free(kv->tokens); weights_bf16_free(&kv->bf16);
    aligned_free(kv->model.acts_memory); aligned_free(kv->model.scratch_memory);
    free(kv->model.inputs); free(kv->model.targets);
}

// the model generation runs: the weights and options of `model` as they are now (so an edit
// of them is seen), and the cache's own activations, for one position
static GPT2* kvcache_model(KVCache* kv, const GPT2* model) {
    GPT2* g = &kv->model;
    g->config = model->config, g->parallel = model->parallel, g->plain = model->plain;
    g->params = model->params, g->params_memory = model->params_memory;
    g->num_parameters = model->num_parameters;
    g->sinusoids = model->sinusoids, g->rope_angles = model->rope_angles;
    g->cache = kv;
    return g;
}

// feeds one token at position kv->pos; returns the logits (Vp) for the next token
const float* gpt2_forward_token(const GPT2* model, KVCache* kv, int token) {
    GPT2Config c = model->config;
    if (kv->pos >= c.max_seq_len)
        die("the KV cache is full: position %d reaches maxT %d", kv->pos, c.max_seq_len);
    if (token < 0 || token >= c.vocab_size)
        die("token %d is outside the vocabulary (0..%d)", token, c.vocab_size - 1);
    GPT2* g = kvcache_model(kv, model);
    gpt2_forward(g, &token, NULL, 1, 1, -1);
    kv->tokens[kv->pos++] = token;
    return g->acts.logits;
}

// ----------------------------------------------------------------------------
// generation: feed the prompt through the KV cache, then sample one token at a time

// prints the prompt and n new tokens. When the context fills the model's maxT, either
// stop with a notice (slide == 0) or keep the newest maxT/2 tokens as the new context
// and recompute their keys and values (slide == 1), the way nanoGPT crops its context.
// Returns the number of tokens generated.
int generate(const GPT2* model, KVCache* kv, Sampler* s, const Tokenizer* tk,
             const int* prompt, int prompt_len, int n, int slide, FILE* out) {
    int maxT = model->config.max_seq_len, keep = maxT / 2 > 0 ? maxT / 2 : 1, slides = 0, generated = 0;
    kv->pos = 0;
    // -prec bf16: the bf16 weights, the model's own copy if training made one
    weights_bf16_sync(&kv->bf16, model->precision, model->params_memory, model->num_parameters,
                      model->params_bf16);
    for (int i = 0; i < prompt_len; i++)
        print_token(tk, prompt[i], out);
    for (int i = 0; i < prompt_len - 1; i++)
        gpt2_forward_token(model, kv, prompt[i]);
    int token = prompt[prompt_len - 1];
    const ParallelHooks* par = model->parallel;
    while (generated < n && !(par ? par->stop_agreed() : stop_signal)) {  // Ctrl-C: stop within a token
        if (kv->pos == maxT) {
            if (!slide) {
                fprintf(out, "\n[generation stopped: the context reached the model's maxT of %d tokens]",
                        maxT);
                break;
            }
            int* history = kv->tokens;
            memmove(history, history + maxT - keep + 1, (keep - 1) * sizeof(int));
            kv->pos = 0;
            for (int i = 0; i < keep - 1; i++)
                gpt2_forward_token(model, kv, history[i]);
            slides++;
        }
        token = sampler_sample(s, gpt2_forward_token(model, kv, token));
        print_token(tk, token, out);
        generated++;
    }
    fputc('\n', out);
    if (slides)
        fprintf(out, "[the context reached maxT = %d %d time%s; each time the newest %d tokens were kept]\n",
                maxT, slides, slides == 1 ? "" : "s", keep);
    fflush(out);
    return generated;
}
