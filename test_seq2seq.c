/*
test_seq2seq.c: checks train_seq2seq.c, the encoder-decoder.

1. Finite differences of the whole model's loss, every parameter, on a padded batch
   (sources and targets of different lengths), for pre-/post-LN, GELU/ReLU, learned and
   sinusoidal positions, with dropout at every site, the embedding scale (-es 1), the
   decoder unmasked (-causal 0) and MLP widths other than 4C (-ff 2C, article 003's; -ff 12).
2. Padding invariance: the same pairs padded further (longer Ts and Tt) give the same
   logits at every real position and the same gradients, within float rounding.
3. The KV-cache decoder (decoder_forward_token) against the training forward's logits
   at every position; greedy decoding against the argmax of the teacher-forced forward.
4. Checkpoints written, read and written again byte for byte.
5. Article 002 measured: on a half-trained checkpoint, exact match = teacher-forced
   sequence accuracy, and the free-running counts are the decoded tokens'; the edit
   distance to the target against its definition, a shifted output one edit.
6. The decoder's mask off: later inputs reach earlier positions, and a model trained so
   is right under teacher forcing and wrong when decoding.
7. Decoding never emits PAD or BOS, even where they are the most likely tokens.
8. -fe 1 (the encoder frozen) and -opt sgd (plain SGD).
Then errata E26-E28 (tests/errata_seq2seq.h), and PyTorch's nn.Transformer as the
oracle, when tests/seq2seq_reference.h is present (references in data/ref, or -r DIR).
Usage: ./test_seq2seq [-r REFERENCE_DIR] [-k WORD]: -k runs only the groups of checks whose
names contain WORD (-l lists them). The last line is "N passed, M failed".
*/
#include "train_seq2seq.c"  // the model (its program is train_seq2seq_main.c)

#define TOL_FD_REL 5e-4f     // finite differences: max |num - analytic| / max |analytic|
#define TOL_PAD_LOGIT 1e-6f  // padding: logits of real positions, relative to the largest |logit|
#define TOL_PAD_REL 1e-5f    // padding: gradients, relative to the largest of the tensor
#define TOL_KV_ABS 1e-5f     // KV-cache logits vs the training forward's

#include "tests/check.h"  // check(), use_threads()


// ----------------------------------------------------------------------------
// a small model and a padded batch

enum { V = 9, MAXT = 8, C = 8, NH = 2 };
typedef struct {
    const char* name; int pe, ln, act; float dropout; int mask, embed_scale, ff; float as;  // as: -as
} Variant;
static const Variant VARIANTS[] = {  // ff 0: 4C
    {"pre-LN, GELU, learned positions", POS_LEARNED, LN_PRE, ACT_GELU, 0.0f, MASK_CAUSAL, 0, 0, 0.0f},
    {"post-LN, ReLU, sinusoids", POS_SIN, LN_POST, ACT_RELU, 0.0f, MASK_CAUSAL, 0, 0, 0.0f},
    {"pre-LN, ReLU, sinusoids", POS_SIN, LN_PRE, ACT_RELU, 0.0f, MASK_CAUSAL, 0, 0, 0.0f},
    {"post-LN, GELU, learned positions", POS_LEARNED, LN_POST, ACT_GELU, 0.0f, MASK_CAUSAL, 0, 0, 0.0f},
    {"pre-LN, GELU, dropout 0.2", POS_LEARNED, LN_PRE, ACT_GELU, 0.2f, MASK_CAUSAL, 0, 0, 0.0f},
    {"pre-LN, GELU, learned, embeddings x sqrt(C)", POS_LEARNED, LN_PRE, ACT_GELU, 0.0f,
     MASK_CAUSAL, 1, 0, 0.0f},
    {"pre-LN, GELU, decoder unmasked", POS_LEARNED, LN_PRE, ACT_GELU, 0.0f,
     MASK_NONE, 0, 0, 0.0f},  // -causal 0
    {"post-LN, ReLU, sinusoids, -ff 2C", POS_SIN, LN_POST, ACT_RELU, 0.0f,
     MASK_CAUSAL, 0, 2 * C, 0.0f},  // 003's
    {"pre-LN, GELU, -ff 12", POS_LEARNED, LN_PRE, ACT_GELU, 0.0f, MASK_CAUSAL, 0, 12, 0.0f},
    {"pre-LN, squared ReLU (-act relu2)", POS_LEARNED, LN_PRE, ACT_RELU2, 0.0f, MASK_CAUSAL, 0, 0, 0.0f},
    {"post-LN, GELU, scores times 1.3 (-as)", POS_LEARNED, LN_POST, ACT_GELU, 0.0f, MASK_CAUSAL, 0, 0, 1.3f},
};
#define SCALED 5    // the -es 1 variant
#define UNMASKED 6  // the -causal 0 variant: no KV-cache check (decoding differs)
#define FF_2C 7     // article 003's toy layer: d_ff = 2d
#define FF_12 8
#define RELU2 9
#define AS_13 10    // -as 1.3
// padding, checkpoints
static const int PADDED_VARIANTS[] = {0, 1, SCALED, UNMASKED, FF_2C, FF_12, RELU2, AS_13};
// the KV-cache checks
static const int CACHED_VARIANTS[] = {0, 1, 2, 3, SCALED, FF_2C, FF_12, RELU2, AS_13};
#define NUM_VARIANTS ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))
#define NUM_PADDED ((int)(sizeof PADDED_VARIANTS / sizeof PADDED_VARIANTS[0]))
#define NUM_CACHED ((int)(sizeof CACHED_VARIANTS / sizeof CACHED_VARIANTS[0]))

// 2 + 2 layers (so the memory's gradient sums over two decoder layers); weights drawn
// larger than GPT-2's 0.02 so that activations are of order 1 (a finite difference then
// sees the maths, not the rounding) and layernorm weights and biases are not 1 and 0
static void small_model(Seq2Seq* m, const Variant* v, uint64_t seed) {
    Seq2SeqConfig c = {.max_seq_len = MAXT, .vocab_size = V, .padded_vocab_size = 16, .enc_layers = 2,
                       .dec_layers = 2, .num_heads = NH, .channels = C, .pos_encoding = v->pe,
                       .ln_place = v->ln, .activation = v->act, .mask = v->mask,
                       .embed_scale = v->embed_scale, .ff = v->ff, .att_scale = v->as};
    seq2seq_init_random(m, c, seed);
    uint64_t rng = seed * 7 + 1;
    for (size_t i = 0; i < m->num_parameters; i++)
        m->params_memory[i] = 0.3f * random_normal(&rng);
    for (int k = 0; k < NUM_S2S_PARAMETERS; k++) {  // layernorm weights near 1
        const char* n = S2S_PARAMETER_NAMES[k];
        size_t len = strlen(n);
        if (n[len - 1] != 'w' || !strstr(n, "ln")) continue;
        float* p = m->params_memory + sum_sizes(m->param_sizes, k);
        for (size_t i = 0; i < m->param_sizes[k]; i++)
            p[i] += 1.0f;
    }
    m->dropout_p = v->dropout;
    m->dropout_seed = seed;
}

// three pairs of different lengths: sources 5, 2, 4; targets 3, 6, 1 (Ts 5, Tt 7)
typedef struct { int src[3][8], src_len[3], tgt[3][8], tgt_len[3]; } Pairs3;
static const Pairs3 PAIRS = {{{3, 4, 5, 6, 7}, {8, 3}, {5, 5, 6, 4}}, {5, 2, 4},
                             {{7, 8, 3}, {4, 4, 5, 6, 7, 8}, {6}}, {3, 6, 1}};

// lays the pairs out as a batch padded to Ts >= 5 and Tt >= 7 (util/pairs.h's layout)
static void make_batch(PairBatch* pb, const Pairs3* p, int Ts, int Tt) {
    pair_batch_alloc(pb, 3, MAXT, MAXT);
    pb->B = 3; pb->Ts = Ts; pb->Tt = Tt;
    for (int b = 0; b < 3; b++) {
        int n = p->tgt_len[b];
        pb->src_len[b] = p->src_len[b];
        pb->tgt_len[b] = n + 1;
        for (int t = 0; t < Ts; t++)
            pb->src[b * Ts + t] = t < p->src_len[b] ? p->src[b][t] : PAIR_PAD;
        for (int t = 0; t < Tt; t++) {
            pb->dec_in[b * Tt + t] = t == 0 ? PAIR_BOS : t <= n ? p->tgt[b][t - 1] : PAIR_PAD;
            pb->dec_tgt[b * Tt + t] = t < n ? p->tgt[b][t] : t == n ? PAIR_EOS : -1;
        }
    }
}

// the loss in double, from the per-position losses (the float mean would round away
// what a finite difference measures)
static double model_loss(Seq2Seq* m, const PairBatch* pb, long step) {
    seq2seq_forward(m, pb, step);
    double sum = 0.0;
    for (int i = 0; i < pb->B * pb->Tt; i++)
        sum += m->scratch.losses[i];
    return sum / m->num_targets;
}

static void gradients(Seq2Seq* m, const PairBatch* pb, long step) {
    seq2seq_forward(m, pb, step);
    if (m->grads_memory) zero_floats(m->grads_memory, m->num_parameters);
    seq2seq_backward(m);
}

// ----------------------------------------------------------------------------
// 1. finite differences, every parameter

// ReLU has a kink at 0: a difference whose two sides put an MLP input on different sides
// of it measures the jump, not the slope. This hash of the signs of every MLP input
// (fch) tells whether a perturbation moved one across; such parameters are skipped and
// counted (a handful of thousands).
static uint64_t relu_signs(const Seq2Seq* m) {
    Seq2SeqConfig c = m->config;
    uint64_t h = 0;
    for (int s = 0; s < num_sublayers(c); s++) {
        Sublayer u = sublayer(&m->params, c, s);
        if (u.kind != SUB_MLP) continue;
        SublayerActs a = sublayer_acts(m, u, s);
        int T = u.decoder ? m->Tt : m->Ts, H = s2s_ff(c);
        for (int bt = 0; bt < m->B * T; bt++) {  // real positions only: padding's kinks change nothing
            int real = u.decoder ? m->dec_tgt[bt] >= 0 : bt % T < m->src_len[bt / T];
            for (int i = 0; real && i < H; i++)
                h = splitmix64(h ^ (a.fch[(size_t)bt * H + i] > 0.0f)) + (uint64_t)i;
        }
    }
    return h;
}

static void test_finite_differences(void) {
    printf("-- finite differences of the whole model's loss (2+2 layers, a padded batch of 3 pairs)\n");
    PairBatch pb;
    make_batch(&pb, &PAIRS, 5, 7);
    for (int k = 0; k < NUM_VARIANTS; k++) {
        const Variant* v = &VARIANTS[k];
        Seq2Seq m;
        small_model(&m, v, 100 + k);
        long step = v->dropout > 0 ? 3 : -1;
        gradients(&m, &pb, step);
        seq2seq_forward(&m, &pb, step);
        uint64_t signs = relu_signs(&m);
        // eps 2e-3: measured on the pre-LN GELU model, the worst error relative to the largest
        // gradient is 2.0e-3 at eps 1e-2 and 5.3e-4 at 5e-3 (truncation, ~eps^2), 1.9e-4 at
        // 2e-3, and 4.1e-4 at 1e-3 (the float forward's rounding, ~1/eps)
        const float eps = 2e-3f;
        float max_err = 0.0f, max_ana = 0.0f;
        size_t worst = 0, n = 0, kinks = 0;
        for (size_t i = 0; i < m.num_parameters; i++) {
            float ana = m.grads_memory[i];
            if (i >= (size_t)V * C && i < 16 * C) continue;  // wte's padding rows: never used
            float orig = m.params_memory[i];
            m.params_memory[i] = orig + eps; double fp = model_loss(&m, &pb, step);
            int crossed = v->act == ACT_RELU && relu_signs(&m) != signs;
            m.params_memory[i] = orig - eps; double fm = model_loss(&m, &pb, step);
            crossed = crossed || (v->act == ACT_RELU && relu_signs(&m) != signs);
            m.params_memory[i] = orig;
            if (crossed) { kinks++; continue; }
            float num = (float)((fp - fm) / (2.0 * eps));
            if (!(fabsf(num - ana) <= max_err)) { max_err = fabsf(num - ana); worst = i; }
            if (fabsf(ana) > max_ana) max_ana = fabsf(ana);
            n++;
        }
        int tensor = 0;
        while (tensor + 1 < NUM_S2S_PARAMETERS && sum_sizes(m.param_sizes, tensor + 1) <= worst)
            tensor++;
        check(max_err <= TOL_FD_REL * max_ana && kinks * 4 < n, "finite differences, %-34s %zu parameters "
              "(%zu skipped: a ReLU kink): max error %.2e (in %s), relative to max %.2e (tolerance %.0e)",
              v->name, n, kinks, max_err, S2S_PARAMETER_NAMES[tensor], max_err / max_ana, TOL_FD_REL);
        seq2seq_free(&m);
    }
    pair_batch_free(&pb);
}

// ----------------------------------------------------------------------------
// 2. padding changes no real position

static void test_padding_invariance(void) {
    printf("-- padding: the same pairs padded to Ts 5 -> 8 and Tt 7 -> 8\n");
    PairBatch tight, loose;
    make_batch(&tight, &PAIRS, 5, 7);
    make_batch(&loose, &PAIRS, 8, 8);
    for (int i = 0, k; i < NUM_PADDED && (k = PADDED_VARIANTS[i], 1); i++) {
        Seq2Seq m;
        small_model(&m, &VARIANTS[k], 200 + k);
        gradients(&m, &tight, -1);
        float loss_tight = m.mean_loss;
        float* grads = mallocCheck(m.num_parameters * sizeof(float));
        memcpy(grads, m.grads_memory, m.num_parameters * sizeof(float));
        float* logits = mallocCheck((size_t)3 * 7 * 16 * sizeof(float));
        seq2seq_forward(&m, &tight, -1);  // the backward overwrote the logits
        memcpy(logits, m.acts.logits, (size_t)3 * 7 * 16 * sizeof(float));
        gradients(&m, &loose, -1);
        float loss_loose = m.mean_loss;
        float* grads_loose = m.grads_memory;
        seq2seq_forward(&m, &loose, -1);
        // relative to the largest |logit|: the products' rounding scales with the values, and a
        // BLAS blocks 7 and 8 rows differently (make BLAS=1: doc/tests.md)
        float worst_logit = 0.0f, max_logit = 0.0f;
        for (int b = 0; b < 3; b++)
            for (int t = 0; t <= PAIRS.tgt_len[b]; t++)  // the real positions: target and EOS
                for (int v = 0; v < V; v++) {
                    float tight_logit = logits[(b * 7 + t) * 16 + v];
                    float d = fabsf(tight_logit - m.acts.logits[(b * 8 + t) * 16 + v]);
                    if (!(d <= worst_logit)) worst_logit = d;
                    if (fabsf(tight_logit) > max_logit) max_logit = fabsf(tight_logit);
                }
        worst_logit = max_logit > 0 ? worst_logit / max_logit : worst_logit;
        float worst_grad = 0.0f;
        for (int j = 0; j < NUM_S2S_PARAMETERS; j++) {
            size_t off = sum_sizes(m.param_sizes, j);
            float max_abs = 0.0f, max_ref = 0.0f;
            for (size_t i = off; i < off + m.param_sizes[j]; i++) {
                float d = fabsf(grads[i] - grads_loose[i]);
                if (!(d <= max_abs)) max_abs = d;
                if (fabsf(grads[i]) > max_ref) max_ref = fabsf(grads[i]);
            }
            float r = max_ref > 0 ? max_abs / max_ref : max_abs;
            if (!(r <= worst_grad)) worst_grad = r;
        }
        check(worst_logit <= TOL_PAD_LOGIT && worst_grad <= TOL_PAD_REL && loss_tight == loss_loose,
              "padding, %s: real positions' logits differ by %.1e of the largest, %.2f (tolerance %.0e), "
              "gradients by %.1e of their tensor's largest (tolerance %.0e), loss %.7f vs %.7f",
              VARIANTS[k].name, worst_logit, max_logit, TOL_PAD_LOGIT, worst_grad, TOL_PAD_REL, loss_tight,
              loss_loose);
        free(grads);
        free(logits);
        seq2seq_free(&m);
    }
    pair_batch_free(&tight);
    pair_batch_free(&loose);
}

// ----------------------------------------------------------------------------
// 3. the KV-cache decoder against the training forward

static void test_kv_cache(void) {
    printf("-- the decoder one token at a time (KV cache) against the training forward\n");
    PairBatch pb;
    make_batch(&pb, &PAIRS, 5, 7);
    for (int i = 0, k; i < NUM_CACHED && (k = CACHED_VARIANTS[i], 1); i++) {
        Seq2Seq m;
        small_model(&m, &VARIANTS[k], 300 + k);
        DecodeCache dc;
        decode_cache_init(&dc, m.config, 3);
        seq2seq_forward(&m, &pb, -1);
        float* logits = mallocCheck((size_t)3 * 7 * 16 * sizeof(float));
        memcpy(logits, m.acts.logits, (size_t)3 * 7 * 16 * sizeof(float));
        seq2seq_encode(&m, pb.src, pb.src_len, 3, 5, -1);
        decode_cache_start(&m, &dc);
        float worst = 0.0f;
        int tokens[3];
        for (int t = 0; t < 7; t++) {  // feed the true decoder inputs (padding included)
            for (int b = 0; b < 3; b++)
                tokens[b] = pb.dec_in[b * 7 + t];
            const float* step = decoder_forward_token(&m, &dc, tokens);
            for (int b = 0; b < 3; b++)
                for (int v = 0; v < V; v++) {
                    float d = fabsf(step[b * 16 + v] - logits[(b * 7 + t) * 16 + v]);
                    if (!(d <= worst)) worst = d;
                }
        }
        check(worst <= TOL_KV_ABS, "KV cache, %s: logits at all 7 positions of 3 padded pairs within %.1e of "
              "the training forward (tolerance %.0e)", VARIANTS[k].name, worst, TOL_KV_ABS);
        // greedy decoding: each output token is the argmax of the teacher-forced forward fed
        // with the outputs so far (a second, independent route to the same tokens)
        Sampler greedy;
        sampler_init(&greedy, V, 0.0f, 0, 0);
        int out[3 * MAXT], out_len[3], agree = 1;
        seq2seq_decode(&m, &dc, &greedy, pb.src, pb.src_len, 3, 5, out, out_len);
        for (int b = 0; b < 3 && agree; b++) {
            int in[MAXT] = {PAIR_BOS};
            for (int t = 0; t < out_len[b] + 1 && t < MAXT && agree; t++) {
                seq2seq_encode(&m, pb.src + b * 5, pb.src_len + b, 1, 5, -1);
                seq2seq_decode_teacher(&m, in, NULL, t + 1);
                const float* z = m.acts.logits + (size_t)t * 16;
                int best = PAIR_EOS;  // decoding's choice: EOS or a character, never PAD or BOS
                for (int v = PAIR_EOS + 1; v < V; v++)
                    best = z[v] > z[best] ? v : best;
                int want = t < out_len[b] ? out[b * MAXT + t] : PAIR_EOS;
                agree = best == want;
                if (t + 1 < MAXT) in[t + 1] = best;
            }
        }
        check(agree, "greedy decoding, %s: every decoded token is the argmax of the full forward on the "
              "tokens before it (lengths %d, %d, %d)", VARIANTS[k].name, out_len[0], out_len[1], out_len[2]);
        sampler_free(&greedy);
        free(logits);
        decode_cache_free(&dc);
        seq2seq_free(&m);
    }
    pair_batch_free(&pb);
}

// ----------------------------------------------------------------------------
// 4. checkpoints byte for byte

static int same_file(const char* a, const char* b) {
    FILE *fa = fopenCheck(a, "rb"), *fb = fopenCheck(b, "rb");
    int ca, cb, same = 1;
    do {
        ca = fgetc(fa);
        cb = fgetc(fb);
        same = ca == cb;
    } while (same && ca != EOF);
    fclose(fa);
    fclose(fb);
    return same;
}

static void test_checkpoint(void) {
    printf("-- checkpoints\n");
    compat_mkdir("tests/tmp");
    for (int i = 0, k; i < NUM_PADDED && (k = PADDED_VARIANTS[i], 1); i++) {
        Seq2Seq m, back;
        small_model(&m, &VARIANTS[k], 400 + k);
        seq2seq_write_checkpoint(&m, "tests/tmp/s2s_a.bin");
        seq2seq_build_from_checkpoint(&back, "tests/tmp/s2s_a.bin");
        seq2seq_write_checkpoint(&back, "tests/tmp/s2s_b.bin");
        int same = back.num_parameters == m.num_parameters &&
                   memcmp(back.params_memory, m.params_memory, m.num_parameters * sizeof(float)) == 0 &&
                   memcmp(&back.config, &m.config, sizeof m.config) == 0;
        check(same && same_file("tests/tmp/s2s_a.bin", "tests/tmp/s2s_b.bin"), "checkpoint of %s: written, "
              "read and written again byte for byte (%zu parameters)", VARIANTS[k].name, m.num_parameters);
        seq2seq_free(&m);
        seq2seq_free(&back);
    }
    remove("tests/tmp/s2s_a.bin");
    remove("tests/tmp/s2s_b.bin");
}

// ----------------------------------------------------------------------------
// 5. article 002's lesson, measured: a half-trained model on reversal pairs

// n random reversal pairs over the characters 3..V-1, of 1..6 characters (pairs.h's layout)
typedef struct { PairSet ps; uint16_t* tokens; size_t* offset; int *src_len, *tgt_len; } OwnedPairs;
static OwnedPairs reversal_pairs(int n, uint64_t seed) {
    OwnedPairs p = {{0}, mallocCheck((size_t)n * 14 * sizeof(uint16_t)),
                    mallocCheck((size_t)n * sizeof(size_t)), mallocCheck((size_t)n * sizeof(int)),
                    mallocCheck((size_t)n * sizeof(int))};
    uint64_t rng = splitmix64(seed);
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        int len = 1 + (int)(splitmix64(rng++) % 6);
        p.tokens[k++] = p.src_len[i] = p.tgt_len[i] = len;
        p.tokens[k++] = len;
        p.offset[i] = k;
        for (int t = 0; t < len; t++)
            p.tokens[k + t] = p.tokens[k + 2 * len - 1 - t] = 3 + (int)(splitmix64(rng++) % (V - 3));
        k += 2 * len;
    }
    p.ps = (PairSet){.num_pairs = n, .vocab_size = V, .max_src = 6, .max_tgt = 6, .tokens = p.tokens,
                     .offset = p.offset, .src_len = p.src_len, .tgt_len = p.tgt_len};
    return p;
}

static void free_pairs(OwnedPairs* p) {
    free(p->tokens); free(p->offset); free(p->src_len); free(p->tgt_len);
}

// 1 + 1 layers, C 16, the decoder's mask (MASK_CAUSAL or MASK_NONE), trained by AdamW on
// 512 pairs for `steps` steps, B 16; written to a checkpoint and read back
static void half_trained_model(Seq2Seq* m, int mask, int steps, const char* path) {
    Seq2SeqConfig c = {.max_seq_len = MAXT, .vocab_size = V, .padded_vocab_size = 16, .enc_layers = 1,
                       .dec_layers = 1, .num_heads = 2, .channels = 16, .mask = mask};
    Seq2Seq t;
    seq2seq_init_random(&t, c, 3502);
    OwnedPairs train = reversal_pairs(512, 35);
    PairBatch pb;
    pair_batch_alloc(&pb, 16, 6, 6);
    AdamWConfig opt = {.lr = 1e-2f, .warmup = 0, .max_steps = 0, .final_lr_frac = 1.0f, .beta1 = 0.9f,
                       .beta2 = 0.99f, .eps = 1e-8f, .weight_decay = 0.0f, .grad_clip = 1.0f};
    int ids[16];
    for (int step = 0; step < steps; step++) {
        for (int b = 0; b < 16; b++)
            ids[b] = (step * 16 + b) % 512;
        pair_batch_fill(&pb, &train.ps, ids, 16);
        seq2seq_train_step(&t, &pb, step, &opt);
    }
    seq2seq_write_checkpoint(&t, path);
    seq2seq_free(&t);
    seq2seq_build_from_checkpoint(m, path);
    pair_batch_free(&pb);
    free_pairs(&train);
}

// one held-out pair scored alone, without evaluate: its greedy tokens from seq2seq_decode
// (B 1) against its target, and the argmax of its own teacher-forced forward over the
// tokens decoding may emit (EOS and the characters)
typedef struct { int right, tf_right, exact, tf_exact, after, after_greedy, after_tf; } Tally;
static void tally_pair(Seq2Seq* m, DecodeCache* dc, const PairSet* ps, int i, Tally* y) {
    PairBatch pb;
    pair_batch_alloc(&pb, 1, ps->max_src, ps->max_tgt);
    pair_batch_fill(&pb, ps, &i, 1);
    Sampler greedy;
    sampler_init(&greedy, V, 0.0f, 0, 0);
    int out[MAXT], len, first_wrong = -1, all = 1, tf_all = 1;
    seq2seq_decode(m, dc, &greedy, pb.src, pb.src_len, 1, pb.Ts, out, &len);
    seq2seq_forward(m, &pb, -1);
    for (int t = 0; t <= ps->tgt_len[i]; t++) {
        int got = t < len ? out[t] : t == len && len < MAXT ? PAIR_EOS : -1, best = PAIR_EOS;
        for (int v = PAIR_EOS + 1; v < V; v++)
            if (m->acts.probs[t * 16 + v] > m->acts.probs[t * 16 + best]) best = v;
        int g = got == pb.dec_tgt[t], tf = best == pb.dec_tgt[t];
        y->right += g; y->tf_right += tf; all &= g; tf_all &= tf;
        if (first_wrong >= 0) { y->after++; y->after_greedy += g; y->after_tf += tf; }
        else if (!g) first_wrong = t;
    }
    y->exact += all; y->tf_exact += tf_all;
    sampler_free(&greedy);
    pair_batch_free(&pb);
}

static void test_teacher_forcing_measured(void) {
    printf("-- article 002 measured: decoding against teacher forcing, a half-trained model's checkpoint\n");
    Seq2Seq m;
    compat_mkdir("tests/tmp");
    half_trained_model(&m, MASK_CAUSAL, 300, "tests/tmp/s2s_half.bin");
    OwnedPairs val = reversal_pairs(200, 36);
    DecodeCache dc;
    decode_cache_init(&dc, m.config, 16);
    Sampler sampled;
    sampler_init(&sampled, V, 1.0f, 0, 7);
    EvalStats e = evaluate(&m, &dc, &val.ps, 200, 16, &sampled, 0, NULL);
    Tally y = {0};
    for (int i = 0; i < 200; i++)
        tally_pair(&m, &dc, &val.ps, i, &y);
    check(e.tf_sequences == e.greedy_exact && y.tf_exact == y.exact && e.greedy_exact == y.exact &&
          y.exact > 0 && y.exact < 200, "exact match %d of 200 = teacher-forced sequence accuracy %d "
          "(and %d, %d recomputed pair by pair): greedy decoding sees the teacher-forced input until its "
          "first wrong token", e.greedy_exact, e.tf_sequences, y.exact, y.tf_exact);
    check(e.greedy_right == y.right && e.tf_right == y.tf_right && e.after == y.after &&
          e.after_greedy == y.after_greedy && e.after_tf == y.after_tf && y.after_greedy < y.after_tf,
          "free-running accuracy is the decoded tokens': %d of %d positions right (teacher forced %d); "
          "after the first wrong greedy token %d of %d (teacher forced %d of the same), as recomputed pair "
          "by pair",
          e.greedy_right, e.positions, e.tf_right, e.after_greedy, e.after, e.after_tf);
    check(e.sampled_right <= e.positions && e.sampled_right > 0, "sampled decoding scored too: %d of %d "
          "positions right", e.sampled_right, e.positions);
    eval_stats_free(&e);
    sampler_free(&sampled);
    decode_cache_free(&dc);
    free_pairs(&val);
    seq2seq_free(&m);
    remove("tests/tmp/s2s_half.bin");
}


// edit distance by its definition: the last characters kept (if equal) or replaced, a's
// last dropped, or b's last inserted, whichever is cheapest (exponential; strings of <= 6)
static int edit_distance_recursive(const int* a, int na, const int* b, int nb) {
    if (na == 0 || nb == 0) return na + nb;
    int best = edit_distance_recursive(a, na - 1, b, nb - 1) + (a[na - 1] != b[nb - 1]);
    int drop = edit_distance_recursive(a, na - 1, b, nb) + 1;
    int insert = edit_distance_recursive(a, na, b, nb - 1) + 1;
    best = drop < best ? drop : best;
    return insert < best ? insert : best;
}

// the alignment-aware score: edit_distance against its definition, and a shifted output
// (one character extra) scored as one edit where position by position it is all wrong
static void test_edit_distance(void) {
    printf("-- edit distance to the target: a shifted output is one edit\n");
    uint64_t rng = 5;
    int row[8], worst = 0, max_d = 0;
    for (int k = 0; k < 500; k++) {
        int a[6], b[6], na = (int)(random_u64(&rng) % 7), nb = (int)(random_u64(&rng) % 7);
        for (int i = 0; i < 6; i++)
            a[i] = 3 + (int)(random_u64(&rng) % 3), b[i] = 3 + (int)(random_u64(&rng) % 3);
        int d = edit_distance(a, na, b, nb, row), want = edit_distance_recursive(a, na, b, nb);
        worst += d != want;
        max_d = d > max_d ? d : max_d;
    }
    check(worst == 0 && max_d >= 5, "edit_distance = the recursive definition on 500 random pairs of strings "
          "of 0-6 characters (%d differ; distances up to %d)", worst, max_d);
    int tgt[6] = {3, 4, 5, 6, 7, PAIR_EOS}, tf[6] = {3, 4, 5, 6, 7, PAIR_EOS};  // "abcde", EOS
    int extra[6] = {3, 3, 4, 5, 6, 7}, dropped[4] = {3, 5, 6, 7}, replaced[5] = {3, 4, 8, 6, 7};
    EvalStats e;
    eval_stats_init(&e, 8);
    score_pair(&e, tgt, tf, 5, extra, 6, NULL, 0, 8);
    check(e.after == 4 && e.after_greedy == 0 && e.edits == 1 && e.one_extra == 1 && e.chars == 5,
          "\"abcde\" decoded as \"aabcde\": after the first wrong token %d of %d positions right, %lld edit "
          "(one character extra: %d)", e.after_greedy, e.after, e.edits, e.one_extra);
    score_pair(&e, tgt, tf, 5, dropped, 4, NULL, 0, 8);
    score_pair(&e, tgt, tf, 5, replaced, 5, NULL, 0, 8);
    score_pair(&e, tgt, tf, 5, tgt, 5, NULL, 0, 8);
    check(e.edits == 3 && e.one_extra == 1 && e.one_dropped == 1 && e.one_replaced == 1 && e.chars == 20,
          "\"acde\" one missing, \"abfde\" one replaced, \"abcde\" none: %lld edits in all, %d/%d/%d of "
          "each kind", e.edits, e.one_extra, e.one_dropped, e.one_replaced);
    eval_stats_free(&e);
}

// ----------------------------------------------------------------------------
// 6. the decoder's mask off (-causal 0, E34): a position's logits change with a later input
// token, and a model trained so reads the answer: right under teacher forcing, wrong when
// decoding, which has no later tokens to read
static void test_decoder_mask_off(void) {
    printf("-- the decoder's mask off (-causal 0): what article 003's \"optional\" mask prevents\n");
    PairBatch pb;
    make_batch(&pb, &PAIRS, 5, 7);
    float moved[2];
    for (int k = 0; k < 2; k++) {  // pair 1 (target of 6): its input token 4 changed, logits 0-3 compared
        Seq2Seq m;
        small_model(&m, &VARIANTS[k ? UNMASKED : 0], 3400);
        seq2seq_forward(&m, &pb, -1);
        float before[4 * 16];
        memcpy(before, m.acts.logits + (size_t)7 * 16, sizeof before);
        pb.dec_in[7 + 4] = pb.dec_in[7 + 4] == 3 ? 4 : 3;
        seq2seq_forward(&m, &pb, -1);
        pb.dec_in[7 + 4] = PAIRS.tgt[1][3];
        moved[k] = 0.0f;
        for (int i = 0; i < 4 * 16; i++)
            moved[k] = fmaxf(moved[k], fabsf(m.acts.logits[7 * 16 + i] - before[i]));
        seq2seq_free(&m);
    }
    check(moved[0] == 0.0f && moved[1] > 1e-3f, "a later decoder input changes the logits of earlier "
          "positions by %.1e with the mask, by %.2e without", moved[0], moved[1]);
    pair_batch_free(&pb);
    Seq2Seq m;
    half_trained_model(&m, MASK_NONE, 300, "tests/tmp/s2s_nomask.bin");
    OwnedPairs val = reversal_pairs(200, 36);
    DecodeCache dc;
    decode_cache_init(&dc, m.config, 16);
    EvalStats e = evaluate(&m, &dc, &val.ps, 200, 16, NULL, 0, NULL);
    check(e.tf_right > 0.9 * e.positions && e.greedy_right < 0.5 * e.positions, "trained without the mask "
          "(300 steps): teacher forced %d of %d positions right, greedy decoding %d (exact match %d of 200)",
          e.tf_right, e.positions, e.greedy_right, e.greedy_exact);
    eval_stats_free(&e);
    decode_cache_free(&dc);
    free_pairs(&val);
    seq2seq_free(&m);
    remove("tests/tmp/s2s_nomask.bin");
}

// ----------------------------------------------------------------------------
// 7. decoding never emits PAD or BOS (E27), greedy or sampled

// A model whose every decoder position outputs a multiple of the special token's
// embedding (the final layernorm's weight 0, its bias that embedding), the embedding made
// the longest: the tied head's largest logit is the special's, so only the decoding's rule
// keeps it out. The loss still covers every token: p(special) stays the largest there.
static void test_no_special_outputs(void) {
    printf("-- decoding never emits PAD or BOS, even where they are the most likely tokens\n");
    PairBatch pb;
    make_batch(&pb, &PAIRS, 5, 7);
    for (int special = PAIR_PAD; special <= PAIR_BOS; special++) {
        Seq2Seq m;
        small_model(&m, &VARIANTS[0], 3600 + special);
        float* w = m.params.wte + special * C;
        for (int i = 0; i < C; i++) {
            w[i] *= 3.0f;
            m.params.lnfw[i] = 0.0f;
            m.params.lnfb[i] = w[i];
        }
        seq2seq_forward(&m, &pb, -1);
        int argmax = 0;
        for (int v = 1; v < V; v++)
            argmax = m.acts.logits[v] > m.acts.logits[argmax] ? v : argmax;
        DecodeCache dc;
        decode_cache_init(&dc, m.config, 3);
        Sampler samplers[3];
        sampler_init(&samplers[0], V, 0.0f, 0, 0);
        sampler_init(&samplers[1], V, 1.0f, 0, 5);
        sampler_init(&samplers[2], V, 1.0f, 2, 5);
        int out[3 * MAXT], out_len[3], emitted = 0, tokens = 0;
        for (int k = 0; k < 3; k++) {
            seq2seq_decode(&m, &dc, &samplers[k], pb.src, pb.src_len, 3, 5, out, out_len);
            for (int b = 0; b < 3; b++)
                for (int t = 0; t < out_len[b]; t++, tokens++)
                    emitted += out[b * MAXT + t] == PAIR_PAD || out[b * MAXT + t] == PAIR_BOS;
            sampler_free(&samplers[k]);
        }
        check(argmax == special && m.acts.probs[special] > 0.5f && emitted == 0 && tokens > 0, "%s is the "
              "most likely token (p %.2f at the first position) and none of %d tokens decoded greedily, "
              "sampled and top-2 sampled is PAD or BOS", special == PAIR_PAD ? "PAD" : "BOS",
              m.acts.probs[special], tokens);
        decode_cache_free(&dc);
        seq2seq_free(&m);
    }
    pair_batch_free(&pb);
}


// ----------------------------------------------------------------------------
// 8. article 002's training section as flags: the encoder frozen (-fe 1), plain SGD (-opt sgd)

static void test_freeze_and_sgd(void) {
    printf("-- -fe 1 (the encoder frozen) and -opt sgd (W -= lr dL/dW)\n");
    PairBatch pb;
    make_batch(&pb, &PAIRS, 5, 7);
    Seq2Seq m;
    small_model(&m, &VARIANTS[0], 3800);
    size_t n = m.num_parameters, enc0 = sum_sizes(m.param_sizes, FIRST_ENCODER_TENSOR);
    size_t dec0 = sum_sizes(m.param_sizes, FIRST_DECODER_TENSOR);
    float *p0 = mallocCheck(n * sizeof(float)), *g_all = mallocCheck(n * sizeof(float));
    memcpy(p0, m.params_memory, n * sizeof(float));
    gradients(&m, &pb, -1);
    memcpy(g_all, m.grads_memory, n * sizeof(float));
    m.freeze_encoder = 1;
    gradients(&m, &pb, -1);
    int decoder_same = memcmp(m.grads_memory + dec0, g_all + dec0, (n - dec0) * sizeof(float)) == 0;
    int zero = 1;
    for (size_t i = enc0; i < dec0; i++)
        zero &= m.grads_memory[i] == 0.0f;
    AdamWConfig opt = {.lr = 1e-2f, .warmup = 0, .max_steps = 0, .final_lr_frac = 1.0f, .beta1 = 0.9f,
                       .beta2 = 0.99f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 0.0f};
    seq2seq_train_step(&m, &pb, 0, &opt);
    int kept = memcmp(m.params_memory + enc0, p0 + enc0, (dec0 - enc0) * sizeof(float)) == 0;
    int moved = memcmp(m.params_memory + dec0, p0 + dec0, (n - dec0) * sizeof(float)) != 0;
    check(decoder_same && zero && kept && moved, "-fe 1: the decoder's gradients are the full backward's, "
          "bit for bit; the encoder's are 0 and an AdamW step (weight decay 0.1) leaves its %zu weights as "
          "they were", dec0 - enc0);
    memcpy(m.params_memory, p0, n * sizeof(float));  // one SGD step from p0, nothing frozen, no clipping
    m.freeze_encoder = 0;
    m.sgd = 1;
    opt.weight_decay = 0.0f;
    seq2seq_train_step(&m, &pb, 0, &opt);
    float worst = 0.0f;
    size_t small = 0;  // weights moved by less than lr/2: AdamW's first step moves each by about lr
    for (size_t i = 0; i < n; i++) {
        if (i >= (size_t)V * C && i < 16 * C) continue;  // wte's padding rows: never used
        worst = fmaxf(worst, fabsf(m.params_memory[i] - (p0[i] - opt.lr * g_all[i])));
        small += fabsf(m.params_memory[i] - p0[i]) < 0.5f * opt.lr;
    }
    check(worst <= 1e-7f && small > n / 2, "-opt sgd: one step is W - lr dL/dW (max error %.1e); %zu of %zu "
          "weights move by less than lr/2, as AdamW's first step moves none", worst, small, n);
    free(p0);
    free(g_all);
    seq2seq_free(&m);
    pair_batch_free(&pb);
}

// ----------------------------------------------------------------------------

#include "tests/errata_seq2seq.h"  // errata E26-E28 (doc/errata.md)

#if __has_include("tests/seq2seq_reference.h")
#include "tests/seq2seq_reference.h"
#define HAVE_SEQ2SEQ_REFERENCE 1
#endif

// ----------------------------------------------------------------------------
// main: the checks as a table of named groups (tests/check.h), run in this order; -k WORD
// runs the groups whose names contain WORD, -l lists them

static const char* ref_dir = "data/ref";  // -r DIR

static void test_references(void) {
#ifdef HAVE_SEQ2SEQ_REFERENCE
    check_seq2seq_references(ref_dir);
#else
    printf("-- no tests/seq2seq_reference.h: the nn.Transformer references are not checked\n");
#endif
}

static const CheckGroup CHECK_GROUPS[] = {
    {"finite differences: whole model, every variant", test_finite_differences},
    {"padding invariance", test_padding_invariance},
    {"kv cache: decoder", test_kv_cache},
    {"checkpoint bytes", test_checkpoint},
    {"teacher forcing measured", test_teacher_forcing_measured},
    {"edit distance", test_edit_distance},
    {"no special outputs", test_no_special_outputs},
    {"decoder mask off", test_decoder_mask_off},
    {"freeze and sgd", test_freeze_and_sgd},
    {"errata", test_errata_seq2seq},
    {"pytorch references: nn.Transformer", test_references},
};
#define NUM_CHECK_GROUPS ((int)(sizeof CHECK_GROUPS / sizeof CHECK_GROUPS[0]))

int main(int argc, char** argv) {
    const char* word = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "-r") == 0) ref_dir = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-k") == 0) word = argv[++i];
        else if (strcmp(argv[i], "-l") == 0) return list_check_groups(CHECK_GROUPS, NUM_CHECK_GROUPS);
        else {
            fprintf(stderr, "usage: ./test_seq2seq [-r REFERENCE_DIR] [-k WORD] | -l\n");
            return EXIT_USAGE;
        }
    }
    error_program = "test_seq2seq";
    int threads = use_threads(1);  // tiny models: waking threads costs more than the work
    int status = run_check_groups("test_seq2seq", CHECK_GROUPS, NUM_CHECK_GROUPS, word);
    use_threads(threads);
    return status;
}
