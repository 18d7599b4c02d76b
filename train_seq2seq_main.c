/*
train_seq2seq_main.c: the program train_seq2seq, around train_seq2seq.c's encoder-decoder:
the run's setup from the flags (util/cli.h's SEQ2SEQ_FLAGS), the training loop, the
held-out report and the attention maps. Resume, checkpoints, the stops and the step's line
are util/run.h's, the same as train_gpt2's. Plumbing: a reader of the model may skip it;
main() at the bottom shows what each part is for.
*/
#include "train_seq2seq.c"
#include "util/state.h"       // TrainState: the file that makes resuming exact
#include "util/cli.h"         // Options: the command line
#include "util/run.h"         // the run around a model: resume, checkpoints, stops, the step's line
#include "util/svg.h"         // pictures: attention maps, the loss curve
#include "util/progress.h"    // elapsed time, ETA

// everything a run holds
typedef struct {
    Seq2Seq model;
    PairSet train, val;
    int have_train, have_val;
    PairBatch batch;
    int* order;                  // (train pairs) this epoch's order of the training pairs
    TrainState state;            // where training stands (the step, the data position)
    Checkpoints ckpt;            // -o: the checkpoint resumed from, the newest, the loss curve
    Tokenizer tokenizer;
    int have_tokenizer;
    DecodeCache cache;
    Sampler sampler;             // -tp, -tk: the printed examples' decoding
    AdamWConfig adamw;
} S2SRun;

// the model as util/run.h sees it: its weights, its moments, its checkpoint writer
static void s2s_write_checkpoint(const void* m, const char* path) { seq2seq_write_checkpoint(m, path); }
static RunModel s2s_run_model(const S2SRun* r) {
    const Seq2Seq* m = &r->model;
    return (RunModel){m->params_memory, m->num_parameters, m->m_memory, m->v_memory, m, s2s_write_checkpoint};
}

// where training stands before step: the data position, the sampler's stream
static TrainState s2s_train_state(const S2SRun* r, int step) {
    TrainState st = r->state;
    st.step = step;
    st.sampler_rng = r->sampler.rng;
    return st;
}

// every pair must fit the model: its vocabulary, and maxT >= source and target + 1
static void check_pairs(const PairSet* ps, const char* path, Seq2SeqConfig c) {
    if (ps->vocab_size != c.vocab_size)
        die("'%s' has a vocabulary of %d tokens, the model %d (another task's data or tokenizer?)", path,
            ps->vocab_size, c.vocab_size);
    pairs_check_max_len(ps, path, c.max_seq_len);
}

// a fresh model: its shape and block from the flags, its vocabulary and maxT from the data
static Seq2SeqConfig s2s_fresh_config(const Options* o, const S2SRun* r) {
    const PairSet* ps = r->have_train ? &r->train : r->have_val ? &r->val : NULL;
    if (!ps) die("a fresh model needs pairs to learn its vocabulary from (-i or -j)");
    int maxT = ps->max_src > ps->max_tgt + 1 ? ps->max_src : ps->max_tgt + 1;
    if (r->have_val && r->val.max_src > maxT) maxT = r->val.max_src;
    if (r->have_val && r->val.max_tgt + 1 > maxT) maxT = r->val.max_tgt + 1;
    Seq2SeqConfig c = {.max_seq_len = o->max_seq_len ? o->max_seq_len : maxT, .vocab_size = ps->vocab_size,
                       .padded_vocab_size = (ps->vocab_size + 127) / 128 * 128,
                       .enc_layers = o->enc_layers ? o->enc_layers : o->layers,
                       .dec_layers = o->dec_layers ? o->dec_layers : o->layers, .num_heads = o->heads,
                       .channels = o->channels, .embed_scale = o->embed_scale == 1, .ff = o->ff,
                       .att_scale = att_scale_for(o, 0.0f, 1, "")};
    int kv_heads = c.num_heads;  // (no -kv here)
    int* settings[5] = {&c.pos_encoding, &c.ln_place, &c.activation, &kv_heads, &c.mask};
    apply_variant_flags(o, settings, 1, "", c.num_heads, c.channels);  // util/cli.h, as train_gpt2's
    return c;
}

// a loaded model's block and shape are its own: flags that contradict them are refused (as
// train_gpt2's), but -causal may switch the decoder's mask
static void check_loaded_model(const Options* o, Seq2SeqConfig* c, const char* source) {
    int kv_heads = c->num_heads;
    int* settings[5] = {&c->pos_encoding, &c->ln_place, &c->activation, &kv_heads, &c->mask};
    apply_variant_flags(o, settings, 0, source, 0, 0);
    check_shape_given(o, source, -1, c->num_heads, c->channels, c->max_seq_len, s2s_ff(*c));
    att_scale_for(o, c->att_scale, 0, source);
    if (o->embed_scale >= 0 && o->embed_scale != c->embed_scale)
        usage_error("-es: the model in '%s' was built %s the embedding scale; it is chosen when a model is "
                    "created (leave -es out, or start a fresh model)", source,
                    c->embed_scale ? "with" : "without");
}

static void print_model(Seq2SeqConfig c, size_t num_parameters) {
    printf("model: encoder-decoder, Le=%d Ld=%d NH=%d C=%d maxT=%d V=%d (padded %d), %.3fM parameters\n",
           c.enc_layers, c.dec_layers, c.num_heads, c.channels, c.max_seq_len, c.vocab_size,
           c.padded_vocab_size, num_parameters / 1e6);
    printf("block: positions %s, %s-LN, %s\n", VARIANT_WORDS[0][c.pos_encoding], VARIANT_WORDS[1][c.ln_place],
           VARIANT_WORDS[2][c.activation]);
    if (s2s_ff(c) != 4 * c.channels)
        printf("MLP: hidden width d_ff = %d (-ff), not 4C = %d\n", s2s_ff(c), 4 * c.channels);
    if (c.embed_scale) printf("token embeddings times sqrt(C) = %.2f on the way in (-es 1)\n",
                              sqrtf(c.channels));
    if (c.att_scale != 0.0f)
        printf("attention: scores times %g (-as), not 1/sqrt(hs) = %g\n", c.att_scale,
               attention_scale(0.0f, c.channels / c.num_heads));
    if (c.mask == MASK_NONE)
        printf("-causal 0: the decoder's self-attention has no mask, so in training each position reads the "
               "token it predicts; decoding cannot (an experiment: article 003's \"optional\" mask, "
               "doc/seq2seq.md)\n");
}

// the model: resumed from -o, loaded with -e, or fresh
static void s2s_setup_model(const Options* o, S2SRun* r) {
    if (find_resume(o, &r->ckpt) >= 0) {  // -y 1
        seq2seq_build_from_checkpoint(&r->model, r->ckpt.last);
    } else if (o->init[0]) {
        require_file(o->init, "-e", 0);
        seq2seq_build_from_checkpoint(&r->model, o->init);
    } else {
        seq2seq_init_random(&r->model, s2s_fresh_config(o, r), (uint64_t)o->seed);
    }
    const char* source = r->ckpt.last[0] ? r->ckpt.last : o->init;
    if (source[0]) check_loaded_model(o, &r->model.config, source);
    Seq2SeqConfig c = r->model.config;
    if (r->have_train) check_pairs(&r->train, o->train_path, c);
    if (r->have_val) check_pairs(&r->val, o->val_path, c);
    r->model.freeze_encoder = o->freeze_encoder;
    r->model.sgd = strcmp(o->optimizer, "sgd") == 0;
    r->model.dropout_p = o->dropout;
    r->model.dropout_seed = (uint64_t)o->seed;
    print_model(c, r->model.num_parameters);
}

// the data, the tokenizer, the model, the optimiser's state when resuming
static void s2s_setup(const Options* o, S2SRun* r) {
    if (o->attention_map[0] && !o->val_path[0])  // now, not after the training
        die("-am needs held-out pairs (-j) to draw one of them");
    r->have_train = o->max_steps > 0;
    if (r->have_train) pairs_load(&r->train, o->train_path);
    if (r->have_train && r->train.num_pairs < o->B)  // before anything of B's size is allocated
        die("'%s' has %d pairs, fewer than one batch (-b %d)", o->train_path, r->train.num_pairs, o->B);
    r->have_val = o->val_path[0] != 0;
    if (r->have_val) pairs_load(&r->val, o->val_path);
    s2s_setup_model(o, r);
    Seq2SeqConfig c = r->model.config;
    if (o->tokenizer_path[0]) {
        tokenizer_init(&r->tokenizer, o->tokenizer_path);
        r->have_tokenizer = 1;
        if (r->tokenizer.vocab_size != c.vocab_size)
            die("-tok '%s' has %d tokens, the model %d", o->tokenizer_path, r->tokenizer.vocab_size,
                c.vocab_size);
    }
    sampler_init(&r->sampler, c.vocab_size, o->temperature, o->top_k, (uint64_t)o->seed ^ 0x5A4D504CULL);
    decode_cache_init(&r->cache, c, o->B);
    r->adamw = (AdamWConfig){.lr = o->lr, .warmup = o->warmup, .max_steps = o->max_steps,
                             .final_lr_frac = o->final_lr_frac, .beta1 = o->beta1, .beta2 = o->beta2,
                             .eps = o->eps, .weight_decay = o->weight_decay, .grad_clip = o->grad_clip};
    if (r->have_train) {
        pair_batch_alloc(&r->batch, o->B, r->train.max_src, r->train.max_tgt);
        r->order = mallocCheck((size_t)r->train.num_pairs * sizeof(int));
    }
    r->state = (TrainState){0, o->B, c.max_seq_len, 0, 0, r->sampler.rng, (uint64_t)o->seed, 1,
                            r->have_train ? (uint64_t)r->train.num_pairs : 0, 0};
    if (r->ckpt.resume_step >= 0) {  // util/run.h: the state file into r->state and the moments
        allocate_moments(&r->model.m_memory, &r->model.v_memory, r->model.num_parameters);
        RunModel m = s2s_run_model(r);
        TrainState now = s2s_train_state(r, r->ckpt.resume_step);
        read_resumed_state(o, &r->ckpt, &r->state, &m);
        if (r->have_train) check_resumed_state(&r->state, now, r->ckpt.last);
        if (r->have_train && r->state.batch_index > (size_t)r->train.num_pairs / (size_t)o->B) {
            char path[4096];
            checkpoint_path(path, sizeof path, o->out_dir, "state", r->ckpt.resume_step);
            die("'%s': saved data position %zu is past the %d batches of '%s'", path, r->state.batch_index,
                r->train.num_pairs / o->B, o->train_path);
        }
        r->sampler.rng = r->state.sampler_rng;
    }
    if (r->have_train) pairs_order(r->order, r->train.num_pairs, (uint64_t)o->seed, (int)r->state.epoch);
    const char* resumed_dir = r->ckpt.resume_step >= 0 ? o->out_dir : NULL;  // its loss.tsv
    history_init(&r->ckpt.history, o->max_steps, resumed_dir, r->state.step);
    snprintf(r->ckpt.title, sizeof r->ckpt.title, "train_seq2seq -o %s: %.3fM parameters, B=%d, %s",
             o->out_dir, r->model.num_parameters / 1e6, o->B, o->train_path);
    if (o->out_dir[0] && o->max_steps > 0) check_output_dir(o->out_dir, "-o");
}

static void s2s_run_free(S2SRun* r) {
    if (r->have_train) { pairs_free(&r->train); pair_batch_free(&r->batch); free(r->order); }
    if (r->have_val) pairs_free(&r->val);
    if (r->have_tokenizer) tokenizer_free(&r->tokenizer);
    decode_cache_free(&r->cache);
    sampler_free(&r->sampler);
    history_free(&r->ckpt.history);
    seq2seq_free(&r->model);
}

// the next B training pairs into r->batch: the epoch's order, a new order each epoch
static void next_batch(const Options* o, S2SRun* r) {
    int n = r->train.num_pairs;
    if ((r->state.batch_index + 1) * (size_t)o->B > (size_t)n) {
        r->state.epoch++;
        r->state.batch_index = 0;
        pairs_order(r->order, n, (uint64_t)o->seed, (int)r->state.epoch);
    }
    pair_batch_fill(&r->batch, &r->train, r->order + r->state.batch_index * o->B, o->B);
    r->state.batch_index++;
}

// -o's checkpoint at step, its state file and the loss curve (util/run.h)
static void s2s_save_checkpoint(const Options* o, S2SRun* r, int step) {
    RunModel m = s2s_run_model(r);
    TrainState st = s2s_train_state(r, step);
    save_checkpoint(o, &r->ckpt, &m, step, &st);
}

static double percent(int right, int of) { return of > 0 ? 100.0 * right / of : 0.0; }

// the alignment-aware score: the greedy outputs' edit distance to their targets, summed and
// as a share of the targets' characters, and the outputs one insertion, deletion or
// replacement away (a shifted output is one edit, not every position after the shift)
static void print_edits(const EvalStats* e, const char* indent) {
    printf("%sedit distance to the target (greedy): %lld edits, %.2f%% of %d characters; one edit away: "
           "%d pairs (%d a character extra, %d one missing, %d one replaced)\n", indent, e->edits,
           e->chars > 0 ? 100.0 * (double)e->edits / e->chars : 0.0, e->chars,
           e->one_extra + e->one_dropped + e->one_replaced, e->one_extra, e->one_dropped, e->one_replaced);
}

// the held-out loss, teacher-forced token accuracy and greedy exact match (1,000 pairs of
// reversal: about half a second, most of it the decoding), and where the two regimes differ:
// the positions after the first wrong greedy token
static void s2s_validate(const Options* o, S2SRun* r, int step) {
    EvalStats e = evaluate(&r->model, &r->cache, &r->val, o->eval_pairs, o->B, NULL, 0, NULL);
    printf("step %5d | val loss %.4f | teacher-forced token accuracy %.2f%% | exact match %.2f%% "
           "(%d held-out pairs)\n", step, e.loss, percent(e.tf_right, e.positions),
           percent(e.greedy_exact, e.pairs), e.pairs);
    printf("           after the first wrong greedy token (%d pairs, %d positions): greedy %.2f%%, teacher "
           "forced %.2f%% of the same positions right\n", e.erring, e.after,
           percent(e.after_greedy, e.after), percent(e.after_tf, e.after));
    print_edits(&e, "           ");
    history_val(&r->ckpt.history, step, (float)e.loss);
    eval_stats_free(&e);
}

void s2s_train(const Options* o, S2SRun* r) {
    printf("training: B=%d pairs, %d steps, lr %g (warmup %d, cosine to %g), weight decay %g, clip %g, "
           "dropout %g, %d thread%s\n", o->B, o->max_steps, o->lr, o->warmup, o->final_lr_frac,
           o->weight_decay, o->grad_clip, o->dropout, max_threads(), max_threads() == 1 ? "" : "s");
    if (r->model.sgd || r->model.freeze_encoder)
        printf("%s%s%s\n", r->model.sgd ? "optimizer: plain SGD (-opt sgd)" : "",
               r->model.sgd && r->model.freeze_encoder ? "; " : "",
               r->model.freeze_encoder ? "the encoder is frozen (-fe 1): it keeps its weights" : "");
    printf("data: %s (%d pairs), %s (%d pairs)\n", o->train_path, r->train.num_pairs,
           r->have_val ? o->val_path : "no held-out pairs", r->have_val ? r->val.num_pairs : 0);
    catch_stop_signals();
    int start = r->state.step;
    RunClock clock = run_clock(start);
    for (int step = start; step <= o->max_steps; step++) {
        int last = step == o->max_steps;
        if (r->have_val && ((o->val_every > 0 && step % o->val_every == 0) || last)) s2s_validate(o, r, step);
        if (last) break;
        if (o->out_dir[0] && o->checkpoint_every > 0 && step % o->checkpoint_every == 0 && step > start)
            s2s_save_checkpoint(o, r, step);
        double t0 = now_seconds();
        next_batch(o, r);
        StepStats st = seq2seq_train_step(&r->model, &r->batch, step, &r->adamw);
        stop_if_not_finite("training loss", st.loss, step, &r->ckpt);
        stop_if_not_finite("gradient norm", st.norm, step, &r->ckpt);
        r->state.step = step + 1;
        history_step(&r->ckpt.history, step, st.loss, st.lr);
        print_step(&clock, step, o->max_steps, st.loss, st.lr, st.norm, now_seconds() - t0, o->B, "pairs");
        if (stop_signal) {  // Ctrl-C or SIGTERM during this step: save it, and stop
            RunModel m = s2s_run_model(r);
            TrainState now = s2s_train_state(r, step + 1);
            stop_after(o, &r->ckpt, &m, step + 1, start, &now);
        }
    }
    if (o->out_dir[0] && o->max_steps > start) s2s_save_checkpoint(o, r, o->max_steps);
    print_training_done(&clock, o->max_steps - start, o->B, "pairs", NAN, r->ckpt.last);
}

// accuracy per target position (1 = the first character; a pair's last is its EOS),
// greedy / sampled / teacher forced, and k positions after the first wrong greedy token
static void print_positions(const EvalStats* e, int maxT) {
    printf("  per target position, %% right (greedy / sampled / teacher forced):");
    for (int t = 0; t < maxT && e->pos_n[t] > 0; t++)
        printf("%s %d: %.0f/%.0f/%.0f", t % 6 ? "" : "\n   ", t + 1, percent(e->pos_greedy[t], e->pos_n[t]),
               percent(e->pos_sampled[t], e->pos_n[t]), percent(e->pos_tf[t], e->pos_n[t]));
    printf("\n  k positions after the first wrong greedy token, %% right (greedy / teacher forced):");
    for (int k = 1; k <= maxT && e->gap_n[k] > 0; k++)
        printf("%s k=%d: %.0f/%.0f", (k - 1) % 6 ? "" : "\n   ", k, percent(e->gap_greedy[k], e->gap_n[k]),
               percent(e->gap_tf[k], e->gap_n[k]));
    printf("\n");
}

// exact match beside teacher-forced sequence accuracy (equal by construction), then the
// measurement of article 002's lesson: free-running decoding against teacher forcing at
// the same positions, and after the first wrong token
static void s2s_report(const Options* o, S2SRun* r) {
    const Tokenizer* tk = r->have_tokenizer ? &r->tokenizer : NULL;
    if (o->examples > 0)
        printf("greedy decoding of the first %d held-out pairs, token by token (source -> output):\n",
               o->examples);
    float temperature = o->temperature > 0.0f ? o->temperature : 1.0f;  // sampled: -tp, or 1
    Sampler sampled;  // its own stream: the printed samples (-tp, -tk) stay those of the run's
    sampler_init(&sampled, r->model.config.vocab_size, temperature, o->top_k,
                 (uint64_t)o->seed ^ 0x45564CULL);
    EvalStats e = evaluate(&r->model, &r->cache, &r->val, o->eval_pairs, o->B, &sampled, o->examples, tk);
    printf("held-out: %d pairs | exact match %.2f%% (greedy decoding) | teacher-forced token accuracy "
           "%.2f%% | val loss %.4f\n", e.pairs, percent(e.greedy_exact, e.pairs),
           percent(e.tf_right, e.positions), e.loss);
    if (r->model.config.mask == MASK_CAUSAL)
        printf("teacher-forced sequence accuracy %.2f%% = exact match %.2f%%: while its prefix is right, "
               "greedy decoding reads exactly the teacher-forced input, so both fail at the same first "
               "wrong token\n",
               percent(e.tf_sequences, e.pairs), percent(e.greedy_exact, e.pairs));
    else
        printf("teacher-forced sequence accuracy %.2f%%, exact match %.2f%%: not equal by construction here "
               "(-causal 0: teacher forcing reads later target tokens, decoding cannot)\n",
               percent(e.tf_sequences, e.pairs), percent(e.greedy_exact, e.pairs));
    printf("decoding reads its own tokens (article 002), teacher forcing the true ones, at the same %d "
           "positions:\n  token accuracy: greedy %.2f%%, sampled (-tp %g -tk %d) %.2f%% (exact match "
           "%.2f%%), teacher forced %.2f%%\n", e.positions, percent(e.greedy_right, e.positions),
           temperature, o->top_k, percent(e.sampled_right, e.positions), percent(e.sampled_exact, e.pairs),
           percent(e.tf_right, e.positions));
    printf("  after the first wrong greedy token (%d pairs, %d positions): greedy %.2f%%, teacher forced "
           "%.2f%% of the same positions right\n", e.erring, e.after, percent(e.after_greedy, e.after),
           percent(e.after_tf, e.after));
    print_edits(&e, "  ");
    print_positions(&e, r->model.config.max_seq_len);
    sampler_free(&sampled);
    eval_stats_free(&e);
}

// -am's self-attention maps, beside the cross-attention's: the encoder's (Le layers, Ts x Ts,
// sites 0..Le-1) or the decoder's (Ld layers, Tt x Tt, sites Le + 2l), of the pair the last
// forward ran on, into the -am path with "_encoder" or "_decoder" before its ".svg"
static void draw_self_attention(const Options* o, S2SRun* r, const PairBatch* pb, int decoder) {
    Seq2Seq* m = &r->model;
    Seq2SeqConfig c = m->config;
    int L = decoder ? c.dec_layers : c.enc_layers, NH = c.num_heads, T = decoder ? pb->Tt : pb->Ts;
    size_t slot = (size_t)m->batch_size * NH * c.max_seq_len * c.max_seq_len, map = (size_t)NH * T * T;
    float* probs = mallocCheck(L * map * sizeof(float));  // (L,NH,T,T), from each site's slot
    for (int l = 0; l < L; l++)
        memcpy(probs + l * map, m->acts.att_probs + (decoder ? c.enc_layers + 2 * l : l) * slot,
               map * sizeof(float));
    char path[4096], title[8400];
    size_t n = strlen(o->attention_map);
    int svg = n >= 4 && strcmp(o->attention_map + n - 4, ".svg") == 0;
    snprintf(path, sizeof path, "%.*s_%s.svg", (int)(svg ? n - 4 : n), o->attention_map,
             decoder ? "decoder" : "encoder");  // cross.svg -> cross_encoder.svg
    const char* stack = decoder ? "decoder" : "encoder";
    const char* model = o->init[0] ? o->init : r->ckpt.last[0] ? r->ckpt.last : "a fresh model";
    snprintf(title, sizeof title, "the %s's self-attention (%s, a held-out pair of %s)", stack, model,
             o->val_path);
    const int* tokens = decoder ? pb->dec_in : pb->src;  // queries and keys: the same inputs
    const Tokenizer* tk = r->have_tokenizer ? &r->tokenizer : NULL;
    write_attention_map_svg(path, probs, L, NH, T, T, tokens, tokens, tk, decoder && c.mask == MASK_CAUSAL,
                            title);
    printf("%s self-attention maps of held-out pair 0 (%d x %d): %s\n", stack, T, T, path);
    free(probs);
}

// -am: the cross-attention maps of the first held-out pair, teacher forced on its target:
// a panel per decoder layer and head, a row per output position (labelled by the token it
// predicts), a column per source token. For reversal, output i reads source n-1-i: the
// anti-diagonal.
static void draw_cross_attention(const Options* o, S2SRun* r) {
    Seq2Seq* m = &r->model;
    Seq2SeqConfig c = m->config;
    if (!r->have_val || r->val.num_pairs == 0) die("-am needs held-out pairs (-j) to draw one of them");
    PairBatch pb;
    pair_batch_alloc(&pb, 1, r->val.max_src, r->val.max_tgt);
    int first = 0;
    pair_batch_fill(&pb, &r->val, &first, 1);
    seq2seq_forward(m, &pb, -1);
    int Ld = c.dec_layers, NH = c.num_heads, Tt = pb.Tt, Ts = pb.Ts;
    size_t slot = (size_t)m->batch_size * NH * c.max_seq_len * c.max_seq_len, map = (size_t)NH * Tt * Ts;
    float* probs = mallocCheck(Ld * map * sizeof(float));  // (Ld,NH,Tt,Ts), from each site's slot
    for (int l = 0; l < Ld; l++)
        memcpy(probs + l * map, m->acts.att_probs + (c.enc_layers + 2 * l + 1) * slot, map * sizeof(float));
    char title[8400];
    snprintf(title, sizeof title, "the decoder's cross-attention (%s, a held-out pair of %s)",
             o->init[0] ? o->init : r->ckpt.last[0] ? r->ckpt.last : "a fresh model",
             o->val_path);
    const Tokenizer* tk = r->have_tokenizer ? &r->tokenizer : NULL;
    write_attention_map_svg(o->attention_map, probs, Ld, NH, Tt, Ts, pb.dec_tgt, pb.src, tk, 0, title);
    printf("cross-attention maps of held-out pair 0 (%d target + EOS rows, %d source columns): %s\n", Tt, Ts,
           o->attention_map);
    // reversal's alignment: output i is source character n-1-i; the mean weight there
    printf("mean weight on the anti-diagonal (output i reading source n-1-i, reversal's alignment):");
    for (int l = 0; l < Ld; l++)
        for (int h = 0; h < NH; h++) {
            double sum = 0.0;
            for (int i = 0; i < Tt - 1; i++)
                sum += probs[l * map + ((size_t)h * Tt + i) * Ts + (Ts - 1 - i)];
            printf(" L%dH%d %.2f", l, h, Tt > 1 ? sum / (Tt - 1) : 0.0);
        }
    printf("\n");
    draw_self_attention(o, r, &pb, 0);
    draw_self_attention(o, r, &pb, 1);
    free(probs);
    pair_batch_free(&pb);
}

// -tp, -tk: the first -g held-out pairs decoded again, sampled instead of greedy
static void print_sampled_examples(const Options* o, S2SRun* r) {
    printf("sampled decoding (-tp %g -tk %d):\n", o->temperature, o->top_k);
    const Tokenizer* tk = r->have_tokenizer ? &r->tokenizer : NULL;
    int n = o->examples < r->val.num_pairs ? o->examples : r->val.num_pairs, len;
    PairBatch pb;
    pair_batch_alloc(&pb, 1, r->val.max_src, r->val.max_tgt);
    int* out = mallocCheck((size_t)r->model.config.max_seq_len * sizeof(int));
    for (int i = 0; i < n; i++) {
        pair_batch_fill(&pb, &r->val, &i, 1);
        seq2seq_decode(&r->model, &r->cache, &r->sampler, pb.src, pb.src_len, 1, pb.Ts, out, &len);
        print_example(tk, "", pb.src, pb.src_len[0], out, len);
    }
    free(out);
    pair_batch_free(&pb);
}

int main(int argc, char** argv) {
    error_program = "train_seq2seq";
    Options o = parse_seq2seq_args(argc, argv);
    static S2SRun r;  // zeroed
    s2s_setup(&o, &r);
    if (o.max_steps > 0) s2s_train(&o, &r);
    if (r.have_val) s2s_report(&o, &r);
    if (r.have_val && (o.temperature > 0 || o.top_k > 0)) print_sampled_examples(&o, &r);
    if (o.attention_map[0]) draw_cross_attention(&o, &r);
    if (stop_signal)  // during the final save, evaluation or drawing: what was written is whole
        stop_together("stopped by signal %d after the run's last write: its files are whole", stop_signal);
    s2s_run_free(&r);
    return 0;
}
