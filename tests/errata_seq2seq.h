/*
tests/errata_seq2seq.h: the checks of errata E26-E28 (doc/errata.md), mistakes of articles
002 and 003 about the encoder-decoder that no test could decide before train_seq2seq.c
had an encoder and cross-attention. Included by test_seq2seq.c before main, so check(),
small_model(), PAIRS, make_batch(), gradients() and everything in train_seq2seq.c are
visible. Each check computes the article's claim with the model's own forward and
backward, asserts that the program's value agrees with an independent recomputation (a
double-precision loop or a central difference), and that it differs from what the
article states.
*/

#define TOL_ERRATA_FD_REL 5e-4f   // central differences against the backward, as TOL_FD_REL
#define TOL_ERRATA_ABS 1e-5f      // a float forward against the same sum in double

// out (rows,n) = in (rows,k) w^T + b in double: the maths of matmul_forward, independently
static float max_diff_affine(const float* out, const float* in, const float* w, const float* b, int rows,
                             int k, int n) {
    float worst = 0.0f;
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < n; o++) {
            double y = b[o];
            for (int i = 0; i < k; i++)
                y += (double)in[(size_t)r * k + i] * w[(size_t)o * k + i];
            worst = fmaxf(worst, fabsf(out[(size_t)r * n + o] - (float)y));
        }
    return worst;
}

// the cross-attention sublayer of decoder layer l, and where its K,V rows start in qkv
static int cross_sublayer(const Seq2Seq* m, int l) { return 2 * m->config.enc_layers + 3 * l + 1; }
static size_t cross_kv_offset(const Seq2Seq* m) { return (size_t)m->batch_size * m->config.max_seq_len * C; }

// ---- E26, article 002 section 2: the encoder hands K and V to the decoder. It hands one
// memory (B,Ts,C); each decoder layer l projects its own [K_l V_l] = memory Wkv_l^T + bkv_l,
// so the memory's gradient is the sum over the layers, G = sum_l [dK_l dV_l] Wkv_l.
static void erratum_e26(void) {
    PairBatch pb;
    make_batch(&pb, &PAIRS, 5, 7);
    Seq2Seq m;
    small_model(&m, &VARIANTS[0], 2601);
    gradients(&m, &pb, -1);
    int rows = pb.B * pb.Ts;
    float err = 0.0f, apart = 0.0f;
    const float* kv[2];
    for (int l = 0; l < 2; l++) {
        Sublayer u = sublayer(&m.params, m.config, cross_sublayer(&m, l));
        kv[l] = sublayer_acts(&m, u, cross_sublayer(&m, l)).qkv + cross_kv_offset(&m);
        err = fmaxf(err, max_diff_affine(kv[l], m.acts.memory, u.wkv, u.bkv, rows, C, 2 * C));
    }
    for (int i = 0; i < rows * 2 * C; i++)
        apart = fmaxf(apart, fabsf(kv[0][i] - kv[1][i]));
    check(err <= TOL_ERRATA_ABS && apart > 0.1f, "E26 (002: the encoder does not hand over K and V): both "
          "decoder layers' K,V equal memory Wkv_l^T + bkv_l (max error %.1e), and differ by up to %.2f",
          err, apart);
    // the memory's gradient summed over rows, G (C), as a central difference on the loss:
    // all layers' memory shifted by eps e_i is enc_lnfb[i] += eps; layer l's alone is
    // bkv_l += eps Wkv_l e_i (K_l,V_l are linear in the memory). Analytic: G = enc_lnfb's
    // gradient, and layer l's part W_l^T dbkv_l.
    // eps 1e-2: measured, the worst error of the three differences relative to G's largest entry
    // is 3.8e-4 at eps 2e-3 (the float forward's rounding, ~1/eps), 1.7e-4 at 5e-3, 9.9e-5 at
    // 1e-2 (these directions are close to linear), and their sum's 6.4e-4, 2.1e-4, 1.3e-4
    const float eps = 1e-2f;
    float fd[3][C], ana[3][C], e_fd = 0.0f, e_sum = 0.0f, e_parts = 0.0f, g_max = 0.0f, miss[2] = {0, 0};
    for (int i = 0; i < C; i++)
        for (int k = 0; k < 3; k++) {  // k = 0: every layer (the memory); 1, 2: layer k - 1 only
            Sublayer u = sublayer(&m.params, m.config, cross_sublayer(&m, k ? k - 1 : 0));
            Sublayer du = sublayer(&m.grads, m.config, cross_sublayer(&m, k ? k - 1 : 0));
            double f[2];
            for (int side = 0; side < 2; side++) {
                float shift = side ? -eps : eps;
                if (k == 0) m.params.enc_lnfb[i] += shift;
                for (int o = 0; k && o < 2 * C; o++)
                    u.bkv[o] += shift * u.wkv[o * C + i];
                f[side] = model_loss(&m, &pb, -1);
                if (k == 0) m.params.enc_lnfb[i] -= shift;
                for (int o = 0; k && o < 2 * C; o++)
                    u.bkv[o] -= shift * u.wkv[o * C + i];
            }
            fd[k][i] = (float)((f[0] - f[1]) / (2.0 * eps));
            ana[k][i] = k ? 0.0f : m.grads.enc_lnfb[i];
            for (int o = 0; k && o < 2 * C; o++)
                ana[k][i] += du.bkv[o] * u.wkv[o * C + i];
        }
    for (int i = 0; i < C; i++) {
        g_max = fmaxf(g_max, fabsf(ana[0][i]));
        e_fd = fmaxf(e_fd, fmaxf(fabsf(fd[0][i] - ana[0][i]), fmaxf(fabsf(fd[1][i] - ana[1][i]),
                                                                     fabsf(fd[2][i] - ana[2][i]))));
        e_sum = fmaxf(e_sum, fabsf(fd[0][i] - fd[1][i] - fd[2][i]));
        e_parts = fmaxf(e_parts, fabsf(ana[0][i] - ana[1][i] - ana[2][i]));
        miss[0] = fmaxf(miss[0], fabsf(ana[0][i] - ana[1][i]));  // layer 1's part switched off
        miss[1] = fmaxf(miss[1], fabsf(ana[0][i] - ana[2][i]));  // layer 0's
    }
    check(e_fd <= TOL_ERRATA_FD_REL * g_max && e_sum <= TOL_ERRATA_FD_REL * g_max &&
          e_parts <= TOL_ERRATA_ABS * g_max, "E26: the memory's gradient (max %.2e) is the sum of the two "
          "layers' parts: central differences %.1e, their sum %.1e, the backward's %.1e (relative)",
          g_max, e_fd / g_max, e_sum / g_max, e_parts / g_max);
    check(miss[0] > 0.1f * g_max && miss[1] > 0.1f * g_max, "E26: one layer's part switched off changes "
          "the memory's gradient by %.0f%% (layer 1 off: what writing instead of adding leaves, the "
          "backward running top down) and %.0f%% (layer 0 off) of its largest entry",
          100.0f * miss[0] / g_max, 100.0f * miss[1] / g_max);
    seq2seq_free(&m);
    pair_batch_free(&pb);
}

// ---- E27, article 003 section 1: the decoder outputs the start symbol first. It is given
// BOS as its first input (util/pairs.h's layout) and never asked to output it: no target is
// BOS, so the loss's gradient on BOS's logit is +p(BOS)/n at every position (training only
// pushes it down), and a trained model's decoding never emits it.
static void erratum_e27(void) {
    // PAIRS as a pair file holds them (util/pairs.h: per pair its two lengths, source, target)
    uint16_t tokens[3 * 2 + 5 + 2 + 4 + 3 + 6 + 1];
    size_t offset[3], n = 0;
    int src_len[3], tgt_len[3], ids[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++) {
        src_len[i] = tokens[n++] = PAIRS.src_len[i];
        tgt_len[i] = tokens[n++] = PAIRS.tgt_len[i];
        offset[i] = n;
        for (int t = 0; t < PAIRS.src_len[i]; t++) tokens[n++] = PAIRS.src[i][t];
        for (int t = 0; t < PAIRS.tgt_len[i]; t++) tokens[n++] = PAIRS.tgt[i][t];
    }
    PairSet ps = {.num_pairs = 3, .vocab_size = V, .max_src = 5, .max_tgt = 6, .tokens = tokens,
                  .offset = offset, .src_len = src_len, .tgt_len = tgt_len};
    PairBatch pb;
    pair_batch_alloc(&pb, 3, MAXT, MAXT - 1);
    pair_batch_fill(&pb, &ps, ids, 3);
    int layout = 1, targets = 0;
    for (int b = 0; b < 3; b++) {
        const int *in = pb.dec_in + b * pb.Tt, *tgt = pb.dec_tgt + b * pb.Tt;
        layout = layout && in[0] == PAIR_BOS && tgt[0] == PAIRS.tgt[b][0];
        for (int t = 0; t < pb.Tt; t++) {
            layout = layout && tgt[t] != PAIR_BOS && (t == 0 || in[t] != PAIR_BOS);
            layout = layout && (t + 1 >= pb.tgt_len[b] || in[t + 1] == tgt[t]);  // the shift by one
            targets += tgt[t] >= 0;
        }
    }
    check(layout, "E27 (003: the decoder does not output the start symbol): each of 3 pairs' decoder "
          "input starts with BOS, its first target is the first character, and none of %d targets is BOS",
          targets);
    Seq2Seq m;
    small_model(&m, &VARIANTS[0], 2701);
    gradients(&m, &pb, -1);
    const float* dlogits = m.acts.logits;  // the backward leaves dlogits there
    float err = 0.0f, least = 1.0f, p_before = 0.0f, p_after = 0.0f;
    for (int i = 0; i < pb.B * pb.Tt; i++) {
        if (pb.dec_tgt[i] < 0) continue;
        float p = m.acts.probs[i * 16 + PAIR_BOS] / (float)targets;
        err = fmaxf(err, fabsf(dlogits[i * 16 + PAIR_BOS] - p));
        least = fminf(least, dlogits[i * 16 + PAIR_BOS]);
        p_before = fmaxf(p_before, m.acts.probs[i * 16 + PAIR_BOS]);
    }
    // 80 AdamW steps on the 3 pairs, then greedy decoding of their sources
    AdamWConfig opt = {.lr = 1e-2f, .warmup = 0, .max_steps = 0, .final_lr_frac = 1.0f, .beta1 = 0.9f,
                       .beta2 = 0.99f, .eps = 1e-8f, .weight_decay = 0.0f, .grad_clip = 1.0f};
    for (int step = 0; step < 80; step++)
        seq2seq_train_step(&m, &pb, step, &opt);
    seq2seq_forward(&m, &pb, -1);
    for (int i = 0; i < pb.B * pb.Tt; i++)
        if (pb.dec_tgt[i] >= 0) p_after = fmaxf(p_after, m.acts.probs[i * 16 + PAIR_BOS]);
    DecodeCache dc;
    decode_cache_init(&dc, m.config, 3);
    Sampler greedy;
    sampler_init(&greedy, V, 0.0f, 0, 0);
    int out[3 * MAXT], out_len[3], emitted = 0, right = 0;
    seq2seq_decode(&m, &dc, &greedy, pb.src, pb.src_len, 3, pb.Ts, out, out_len);
    for (int b = 0; b < 3; b++) {
        int same = out_len[b] == PAIRS.tgt_len[b];
        for (int t = 0; t < out_len[b]; t++) {
            emitted += out[b * MAXT + t] == PAIR_BOS;
            same = same && out[b * MAXT + t] == PAIRS.tgt[b][t];
        }
        right += same;
    }
    check(err <= 1e-7f && least > 0.0f && p_after < 0.1f * p_before && emitted == 0, "E27: the gradient "
          "on BOS's logit is +p(BOS)/n > 0 at every target position (error %.0e); 80 AdamW steps take "
          "the largest p(BOS) from %.3f to %.5f, and greedy decoding emits no BOS (%d of 3 pairs right)",
          err, p_before, p_after, right);
    sampler_free(&greedy);
    decode_cache_free(&dc);
    seq2seq_free(&m);
    pair_batch_free(&pb);
}

// ---- E28, article 003's code section: cross-attention's query from the decoder's input.
// It is xq of the decoder's state after its masked self-attention sublayer: in the post-LN
// code of the article, Normalized1 = LN(X + SelfAttention(X)), X the layer's input.
static void erratum_e28(void) {
    PairBatch pb;
    make_batch(&pb, &PAIRS, 5, 7);
    Seq2Seq m;
    small_model(&m, &VARIANTS[1], 2801);  // post-LN, ReLU, sinusoids: the article's block
    seq2seq_forward(&m, &pb, -1);
    int rows = pb.B * pb.Tt;
    float err = 0.0f, apart = 1e30f;
    float* normalized1 = mallocCheck((size_t)rows * C * sizeof(float));
    for (int l = 0; l < 2; l++) {
        int s = cross_sublayer(&m, l);
        Sublayer self = sublayer(&m.params, m.config, s - 1), cross = sublayer(&m.params, m.config, s);
        const float* x = sublayer_input(&m, s - 1);                        // X (B,Tt,C)
        const float* att = sublayer_acts(&m, self, s - 1).branch;          // SelfAttention(X)
        for (int r = 0; r < rows; r++) {  // LN(X + SelfAttention(X)) in double
            double sum = 0.0, sq = 0.0, y[C];
            for (int i = 0; i < C; i++) sum += y[i] = (double)x[r * C + i] + att[r * C + i];
            for (int i = 0; i < C; i++) sq += (y[i] - sum / C) * (y[i] - sum / C);
            for (int i = 0; i < C; i++)
                normalized1[r * C + i] = (float)((y[i] - sum / C) / sqrt(sq / C + 1e-5) * self.lnw[i] +
                                                 self.lnb[i]);
        }
        const float* q = sublayer_acts(&m, cross, s).qkv;  // Q (B,Tt,C) of the cross-attention
        err = fmaxf(err, max_diff_affine(q, normalized1, cross.w1, cross.b1, rows, C, C));
        apart = fminf(apart, max_diff_affine(q, x, cross.w1, cross.b1, rows, C, C));
    }
    check(err <= TOL_ERRATA_ABS && apart > 0.1f, "E28 (003: cross-attention's query): in both decoder "
          "layers Q = xq(LN(X + SelfAttention(X))) (max error %.1e), not xq(X) (off by %.2f or more)",
          err, apart);
    free(normalized1);
    seq2seq_free(&m);
    pair_batch_free(&pb);
}

static void test_errata_seq2seq(void) {
    printf("-- errata E26-E28 of articles 002, 003: the encoder-decoder (doc/errata.md)\n");
    erratum_e26();
    erratum_e27();
    erratum_e28();
}
