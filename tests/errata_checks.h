/*
tests/errata_checks.h: the checks of errata E16-E25 (doc/errata.md), found in a second,
line-by-line reading of articles 002, 003 and 004, and of E29-E31 and the 001 part of E19,
found in a third reading of all five (test_errata_reread). Included by test_gpt2.c before main,
so check(), random_floats(), zeros() and everything in train_gpt2.c and train_gpt2_main.c
are visible.

Each check computes the article's claim with the program's own layers, asserts that the
program's value agrees with an independent recomputation (a double-precision loop, a
central difference, PyTorch's module definitions, or the training forward), and that it
differs from what the article states or prints. The last check is of a claim that is
right (article 003 on order without positions), with the caveat of the causal mask.
*/

// the checks' maxima and minima in double, by comparison (as fmax/fmin: no accumulator holds a
// NaN): gcc 12 for aarch64 stops with an internal error on fmax/fmin loops of floats into a double
static double max_d(double a, double b) { return b > a ? b : a; }
static double min_d(double a, double b) { return b < a ? b : a; }

// the tiny GPT-2 of several checks, randomly initialised: 5 tokens, 4 positions, C = 8, 2 heads
static void errata_tiny_model(GPT2* m, int num_layers, uint64_t seed) {
    GPT2Config cfg = {.max_seq_len = 4, .vocab_size = 5, .padded_vocab_size = 8, .num_layers = num_layers,
                      .num_heads = 2, .channels = 8, .num_kv_heads = 2};
    gpt2_init_random(m, cfg, seed);
}

// article 002's example: tokens I, love, coding (X), and the same with x_3 changed (X2); rows
// [q | k | v] = x W with our matmul, which computes x W^T, so W is stored transposed (as test_errata)
typedef struct { float X[6], X2[6], W[3][4], qkvw[12], qkv[18], qkv2[18]; } Article002Example;
static Article002Example article002_example(void) {
    Article002Example ex = {
        .X = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, .X2 = {0.1f, 0.2f, 0.3f, 0.4f, 0.9f, 1.0f},
        .W = {{0.1f, 0.2f, 0.3f, 0.4f}, {0.5f, 0.6f, 0.7f, 0.8f}, {0.9f, 1.0f, 1.1f, 1.2f}}};
    for (int m = 0; m < 3; m++)
        for (int o = 0; o < 2; o++)
            for (int i = 0; i < 2; i++)
                ex.qkvw[(m * 2 + o) * 2 + i] = ex.W[m][i * 2 + o];
    matmul_forward(ex.qkv, ex.X, ex.qkvw, NULL, 3, 2, 6);
    matmul_forward(ex.qkv2, ex.X2, ex.qkvw, NULL, 3, 2, 6);
    return ex;
}

// E16, article 002 section 4: E_i = Encoder(x_i) and the encoder's chain rule with
// dy_i/dE_i only. An encoder's self-attention has no mask, so E_1 reads x_3; and every
// prediction's cross-attention reads every E_j, so the gradient of y_1 reaches E_2 and E_3.
static void erratum_e16(void) {
    Article002Example ex = article002_example();
    const float* X = ex.X;
    const float* X2 = ex.X2;
    const float (*W)[4] = ex.W;
    float* qkv = ex.qkv;
    float* qkv2 = ex.qkv2;
    AttentionShape enc = self_attention(1, 3, 2, 1, 1, 0);  // no mask: the encoder (our -causal 0)
    float o[6], sc[9], pr[9], o2[6], sc2[9], pr2[9];
    attention_forward(o, sc, pr, NULL, qkv, qkv + 2, enc, NULL);
    attention_forward(o2, sc2, pr2, NULL, qkv2, qkv2 + 2, enc, NULL);
    float e_fwd = 0.0f;
    for (int k = 0; k < 2; k++) {  // E_1 of each input, recomputed in double from x and W
        const float* x = k ? X2 : X;
        double v[3][3][2], s[3], p[3], mx = -1e30, sum = 0.0;  // [token][q,k,v][channel]
        for (int j = 0; j < 3; j++)
            for (int n = 0; n < 3; n++)
                for (int c = 0; c < 2; c++)
                    v[j][n][c] = (double)x[j * 2] * W[n][c] + (double)x[j * 2 + 1] * W[n][2 + c];
        for (int j = 0; j < 3; j++) {
            s[j] = (v[0][0][0] * v[j][1][0] + v[0][0][1] * v[j][1][1]) / sqrt(2.0);
            mx = max_d(mx, s[j]);
        }
        for (int j = 0; j < 3; j++)
            sum += p[j] = exp(s[j] - mx);
        for (int c = 0; c < 2; c++) {
            double y = (p[0] * v[0][2][c] + p[1] * v[1][2][c] + p[2] * v[2][2][c]) / sum;
            e_fwd = fmaxf(e_fwd, fabsf((k ? o2 : o)[c] - (float)y));
        }
    }
    float moved = fmaxf(fabsf(o2[0] - o[0]), fabsf(o2[1] - o[1]));
    // the same on a whole encoder-style model (post-LN, ReLU, sinusoids, no mask: the
    // article 003 encoder layer): changing token 2 changes position 0's output; with the
    // causal mask (a decoder's self-attention) position 0 stays bit-identical
    GPT2 m;
    GPT2Config cfg = {.max_seq_len = 4, .vocab_size = 5, .padded_vocab_size = 8, .num_layers = 2,
                      .num_heads = 2, .channels = 8, .num_kv_heads = 2, .pos_encoding = POS_SIN,
                      .ln_place = LN_POST, .activation = ACT_RELU, .mask = MASK_NONE};
    gpt2_init_random(&m, cfg, 11);
    int in1[3] = {0, 1, 2}, in2[3] = {0, 1, 4};
    float e[2][2][8], model_moved = 0.0f;  // [mask none, causal][input]
    for (int k = 0; k < 2; k++) {
        m.config.mask = k ? MASK_CAUSAL : MASK_NONE;
        gpt2_forward(&m, in1, NULL, 1, 3, -1);
        memcpy(e[k][0], block_output(&m, 1, 1, 3), sizeof e[k][0]);
        gpt2_forward(&m, in2, NULL, 1, 3, -1);
        memcpy(e[k][1], block_output(&m, 1, 1, 3), sizeof e[k][1]);
    }
    for (int i = 0; i < 8; i++)
        model_moved = fmaxf(model_moved, fabsf(e[0][1][i] - e[0][0][i]));
    int causal_same = memcmp(e[1][0], e[1][1], sizeof e[1][0]) == 0;
    gpt2_free(&m);
    // backward: cross-attention, queries from the decoder (Q), keys and values from the
    // encoder's E_1..E_3 (K, V); a gradient g on the first prediction's output only
    float dqkv[18], G[6] = {1.0f, -0.5f, 0.0f, 0.0f, 0.0f, 0.0f};
    attention_backward(dqkv, dqkv + 2, G, qkv, qkv + 2, pr, NULL, enc, NULL);
    float e_bwd = 0.0f, reach = 0.0f;
    double gv = 0.0, gvj[3];  // g . v_j and its mean under row 0's weights
    for (int j = 0; j < 3; j++) {
        gvj[j] = (double)G[0] * qkv[j * 6 + 4] + (double)G[1] * qkv[j * 6 + 5];
        gv += pr[j] * gvj[j];
    }
    for (int j = 0; j < 3; j++)
        for (int c = 0; c < 2; c++) {
            double dv = pr[j] * (double)G[c];                                      // P^T g
            double dk = pr[j] * (gvj[j] - gv) / sqrt(2.0) * qkv[c];               // dS^T q
            e_bwd = fmaxf(e_bwd, fmaxf(fabsf(dqkv[j * 6 + 4 + c] - (float)dv),
                                       fabsf(dqkv[j * 6 + 2 + c] - (float)dk)));
            if (j > 0) reach = fmaxf(reach, fabsf(dqkv[j * 6 + 4 + c]));
        }
    check(e_fwd < 1e-6f && moved > 0.01f && model_moved > 1e-5f && causal_same && e_bwd < 1e-6f &&
              reach > 0.1f,
          "E16 article 002 E_i = Encoder(x_i): changing x_3 moves E_1 from (%.4f, %.4f) to (%.4f, %.4f) "
          "(double: error %.1e); position 0 of a 2-layer unmasked model moves by %.1e (causal: "
          "unchanged); the gradient of y_1 reaches E_2, E_3 (|dV| up to %.3f, error %.1e), the terms "
          "the article's sum leaves out",
          o[0], o[1], o2[0], o2[1], e_fwd, model_moved, reach, e_bwd);
}

// E17, article 002 section 4 (3) step 2: the output layer's gradient written for one
// position i. W_output is shared by all positions, so its gradient is the sum over i.
static void erratum_e17(void) {
    Article002Example ex = article002_example();
    const float* X = ex.X;
    const float Wout[6] = {0.2f, -0.1f, 0.4f, 0.3f, -0.5f, 0.6f};  // V = 3 words, C = 2
    const int tg[3] = {1, 2, 0};
    const float ones[3] = {1.0f, 1.0f, 1.0f};  // the article's L = sum of L_i
    float logits[9], probs[9], dlogits[9], dx[6], dW[6] = {0};
    matmul_forward(logits, X, Wout, NULL, 3, 2, 3);
    softmax_forward(probs, logits, 3, 3, 3);
    crossentropy_softmax_backward(dlogits, ones, probs, tg, 3, 3, 3);
    matmul_backward(dx, dW, NULL, dlogits, X, Wout, 3, 2, 3, GRAD_ADD);
    float e_sum = 0.0f, off = 1e30f;
    for (int i = 0; i < 3; i++) {  // the article's one-position term, for each i
        float d = 0.0f;
        for (int v = 0; v < 3; v++)
            for (int c = 0; c < 2; c++)
                d = fmaxf(d, fabsf(dW[v * 2 + c] - (probs[i * 3 + v] - (v == tg[i])) * X[i * 2 + c]));
        off = fminf(off, d);
    }
    for (int v = 0; v < 3; v++)
        for (int c = 0; c < 2; c++) {
            double s = 0.0;  // independent: sum over positions of (p_i - onehot_i) x_i^T
            for (int i = 0; i < 3; i++)
                s += ((double)probs[i * 3 + v] - (v == tg[i])) * X[i * 2 + c];
            e_sum = fmaxf(e_sum, fabsf(dW[v * 2 + c] - (float)s));
        }
    check(e_sum < 1e-6f && off > 0.05f,
          "E17 article 002 dL/dW_output: matmul_backward gives the sum over the 3 positions of "
          "(p_i - onehot_i) x_i^T (error %.1e); any single position's term is off by %.3f or more",
          e_sum, off);
}

// E18, article 002 section 4 (4): the one update rule given, W <- W - eta dL/dW, is
// SGD's, not Adam's (named first). One AdamW step from zero moments moves each weight by
// about eta whatever the size of its gradient (plus the decoupled decay on matrices).
static void erratum_e18(void) {
    GPT2 m;
    errata_tiny_model(&m, 1, 5);
    int in[4] = {0, 1, 2, 3}, tg[4] = {1, 2, 3, 4};
    gpt2_forward(&m, in, tg, 1, 4, -1);
    gpt2_zero_grad(&m);
    gpt2_backward(&m);
    size_t n = m.num_parameters;
    float *p0 = copy_floats(m.params_memory, n), *g = copy_floats(m.grads_memory, n);
    AdamWConfig opt = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};
    float lr = 1e-3f;
    gpt2_update(&m, &opt, lr, 1.0f, 1);
    double e_adam = 0.0, e_sgd = 0.0, gmin = 1e30, gmax = 0.0, smin = 1e30, smax = 0.0;
    size_t off = 0;
    for (int k = 0; k < NUM_PARAMETER_TENSORS; k++) {
        double wd = PARAMETER_DECAYS[k] ? 0.1 : 0.0;
        for (size_t i = off; i < off + m.param_sizes[k]; i++) {
            double step = m.params_memory[i] - (double)p0[i];
            // t = 1: m_hat = g, v_hat = g^2, so Adam's step is g / (|g| + eps)
            double adam = -lr * (g[i] / (fabs(g[i]) + 1e-8) + wd * p0[i]);
            e_adam = max_d(e_adam, fabs(step - adam));
            e_sgd = max_d(e_sgd, fabs(step - (-lr * (double)g[i])));
            if (!wd && fabs(g[i]) > 1e-5) {  // biases and layernorms: no decay term
                gmin = min_d(gmin, fabs(g[i])); gmax = max_d(gmax, fabs(g[i]));
                smin = min_d(smin, fabs(step) / lr); smax = max_d(smax, fabs(step) / lr);
            }
        }
        off += m.param_sizes[k];
    }
    check(e_adam < 1e-3 * lr && e_sgd > 0.5 * lr && gmax / gmin > 100.0 && smin > 0.99 && smax < 1.01,
          "E18 article 002 update: gpt2_update's first step equals Adam's -eta (g/(|g|+eps) + wd p) "
          "(error %.1e eta), not -eta g (off by %.2f eta): gradients %.1e..%.1e all move by "
          "%.4f..%.4f eta",
          e_adam / lr, e_sgd / lr, gmin, gmax, smin, smax);
    free(p0); free(g);
    gpt2_free(&m);
}

// E19, article 002 section 1 step 6 and summary: the weighted sum of V called the
// updated embedding. In a transformer it is the change: projected (W_o) and added to the
// token's own vector by the residual connection, as the article's own 3Blue1Brown remark says.
static void erratum_e19(void) {
    Article002Example ex = article002_example();
    const float* X = ex.X;
    float* qkv = ex.qkv;
    GPT2 m;
    errata_tiny_model(&m, 1, 9);
    int in[4] = {0, 1, 2, 3};
    gpt2_forward(&m, in, NULL, 1, 4, -1);
    ActivationTensors a = m.acts;
    float e_proj = 0.0f, e_res = 0.0f, vs_atty = 0.0f;
    for (int t = 0; t < 4; t++)
        for (int o = 0; o < 8; o++) {
            double s = m.params.attprojb[o];  // independent: attproj = atty W_o^T + b_o
            for (int i = 0; i < 8; i++)
                s += (double)a.atty[t * 8 + i] * m.params.attprojw[o * 8 + i];
            e_proj = fmaxf(e_proj, fabsf(a.attproj[t * 8 + o] - (float)s));
            e_res = fmaxf(e_res, fabsf(a.residual2[t * 8 + o] - (a.encoded[t * 8 + o] + (float)s)));
            vs_atty = fmaxf(vs_atty, fabsf(a.residual2[t * 8 + o] - a.atty[t * 8 + o]));
        }
    gpt2_free(&m);
    // the article's example: its three "updated embeddings" are nearly one vector
    float o[6], sc[9], pr[9];
    attention_forward(o, sc, pr, NULL, qkv, qkv + 2, self_attention(1, 3, 2, 1, 1, 0), NULL);
    float spread_out = fmaxf(fabsf(o[4] - o[0]), fabsf(o[5] - o[1]));
    float spread_res = fmaxf(fabsf(X[4] + o[4] - X[0] - o[0]), fabsf(X[5] + o[5] - X[1] - o[1]));
    check(e_proj < 1e-6f && e_res < 1e-6f && vs_atty > 0.05f && spread_out < 0.025f && spread_res > 0.4f,
          "E19 article 002 updated embedding: the stream after attention is x + W_o(att V) + b_o "
          "(error %.1e, %.1e), not att V (off by %.2f); in the example att V of I and coding differ by "
          "%.4f only, x + att V by %.4f",
          e_proj, e_res, vs_atty, spread_out, spread_res);
}

// E20, article 003 code section: GPT as nn.TransformerDecoderLayer/TransformerDecoder.
// A GPT layer has one (masked) self-attention and no cross-attention (there is no encoder
// memory): the parameters of nn.TransformerEncoderLayer(d, dim_feedforward = 4d), plus a mask.
static void erratum_e20(void) {
    GPT2Config d12 = {.max_seq_len = 1024, .vocab_size = 50257, .padded_vocab_size = 50304,
                      .num_layers = 12, .num_heads = 12, .channels = 768, .num_kv_heads = 12};
    size_t sizes[NUM_PARAMETER_TENSORS], per_layer = 0, d = 768;
    fill_in_parameter_sizes(sizes, d12);
    for (int k = 2; k <= 13; k++)  // ln1w .. fcprojb: the layer tensors
        per_layer += sizes[k];
    per_layer /= 12;
    // PyTorch's modules: self_attn in_proj (3d,d)+(3d), out_proj (d,d)+(d), linear1 (4d,d)+(4d),
    // linear2 (d,4d)+(d), norm1, norm2 (d)+(d) each; the decoder layer adds multihead_attn
    // (cross-attention, the same 4d^2 + 4d) and norm3
    size_t enc_layer = 3 * d * d + 3 * d + d * d + d + 4 * d * d + 4 * d + 4 * d * d + d + 4 * d;
    size_t dec_layer = enc_layer + 4 * d * d + 4 * d + 2 * d;
    check(per_layer == enc_layer && per_layer == 12 * d * d + 13 * d && dec_layer != per_layer,
          "E20 article 003 GPT layer: GPT-2 small has %zu parameters per layer = "
          "nn.TransformerEncoderLayer's %zu (12d^2 + 13d), not nn.TransformerDecoderLayer's %zu "
          "(its cross-attention and norm3)", per_layer, enc_layer, dec_layer);
}

// E21, article 003 section 1: tokens split by word roots (doing -> do + ing). A byte-pair
// encoding merges frequent byte pairs, whatever the morphemes: GPT-2's (util/bpe.h, which
// test_bpe checks id for id against tiktoken) keeps "doing" whole and cuts inside roots.
static void erratum_e21(void) {
    Tokenizer tk;
    tokenizer_init(&tk, "data/gpt2_tokenizer.bin");
    const char* words[3] = {"doing", " unhappiness", " redoing"};
    int ids[3][16], n[3], round_trip = 1;
    char pieces[3][64];
    for (int w = 0; w < 3; w++) {
        n[w] = tokenizer_encode(&tk, words[w], ids[w], 16);
        char joined[64] = "", *pc = pieces[w];
        size_t len = 0;
        *pc = '\0';
        for (int i = 0; i < n[w]; i++) {  // decode: the tokens' bytes must give the word back
            int id = ids[w][i], k = tk.token_length[id];
            memcpy(joined + len, tk.token_table[id], (size_t)k);
            len += (size_t)k;
            pc += snprintf(pc, (size_t)(pieces[w] + 64 - pc), "%s[%s]", i ? " " : "",
                           tk.token_table[id]);
        }
        joined[len] = '\0';
        round_trip &= strcmp(joined, words[w]) == 0;
    }
    int first_len = tk.token_length[ids[1][0]];  // where " unhappiness" is first cut
    check(round_trip && n[0] == 1 && n[1] == 2 && first_len != 3 && n[2] == 2 &&
              tk.token_length[ids[2][0]] != 3,
          "E21 article 003 tokens: GPT-2's BPE gives doing -> %s, not do + ing; unhappiness -> %s, "
          "redoing -> %s: cut by frequency, not at un- or re- (the tokens decode to the words)",
          pieces[0], pieces[1], pieces[2]);
    tokenizer_free(&tk);
}

// E22, article 004 step 4: the entries of Q K^T called attention weights. They are raw
// scores, of any sign and not normalised; the weights are softmax(Q K^T / sqrt(d_k)).
static void erratum_e22(void) {
    enum { T = 6, C = 768 };  // the article's sentence: 6 characters of 768 features, one head
    uint64_t rng = 4004;
    float* x = random_floats(&rng, (size_t)T * 3 * C, 0.0f, 1.0f);
    float *o = zeros((size_t)T * C), sc[T * T], pr[T * T];
    attention_forward(o, sc, pr, NULL, x, x + C, self_attention(1, T, C, 1, 1, 0), NULL);
    double smin = 1e30, rowsum_off = 0.0, e_sc = 0.0, e_pr = 0.0, prow_off = 0.0;
    for (int i = 0; i < T; i++) {
        double s[T], p[T], rs = 0.0, ps = 0.0, mx = -1e30, sum = 0.0;
        for (int j = 0; j < T; j++) {
            s[j] = 0.0;  // the raw score q_i . k_j, in double
            for (int c = 0; c < C; c++)
                s[j] += (double)x[i * 3 * C + c] * x[j * 3 * C + C + c];
            smin = min_d(smin, s[j]);
            rs += s[j];
            s[j] /= sqrt((double)C);
            e_sc = max_d(e_sc, fabs(sc[i * T + j] - s[j]));
            mx = max_d(mx, s[j]);
        }
        for (int j = 0; j < T; j++)
            sum += p[j] = exp(s[j] - mx);
        for (int j = 0; j < T; j++) {
            e_pr = max_d(e_pr, fabs(pr[i * T + j] - p[j] / sum));
            ps += pr[i * T + j];
        }
        rowsum_off = max_d(rowsum_off, fabs(rs - 1.0));
        prow_off = max_d(prow_off, fabs(ps - 1.0));
    }
    check(e_sc < 1e-4 && e_pr < 1e-6 && prow_off < 1e-6 && smin < 0.0 && rowsum_off > 1.0,
          "E22 article 004 scores vs weights: Q K^T has entries down to %.1f and rows summing %.0f "
          "away from 1; the weights softmax(Q K^T/sqrt(768)) match double (error %.1e) and sum to 1 "
          "(%.1e); (0,0) is the score %.2f, its weight %.4f",
          smin, rowsum_off, e_pr, prow_off, sc[0] * sqrtf((float)C), pr[0]);
    free(x); free(o);
}

// E23, article 004 forward's comments: scores [b, heads, seq, seq]. With the cache the
// keys are the start_pos + seqlen cached positions: the second call's scores are 1 x 51,
// one query against every cached key, not seq x seq = 1 x 1.
static void erratum_e23(void) {
    GPT2 m;
    GPT2Config cfg = {.max_seq_len = 64, .vocab_size = 5, .padded_vocab_size = 8, .num_layers = 1,
                      .num_heads = 2, .channels = 8, .num_kv_heads = 2};
    gpt2_init_random(&m, cfg, 3);
    int toks[51];
    for (int t = 0; t < 51; t++)
        toks[t] = (t * 3 + 1) % 5;
    KVCache kv;
    kvcache_init(&kv, cfg);
    for (int t = 0; t < 51; t++)  // start_pos 0..49 as the first call, then position 50
        gpt2_forward_token(&m, &kv, toks[t]);
    gpt2_forward(&m, toks, NULL, 1, 51, -1);  // the training forward: every row, with the mask
    int keys_seen = 0, train_seen = 0;
    float e_row = 0.0f;
    const float* cached = kv.model.acts.att_probs;  // head 0's row of the cached forward: Tk = 51
    for (int j = 0; j <= 50; j++)
        keys_seen += cached[j] > 0.0f;
    for (int j = 0; j < 51; j++) {
        float p = m.acts.att_probs[50 * 51 + j];  // head 0, query 50
        train_seen += p > 0.0f;
        e_row = fmaxf(e_row, fabsf(cached[j] - p));
    }
    check(keys_seen == 51 && train_seen == 51 && e_row < 1e-5f,
          "E23 article 004 cached scores: the token at start_pos 50 has scores against %d keys "
          "(a 1 x 51 matrix, not seq x seq = 1 x 1), the last row of the training forward's %d "
          "(error %.1e)", keys_seen, train_seen, e_row);
    kvcache_free(&kv);
    gpt2_free(&m);
}

// E24, article 004 section 1: W_Q, W_K, W_V called hyperparameters. They are
// parameters: the loss has a gradient with respect to them and training changes them;
// hyperparameters (width, heads, learning rate) are chosen, not learned.
static void erratum_e24(void) {
    GPT2 m;
    errata_tiny_model(&m, 1, 21);
    for (int i = 0; i < 3 * 8 * 8; i++)  // larger W_Q, W_K, W_V: gradients well above float noise
        m.params.qkvw[i] *= 25.0f;
    int in[4] = {0, 1, 2, 3}, tg[4] = {1, 2, 3, 4};
    gpt2_forward(&m, in, tg, 1, 4, -1);
    gpt2_zero_grad(&m);
    gpt2_backward(&m);
    int big = 0;  // the W_Q entry (rows 0..7) with the largest gradient
    for (int i = 1; i < 8 * 8; i++)
        if (fabsf(m.grads.qkvw[i]) > fabsf(m.grads.qkvw[big])) big = i;
    float w = m.params.qkvw[big], h = 1e-2f, gb = m.grads.qkvw[big];
    m.params.qkvw[big] = w + h;
    double lp = gpt2_forward(&m, in, tg, 1, 4, -1);
    m.params.qkvw[big] = w - h;
    double lm = gpt2_forward(&m, in, tg, 1, 4, -1);
    m.params.qkvw[big] = w;
    double fd = (lp - lm) / (2.0 * h);
    float* before = copy_floats(m.params.qkvw, 3 * 8 * 8);
    AdamWConfig opt = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f};
    gpt2_update(&m, &opt, 1e-3f, 1.0f, 1);
    int changed = 0;
    for (int i = 0; i < 3 * 8 * 8; i++)
        changed += m.params.qkvw[i] != before[i];
    check(fabs(fd - gb) < 0.02 * fabs(gb) && fabsf(gb) > 1e-3f && changed == 3 * 8 * 8 &&
              m.config.channels == 8 && m.config.num_heads == 2,
          "E24 article 004 hyperparameters: dloss/dW_Q = %.5f (central difference %.5f) and one step "
          "changes %d of the %d entries of W_Q, W_K, W_V: trained parameters; C and NH stay as set",
          gb, fd, changed, 3 * 8 * 8);
    free(before);
    gpt2_free(&m);
}

// E25, article 004 step 4's note: any matrix is a product of elementary row matrices.
// Only invertible ones are (each factor has det != 0). Attention weights can be singular:
// without position codes, a repeated token gives two equal keys, so two equal columns.
static void erratum_e25(void) {
    enum { T = 4, C = 2 };
    float x[T * 3 * C] = {0.3f,  -0.7f, 0.5f,  1.0f,  1.0f,  0.2f,  /* token a */
                          1.1f,  0.4f,  -0.8f, 0.3f,  -0.4f, 0.9f,  /* token b */
                          0.3f,  -0.7f, 0.5f,  1.0f,  1.0f,  0.2f,  /* a again: the same q, k, v */
                          0.7f,  0.1f,  0.2f,  -1.2f, 0.3f,  0.5f}; /* token c */
    float o[T * C], sc[T * T], pr[T * T], oc[T * C], scc[T * T], prc[T * T];
    attention_forward(o, sc, pr, NULL, x, x + C, self_attention(1, T, C, 1, 1, 0), NULL);
    attention_forward(oc, scc, prc, NULL, x, x + C, self_attention(1, T, C, 1, 1, 1), NULL);
    double e_p = 0.0;
    for (int i = 0; i < T; i++) {
        double s[T], mx = -1e30, sum = 0.0;
        for (int j = 0; j < T; j++) {
            s[j] = ((double)x[i * 6] * x[j * 6 + 2] + (double)x[i * 6 + 1] * x[j * 6 + 3]) / sqrt(2.0);
            mx = max_d(mx, s[j]);
        }
        for (int j = 0; j < T; j++)
            sum += s[j] = exp(s[j] - mx);
        for (int j = 0; j < T; j++)
            e_p = max_d(e_p, fabs(pr[i * T + j] - s[j] / sum));
    }
    double dets[2];  // det of the unmasked and the causal weights, by elimination in double
    for (int k = 0; k < 2; k++) {
        double a[T][T], det = 1.0;
        for (int i = 0; i < T * T; i++)
            a[i / T][i % T] = (k ? prc : pr)[i];
        for (int c = 0; c < T && det != 0.0; c++) {
            int piv = c;  // partial pivoting
            for (int r = c + 1; r < T; r++)
                if (fabs(a[r][c]) > fabs(a[piv][c])) piv = r;
            if (piv != c) {
                det = -det;
                for (int j = 0; j < T; j++) {
                    double t = a[c][j]; a[c][j] = a[piv][j]; a[piv][j] = t;
                }
            }
            det *= a[c][c];
            for (int r = c + 1; r < T && a[c][c] != 0.0; r++)
                for (int j = T - 1; j >= c; j--)
                    a[r][j] -= a[r][c] / a[c][c] * a[c][j];
        }
        dets[k] = det;
    }
    double det = dets[0], det_c = dets[1], diag = 1.0;
    for (int i = 0; i < T; i++)
        diag *= prc[i * T + i];
    check(e_p < 1e-6 && fabs(det) < 1e-9 && fabs(det_c - diag) < 1e-6 * diag && diag > 1e-3,
          "E25 article 004 elementary matrices: the unmasked weights with a repeated key (error %.1e) "
          "have det %.1e, so they are no product of elementary matrices; with the mask det = product "
          "of the diagonal = %.4f",
          e_p, fabs(det), det_c);
}

// checked, article 003 section 2.2: without position codes attention cannot see the
// order. Right for the encoder (no mask): permuting the tokens permutes the outputs. The
// causal mask breaks that symmetry (a decoder sees which tokens come before it).
static void erratum_checked_003_positions(void) {
    Article002Example ex = article002_example();
    float* qkv = ex.qkv;
    float qp[18], o[6], op[6], oc[6], ocp[6], sc[9], pr[9];
    const int perm[3] = {2, 0, 1};  // new row t holds old row perm[t]
    for (int t = 0; t < 3; t++)
        memcpy(qp + t * 6, qkv + perm[t] * 6, 6 * sizeof(float));
    attention_forward(o, sc, pr, NULL, qkv, qkv + 2, self_attention(1, 3, 2, 1, 1, 0), NULL);
    attention_forward(op, sc, pr, NULL, qp, qp + 2, self_attention(1, 3, 2, 1, 1, 0), NULL);
    attention_forward(oc, sc, pr, NULL, qkv, qkv + 2, self_attention(1, 3, 2, 1, 1, 1), NULL);
    attention_forward(ocp, sc, pr, NULL, qp, qp + 2, self_attention(1, 3, 2, 1, 1, 1), NULL);
    float e_perm = 0.0f, causal_diff = 0.0f;
    for (int t = 0; t < 3; t++)
        for (int c = 0; c < 2; c++) {
            e_perm = fmaxf(e_perm, fabsf(op[t * 2 + c] - o[perm[t] * 2 + c]));
            causal_diff = fmaxf(causal_diff, fabsf(ocp[t * 2 + c] - oc[perm[t] * 2 + c]));
        }
    check(e_perm < 1e-6f && causal_diff > 0.1f,
          "article 003 checked: without positions, unmasked attention is blind to order (permuted "
          "tokens give permuted outputs, error %.1e); with the causal mask they differ by %.3f",
          e_perm, causal_diff);
}

static const struct { const char* id; void (*check)(void); } ERRATA_ARTICLES[] = {
    {"E16", erratum_e16}, {"E17", erratum_e17}, {"E18", erratum_e18}, {"E19", erratum_e19},
    {"E20", erratum_e20}, {"E21", erratum_e21}, {"E22", erratum_e22}, {"E23", erratum_e23},
    {"E24", erratum_e24}, {"E25", erratum_e25}, {"checked, 003 2.2", erratum_checked_003_positions},
};

static void test_errata_articles(void) {
    printf("-- errata E16-E25 of articles 002, 003, 004 (doc/errata.md)\n");
    for (size_t i = 0; i < sizeof ERRATA_ARTICLES / sizeof ERRATA_ARTICLES[0]; i++)
        ERRATA_ARTICLES[i].check();
}

/*
The third, line-by-line reading of all five articles (2026-11-24): E29-E31, and article 001's
form of E19. The checks of E32 and E33 (article 003's code run as written) need PyTorch and
are in tests/article_code.py, a CI stage.
*/
// E29, article 001 section 6: "Martin's one of my sons, and the other is Chanler." said to
// be 21 tokens (a 21 x 21 matrix). GPT-2's BPE (util/bpe.h, = tiktoken) gives 16; the same
// encoder gives the article's own 12 for its first prompt, so the count is the article's slip.
static void erratum_e29(void) {
    Tokenizer tk;
    tokenizer_init(&tk, "data/gpt2_tokenizer.bin");
    const char* texts[3] = {"It\u2019s very hot in summer. Swimming is",  // article's 12 x 768
                            "Martin\u2019s one of my sons, and the other is Chanler.",
                            "Martin's one of my sons, and the other is Chanler."};  // ASCII apostrophe
    int ids[64], n[3];
    for (int i = 0; i < 3; i++)
        n[i] = tokenizer_encode(&tk, texts[i], ids, 64);
    check(n[0] == 12 && n[1] == 16 && n[2] == 14,
          "E29 article 001 token count: the 21 x 21 sentence is %d GPT-2 tokens (%d with an ASCII "
          "apostrophe), not 21; the same encoder gives the article's %d for its 12 x 768 prompt",
          n[1], n[2], n[0]);
    tokenizer_free(&tk);
}

// E30, article 001 footnote [2]: a full-rank square matrix understood by its eigenvalues
// and eigenvectors. Rank is not the criterion. Unmasked attention weights where token i looks
// at token i+1 (mod 3) are a circulant stochastic matrix: det = (a-b)^2 > 0, but besides 1 its
// eigenvalues are the complex pair (a-b) e^(+-2 pi i/3): no real eigenvector basis, the map
// rotates. And the shear [[1,1],[0,1]] (det 1) has one eigenvector direction even over C.
static void erratum_e30(void) {
    enum { T = 3, C = 3 };
    float x[T * 3 * C] = {0}, o[T * C], sc[T * T], pr[T * T];
    const float alpha = 2.0f * sqrtf(3.0f);  // score alpha/sqrt(3) = 2 on the next token
    for (int i = 0; i < T; i++) {
        x[i * 3 * C + (i + 1) % T] = alpha;        // q_i = alpha e_(i+1)
        x[i * 3 * C + C + i] = 1.0f;               // k_i = e_i
        x[i * 3 * C + 2 * C + i] = (float)(i + 1); // v_i, not used by the check
    }
    attention_forward(o, sc, pr, NULL, x, x + C, self_attention(1, T, C, 1, 1, 0), NULL);
    double a = exp(2.0) / (exp(2.0) + 2.0), b = 1.0 / (exp(2.0) + 2.0), e_p = 0.0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++)
            e_p = max_d(e_p, fabs(pr[i * T + j] - (j == (i + 1) % T ? a : b)));
    double P[T][T];  // the program's weights, in double
    for (int i = 0; i < T * T; i++)
        P[i / T][i % T] = pr[i];
    double tr = P[0][0] + P[1][1] + P[2][2], minors = 0.0;
    for (int i = 0; i < T; i++)
        for (int j = i + 1; j < T; j++)
            minors += P[i][i] * P[j][j] - P[i][j] * P[j][i];
    double det = P[0][0] * (P[1][1] * P[2][2] - P[1][2] * P[2][1]) -
                 P[0][1] * (P[1][0] * P[2][2] - P[1][2] * P[2][0]) +
                 P[0][2] * (P[1][0] * P[2][1] - P[1][1] * P[2][0]);
    // characteristic polynomial l^3 - tr l^2 + minors l - det = (l - 1)(l^2 + p l + q)
    double p = 1.0 - tr, q = minors - tr + 1.0, rem = 1.0 - tr + minors - det;
    double disc = p * p - 4.0 * q;
    // the shear, exactly: det 1, eigenvalue 1 twice, A - I = [[0,1],[0,0]] has rank 1
    const int S[2][2] = {{1, 1}, {0, 1}};
    int det_s = S[0][0] * S[1][1] - S[0][1] * S[1][0], tr_s = S[0][0] + S[1][1];
    int disc_s = tr_s * tr_s - 4 * det_s, rank_a_minus_i = (S[0][1] != 0 || S[1][0] != 0) ? 1 : 0;
    check(e_p < 1e-6 && det > 0.3 && fabs(rem) < 1e-6 && disc < -1.0 && det_s == 1 && disc_s == 0 &&
              rank_a_minus_i == 1,
          "E30 article 001 eigenvectors of a full-rank matrix: attention weights (error %.1e) with "
          "det %.4f have eigenvalues 1 and a complex pair (discriminant %.3f), no real eigenbasis; "
          "the shear [[1,1],[0,1]] (det 1) has one eigenvector direction",
          e_p, det, disc);
}

// E31, article 002 section 3: at the end of inference, the logits followed by a fully
// connected layer and then softmax. The fully connected head makes the logits (one per word of
// the vocabulary) and softmax turns them into probabilities: nothing comes between.
static void erratum_e31(void) {
    GPT2 m;
    errata_tiny_model(&m, 1, 31);
    int in[4] = {0, 1, 2, 3};
    gpt2_forward(&m, in, NULL, 1, 4, -1);
    ActivationTensors a = m.acts;
    double e_head = 0.0, e_soft = 0.0, pmax = 0.0;
    for (int t = 0; t < 4; t++) {
        double z[5], mx = -1e30, sum = 0.0;
        for (int v = 0; v < 5; v++) {  // the head: z = lnf wte^T, in double
            z[v] = 0.0;
            for (int c = 0; c < 8; c++)
                z[v] += (double)a.lnf[t * 8 + c] * m.params.wte[v * 8 + c];
            e_head = max_d(e_head, fabs(a.logits[t * 8 + v] - z[v]));
            mx = max_d(mx, z[v]);
        }
        for (int v = 0; v < 5; v++)
            sum += exp(z[v] - mx);
        for (int v = 0; v < 5; v++) {
            e_soft = max_d(e_soft, fabs(a.probs[t * 8 + v] - exp(z[v] - mx) / sum));
            pmax = max_d(pmax, a.probs[t * 8 + v]);
        }
    }
    gpt2_free(&m);
    check(e_head < 1e-6 && e_soft < 1e-6 && pmax > 0.2,
          "E31 article 002 order at the output: logits = the head's output lnf W^T (error %.1e) and "
          "probs = softmax(logits) directly (error %.1e); no layer after the logits",
          e_head, e_soft);
}

// E19 in article 001 (sections 4.4 and 7.2): the attention output called the new
// embedding and the input of the next layer. The next layer reads the residual stream: the
// token's vector plus the attention branch plus the MLP branch.
static void erratum_e19_in_001(void) {
    GPT2 m;
    errata_tiny_model(&m, 2, 19);
    int in[4] = {3, 1, 4, 1};
    gpt2_forward(&m, in, NULL, 1, 4, -1);
    ActivationTensors a = m.acts;
    const int N = 4 * 8;  // layer 0's part of each (L,B,T,C) tensor
    float e_in = 0.0f, vs_att = 0.0f, e_ln = 0.0f;
    for (int i = 0; i < N; i++) {
        float stream = a.encoded[i] + a.attproj[i] + a.fcproj[i];  // x + attention + MLP
        e_in = fmaxf(e_in, fabsf(a.residual3[i] - stream));
        vs_att = fmaxf(vs_att, fabsf(a.residual3[i] - a.attproj[i]));
    }
    for (int t = 0; t < 4; t++) {  // layer 1's ln1 normalises residual3 of layer 0
        double mean = 0.0, var = 0.0;
        for (int c = 0; c < 8; c++)
            mean += a.residual3[t * 8 + c] / 8.0;
        for (int c = 0; c < 8; c++)
            var += (a.residual3[t * 8 + c] - mean) * (a.residual3[t * 8 + c] - mean) / 8.0;
        for (int c = 0; c < 8; c++) {
            double y = (a.residual3[t * 8 + c] - mean) / sqrt(var + 1e-5) * m.params.ln1w[8 + c] +
                       m.params.ln1b[8 + c];
            e_ln = fmaxf(e_ln, fabsf(a.ln1[N + t * 8 + c] - (float)y));
        }
    }
    gpt2_free(&m);
    check(e_in < 1e-6f && e_ln < 1e-5f && vs_att > 0.05f,
          "E19 article 001 next layer's input: layer 1 reads x + attention + MLP (error %.1e, its "
          "layernorm %.1e), not the attention output (off by %.2f)",
          e_in, e_ln, vs_att);
}

static const struct { const char* id; void (*check)(void); } ERRATA_REREAD[] = {
    {"E29", erratum_e29}, {"E30", erratum_e30}, {"E31", erratum_e31}, {"E19", erratum_e19_in_001},
};

static void test_errata_reread(void) {
    printf("-- errata E29-E31 of articles 001, 002 and E19 in 001 (doc/errata.md, third reading)\n");
    for (size_t i = 0; i < sizeof ERRATA_REREAD / sizeof ERRATA_REREAD[0]; i++)
        ERRATA_REREAD[i].check();
}
