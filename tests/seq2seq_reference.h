/*
tests/seq2seq_reference.h: the encoder-decoder (train_seq2seq.c) against PyTorch's
nn.Transformer itself, in float64 (data/make_reference.py, seq2seq_references; the files
data/ref/ref_s2s_{pre,post,es}_{model,state,train}.bin, formats in that script's docstring).

Three configurations, all V=13 Vp=16 maxT=12 Le=2 Ld=2, on one padded batch of 3 pairs
(sources of 7, 3, 10 tokens, targets of 5, 9, 2 + EOS: Ts = Tt = 10):
  pre:  NH=2 C=16, pre-LN, GELU (tanh), learned positions
  post: NH=2 C=16, post-LN, ReLU, sinusoidal positions
  es:   NH=3 C=24, pre-LN, GELU, sinusoids, token embeddings times sqrt(24) (-es 1, E15's
        remedy; nn.Transformer is given wte[token] * sqrt(C) + PE) and d_ff 2C = 48 (-ff)
For each: the logits at every position with a target, the loss (the mean over those
positions), the gradient of every parameter tensor, then 12 AdamW steps (warm-up, cosine
decay, clipping, weight decay on the matrices and embeddings) at the tolerances of the
GPT-2 references (test_gpt2.c). And 'pre' with dropout p = 0.1 at all 18 sites (seed
4242, step 7), whose reference is the same model written out by hand in PyTorch with our
counter-based masks (ref_s2s_pre_dropout_state.bin): nn.Transformer's masks cannot be
reproduced. Included by test_seq2seq.c after its check(); it calls
check_seq2seq_references(dir).
*/
#ifndef TESTS_SEQ2SEQ_REFERENCE_H
#define TESTS_SEQ2SEQ_REFERENCE_H
#include "../util/cli.h"  // VARIANT_WORDS: the block's words

// the GPT-2 references' tolerances (test_gpt2.c; doc/tests.md, "Test tolerances")
#define S2S_TOL_LOGITS_ABS 1e-5f      // max |logit - ref|
#define S2S_TOL_LOSS_REL 2e-6f        // |loss - ref| / ref
#define S2S_TOL_GRAD_REL 1e-5f        // max |grad - ref| / max |ref| of the tensor
#define S2S_TOL_TRAIN_REL 2e-6f       // losses and gradient norms of the AdamW trajectory

typedef struct {
    int B, Ts, Tt;
    int *src, *src_len, *dec_in, *dec_tgt;  // (B,Ts) (B) (B,Tt) (B,Tt), as util/pairs.h's PairBatch
    int* tgt_len;                           // (B) positions with a target
    float* logits;                          // (B,Tt,V), 0 where dec_tgt is -1
    float loss;
    float* grads;                           // every parameter, checkpoint order
    uint64_t seed, step;                    // version 201: dropout's seed, step and p
    float dropout_p;
} S2SRefState;

// version 200 of the reference state (magic 20240327): [2] B [3] Ts [4] Tt; then src, src_len,
// dec_in, dec_tgt (int32), logits, the loss, the gradients (float32). Version 201 adds
// dropout: [5] seed [6] step [7] p in parts per million.
static void s2s_read_state(S2SRefState* s, const char* path, const Seq2Seq* m) {
    FILE* f = fopenCheck(path, "rb");
    int32_t h[256];
    read_header(f, path, h, 20240327, "reference state");
    if (h[1] != 200 && h[1] != 201)
        die("'%s': state version %d is not an encoder-decoder's (200, 201 with dropout)", path, h[1]);
    s->B = h[2]; s->Ts = h[3]; s->Tt = h[4];
    s->seed = (uint64_t)h[5]; s->step = (uint64_t)h[6];
    s->dropout_p = h[1] == 201 ? h[7] / 1e6f : 0.0f;
    if (!(s->dropout_p >= 0.0f && s->dropout_p < 1.0f)) die("'%s': dropout %d ppm", path, h[7]);
    int maxT = m->config.max_seq_len;
    if (s->B <= 0 || s->B > 64 || s->Ts <= 0 || s->Ts > maxT || s->Tt <= 0 || s->Tt > maxT)
        die("'%s': B %d, Ts %d, Tt %d do not fit the model (maxT %d)", path, s->B, s->Ts, s->Tt, maxT);
    size_t BS = (size_t)s->B * s->Ts, BT = (size_t)s->B * s->Tt, V = m->config.vocab_size;
    long long expected = 1024LL + (long long)(4 * (BS + s->B + 2 * BT + BT * V + 1 + m->num_parameters));
    if (file_size(f) != expected)
        die("'%s' has %lld bytes; a state for B=%d Ts=%d Tt=%d and this model needs %lld", path,
            file_size(f), s->B, s->Ts, s->Tt, expected);
    s->src = mallocCheck(BS * sizeof(int)); s->src_len = mallocCheck(s->B * sizeof(int));
    s->dec_in = mallocCheck(BT * sizeof(int)); s->dec_tgt = mallocCheck(BT * sizeof(int));
    s->tgt_len = mallocCheck(s->B * sizeof(int));
    s->logits = mallocCheck(BT * V * sizeof(float));
    s->grads = mallocCheck(m->num_parameters * sizeof(float));
    fread_check(s->src, sizeof(int), BS, f, path, "sources");
    fread_check(s->src_len, sizeof(int), s->B, f, path, "source lengths");
    fread_check(s->dec_in, sizeof(int), BT, f, path, "decoder inputs");
    fread_check(s->dec_tgt, sizeof(int), BT, f, path, "decoder targets");
    fread_check(s->logits, sizeof(float), BT * V, f, path, "logits");
    fread_check(&s->loss, sizeof(float), 1, f, path, "loss");
    fread_check(s->grads, sizeof(float), m->num_parameters, f, path, "gradients");
    fclose(f);
    for (int b = 0; b < s->B; b++) {
        s->tgt_len[b] = 0;
        for (int t = 0; t < s->Tt; t++)
            s->tgt_len[b] += s->dec_tgt[b * s->Tt + t] >= 0;
    }
}

static void s2s_free_state(S2SRefState* s) {
    free(s->src); free(s->src_len); free(s->dec_in); free(s->dec_tgt); free(s->tgt_len);
    free(s->logits); free(s->grads);
}

// the state's batch as a PairBatch (pointing into the state)
static PairBatch s2s_state_batch(const S2SRefState* s) {
    return (PairBatch){.B = s->B, .Ts = s->Ts, .Tt = s->Tt, .src = s->src, .src_len = s->src_len,
                       .dec_in = s->dec_in, .dec_tgt = s->dec_tgt, .tgt_len = s->tgt_len,
                       .max_B = s->B, .max_src = s->Ts, .max_tgt = s->Tt - 1};
}

// the largest |ours - ref| of n floats, and the largest |ref| (a NaN counts as the largest error)
static void s2s_error(const float* ours, const float* ref, size_t n, float* max_abs, float* max_ref) {
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(ours[i] - ref[i]);
        if (!(d <= *max_abs)) *max_abs = d;
        if (fabsf(ref[i]) > *max_ref) *max_ref = fabsf(ref[i]);
    }
}

// forward and backward on the state's batch: logits at the positions with a target, the
// loss, every parameter's gradient
static void s2s_check_state(const char* model_path, const char* state_path) {
    Seq2Seq m;
    seq2seq_build_from_checkpoint(&m, model_path);
    S2SRefState s;
    s2s_read_state(&s, state_path, &m);
    Seq2SeqConfig c = m.config;
    printf("-- %s + %s: B=%d Ts=%d Tt=%d Le=%d Ld=%d NH=%d C=%d V=%d Vp=%d, %s-LN, %s, %s positions%s, "
           "d_ff %d%s\n", model_path, state_path, s.B, s.Ts, s.Tt, c.enc_layers, c.dec_layers, c.num_heads,
           c.channels, c.vocab_size, c.padded_vocab_size, VARIANT_WORDS[1][c.ln_place],
           VARIANT_WORDS[2][c.activation], VARIANT_WORDS[0][c.pos_encoding],
           c.embed_scale ? ", embeddings x sqrt(C)" : "", s2s_ff(c), s.dropout_p > 0 ? ", dropout" : "");
    PairBatch pb = s2s_state_batch(&s);
    m.dropout_p = s.dropout_p;
    m.dropout_seed = s.seed;
    float loss = seq2seq_forward(&m, &pb, s.dropout_p > 0 ? (long)s.step : -1);
    size_t V = c.vocab_size, Vp = c.padded_vocab_size;
    float max_abs = 0.0f, max_ref = 0.0f;
    int real = 0;
    for (int i = 0; i < s.B * s.Tt; i++)
        if (s.dec_tgt[i] >= 0) {
            s2s_error(m.acts.logits + (size_t)i * Vp, s.logits + (size_t)i * V, V, &max_abs, &max_ref);
            real++;
        }
    check(max_abs <= S2S_TOL_LOGITS_ABS, "logits at the %d positions with a target: max abs error %.2e "
          "(tolerance %.0e)", real, max_abs, S2S_TOL_LOGITS_ABS);
    float loss_rel = fabsf(loss - s.loss) / fabsf(s.loss);
    check(loss_rel <= S2S_TOL_LOSS_REL, "loss %.7f vs PyTorch's %.7f: relative error %.2e (tolerance "
          "%.0e)", loss, s.loss, loss_rel, S2S_TOL_LOSS_REL);
    if (m.grads_memory) zero_floats(m.grads_memory, m.num_parameters);
    seq2seq_backward(&m);
    size_t offset = 0;
    for (int k = 0; k < NUM_S2S_PARAMETERS; k++) {
        size_t n = m.param_sizes[k];
        if (n == 0) continue;  // wpe, with sinusoids
        float g_abs = 0.0f, g_ref = 0.0f;
        s2s_error(m.grads_memory + offset, s.grads + offset, n, &g_abs, &g_ref);
        float r = g_ref > 0 ? g_abs / g_ref : g_abs;
        check(r <= S2S_TOL_GRAD_REL, "grad %-10s max abs error %.2e, max |ref| %.2e, relative to max %.2e "
              "(tolerance %.0e)", S2S_PARAMETER_NAMES[k], g_abs, g_ref, r, S2S_TOL_GRAD_REL);
        offset += n;
    }
    s2s_free_state(&s);
    seq2seq_free(&m);
}

// the AdamW trajectory (magic 20241122, version 200): [2] B [3] Ts [4] Tt [5] steps
// [6] warm-up; float32 hyper[16]; losses, gradient norms, learning rates (float32 each);
// the batch is the state file's
static void s2s_check_training(const char* model_path, const char* state_path, const char* train_path) {
    Seq2Seq m;
    seq2seq_build_from_checkpoint(&m, model_path);
    S2SRefState s;
    s2s_read_state(&s, state_path, &m);
    FILE* f = fopenCheck(train_path, "rb");
    int32_t h[256];
    float hyper[16];
    read_header(f, train_path, h, 20241122, "training reference");
    int n = h[5], warmup = h[6];
    if (h[1] != 200 || h[2] != s.B || h[3] != s.Ts || h[4] != s.Tt || n <= 0 || n > 10000 || warmup < 0)
        die("'%s': bad header (version %d, B %d Ts %d Tt %d, %d steps; the state has B %d Ts %d Tt %d)",
            train_path, h[1], h[2], h[3], h[4], n, s.B, s.Ts, s.Tt);
    float* ref = mallocCheck(3 * (size_t)n * sizeof(float));  // losses, norms, lrs
    fread_check(hyper, sizeof(float), 16, f, train_path, "hyperparameters");
    fread_check(ref, sizeof(float), 3 * (size_t)n, f, train_path, "trajectory");
    fclose(f);
    AdamWConfig opt = {.lr = hyper[0], .warmup = warmup, .max_steps = n, .final_lr_frac = hyper[6],
                       .beta1 = hyper[1], .beta2 = hyper[2], .eps = hyper[3], .weight_decay = hyper[4],
                       .grad_clip = hyper[5]};
    printf("-- %s: %d AdamW steps, lr %g warmup %d, clip %g, weight decay %g\n", train_path, n, opt.lr,
           warmup, opt.grad_clip, opt.weight_decay);
    PairBatch pb = s2s_state_batch(&s);
    float worst_loss = 0.0f, worst_norm = 0.0f, worst_lr = 0.0f;
    int clipped = 0;
    for (int step = 0; step < n; step++) {
        StepStats st = seq2seq_train_step(&m, &pb, step, &opt);  // no dropout
        float el = fabsf(st.loss - ref[step]) / ref[step];
        float en = fabsf(st.norm - ref[n + step]) / ref[n + step];
        float elr = fabsf(st.lr - ref[2 * n + step]) / ref[2 * n + step];
        printf("   step %2d loss %.6f (ref %.6f, rel err %.1e) norm %.5f (ref %.5f, rel err %.1e)\n", step,
               st.loss, ref[step], el, st.norm, ref[n + step], en);
        clipped += st.norm > opt.grad_clip;
        if (!(el <= worst_loss)) worst_loss = el;
        if (!(en <= worst_norm)) worst_norm = en;
        if (!(elr <= worst_lr)) worst_lr = elr;
    }
    check(worst_loss <= S2S_TOL_TRAIN_REL, "trajectory losses: worst relative error %.2e (tolerance %.0e)",
          worst_loss, S2S_TOL_TRAIN_REL);
    check(worst_norm <= S2S_TOL_TRAIN_REL, "trajectory gradient norms: worst relative error %.2e "
          "(tolerance %.0e)", worst_norm, S2S_TOL_TRAIN_REL);
    check(worst_lr <= 1e-6f, "learning-rate schedule: worst relative error %.2e", worst_lr);
    check(clipped > 0, "clipping was exercised (%d of %d steps clipped)", clipped, n);
    free(ref);
    s2s_free_state(&s);
    seq2seq_free(&m);
}

// every encoder-decoder reference in dir; returns the number of failed checks among them
int check_seq2seq_references(const char* dir) {
    static const char* const configs[] = {"pre", "post", "es"};
    int failed_before = failed;
    for (int i = 0; i < 3; i++) {
        char model[4096], state[4096], train[4096];
        snprintf(model, sizeof model, "%s/ref_s2s_%s_model.bin", dir, configs[i]);
        snprintf(state, sizeof state, "%s/ref_s2s_%s_state.bin", dir, configs[i]);
        snprintf(train, sizeof train, "%s/ref_s2s_%s_train.bin", dir, configs[i]);
        s2s_check_state(model, state);
        s2s_check_training(model, state, train);
    }
    char model[4096], state[4096];
    snprintf(model, sizeof model, "%s/ref_s2s_pre_model.bin", dir);
    snprintf(state, sizeof state, "%s/ref_s2s_pre_dropout_state.bin", dir);
    s2s_check_state(model, state);
    return failed - failed_before;
}

#endif
