/*
test_gpt2.c: checks train_gpt2.c against an independent implementation.

1. Reference states written by PyTorch autograd in float64 (data/make_reference.py):
   logits, loss and all parameter gradients of five deliberately awkward models (a, b:
   GPT-2; c, d: every block variant between them; e: the attention scale -as 0.7), one
   with dropout at all four sites;
   then 12 AdamW steps of training.
2. Finite differences: every layer's backward against central differences of its own
   forward, on small random inputs, and the whole model's loss for each block variant,
   with no PyTorch involved.
3. The fast matmul against the plain one, and every kernel of the speed engine (fast/)
   against its plain twin: sgemm against sgemm_plain (and sgemm's results independent
   of the thread count), exp/tanh, sum_of_squares and zero_floats, add_weighted_rows,
   matvec, the aligned allocator, and the attention against attention_forward_plain and
   attention_backward_plain; the KV-cache inference path against the training forward
   (every variant, and after generate() slides its window); checkpoints written back byte
   for byte; bit-identical results across runs and thread counts; the worked attention
   example of the article on training vs inference (article 002); the articles' errata.

Usage: ./test_gpt2                       all of the above, with the committed references
       ./test_gpt2 -r DIR                the same with the references in DIR
       ./test_gpt2 -k WORD               only the groups of checks whose names contain WORD
                                         (-k finite, -k cache, -k checkpoint; -l lists the names)
       ./test_gpt2 -e MODEL -s STATE     step-0 logits, loss and gradients of any llm.c pair
Exit status 0 only if every check passed. The last line is "N passed, M failed".
*/
#define TESTING  // train_gpt2_main.c without its main
#include "train_gpt2_main.c"  // the model (train_gpt2.c) and its program
#include "fast/matmul.h"     // the fast matmul layer, against its plain twin
#include "fast/approx.h"     // exp_approx, tanh_approx, against expf, tanhf
#include "fast/gemm_tile.h"  // the tile, the blocks and the kernels one by one (fast/gemm.c)

// ----------------------------------------------------------------------------
// tolerances, measured (see doc/tests.md, "Test tolerances"): float32 against float64

#define TOL_LOGITS_ABS 1e-5f    // max |logit - ref|
#define TOL_LOSS_REL 2e-6f      // |loss - ref| / ref
#define TOL_GRAD_REL 1e-5f      // max |grad - ref| / max |ref| of the tensor
#define TOL_TRAIN_LOSS_REL 2e-6f// per step of the 12-step AdamW trajectory
#define TOL_TRAIN_NORM_REL 2e-6f
#define TOL_FD_REL 5e-4f        // finite differences: max |num - analytic| / max |analytic|
#define TOL_FAST_REL 2e-6f      // fast vs plain matmul, relative to the largest value
#define TOL_KV_ABS 1e-5f        // KV-cache logits vs training-forward logits

#include "tests/check.h"  // check(), use_threads()

// the sizes of a self-attention call on fused qkv rows (the other fields 0: their defaults)
static AttentionShape self_attention(int B, int T, int C, int NH, int NKV, int causal) {
    return (AttentionShape){.B = B, .T = T, .C = C, .NH = NH, .NKV = NKV, .causal = causal};
}

typedef struct { float max_abs; float max_ref; } Error;

// our tensor (with a row stride, for padded logits) against a reference
static Error compare(const float* ours, const float* ref, size_t rows, size_t cols, size_t stride) {
    Error e = {0.0f, 0.0f};
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            float d = fabsf(ours[r * stride + c] - ref[r * cols + c]);
            if (!(d <= e.max_abs)) e.max_abs = d;  // NaN counts as the largest error
            if (fabsf(ref[r * cols + c]) > e.max_ref) e.max_ref = fabsf(ref[r * cols + c]);
        }
    return e;
}

static float rel(Error e) { return e.max_ref > 0 ? e.max_abs / e.max_ref : e.max_abs; }

// ----------------------------------------------------------------------------
// reference states (llm.c version 2; version 3 adds dropout: seed, step, p in ppm)

typedef struct {
    int B, T, version;
    int *x, *y;
    float* logits;  // (B,T,V)
    float loss;
    float* grads;   // all parameters, checkpoint order
    uint64_t seed, step;
    float dropout_p;
} RefState;

static void read_state(RefState* s, const char* path, const GPT2* model) {
    FILE* f = fopenCheck(path, "rb");
    int32_t h[256];
    read_header(f, path, h, 20240327, "llm.c reference state");
    if (h[1] != 2 && h[1] != 3)
        die("'%s': state version %d is not supported (expected 2, or 3 with dropout)", path, h[1]);
    s->version = h[1]; s->B = h[2]; s->T = h[3];
    s->seed = (uint64_t)h[4]; s->step = (uint64_t)h[5];
    s->dropout_p = h[1] == 3 ? h[6] / 1e6f : 0.0f;
    if (s->B <= 0 || s->T <= 0) die("'%s': B %d and T %d must be positive", path, s->B, s->T);
    if (s->T > model->config.max_seq_len)
        die("'%s': T %d is larger than the model's maxT %d", path, s->T, model->config.max_seq_len);
    size_t BT = (size_t)s->B * s->T, V = model->config.vocab_size, P = model->num_parameters;
    long long expected = 1024LL + (long long)(4 * (2 * BT + BT * V + 1 + P));
    if (file_size(f) != expected)
        die("'%s' has %lld bytes; a state for B=%d T=%d and this model needs %lld",
            path, file_size(f), s->B, s->T, expected);
    s->x = mallocCheck(BT * sizeof(int)); s->y = mallocCheck(BT * sizeof(int));
    s->logits = mallocCheck(BT * V * sizeof(float)); s->grads = mallocCheck(P * sizeof(float));
    fread_check(s->x, sizeof(int), BT, f, path, "inputs");
    fread_check(s->y, sizeof(int), BT, f, path, "targets");
    fread_check(s->logits, sizeof(float), BT * V, f, path, "logits");
    fread_check(&s->loss, sizeof(float), 1, f, path, "loss");
    fread_check(s->grads, sizeof(float), P, f, path, "gradients");
    fclose(f);
}

static void free_state(RefState* s) { free(s->x); free(s->y); free(s->logits); free(s->grads); }

// forward + backward on the state's batch; checks logits, loss, every gradient
static void check_state(const char* model_path, const char* state_path) {
    GPT2 model;
    gpt2_build_from_file(&model, model_path);  // llm.c's checkpoint, or Hugging Face's .safetensors
    RefState s;
    read_state(&s, state_path, &model);
    GPT2Config c = model.config;
    model.dropout_p = s.dropout_p;
    model.dropout_seed = s.seed;
    printf("-- %s + %s: B=%d T=%d L=%d NH=%d C=%d V=%d Vp=%d%s\n", model_path, state_path, s.B, s.T,
           c.num_layers, c.num_heads, c.channels, c.vocab_size, c.padded_vocab_size,
           s.dropout_p > 0 ? " (dropout)" : "");
    if (!is_gpt2(c))
        printf("   block variants: NKV=%d, positions %s, %s-LN, %s, %s\n", c.num_kv_heads,
               VARIANT_WORDS[0][c.pos_encoding], VARIANT_WORDS[1][c.ln_place], VARIANT_WORDS[2][c.activation],
               c.mask == MASK_CAUSAL ? "causal" : "no mask");
    float loss = gpt2_forward(&model, s.x, s.y, s.B, s.T, s.dropout_p > 0 ? (long)s.step : -1);
    Error e = compare(model.acts.logits, s.logits, (size_t)s.B * s.T, c.vocab_size, c.padded_vocab_size);
    check(e.max_abs <= TOL_LOGITS_ABS, "logits: max abs error %.2e (tolerance %.0e)", e.max_abs,
          TOL_LOGITS_ABS);
    float loss_rel = fabsf(loss - s.loss) / fabsf(s.loss);
    check(loss_rel <= TOL_LOSS_REL, "loss %.7f vs reference %.7f: relative error %.2e (tolerance %.0e)", loss,
          s.loss, loss_rel, TOL_LOSS_REL);
    gpt2_zero_grad(&model);
    gpt2_backward(&model);
    size_t offset = 0;
    for (int k = 0; k < NUM_PARAMETER_TENSORS; k++) {
        size_t n = model.param_sizes[k];
        if (n == 0) continue;  // wpe, when the positions are not learned
        Error g = compare(model.grads_memory + offset, s.grads + offset, 1, n, n);
        check(rel(g) <= TOL_GRAD_REL,
              "grad %-8s max abs error %.2e, max |ref| %.2e, relative to max %.2e (tolerance %.0e)",
              PARAMETER_NAMES[k], g.max_abs, g.max_ref, rel(g), TOL_GRAD_REL);
        offset += n;
    }
    free_state(&s);
    gpt2_free(&model);
}

// ----------------------------------------------------------------------------
// training trajectory: 12 AdamW steps with warmup, cosine decay, clipping, decay

static void check_training(const char* model_path, const char* train_path) {
    GPT2 model;
    gpt2_build_from_checkpoint(&model, model_path);
    FILE* f = fopenCheck(train_path, "rb");
    int32_t h[256];
    float hyper[16];
    read_header(f, train_path, h, 20241122, "training reference");
    int B = h[2], T = h[3], n = h[4], warmup = h[5];
    if (h[1] != 1 || B <= 0 || T <= 0 || n <= 0 || n > 10000) die("'%s': bad header", train_path);
    size_t BT = (size_t)B * T;
    int* x = mallocCheck(BT * sizeof(int)); int* y = mallocCheck(BT * sizeof(int));
    float* ref = mallocCheck(3 * (size_t)n * sizeof(float));  // losses, norms, lrs
    fread_check(hyper, sizeof(float), 16, f, train_path, "hyperparameters");
    fread_check(x, sizeof(int), BT, f, train_path, "inputs");
    fread_check(y, sizeof(int), BT, f, train_path, "targets");
    fread_check(ref, sizeof(float), 3 * (size_t)n, f, train_path, "trajectory");
    fclose(f);
    float lr = hyper[0], beta1 = hyper[1], beta2 = hyper[2], eps = hyper[3], wd = hyper[4], clip = hyper[5],
          final_frac = hyper[6];
    printf("-- %s: %d AdamW steps, lr %g warmup %d, clip %g, weight decay %g\n",
           train_path, n, lr, warmup, clip, wd);
    float worst_loss = 0.0f, worst_norm = 0.0f, worst_lr = 0.0f;
    int clipped = 0;
    AdamWConfig opt = {.lr = lr, .warmup = warmup, .max_steps = n, .final_lr_frac = final_frac,
                       .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = wd, .grad_clip = clip};
    for (int s = 0; s < n; s++) {
        StepStats st = gpt2_train_step(&model, x, y, B, T, s, &opt);  // no dropout: as step -1
        float loss = st.loss, norm = st.norm, step_lr = st.lr;
        clipped += norm > clip;
        float el = fabsf(loss - ref[s]) / ref[s], en = fabsf(norm - ref[n + s]) / ref[n + s];
        float elr = fabsf(step_lr - ref[2 * n + s]) / ref[2 * n + s];
        printf("   step %2d loss %.6f (ref %.6f, rel err %.1e) norm %.5f (ref %.5f, rel err %.1e)\n", s, loss,
               ref[s], el, norm, ref[n + s], en);
        if (!(el <= worst_loss)) worst_loss = el;
        if (!(en <= worst_norm)) worst_norm = en;
        if (!(elr <= worst_lr)) worst_lr = elr;
    }
    check(worst_loss <= TOL_TRAIN_LOSS_REL, "trajectory losses: worst relative error %.2e (tolerance %.0e)",
          worst_loss, TOL_TRAIN_LOSS_REL);
    check(worst_norm <= TOL_TRAIN_NORM_REL,
          "trajectory gradient norms: worst relative error %.2e (tolerance %.0e)", worst_norm,
          TOL_TRAIN_NORM_REL);
    check(worst_lr <= 1e-6f, "learning-rate schedule: worst relative error %.2e", worst_lr);
    check(clipped > 0, "clipping was exercised (%d of %d steps clipped)", clipped, n);
    free(x); free(y); free(ref);
    gpt2_free(&model);
}

// ----------------------------------------------------------------------------
// finite differences: each layer's backward against its own forward.
// The objective is f = sum(out .* R) for a fixed random R, so df/dout = R, and the
// backward called with dout = R must give df/dx. The forward runs in float32 but f is
// summed in double; with eps = 1e-2 the central difference's truncation error (~eps^2)
// and rounding error (~1e-7 |f| / eps) are both well below TOL_FD_REL of the largest
// gradient, while a wrong sign or a missing term is an error of order 1.

typedef struct {
    int B, T, C, NH, OC, V, Vp, NKV, causal;
    float scale;  // attention: the scores' factor (-as); 0 = 1/sqrt(hs)
    int Tk; const int* key_len;  // cross-attention (Tk > 0): queries x (B,T,C), keys and values x2
    int* tokens;
    float *x, *x2, *w, *b, *out, *R, *mean, *rstd, *scores, *probs, *dropped;
    DropoutMask drop;
    int fast;
} FDCase;

typedef void (*ForwardFn)(FDCase* k);

static double objective(FDCase* k, ForwardFn forward, size_t n_out) {
    forward(k);
    double f = 0.0;
    for (size_t i = 0; i < n_out; i++)
        f += (double)k->out[i] * k->R[i];
    return f;
}

static void fd_check(const char* name, FDCase* k, ForwardFn forward, size_t n_out, float* x, size_t n,
                     const float* analytic) {
    const float eps = 1e-2f;
    float max_err = 0.0f, max_ana = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float orig = x[i];
        x[i] = orig + eps; float hi = x[i]; double fp = objective(k, forward, n_out);
        x[i] = orig - eps; float lo = x[i]; double fm = objective(k, forward, n_out);
        x[i] = orig;
        float num = (float)((fp - fm) / ((double)hi - lo));
        float err = fabsf(num - analytic[i]);
        if (!(err <= max_err)) max_err = err;
        if (fabsf(analytic[i]) > max_ana) max_ana = fabsf(analytic[i]);
    }
    forward(k);  // leave the forward's caches as they were for the unperturbed input
    float r = max_ana > 0 ? max_err / max_ana : max_err;
    check(r <= TOL_FD_REL && max_ana > 0, "finite differences %-28s max error %.2e, relative to max %.2e",
          name, max_err, r);
}

static float* random_floats(uint64_t* rng, size_t n, float mean, float std) {
    float* p = mallocCheck(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        p[i] = mean + std * random_normal(rng);
    return p;
}

static float* copy_floats(const float* src, size_t n) {
    float* p = mallocCheck(n * sizeof(float) + 1);
    memcpy(p, src, n * sizeof(float));
    return p;
}
static float* zeros(size_t n) { return callocCheck(n, sizeof(float)); }
// the starting contents of an input gradient that the backward must overwrite, not add to
static float* garbage(uint64_t* rng, size_t n) { return random_floats(rng, n, 0.0f, 1.0f); }

static void fwd_encoder(FDCase* k) { encoder_forward(k->out, k->tokens, k->w, k->b, k->B, k->T, k->C); }
static void fwd_layernorm(FDCase* k) {
    layernorm_forward(k->out, k->mean, k->rstd, k->x, k->w, k->b, k->B * k->T, k->C);
}
static void fwd_matmul(FDCase* k) {
    if (k->fast) matmul_forward(k->out, k->x, k->w, k->b, k->B * k->T, k->C, k->OC);
    else matmul_forward_plain(k->out, k->x, k->w, k->b, k->B * k->T, k->C, k->OC);
}
static AttentionShape fd_attention_shape(const FDCase* k) {
    AttentionShape sh = self_attention(k->B, k->T, k->C, k->NH, k->NKV, k->causal);
    sh.scale = k->scale;
    if (k->Tk) {
        sh.Tk = k->Tk, sh.q_stride = k->C, sh.kv_stride = 2 * k->NKV * (k->C / k->NH);
        sh.key_len = k->key_len;
    }
    return sh;
}
static void fwd_attention(FDCase* k) {  // self-attention on qkv rows x, or cross-attention of x on x2
    const float* kv = k->Tk ? k->x2 : k->x + k->C;
    attention_forward(k->out, k->scores, k->probs, k->dropped, k->x, kv, fd_attention_shape(k), &k->drop);
}
static void fwd_gelu(FDCase* k) { gelu_forward(k->out, k->x, (size_t)k->B * k->T * k->C); }
static void fwd_relu(FDCase* k) { relu_forward(k->out, k->x, (size_t)k->B * k->T * k->C); }
static void fwd_relu2(FDCase* k) { relu2_forward(k->out, k->x, (size_t)k->B * k->T * k->C); }
static void fwd_rope(FDCase* k) {  // k->w holds the angles; rows of 3C, Q and K rotated (hs 4)
    memcpy(k->out, k->x, (size_t)k->B * k->T * 3 * k->C * sizeof(float));
    rope_forward(k->out, k->w, k->B, k->T, 3 * k->C, 2 * k->NH, 4, 0);
}
static void fwd_residual(FDCase* k) { residual_forward(k->out, k->x, k->x2, (size_t)k->B * k->T * k->C); }
static void fwd_dropout(FDCase* k) {
    size_t n = (size_t)k->B * k->T * k->C;
    memcpy(k->out, k->x, n * sizeof(float));
    dropout_forward(k->out, n, &k->drop);
}
// softmax + cross-entropy: "out" is the per-position loss, R = 1/BT makes f the mean loss
static void fwd_crossentropy(FDCase* k) {
    softmax_forward(k->probs, k->x, k->B * k->T, k->V, k->Vp);
    crossentropy_forward(k->out, k->probs, k->tokens, k->B * k->T, k->Vp);
}

static void test_finite_differences(void) {
    printf("-- finite differences of every layer's backward\n");
    uint64_t rng = 424242;
    FDCase k = {.B = 2, .T = 5, .C = 12, .NH = 3, .OC = 7, .V = 9, .Vp = 16, .NKV = 3, .causal = 1};
    size_t BT = (size_t)k.B * k.T, BTC = BT * k.C, att = (size_t)k.B * 4 * k.T * k.T;  // NH up to 4
    k.out = zeros(BT * 3 * k.C + BT * k.Vp);
    k.R = random_floats(&rng, BT * 3 * k.C + BT * k.Vp, 0.0f, 1.0f);
    k.tokens = mallocCheck(BT * sizeof(int));
    for (size_t i = 0; i < BT; i++)
        k.tokens[i] = (int)(random_u64(&rng) % 4);  // repeats: rows of dwte add up
    k.mean = zeros(BT); k.rstd = zeros(BT);
    k.scores = zeros(att); k.probs = zeros(att + BT * k.Vp); k.dropped = zeros(att);

    // encoder: wte (V,C), wpe (T,C)
    k.w = random_floats(&rng, (size_t)k.V * k.C, 0, 1); k.b = random_floats(&rng, (size_t)k.T * k.C, 0, 1);
    float *dw = zeros((size_t)k.V * k.C), *db = zeros((size_t)k.T * k.C);
    encoder_backward(dw, db, k.R, k.tokens, k.B, k.T, k.C, GRAD_ADD);
    fd_check("encoder dwte", &k, fwd_encoder, BTC, k.w, (size_t)k.V * k.C, dw);
    fd_check("encoder dwpe", &k, fwd_encoder, BTC, k.b, (size_t)k.T * k.C, db);
    free(k.w); free(k.b); free(dw); free(db);

    // layernorm: x (BT,C), weight and bias (C)
    k.x = random_floats(&rng, BTC, 0.5f, 2.0f);
    k.w = random_floats(&rng, k.C, 1.0f, 0.5f);
    k.b = random_floats(&rng, k.C, 0, 0.5f);
    float* dx = zeros(BTC); dw = zeros(k.C); db = zeros(k.C);
    fwd_layernorm(&k);
    layernorm_backward(dx, dw, db, k.R, k.x, k.w, k.mean, k.rstd, (int)BT, k.C, GRAD_ADD);
    fd_check("layernorm dinp", &k, fwd_layernorm, BTC, k.x, BTC, dx);
    fd_check("layernorm dweight", &k, fwd_layernorm, BTC, k.w, k.C, dw);
    fd_check("layernorm dbias", &k, fwd_layernorm, BTC, k.b, k.C, db);
    free(k.x); free(k.w); free(k.b); free(dx); free(dw); free(db);

    // matmul, plain and fast: x (BT,C), weight (OC,C), bias (OC)
    for (k.fast = 0; k.fast <= 1; k.fast++) {
        k.x = random_floats(&rng, BTC, 0, 1);
        k.w = random_floats(&rng, (size_t)k.OC * k.C, 0, 1);
        k.b = random_floats(&rng, k.OC, 0, 1);
        dx = garbage(&rng, BTC); dw = zeros((size_t)k.OC * k.C); db = zeros(k.OC);
        if (k.fast) matmul_backward(dx, dw, db, k.R, k.x, k.w, (int)BT, k.C, k.OC, GRAD_ADD);
        else matmul_backward_plain(dx, dw, db, k.R, k.x, k.w, (int)BT, k.C, k.OC, GRAD_ADD);
        fd_check(k.fast ? "matmul (fast) dinp" : "matmul (plain) dinp", &k, fwd_matmul, BT * k.OC, k.x, BTC,
                 dx);
        fd_check(k.fast ? "matmul (fast) dweight" : "matmul (plain) dweight", &k, fwd_matmul, BT * k.OC, k.w,
                 (size_t)k.OC * k.C, dw);
        fd_check(k.fast ? "matmul (fast) dbias" : "matmul (plain) dbias", &k, fwd_matmul, BT * k.OC, k.b,
                 k.OC, db);
        free(k.x); free(k.w); free(k.b); free(dx); free(dw); free(db);
    }

    // attention: qkv (B,T,C3) -> out (B,T,C), without and with dropout on the probabilities;
    // multi-head, GQA (4 query heads over 2 K/V heads: dK and dV sum over a group), multi-query,
    // and without the mask
    int shapes[][4] = {{3, 3, 1, 0}, {3, 3, 1, 1}, {4, 2, 1, 1}, {3, 1, 1, 0}, {3, 3, 0, 1}, {4, 1, 0, 0}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        k.NH = shapes[si][0]; k.NKV = shapes[si][1]; k.causal = shapes[si][2];
        int dropping = shapes[si][3];
        size_t n = BT * (k.C + 2 * k.NKV * (k.C / k.NH));
        k.drop = dropout_mask(dropping ? 0.3f : 0.0f, 7, 3, 1, DROP_ATT_PROBS);
        k.x = random_floats(&rng, n, 0, 1);
        dx = garbage(&rng, n);
        fwd_attention(&k);
        attention_backward(dx, dx + k.C, k.R, k.x, k.x + k.C, k.probs, k.dropped, fd_attention_shape(&k),
                           &k.drop);
        char name[64];
        snprintf(name, sizeof name, "attention dqkv NH %d NKV %d%s%s", k.NH, k.NKV,
                 k.causal ? "" : " no mask", dropping ? " p 0.3" : "");
        fd_check(name, &k, fwd_attention, BTC, k.x, n, dx);
        free(k.x); free(dx);
    }
    k.NH = 3; k.NKV = 3; k.causal = 1;
    // -as: scores times 1 (none) and 2.5 instead of 1/sqrt(hs) = 0.5, the backward following
    float scales[2] = {1.0f, 2.5f};
    for (int si = 0; si < 2; si++) {
        size_t n = BT * 3 * k.C;
        k.scale = scales[si];
        k.drop = dropout_mask(0.0f, 7, 3, 1, DROP_ATT_PROBS);
        k.x = random_floats(&rng, n, 0, 1);
        dx = garbage(&rng, n);
        fwd_attention(&k);
        attention_backward(dx, dx + k.C, k.R, k.x, k.x + k.C, k.probs, k.dropped, fd_attention_shape(&k),
                           &k.drop);
        char name[64];
        snprintf(name, sizeof name, "attention dqkv NH 3 NKV 3 scale %g", k.scale);
        fd_check(name, &k, fwd_attention, BTC, k.x, n, dx);
        free(k.x); free(dx);
    }
    k.scale = 0.0f;

    // cross-attention: the T = 5 queries x (B,T,C) against Tk = 7 keys and values x2 (B,Tk,2 NKV hs),
    // sequence 1 padded after key 4 (its padded keys get exactly zero gradient, and so does the
    // difference quotient); multi-head and GQA, without and with dropout
    int key_len[2] = {7, 4}, cross_heads[][3] = {{3, 3, 0}, {4, 2, 0}, {3, 3, 1}, {4, 2, 1}};
    k.Tk = 7; k.key_len = key_len; k.causal = 0;
    float *self_scores = k.scores, *self_probs = k.probs, *self_dropped = k.dropped;
    size_t cross_att = (size_t)k.B * 4 * k.T * k.Tk;
    k.scores = zeros(cross_att); k.probs = zeros(cross_att); k.dropped = zeros(cross_att);
    for (size_t si = 0; si < sizeof cross_heads / sizeof cross_heads[0]; si++) {
        k.NH = cross_heads[si][0]; k.NKV = cross_heads[si][1];
        size_t n_kv = (size_t)k.B * k.Tk * 2 * k.NKV * (k.C / k.NH);
        k.drop = dropout_mask(cross_heads[si][2] ? 0.3f : 0.0f, 7, 3, 1, DROP_ATT_PROBS);
        k.x = random_floats(&rng, BTC, 0, 1); k.x2 = random_floats(&rng, n_kv, 0, 1);
        dx = garbage(&rng, BTC); float* dkv = garbage(&rng, n_kv);
        fwd_attention(&k);
        attention_backward(dx, dkv, k.R, k.x, k.x2, k.probs, k.dropped, fd_attention_shape(&k), &k.drop);
        char name_q[64], name_kv[64];
        const char* p03 = cross_heads[si][2] ? " p 0.3" : "";
        snprintf(name_q, sizeof name_q, "cross-attention dq NH %d NKV %d%s", k.NH, k.NKV, p03);
        snprintf(name_kv, sizeof name_kv, "cross-attention dkv NH %d NKV %d%s", k.NH, k.NKV, p03);
        fd_check(name_q, &k, fwd_attention, BTC, k.x, BTC, dx);
        fd_check(name_kv, &k, fwd_attention, BTC, k.x2, n_kv, dkv);
        free(k.x); free(k.x2); free(dx); free(dkv);
    }
    free(k.scores); free(k.probs); free(k.dropped);
    k.scores = self_scores; k.probs = self_probs; k.dropped = self_dropped;
    k.Tk = 0; k.key_len = NULL; k.NH = 3; k.NKV = 3; k.causal = 1;

    // RoPE: q and k of 3 + 3 heads of hs 4 rotated in rows of 3C; V's channels pass untouched
    float* angles = zeros((size_t)k.T * 4);
    rope_angles_init(angles, k.T, 4);
    k.w = angles;
    k.x = random_floats(&rng, 3 * BTC, 0, 1);
    dx = copy_floats(k.R, 3 * BTC);
    rope_backward(dx, angles, k.B, k.T, 3 * k.C, 2 * k.NH, 4);
    fd_check("rope dqk", &k, fwd_rope, 3 * BTC, k.x, 3 * BTC, dx);
    free(k.x); free(dx); free(angles);

    // GELU on [-4, 4]
    k.x = random_floats(&rng, BTC, 0, 2.0f); dx = garbage(&rng, BTC);
    gelu_backward(dx, k.x, k.R, BTC);
    fd_check("gelu dinp", &k, fwd_gelu, BTC, k.x, BTC, dx);
    free(k.x); free(dx);

    // ReLU, its inputs kept 0.05 away from the kink at 0 (where a difference of +-eps straddles it)
    k.x = random_floats(&rng, BTC, 0, 2.0f); dx = garbage(&rng, BTC);
    for (size_t i = 0; i < BTC; i++)
        k.x[i] += fabsf(k.x[i]) < 0.05f ? (k.x[i] < 0 ? -0.05f : 0.05f) : 0.0f;
    relu_backward(dx, k.x, k.R, BTC);
    fd_check("relu dinp", &k, fwd_relu, BTC, k.x, BTC, dx);
    free(k.x); free(dx);

    // squared ReLU: its gradient 2x is continuous at 0, so no input is kept from the kink
    k.x = random_floats(&rng, BTC, 0, 2.0f); dx = garbage(&rng, BTC);
    relu2_backward(dx, k.x, k.R, BTC);
    fd_check("relu2 dinp", &k, fwd_relu2, BTC, k.x, BTC, dx);
    free(k.x); free(dx);

    // residual: its backward is the identity (block_backward passes the gradient on),
    // so the finite differences must give dout itself for both inputs
    k.x = random_floats(&rng, BTC, 0, 1); k.x2 = random_floats(&rng, BTC, 0, 1);
    fd_check("residual dinp1", &k, fwd_residual, BTC, k.x, BTC, k.R);
    fd_check("residual dinp2", &k, fwd_residual, BTC, k.x2, BTC, k.R);
    free(k.x); free(k.x2);

    // dropout with a fixed mask (p = 0.3), for each of the residual-stream sites
    for (int site = DROP_EMBED; site <= DROP_MLP_OUT; site++) {
        if (site == DROP_ATT_PROBS) continue;  // checked inside attention above
        char name[64];
        snprintf(name, sizeof name, "dropout dinp (site %d)", site);
        k.drop = dropout_mask(0.3f, 11, 5, 2, site);
        k.x = random_floats(&rng, BTC, 0, 1); dx = garbage(&rng, BTC);
        dropout_backward(dx, k.R, BTC, &k.drop);
        fd_check(name, &k, fwd_dropout, BTC, k.x, BTC, dx);
        free(k.x); free(dx);
    }

    // softmax + cross-entropy: logits (BT,Vp) with V < Vp; padding must get gradient 0
    k.x = random_floats(&rng, BT * k.Vp, 0, 2.0f); dx = garbage(&rng, BT * k.Vp);
    for (size_t i = 0; i < BT; i++)
        k.tokens[i] = (int)(random_u64(&rng) % k.V);
    float* saved_R = k.R;
    k.R = zeros(BT);
    for (size_t i = 0; i < BT; i++)
        k.R[i] = 1.0f / BT;
    fwd_crossentropy(&k);
    crossentropy_softmax_backward(dx, k.R, k.probs, k.tokens, (int)BT, k.V, k.Vp);
    fd_check("softmax+crossentropy dlogits", &k, fwd_crossentropy, BT, k.x, BT * k.Vp, dx);
    int padding_zero = 1;
    for (size_t i = 0; i < BT; i++)
        for (int v = k.V; v < k.Vp; v++)
            padding_zero &= dx[i * k.Vp + v] == 0.0f && k.probs[i * k.Vp + v] == 0.0f;
    check(padding_zero, "padded vocabulary entries get probability 0 and gradient 0");
    free(k.R); k.R = saved_R;
    free(k.x); free(dx);
    free(k.out); free(k.R); free(k.tokens); free(k.mean); free(k.rstd);
    free(k.scores); free(k.probs); free(k.dropped);
}

// ----------------------------------------------------------------------------
// the fast matmul against the plain one, on awkward shapes

static void test_fast_matmul(void) {
    printf("-- fast matmul (sgemm) against the plain loops\n");
    int shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {33, 47, 101}, {64, 128, 384}, {130, 96, 200}, {768, 128, 512},
                       {5, 300, 17}};
    uint64_t rng = 99;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int BT = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
        float *x = random_floats(&rng, (size_t)BT * C, 0, 1), *w = random_floats(&rng, (size_t)OC * C, 0, 1);
        float *b = random_floats(&rng, OC, 0, 1), *dy = random_floats(&rng, (size_t)BT * OC, 0, 1);
        float *y1 = zeros((size_t)BT * OC), *y2 = zeros((size_t)BT * OC);
        float *dx1 = random_floats(&rng, (size_t)BT * C, 0, 1);
        float *dw1 = random_floats(&rng, (size_t)OC * C, 0, 1);
        float *dx2 = mallocCheck((size_t)BT * C * 4), *dw2 = mallocCheck((size_t)OC * C * 4);
        float *db1 = zeros(OC), *db2 = zeros(OC);
        // dweight accumulates, dinp is overwritten
        memcpy(dx2, dx1, (size_t)BT * C * 4); memcpy(dw2, dw1, (size_t)OC * C * 4);
        matmul_forward_plain(y1, x, w, b, BT, C, OC);
        matmul_forward(y2, x, w, b, BT, C, OC);
        matmul_backward_plain(dx1, dw1, db1, dy, x, w, BT, C, OC, GRAD_ADD);
        matmul_backward(dx2, dw2, db2, dy, x, w, BT, C, OC, GRAD_ADD);
        float ey = rel(compare(y2, y1, 1, (size_t)BT * OC, 0));
        float ex = rel(compare(dx2, dx1, 1, (size_t)BT * C, 0));
        float ew = rel(compare(dw2, dw1, 1, (size_t)OC * C, 0)), eb = rel(compare(db2, db1, 1, OC, 0));
        float worst = fmaxf(fmaxf(ey, ex), fmaxf(ew, eb));
        check(worst <= TOL_FAST_REL,
              "matmul BT=%d C=%d OC=%d: out %.1e dinp %.1e dweight %.1e dbias %.1e (relative to max)",
              BT, C, OC, ey, ex, ew, eb);
        free(x); free(w); free(b); free(dy); free(y1); free(y2);
        free(dx1); free(dw1); free(dx2); free(dw2); free(db1); free(db2);
    }
}

// add_weighted_rows (the register-blocked sums of the bias gradients, with weight stride
// 0, and of the KV cache's attention) against a plain loop,
// for widths that take each of its 64-, 32-, 16-wide and scalar paths
static void test_weighted_rows(void) {
    printf("-- add_weighted_rows against a plain double-precision loop\n");
    int widths[] = {1, 15, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100, 128, 130};
    int counts[] = {1, 7, 70};
    int w_strides[] = {0, 1, 3};  // 0: one weight for every row (the bias gradient's use)
    uint64_t rng = 31;
    float worst = 0.0f;
    int cases = 0;
    for (size_t wi = 0; wi < sizeof widths / sizeof widths[0]; wi++)
        for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
            for (size_t si = 0; si < sizeof w_strides / sizeof w_strides[0]; si++) {
                int n = widths[wi], count = counts[ci], w_stride = w_strides[si];
                size_t stride = (size_t)n + 5;
                float* w = random_floats(&rng, (size_t)(count - 1) * w_stride + 1, 0, 1);
                float* rows = random_floats(&rng, (size_t)count * stride, 0, 1);
                float* out = random_floats(&rng, n, 0, 1);
                float* expect = mallocCheck(n * sizeof(float));
                float scale = 0.0f;
                for (int i = 0; i < n; i++) {
                    double sum = out[i], mag = fabs(out[i]);
                    for (int t = 0; t < count; t++) {
                        sum += (double)w[t * w_stride] * rows[t * stride + i];
                        mag += fabs((double)w[t * w_stride] * rows[t * stride + i]);
                    }
                    expect[i] = (float)sum;
                    if (mag > scale) scale = (float)mag;
                }
                add_weighted_rows(out, w, w_stride, rows, stride, count, n);
                float e = compare(out, expect, 1, n, 0).max_abs / scale;
                if (!(e <= worst)) worst = e;
                cases++;
                free(w); free(rows); free(out); free(expect);
            }
    check(worst <= 1e-6f,
          "add_weighted_rows on %d shapes: worst error %.1e relative to the sum of magnitudes", cases, worst);
}

// ----------------------------------------------------------------------------
// the speed engine (fast/) against its plain twins: every fast kernel names its plain
// twin, and each has a test here

// the plain twin of sgemm_bias (fast/gemm.c): the triple loop. C (M,N) = op(A) op(B) + bias,
// or C += op(A) op(B) with accumulate (bias ignored then); op(A) is A, or A^T with transA
// (A then stored (K,M)); likewise op(B) (B stored (K,N), or (N,K) with transB). Row strides
// lda, ldb, ldc.
static void sgemm_plain(int transA, int transB, int M, int N, int K, const float* A, int lda,
                        const float* B, int ldb, float* C, int ldc, int accumulate, const float* bias) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++) {
                float a = transA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                float b = transB ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                sum += a * b;
            }
            float* c = C + (size_t)i * ldc + j;
            *c = accumulate ? *c + sum : sum + (bias ? bias[j] : 0.0f);
        }
}

// ours against ref, two buffers of n floats that hold an M x N view at offset off with row
// stride ld: the largest error inside the view relative to the largest |ref| there. Outside
// the view nothing may change: *outside counts the floats there that differ from ref at all.
static float view_error(const float* ours, const float* ref, size_t n, size_t off, int M, int N, int ld,
                        int* outside) {
    float e = 0.0f, m = 0.0f;
    for (size_t idx = 0; idx < n; idx++) {
        size_t r = (idx - off) / ld, c = (idx - off) % ld;
        if (idx >= off && r < (size_t)M && c < (size_t)N) {
            float d = fabsf(ours[idx] - ref[idx]);
            if (!(d <= e)) e = d;  // NaN counts as the largest error
            if (fabsf(ref[idx]) > m) m = fabsf(ref[idx]);
        } else if (memcmp(&ours[idx], &ref[idx], sizeof(float)) != 0) {
            (*outside)++;
        }
    }
    return m > 0 ? e / m : e;
}

// n floats uniform in [-1, 1): cheaper than random_floats' normals for big matrices
static float* uniform_floats(uint64_t* rng, size_t n) {
    float* p = mallocCheck(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; i++)
        p[i] = 2.0f * random_f32(rng) - 1.0f;
    return p;
}


// sgemm_bias against sgemm_plain: the four transpose combinations, each with C = op(A) op(B),
// = op(A) op(B) + bias, += op(A) op(B), and += with a bias that must be ignored; on sizes at
// every edge of the blocking, with row strides wider than the rows (padding that must not be
// read into the result nor written), on one thread and on several.
// (relative to the largest |C|)
#define TOL_SGEMM_REL 2e-6f     // measured worst 9.0e-7 (K = 513: float sums in two orders)
#define TOL_PRODUCTS_REL 5e-7f  // measured worst 2.3e-7 (the head slices, K <= 64)
// sets the cache blocks of fast/gemm_kernel.h (MC rows of op(A), NC columns of op(B)); returns
// the previous ones
static GemmBlocking set_blocking(int mc, int nc) {
    GemmBlocking old = *gemm_blocking();
    gemm_blocks.mc = mc, gemm_blocks.nc = nc;
    return old;
}

static void test_sgemm(void) {
    // (the blocks these shapes straddle: the constants, whatever the caches of this CPU)
    GemmBlocking saved = set_blocking(GEMM_MC_FIXED, GEMM_NC_FIXED);
    printf("-- sgemm_bias against sgemm_plain (kernel %s; blocking MR=%d NR=%d KC=%d MC=%d NC=%d)\n",
           GEMM_KERNEL_NAME, GEMM_MR, GEMM_NR, GEMM_KC, GEMM_MC_FIXED, GEMM_NC_FIXED);
#ifdef _OPENMP
    int saved_threads = omp_get_max_threads();
    if (saved_threads < 2) omp_set_num_threads(2);  // the threaded path even on one core
#endif
    // M, N, K: 1; 13, 14, 15 around MR; 31, 32, 33 around NR; 255, 256, 257 around KC;
    // M > MC = 168; N > NC = 768; K = 0 (the empty sum: C = bias)
    // the last four on several threads (M N K >= 1e6: sgemm_threads); in the last, each
    // thread's share of N spans two blocks of columns, so its op(A) (2 blocks of M, 2 of K)
    // is packed once and read again (keep_A in fast/gemm.c)
    int shapes[][3] = {{1, 1, 1}, {13, 31, 255}, {14, 32, 256}, {15, 33, 257}, {1, 33, 14}, {15, 1, 31},
                       {14, 33, 513}, {20, 769, 33}, {5, 7, 0}, {169, 24, 257}, {15, 800, 90}, {170, 800, 8},
                       {170, 1540, 260}};
    uint64_t rng = 1234;
    int single = 0, multi = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        int threads = sgemm_threads(M, N, K);
        float worst = 0.0f;
        int outside = 0;
        for (int tA = 0; tA <= 1; tA++)
            for (int tB = 0; tB <= 1; tB++)
                for (int mode = 0; mode < 4; mode++) {
                    int accumulate = mode >= 2;
                    int lda = (tA ? M : K) + 3, ldb = (tB ? K : N) + 5, ldc = N + 7;
                    size_t na = (size_t)(tA ? K : M) * lda, nb = (size_t)(tB ? N : K) * ldb;
                    size_t nc = (size_t)M * ldc;
                    float *A = uniform_floats(&rng, na), *B = uniform_floats(&rng, nb);
                    float *bias = uniform_floats(&rng, N), *C = uniform_floats(&rng, nc);
                    float* ref = copy_floats(C, nc);
                    const float* b = mode & 1 ? bias : NULL;
                    sgemm_bias(NULL, tA, tB, M, N, K, A, lda, B, ldb, C, ldc, accumulate, b);
                    sgemm_plain(tA, tB, M, N, K, A, lda, B, ldb, ref, ldc, accumulate, b);
                    float e = view_error(C, ref, nc, 0, M, N, ldc, &outside);
                    if (!(e <= worst)) worst = e;
                    free(A); free(B); free(bias); free(C); free(ref);
                }
        single += threads == 1;
        multi += threads > 1;
        check(worst <= TOL_SGEMM_REL && outside == 0,
              "sgemm M=%d N=%d K=%d (%d thread%s), 4 transposes x (=, = + bias, +=, += ignoring bias): "
              "worst %.1e relative to max (tolerance %.0e), %d padding floats changed",
              M, N, K, threads, threads > 1 ? "s" : "", worst, TOL_SGEMM_REL, outside);
    }
#ifdef _OPENMP
    check(single > 0 && multi > 0, "sgemm: %d products ran on one thread, %d on several", single, multi);
    omp_set_num_threads(saved_threads);
#else
    (void)single; (void)multi;
#endif
    gemm_blocks = saved;
}

// The cache blocks follow the CPU (fast/gemm_kernel.h): the products must not. The same
// products, float32 and bf16, every transpose, with this CPU's blocks, the constants and
// blocks of 2 x MR rows and 3 x NR columns: the same bits.
static void test_blocking_bits(void) {
    uint64_t rng = 4321;
    int M = 197, N = 1601, K = 600, differ = 0;
    GemmBlocking here = *gemm_blocking();
    int blocks[3][2] = {{here.mc, here.nc}, {GEMM_MC_FIXED, GEMM_NC_FIXED}, {2 * GEMM_MR, 3 * GEMM_NR}};
    float* A = uniform_floats(&rng, (size_t)M * K);
    float* B = uniform_floats(&rng, (size_t)K * N);
    float* C[3];
    for (int prec = GEMM_FP32; prec <= GEMM_BF16; prec++)
        for (int tA = 0; tA < 2; tA++)
            for (int tB = 0; tB < 2; tB++) {
                GemmPrecision p = {.kind = prec};
                for (int b = 0; b < 3; b++) {
                    C[b] = zeros((size_t)M * N);
                    set_blocking(blocks[b][0], blocks[b][1]);
                    sgemm_bias(&p, tA, tB, M, N, K, A, tA ? M : K, B, tB ? K : N, C[b], N, 0, NULL);
                }
                differ += memcmp(C[0], C[1], sizeof(float) * M * N) != 0;
                differ += memcmp(C[0], C[2], sizeof(float) * M * N) != 0;
                for (int b = 0; b < 3; b++) free(C[b]);
            }
    gemm_blocks = here;
    free(A); free(B);
    check(differ == 0, "sgemm %dx%dx%d, fp32 and bf16, 4 transposes: the same bits with this CPU's blocks "
          "(%s), MC %d NC %d and MC %d NC %d", M, N, K, gemm_blocking_describe(), GEMM_MC_FIXED, GEMM_NC_FIXED,
          2 * GEMM_MR, 3 * GEMM_NR);
}

// the named products of attention (matmul_ABt, matmul_AB, matmul_AtB) against sgemm_plain,
// on a head's slices as attention passes them: Q_h, K_h, V_h are hs columns of rows of 3C,
// dQ_h.. likewise, out_h and dout_h hs columns of rows of C
static void test_gemm_products(void) {
    printf("-- matmul_ABt, matmul_AB, matmul_AtB against sgemm_plain on strided head slices\n");
    int cases[][3] = {{1, 8, 1}, {15, 24, 3}, {17, 48, 2}, {33, 64, 4}, {64, 40, 2}};  // T, C, NH
    uint64_t rng = 4321;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int T = cases[ci][0], C = cases[ci][1], NH = cases[ci][2], hs = C / NH, C3 = 3 * C, h = NH - 1;
        size_t nqkv = (size_t)T * C3, ny = (size_t)T * C, natt = (size_t)T * (T + 2);
        float *qkv = uniform_floats(&rng, nqkv), *P = uniform_floats(&rng, (size_t)T * T);
        float *dy = uniform_floats(&rng, ny);
        const float *q = qkv + h * hs, *k = q + C, *v = q + 2 * C;
        int outside = 0;
        // S = Q_h K_h^T (attention step 1), into a (T,T) matrix of row stride T + 2
        float *S = uniform_floats(&rng, natt), *S_ref = copy_floats(S, natt);
        matmul_ABt(S, T + 2, q, C3, k, C3, T, T, hs);
        sgemm_plain(0, 1, T, T, hs, q, C3, k, C3, S_ref, T + 2, 0, NULL);
        float e_abt = view_error(S, S_ref, natt, 0, T, T, T + 2, &outside);
        // out_h = P V_h (forward step 8), into hs columns of rows of C
        float *O = uniform_floats(&rng, ny), *O_ref = copy_floats(O, ny);
        matmul_AB(O + h * hs, C, P, T, v, C3, T, hs, T);
        sgemm_plain(0, 0, T, hs, T, P, T, v, C3, O_ref + h * hs, C, 0, NULL);
        float e_ab = view_error(O, O_ref, ny, h * hs, T, hs, C, &outside);
        // dV_h = P^T dout_h (backward step 2), into hs columns of rows of 3C
        float *D = uniform_floats(&rng, nqkv), *D_ref = copy_floats(D, nqkv);
        matmul_AtB(D + 2 * C + h * hs, C3, P, T, dy + h * hs, C, T, hs, T);
        sgemm_plain(1, 0, T, hs, T, P, T, dy + h * hs, C, D_ref + 2 * C + h * hs, C3, 0, NULL);
        float e_atb = view_error(D, D_ref, nqkv, 2 * C + h * hs, T, hs, C3, &outside);
        check(fmaxf(e_abt, fmaxf(e_ab, e_atb)) <= TOL_PRODUCTS_REL && outside == 0,
              "head slices T=%d C=%d NH=%d (hs %d): ABt %.1e, AB %.1e, AtB %.1e relative to max "
              "(tolerance %.0e); %d floats outside the views changed",
              T, C, NH, hs, e_abt, e_ab, e_atb, TOL_PRODUCTS_REL, outside);
        free(qkv); free(P); free(dy); free(S); free(S_ref); free(O); free(O_ref); free(D); free(D_ref);
    }
}

// Plain twin of the float32 micro-kernel (fast/gemm_kernel.h's gemm_kernel): C[m x n] = sums
// (+ bias), or C += sums, each sum a chain over k from 0: one fused multiply-add per k where
// the build's kernel uses FMA instructions (VEC_FUSED, fast/vec.h), else a product, then a sum
static void gemm_kernel_plain(int kc, const float* a, const float* b, float* C, int ldc, int m, int n,
                              int overwrite, const float* bias) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int k = 0; k < kc; k++) {
#if VEC_FUSED
                acc = fmaf(a[(size_t)k * GEMM_MR + i], b[(size_t)k * GEMM_NR + j], acc);
#else
                float p = a[(size_t)k * GEMM_MR + i] * b[(size_t)k * GEMM_NR + j];
                acc = acc + p;
#endif
            }
            float* c = C + (size_t)i * ldc + j;
            *c = !overwrite ? *c + acc : bias ? acc + bias[j] : acc;
        }
}

// The build's micro-kernel (GEMM_KERNEL_NAME: AVX-512, AVX2, NEON, SSE2 or generic) against
// its plain twin, bit for bit: every m = 1..GEMM_MR, n around the vector width and GEMM_NR,
// kc = 1, 37 and GEMM_KC; =, = + bias, +=; in a C whose row stride is wider than the tile,
// and nothing written outside the m x n corner
static void test_kernel_plain(void) {
    uint64_t rng = 77;
    int kcs[] = {1, 37, GEMM_KC}, ns[] = {1, GEMM_VW - 1, GEMM_VW, GEMM_VW + 1, GEMM_NR - 1, GEMM_NR};
    int ldc = GEMM_NR + 3, cases = 0, differ = 0;
    size_t nc = (size_t)(GEMM_MR + 1) * ldc;
    for (int t = 0; t < 3; t++) {
        int kc = kcs[t];
        float* a = compat_aligned_alloc(64, ((size_t)kc * GEMM_MR * 4 + 63) / 64 * 64);
        float* b = compat_aligned_alloc(64, ((size_t)kc * GEMM_NR * 4 + 63) / 64 * 64);
        float *ua = uniform_floats(&rng, (size_t)kc * GEMM_MR), *ub = uniform_floats(&rng, (size_t)kc * GEMM_NR);
        memcpy(a, ua, (size_t)kc * GEMM_MR * 4);
        memcpy(b, ub, (size_t)kc * GEMM_NR * 4);
        float *bias = uniform_floats(&rng, GEMM_NR), *C0 = uniform_floats(&rng, nc);
        float* C1 = mallocCheck(nc * 4);
        float* C2 = mallocCheck(nc * 4);
        for (int m = 1; m <= GEMM_MR; m++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                for (int mode = 0; mode < 3; mode++) {
                    int n = ns[ni], overwrite = mode < 2;
                    if (n < 1 || n > GEMM_NR) continue;
                    const float* bi = mode == 1 ? bias : NULL;
                    memcpy(C1, C0, nc * 4);
                    memcpy(C2, C0, nc * 4);
                    gemm_kernels.f32(kc, a, b, C1, ldc, m, n, overwrite, bi);
                    gemm_kernel_plain(kc, a, b, C2, ldc, m, n, overwrite, bi);
                    differ += memcmp(C1, C2, nc * 4) != 0;
                    cases++;
                }
        aligned_free(a); aligned_free(b); free(ua); free(ub); free(bias); free(C0); free(C1); free(C2);
    }
    check(differ == 0, "micro-kernel %s against its plain twin (%s): %d of %d tiles differ (m = 1..%d, "
          "n = 1..%d, kc = 1, 37, %d; =, = + bias, +=), bit for bit", GEMM_KERNEL_NAME,
          VEC_FUSED ? "fused multiply-adds" : "products, then sums", differ, cases, GEMM_MR, GEMM_NR, GEMM_KC);
}

// The micro-kernels on an edge panel of m < GEMM_MR rows compute 2, 4 or 8 rows when they hold
// m (GEMM_BY_ROWS in fast/gemm_kernel.h) and store m; each element is its own chain of sums, so
// the m rows must be bit for bit the full tile's first m rows: float32 and bf16, = (with a
// bias) and +=
static void test_kernel_edge_rows(void) {
    uint64_t rng = 99;
    int kc = 37, differ = 0;
    float* a = compat_aligned_alloc(64, ((size_t)kc * GEMM_MR * 4 + 63) / 64 * 64);
    float* b = compat_aligned_alloc(64, (size_t)kc * GEMM_NR * 4);
    float* ua = uniform_floats(&rng, (size_t)kc * GEMM_MR);
    float* ub = uniform_floats(&rng, (size_t)kc * GEMM_NR);
    float* bias = uniform_floats(&rng, GEMM_NR);
    for (int bf16 = 0; bf16 < 2; bf16++)
        for (int overwrite = 0; overwrite < 2; overwrite++) {
            for (int i = 0; i < kc * GEMM_MR; i++)  // floats, or pairs of bf16 (kc pairs deep)
                if (bf16) ((uint32_t*)a)[i] = bf16_pair(ua[i], -ua[i]); else a[i] = ua[i];
            for (int i = 0; i < kc * GEMM_NR; i++)
                if (bf16) ((uint32_t*)b)[i] = bf16_pair(ub[i], 0.5f * ub[i]); else b[i] = ub[i];
            float full[GEMM_MR * GEMM_NR], part[GEMM_MR * GEMM_NR];
            for (int i = 0; i < GEMM_MR * GEMM_NR; i++) full[i] = 0.01f * (float)i;
            if (bf16) gemm_kernels.bf16(kc, (const uint32_t*)a, (const uint32_t*)b, full, GEMM_NR, GEMM_MR,
                                       GEMM_NR, overwrite, bias);
            else gemm_kernels.f32(kc, a, b, full, GEMM_NR, GEMM_MR, GEMM_NR, overwrite, bias);
            for (int m = 1; m < GEMM_MR; m++) {
                for (int i = 0; i < GEMM_MR * GEMM_NR; i++) part[i] = 0.01f * (float)i;
                if (bf16) gemm_kernels.bf16(kc, (const uint32_t*)a, (const uint32_t*)b, part, GEMM_NR, m,
                                           GEMM_NR, overwrite, bias);
                else gemm_kernels.f32(kc, a, b, part, GEMM_NR, m, GEMM_NR, overwrite, bias);
                differ += memcmp(part, full, (size_t)m * GEMM_NR * 4) != 0;  // its m rows
                for (int i = m * GEMM_NR; i < GEMM_MR * GEMM_NR; i++)       // rows past m untouched
                    differ += part[i] != 0.01f * (float)i;
            }
        }
    check(differ == 0, "micro-kernels on edge panels (m = 1..%d rows): the full tile's rows bit for bit, "
          "float32 and bf16, = + bias and +=, and nothing written past row m", GEMM_MR - 1);
    aligned_free(a); aligned_free(b); free(ua); free(ub); free(bias);
}

#ifndef USE_BLAS
// C (a team's product) is bit for bit one thread's (the other arguments: for make BLAS=1)
static int same_product(const float* C, const float* one, size_t nc, const float* C0, int tA, int tB, int M,
                        int N, int K, const float* A, int lda, const float* B, int ldb, int ldc,
                        int accumulate, const float* bias, int team) {
    (void)C0; (void)tA; (void)tB; (void)M; (void)N; (void)K; (void)A; (void)lda; (void)B; (void)ldb;
    (void)ldc; (void)accumulate; (void)bias; (void)team;
    return memcmp(C, one, nc * sizeof(float)) == 0;
}
#else
// make BLAS=1 (fast/blas.h): the library's kernels order an element's sums by where the
// element falls in the block it is given, so a team's product may differ from one thread's
// in the last bits: it must be within float rounding of it (2^-20 of the sum of |terms|),
// and the same team again (team 0: sgemm_bias) must give the same bits
static int same_product(const float* C, const float* one, size_t nc, const float* C0, int tA, int tB, int M,
                        int N, int K, const float* A, int lda, const float* B, int ldb, int ldc,
                        int accumulate, const float* bias, int team) {
    int ok = 1;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double size = accumulate ? fabs(C0[(size_t)i * ldc + j]) : fabs(bias[j]);
            for (int k = 0; k < K; k++)
                size += fabs((double)(tA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]) *
                             (tB ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j]));
            ok &= fabs((double)C[(size_t)i * ldc + j] - one[(size_t)i * ldc + j]) <= size * 0x1p-20;
        }
    float* again = copy_floats(C0, nc);
    for (int t = 0; t < (team ? team : 1); t++)
        if (team) sgemm_share(NULL, t, team, tA, tB, M, N, K, A, lda, B, ldb, again, ldc, accumulate, bias);
        else sgemm_bias(NULL, tA, tB, M, N, K, A, lda, B, ldb, again, ldc, accumulate, bias);
    ok &= memcmp(again, C, nc * sizeof(float)) == 0;
    free(again);
    return ok;
}
#endif

// determinism: sgemm_share's shares t = 0..T-1 of a team of T threads, called one after
// another, give exactly the C of sgemm_share(0, 1, ...), and so does sgemm_bias on as many
// threads as it likes: the result does not depend on the thread count. (make BLAS=1: within
// rounding of it, and the same bits for the same team: same_product above.)
static void test_sgemm_shares(void) {
    printf("-- sgemm_share: teams of 1, 2 and 3 give bit-identical products\n");
    // split by rows (M >= N) and by columns (N > M), shares of unequal size, a team larger than
    // the panels (M = 14, N = 10: one panel), K over several KC blocks
    int shapes[][3] = {{100, 40, 300}, {20, 200, 257}, {170, 800, 50}, {14, 10, 5}, {45, 45, 600}};
    uint64_t rng = 555;
#ifdef _OPENMP
    int saved_threads = omp_get_max_threads();
    if (saved_threads < 2) omp_set_num_threads(2);  // sgemm_bias on several threads even on one core
#endif
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], same = 1, runs = 0;
        for (int tA = 0; tA <= 1; tA++)
            for (int tB = 0; tB <= 1; tB++)
                for (int accumulate = 0; accumulate <= 1; accumulate++) {
                    int lda = (tA ? M : K) + 1, ldb = (tB ? K : N) + 2, ldc = N + 3;
                    size_t na = (size_t)(tA ? K : M) * lda, nb = (size_t)(tB ? N : K) * ldb;
                    size_t nc = (size_t)M * ldc;
                    float *A = uniform_floats(&rng, na), *B = uniform_floats(&rng, nb);
                    float *bias = uniform_floats(&rng, N), *C0 = uniform_floats(&rng, nc);
                    float* one = copy_floats(C0, nc);
                    sgemm_share(NULL, 0, 1, tA, tB, M, N, K, A, lda, B, ldb, one, ldc, accumulate, bias);
                    for (int team = 2; team <= 3; team++) {
                        float* C = copy_floats(C0, nc);
                        for (int t = 0; t < team; t++)
                            sgemm_share(NULL, t, team, tA, tB, M, N, K, A, lda, B, ldb, C, ldc, accumulate, bias);
                        same &= same_product(C, one, nc, C0, tA, tB, M, N, K, A, lda, B, ldb, ldc, accumulate,
                                             bias, team);
                        free(C);
                    }
                    float* C = copy_floats(C0, nc);
                    sgemm_bias(NULL, tA, tB, M, N, K, A, lda, B, ldb, C, ldc, accumulate, bias);
                    same &= same_product(C, one, nc, C0, tA, tB, M, N, K, A, lda, B, ldb, ldc, accumulate,
                                         bias, 0);
                    runs++;
                    free(C); free(A); free(B); free(bias); free(C0); free(one);
                }
        int threads = sgemm_threads(M, N, K);
#ifndef USE_BLAS
        const char* what = "the bits of one thread";
#else
        const char* what = "one thread's product within 2^-20 of its size, and their own bits again (BLAS=1)";
#endif
        check(same, "sgemm_share M=%d N=%d K=%d: teams of 2 and 3 and sgemm_bias (%d thread%s) give %s, "
              "in all %d transpose/accumulate cases", M, N, K, threads, threads > 1 ? "s" : "", what, runs);
    }
#ifdef _OPENMP
    omp_set_num_threads(saved_threads);
#endif
}

// exp_approx and tanh_approx (fast/approx.h) against expf and tanhf
#define TOL_EXP_REL 2e-7f     // measured worst 1.19e-7 (one float ulp) on 2 million points of [-87, 88]
#define TOL_TANH_ABS 2.5e-7f  // measured worst 1.79e-7 on 1 million points of [-10, 10]
static void test_exp_tanh(void) {
    printf("-- exp_approx against expf, tanh_approx against tanhf\n");
    const int n = 2000000;
    float worst = 0.0f, worst_x = 0.0f;
    for (int i = 0; i < n; i++) {
        float x = (float)(-87.0 + 175.0 * i / (n - 1)), ref = expf(x);
        float e = fabsf(exp_approx(x) - ref) / ref;
        if (!(e <= worst)) { worst = e; worst_x = x; }
    }
    check(worst <= TOL_EXP_REL, "exp_approx on %d points of [-87, 88]: worst relative error %.2e at x = %.4f "
          "(tolerance %.0e)", n, worst, worst_x, TOL_EXP_REL);
    // outside [-87, 88] the input is clamped (e^x stays a normal float); NaN stays NaN
    float lo = exp_approx(-87.0f), hi = exp_approx(88.0f);
    int clamped = exp_approx(-INFINITY) == lo && exp_approx(-100.0f) == lo && exp_approx(INFINITY) == hi
                  && exp_approx(100.0f) == hi && lo > 0.0f && lo < 2e-38f && isfinite(hi) && hi > 1.6e38f;
    check(clamped && isnan(exp_approx(NAN)), "exp_approx(-inf) = exp_approx(-100) = e^-87 = %.3e, "
          "exp_approx(+inf) = exp_approx(100) = e^88 = %.3e, exp_approx(NaN) = %f", lo, hi, exp_approx(NAN));
    const int m = 1000000;
    worst = 0.0f;
    for (int i = 0; i < m; i++) {
        float u = (float)(-10.0 + 20.0 * i / (m - 1));
        float e = fabsf(tanh_approx(u) - tanhf(u));
        if (!(e <= worst)) { worst = e; worst_x = u; }
    }
    check(worst <= TOL_TANH_ABS, "tanh_approx on %d points of [-10, 10]: worst absolute error %.2e at "
          "u = %.4f (tolerance %.1e)", m, worst, worst_x, TOL_TANH_ABS);
}

// sum_of_squares and zero_floats (fast/buffers.h) against their plain twins: a double
// loop over the squares, and memset. The sum must also be the same bits on 1 thread and on
// all threads (the gradient norm, and so clipping, must not depend on the thread count).
#define TOL_SUMSQ_REL 1e-7f  // measured worst 1.9e-8 (float sums of 1024 squares, then double)
static void test_buffers(void) {
    printf("-- sum_of_squares against a double loop, zero_floats against memset\n");
    size_t ns[] = {1, 63, 1024, 1025, 100000, (1u << 20) + 3};
    uint64_t rng = 4242;
    float worst = 0.0f;
    int same_bits = 1, zeroed = 1;
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        size_t n = ns[k];
        float* g = random_floats(&rng, n + 1, 0.0f, 1.0f);
        double ref = 0.0;
        for (size_t i = 0; i < n; i++)
            ref += (double)g[i] * g[i];
        double all = sum_of_squares(g, n);
#ifdef _OPENMP
        int threads = omp_get_max_threads();
        omp_set_num_threads(1);
        double one = sum_of_squares(g, n);
        omp_set_num_threads(threads);
        same_bits &= memcmp(&one, &all, sizeof one) == 0;
#endif
        float e = (float)(fabs(all - ref) / ref);
        if (!(e <= worst)) worst = e;
        float sentinel = g[n];
        zero_floats(g, n);
        for (size_t i = 0; i < n; i++)
            zeroed &= g[i] == 0.0f;
        zeroed &= g[n] == sentinel;
        free(g);
    }
    check(worst <= TOL_SUMSQ_REL, "sum_of_squares, n = 1 .. 2^20+3: worst relative error %.1e "
          "(tolerance %.0e)", worst, TOL_SUMSQ_REL);
    check(same_bits, "sum_of_squares gives the same bits on one thread and on all threads");
    check(zeroed, "zero_floats zeroes exactly n floats");
}

// matvec_forward (fast/rows.h) against its plain twin, matmul_forward_plain with one row
// (relative to the largest |out|)
#define TOL_MATVEC_REL 2e-6f  // measured worst 9.9e-7 (IC = 768: float sums in two orders)
static void test_matvec(void) {
    printf("-- matvec_forward against matmul_forward_plain with BT = 1\n");
    int shapes[][2] = {{1, 1}, {17, 5}, {15, 3}, {33, 7}, {100, 6}, {128, 384}, {768, 2304}};  // IC, OC
    uint64_t rng = 2718;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int with_bias = 0; with_bias <= 1; with_bias++) {
            int IC = shapes[s][0], OC = shapes[s][1], outside = 0;
            float *x = uniform_floats(&rng, IC), *w = uniform_floats(&rng, (size_t)OC * IC);
            float *b = with_bias ? uniform_floats(&rng, OC) : NULL;
            float *out = uniform_floats(&rng, OC + 1), *ref = copy_floats(out, OC + 1);  // + 1: a sentinel
            matvec_forward(out, x, w, b, IC, OC);
            matmul_forward_plain(ref, x, w, b, 1, IC, OC);
            float e = view_error(out, ref, OC + 1, 0, 1, OC, OC + 1, &outside);
            check(e <= TOL_MATVEC_REL && outside == 0, "matvec_forward IC=%d OC=%d %s: error %.1e "
                  "relative to max (tolerance %.0e)%s", IC, OC, with_bias ? "with bias" : "no bias", e,
                  TOL_MATVEC_REL, outside ? ", wrote past out" : "");
            free(x); free(w); free(b); free(out); free(ref);
        }
}

// is alignedMallocCheck(n) aligned to align? The block is filled with 0xAB and freed: dirty
// memory for the next allocation of that size
static NOINLINE int malloc_aligned_dirty(size_t n, size_t align) {
    unsigned char* p = alignedMallocCheck(n);
    int ok = (uintptr_t)p % align == 0;
    memset(p, 0xAB, n);  // all of it usable
    aligned_free(p);
    return ok;
}

// alignedMallocCheck, alignedCallocCheck (fast/alloc.h): 64-byte aligned, 2 MiB aligned from
// 2 MiB up; the calloc variant zeroed (even where the allocator hands back dirty memory)
static void test_aligned_alloc(void) {
    printf("-- alignedMallocCheck, alignedCallocCheck\n");
    const size_t MiB2 = (size_t)2 << 20;
    size_t sizes[] = {1, 3, 64, 100, 4096, 65536, MiB2 - 4, MiB2, MiB2 + 4, 5 * MiB2 + 12};
    int aligned = 1, zeroed = 1;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s], align = n >= MiB2 ? MiB2 : 64;
        aligned &= malloc_aligned_dirty(n, align);  // dirty memory for the calloc to reuse
        unsigned char* z = alignedCallocCheck(n, 1);
        aligned &= (uintptr_t)z % align == 0;
        for (size_t i = 0; i < n; i++)
            zeroed &= z[i] == 0;
        aligned_free(z);
    }
    check(aligned, "alignedMallocCheck and alignedCallocCheck: 64-byte aligned below 2 MiB, 2 MiB aligned "
          "from 2 MiB (%zu sizes, 1 byte to 10 MiB)", sizeof sizes / sizeof sizes[0]);
    check(zeroed, "alignedCallocCheck returns zeroed memory (after freeing a dirty block of the same size)");
}

// ----------------------------------------------------------------------------
// the plain twin of attention_forward / attention_backward (train_gpt2.c): the same steps
// of the article "因果自注意力", each a plain loop over b, h, t, t2 and i, with expf for
// exp_approx; same arguments and shapes. Grep a step label to find both versions.

// the zero fields of an AttentionShape spelled out, and query t's last key (b's row of key_len)
typedef struct { int Tk, q_stride, kv_stride; } PlainSizes;
static PlainSizes plain_sizes(AttentionShape sh) {
    int C3 = sh.C + 2 * sh.NKV * (sh.C / sh.NH);
    return (PlainSizes){sh.Tk > 0 ? sh.Tk : sh.T, sh.q_stride > 0 ? sh.q_stride : C3,
                        sh.kv_stride > 0 ? sh.kv_stride : C3};
}
static int plain_last(AttentionShape sh, int Tk, int b, int t) {
    int last = sh.causal ? t : Tk - 1;
    if (sh.key_len && last > sh.key_len[b] - 1) last = sh.key_len[b] - 1;
    return last;
}

void attention_forward_plain(float* out, float* att_scores, float* att_probs, float* att_dropped,
                             const float* q, const float* kv, AttentionShape sh, const DropoutMask* drop) {
    PlainSizes z = plain_sizes(sh);
    int B = sh.B, T = sh.T, Tk = z.Tk, C = sh.C, NH = sh.NH, NKV = sh.NKV, hs = C / NH;
    float scale = sh.scale != 0.0f ? sh.scale : 1.0f / sqrtf((float)hs);  // -as, or the article's
    int dropping = drop && drop->p > 0.0f;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int t = 0; t < T; t++) {
                const float* qt = q + ((size_t)b * T + t) * z.q_stride + h * hs;  // query t of head h
                size_t row = (((size_t)b * NH + h) * T + t) * Tk;   // row t of the head's (T,Tk)
                int kvh = h / (NH / NKV), last = plain_last(sh, Tk, b, t);  // its K/V head (GQA), last key
                float* s = att_scores + row;
                float* p = att_probs + row;
                // step 1 (计算注意力分数): query t against every key t2
                for (int t2 = 0; t2 < Tk; t2++) {
                    const float* k = kv + ((size_t)b * Tk + t2) * z.kv_stride + kvh * hs;  // key t2
                    float dot = 0.0f;
                    for (int i = 0; i < hs; i++)
                        dot += qt[i] * k[i];
                    s[t2] = dot;
                }
                // step 2 (注意力分数缩放): times 1/sqrt(hs)
                for (int t2 = 0; t2 < Tk; t2++)
                    s[t2] *= scale;
                // step 3 (因果掩码): keys after t (the future) and from key_len[b] on (padding): -inf
                for (int t2 = last + 1; t2 < Tk; t2++)
                    s[t2] = -INFINITY;
                // step 4 (计算 att Softmax): exp(s - max) / sum over the keys up to last; the rest get 0
                // step 5: att_probs is the cache of this step's result
                float maxval = s[0];
                for (int t2 = 1; t2 <= last; t2++)
                    if (s[t2] > maxval) maxval = s[t2];
                float sum = 0.0f;
                for (int t2 = 0; t2 <= last; t2++)
                    sum += expf(s[t2] - maxval);
                for (int t2 = 0; t2 < Tk; t2++)
                    p[t2] = t2 <= last ? expf(s[t2] - maxval) / sum : 0.0f;
                // step 6 (对 att 应用 dropout): drop probabilities, scale the kept ones by 1/(1-p)
                // step 7: att_dropped is the cache of this step's result (without dropout: att_probs)
                const float* a = p;
                if (dropping) {
                    float* d = att_dropped + row;
                    for (int t2 = 0; t2 < Tk; t2++)
                        d[t2] = dropout_keep(drop, row + t2) ? p[t2] * drop->scale : 0.0f;
                    a = d;
                }
                // step 8 (计算 att · V): output t is the weighted sum of the values
                float* o = out + ((size_t)b * T + t) * C + h * hs;
                for (int i = 0; i < hs; i++) {
                    float acc = 0.0f;
                    for (int t2 = 0; t2 < Tk; t2++) {
                        const float* v = kv + ((size_t)b * Tk + t2) * z.kv_stride + (NKV + kvh) * hs;  // v_t2
                        acc += a[t2] * v[i];
                    }
                    o[i] = acc;
                }
            }
}

void attention_backward_plain(float* dq, float* dkv, const float* dout, const float* q, const float* kv,
                              const float* att_probs, const float* att_dropped,
                              AttentionShape sh, const DropoutMask* drop) {
    PlainSizes z = plain_sizes(sh);
    int B = sh.B, T = sh.T, Tk = z.Tk, C = sh.C, NH = sh.NH, NKV = sh.NKV, hs = C / NH;
    float scale = sh.scale != 0.0f ? sh.scale : 1.0f / sqrtf((float)hs);  // -as, or the article's
    int dropping = drop && drop->p > 0.0f;
    if (!dropping) att_dropped = att_probs;
    float* grad_att = mallocCheck((size_t)T * Tk * sizeof(float));  // one head's (T,Tk) gradient
    float* head_dkv = mallocCheck((size_t)Tk * 2 * hs * sizeof(float));  // one head's dK and dV rows
    for (int b = 0; b < B; b++) {  // written, not added to: the channels of Q, K and V are zeroed
        for (int t = 0; t < T; t++)
            for (int i = 0; i < C; i++)
                dq[((size_t)b * T + t) * z.q_stride + i] = 0.0f;
        for (int t2 = 0; t2 < Tk; t2++)
            for (int i = 0; i < 2 * NKV * hs; i++)
                dkv[((size_t)b * Tk + t2) * z.kv_stride + i] = 0.0f;
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            size_t head = ((size_t)b * NH + h) * T * Tk;
            int kvh = h / (NH / NKV);  // the shared K/V head (GQA): its gradients add up over the group
            for (int i = 0; i < Tk * 2 * hs; i++)
                head_dkv[i] = 0.0f;
            // step 1 (计算输入梯度对注意力的梯度): grad_att[t][t2] = dout_t . v_t2
            for (int t = 0; t < T; t++)
                for (int t2 = 0; t2 < Tk; t2++) {
                    const float* dy = dout + ((size_t)b * T + t) * C + h * hs;
                    const float* v = kv + ((size_t)b * Tk + t2) * z.kv_stride + (NKV + kvh) * hs;
                    float dot = 0.0f;
                    for (int i = 0; i < hs; i++)
                        dot += dy[i] * v[i];
                    grad_att[t * Tk + t2] = dot;
                }
            // step 2 (计算输入梯度对 V_h 的梯度): dv_t2 += att_dropped[t][t2] dout_t
            for (int t = 0; t < T; t++)
                for (int t2 = 0; t2 < Tk; t2++) {
                    const float* dy = dout + ((size_t)b * T + t) * C + h * hs;
                    float* dv = head_dkv + (size_t)t2 * 2 * hs + hs;
                    for (int i = 0; i < hs; i++)
                        dv[i] += att_dropped[head + t * Tk + t2] * dy[i];
                }
            for (int t = 0; t < T; t++) {
                float* g = grad_att + t * Tk;
                const float* p = att_probs + head + t * Tk;
                int last = plain_last(sh, Tk, b, t);
                // step 3 (dropout 层反向传播): the same mask as the forward, the same 1/(1-p)
                if (dropping)
                    for (int t2 = 0; t2 < Tk; t2++)
                        g[t2] = dropout_keep(drop, head + t * Tk + t2) ? g[t2] * drop->scale : 0.0f;
                // step 4 (Softmax 层反向传播): dS = P * (dP - sum_j P_j dP_j)
                float dot = 0.0f;
                for (int t2 = 0; t2 <= last; t2++)
                    dot += p[t2] * g[t2];
                for (int t2 = 0; t2 <= last; t2++)
                    g[t2] = p[t2] * (g[t2] - dot);
                // step 5 (因果掩码反向传播): masked scores (future, padding) were constants: gradient 0
                for (int t2 = last + 1; t2 < Tk; t2++)
                    g[t2] = 0.0f;
                // step 6 (缩放因子): the forward multiplied by 1/sqrt(hs), so does the backward
                for (int t2 = 0; t2 < Tk; t2++)
                    g[t2] *= scale;
            }
            // step 7 (计算对 Q_h 的梯度): dq_t += grad_att[t][t2] k_t2
            // step 8 (计算对 K_h 的梯度): dk_t2 += grad_att[t][t2] q_t
            for (int t = 0; t < T; t++)
                for (int t2 = 0; t2 < Tk; t2++) {
                    const float* qt = q + ((size_t)b * T + t) * z.q_stride + h * hs;
                    const float* k = kv + ((size_t)b * Tk + t2) * z.kv_stride + kvh * hs;
                    float* dqt = dq + ((size_t)b * T + t) * z.q_stride + h * hs;
                    float* dk = head_dkv + (size_t)t2 * 2 * hs;
                    for (int i = 0; i < hs; i++) {
                        dqt[i] += grad_att[t * Tk + t2] * k[i];
                        dk[i] += grad_att[t * Tk + t2] * qt[i];
                    }
                }
            // the head's dK and dV join its group's sum (as attention_backward: per head, in order)
            for (int t2 = 0; t2 < Tk; t2++)
                for (int i = 0; i < 2 * hs; i++) {
                    int channel = i < hs ? kvh * hs + i : (NKV + kvh) * hs + i - hs;  // in K, then in V
                    dkv[((size_t)b * Tk + t2) * z.kv_stride + channel] += head_dkv[t2 * 2 * hs + i];
                }
        }
    free(head_dkv);
    free(grad_att);
}

// the fast attention against the plain one: T = 1, 15, 17, 33, 64; head sizes 8 and 24 (not
// multiples of 16) and 16; multi-head, grouped-query (GQA) and multi-query; causal and
// unmasked; without and with dropout. Errors relative to the largest |value|.
// Measured worst: out 2.4e-7, scores 2.5e-7, probs 2.4e-7, dropped 2.5e-7, dinp 2.5e-7.
#define TOL_ATT_REL 5e-7f
// Unmasked, measured worst 5.3e-7 (probs): the absolute errors are the same 1-3 float ulps
// (at most 3.0e-7), but no row has a lone key of probability exactly 1 (the first row of a
// causal head), so the largest probability, the divisor, is about 0.5 instead of 1.
#define TOL_ATT_NOMASK_REL 1e-6f

// One call of attention_forward and attention_backward against their plain twins on random
// inputs. fused: self-attention on qkv rows (kv = q + C, dkv = dq + C); otherwise q and kv
// are separate buffers with the shape's row strides, and channels outside Q, K and V hold
// garbage that both must leave alone (dq and dkv start as the same garbage in both).
// e gets the largest relative errors of out, scores, probs, dropped, dq, dkv; the return
// value counts -inf mismatches, and 1 if att_dropped was written with dropout off.
static int attention_vs_plain(AttentionShape sh, int fused, const DropoutMask* dm, uint64_t* rng,
                              float e[6]) {
    AttentionShape z = attention_shape_filled(sh);
    size_t nq = (size_t)sh.B * sh.T * z.q_stride, nkv = fused ? 0 : (size_t)sh.B * z.Tk * z.kv_stride;
    size_t BTC = (size_t)sh.B * sh.T * sh.C, att = (size_t)sh.B * sh.NH * sh.T * z.Tk;
    float *q = random_floats(rng, nq + nkv, 0, 1), *dout = random_floats(rng, BTC, 0, 1);
    float *dq = garbage(rng, nq + nkv), *dq_p = copy_floats(dq, nq + nkv);
    float *kv = fused ? q + sh.C : q + nq, *dkv = fused ? dq + sh.C : dq + nq, *dkv_p = dkv - dq + dq_p;
    float *out = garbage(rng, BTC), *sc = garbage(rng, att), *pr = garbage(rng, att), *dr = garbage(rng, att);
    float *out_p = garbage(rng, BTC), *sc_p = garbage(rng, att), *pr_p = garbage(rng, att);
    float *dr_p = garbage(rng, att), *dr0 = copy_floats(dr, att);
    attention_forward(out, sc, pr, dr, q, kv, sh, dm);
    attention_forward_plain(out_p, sc_p, pr_p, dr_p, q, kv, sh, dm);
    attention_backward(dq, dkv, dout, q, kv, pr, dr, sh, dm);
    attention_backward_plain(dq_p, dkv_p, dout, q, kv, pr_p, dr_p, sh, dm);
    int wrong = 0;
    float max_sc = 0.0f, d_sc = 0.0f;  // scores: the masked entries -inf in both
    for (size_t i = 0; i < att; i++) {
        int inf = isinf(sc[i]) && sc[i] < 0, inf_p = isinf(sc_p[i]) && sc_p[i] < 0;
        if (inf != inf_p) wrong++;
        if (inf || inf_p) continue;
        float d = fabsf(sc[i] - sc_p[i]);
        if (!(d <= d_sc)) d_sc = d;
        if (fabsf(sc_p[i]) > max_sc) max_sc = fabsf(sc_p[i]);
    }
    e[0] = rel(compare(out, out_p, 1, BTC, 0));
    e[1] = max_sc > 0 ? d_sc / max_sc : d_sc;
    e[2] = rel(compare(pr, pr_p, 1, att, 0));
    e[3] = 0.0f;
    if (dm && dm->p > 0.0f) e[3] = rel(compare(dr, dr_p, 1, att, 0));
    else wrong += memcmp(dr, dr0, att * sizeof(float)) != 0;  // not written when off
    e[4] = rel(compare(dq, dq_p, 1, nq, 0));
    e[5] = fused ? e[4] : rel(compare(dkv, dkv_p, 1, nkv, 0));
    free(q); free(dout); free(dq); free(dq_p); free(out); free(sc); free(pr); free(dr);
    free(out_p); free(sc_p); free(pr_p); free(dr_p); free(dr0);
    return wrong;
}

// -as at initialisation: GPT-2's weights N(0, 0.02) on a layernormed input give q and k
// entries of variance C 0.02^2, so a score q.k has standard deviation sqrt(hs) C 0.02^2
// unscaled and C 0.02^2 with 1/sqrt(hs). Measured with attention_forward on T = 64 keys:
// the mean largest weight and entropy (uniform: 1/64 and ln 64 = 4.16 nats) for the default
// model's heads (C 128, hs 32) and GPT-2 124M's (C 768, hs 64), with the scale and with
// -as none. doc/variants.md quotes the line.
static void test_attention_scale_init(void) {
    printf("-- -as at initialisation: how peaked the attention is, with and without 1/sqrt(hs)\n");
    int shapes[2][2] = {{128, 4}, {768, 12}}, B = 1, T = 64;
    uint64_t rng = 2718;
    float largest[2][2], entropy[2][2];
    for (int si = 0; si < 2; si++) {
        int C = shapes[si][0], NH = shapes[si][1];
        size_t n = (size_t)B * T * 3 * C, att = (size_t)B * NH * T * T;
        float* qkv = random_floats(&rng, n, 0.0f, sqrtf((float)C) * 0.02f);
        float *out = zeros((size_t)B * T * C), *sc = zeros(att), *pr = zeros(att);
        for (int none = 0; none <= 1; none++) {
            AttentionShape sh = self_attention(B, T, C, NH, NH, 0);
            sh.scale = none ? 1.0f : 0.0f;
            attention_forward(out, sc, pr, NULL, qkv, qkv + C, sh, NULL);
            double sum_max = 0.0, sum_h = 0.0;
            for (size_t r = 0; r < att / T; r++) {
                float m = 0.0f;
                for (int j = 0; j < T; j++) {
                    float p = pr[r * T + j];
                    m = p > m ? p : m;
                    sum_h -= p > 0.0f ? p * log(p) : 0.0;
                }
                sum_max += m;
            }
            largest[si][none] = (float)(sum_max / (att / T));
            entropy[si][none] = (float)(sum_h / (att / T));
        }
        free(qkv); free(out); free(sc); free(pr);
    }
    check(largest[0][0] < 0.03f && largest[1][0] < 0.05f && largest[1][1] > 4.0f * largest[1][0] &&
          largest[0][1] < largest[1][1],
          "at GPT-2's initialisation, T = 64 keys, mean largest weight / entropy: C 128 hs 32 %.3f / %.2f "
          "with 1/sqrt(hs), %.3f / %.2f without; C 768 hs 64 %.3f / %.2f with, %.3f / %.2f without",
          largest[0][0], entropy[0][0], largest[0][1], entropy[0][1], largest[1][0], entropy[1][0],
          largest[1][1], entropy[1][1]);
}

static void test_fast_attention(void) {
    printf("-- attention_forward / attention_backward against the plain loops\n");
    int heads[][4] = {{24, 3, 3, 1}, {48, 2, 2, 1}, {64, 4, 4, 1},   // C, NH, NKV, causal: hs = 8, 24, 16
                      {64, 4, 2, 1}, {48, 6, 1, 1}, {48, 6, 3, 0}, {24, 3, 3, 0}};
    int Ts[] = {1, 15, 17, 33, 64};
    int B = 2;
    uint64_t rng = 1618;
    DropoutMask drops[2] = {dropout_mask(0.0f, 21, 8, 1, DROP_ATT_PROBS),
                            dropout_mask(0.3f, 21, 8, 1, DROP_ATT_PROBS)};
    for (size_t hi = 0; hi < sizeof heads / sizeof heads[0]; hi++)
        for (int dropping = 0; dropping <= 1; dropping++) {
            int C = heads[hi][0], NH = heads[hi][1], NKV = heads[hi][2], wrong = 0;
            float worst[6] = {0};
            for (size_t ti = 0; ti < sizeof Ts / sizeof Ts[0]; ti++) {
                // without dropout, drop = NULL and a mask with p = 0 must both mean "off"
                const DropoutMask* dm = !dropping && ti % 2 ? NULL : &drops[dropping];
                float e[6];
                AttentionShape sh = self_attention(B, Ts[ti], C, NH, NKV, heads[hi][3]);
                sh.scale = hi == 2 ? 0.125f : 0.0f;  // -as 0.125 on one shape (hs 16: 1/sqrt(hs) = 0.25)
                wrong += attention_vs_plain(sh, 1, dm, &rng, e);
                for (int j = 0; j < 6; j++)
                    if (!(e[j] <= worst[j])) worst[j] = e[j];
            }
            float w = fmaxf(fmaxf(worst[0], worst[1]), fmaxf(fmaxf(worst[2], worst[3]), worst[4]));
            float tol = heads[hi][3] ? TOL_ATT_REL : TOL_ATT_NOMASK_REL;
            check(w <= tol && wrong == 0,
                  "attention C=%d NH=%d NKV=%d (hs %d)%s%s%s, T = 1..64: out %.1e scores %.1e probs %.1e "
                  "dropped %.1e dinp %.1e (tolerance %.0e); %d -inf mismatches or att_dropped written", C,
                  NH, NKV, C / NH, heads[hi][3] ? "" : ", no mask", dropping ? ", dropout 0.3" : "",
                  hi == 2 ? ", scale 0.125 (-as)" : "", worst[0],
                  worst[1], worst[2], worst[3], worst[4], tol, wrong);
        }
    // cross-attention: T queries against Tk keys (more and fewer), q and kv in separate buffers
    // with their own row strides (wider than Q and K,V), key_len padding in every row but one,
    // and the unmasked self-attention of a padded source (the encoder)
    int cross[][6] = {{24, 3, 3, 5, 9, 0}, {64, 4, 2, 17, 40, 0}, {48, 6, 1, 33, 7, 0},  // C NH NKV T Tk
                      {64, 4, 2, 16, 16, 1}};                                           // fused: Tk = T
    int key_len[3];
    for (size_t ci = 0; ci < sizeof cross / sizeof cross[0]; ci++)
        for (int dropping = 0; dropping <= 1; dropping++) {
            int C = cross[ci][0], NH = cross[ci][1], NKV = cross[ci][2], T = cross[ci][3], Tk = cross[ci][4];
            int fused = cross[ci][5];
            key_len[0] = Tk; key_len[1] = 1; key_len[2] = 1 + (int)(random_u64(&rng) % (Tk - 1));
            AttentionShape sh = {.B = 3, .T = T, .C = C, .NH = NH, .NKV = NKV, .Tk = fused ? 0 : Tk,
                                 .q_stride = fused ? 0 : C + 5,
                                 .kv_stride = fused ? 0 : 2 * NKV * (C / NH) + 3,
                                 .key_len = key_len};
            float e[6];
            int wrong = attention_vs_plain(sh, fused, &drops[dropping], &rng, e);
            float w = fmaxf(fmaxf(fmaxf(e[0], e[1]), fmaxf(e[2], e[3])), fmaxf(e[4], e[5]));
            check(w <= TOL_ATT_NOMASK_REL && wrong == 0,
                  "%s C=%d NH=%d NKV=%d T=%d Tk=%d key_len %d,%d,%d%s: out %.1e scores %.1e probs %.1e "
                  "dropped %.1e dq %.1e dkv %.1e (tolerance %.0e); %d -inf mismatches or att_dropped written",
                  fused ? "padded self-attention" : "cross-attention", C, NH, NKV, T, Tk, key_len[0],
                  key_len[1], key_len[2], dropping ? ", dropout 0.3" : "", e[0], e[1], e[2], e[3], e[4], e[5],
                  TOL_ATT_NOMASK_REL, wrong);
        }
}

// Padded keys change nothing: the cross-attention of a batch whose sequences have 6, 3 and 1
// real keys, padded to Tk = 9 with garbage keys and values (std 30), against each sequence
// alone with only its real keys and no mask. out, dq and the real keys' dK, dV must agree
// within float rounding (relative to the largest value), and the padded rows of dkv be exactly 0.
static void test_attention_padding(void) {
    printf("-- padded keys change nothing (cross-attention with key_len)\n");
    uint64_t rng = 2024;
    int B = 3, T = 4, C = 16, NH = 4, NKV = 2, KV = 2 * NKV * (C / NH), Tk = 9, key_len[3] = {6, 3, 1};
    size_t nq = (size_t)B * T * C, nkv = (size_t)B * Tk * KV, att = (size_t)B * NH * T * Tk;
    float *q = random_floats(&rng, nq, 0, 1), *kv = random_floats(&rng, nkv, 0, 1);
    float *dout = random_floats(&rng, nq, 0, 1), *out = garbage(&rng, nq), *sc = zeros(att), *pr = zeros(att);
    float *dq = garbage(&rng, nq), *dkv = garbage(&rng, nkv);
    for (int b = 0; b < B; b++)
        for (size_t i = (size_t)key_len[b] * KV; i < (size_t)Tk * KV; i++)
            kv[(size_t)b * Tk * KV + i] = 30.0f * random_normal(&rng);
    AttentionShape sh = {.B = B, .T = T, .C = C, .NH = NH, .NKV = NKV, .Tk = Tk, .q_stride = C,
                         .kv_stride = KV,
                         .key_len = key_len};
    attention_forward(out, sc, pr, NULL, q, kv, sh, NULL);
    attention_backward(dq, dkv, dout, q, kv, pr, NULL, sh, NULL);
    Error e_out = {0, 0}, e_dq = {0, 0}, e_dkv = {0, 0};
    int padded_nonzero = 0, identical = 1;
    for (int b = 0; b < B; b++) {
        int n = key_len[b];
        AttentionShape one = sh;  // sequence b alone, its real keys only, no mask
        one.B = 1, one.Tk = n, one.key_len = NULL;
        float *o1 = zeros((size_t)T * C), *s1 = zeros((size_t)NH * T * n), *p1 = zeros((size_t)NH * T * n);
        float *dq1 = zeros((size_t)T * C), *dkv1 = zeros((size_t)n * KV);
        const float *q_b = q + (size_t)b * T * C, *kv_b = kv + (size_t)b * Tk * KV;
        attention_forward(o1, s1, p1, NULL, q_b, kv_b, one, NULL);
        attention_backward(dq1, dkv1, dout + (size_t)b * T * C, q_b, kv_b, p1, NULL, one, NULL);
        Error e[3] = {compare(out + (size_t)b * T * C, o1, 1, (size_t)T * C, 0),
                      compare(dq + (size_t)b * T * C, dq1, 1, (size_t)T * C, 0),
                      compare(dkv + (size_t)b * Tk * KV, dkv1, 1, (size_t)n * KV, 0)};
        Error* worst[3] = {&e_out, &e_dq, &e_dkv};
        for (int j = 0; j < 3; j++) {
            worst[j]->max_abs = fmaxf(worst[j]->max_abs, e[j].max_abs);
            worst[j]->max_ref = fmaxf(worst[j]->max_ref, e[j].max_ref);
            identical &= e[j].max_abs == 0.0f;
        }
        for (size_t i = (size_t)n * KV; i < (size_t)Tk * KV; i++)
            padded_nonzero += dkv[(size_t)b * Tk * KV + i] != 0.0f;
        free(o1); free(s1); free(p1); free(dq1); free(dkv1);
    }
    float tol = TOL_ATT_NOMASK_REL;
    check(rel(e_out) <= tol && rel(e_dq) <= tol && rel(e_dkv) <= tol && padded_nonzero == 0,
          "padded against unpadded (key_len 6, 3, 1 of Tk 9; %s): out %.1e dq %.1e dkv of real keys %.1e "
          "(tolerance %.0e); %d nonzero gradients in padded kv rows",
          identical ? "bit-identical" : "not bit-identical", rel(e_out), rel(e_dq), rel(e_dkv), tol, padded_nonzero);
    free(q); free(kv); free(dout); free(out); free(sc); free(pr); free(dq); free(dkv);
}

// An impossible attention shape dies with one line: each of these shapes runs in a child
// process, this program again (test_gpt2 -die-shape K: compat_run, a portable fork), whose
// stderr is read from a file.
static const char* const SHAPE_DEATHS[][2] = {  // what, and what its line says
    {"attention_forward with key_len[1] = 0", "key_len[1] = 0 is outside 1..Tk"},
    {"attention_backward with key_len[1] = 5 > Tk = 4", "key_len[1] = 5 is outside 1..Tk"},
    {"causal attention with Tk 4 != pos0 + T 2", "causal mask needs Tk == pos0 + T"},
};
static const char* self_path;  // this program, for compat_run (set by main)

// the child: runs shape k, which must die before it returns
static int run_shape_death(int k) {
    static int len0[2] = {3, 0}, len_long[2] = {3, 5};
    AttentionShape sh = {.B = 2, .T = 2, .C = 4, .NH = 1, .NKV = 1, .Tk = 4, .q_stride = 4, .kv_stride = 8};
    sh.key_len = k == 0 ? len0 : k == 1 ? len_long : NULL;
    sh.causal = k == 2;
    float x[256] = {0}, att[256] = {0};  // (never read: the shape dies first; gcc -O0 cannot tell)
    if (k == 1) attention_backward(x, x, x, x, x, att, NULL, sh, NULL);
    else attention_forward(x, att, att, NULL, x, x, sh, NULL);
    return 0;
}

static void test_attention_shape_errors(void) {
    char err_path[4096], args[4200];
    snprintf(err_path, sizeof err_path, "%s/test_gpt2_shape_%d.txt", compat_temp_dir(), (int)getpid());
    // an emulated test_gpt2 (qemu-aarch64, tests/aarch64_check.sh) cannot start itself: the
    // shell runs TEST_EMULATOR with this program as its first argument
    const char* emulator = getenv("TEST_EMULATOR");
    for (int k = 0; k < 3; k++) {
        if (emulator && *emulator) snprintf(args, sizeof args, "'%s' -die-shape %d", self_path, k);
        else snprintf(args, sizeof args, "-die-shape %d", k);
        int status = compat_run(emulator && *emulator ? emulator : self_path, args, err_path);
        char line[512] = {0};
        FILE* f = fopen(err_path, "r");  // (text: Windows' "\r\n" read as "\n")
        size_t n = f ? fread(line, 1, sizeof line - 1, f) : 0;
        if (f) fclose(f);
        remove(err_path);
        line[n] = 0;
        char* end = strchr(line, '\n');
        int one_line = end && end[1] == 0;
        if (end) *end = 0;
        check(status == EXIT_BAD_INPUT && one_line && strstr(line, SHAPE_DEATHS[k][1]),
              "%s dies with one line: %s", SHAPE_DEATHS[k][0], line);
    }
}

// ----------------------------------------------------------------------------
// KV cache: one token at a time must give the training forward's logits

static void test_kv_cache(const char* model_path) {
    printf("-- KV-cache inference against the training forward (%s)\n", model_path);
    GPT2 model;
    gpt2_build_from_checkpoint(&model, model_path);
    model.config.mask = MASK_CAUSAL;  // generation is causal, also for a model trained without the mask
    GPT2Config c = model.config;
    KVCache kv;
    kvcache_init(&kv, c);
    int lengths[] = {1, 2, 9, c.max_seq_len - 1, c.max_seq_len};
    uint64_t rng = 5;
    int* tokens = mallocCheck((size_t)c.max_seq_len * sizeof(int));
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        int T = lengths[li];
        for (int t = 0; t < T; t++)
            tokens[t] = (int)(random_u64(&rng) % c.vocab_size);
        gpt2_forward(&model, tokens, NULL, 1, T, -1);
        kv.pos = 0;
        float worst = 0.0f;
        for (int t = 0; t < T; t++) {
            const float* logits = gpt2_forward_token(&model, &kv, tokens[t]);
            Error e = compare(logits, model.acts.logits + (size_t)t * c.padded_vocab_size, 1,
                              c.vocab_size, 0);
            if (!(e.max_abs <= worst)) worst = e.max_abs;
        }
        check(worst <= TOL_KV_ABS, "KV cache, %2d positions: max |logit difference| %.2e (tolerance %.0e)",
              T, worst, TOL_KV_ABS);
    }
    free(tokens);
    kvcache_free(&kv);
    gpt2_free(&model);
}

// ----------------------------------------------------------------------------
// block variants in a whole model: the gradients of the loss by finite differences, the
// KV cache against the training forward (and after generate() slides its window), and
// checkpoints written back byte for byte

typedef struct { const char* name; int NH, NKV, pe, ln, act, mask, ff; float as; } Variant;  // ff 0: 4C
static const Variant VARIANTS[] = {
    {"GPT-2", 4, 4, POS_LEARNED, LN_PRE, ACT_GELU, MASK_CAUSAL, 0, 0.0f},
    {"GQA 4 over 2 + RoPE", 4, 2, POS_ROPE, LN_PRE, ACT_GELU, MASK_CAUSAL, 0, 0.0f},
    {"multi-query + sinusoids", 4, 1, POS_SIN, LN_PRE, ACT_GELU, MASK_CAUSAL, 0, 0.0f},
    {"post-LN", 4, 4, POS_LEARNED, LN_POST, ACT_GELU, MASK_CAUSAL, 0, 0.0f},
    {"post-LN + GQA + RoPE, no mask", 4, 2, POS_ROPE, LN_POST, ACT_GELU, MASK_NONE, 0, 0.0f},
    {"ReLU + post-LN + sinusoids", 2, 1, POS_SIN, LN_POST, ACT_RELU, MASK_CAUSAL, 0, 0.0f},
    {"-ff 32 (2C, article 003's d_ff)", 4, 4, POS_LEARNED, LN_PRE, ACT_GELU, MASK_CAUSAL, 32, 0.0f},
    {"-ff 24 + post-LN + GQA + RoPE", 4, 2, POS_ROPE, LN_POST, ACT_GELU, MASK_CAUSAL, 24, 0.0f},
    {"squared ReLU (-act relu2)", 4, 4, POS_LEARNED, LN_PRE, ACT_RELU2, MASK_CAUSAL, 0, 0.0f},
    {"-as 1.7 (not 1/sqrt(hs) = 0.5) + GQA", 4, 2, POS_LEARNED, LN_PRE, ACT_GELU, MASK_CAUSAL, 0, 1.7f},
};
#define FF_VARIANT 6  // -ff 32: the -prec bf16 check
#define AS_VARIANT 9  // -as 1.7: the checkpoint's slot 14
#define NUM_VARIANTS ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

// L=2, C=16, V=11 (padded 16); weights spread wider than GPT-2's 0.02 (as the references'),
// so that every path of the block carries weight
static void variant_model(GPT2* m, const Variant* v, int maxT, uint64_t seed) {
    GPT2Config c = {.max_seq_len = maxT, .vocab_size = 11, .padded_vocab_size = 16, .num_layers = 2,
                    .num_heads = v->NH, .channels = 16, .num_kv_heads = v->NKV, .pos_encoding = v->pe,
                    .ln_place = v->ln, .activation = v->act, .mask = v->mask, .ff = v->ff,
                    .att_scale = v->as};
    gpt2_init_random(m, c, seed);
    uint64_t rng = seed;
    for (size_t i = 0; i < m->num_parameters; i++)
        m->params_memory[i] += 0.2f * random_normal(&rng);
}


// the mean loss in double (the forward's per-position losses, not its float mean)
static double model_loss(GPT2* m, const int* x, const int* y, int B, int T) {
    gpt2_forward(m, x, y, B, T, -1);
    double sum = 0.0;
    for (int i = 0; i < B * T; i++)
        sum += m->scratch.losses[i];
    return sum / (B * T);
}

// every parameter of the model (ReLU's kinks excepted: its layer has its own check above)
static void test_variant_gradients(void) {
    printf("-- block variants: finite differences of the whole model's loss\n");
    enum { B = 2, T = 7 };
    int x[B * T], y[B * T];
    uint64_t rng = 99;
    for (int i = 0; i < B * T; i++) {
        x[i] = (int)(random_u64(&rng) % 11);
        y[i] = (int)(random_u64(&rng) % 11);
    }
    int threads = use_threads(1);  // tiny models: waking threads would cost more than the work
    for (int k = 0; k < NUM_VARIANTS; k++) {
        const Variant* v = &VARIANTS[k];
        if (v->act == ACT_RELU) continue;
        GPT2 m;
        variant_model(&m, v, 8, 300 + k);
        gpt2_forward(&m, x, y, B, T, -1);
        gpt2_zero_grad(&m);
        gpt2_backward(&m);
        // eps 5e-3, not the layers' 1e-2: through two blocks the truncation error (~eps^2)
        // dominates (measured worst relative error 3.9e-4 at 1e-2, 1.1e-4 at 5e-3)
        const float eps = 5e-3f;
        float max_err = 0.0f, max_ana = 0.0f;
        for (size_t i = k % 2; i < m.num_parameters; i += 2) {  // every other parameter
            float orig = m.params_memory[i];
            m.params_memory[i] = orig + eps; double fp = model_loss(&m, x, y, B, T);
            m.params_memory[i] = orig - eps; double fm = model_loss(&m, x, y, B, T);
            m.params_memory[i] = orig;
            float num = (float)((fp - fm) / (2.0 * eps)), ana = m.grads_memory[i];
            if (!(fabsf(num - ana) <= max_err)) max_err = fabsf(num - ana);
            if (fabsf(ana) > max_ana) max_ana = fabsf(ana);
        }
        check(max_err <= TOL_FD_REL * max_ana, "finite differences, %-30s %zu of %zu parameters: max error "
              "%.2e, relative to max %.2e (tolerance %.0e)", v->name, m.num_parameters / 2, m.num_parameters,
              max_err, max_err / max_ana, TOL_FD_REL);
        gpt2_free(&m);
    }
    use_threads(threads);
}

// Without the mask the model trains unmasked, but generation stays causal: its cache is
// compared with the training forward with the mask switched back on.
static void test_variant_kv_cache(void) {
    printf("-- block variants: KV cache against the training forward\n");
    enum { maxT = 8 };
    int threads = use_threads(1);
    for (int k = 0; k < NUM_VARIANTS; k++) {
        GPT2 m;
        variant_model(&m, &VARIANTS[k], maxT, 500 + k);
        m.config.mask = MASK_CAUSAL;
        KVCache kv;
        kvcache_init(&kv, m.config);
        int tokens[maxT];
        uint64_t rng = 42 + k;
        for (int t = 0; t < maxT; t++)
            tokens[t] = (int)(random_u64(&rng) % 11);
        gpt2_forward(&m, tokens, NULL, 1, maxT, -1);
        float worst = 0.0f;
        for (int t = 0; t < maxT; t++) {
            const float* logits = gpt2_forward_token(&m, &kv, tokens[t]);
            Error e = compare(logits, m.acts.logits + (size_t)t * 16, 1, 11, 0);
            if (!(e.max_abs <= worst)) worst = e.max_abs;
        }
        // generate() past maxT: it keeps the newest maxT/2 tokens and re-feeds them from
        // position 0; the last logits must be the training forward's on that window
        Sampler greedy;
        sampler_init(&greedy, 11, 0.0f, 0, 1);
        FILE* sink = fopen(COMPAT_NULL_DEVICE, "w");
        int slid = generate(&m, &kv, &greedy, NULL, tokens, 3, 2 * maxT, 1, sink) == 2 * maxT;
        fclose(sink);
        float last[16];
        memcpy(last, kv.model.acts.logits, sizeof last);  // (generation's model's last forward)
        gpt2_forward(&m, kv.tokens, NULL, 1, kv.pos, -1);
        Error e = compare(last, m.acts.logits + (size_t)(kv.pos - 1) * 16, 1, 11, 0);
        check(worst <= TOL_KV_ABS && slid && e.max_abs <= TOL_KV_ABS,
              "KV cache, %-30s 8 positions: max |logit difference| %.2e; after generate() slid its "
              "window: %.2e (tolerance %.0e)", VARIANTS[k].name, worst, e.max_abs, TOL_KV_ABS);
        sampler_free(&greedy);
        kvcache_free(&kv);
        gpt2_free(&m);
    }
    use_threads(threads);
}

// Every value of every block-variant option has a row of VARIANTS, so that its finite
// differences, KV cache and checkpoint round trip run: the values are those with a word
// (pos_encoding_word and the others name every value of their enum, by -Wswitch-enum), and
// util/cli.h's VARIANT_WORDS must spell the same words. A value without a row fails by name.
static int variant_row_with(int option, int value) {
    for (int k = 0; k < NUM_VARIANTS; k++) {
        const Variant* v = &VARIANTS[k];
        int settings[4] = {v->pe, v->ln, v->act, v->mask};
        if (settings[option] == value) return 1;
    }
    return 0;
}

static void test_variant_rows(void) {
    printf("-- block variants: a test row for every option value\n");
    const char* (*words[4])(int) = {pos_encoding_word, ln_place_word, activation_word, mask_word};
    const char* flags[4] = {"-pe", "-ln", "-act", "-causal"};
    for (int o = 0; o < 4; o++) {
        int n = 0, agree = 1;
        for (int v = 0; words[o](v); v++, n++) {
            if (o < 3) agree &= v < MAX_VARIANT_WORDS && VARIANT_WORDS[o][v] &&
                               strcmp(VARIANT_WORDS[o][v], words[o](v)) == 0;
            if (!variant_row_with(o, v)) check(0, "no test row for %s %s: add one to VARIANTS", flags[o], words[o](v));
        }
        if (o < 3) agree &= n >= MAX_VARIANT_WORDS || VARIANT_WORDS[o][n] == NULL;
        check(agree, "%s: %d values, each with a test row; util/cli.h's VARIANT_WORDS spells them alike",
              flags[o], n);
    }
    int kv_kinds = 0, ff_kinds = 0;  // -kv: NH, a group (1 < NKV < NH), 1; -ff: 4C and another width
    for (int k = 0; k < NUM_VARIANTS; k++) {
        const Variant* v = &VARIANTS[k];
        kv_kinds |= v->NKV == v->NH ? 1 : v->NKV == 1 ? 4 : 2;
        ff_kinds |= v->ff == 0 ? 1 : 2;
    }
    check(kv_kinds == 7, "-kv: rows with multi-head, grouped-query and multi-query attention");
    check(ff_kinds == 3, "-ff: rows with the width 4C and with another");
}

// each row's model written as a checkpoint and read back: the same settings and the same
// bits of every parameter; GPT-2 as llm.c's version 3, any variant as version 104
static void test_variant_checkpoints(void) {
    printf("-- block variants: checkpoints written and read back\n");
    const char* tmp = compat_temp_dir();
    char path[4096];
    snprintf(path, sizeof path, "%s/test_gpt2_variant_%d.bin", tmp, (int)getpid());
    for (int k = 0; k < NUM_VARIANTS; k++) {
        GPT2 m, back;
        variant_model(&m, &VARIANTS[k], 8, 900 + k);
        gpt2_write_checkpoint(&m, path);
        int32_t h[256];
        FILE* f = fopenCheck(path, "rb");
        fread_check(h, sizeof(int32_t), 256, f, path, "header");
        fclose(f);
        gpt2_build_from_checkpoint(&back, path);
        GPT2Config a = m.config, b = back.config;
        int same = a.num_kv_heads == b.num_kv_heads && a.pos_encoding == b.pos_encoding &&
                   a.ln_place == b.ln_place && a.activation == b.activation && a.mask == b.mask &&
                   ff_channels(a) == ff_channels(b) && back.num_parameters == m.num_parameters &&
                   memcmp(back.params_memory, m.params_memory, m.num_parameters * sizeof(float)) == 0;
        int version = is_gpt2(a) ? 3 : CHECKPOINT_VARIANTS;
        check(same && h[1] == version, "checkpoint, %-30s version %d, read back with the same settings and "
              "%zu parameters", VARIANTS[k].name, h[1], m.num_parameters);
        remove(path);
        gpt2_free(&m);
        gpt2_free(&back);
    }
}

// -ff with -prec bf16: the loss from bf16 operands near float32's (and not equal: they are
// used), and the KV cache from the bf16 copy of the weights near float32's logits
static void test_ff_bf16(void) {
    printf("-- -ff with -prec bf16\n");
    enum { T = 8 };
    GPT2 m;
    variant_model(&m, &VARIANTS[FF_VARIANT], T, 700);
    int x[T], y[T];
    uint64_t rng = 77;
    for (int t = 0; t < T; t++)
        x[t] = (int)(random_u64(&rng) % 11), y[t] = (int)(random_u64(&rng) % 11);
    int threads = use_threads(1);
    double fp32 = model_loss(&m, x, y, 1, T);
    m.precision = GEMM_BF16;
    double bf16 = model_loss(&m, x, y, 1, T);
    KVCache a, b;
    kvcache_init(&a, m.config);
    kvcache_init(&b, m.config);
    weights_bf16_sync(&b.bf16, GEMM_BF16, m.params_memory, m.num_parameters, NULL);
    m.precision = GEMM_FP32;
    float worst = 0.0f, largest = 0.0f;
    for (int t = 0; t < T; t++) {
        const float* la = gpt2_forward_token(&m, &a, x[t]);
        Error e = compare(gpt2_forward_token(&m, &b, x[t]), la, 1, 11, 0);
        if (!(e.max_abs <= worst)) worst = e.max_abs;
        if (e.max_ref > largest) largest = e.max_ref;
    }
    double rel_loss = fabs(bf16 - fp32) / fp32;
    check(rel_loss <= 1e-2 && bf16 != fp32 && worst <= 2e-2f * largest && worst > 0.0f,
          "-ff 32, -prec bf16: loss %.6f vs float32's %.6f (relative %.1e, tolerance 1e-2); KV cache from "
          "bf16 weights: max |logit - float32's| %.2e, relative to the largest %.1e (tolerance 2e-2)", bf16,
          fp32, rel_loss, worst, worst / largest);
    kvcache_free(&a);
    kvcache_free(&b);
    gpt2_free(&m);
    use_threads(threads);
}

// a -ff model is a variant: written as version 104 with d_ff in slot 13, read back the
// same; Hugging Face's format refuses it; a model of width 4C keeps slot 13 at 0
static void test_ff_checkpoint(void) {
    printf("-- -ff in checkpoints\n");
    const char* tmp = compat_temp_dir();
    char path[4096];
    snprintf(path, sizeof path, "%s/test_gpt2_ff_%d.bin", tmp, (int)getpid());
    GPT2 m, back;
    variant_model(&m, &VARIANTS[FF_VARIANT], 8, 800);
    gpt2_write_checkpoint(&m, path);
    int32_t h[256];
    FILE* f = fopenCheck(path, "rb");
    fread_check(h, sizeof(int32_t), 256, f, path, "header");
    fclose(f);
    gpt2_build_from_checkpoint(&back, path);
    int same = back.num_parameters == m.num_parameters && ff_channels(back.config) == 32 &&
               memcmp(back.params_memory, m.params_memory, m.num_parameters * sizeof(float)) == 0;
    GPT2Config wide = m.config;
    wide.ff = 4 * wide.channels;  // 4C spelt out: GPT-2 itself
    check(same && h[1] == CHECKPOINT_VARIANTS && h[13] == 32 && !is_gpt2(m.config) && is_gpt2(wide),
          "-ff 32: version %d, slot 13 = %d, read back with d_ff %d and the same %zu parameters; -ff 4C "
          "is GPT-2", h[1], h[13], ff_channels(back.config), m.num_parameters);
    remove(path);
    gpt2_free(&m);
    gpt2_free(&back);
    // -as: its float's bits in slot 14 (0, the default 1/sqrt(hs), in every older file)
    variant_model(&m, &VARIANTS[AS_VARIANT], 8, 801);
    gpt2_write_checkpoint(&m, path);
    f = fopenCheck(path, "rb");
    fread_check(h, sizeof(int32_t), 256, f, path, "header");
    fclose(f);
    gpt2_build_from_checkpoint(&back, path);
    float slot14;
    memcpy(&slot14, &h[14], sizeof slot14);
    check(h[1] == CHECKPOINT_VARIANTS && slot14 == 1.7f && back.config.att_scale == 1.7f &&
          !is_gpt2(m.config), "-as 1.7: version %d, slot 14 holds %g, read back with scale %g", h[1], slot14,
          back.config.att_scale);
    remove(path);
    gpt2_free(&m);
    gpt2_free(&back);
}

// reading a checkpoint and writing it back gives the same bytes: llm.c's version 3 for
// GPT-2 (a), version 103 with the variants' slots for the models PyTorch wrote (c, d), written back
// as version 104 with a checksum in slot 255
static void test_checkpoint_bytes(const char* dir) {
    printf("-- checkpoints written back byte for byte\n");
    const char* names[] = {"a", "c", "d"};
    for (int i = 0; i < 3; i++) {
        char path[4096], out[4096];
        snprintf(path, sizeof path, "%s/ref_%s_model.bin", dir, names[i]);
        const char* tmp = compat_temp_dir();
        snprintf(out, sizeof out, "%s/test_gpt2_roundtrip_%d.bin", tmp, (int)getpid());
        GPT2 m;
        gpt2_build_from_checkpoint(&m, path);
        gpt2_write_checkpoint(&m, out);
        FILE *f1 = fopenCheck(path, "rb"), *f2 = fopenCheck(out, "rb");
        long long n1 = file_size(f1), n2 = file_size(f2);
        char *b1 = mallocCheck(n1), *b2 = mallocCheck(n2);
        fread_check(b1, 1, n1, f1, path, "checkpoint");
        fread_check(b2, 1, n2, f2, out, "checkpoint");
        int32_t version, h[256];
        memcpy(&version, b1 + 4, 4);
        if (version == CHECKPOINT_VARIANTS_NO_CHECKSUM && n1 >= 1024) {  // written as 104: with the checksum
            memcpy(h, b1, 1024);
            h[1] = CHECKPOINT_VARIANTS;
            h[255] = (int32_t)crc32c_update(header_checksum(h), b1 + 1024, (size_t)n1 - 1024);
            memcpy(b1, h, 1024);
        }
        check(n1 == n2 && memcmp(b1, b2, n1) == 0, "%s (version %d, %s): written back byte for byte%s",
              path, version, is_gpt2(m.config) ? "GPT-2" : "block variants",
              version == CHECKPOINT_VARIANTS_NO_CHECKSUM ? " (as version 104: slots 1 and 255 differ)" : "");
        fclose(f1); fclose(f2); remove(out); free(b1); free(b2);
        gpt2_free(&m);
    }
}

// errata E13-E15 (doc/errata.md): articles 003 and 004 on RoPE, GQA and sinusoids,
// against this program's rope_angles_init, rope_forward, fill_in_parameter_sizes, sinusoids_init
static void erratum_e13(void) {
    float* ang = mallocCheck(400 * 64 * sizeof(float));  // (maxT 400, hs/2 = 32 pairs, cos and sin)
    rope_angles_init(ang, 400, 64);
    float th[32];
    int decreasing = 1;
    for (int i = 0; i < 32; i++) {
        th[i] = atan2f(ang[(32 + i) * 2 + 1], ang[(32 + i) * 2]);  // angle of pair i at position 1
        if (i > 0 && !(th[i] < th[i - 1])) decreasing = 0;
    }
    float c50 = ang[(50 * 32 + 0) * 2], s50 = ang[(50 * 32 + 0) * 2 + 1];
    float* a = mallocCheck(64 * 8 * sizeof(float));
    rope_angles_init(a, 64, 8);
    const float q[8] = {0.3f, -1.2f, 0.7f, 0.25f, -0.5f, 1.1f, 0.9f, -0.4f};
    const float k[8] = {1.0f, 0.5f, -0.8f, 0.6f, 0.2f, -1.3f, 0.4f, 0.75f};
    int mn[5][2] = {{5, 3}, {12, 10}, {40, 38}, {5, 4}, {3, 5}};
    float dots[5], len_err = 0.0f;
    for (int p = 0; p < 5; p++) {
        float qr[8], kr[8], lq = 0, lq0 = 0;
        memcpy(qr, q, sizeof qr);
        memcpy(kr, k, sizeof kr);
        rope_forward(qr, a, 1, 1, 8, 1, 8, mn[p][0]);
        rope_forward(kr, a, 1, 1, 8, 1, 8, mn[p][1]);
        dots[p] = 0;
        for (int i = 0; i < 8; i++) {
            dots[p] += qr[i] * kr[i];
            lq += qr[i] * qr[i];
            lq0 += q[i] * q[i];
        }
        len_err = fmaxf(len_err, fabsf(lq - lq0));
    }
    check(fabsf(th[0] - 1.0f) < 1e-6f && fabsf(th[1] - 0.749894f) < 1e-5f &&
              fabsf(th[31] / 1.333521e-4f - 1.0f) < 1e-3f && decreasing &&
              fabsf(c50 - 0.964966f) < 1e-5f && fabsf(s50 + 0.262375f) < 1e-5f &&
              fabsf(dots[0] + 0.385681f) < 1e-5f && fabsf(dots[1] - dots[0]) < 1e-5f &&
              fabsf(dots[2] - dots[0]) < 1e-5f && fabsf(dots[3] + 0.836948f) < 1e-5f &&
              fabsf(dots[4] + 3.107673f) < 1e-5f && len_err < 1e-5f,
          "E13 article 004 RoPE: head size 64 has 32 frequencies per position, not 64 (position 1: %.6f "
          "%.6f ... %.4e), "
          "position 50 pair 0 = (cos 50, sin 50) = (%.6f, %.6f); q.k rotated at (5,3) (12,10) (40,38): "
          "%.6f %.6f %.6f, "
          "at (5,4) %.6f, (3,5) %.6f: a function of n - m; lengths kept (%.1e)",
          th[0], th[1], th[31], c50, s50, dots[0], dots[1], dots[2], dots[3], dots[4], len_err);
    free(ang);
    free(a);
}

static void erratum_e14(void) {
    int nkv[3] = {8, 2, 1};
    size_t q4[3];
    for (int i = 0; i < 3; i++) {
        GPT2Config c = {.max_seq_len = 200,
                        .vocab_size = 100,
                        .padded_vocab_size = 128,
                        .num_layers = 1,
                        .num_heads = 8,
                        .channels = 512,
                        .num_kv_heads = nkv[i]};
        size_t sizes[NUM_PARAMETER_TENSORS];
        fill_in_parameter_sizes(sizes, c);
        q4[i] = sizes[4];
    }
    check(q4[0] == 786432 && q4[1] == 393216 && q4[2] == 327680,
          "E14 article 004 GQA: dim 512, 8 heads: qkvw has %zu rows with 8 K/V heads (the article's "
          "[512,512] wk, wv), "
          "%zu with 2 (wk, wv [128,512]), %zu with 1",
          q4[0] / 512, q4[1] / 512, q4[2] / 512);
}

static void erratum_e15(void) {
    enum { MT = 64, CC = 128 };
    float* pe = mallocCheck(MT * CC * sizeof(float));
    sinusoids_init(pe, MT, CC);
    float len_err = 0.0f, shift_err = 0.0f;
    for (int p = 0; p < MT; p++) {
        double l = 0;
        for (int i = 0; i < CC; i++)
            l += (double)pe[p * CC + i] * pe[p * CC + i];
        len_err = fmaxf(len_err, fabsf((float)l - 64.0f));
    }
    for (int p = 0; p + 7 < MT; p++)
        for (int i = 0; i < CC; i += 2) {
            double b = 7.0 * pow(10000.0, -(double)i / CC), s = pe[p * CC + i], c = pe[p * CC + i + 1];
            shift_err = fmaxf(shift_err, fabsf(pe[(p + 7) * CC + i] - (float)(s * cos(b) + c * sin(b))));
            shift_err =
                fmaxf(shift_err, fabsf(pe[(p + 7) * CC + i + 1] - (float)(c * cos(b) - s * sin(b))));
        }
    GPT2 g;
    GPT2Config cfg = {.max_seq_len = MT,
                      .vocab_size = 65,
                      .padded_vocab_size = 128,
                      .num_layers = 4,
                      .num_heads = 4,
                      .channels = CC,
                      .num_kv_heads = 4,
                      .pos_encoding = POS_SIN};
    gpt2_init_random(&g, cfg, 1337);
    double wl = 0;
    for (int v = 0; v < 65; v++) {
        double r = 0;
        for (int i = 0; i < CC; i++)
            r += (double)g.params.wte[v * CC + i] * g.params.wte[v * CC + i];
        wl += sqrt(r);
    }
    wl /= 65;
    check(pe[0] == 0.0f && pe[1] == 1.0f && fabsf(pe[CC] - 0.841471f) < 1e-6f &&
              fabsf(pe[CC + 1] - 0.540302f) < 1e-6f && fabsf(pe[CC + 2] - 0.761720f) < 1e-6f &&
              fabsf(pe[CC + 3] - 0.647906f) < 1e-6f && len_err < 1e-3f && shift_err < 1e-6f && wl > 0.2 &&
              wl < 0.25 && 8.0 / wl > 30.0,
          "E15 article 003 input: every sinusoid row has squared length C/2 = 64 (error %.1e), length 8, "
          "while a fresh "
          "wte row has length %.3f: the position part is %.0fx the token part without the paper's "
          "sqrt(d_model); "
          "PE(p+7) is PE(p) rotated per pair (error %.1e)",
          len_err, wl, 8.0 / wl, shift_err);
    gpt2_free(&g);
    free(pe);
}

static const struct { const char* id; void (*check)(void); } ERRATA_VARIANTS[] = {
    {"E13", erratum_e13}, {"E14", erratum_e14}, {"E15", erratum_e15},
};

static void test_errata_variants(void) {
    for (size_t i = 0; i < sizeof ERRATA_VARIANTS / sizeof ERRATA_VARIANTS[0]; i++)
        ERRATA_VARIANTS[i].check();
}

// ----------------------------------------------------------------------------
// determinism: the same steps give the same bits, again and with another thread count;
// dropout changes training but never evaluation

static void train_steps(GPT2* model, const int* x, const int* y, int B, int T, int steps, float* losses) {
    AdamWConfig opt = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                       .grad_clip = 1.0f};  // no warm-up, no decay: a constant learning rate
    for (int s = 0; s < steps; s++)
        losses[s] = gpt2_train_step(model, x, y, B, T, s, &opt).loss;
}

static void test_determinism(const char* model_path) {
    printf("-- determinism (%s)\n", model_path);
    enum { STEPS = 3, RUNS = 3 };
    float losses[RUNS][STEPS];
    GPT2 models[RUNS];
    int B = 4, T = 16;
    int x[64], y[64];
    for (int i = 0; i < B * T; i++) {
        x[i] = (i * 7) % 65;
        y[i] = (i * 11 + 3) % 65;
    }
#ifdef _OPENMP
    int threads = omp_get_max_threads();
#endif
    for (int r = 0; r < RUNS; r++) {
#ifdef _OPENMP
        omp_set_num_threads(r == 2 ? 1 : threads);  // the third run on one thread
#endif
        gpt2_build_from_checkpoint(&models[r], model_path);
        models[r].dropout_p = 0.1f;
        models[r].dropout_seed = 17;
        train_steps(&models[r], x, y, B, T, STEPS, losses[r]);
    }
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    size_t bytes = models[0].num_parameters * sizeof(float);
    check(memcmp(losses[0], losses[1], sizeof losses[0]) == 0
          && memcmp(models[0].params_memory, models[1].params_memory, bytes) == 0,
          "two identical runs (dropout 0.1) give bit-identical losses and weights");
    check(memcmp(losses[0], losses[2], sizeof losses[0]) == 0
          && memcmp(models[0].params_memory, models[2].params_memory, bytes) == 0,
          "one thread and all threads give bit-identical losses and weights");

    // evaluation ignores dropout: same weights, p = 0.2 vs p = 0, forward with step -1
    GPT2 plain;
    gpt2_build_from_checkpoint(&plain, model_path);
    memcpy(plain.params_memory, models[0].params_memory, bytes);
    float eval_plain = gpt2_forward(&plain, x, y, B, T, -1);
    models[0].dropout_p = 0.2f;
    float eval_drop = gpt2_forward(&models[0], x, y, B, T, -1);
    float train_drop = gpt2_forward(&models[0], x, y, B, T, 5);
    check(eval_plain == eval_drop, "evaluation with dropout 0.2 equals evaluation without (%.7f)",
          eval_plain);
    check(train_drop != eval_drop, "a training forward with dropout 0.2 differs (%.7f vs %.7f)",
          train_drop, eval_drop);
    for (int r = 0; r < RUNS; r++)
        gpt2_free(&models[r]);
    gpt2_free(&plain);
}

// The trap of the first-writer stores (GRAD_STORE, train_gpt2.c's GradWrite): a parameter tensor whose
// backward adds where it should store, or that no backward writes at all, would keep (or
// add to) last step's gradient. Every gradient starts as NaN, then gpt2_zero_grad and one
// backward must write every element of every parameter's gradient; a tensor with an element
// left unwritten fails by its name. For the reference models a-d: GPT-2 and every variant,
// with the fast kernels and with the plain twins (-kernels plain), which keep the same contract.
static void test_gradients_written(const char* model_path, int plain) {
    GPT2 m;
    gpt2_build_from_checkpoint(&m, model_path);
    m.plain = plain;
    int B = 2, T = m.config.max_seq_len / 2 < 32 ? m.config.max_seq_len / 2 : 32;  // wpe's rows past T too
    int x[64], y[64];
    for (int i = 0; i < B * T; i++) {
        x[i] = (i * 7 + 1) % m.config.vocab_size;
        y[i] = (i * 11 + 3) % m.config.vocab_size;
    }
    gpt2_forward(&m, x, y, B, T, -1);
    gpt2_backward(&m);  // (allocates the gradients)
    for (size_t i = 0; i < m.num_parameters; i++)
        m.grads_memory[i] = NAN;
    gpt2_zero_grad(&m);
    gpt2_forward(&m, y, x, B, T, -1);
    gpt2_backward(&m);
    char unwritten[1024] = "";
    const float* g = m.grads_memory;
    for (int k = 0; k < NUM_PARAMETER_TENSORS; g += m.param_sizes[k], k++) {
        size_t left = 0;
        for (size_t i = 0; i < m.param_sizes[k]; i++)
            left += !isfinite(g[i]);
        if (left)
            snprintf(unwritten + strlen(unwritten), sizeof unwritten - strlen(unwritten), " %s (%zu of %zu)",
                     PARAMETER_NAMES[k], left, m.param_sizes[k]);
    }
    check(!unwritten[0], "every gradient NaN, then gpt2_zero_grad + backward writes every element of every "
          "parameter's gradient (%s, %s kernels, T=%d of maxT %d)%s%s", model_path, plain ? "plain" : "fast",
          T, m.config.max_seq_len, unwritten[0] ? ": left unwritten:" : "", unwritten);
    gpt2_free(&m);
}

// -kernels plain: the story's plain twins in place of the fast kernels change no loss, logit or
// gradient beyond the products' tolerance: one training step's forward and backward (twice, so
// that the second backward after gpt2_zero_grad must store, not add), and the KV cache's logits
static void test_plain_kernels(const char* model_path) {
    GPT2 m[2];
    int B = 2, T = 16, x[32], y[32];
    for (int i = 0; i < B * T; i++)
        x[i] = (i * 5 + 2) % 65, y[i] = (i * 3 + 1) % 65;
    KVCache kv[2];
    const float* logits[2];
    for (int p = 0; p < 2; p++) {
        gpt2_build_from_checkpoint(&m[p], model_path);
        m[p].plain = p;
        for (int pass = 0; pass < 2; pass++) {
            gpt2_forward(&m[p], pass ? y : x, pass ? x : y, B, T, -1);
            gpt2_zero_grad(&m[p]);
            gpt2_backward(&m[p]);
        }
        kvcache_init(&kv[p], m[p].config);
        for (int t = 0; t < 5; t++)
            logits[p] = gpt2_forward_token(&m[p], &kv[p], x[t]);
    }
    float loss = fabsf(m[1].mean_loss - m[0].mean_loss) / fabsf(m[0].mean_loss), worst = 0.0f;
    const char* worst_name = "";
    size_t at = 0;
    for (int k = 0; k < NUM_PARAMETER_TENSORS; at += m[0].param_sizes[k++]) {
        float e = m[0].param_sizes[k] ? rel(compare(m[1].grads_memory + at, m[0].grads_memory + at, 1,
                                                    m[0].param_sizes[k], 0)) : 0.0f;
        if (e > worst) worst = e, worst_name = PARAMETER_NAMES[k];
    }
    int V = m[0].config.vocab_size;
    float gen = rel(compare(logits[1], logits[0], 1, V, 0));
    check(loss <= TOL_FAST_REL && worst <= 1e-5f && gen <= TOL_FAST_REL,
          "-kernels plain against fast (%s): loss %.1e, gradients %.1e (worst %s; tolerance 1e-5 of the "
          "tensor's largest), KV-cache logits %.1e (tolerance %.0e)", model_path, loss, worst, worst_name, gen,
          TOL_FAST_REL);
    for (int p = 0; p < 2; p++)
        kvcache_free(&kv[p]), gpt2_free(&m[p]);
}

// the one-pass gradients (GRAD_STORE, train_gpt2.c's GradWrite): after gpt2_zero_grad the backward's
// first writers store, so a model that held other gradients (of a longer batch: wpe's rows
// past T too) gets a fresh model's bits; without gpt2_zero_grad a second backward adds
// (gradient accumulation); the squares summed during the backward give the norm of a
// separate pass, up to summation order, and the same bits on one thread as on all
static void test_one_pass_gradients(const char* model_path) {
    printf("-- one-pass gradients: first writers store, accumulation adds, the norm (%s)\n", model_path);
    int x[32], y[32];
    for (int i = 0; i < 32; i++) {
        x[i] = (i * 7) % 65;
        y[i] = (i * 11 + 3) % 65;
    }
    GPT2 used, fresh;
    gpt2_build_from_checkpoint(&used, model_path);
    gpt2_build_from_checkpoint(&fresh, model_path);
    gpt2_forward(&used, x, y, 2, 16, -1);  // the longer batch first: every gradient nonzero
    gpt2_zero_grad(&used);
    gpt2_backward(&used);
    gpt2_forward(&used, y, x, 2, 8, -1);
    gpt2_zero_grad(&used);
    gpt2_backward(&used);
    gpt2_forward(&fresh, y, x, 2, 8, -1);
    gpt2_backward(&fresh);  // (no zero_grad needed before a model's first backward)
    size_t n = used.num_parameters;
    check(memcmp(used.grads_memory, fresh.grads_memory, n * sizeof(float)) == 0,
          "gpt2_zero_grad + backward after a longer batch's gradients equals a fresh model's, bit for bit");
    double squares = used.grad_squares, separate = sum_of_squares(used.grads_memory, n);
    check(fabs(squares - separate) <= 1e-7 * separate, "the squares summed in the backward, %.12g, equal "
          "a separate pass's %.12g up to the order of the float block sums (1e-7)", squares, separate);
    int threads = use_threads(1);
    gpt2_zero_grad(&used);
    gpt2_backward(&used);
    use_threads(threads);
    check(used.grad_squares == squares, "the squares summed in the backward: the same bits on one thread");
    // accumulation: a second backward without zero_grad adds the second batch's gradients
    float* first = copy_floats(fresh.grads_memory, n);
    gpt2_forward(&fresh, x, y, 2, 8, -1);
    gpt2_zero_grad(&fresh);
    gpt2_backward(&fresh);
    float* second = copy_floats(fresh.grads_memory, n);
    gpt2_forward(&fresh, y, x, 2, 8, -1);
    gpt2_zero_grad(&fresh);
    gpt2_backward(&fresh);
    gpt2_forward(&fresh, x, y, 2, 8, -1);
    gpt2_backward(&fresh);
    double worst = 0.0, largest = 0.0;
    for (size_t i = 0; i < n; i++) {
        double sum = (double)first[i] + second[i], d = fabs(fresh.grads_memory[i] - sum);
        worst = d > worst ? d : worst;
        largest = fabs(sum) > largest ? fabs(sum) : largest;
    }
    check(worst <= 1e-6 * largest, "two backwards without zero_grad add up the two batches' gradients "
          "(worst difference %.1e of the largest %.2e)", worst, largest);
    free(first); free(second);
    gpt2_free(&used);
    gpt2_free(&fresh);
}

// ----------------------------------------------------------------------------
// the worked example of the article on training vs inference (article 002): three
// tokens with 2-d embeddings and given Wq, Wk, Wv, recomputed with this program's
// matmul and attention. The expected values come from PyTorch (ref_article002.txt).
// The article uses no mask; our attention is causal, so its rows 1-2 are the causal
// ones, and the last row (which sees every token either way) must match the unmasked
// result too. The article's own printed numbers disagree (see doc/errata.md).

static float* read_matrix(const char* path, const char* name, int rows, int cols) {
    FILE* f = fopenCheck(path, "r");
    char line[512], word[64];
    int r, c;
    float* m = NULL;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%63s %d %d", word, &r, &c) == 3 && strcmp(word, name) == 0) {
            if (r != rows || c != cols)
                die("'%s': matrix %s is %dx%d, expected %dx%d", path, name, r, c, rows, cols);
            m = mallocCheck((size_t)rows * cols * sizeof(float));
            for (int i = 0; i < rows * cols; i++) {
                char tok[64];
                if (fscanf(f, "%63s", tok) != 1) die("'%s': matrix %s is truncated", path, name);
                m[i] = strcmp(tok, "-inf") == 0 ? -INFINITY : strtof(tok, NULL);
            }
            break;
        }
    }
    fclose(f);
    if (!m) die("'%s' has no matrix '%s'", path, name);
    return m;
}

static void test_article_example(const char* path) {
    printf("-- the article example (article 002: three tokens, d = 2), %s\n", path);
    float *X = read_matrix(path, "X", 3, 2), *Wq = read_matrix(path, "Wq", 2, 2);
    float *Wk = read_matrix(path, "Wk", 2, 2), *Wv = read_matrix(path, "Wv", 2, 2);
    // the article computes Q = X Wq; our matmul computes X W^T (nn.Linear), so each block of
    // qkvw holds the transposed matrix
    float qkvw[6 * 2];
    const float* W[3] = {Wq, Wk, Wv};
    for (int m = 0; m < 3; m++)
        for (int o = 0; o < 2; o++)
            for (int i = 0; i < 2; i++)
                qkvw[(m * 2 + o) * 2 + i] = W[m][i * 2 + o];
    float qkv[3 * 6], out[3 * 2], scores[9], probs[9];
    matmul_forward(qkv, X, qkvw, NULL, 3, 2, 6);
    attention_forward(out, scores, probs, NULL, qkv, qkv + 2, self_attention(1, 3, 2, 1, 1, 1), NULL);
    float *ref_scaled = read_matrix(path, "scaled_causal", 3, 3),
          *ref_w = read_matrix(path, "weights_causal", 3, 3);
    float *ref_out = read_matrix(path, "out_causal", 3, 2), *ref_w_full = read_matrix(path, "weights", 3, 3);
    float *ref_out_full = read_matrix(path, "out", 3, 2);
    float e_scores = 0.0f;
    for (int i = 0; i < 9; i++)
        e_scores = fmaxf(e_scores, isinf(ref_scaled[i])
                                       ? (isinf(scores[i]) && scores[i] < 0 ? 0.0f : INFINITY)
                                       : fabsf(scores[i] - ref_scaled[i]));
    float e_w = compare(probs, ref_w, 1, 9, 0).max_abs, e_out = compare(out, ref_out, 1, 6, 0).max_abs;
    float e_last = fmaxf(compare(probs + 6, ref_w_full + 6, 1, 3, 0).max_abs,
                         compare(out + 4, ref_out_full + 4, 1, 2, 0).max_abs);
    check(e_scores <= 1e-6f,
          "article example: scaled, masked scores match PyTorch (max error %.1e), e.g. %.7f", e_scores,
          scores[0]);
    check(e_w <= 1e-6f, "article example: causal attention weights match PyTorch (max error %.1e)", e_w);
    check(e_out <= 1e-6f,
          "article example: causal outputs match PyTorch (max error %.1e): last row %.6f %.6f", e_out, out[4],
          out[5]);
    check(e_last <= 1e-6f, "article example: the last row equals the unmasked result (max error %.1e)",
          e_last);
    // the article prints 0.031 for the first score q1.k1 and 0.705 for the first output;
    // both are wrong: q1 = (0.07, 0.10), k1 = (0.19, 0.22), q1.k1 = 0.0353
    check(fabsf(scores[0] * sqrtf(2.0f) - 0.0353f) < 1e-6f && fabsf(scores[0] * sqrtf(2.0f) - 0.031f) > 1e-3f,
          "article erratum: q1.k1 is %.4f, not the printed 0.031", scores[0] * sqrtf(2.0f));
    free(X); free(Wq); free(Wk); free(Wv);
    free(ref_scaled); free(ref_w); free(ref_out); free(ref_w_full); free(ref_out_full);
}

// ----------------------------------------------------------------------------
// errata of the five articles the readers have open (doc/errata.md lists them, E1..E12).
// Each check computes the right value with this program's own functions and shows that
// the article's printed number or formula gives something else. The float64 values
// marked "PyTorch" were computed by data/make_reference.py (they are the numbers in
// data/ref/ref_article002.txt), embedded here so this test needs no file and no PyTorch.

// article 002's worked example ("I love coding", d = 2), as the article gives it: the
// products, and attention without the mask (as the KV cache's last query sees every cached
// key) and with it (the training path)
typedef struct {
    float qkv[18], Q[6], K[6], V[6], S[9];  // the products; S = Q K^T
    float Wfull[9], Ofull[6];                // no mask: the weights and outputs
    float Oc[6], Sc[9], Pc[9];               // causal: outputs, scaled scores, weights
} WorkedExample;
static WorkedExample article002_worked_example(void) {
    WorkedExample w;
    const float X[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
    const float Wq[4] = {0.1f, 0.2f, 0.3f, 0.4f}, Wk[4] = {0.5f, 0.6f, 0.7f, 0.8f},
                Wv[4] = {0.9f, 1.0f, 1.1f, 1.2f};
    const float* W3[3] = {Wq, Wk, Wv};
    float qkvw[12];
    for (int m = 0; m < 3; m++)  // the article computes X @ W; our matmul X @ W^T, so store W^T
        for (int o = 0; o < 2; o++)
            for (int i = 0; i < 2; i++)
                qkvw[(m * 2 + o) * 2 + i] = W3[m][i * 2 + o];
    matmul_forward(w.qkv, X, qkvw, NULL, 3, 2, 6);
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 2; i++) {
            w.Q[t * 2 + i] = w.qkv[t * 6 + i];
            w.K[t * 2 + i] = w.qkv[t * 6 + 2 + i];
            w.V[t * 2 + i] = w.qkv[t * 6 + 4 + i];
        }
    matmul_forward(w.S, w.Q, w.K, NULL, 3, 2, 3);  // S = Q K^T, with the same matmul
    // unmasked weights and outputs: every query against every key, as the last position of a
    // KV cache sees all the cached ones (attention without the mask)
    float Sfull[9];
    attention_forward(w.Ofull, Sfull, w.Wfull, NULL, w.qkv, w.qkv + 2, self_attention(1, 3, 2, 1, 1, 0), NULL);
    // causal: the training path
    attention_forward(w.Oc, w.Sc, w.Pc, NULL, w.qkv, w.qkv + 2, self_attention(1, 3, 2, 1, 1, 1), NULL);
    return w;
}

// E1-E4, article 002's worked example: its printed scores, scaled scores, weights and
// outputs, against PyTorch's and ours
static void erratum_e1_to_e4(void) {
    WorkedExample w = article002_worked_example();
    const float *S = w.S, *Wfull = w.Wfull, *Ofull = w.Ofull, *Oc = w.Oc, *Sc = w.Sc, *V = w.V;
    // PyTorch:
    const float pt_scores[9] = {0.0353f, 0.0801f, 0.1249f, 0.0769f, 0.1745f, 0.2721f, 0.1185f, 0.2689f,
                                0.4193f};
    const float pt_w[9] = {0.322831375f, 0.333221859f, 0.343946766f, 0.310611325f, 0.332804754f, 0.356583921f,
                           0.298576939f, 0.332080202f, 0.369342859f};
    const float pt_out[6] = {0.718446156f, 0.789290772f, 0.728389039f, 0.800227942f, 0.738306368f,
                             0.811137005f};
    const float pt_out_causal[6] = {0.31f, 0.34f, 0.516898624f, 0.567588487f, 0.738306368f, 0.811137005f};
    // the article's:
    const float printed_scores[9] = {0.031f, 0.071f, 0.111f, 0.077f, 0.177f, 0.277f, 0.123f, 0.283f, 0.443f};
    const float printed_scaled[9] = {0.0219f, 0.0502f, 0.0785f, 0.0545f, 0.1253f, 0.1960f, 0.0870f, 0.2003f,
                                     0.3136f};
    const float printed_w[9] = {0.298f, 0.401f, 0.301f, 0.288f, 0.423f, 0.289f, 0.280f, 0.440f, 0.280f};
    const float printed_out[6] = {0.705f, 0.787f, 0.706f, 0.788f, 0.707f, 0.790f};
    float e_s = 0, e_w = 0, e_o = 0, e_oc = 0, e_sc = 0;
    int wrong_s = 0, wrong_sc = 0, wrong_w = 0, wrong_o = 0, rows_increase = 1, printed_middle_max = 1;
    for (int k = 0; k < 9; k++) {
        float scaled = S[k] / sqrtf(2.0f);
        e_s = fmaxf(e_s, fabsf(S[k] - pt_scores[k]));
        e_w = fmaxf(e_w, fabsf(Wfull[k] - pt_w[k]));
        // causal scores = S / sqrt(hs) where unmasked
        if (k % 3 <= k / 3) e_sc = fmaxf(e_sc, fabsf(Sc[k] - scaled));
        wrong_s += fabsf(S[k] - printed_scores[k]) > 5e-4f;        // more than the rounding of 3 decimals
        wrong_sc += fabsf(scaled - printed_scaled[k]) > 5e-5f;     // of 4 decimals
        wrong_w += fabsf(Wfull[k] - printed_w[k]) > 5e-4f;
    }
    for (int i = 0; i < 3; i++) {
        rows_increase &= Wfull[i * 3] < Wfull[i * 3 + 1] && Wfull[i * 3 + 1] < Wfull[i * 3 + 2];
        printed_middle_max &= printed_w[i * 3 + 1] > printed_w[i * 3]
                              && printed_w[i * 3 + 1] > printed_w[i * 3 + 2];
    }
    for (int k = 0; k < 6; k++) {
        e_o = fmaxf(e_o, fabsf(Ofull[k] - pt_out[k]));
        e_oc = fmaxf(e_oc, fabsf(Oc[k] - pt_out_causal[k]));
        wrong_o += fabsf(Ofull[k] - printed_out[k]) > 5e-4f;
    }
    check(e_s < 1e-6f && wrong_s == 8 && fabsf(S[3] - printed_scores[3]) < 5e-4f,
          "E1 article 002 scores: QK^T = %.4f %.4f %.4f / %.4f %.4f %.4f / %.4f %.4f %.4f as PyTorch "
          "(error %.1e); 8 of the 9 printed (0.031 ...) are wrong, only 0.077 is right",
          S[0], S[1], S[2], S[3], S[4], S[5], S[6], S[7], S[8], e_s);
    float e_article_scaled = 0.0f;  // the article's scaled scores are its own wrong scores / sqrt(2)
    for (int k = 0; k < 9; k++)
        e_article_scaled = fmaxf(e_article_scaled,
                                 fabsf(printed_scaled[k] - printed_scores[k] / sqrtf(2.0f)));
    check(e_sc < 1e-6f && wrong_sc == 9 && e_article_scaled < 4e-4f,
          "E2 article 002 scaled scores: %.4f %.4f %.4f / ... (our attention's 1/sqrt(2) agrees, %.1e); "
          "all 9 printed differ, being the wrong scores / sqrt(2)",
          S[0] / sqrtf(2.0f), S[1] / sqrtf(2.0f), S[2] / sqrtf(2.0f), e_sc);
    float row0_from_printed[3], m0 = 0.0f;  // softmax of the article's own first row of scaled scores
    for (int j = 0; j < 3; j++) {
        row0_from_printed[j] = expf(printed_scaled[j]);
        m0 += row0_from_printed[j];
    }
    for (int j = 0; j < 3; j++)
        row0_from_printed[j] /= m0;
    check(e_w < 1e-6f && wrong_w == 9 && rows_increase && printed_middle_max
          && fabsf(row0_from_printed[1] - printed_w[1]) > 0.05f,
          "E3 article 002 weights (no mask): %.4f %.4f %.4f / %.4f %.4f %.4f / %.4f %.4f %.4f as PyTorch "
          "(error %.1e); all 9 printed differ; each row must increase (the scores do), the printed rows "
          "peak in the middle; even softmax of the printed scaled row 0 gives %.3f %.3f %.3f",
          Wfull[0], Wfull[1], Wfull[2], Wfull[3], Wfull[4], Wfull[5], Wfull[6], Wfull[7], Wfull[8], e_w,
          row0_from_printed[0], row0_from_printed[1], row0_from_printed[2]);
    check(e_o < 1e-6f && wrong_o == 6 && e_oc < 1e-6f,
          "E4 article 002 outputs (no mask): %.4f %.4f / %.4f %.4f / %.4f %.4f as PyTorch (error %.1e), "
          "all 6 printed (0.705 ...) differ; with the causal mask: %.4f %.4f / %.4f %.4f / %.4f %.4f",
          Ofull[0], Ofull[1], Ofull[2], Ofull[3], Ofull[4], Ofull[5], e_o,
          Oc[0], Oc[1], Oc[2], Oc[3], Oc[4], Oc[5]);
    // the printed outputs do not follow from the printed weights either: those weights times the
    // article's V (its own embeddings times its Wv, the V above) give 0.711 0.781 in row 0
    double from_printed[6];
    int apart = 0;
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 2; c++) {
            from_printed[i * 2 + c] = 0.0;
            for (int j = 0; j < 3; j++)
                from_printed[i * 2 + c] += (double)printed_w[i * 3 + j] * V[j * 2 + c];
            apart += fabs(from_printed[i * 2 + c] - printed_out[i * 2 + c]) > 5e-4;
        }
    check(apart == 6, "E4 article 002: its printed weights times its V give %.4f %.4f / %.4f %.4f / "
          "%.4f %.4f, not its printed outputs (0.705 0.787 / ...): all 6 differ", from_printed[0], from_printed[1],
          from_printed[2], from_printed[3], from_printed[4], from_printed[5]);
}

// E5, article 000, backward step 2: grad_v = att^T . G_in, not att . G_in. Same Q, K, V,
// an explicit G_in; the other backward steps are recomputed by hand from the article's formulas.
static void erratum_e5(void) {
    WorkedExample w = article002_worked_example();
    const float *qkv = w.qkv, *Pc = w.Pc, *Q = w.Q, *K = w.K, *V = w.V;
    const float G[6] = {1.0f, -0.5f, 0.25f, 2.0f, -1.0f, 0.5f};
    float dqkv[18] = {0};
    attention_backward(dqkv, dqkv + 2, G, qkv, qkv + 2, Pc, NULL, self_attention(1, 3, 2, 1, 1, 1),
                       NULL);
    float e_vt = 0.0f, d_v = 0.0f, e_qk = 0.0f;
    for (int j = 0; j < 3; j++)
        for (int c = 0; c < 2; c++) {
            float atG = 0.0f, aG = 0.0f;
            for (int i = 0; i < 3; i++) {
                atG += Pc[i * 3 + j] * G[i * 2 + c];
                aG += Pc[j * 3 + i] * G[i * 2 + c];
            }
            e_vt = fmaxf(e_vt, fabsf(dqkv[j * 6 + 4 + c] - atG));
            d_v = fmaxf(d_v, fabsf(dqkv[j * 6 + 4 + c] - aG));
        }
    float dS[9];  // step 1: dP = G V^T; step 4: dS = P (dP - rowsum(P dP)); step 6: times 1/sqrt(hs)
    for (int i = 0; i < 3; i++) {
        float dP[3], dot = 0.0f;
        for (int j = 0; j < 3; j++) {
            dP[j] = G[i * 2] * V[j * 2] + G[i * 2 + 1] * V[j * 2 + 1];
            dot += Pc[i * 3 + j] * dP[j];
        }
        for (int j = 0; j < 3; j++)
            dS[i * 3 + j] = Pc[i * 3 + j] * (dP[j] - dot) / sqrtf(2.0f);
    }
    for (int i = 0; i < 3; i++)  // step 7: dQ = dS K; step 8: dK = dS^T Q
        for (int c = 0; c < 2; c++) {
            float dq = 0.0f, dk = 0.0f;
            for (int j = 0; j < 3; j++) {
                dq += dS[i * 3 + j] * K[j * 2 + c];
                dk += dS[j * 3 + i] * Q[j * 2 + c];
            }
            e_qk = fmaxf(e_qk, fmaxf(fabsf(dqkv[i * 6 + c] - dq), fabsf(dqkv[i * 6 + 2 + c] - dk)));
        }
    check(e_vt < 1e-6f && d_v > 0.1f && e_qk < 1e-6f,
          "E5 article 000 backward step 2: attention_backward's dV equals att^T.G (error %.1e) and not att.G "
          "(off by %.2f); steps 1, 4, 6, 7, 8 as written agree with it (error %.1e)", e_vt, d_v, e_qk);
}

// E6, article 000's formula softmax((QK^T + M)/sqrt(D)) with M the 0/1 lower-triangular matrix
// masks nothing; an additive mask must be 0 (allowed) / -inf (future), which is what step 3 does
static void erratum_e6(void) {
    WorkedExample w = article002_worked_example();
    const float *S = w.S, *Pc = w.Pc;
    float future01 = 0.0f, e_inf = 0.0f;
    int exact_zero = 1;
    for (int i = 0; i < 3; i++) {
        float a01[3], ainf[3], s01 = 0.0f, sinf = 0.0f;
        for (int j = 0; j < 3; j++) {
            a01[j] = expf((S[i * 3 + j] + (j <= i ? 1.0f : 0.0f)) / sqrtf(2.0f)); s01 += a01[j];
            ainf[j] = expf((S[i * 3 + j] + (j <= i ? 0.0f : -INFINITY)) / sqrtf(2.0f)); sinf += ainf[j];
        }
        for (int j = 0; j < 3; j++) {
            if (j > i) { future01 = fmaxf(future01, a01[j] / s01); exact_zero &= Pc[i * 3 + j] == 0.0f; }
            e_inf = fmaxf(e_inf, fabsf(ainf[j] / sinf - Pc[i * 3 + j]));
        }
    }
    check(exact_zero && future01 > 0.2f && e_inf < 1e-6f,
          "E6 article 000 mask: our causal weights of future keys are exactly 0; the formula with the 0/1 "
          "matrix added gives them up to %.3f; with 0/-inf added it equals our attention (error %.1e)",
          future01, e_inf);
}

// the scale is 1/sqrt(head size), not 1/sqrt(model width) (articles 001, 003)
// nor 1/dim (004's comment)
static void erratum_e7(void) {
    int C = 4, NH = 2, T = 2;  // hs = 2
    float x[2 * 12] = {0}, o[2 * 4], sc[2 * 2 * 2], pr[2 * 2 * 2];
    x[0 * 12 + 4] = 2.0f; x[0 * 12 + 5] = 1.0f;    // key of position 0, head 0
    x[1 * 12 + 0] = 1.0f; x[1 * 12 + 1] = 2.0f;    // query of position 1, head 0: q.k = 4
    x[0 * 12 + 6] = 1.0f; x[0 * 12 + 7] = -3.0f;   // key of position 0, head 1
    x[1 * 12 + 2] = 0.5f; x[1 * 12 + 3] = -1.0f;   // query of position 1, head 1: q.k = 3.5
    attention_forward(o, sc, pr, NULL, x, x + C, self_attention(1, T, C, NH, NH, 1), NULL);
    float s0 = sc[(0 * T + 1) * T + 0], s1 = sc[(1 * T + 1) * T + 0];
    check(fabsf(s0 - 4.0f / sqrtf(2.0f)) < 1e-6f && fabsf(s1 - 3.5f / sqrtf(2.0f)) < 1e-6f
          && fabsf(s0 - 4.0f / sqrtf(4.0f)) > 0.5f && fabsf(s0 - 4.0f / 4.0f) > 0.5f,
          "E7 scale: with C=4, NH=2 the scores are q.k/sqrt(hs=2) = %.4f, %.4f, not q.k/sqrt(C) = %.1f "
          "nor q.k/C = %.1f", s0, s1, 4.0f / sqrtf(4.0f), 1.0f);
}

// article 001: the 1/sqrt(d) is there to keep the scores' spread near 1 (softmax not
// saturated), not for speed. q, k ~ N(0,1) with hs = 64: q.k has standard deviation 8.
static void erratum_e8(void) {
    int T = 32, C = 64;
    uint64_t rng = 2024;
    float* x = random_floats(&rng, (size_t)T * 3 * C, 0.0f, 1.0f);
    float *o = zeros((size_t)T * C), *sc = zeros((size_t)T * T), *p1 = zeros((size_t)T * T),
          *p8 = zeros((size_t)T * T);
    attention_forward(o, sc, p1, NULL, x, x + C, self_attention(1, T, C, 1, 1, 1), NULL);
    double s2 = 0.0; int n = 0;
    for (int t = 0; t < T; t++)
        for (int j = 0; j <= t; j++) {
            s2 += (double)sc[t * T + j] * sc[t * T + j];
            n++;
        }
    for (int t = 0; t < T; t++)
        for (int i = 0; i < C; i++)
            x[(size_t)t * 3 * C + i] *= 8.0f;  // undo the scale
    attention_forward(o, sc, p8, NULL, x, x + C, self_attention(1, T, C, 1, 1, 1), NULL);
    double max1 = 0.0, max8 = 0.0;
    for (int t = T / 2; t < T; t++) {
        float a = 0.0f, b = 0.0f;
        for (int j = 0; j <= t; j++) {
            a = fmaxf(a, p1[t * T + j]);
            b = fmaxf(b, p8[t * T + j]);
        }
        max1 += a / (T / 2); max8 += b / (T / 2);
    }
    float sd = (float)sqrt(s2 / n);
    check(sd > 0.8f && sd < 1.25f && max8 > 0.7 && max1 < 0.3,
          "E8 article 001 scale: scaled scores have std %.2f (unscaled: 8x that); over 16-32 keys the "
          "largest weight averages %.2f scaled but %.2f unscaled (saturated softmax, vanishing gradient)",
          sd, max1, max8);
    free(x); free(o); free(sc); free(p1); free(p8);
}

// article 001: layernorm gives mean 0, variance 1 only before its learned weight and bias,
// and the vector's length is then sqrt(C), not 1
static void erratum_e9(void) {
    enum { C = 16 };
    float x[C], w1[C], b0[C], w2[C], b2[C], y[C], y2[C], mean, rstd;
    for (int i = 0; i < C; i++) {
        x[i] = 0.5f * i - 3.0f + (float)(i % 3);
        w1[i] = 1.0f;
        b0[i] = 0.0f;
        w2[i] = 2.0f;
        b2[i] = 0.5f;
    }
    layernorm_forward(y, &mean, &rstd, x, w1, b0, 1, C);
    layernorm_forward(y2, &mean, &rstd, x, w2, b2, 1, C);
    double m1 = 0, v1 = 0, n1 = 0, m2 = 0, v2 = 0;
    for (int i = 0; i < C; i++) {
        m1 += y[i] / C;
        m2 += y2[i] / C;
        n1 += (double)y[i] * y[i];
    }
    for (int i = 0; i < C; i++) {
        v1 += (y[i] - m1) * (y[i] - m1) / C;
        v2 += (y2[i] - m2) * (y2[i] - m2) / C;
    }
    check(fabs(m1) < 1e-6 && fabs(v1 - 1.0) < 1e-4 && fabs(sqrt(n1) - 4.0) < 1e-3 && fabs(m2 - 0.5) < 1e-6
          && fabs(v2 - 4.0) < 1e-3,
          "E9 article 001 layernorm: weight 1, bias 0 gives mean %.1e, variance %.5f, length %.4f = "
          "sqrt(16), not 1; weight 2, bias 0.5 gives mean %.3f, variance %.3f", m1, v1, sqrt(n1), m2, v2);
}

// article 001: cos = -1 at an angle of pi (opposite vectors), 0 at pi/2 (orthogonal)
static void erratum_e10(void) {
    float a[3] = {1, 2, 3}, b[3] = {-1, -2, -3}, c[3] = {2, -1, 0}, ab = 0, ac = 0, aa = 0, cc = 0;
    for (int i = 0; i < 3; i++) {
        ab += a[i] * b[i];
        ac += a[i] * c[i];
        aa += a[i] * a[i];
        cc += c[i] * c[i];
    }
    float cos_pi = ab / (sqrtf(aa) * sqrtf(aa)), cos_half = ac / (sqrtf(aa) * sqrtf(cc));
    check(fabsf(cos_pi + 1.0f) < 1e-6f && fabsf(cos_half) < 1e-6f
          && fabsf(cosf((float)M_PI) + 1.0f) < 1e-6f,
          "E10 article 001 cosine: opposite vectors (angle pi) have cos %.3f, not 0; orthogonal ones "
          "(pi/2) %.3f", cos_pi, cos_half);
}

// article 002: the loss is the mean over positions (as PyTorch's F.cross_entropy), not the sum;
// and each position's prediction depends on the whole prefix, never on later tokens
static void erratum_e11_e12(void) {
    GPT2 m;
    GPT2Config cfg = {.max_seq_len = 4, .vocab_size = 5, .padded_vocab_size = 8, .num_layers = 1,
                      .num_heads = 2, .channels = 8, .num_kv_heads = 2};
    gpt2_init_random(&m, cfg, 7);
    int in[4] = {0, 1, 2, 3}, tg[4] = {1, 2, 3, 4};
    float loss = gpt2_forward(&m, in, tg, 1, 4, -1), sum = 0.0f, probs[4 * 8];
    for (int t = 0; t < 4; t++)
        sum += m.scratch.losses[t];
    memcpy(probs, m.acts.probs, sizeof probs);
    gpt2_zero_grad(&m);
    gpt2_backward(&m);
    float e_grad = 0.0f;  // dlogits (written over the logits) = (p - onehot) / (B*T)
    for (int t = 0; t < 4; t++)
        for (int v = 0; v < 5; v++)
            e_grad = fmaxf(e_grad,
                           fabsf(m.acts.logits[t * 8 + v] - (probs[t * 8 + v] - (v == tg[t])) / 4.0f));
    check(fabsf(loss - sum / 4.0f) < 1e-6f && fabsf(loss - sum) > 1.0f && e_grad < 1e-7f,
          "E11 article 002 loss: gpt2_forward returns the mean %.4f of the 4 positions' losses, not "
          "their sum %.4f; dlogits = (p - onehot)/(B*T) (error %.1e)", loss, sum, e_grad);
    float base[4 * 8], later[4 * 8], first[4 * 8];
    gpt2_forward(&m, in, NULL, 1, 4, -1); memcpy(base, m.acts.logits, sizeof base);
    int in_later[4] = {0, 1, 4, 3}, in_first[4] = {3, 1, 2, 3};
    gpt2_forward(&m, in_later, NULL, 1, 4, -1); memcpy(later, m.acts.logits, sizeof later);
    gpt2_forward(&m, in_first, NULL, 1, 4, -1); memcpy(first, m.acts.logits, sizeof first);
    int past_unchanged = memcmp(base, later, 2 * 8 * sizeof(float)) == 0;
    int prefix_matters = 1;
    for (int t = 1; t < 4; t++)
        prefix_matters &= memcmp(base + t * 8, first + t * 8, 8 * sizeof(float)) != 0;
    check(past_unchanged && memcmp(base + 16, later + 16, 8 * sizeof(float)) != 0 && prefix_matters,
          "E12 article 002 decoding: changing token 2 leaves the predictions at positions 0-1 "
          "bit-identical; changing token 0 changes the predictions at 1, 2 and 3 (each sees the whole "
          "prefix, not just the previous label)");
    gpt2_free(&m);
}

// a number that is right: article 001's 768*64*3*144 = 21,233,664 Q/K/V weights of GPT-2 small
static void erratum_checked_qkv_count(void) {
    GPT2Config d12 = {.max_seq_len = 1024, .vocab_size = 50257, .padded_vocab_size = 50304,
                      .num_layers = 12, .num_heads = 12, .channels = 768, .num_kv_heads = 12};
    size_t sizes[NUM_PARAMETER_TENSORS];
    fill_in_parameter_sizes(sizes, d12);
    check(sizes[4] == 21233664,
          "article 001's count is right: qkvw of d12 (GPT-2 small) has %zu weights (plus %zu biases)",
          sizes[4], sizes[5]);
}

static const struct { const char* id; void (*check)(void); } ERRATA[] = {
    {"E1-E4", erratum_e1_to_e4}, {"E5", erratum_e5}, {"E6", erratum_e6}, {"E7", erratum_e7},
    {"E8", erratum_e8}, {"E9", erratum_e9}, {"E10", erratum_e10}, {"E11, E12", erratum_e11_e12},
    {"checked, 001 count", erratum_checked_qkv_count},
};

static void test_errata(void) {
    printf("-- errata of the articles (doc/errata.md)\n");
    for (size_t i = 0; i < sizeof ERRATA / sizeof ERRATA[0]; i++)
        ERRATA[i].check();
}

// ----------------------------------------------------------------------------
// GPT-2's byte-pair encoding (util/bpe.h) against tiktoken, and tokenizer_encode for both
// kinds of vocabulary. data/ref/gpt2_bpe_cases.txt holds tiktoken's ids for each line of
// tests/bpe_stress.txt and for the whole file (tests/make_bpe_cases.js wrote it).

typedef struct { unsigned char* text; size_t len; int* ids; size_t count; } BPECase;

static int hex_digit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// the next line of f into *line, grown as needed (*cap bytes); 0 at the end of f. POSIX's
// getline, which MinGW lacks.
static int read_line(FILE* f, char** line, size_t* cap) {
    size_t n = 0;
    if (!*line) *line = mallocCheck(*cap = 4096);
    while (fgets(*line + n, (int)(*cap - n), f)) {
        n += strlen(*line + n);
        if ((*line)[n - 1] == '\n') return 1;
        if (n + 1 == *cap) {
            *line = realloc(*line, *cap *= 2);
            if (!*line) die("out of memory reading a line of %zu bytes", n);
        }
    }
    return n > 0;
}

// the cases: lines "text <hex of the UTF-8 bytes>", then "ids <id> <id> ..."; returns how many
static int read_bpe_cases(const char* path, BPECase* cases, int max_cases) {
    FILE* f = fopenCheck(path, "r");
    char* line = NULL;
    size_t cap = 0;
    int n = 0;
    while (read_line(f, &line, &cap)) {
        if (strncmp(line, "text ", 5) == 0 && n < max_cases) {
            BPECase* c = &cases[n];
            c->text = mallocCheck(strlen(line) / 2 + 1);
            c->len = 0;
            for (const char* h = line + 5; hex_digit(h[0]) >= 0 && hex_digit(h[1]) >= 0; h += 2)
                c->text[c->len++] = (unsigned char)(16 * hex_digit(h[0]) + hex_digit(h[1]));
        } else if (strncmp(line, "ids", 3) == 0 && n < max_cases) {
            BPECase* c = &cases[n++];
            c->ids = mallocCheck(strlen(line) * sizeof(int));
            c->count = 0;
            for (char *p = line + 3, *end; (c->ids[c->count] = (int)strtol(p, &end, 10)), end != p; p = end)
                c->count++;
        }
    }
    free(line);
    fclose(f);
    return n;
}

// how many of the cases bpe_encode gives exactly their ids; the first that differs, in first_bad
static int bpe_cases_equal(const BPE* bpe, const BPECase* cases, int n_cases, char* first_bad, size_t size) {
    int same = 0;
    first_bad[0] = '\0';
    for (int i = 0; i < n_cases; i++) {
        int* ids = mallocCheck((cases[i].len + 1) * sizeof(int));
        size_t count = bpe_encode(bpe, cases[i].text, cases[i].len, ids);
        size_t k = 0;
        while (k < count && k < cases[i].count && ids[k] == cases[i].ids[k])
            k++;
        if (k == count && count == cases[i].count) same++;
        else if (!first_bad[0])
            snprintf(first_bad, size, "; case %d differs at id %zu", i, k);
        free(ids);
    }
    return same;
}

// the tokens' bytes, concatenated, equal text[0..n)
static int decodes_to(const Tokenizer* tk, const int* ids, size_t count, const unsigned char* text,
                      size_t n) {
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        size_t len = (size_t)tk->token_length[ids[i]];
        if (at + len > n || memcmp(text + at, tk->token_table[ids[i]], len) != 0) return 0;
        at += len;
    }
    return at == n;
}

// encodes text[0..n) in parts cut at every place bpe_next_cut allows; returns the number of ids
static size_t encode_in_parts(const BPE* bpe, const unsigned char* text, size_t n, int* ids, int* parts) {
    size_t count = 0, start = 0;
    *parts = 0;
    while (start < n) {
        size_t cut = bpe_next_cut(text, n, start + 1);
        count += bpe_encode(bpe, text + start, cut - start, ids + count);
        start = cut;
        (*parts)++;
    }
    return count;
}

// the pieces of the pre-tokenizer, joined by '|'
static void pieces_of(const char* text, char* out) {
    size_t n = strlen(text), k = 0;
    for (size_t p = 0, end; p < n; p = end) {
        end = bpe_piece_end((const unsigned char*)text, n, p);
        if (p > 0) out[k++] = '|';
        memcpy(out + k, text + p, end - p);
        k += end - p;
    }
    out[k] = '\0';
}

static void test_bpe(void) {
    Tokenizer tk;
    tokenizer_init(&tk, "data/gpt2_tokenizer.bin");
    BPE bpe;
    bpe_init(&bpe, tk.vocab_size, tk.token_table, tk.token_length);
    static BPECase cases[64];
    int n_cases = read_bpe_cases("data/ref/gpt2_bpe_cases.txt", cases, 64);

    // B1, B2: tiktoken's ids, with the merges as they run (a scan for short pieces, the heap for
    // long ones), then with every piece through the heap
    const size_t heap_from[2] = {bpe.heap_from, 0};
    char first_bad[64];
    for (int h = 0; h < 2; h++) {
        bpe.heap_from = heap_from[h];
        int same = bpe_cases_equal(&bpe, cases, n_cases, first_bad, sizeof first_bad);
        check(n_cases >= 40 && same == n_cases, "B%d GPT-2 BPE%s: %d of %d texts (each line of "
              "tests/bpe_stress.txt and the whole file) give tiktoken's ids exactly%s", h + 1,
              h ? ", every piece merged with the heap" : "", same, n_cases, first_bad);
    }
    bpe.heap_from = heap_from[0];

    // B1u: at the edge of tiktoken's Unicode version (16.0; util/unicode_tables.h): letters and
    // numbers new in 17.0 are symbols for it, those new in 15.1 and 16.0 letters; in contexts
    // where the class decides the pieces (U+331C4 + `'ll` is U+331C4' + `ll`, ids ... 6 297)
    static BPECase edge[64];
    int n_edge = read_bpe_cases("data/ref/gpt2_unicode_cases.txt", edge, 64);
    int same_edge = bpe_cases_equal(&bpe, edge, n_edge, first_bad, sizeof first_bad);
    int ll_ok = n_edge > 0 && edge[0].len == 7 && memcmp(edge[0].text, "\xf0\xb3\x87\x84'll", 7) == 0
                && edge[0].count == 6 && edge[0].ids[4] == 6 && edge[0].ids[5] == 297;
    check(n_edge >= 60 && same_edge == n_edge && ll_ok, "B1u GPT-2 BPE at Unicode 16.0's edge "
          "(data/ref/gpt2_unicode_cases.txt): %d of %d texts give tiktoken's ids, U+331C4 + 'll among "
          "them%s", same_edge, n_edge, first_bad);
    for (int i = 0; i < n_edge; i++) {
        free(edge[i].text);
        free(edge[i].ids);
    }

    // B3: decode(encode(x)) == x, byte for byte: the cases, and random bytes (invalid UTF-8, 0 bytes)
    uint64_t rng = 99;
    int round_trips = 0, trials = 0;
    unsigned char random_text[300];
    int ids[300 * 2];
    for (int i = 0; i < n_cases; i++, trials++) {
        int* out = mallocCheck((cases[i].len + 1) * sizeof(int));
        size_t count = bpe_encode(&bpe, cases[i].text, cases[i].len, out);
        round_trips += decodes_to(&tk, out, count, cases[i].text, cases[i].len);
        free(out);
    }
    for (int t = 0; t < 500; t++, trials++) {
        size_t n = 1 + random_u64(&rng) % 300;
        for (size_t i = 0; i < n; i++)  // any bytes, or bytes that make awkward UTF-8
            random_text[i] = t % 2 ? (unsigned char)random_u64(&rng)
                                   : (unsigned char)"a \n'\xe5\x9b\xa0\xff\x80\0"[random_u64(&rng) % 10];
        round_trips += decodes_to(&tk, ids, bpe_encode(&bpe, random_text, n, ids), random_text, n);
    }
    check(round_trips == trials, "B3 GPT-2 BPE: decode(encode(x)) == x byte for byte in %d of %d texts (the "
          "cases, and random bytes with invalid UTF-8 and 0 bytes)", round_trips, trials);

    // B4: the pre-tokenizer's pieces, as the pattern's alternatives make them
    const char* pieces[][2] = {
        {"a   b", "a|  | b"}, {"a\n\nb", "a|\n|\n|b"}, {"x  ", "x|  "},
        {"it's we'll I'M", "it|'s| we|'ll| I|'|M"},
        {"1234 abc?! \xe5\x9b\xa0\xe6\x9e\x9c", "1234| abc|?!| \xe5\x9b\xa0\xe6\x9e\x9c"},
        {" \t\n  x", " \t\n | x"}, {"''s", "''|s"}, {"\xe3\x80\x80x", "\xe3\x80\x80|x"},
        {"IT'S it's", "IT|'|S| it|'s"}};
    int pieces_ok = 0, n_pieces = (int)(sizeof pieces / sizeof pieces[0]);
    char got[64];
    for (int i = 0; i < n_pieces; i++) {
        pieces_of(pieces[i][0], got);
        pieces_ok += strcmp(got, pieces[i][1]) == 0;
    }
    check(pieces_ok == n_pieces, "B4 the pre-tokenizer cuts %d of %d examples as tiktoken's pattern does "
          "(\"a   b\" is a|  | b: \\s+(?!\\S) leaves the last space to the word)", pieces_ok, n_pieces);

    // B5: encoding the parts between bpe_next_cut's cuts gives the ids of the whole text
    // (prepare's parallel chunks), on the whole stress text and on random texts of awkward
    // characters; and the cut is before the '\n', not after it
    BPECase* whole = &cases[n_cases - 1];
    int* chunked = mallocCheck((whole->len + 1) * sizeof(int));
    int parts = 0, same_chunked = 0, chunk_trials = 0, most_parts = 0;
    size_t count = encode_in_parts(&bpe, whole->text, whole->len, chunked, &parts);
    same_chunked += count == whole->count && memcmp(chunked, whole->ids, count * sizeof(int)) == 0;
    chunk_trials++;
    free(chunked);
    const char* units[] = {"a", "b", " ", " ", "\n", "\n", "\t", "'", "s", "1", ".", "\xc3\xa9",
                           "\xe3\x80\x80", "\xe5\x9b\xa0", "\xc2\xa0", "\xff", "\r"};
    for (int t = 0; t < 2000; t++, chunk_trials++) {
        size_t n = 0;
        while (n < 200)
            for (const char* u = units[random_u64(&rng) % (sizeof units / sizeof units[0])]; *u; u++)
                random_text[n++] = (unsigned char)*u;
        int direct[300];
        size_t want = bpe_encode(&bpe, random_text, n, direct);
        size_t got_count = encode_in_parts(&bpe, random_text, n, ids, &parts);
        most_parts = parts > most_parts ? parts : most_parts;
        same_chunked += got_count == want && memcmp(direct, ids, want * sizeof(int)) == 0;
    }
    size_t cut = bpe_next_cut((const unsigned char*)"a\n\nb", 4, 0);
    check(same_chunked == chunk_trials && most_parts > 5 && cut == 2,
          "B5 cut at every bpe_next_cut (before a '\\n' that a non-space follows), %d of %d texts encode "
          "part by part to the ids of the whole (up to %d parts); \"a\\n\\nb\" is cut at %zu, before the "
          "second '\\n'", same_chunked, chunk_trials, most_parts, cut);

    // B6: the ASCII shortcut of char_class agrees with the tables
    int classes_ok = 1;
    for (uint32_t cp = 0; cp < 0x80; cp++) {
        int table = in_ranges(UNICODE_LETTER, UNICODE_LETTER_RANGES, cp) ? CHAR_LETTER
                    : in_ranges(UNICODE_NUMBER, UNICODE_NUMBER_RANGES, cp) ? CHAR_NUMBER
                    : in_ranges(UNICODE_SPACE, UNICODE_SPACE_RANGES, cp) ? CHAR_SPACE : CHAR_OTHER;
        classes_ok &= char_class(cp) == table;
    }
    // and utf8_decode takes well-formed UTF-8 only: anything else is one byte of its own
    struct { const char* bytes; int len; uint32_t cp; } utf8[] = {
        {"A", 1, 'A'}, {"\xc3\xa9", 2, 0xE9}, {"\xe5\x9b\xa0", 3, 0x56E0}, {"\xf0\x9f\x98\x80", 4, 0x1F600},
        {"\xc0\x80", 1, UTF8_INVALID}, {"\xe0\x80\x80", 1, UTF8_INVALID},            // overlong
        {"\xed\xa0\x80", 1, UTF8_INVALID}, {"\xf4\x90\x80\x80", 1, UTF8_INVALID},  // surrogate, > U+10FFFF
        {"\xf5\x80\x80\x80", 1, UTF8_INVALID}, {"\x80", 1, UTF8_INVALID},             // no lead byte
        {"\xe5\x9b", 1, UTF8_INVALID}, {"\xe5\x9b" "A", 1, UTF8_INVALID}};                // cut short
    int n_utf8 = (int)(sizeof utf8 / sizeof utf8[0]), utf8_ok = 0;
    for (int i = 0; i < n_utf8; i++) {
        uint32_t cp;
        int len = utf8_decode((const unsigned char*)utf8[i].bytes, strlen(utf8[i].bytes), &cp);
        utf8_ok += len == utf8[i].len && cp == utf8[i].cp;
    }
    check(classes_ok && utf8_ok == n_utf8, "B6 char_class: the ASCII shortcut gives the classes of "
          "util/unicode_tables.h; utf8_decode: %d of %d sequences (1-4 bytes; overlong, surrogate, too "
          "large, cut short: one invalid byte)", utf8_ok, n_utf8);

    // B7: tokenizer_encode: GPT-2's vocabulary by BPE, a character-level one (Chinese, multi-byte
    // characters) character by character
    int prompt[16];
    int n_prompt = tokenizer_encode(&tk, "Hello world", prompt, 16);
    int bpe_ok = !tk.char_level && n_prompt == 2 && prompt[0] == 15496 && prompt[1] == 995;
    const char* chars[] = {"\n", " ", "A", "\xe5\x9b\xa0", "\xe6\x9e\x9c", "\xe6\xb3\xa8", "\xe6\x84\x8f",
                           "\xe5\x8a\x9b"};  // then 因 果 注 意 力 (ids 3..7)
    char tok_path[4096];
    snprintf(tok_path, sizeof tok_path, "%s/test_gpt2_tokenizer_%d.bin", compat_temp_dir(), (int)getpid());
    FILE* f = fopen(tok_path, "wb");
    if (!f) die("cannot create a temporary file '%s'", tok_path);
    int32_t header[256] = {20240328, 2, 8, 0};
    fwrite_check(header, sizeof(int32_t), 256, f, tok_path);
    for (int i = 0; i < 8; i++) {
        unsigned char len = (unsigned char)strlen(chars[i]);
        fwrite_check(&len, 1, 1, f, tok_path);
        fwrite_check(chars[i], 1, len, f, tok_path);
    }
    fclose(f);
    Tokenizer zh;
    tokenizer_init(&zh, tok_path);
    remove(tok_path);
    // 因果 A\n注意力
    const char* text = "\xe5\x9b\xa0\xe6\x9e\x9c A\n\xe6\xb3\xa8\xe6\x84\x8f\xe5\x8a\x9b";
    int want_ids[] = {3, 4, 1, 2, 0, 5, 6, 7};
    n_prompt = tokenizer_encode(&zh, text, prompt, 16);
    int zh_ok = zh.char_level && n_prompt == 8 && memcmp(prompt, want_ids, sizeof want_ids) == 0
                && decodes_to(&zh, prompt, 8, (const unsigned char*)text, strlen(text));
    // print_token writes a token's bytes, a 0 byte included (into a file, read back: MinGW
    // has no open_memstream)
    char printed[16] = {0};
    FILE* out = fopen(tok_path, "wb+");
    if (!out) die("cannot create a temporary file '%s'", tok_path);
    print_token(&tk, bpe.byte_token[0], out);
    print_token(&tk, 15496, out);
    rewind(out);
    size_t printed_size = fread(printed, 1, sizeof printed, out);
    fclose(out);
    remove(tok_path);
    int print_ok = printed_size == 6 && memcmp(printed, "\0Hello", 6) == 0;
    check(bpe_ok && zh_ok && print_ok, "B7 tokenizer_encode: GPT-2's vocabulary by BPE (\"Hello world\" is "
          "15496 995), a character-level one by character (\"%s\": 8 ids, 3-byte characters included, "
          "decoding back); print_token prints a 0 byte", "\xe5\x9b\xa0\xe6\x9e\x9c A "
          "\xe6\xb3\xa8\xe6\x84\x8f\xe5\x8a\x9b");
    tokenizer_free(&zh);

    // B8: a piece that is a token is that token, even where no merges lead to it (tiktoken's
    // encode_ordinary looks the piece up first). A toy vocabulary: the 256 bytes, then "ab", "abc"
    // and "bcd" (ranks 256..258): "abcd" merges to "abc" "d", but "bcd" alone is one token.
    char* toy[259];
    int toy_length[259];
    char toy_bytes[256];
    for (int b = 0; b < 256; b++) {
        toy_bytes[b] = (char)b;
        toy[b] = &toy_bytes[b];
        toy_length[b] = 1;
    }
    toy[256] = "ab", toy[257] = "abc", toy[258] = "bcd";
    toy_length[256] = 2, toy_length[257] = 3, toy_length[258] = 3;
    BPE toy_bpe;
    bpe_init(&toy_bpe, 259, toy, toy_length);
    int toy_ids[4];
    size_t n_abcd = bpe_encode(&toy_bpe, (const unsigned char*)"abcd", 4, toy_ids);
    int abcd_ok = n_abcd == 2 && toy_ids[0] == 257 && toy_ids[1] == 'd';
    size_t n_bcd = bpe_encode(&toy_bpe, (const unsigned char*)"bcd", 3, toy_ids);
    check(abcd_ok && n_bcd == 1 && toy_ids[0] == 258, "B8 a piece that is a token is that token, as in "
          "tiktoken, even if no merge leads to it (a toy vocabulary: \"bcd\" is 1 token, \"abcd\" is "
          "\"abc\" \"d\")");
    bpe_free(&toy_bpe);

    for (int i = 0; i < n_cases; i++) {
        free(cases[i].text);
        free(cases[i].ids);
    }
    bpe_free(&bpe);
    tokenizer_free(&tk);
}

// ----------------------------------------------------------------------------

#include "tests/errata_checks.h"
#include "tests/bf16_checks.h"
#include "tests/gen_bf16_checks.h"
#include "tests/hf_checks.h"
#include "tests/compat_checks.h"  // util/compat.h's shims
// util/svg.h's svg_escape: every text in a picture is well-formed XML whatever its bytes (the five
// XML specials, a character split between BPE tokens, control characters, invalid UTF-8)
static void test_svg_escape(void) {
    const char* in = "a&b<c>d\"e'f\xE4\xB8 \n\t\x01\x7F\xC2\x85\xE4\xB8\x96\xFF\xC0\xAF\xED\xA0\x80\xEF\xBF\xBE";
    const char* want_label = "a&amp;b&lt;c&gt;d&quot;e&apos;f\\xE4\\xB8␣↵⇥\\x01\\x7F\\xC2\\x85世\\xFF\\xC0\\xAF"
                             "\\xED\\xA0\\x80\\xEF\\xBF\\xBE";
    const char* want_text = "a&amp;b&lt;c&gt;d&quot;e&apos;f\\xE4\\xB8 \\x0A\\x09\\x01\\x7F\\xC2\\x85世\\xFF\\xC0\\xAF"
                            "\\xED\\xA0\\x80\\xEF\\xBF\\xBE";
    char out[256];
    int w = svg_escape(out, sizeof out, in, (int)strlen(in), 1, 1000);
    check(strcmp(out, want_label) == 0 && w == 11 + 8 + 3 + 16 + 2 + 4 + 8 + 24,
          "svg_escape, a tick label: & < > \" ' as entities, split and invalid UTF-8 and control bytes as "
          "\\xNN, 世 whole, ␣ ↵ ⇥ (%s, width %d)", out, w);
    svg_escape(out, sizeof out, in, (int)strlen(in), 0, 1000);
    check(strcmp(out, want_text) == 0, "svg_escape, a title: the same, a newline and a tab as \\xNN (%s)", out);
    w = svg_escape(out, sizeof out, "\xE4\xB8\x96\xE7\x95\x8C!", 7, 1, 4);
    int w2 = svg_escape(out + 64, sizeof out - 64, "\xE4\xB8\x96\xE7\x95\x8C!", 7, 1, 5);
    check(strcmp(out, "世…") == 0 && w == 3 && strcmp(out + 64, "世界!") == 0 && w2 == 5,
          "svg_escape shortens a label past its width with an ellipsis, never inside a character (%s, %s)",
          out, out + 64);
}

// ----------------------------------------------------------------------------
// main: the checks as a table of named groups (tests/check.h), run in this order; -k WORD
// runs the groups whose names contain WORD, -l lists them. refs_*: a check on the reference
// files of -r DIR (tests/doc_check.py reads their calls as the groups')

static const char* ref_dir = "data/ref";  // -r DIR
static const char* const REF_CONFIGS[] = {"a", "b", "c", "d", "e"};  // c, d, e: the block variants (e: -as 0.7)
#define NUM_REF_CONFIGS 5

static const char* ref_path(char* buf, size_t n, const char* config, const char* what) {
    snprintf(buf, n, "%s/ref_%s_%s", ref_dir, config, what);
    return buf;
}

static void refs_states_and_training(void) {  // PyTorch's states and trajectories, a-e and a with dropout
    char a[4096], b[4096];
    for (int i = 0; i < NUM_REF_CONFIGS; i++) {
        check_state(ref_path(a, sizeof a, REF_CONFIGS[i], "model.bin"),
                    ref_path(b, sizeof b, REF_CONFIGS[i], "state.bin"));
        check_training(a, ref_path(b, sizeof b, REF_CONFIGS[i], "train.bin"));
    }
    check_state(ref_path(a, sizeof a, "a", "model.bin"), ref_path(b, sizeof b, "a", "dropout_state.bin"));
}
static void refs_kv_cache(void) {  // b, and the variants c, d and e
    char a[4096];
    for (int i = 1; i < NUM_REF_CONFIGS; i++)
        test_kv_cache(ref_path(a, sizeof a, REF_CONFIGS[i], "model.bin"));
}
static void refs_determinism(void) {
    char a[4096];
    test_determinism(ref_path(a, sizeof a, "a", "model.bin"));
    test_determinism(ref_path(a, sizeof a, "c", "model.bin"));
}
static void refs_one_pass_gradients(void) {
    char a[4096];
    test_one_pass_gradients(ref_path(a, sizeof a, "a", "model.bin"));
}
static void refs_gradients_written(void) {  // GPT-2 (a, b) and the variants (c-e), fast and plain
    char a[4096];
    for (int i = 0; i < NUM_REF_CONFIGS; i++)
        for (int plain = 0; plain <= 1; plain++)
            test_gradients_written(ref_path(a, sizeof a, REF_CONFIGS[i], "model.bin"), plain);
}
static void refs_plain_kernels(void) {  // -kernels plain against fast, a-e
    char a[4096];
    for (int i = 0; i < NUM_REF_CONFIGS; i++)
        test_plain_kernels(ref_path(a, sizeof a, REF_CONFIGS[i], "model.bin"));
}
static void refs_checkpoint_bytes(void) { test_checkpoint_bytes(ref_dir); }
static void refs_article002(void) {
    char a[4096];
    snprintf(a, sizeof a, "%s/ref_article002.txt", ref_dir);
    test_article_example(a);
}
static void refs_bf16(void) { test_bf16(ref_dir); }
static void refs_gen_bf16(void) { test_gen_bf16(ref_dir); }
static void refs_hf(void) { test_hf(ref_dir); }

static const CheckGroup CHECK_GROUPS[] = {
    {"pytorch references: states and training, a-e", refs_states_and_training},
    {"finite differences: every layer", test_finite_differences},
    {"fast matmul", test_fast_matmul},
    {"fast weighted rows", test_weighted_rows},
    {"fast sgemm", test_sgemm},
    {"fast blocking bits", test_blocking_bits},
    {"fast kernel edge rows", test_kernel_edge_rows},
    {"fast kernel plain", test_kernel_plain},
    {"fast gemm products", test_gemm_products},
    {"fast sgemm shares", test_sgemm_shares},
    {"fast exp tanh", test_exp_tanh},
    {"fast buffers", test_buffers},
    {"fast matvec", test_matvec},
    {"fast aligned alloc", test_aligned_alloc},
    {"fast attention", test_fast_attention},
    {"attention scale at initialisation", test_attention_scale_init},
    {"attention padding", test_attention_padding},
    {"attention shape errors", test_attention_shape_errors},
    {"kv cache: references b-e", refs_kv_cache},
    {"determinism", refs_determinism},
    {"gradients in one pass", refs_one_pass_gradients},
    {"gradients written: references a-e", refs_gradients_written},
    {"plain kernels: references a-e", refs_plain_kernels},
    {"finite differences: block variants", test_variant_gradients},
    {"kv cache: block variants", test_variant_kv_cache},
    {"checkpoint bytes", refs_checkpoint_bytes},
    {"block variants: a test row for every option value", test_variant_rows},
    {"checkpoint round trip: block variants", test_variant_checkpoints},
    {"ff bf16", test_ff_bf16},
    {"ff checkpoint", test_ff_checkpoint},
    {"article 002 example", refs_article002},
    {"errata", test_errata},
    {"errata variants", test_errata_variants},
    {"errata articles", test_errata_articles},
    {"errata reread", test_errata_reread},
    {"bf16", refs_bf16},
    {"bf16 sgemm bits", test_bf16_sgemm_bits},
    {"bf16 generation", refs_gen_bf16},
    {"hugging face", refs_hf},
    {"bpe", test_bpe},
    {"svg escape", test_svg_escape},
    {"compat", test_compat},
    {"crc32c", test_crc32c},
};
#define NUM_CHECK_GROUPS ((int)(sizeof CHECK_GROUPS / sizeof CHECK_GROUPS[0]))

int main(int argc, char** argv) {
    const char *model_path = NULL, *state_path = NULL, *word = NULL;
    error_program = "test_gpt2";  // its errors name it, not the train_gpt2.c it includes
    static char self[4096];
    self_path = compat_exe_path(self, sizeof self) == 0 ? self : argv[0];
    if (argc == 3 && strcmp(argv[1], "-die-shape") == 0)  // the child of test_attention_shape_errors
        return run_shape_death(atoi(argv[2]));
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "-e") == 0) model_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-s") == 0) state_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-r") == 0) ref_dir = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-k") == 0) word = argv[++i];
        else if (strcmp(argv[i], "-l") == 0) return list_check_groups(CHECK_GROUPS, NUM_CHECK_GROUPS);
        else {
            fprintf(stderr, "usage: ./test_gpt2 [-r REFERENCE_DIR] [-k WORD] | -l | -e MODEL.bin -s STATE.bin\n");
            return EXIT_USAGE;
        }
    }
    if (!model_path != !state_path) {
        fprintf(stderr, "test_gpt2: error: -e and -s go together\n");
        return EXIT_USAGE;
    }
    if (model_path) {
        check_state(model_path, state_path);
        printf("%d passed, %d failed\n", passed, failed);
        return failed ? 1 : 0;
    }
    return run_check_groups("test_gpt2", CHECK_GROUPS, NUM_CHECK_GROUPS, word);
}
