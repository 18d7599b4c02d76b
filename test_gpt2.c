/*
test_gpt2.c: checks train_gpt2.c against an independent implementation.

1. Reference states written by PyTorch autograd in float64 (data/make_reference.py):
   logits, loss and all 16 parameter gradients of two deliberately awkward models,
   one of them with dropout at all four sites; then 12 AdamW steps of training.
2. Finite differences: every layer's backward against central differences of its own
   forward, on small random inputs, with no PyTorch involved.
3. The fast matmul against the plain one; the KV-cache inference path against the
   training forward; bit-identical results across runs and thread counts; the worked
   attention example of the article on training vs inference (article 002).

Usage: ./test_gpt2                       all of the above, with the committed references
       ./test_gpt2 -r DIR                the same with the references in DIR
       ./test_gpt2 -e MODEL -s STATE     step-0 logits, loss and gradients of any llm.c pair
Exit status 0 only if every check passed. The last line is "N passed, M failed".
*/
#define TESTING
#include "train_gpt2.c"

// ----------------------------------------------------------------------------
// tolerances, measured (see README.md, "Test tolerances"): float32 against float64

#define TOL_LOGITS_ABS 2e-5f    // max |logit - ref|
#define TOL_LOSS_REL 2e-6f      // |loss - ref| / ref
#define TOL_GRAD_REL 2e-5f      // max |grad - ref| / max |ref| of the tensor
#define TOL_TRAIN_LOSS_REL 2e-5f// per step of the 12-step AdamW trajectory
#define TOL_TRAIN_NORM_REL 2e-5f
#define TOL_FD_REL 5e-4f        // finite differences: max |num - analytic| / max |analytic|
#define TOL_FAST_REL 2e-6f      // fast vs plain matmul, relative to the largest value
#define TOL_KV_ABS 1e-5f        // KV-cache logits vs training-forward logits

static int passed = 0, failed = 0;

static int check(int ok, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok) passed++; else failed++;
    return ok;
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
    if (h[1] != 2 && h[1] != 3) die("'%s': state version %d is not supported (expected 2, or 3 with dropout)", path, h[1]);
    s->version = h[1]; s->B = h[2]; s->T = h[3];
    s->seed = (uint64_t)h[4]; s->step = (uint64_t)h[5];
    s->dropout_p = h[1] == 3 ? h[6] / 1e6f : 0.0f;
    if (s->B <= 0 || s->T <= 0) die("'%s': B %d and T %d must be positive", path, s->B, s->T);
    if (s->T > model->config.max_seq_len) die("'%s': T %d is larger than the model's maxT %d", path, s->T, model->config.max_seq_len);
    size_t BT = (size_t)s->B * s->T, V = model->config.vocab_size, P = model->num_parameters;
    long expected = 1024L + (long)(4 * (2 * BT + BT * V + 1 + P));
    if (file_size(f) != expected)
        die("'%s' has %ld bytes; a state for B=%d T=%d and this model needs %ld", path, file_size(f), s->B, s->T, expected);
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
    gpt2_build_from_checkpoint(&model, model_path);
    RefState s;
    read_state(&s, state_path, &model);
    GPT2Config c = model.config;
    model.dropout_p = s.dropout_p;
    model.dropout_seed = s.seed;
    printf("-- %s + %s: B=%d T=%d L=%d NH=%d C=%d V=%d Vp=%d%s\n", model_path, state_path, s.B, s.T,
           c.num_layers, c.num_heads, c.channels, c.vocab_size, c.padded_vocab_size, s.dropout_p > 0 ? " (dropout)" : "");
    float loss = gpt2_forward(&model, s.x, s.y, s.B, s.T, s.dropout_p > 0 ? (long)s.step : -1);
    Error e = compare(model.acts.logits, s.logits, (size_t)s.B * s.T, c.vocab_size, c.padded_vocab_size);
    check(e.max_abs <= TOL_LOGITS_ABS, "logits: max abs error %.2e (tolerance %.0e)", e.max_abs, TOL_LOGITS_ABS);
    float loss_rel = fabsf(loss - s.loss) / fabsf(s.loss);
    check(loss_rel <= TOL_LOSS_REL, "loss %.7f vs reference %.7f: relative error %.2e (tolerance %.0e)", loss, s.loss, loss_rel, TOL_LOSS_REL);
    gpt2_zero_grad(&model);
    gpt2_backward(&model);
    size_t offset = 0;
    for (int k = 0; k < NUM_PARAMETER_TENSORS; k++) {
        size_t n = model.param_sizes[k];
        Error g = compare(model.grads_memory + offset, s.grads + offset, 1, n, n);
        check(rel(g) <= TOL_GRAD_REL, "grad %-8s max abs error %.2e, max |ref| %.2e, relative to max %.2e (tolerance %.0e)",
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
    float lr = hyper[0], beta1 = hyper[1], beta2 = hyper[2], eps = hyper[3], wd = hyper[4], clip = hyper[5], final_frac = hyper[6];
    printf("-- %s: %d AdamW steps, lr %g warmup %d, clip %g, weight decay %g\n", train_path, n, lr, warmup, clip, wd);
    float worst_loss = 0.0f, worst_norm = 0.0f, worst_lr = 0.0f;
    int clipped = 0;
    for (int s = 0; s < n; s++) {
        float loss = gpt2_forward(&model, x, y, B, T, -1);
        gpt2_zero_grad(&model);
        gpt2_backward(&model);
        float norm = gpt2_grad_norm(&model);
        clipped += norm > clip;
        gpt2_clip_grads(&model, norm, clip);
        float step_lr = learning_rate(s, lr, warmup, n, final_frac);
        gpt2_update(&model, step_lr, beta1, beta2, eps, wd, s + 1);
        float el = fabsf(loss - ref[s]) / ref[s], en = fabsf(norm - ref[n + s]) / ref[n + s];
        float elr = fabsf(step_lr - ref[2 * n + s]) / ref[2 * n + s];
        printf("   step %2d loss %.6f (ref %.6f, rel err %.1e) norm %.5f (ref %.5f, rel err %.1e)\n", s, loss, ref[s], el, norm, ref[n + s], en);
        if (!(el <= worst_loss)) worst_loss = el;
        if (!(en <= worst_norm)) worst_norm = en;
        if (!(elr <= worst_lr)) worst_lr = elr;
    }
    check(worst_loss <= TOL_TRAIN_LOSS_REL, "trajectory losses: worst relative error %.2e (tolerance %.0e)", worst_loss, TOL_TRAIN_LOSS_REL);
    check(worst_norm <= TOL_TRAIN_NORM_REL, "trajectory gradient norms: worst relative error %.2e (tolerance %.0e)", worst_norm, TOL_TRAIN_NORM_REL);
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
    int B, T, C, NH, OC, V, Vp;
    int* tokens;
    float *x, *x2, *w, *b, *out, *R, *mean, *rstd, *scores, *probs, *dropped;
    DropoutMask drop;
    int fast;
} FDCase;

typedef void (*ForwardFn)(FDCase* k);

static double objective(FDCase* k, ForwardFn forward, size_t n_out) {
    forward(k);
    double f = 0.0;
    for (size_t i = 0; i < n_out; i++) f += (double)k->out[i] * k->R[i];
    return f;
}

static void fd_check(const char* name, FDCase* k, ForwardFn forward, size_t n_out, float* x, size_t n, const float* analytic) {
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
    check(r <= TOL_FD_REL && max_ana > 0, "finite differences %-28s max error %.2e, relative to max %.2e", name, max_err, r);
}

static float* random_floats(uint64_t* rng, size_t n, float mean, float std) {
    float* p = mallocCheck(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = mean + std * random_normal(rng);
    return p;
}

static float* zeros(size_t n) { return callocCheck(n, sizeof(float)); }

static void fwd_encoder(FDCase* k) { encoder_forward(k->out, k->tokens, k->w, k->b, k->B, k->T, k->C); }
static void fwd_layernorm(FDCase* k) { layernorm_forward(k->out, k->mean, k->rstd, k->x, k->w, k->b, k->B * k->T, k->C); }
static void fwd_matmul(FDCase* k) {
    if (k->fast) matmul_forward(k->out, k->x, k->w, k->b, k->B * k->T, k->C, k->OC);
    else matmul_forward_plain(k->out, k->x, k->w, k->b, k->B * k->T, k->C, k->OC);
}
static void fwd_attention(FDCase* k) {
    attention_forward(k->out, k->scores, k->probs, k->dropped, k->x, k->B, k->T, k->C, k->NH, &k->drop);
}
static void fwd_gelu(FDCase* k) { gelu_forward(k->out, k->x, (size_t)k->B * k->T * k->C); }
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
    FDCase k = {.B = 2, .T = 5, .C = 12, .NH = 3, .OC = 7, .V = 9, .Vp = 16};
    size_t BT = (size_t)k.B * k.T, BTC = BT * k.C, att = (size_t)k.B * k.NH * k.T * k.T;
    k.out = zeros(BT * 3 * k.C + BT * k.Vp);
    k.R = random_floats(&rng, BT * 3 * k.C + BT * k.Vp, 0.0f, 1.0f);
    k.tokens = mallocCheck(BT * sizeof(int));
    for (size_t i = 0; i < BT; i++) k.tokens[i] = (int)(random_u64(&rng) % 4);  // repeats: rows of dwte add up
    k.mean = zeros(BT); k.rstd = zeros(BT);
    k.scores = zeros(att); k.probs = zeros(att + BT * k.Vp); k.dropped = zeros(att);

    // encoder: wte (V,C), wpe (T,C)
    k.w = random_floats(&rng, (size_t)k.V * k.C, 0, 1); k.b = random_floats(&rng, (size_t)k.T * k.C, 0, 1);
    float *dw = zeros((size_t)k.V * k.C), *db = zeros((size_t)k.T * k.C);
    encoder_backward(dw, db, k.R, k.tokens, k.B, k.T, k.C);
    fd_check("encoder dwte", &k, fwd_encoder, BTC, k.w, (size_t)k.V * k.C, dw);
    fd_check("encoder dwpe", &k, fwd_encoder, BTC, k.b, (size_t)k.T * k.C, db);
    free(k.w); free(k.b); free(dw); free(db);

    // layernorm: x (BT,C), weight and bias (C)
    k.x = random_floats(&rng, BTC, 0.5f, 2.0f); k.w = random_floats(&rng, k.C, 1.0f, 0.5f); k.b = random_floats(&rng, k.C, 0, 0.5f);
    float* dx = zeros(BTC); dw = zeros(k.C); db = zeros(k.C);
    fwd_layernorm(&k);
    layernorm_backward(dx, dw, db, k.R, k.x, k.w, k.mean, k.rstd, (int)BT, k.C);
    fd_check("layernorm dinp", &k, fwd_layernorm, BTC, k.x, BTC, dx);
    fd_check("layernorm dweight", &k, fwd_layernorm, BTC, k.w, k.C, dw);
    fd_check("layernorm dbias", &k, fwd_layernorm, BTC, k.b, k.C, db);
    free(k.x); free(k.w); free(k.b); free(dx); free(dw); free(db);

    // matmul, plain and fast: x (BT,C), weight (OC,C), bias (OC)
    for (k.fast = 0; k.fast <= 1; k.fast++) {
        k.x = random_floats(&rng, BTC, 0, 1); k.w = random_floats(&rng, (size_t)k.OC * k.C, 0, 1); k.b = random_floats(&rng, k.OC, 0, 1);
        dx = zeros(BTC); dw = zeros((size_t)k.OC * k.C); db = zeros(k.OC);
        if (k.fast) matmul_backward(dx, dw, db, k.R, k.x, k.w, (int)BT, k.C, k.OC);
        else matmul_backward_plain(dx, dw, db, k.R, k.x, k.w, (int)BT, k.C, k.OC);
        fd_check(k.fast ? "matmul (fast) dinp" : "matmul (plain) dinp", &k, fwd_matmul, BT * k.OC, k.x, BTC, dx);
        fd_check(k.fast ? "matmul (fast) dweight" : "matmul (plain) dweight", &k, fwd_matmul, BT * k.OC, k.w, (size_t)k.OC * k.C, dw);
        fd_check(k.fast ? "matmul (fast) dbias" : "matmul (plain) dbias", &k, fwd_matmul, BT * k.OC, k.b, k.OC, db);
        free(k.x); free(k.w); free(k.b); free(dx); free(dw); free(db);
    }

    // attention: qkv (B,T,3C) -> out (B,T,C), without and with dropout on the probabilities
    for (int dropping = 0; dropping <= 1; dropping++) {
        k.drop = dropout_mask(dropping ? 0.3f : 0.0f, 7, 3, 1, DROP_ATT_PROBS);
        k.x = random_floats(&rng, 3 * BTC, 0, 1);
        dx = zeros(3 * BTC);
        fwd_attention(&k);
        attention_backward(dx, k.R, k.x, k.probs, k.dropped, k.B, k.T, k.C, k.NH, &k.drop);
        fd_check(dropping ? "attention dqkv (dropout 0.3)" : "attention dqkv", &k, fwd_attention, BTC, k.x, 3 * BTC, dx);
        free(k.x); free(dx);
    }

    // GELU on [-4, 4]
    k.x = random_floats(&rng, BTC, 0, 2.0f); dx = zeros(BTC);
    gelu_backward(dx, k.x, k.R, BTC);
    fd_check("gelu dinp", &k, fwd_gelu, BTC, k.x, BTC, dx);
    free(k.x); free(dx);

    // residual: both inputs
    k.x = random_floats(&rng, BTC, 0, 1); k.x2 = random_floats(&rng, BTC, 0, 1);
    dx = zeros(BTC); float* dx2 = zeros(BTC);
    residual_backward(dx, dx2, k.R, BTC);
    fd_check("residual dinp1", &k, fwd_residual, BTC, k.x, BTC, dx);
    fd_check("residual dinp2", &k, fwd_residual, BTC, k.x2, BTC, dx2);
    free(k.x); free(k.x2); free(dx); free(dx2);

    // dropout with a fixed mask (p = 0.3), for each of the residual-stream sites
    for (int site = DROP_EMBED; site <= DROP_MLP_OUT; site++) {
        if (site == DROP_ATT_PROBS) continue;  // checked inside attention above
        char name[64];
        snprintf(name, sizeof name, "dropout dinp (site %d)", site);
        k.drop = dropout_mask(0.3f, 11, 5, 2, site);
        k.x = random_floats(&rng, BTC, 0, 1); dx = zeros(BTC);
        dropout_backward(dx, k.R, BTC, &k.drop);
        fd_check(name, &k, fwd_dropout, BTC, k.x, BTC, dx);
        free(k.x); free(dx);
    }

    // softmax + cross-entropy: logits (BT,Vp) with V < Vp; padding must get gradient 0
    k.x = random_floats(&rng, BT * k.Vp, 0, 2.0f); dx = zeros(BT * k.Vp);
    for (size_t i = 0; i < BT; i++) k.tokens[i] = (int)(random_u64(&rng) % k.V);
    float* saved_R = k.R;
    k.R = zeros(BT);
    for (size_t i = 0; i < BT; i++) k.R[i] = 1.0f / BT;
    fwd_crossentropy(&k);
    crossentropy_softmax_backward(dx, k.R, k.probs, k.tokens, (int)BT, k.V, k.Vp);
    fd_check("softmax+crossentropy dlogits", &k, fwd_crossentropy, BT, k.x, BT * k.Vp, dx);
    int padding_zero = 1;
    for (size_t i = 0; i < BT; i++)
        for (int v = k.V; v < k.Vp; v++) padding_zero &= dx[i * k.Vp + v] == 0.0f && k.probs[i * k.Vp + v] == 0.0f;
    check(padding_zero, "padded vocabulary entries get probability 0 and gradient 0");
    free(k.R); k.R = saved_R;
    free(k.x); free(dx);
    free(k.out); free(k.R); free(k.tokens); free(k.mean); free(k.rstd); free(k.scores); free(k.probs); free(k.dropped);
}

// ----------------------------------------------------------------------------
// the fast matmul against the plain one, on awkward shapes

static void test_fast_matmul(void) {
    printf("-- fast matmul (sgemm) against the plain loops\n");
    int shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {33, 47, 101}, {64, 128, 384}, {130, 96, 200}, {768, 128, 512}, {5, 300, 17}};
    uint64_t rng = 99;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int BT = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
        float *x = random_floats(&rng, (size_t)BT * C, 0, 1), *w = random_floats(&rng, (size_t)OC * C, 0, 1);
        float *b = random_floats(&rng, OC, 0, 1), *dy = random_floats(&rng, (size_t)BT * OC, 0, 1);
        float *y1 = zeros((size_t)BT * OC), *y2 = zeros((size_t)BT * OC);
        float *dx1 = random_floats(&rng, (size_t)BT * C, 0, 1), *dw1 = random_floats(&rng, (size_t)OC * C, 0, 1);
        float *dx2 = mallocCheck((size_t)BT * C * 4), *dw2 = mallocCheck((size_t)OC * C * 4), *db1 = zeros(OC), *db2 = zeros(OC);
        memcpy(dx2, dx1, (size_t)BT * C * 4); memcpy(dw2, dw1, (size_t)OC * C * 4);  // backward accumulates
        matmul_forward_plain(y1, x, w, b, BT, C, OC);
        matmul_forward(y2, x, w, b, BT, C, OC);
        matmul_backward_plain(dx1, dw1, db1, dy, x, w, BT, C, OC);
        matmul_backward(dx2, dw2, db2, dy, x, w, BT, C, OC);
        float ey = rel(compare(y2, y1, 1, (size_t)BT * OC, 0)), ex = rel(compare(dx2, dx1, 1, (size_t)BT * C, 0));
        float ew = rel(compare(dw2, dw1, 1, (size_t)OC * C, 0)), eb = rel(compare(db2, db1, 1, OC, 0));
        float worst = fmaxf(fmaxf(ey, ex), fmaxf(ew, eb));
        check(worst <= TOL_FAST_REL, "matmul BT=%d C=%d OC=%d: out %.1e dinp %.1e dweight %.1e dbias %.1e (relative to max)",
              BT, C, OC, ey, ex, ew, eb);
        free(x); free(w); free(b); free(dy); free(y1); free(y2); free(dx1); free(dw1); free(dx2); free(dw2); free(db1); free(db2);
    }
}

// ----------------------------------------------------------------------------
// KV cache: one token at a time must give the training forward's logits

static void test_kv_cache(const char* model_path) {
    printf("-- KV-cache inference against the training forward (%s)\n", model_path);
    GPT2 model;
    gpt2_build_from_checkpoint(&model, model_path);
    GPT2Config c = model.config;
    KVCache kv;
    kvcache_init(&kv, c);
    int lengths[] = {1, 2, 9, c.max_seq_len - 1, c.max_seq_len};
    uint64_t rng = 5;
    int* tokens = mallocCheck((size_t)c.max_seq_len * sizeof(int));
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        int T = lengths[li];
        for (int t = 0; t < T; t++) tokens[t] = (int)(random_u64(&rng) % c.vocab_size);
        gpt2_forward(&model, tokens, NULL, 1, T, -1);
        kv.pos = 0;
        float worst = 0.0f;
        for (int t = 0; t < T; t++) {
            const float* logits = gpt2_forward_token(&model, &kv, tokens[t]);
            Error e = compare(logits, model.acts.logits + (size_t)t * c.padded_vocab_size, 1, c.vocab_size, 0);
            if (!(e.max_abs <= worst)) worst = e.max_abs;
        }
        check(worst <= TOL_KV_ABS, "KV cache, %2d positions: max |logit difference| %.2e (tolerance %.0e)", T, worst, TOL_KV_ABS);
    }
    free(tokens);
    kvcache_free(&kv);
    gpt2_free(&model);
}

// ----------------------------------------------------------------------------
// determinism: the same steps give the same bits, again and with another thread count;
// dropout changes training but never evaluation

static void train_steps(GPT2* model, const int* x, const int* y, int B, int T, int steps, float* losses) {
    for (int s = 0; s < steps; s++) {
        losses[s] = gpt2_forward(model, x, y, B, T, s);
        gpt2_zero_grad(model);
        gpt2_backward(model);
        float norm = gpt2_grad_norm(model);
        gpt2_clip_grads(model, norm, 1.0f);
        gpt2_update(model, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, s + 1);
    }
}

static void test_determinism(const char* model_path) {
    printf("-- determinism (%s)\n", model_path);
    enum { STEPS = 3, RUNS = 3 };
    float losses[RUNS][STEPS];
    GPT2 models[RUNS];
    int B = 4, T = 16;
    int x[64], y[64];
    for (int i = 0; i < B * T; i++) { x[i] = (i * 7) % 65; y[i] = (i * 11 + 3) % 65; }
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
    check(memcmp(losses[0], losses[1], sizeof losses[0]) == 0 && memcmp(models[0].params_memory, models[1].params_memory, bytes) == 0,
          "two identical runs (dropout 0.1) give bit-identical losses and weights");
    check(memcmp(losses[0], losses[2], sizeof losses[0]) == 0 && memcmp(models[0].params_memory, models[2].params_memory, bytes) == 0,
          "one thread and all threads give bit-identical losses and weights");

    // evaluation ignores dropout: same weights, p = 0.2 vs p = 0, forward with step -1
    GPT2 plain;
    gpt2_build_from_checkpoint(&plain, model_path);
    memcpy(plain.params_memory, models[0].params_memory, bytes);
    float eval_plain = gpt2_forward(&plain, x, y, B, T, -1);
    models[0].dropout_p = 0.2f;
    float eval_drop = gpt2_forward(&models[0], x, y, B, T, -1);
    float train_drop = gpt2_forward(&models[0], x, y, B, T, 5);
    check(eval_plain == eval_drop, "evaluation with dropout 0.2 equals evaluation without (%.7f)", eval_plain);
    check(train_drop != eval_drop, "a training forward with dropout 0.2 differs (%.7f vs %.7f)", train_drop, eval_drop);
    for (int r = 0; r < RUNS; r++) gpt2_free(&models[r]);
    gpt2_free(&plain);
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
            if (r != rows || c != cols) die("'%s': matrix %s is %dx%d, expected %dx%d", path, name, r, c, rows, cols);
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
            for (int i = 0; i < 2; i++) qkvw[(m * 2 + o) * 2 + i] = W[m][i * 2 + o];
    float qkv[3 * 6], out[3 * 2], scores[9], probs[9];
    matmul_forward(qkv, X, qkvw, NULL, 3, 2, 6);
    attention_forward(out, scores, probs, NULL, qkv, 1, 3, 2, 1, NULL);
    float *ref_scaled = read_matrix(path, "scaled_causal", 3, 3), *ref_w = read_matrix(path, "weights_causal", 3, 3);
    float *ref_out = read_matrix(path, "out_causal", 3, 2), *ref_w_full = read_matrix(path, "weights", 3, 3);
    float *ref_out_full = read_matrix(path, "out", 3, 2);
    float e_scores = 0.0f;
    for (int i = 0; i < 9; i++)
        e_scores = fmaxf(e_scores, isinf(ref_scaled[i]) ? (isinf(scores[i]) && scores[i] < 0 ? 0.0f : INFINITY) : fabsf(scores[i] - ref_scaled[i]));
    float e_w = compare(probs, ref_w, 1, 9, 0).max_abs, e_out = compare(out, ref_out, 1, 6, 0).max_abs;
    float e_last = fmaxf(compare(probs + 6, ref_w_full + 6, 1, 3, 0).max_abs, compare(out + 4, ref_out_full + 4, 1, 2, 0).max_abs);
    check(e_scores <= 1e-6f, "article example: scaled, masked scores match PyTorch (max error %.1e), e.g. %.7f", e_scores, scores[0]);
    check(e_w <= 1e-6f, "article example: causal attention weights match PyTorch (max error %.1e)", e_w);
    check(e_out <= 1e-6f, "article example: causal outputs match PyTorch (max error %.1e): last row %.6f %.6f", e_out, out[4], out[5]);
    check(e_last <= 1e-6f, "article example: the last row equals the unmasked result (max error %.1e)", e_last);
    // the article prints 0.031 for the first score q1.k1 and 0.705 for the first output;
    // both are wrong: q1 = (0.07, 0.10), k1 = (0.19, 0.22), q1.k1 = 0.0353
    check(fabsf(scores[0] * sqrtf(2.0f) - 0.0353f) < 1e-6f && fabsf(scores[0] * sqrtf(2.0f) - 0.031f) > 1e-3f,
          "article erratum: q1.k1 is %.4f, not the printed 0.031", scores[0] * sqrtf(2.0f));
    free(X); free(Wq); free(Wk); free(Wv); free(ref_scaled); free(ref_w); free(ref_out); free(ref_w_full); free(ref_out_full);
}

// ----------------------------------------------------------------------------

int main(int argc, char** argv) {
    const char *model_path = NULL, *state_path = NULL, *dir = "data/ref";
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "-e") == 0) model_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-s") == 0) state_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-r") == 0) dir = argv[++i];
        else {
            fprintf(stderr, "usage: ./test_gpt2 [-r REFERENCE_DIR] | -e MODEL.bin -s STATE.bin\n");
            return EXIT_USAGE;
        }
    }
    if (!model_path != !state_path) { fprintf(stderr, "test_gpt2: error: -e and -s go together\n"); return EXIT_USAGE; }
    if (model_path) {
        check_state(model_path, state_path);
    } else {
        char a[4096], b[4096];
        const char* configs[] = {"a", "b"};
        for (int i = 0; i < 2; i++) {
            snprintf(a, sizeof a, "%s/ref_%s_model.bin", dir, configs[i]);
            snprintf(b, sizeof b, "%s/ref_%s_state.bin", dir, configs[i]);
            check_state(a, b);
            snprintf(b, sizeof b, "%s/ref_%s_train.bin", dir, configs[i]);
            check_training(a, b);
        }
        snprintf(a, sizeof a, "%s/ref_a_model.bin", dir);
        snprintf(b, sizeof b, "%s/ref_a_dropout_state.bin", dir);
        check_state(a, b);
        test_finite_differences();
        test_fast_matmul();
        snprintf(a, sizeof a, "%s/ref_b_model.bin", dir);
        test_kv_cache(a);
        snprintf(a, sizeof a, "%s/ref_a_model.bin", dir);
        test_determinism(a);
        snprintf(a, sizeof a, "%s/ref_article002.txt", dir);
        test_article_example(a);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
