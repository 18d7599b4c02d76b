/*
train_gpt2_main.c: the program train_gpt2, around train_gpt2.c's GPT-2 and its sequel for
several processes, train_gpt2_parallel.c: the validation loss, Hugging Face's GPT-2 files
(-e, -hf), the run's setup from the flags (util/cli.h), the training loop (train() calls
run_step() once per step) and the attention maps (-am). Resume, checkpoints, the stops and
the step's line are util/run.h's, the same as train_seq2seq's. Plumbing: a reader of the
model may skip it; main() at the bottom shows what each part is for.
Compiled by the C compiler it is train_gpt2, one process (util/dist.h's functions are then
those of one process); by Open MPI's mpicc with -DUSE_MPI, train_gpt2_mpi, which `mpirun -np
N` starts N times (make mpi).
*/
#include "train_gpt2_parallel.c"  // train_gpt2.c, the model, and its run on N processes (MPI)
#include <sys/stat.h>

#include "util/dataloader.h"  // DataLoader: batches from llm.c token files
#include "util/state.h"       // TrainState: the file that makes resuming exact
#include "util/cli.h"         // Options: the command line
#include "util/run.h"         // the run around a model: resume, checkpoints, stops, the step's line
#include "util/svg.h"         // pictures: attention maps, the loss curve
#include "util/progress.h"    // elapsed time, ETA, the progress of a long validation
#include "util/hf_gpt2.h"     // Hugging Face's GPT-2 files, in llm.c's checkpoint layout

// ----------------------------------------------------------------------------
// the program

// mean loss over the first n batches of the validation file (no dropout); with N
// processes each computes its rows of each batch. Shows its progress when it takes more
// than a second; a stop signal ends it within a batch (the loss is then NaN)
float validation_loss(GPT2* model, DataLoader* val, int n) {
    double sum = 0.0, start = now_seconds();
    int B = val->B / dist_replicas(), T = val->T;
    dataloader_seek(val, 0, 0);
    for (int k = 0; k < n; k++) {
        if (dist_stop_agreed()) return NAN;
        dataloader_next_batch(val);
        sum += gpt2_forward(model, dist_rows(val->inputs, B, T), dist_rows(val->targets, B, T), B, T, -1);
        show_progress("validation", k + 1, n, start);
    }
    return dist_mean((float)(sum / n));
}

// ----------------------------------------------------------------------------
// Hugging Face's GPT-2: util/hf_gpt2.h reads and writes it in llm.c's checkpoint layout,
// which is this model's params_memory when it has no block variants

static LlmcShape llmc_shape_of(GPT2Config c) {
    return (LlmcShape){.max_seq_len = c.max_seq_len, .vocab_size = c.vocab_size, .num_layers = c.num_layers,
                       .num_heads = c.num_heads, .channels = c.channels,
                       .padded_vocab_size = c.padded_vocab_size};
}

// -e path/model.safetensors: config.json from the same directory, or the shape inferred
void gpt2_build_from_safetensors(GPT2* model, const char* path) {
    HFReader hf;
    hf_open(&hf, path);
    LlmcShape s = hf.shape;
    GPT2Config c = {.max_seq_len = s.max_seq_len, .vocab_size = s.vocab_size, .num_layers = s.num_layers,
                    .num_heads = s.num_heads, .num_kv_heads = s.num_heads, .channels = s.channels,
                    .padded_vocab_size = s.padded_vocab_size};
    check_config(c, hf.have_config ? hf.config_path : path);
    hf_check(&hf);  // every tensor, before the weights are allocated
    gpt2_allocate_parameters(model, c);
    hf_read(&hf, model->params_memory);
    char what[4200];
    snprintf(what, sizeof what, "'%s'", path);
    check_finite_weights(model->params_memory, model->num_parameters, what);
}

// an llm.c checkpoint, or (by its name) a Hugging Face one
void gpt2_build_from_file(GPT2* model, const char* path) {
    if (is_safetensors_path(path)) gpt2_build_from_safetensors(model, path);
    else gpt2_build_from_checkpoint(model, path);
}

// Hugging Face's GPT-2 is this program's GPT-2 without block variants
static void hf_check_representable(GPT2Config c, const char* what) {
    if (!is_gpt2(c))
        die("%s: Hugging Face's GPT-2 cannot hold this model (%d key/value head%s of %d, positions %s, "
            "%s-LN, %s, MLP width %d, %s attention): it has as many key/value heads as heads, learned "
            "positions, pre-LN, GELU, MLP width 4C = %d, causal attention", what, c.num_kv_heads,
            c.num_kv_heads == 1 ? "" : "s", c.num_heads, VARIANT_WORDS[0][c.pos_encoding],
            VARIANT_WORDS[1][c.ln_place], VARIANT_WORDS[2][c.activation], ff_channels(c),
            c.mask ? "unmasked" : "causal", 4 * c.channels);
}

// -hf DIR: DIR/model.safetensors and DIR/config.json
void gpt2_write_safetensors(const GPT2* model, const char* dir) {
    hf_check_representable(model->config, "-hf");
    check_finite_weights(model->params_memory, model->num_parameters, "-hf (nothing written)");
    hf_write(dir, llmc_shape_of(model->config), model->params_memory);
}

// ----------------------------------------------------------------------------
// a run's setup from the command line, the plumbing of the program: the model resumed,
// loaded or fresh, with its tokenizer; the sampler, KV cache and prompt; the training and
// validation data; and run_free. A reader of the model may skip it: train() and main()
// below show what each part is for.

#define GPT2_TOKENIZER "data/gpt2_tokenizer.bin"  // GPT-2's 50257 tokens (data/make_gpt2_tokenizer.js)

// everything a run holds: the model and what feeds it, what samples from it
typedef struct {
    GPT2 model;
    TrainState state;            // where training stands (step 0 unless resumed)
    Checkpoints ckpt;            // -o: the checkpoint resumed from, the newest, the loss curve
    Tokenizer tokenizer;
    int have_tokenizer;          // loaded, and its vocabulary matches the model's
    Sampler sampler;
    KVCache kv;
    int* prompt;                 // (maxT) the tokens generation starts from
    int prompt_len;
    DataLoader train, val;
    int have_val, val_batches;
    AdamWConfig adamw;           // from the flags
} Run;

// the model as util/run.h sees it: its weights, its moments, its checkpoint writer (with
// -tpar this process's share of them; whole_run_model below puts the whole model together)
static void write_checkpoint(const void* model, const char* path) { gpt2_write_checkpoint(model, path); }
static RunModel run_model(const GPT2* m) {
    return (RunModel){m->params_memory, m->num_parameters, m->m_memory, m->v_memory, m, write_checkpoint};
}

// the model: resumed from -o, loaded with -e, or fresh; with the tokenizer that names
// its vocabulary
void setup_model(const Options* o, Run* r) {
    struct stat sb;
    int default_tokenizer = !flag_given(o, "-tok");
    find_resume(o, &r->ckpt);  // -y 1
    GPT2Config fresh = {.max_seq_len = o->max_seq_len ? o->max_seq_len : o->T, .num_layers = o->layers,
                        .num_heads = o->heads, .channels = o->channels};
    int is_fresh = r->ckpt.resume_step < 0 && (!o->init[0] || parse_model_descriptor(o->init,
                       &fresh.num_layers, &fresh.num_heads, &fresh.channels, &fresh.max_seq_len));
    if (is_fresh) {
        require_file(o->tokenizer_path, "-tok", !flag_given(o, "-tok"));
        tokenizer_init(&r->tokenizer, o->tokenizer_path);  // a fresh model takes its vocabulary from it
        r->have_tokenizer = 1;
    }
    if (r->ckpt.resume_step >= 0) {
        gpt2_build_from_checkpoint(&r->model, r->ckpt.last);
    } else if (!is_fresh) {
        require_file(o->init, "-e", 0);
        gpt2_build_from_file(&r->model, o->init);  // llm.c's checkpoint, or Hugging Face's .safetensors
    } else {
        fresh.vocab_size = r->tokenizer.vocab_size;
        fresh.padded_vocab_size = (r->tokenizer.vocab_size + 127) / 128 * 128;
        int* settings[5] = {&fresh.pos_encoding, &fresh.ln_place, &fresh.activation, &fresh.num_kv_heads,
                            &fresh.mask};
        apply_variant_flags(o, settings, 1, "", fresh.num_heads, fresh.channels);
        fresh.ff = o->ff;  // 0: 4C
        fresh.att_scale = att_scale_for(o, 0.0f, 1, "");  // 0: 1/sqrt(hs)
        gpt2_init_random(&r->model, fresh, (uint64_t)o->seed);
    }
    GPT2Config* mc = &r->model.config;  // a loaded model: the flags must agree with it (-causal may switch)
    int* settings[5] = {&mc->pos_encoding, &mc->ln_place, &mc->activation, &mc->num_kv_heads, &mc->mask};
    const char* source = r->ckpt.last[0] ? r->ckpt.last : o->init;
    if (!is_fresh) apply_variant_flags(o, settings, 0, source, 0, 0);
    if (!is_fresh) att_scale_for(o, mc->att_scale, 0, source);
    if (!is_fresh || o->init[0])  // a loaded model, or llm.c's descriptor (d12...): its shape, not -nl ...
        check_shape_given(o, source, mc->num_layers, mc->num_heads, mc->channels, mc->max_seq_len,
                          ff_channels(*mc));
    GPT2Config c = r->model.config;
    if (dist.tp > 1) {  // -tpar N: this process keeps its share of the heads and the MLP (util/dist.h)
        if (c.num_heads % dist.tp || c.num_kv_heads % dist.tp || ff_channels(c) % dist.tp)
            usage_error("-tpar %d must divide the heads (%d), the key/value heads (%d) and the MLP's width "
                        "d_ff (%d)", dist.tp, c.num_heads, c.num_kv_heads, ff_channels(c));
        gpt2_take_share(&r->model, dist.tp, dist.tp_rank);
    }
    // a loaded model's tokenizer: -tok, or by default the one of its vocabulary (GPT-2's 50257 tokens)
    int gpt2_vocab = default_tokenizer && c.vocab_size == 50257;
    const char* tokenizer_path = gpt2_vocab ? find_default_path(GPT2_TOKENIZER, 0) : o->tokenizer_path;
    if (!is_fresh && (!default_tokenizer || stat(tokenizer_path, &sb) == 0)) {
        require_file(tokenizer_path, "-tok", 0);
        tokenizer_init(&r->tokenizer, tokenizer_path);
        r->have_tokenizer = 1;
    } else if (!is_fresh && (o->gen_tokens > 0 || o->attention_map[0]))
        printf("note: no tokenizer at '%s' (here or beside the program): tokens are printed as ids; "
               "name one with -tok\n", tokenizer_path);
    if (o->T > c.max_seq_len && (o->max_steps != 0 || o->gen_tokens == 0) && !o->attention_map[0])
        die("-t %d is larger than the model's maxT %d", o->T, c.max_seq_len);  // before -hf's DIR is made
    if (o->hf_out[0]) {  // -hf: refused now rather than after training
        hf_check_representable(c, "-hf");
        if (dist.rank == 0) check_output_dir(o->hf_out, "-hf");
    }
    if (r->have_tokenizer && r->tokenizer.vocab_size != c.vocab_size) {
        printf("note: tokenizer '%s' has %d tokens, the model %d: samples are printed as token ids\n",
               tokenizer_path, r->tokenizer.vocab_size, c.vocab_size);
        tokenizer_free(&r->tokenizer);
        r->have_tokenizer = 0;
    }
    dist_shards_setup(r->model.num_parameters, SQUARES_CHUNKS);  // -z 1: this process's shard
    parallel_attach(&r->model);  // N processes: the story's hooks (train_gpt2_parallel.c)
    r->model.plain = o->plain;  // -kernels plain: the story's loops compute every matrix product
    r->model.precision = o->bf16 ? GEMM_BF16 : GEMM_FP32;  // -prec: the products' operands (fast/bf16.h)
    r->model.dropout_p = o->dropout;
    r->model.dropout_seed = (uint64_t)o->seed;
    r->model.dropout_row0 = dist_replica() * o->B;
    r->model.grad_accum = o->grad_accum;  // -d: each micro-batch's gradients weigh 1/grad_accum
    if (r->ckpt.resume_step >= 0) {
        parallel_allocate_moments(&r->model);
        RunModel m = run_model(&r->model);
        size_t n = parameters_of(c);
        if (dist.tp > 1)  // -tpar: the file's whole moments, then this process's share of them
            m = (RunModel){.num_parameters = n, .m = mallocCheck(n * sizeof(float)),
                           .v = mallocCheck(n * sizeof(float))};
        read_resumed_state(o, &r->ckpt, &r->state, &m);
        if (dist.tp > 1) {  // its share of the heads and the MLP, as of the weights (gpt2_take_share)
            tp_copy_share(r->model.config, dist.tp_rank, m.m, r->model.m_memory, 1);
            tp_copy_share(r->model.config, dist.tp_rank, m.v, r->model.v_memory, 1);
            free(m.m), free(m.v);
        }
    }
    printf("model: L=%d NH=%d C=%d maxT=%d V=%d (padded %d), %.2fM parameters, -prec %s, "
           "matmul kernel %s%s%s\n",
           c.num_layers, c.num_heads, c.channels, c.max_seq_len, c.vocab_size, c.padded_vocab_size,
           parameters_of(c) / 1e6, o->precision,
           o->plain ? "plain (train_gpt2.c's loops)" : gemm_products_name(),
           o->bf16 ? "; bf16 products: " : "", o->bf16 ? bf16_kernel_describe() : "");  // (fast/bf16.h)
    print_block_variants(is_gpt2(c), c.num_kv_heads, c.pos_encoding, c.ln_place, c.activation, c.mask);
    if (ff_channels(c) != 4 * c.channels)
        printf("MLP: hidden width d_ff = %d (-ff), not GPT-2's 4C = %d\n", ff_channels(c), 4 * c.channels);
    if (c.att_scale != 0.0f)
        printf("attention: scores times %g (-as), not 1/sqrt(hs) = %g\n", c.att_scale,
               attention_scale(0.0f, c.channels / c.num_heads));
    print_tensor_parallel(&r->model);
}

// sampler, KV cache and the prompt (the end-of-text token when there is none)
void setup_generation(const Options* o, Run* r) {
    GPT2Config c = r->model.config;
    sampler_init(&r->sampler, c.vocab_size, o->temperature, o->top_k, (uint64_t)o->seed ^ 0x5A4D504CULL);
    if (r->ckpt.resume_step >= 0) r->sampler.rng = r->state.sampler_rng;
    if (o->gen_tokens > 0) kvcache_init(&r->kv, c);
    r->prompt = mallocCheck((size_t)c.max_seq_len * sizeof(int));
    r->prompt_len = 1;
    r->prompt[0] = r->have_tokenizer ? r->tokenizer.eot_token : 0;
    if (o->prompt[0]) {
        if (!r->have_tokenizer) die("-pr needs a tokenizer that matches the model (-tok)");
        r->prompt_len = tokenizer_encode(&r->tokenizer, o->prompt, r->prompt, c.max_seq_len);
    }
}

// the optimiser's settings from the flags
AdamWConfig adamw_config(const Options* o) {
    AdamWConfig c = {.lr = o->lr, .schedule = o->schedule, .warmup = o->warmup, .max_steps = o->max_steps,
                     .final_lr_frac = o->final_lr_frac, .beta1 = o->beta1, .beta2 = o->beta2,
                     .eps = o->eps, .weight_decay = o->weight_decay, .grad_clip = o->grad_clip};
    return c;
}

// where training stands before step: what a resume needs besides the weights and moments.
// B is the rows of a whole step (-b x processes x accumulation): the data's order depends
// on it alone, not on how the rows are split
static TrainState train_state(const Options* o, const Run* r, int step) {
    return (TrainState){step, o->B * dist_replicas() * o->grad_accum, o->T, r->train.epoch,
                        r->train.batch_index, r->sampler.rng, (uint64_t)o->seed, o->shuffle,
                        r->train.total_tokens, o->max_steps};
}

// the training and validation batches, and the optimiser's settings; -x -1 becomes one epoch
void setup_data(Options* o, Run* r) {
    int V = r->model.config.vocab_size;
    r->have_val = o->val_path[0] && (o->max_steps != 0 || o->gen_tokens == 0);
    int B = o->B * dist_replicas();  // N processes: the global batch of N x B rows (-tpar: B)
    const char* flags = dist_replicas() > 1 ? "-b times the processes, -t" : "-b, -t";
    if (o->max_steps != 0)  // a step's rows: every micro-batch of -d, every process's (-a 1: -j's first)
        dataloader_init(&r->train, o->overfit ? o->val_path : o->train_path, B * o->grad_accum, o->T, V,
                        o->shuffle && !o->overfit, (uint64_t)o->seed, o->overfit ? "-j" : "-i",
                        o->grad_accum > 1 ? "-d, -t" : flags, o->force_vocab);
    if (o->max_steps < 0) o->max_steps = (int)r->train.total_batches;
    r->adamw = adamw_config(o);
    if (r->have_val) {
        dataloader_init(&r->val, o->val_path, B, o->T, V, 0, 0, "-j", flags, o->force_vocab);
        r->val_batches = validation_batches(o, &r->val);
    }
    if (r->ckpt.resume_step >= 0 && o->max_steps > 0) {  // the state must be this run's
        check_resumed_state(&r->state, train_state(o, r, r->ckpt.resume_step), r->ckpt.last);
        dataloader_seek(&r->train, r->state.epoch, r->state.batch_index);
        if (r->state.step >= o->max_steps)
            printf("-y 1: the checkpoint is at step %d, at or past -x %d: nothing to train\n", r->state.step,
                   o->max_steps);
        else if (r->state.max_steps && r->state.max_steps != o->max_steps)
            print_schedule_change(o, r->state.max_steps, r->state.step);
    }
    const char* resumed_dir = r->ckpt.resume_step >= 0 ? o->out_dir : NULL;  // its loss.tsv
    history_init(&r->ckpt.history, o->max_steps, resumed_dir, r->state.step);
    snprintf(r->ckpt.title, sizeof r->ckpt.title, "train_gpt2 -o %s: %.2fM parameters, B=%d T=%d, %s",
             o->out_dir, parameters_of(whole_config(r->model.config)) / 1e6, o->B, o->T, o->train_path);
    if (o->out_dir[0] && o->max_steps > 0 && dist.rank == 0) {
        check_output_dir(o->out_dir, "-o");  // fail now, not at the end
        protect_output_dir(o);
    }
}

// the model as one process holds it, for the writers (its config and parameters): itself, or
// with -tpar the whole model put together on process 0 (parameters NULL on the others; free
// them with whole_model_free)
static GPT2 whole_model(const GPT2* model) {
    if (dist.tp == 1) return *model;
    GPT2 whole = {.config = whole_config(model->config)};
    whole.num_parameters = parameters_of(whole.config);
    whole.params_memory = tp_gather_whole(model, model->params_memory);
    return whole;
}
static void whole_model_free(GPT2* whole) {
    if (dist.tp > 1) free(whole->params_memory);
}

// -hf DIR: the model as Hugging Face's GPT-2 (after training, if any)
void export_hf(const Options* o, const Run* r) {
    if (!o->hf_out[0]) return;
    GPT2 whole = whole_model(&r->model);  // -tpar: put together on process 0
    if (dist.rank == 0) {  // N processes: the weights are the same
        gpt2_write_safetensors(&whole, o->hf_out);
        printf("wrote %s/model.safetensors and %s/config.json (Hugging Face's GPT-2)\n", o->hf_out,
               o->hf_out);
    }
    whole_model_free(&whole);
}

void run_free(Run* r, const Options* o) {
    free(r->prompt); sampler_free(&r->sampler); history_free(&r->ckpt.history);
    if (o->gen_tokens > 0) kvcache_free(&r->kv);
    if (r->have_tokenizer) tokenizer_free(&r->tokenizer);
    if (o->max_steps > 0) dataloader_free(&r->train);
    if (r->have_val) dataloader_free(&r->val);
    dist_mpi_quiet();  // -zg 1: no process's broadcast may still be writing into the weights
    gpt2_free(&r->model);
}

// the model as util/run.h's save_checkpoint writes it: run_model's, or with -tpar the whole
// model and its moments put together on process 0 from every process's share (every process
// takes part; NULL on the others), in *whole until whole_run_model_free
static RunModel whole_run_model(const GPT2* model, GPT2* whole) {
    *whole = whole_model(model);
    RunModel m = run_model(whole);
    if (dist.tp > 1 && model->m_memory) {  // the moments are laid out as the parameters
        m.m = tp_gather_whole(model, model->m_memory);
        m.v = tp_gather_whole(model, model->v_memory);
    }
    return m;
}
static void whole_run_model_free(RunModel* m, GPT2* whole) {
    if (dist.tp > 1) free(m->m), free(m->v);
    whole_model_free(whole);
}

// -o's checkpoint of the model at step (util/run.h's save_checkpoint); every process calls it
static void checkpoint_model(const Options* o, Run* r, int step, const TrainState* st) {
    GPT2 whole;
    RunModel m = whole_run_model(&r->model, &whole);
    save_checkpoint(o, &r->ckpt, &m, step, st);
    whole_run_model_free(&m, &whole);
}

static void sample(const Options* o, Run* r) {
    if (dist_replica() != 0) return;  // N processes: process 0 alone samples and prints (-tpar: all
                                      // compute each token together, process 0 prints)
    const Tokenizer* tk = r->have_tokenizer ? &r->tokenizer : NULL;
    generate(&r->model, &r->kv, &r->sampler, tk, r->prompt, r->prompt_len, o->gen_tokens, o->slide, stdout);
}

// the tokens of a training step: -b rows of -t tokens, of every replica (process, or with
// -tpar the processes that share one model) and micro-batch
static double step_tokens(const Options* o) { return (double)o->B * dist_replicas() * o->T * o->grad_accum; }

// One optimisation step on the next batch; prints its line. It is gpt2_train_step in
// its two halves, because a checkpoint due at this step is written between them: after
// the forward, for weights whose loss just came out finite, before AdamW changes them.
// With -d the batch is grad_accum micro-batches of B rows per process: the gradients of
// all but the last are summed before it (gpt2_backward adds; each weighs 1/grad_accum).
static void run_step(const Options* o, Run* r, int step, RunClock* clock) {
    double t0 = now_seconds(), tp0 = dist.tp_seconds, sum = 0.0;  // tp0: -tpar's all-reduces so far
    TrainState before = train_state(o, r, step);
    if (o->overfit) dataloader_seek(&r->train, 0, 0);  // -a 1: the first batch, every step
    dataloader_next_batch(&r->train);  // the step's rows: this process takes B of each micro-batch
    for (int micro = 0; micro < o->grad_accum; micro++) {
        int row0 = (micro * dist_replicas() + dist_replica()) * o->B;  // in the step's rows: -d 2BT = -b 2B
        r->model.dropout_row0 = row0;
        size_t at = (size_t)row0 * o->T;
        sum += gpt2_forward(&r->model, r->train.inputs + at, r->train.targets + at, o->B, o->T, step);
        if (micro == o->grad_accum - 1) break;  // the last one's backward comes after the checkpoint
        if (micro == 0) gpt2_zero_grad(&r->model);
        gpt2_backward(&r->model);
    }
    float loss = dist_mean((float)(sum / o->grad_accum));
    stop_if_not_finite("training loss", loss, step, &r->ckpt);
    if (o->out_dir[0] && o->checkpoint_every > 0 && step % o->checkpoint_every == 0 && step > r->state.step)
        checkpoint_model(o, r, step, &before);
    if (o->grad_accum == 1) gpt2_zero_grad(&r->model);
    size_t last_rows = (size_t)(o->grad_accum - 1) * dist_replicas() * o->B;  // every process's, this pass
    dist_step_tokens(r->train.inputs + last_rows * o->T, (size_t)dist_replicas() * o->B * o->T);
    gpt2_backward(&r->model);
    StepStats s = parallel_optimizer_step(&r->model, step, &r->adamw);
    stop_if_not_finite("gradient norm", s.norm, step, &r->ckpt);
    history_step(&r->ckpt.history, step, loss, s.lr);
    if (step > clock->first_step)  // a timed step: its share of -tpar's all-reduces (util/dist.h)
        dist.tp_step_seconds += dist.tp_seconds - tp0;
    print_step(clock, step, o->max_steps, loss, s.lr, s.norm, now_seconds() - t0, step_tokens(o), "tok");
}

// the training loop: validation every -v steps, a sample every -s, checkpoints every -n,
// and all three at the end
void train(const Options* o, Run* r) {
    print_training_settings(o, max_threads(), &r->train, r->have_val ? &r->val : NULL, r->val_batches);
    print_optimizer_memory(r->model.num_parameters);
    RunClock clock = run_clock(r->state.step);
    float val_loss = -1.0f;
    for (int step = r->state.step; step <= o->max_steps; step++) {
        int last = step == o->max_steps;
        TrainState now = train_state(o, r, step);
        int val_due = r->have_val && ((o->val_every > 0 && step % o->val_every == 0) || last);
        int sample_due = (o->sample_every > 0 && step % o->sample_every == 0 && step > 0) || last;
        if (val_due || last || (o->gen_tokens > 0 && sample_due)) dist_weights_landed();  // -zg 1: all read
        if (val_due) {
            dist_check_weights(r->model.params_memory, r->model.num_parameters, step);
            val_loss = validation_loss(&r->model, &r->val, r->val_batches);
            if (!stop_signal) printf("step %5d | val loss %.4f\n", step, val_loss);
            if (!stop_signal) history_val(&r->ckpt.history, step, val_loss);
        }
        if (o->gen_tokens > 0 && !stop_signal && sample_due) {
            printf("---- sample at step %d ----\n", step);
            sample(o, r);
            printf("----\n");
        }
        if (dist_stop_agreed()) {  // Ctrl-C during the last step, this validation or sample
            GPT2 whole;  // N processes stop together; with -tpar they put the model together to save it
            int saves = o->out_dir[0] && step > r->state.step;  // as stop_after does
            RunModel m = saves ? whole_run_model(&r->model, &whole) : run_model(&r->model);
            stop_after(o, &r->ckpt, &m, step, r->state.step, &now);
        }
        if (last) break;
        run_step(o, r, step, &clock);
    }
    if (o->out_dir[0] && o->max_steps > r->state.step) {
        if (r->have_val && !isfinite(val_loss))
            die_together("the validation loss is %f at the end; not writing a checkpoint. Last good "
                         "checkpoint: %s", val_loss, r->ckpt.last[0] ? r->ckpt.last : "none");
        TrainState now = train_state(o, r, o->max_steps);
        checkpoint_model(o, r, o->max_steps, &now);
    }
    float final_loss = r->have_val ? val_loss : NAN;
    print_training_done(&clock, o->max_steps - r->state.step, step_tokens(o), "tok", final_loss,
                        r->ckpt.last);
}

#ifndef TESTING
// -am: the attention maps of the prompt, as an SVG, and where each head looks
static void draw_attention_map(const Options* o, Run* r) {
    GPT2Config c = r->model.config;
    gpt2_forward(&r->model, r->prompt, NULL, 1, r->prompt_len, -1);  // fills acts.att_probs
    const Tokenizer* tk = r->have_tokenizer ? &r->tokenizer : NULL;
    write_attention_svg(o->attention_map, r->model.acts.att_probs, c.num_layers, c.num_heads, r->prompt_len,
                        r->prompt, tk, c.mask == MASK_CAUSAL, o->init[0] ? o->init : "a fresh model");
    print_attention_summary(o->attention_map, r->model.acts.att_probs, c.num_layers, c.num_heads,
                            r->prompt_len, r->prompt, tk);
}

int main(int argc, char** argv) {
    dist_init(&argc, &argv);  // mpirun -np N: this is one of N processes (util/dist.h)
    Options o = parse_args(argc, argv);
    check_flags_agree(&o);  // mpirun: every process's flags the same, or one line (util/cli.h)
    dist.zero = o.zero;  // -z 1: AdamW's state sharded over the processes (util/dist.h)
    dist.deadline = o.deadline;  // -dt: how long a collective waits for the others (util/dist.h)
    dist.gather_overlap = o.zero_gather;  // -zg 1: its gather overlapped with the forward pass
    dist_tp_init(o.tpar);  // -tpar N: each layer's heads and MLP split over the N processes
    static Run r;  // zeroed
    setup_model(&o, &r);
    setup_generation(&o, &r);
    if (o.attention_map[0]) {
        if (dist.rank == 0) draw_attention_map(&o, &r);  // N processes: one picture
    } else {
        setup_data(&o, &r);
        dist_setup_done();
        catch_stop_signals();  // Ctrl-C: training saves and stops; evaluation and generation stop
        int evaluate = o.max_steps == 0 && o.gen_tokens == 0 && r.have_val;  // -x 0: generate, or evaluate
        float val_loss = evaluate ? validation_loss(&r.model, &r.val, r.val_batches) : 0.0f;
        if (o.max_steps > 0) train(&o, &r);
        else if (o.gen_tokens > 0) sample(&o, &r);
        if (stop_signal && o.max_steps == 0) stop_together("stopped by signal %d", stop_signal);
        if (evaluate) print_evaluation(&o, val_loss, r.val_batches);
    }
    export_hf(&o, &r);  // -hf DIR
    if (dist_stop_agreed())  // during the final save or the export, which finished first (every process)
        stop_together("stopped by signal %d after the run's last write: its files are whole", stop_signal);
    run_free(&r, &o);
    return 0;
}
#endif
