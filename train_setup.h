/*
train_setup.h: a run's setup from the command line, the plumbing of train_gpt2.c's program
section (it is included there, after the model, and uses it): the model resumed, loaded or
fresh, with its tokenizer; the sampler, KV cache and prompt; the training and validation
data; and run_free. A reader of the model may skip it: train() and main() in train_gpt2.c
show what each part is for.
*/
#ifndef TRAIN_SETUP_H
#define TRAIN_SETUP_H

#include "util/hf_gpt2.h"  // -e model.safetensors, -hf DIR: Hugging Face's GPT-2 checkpoints

#define GPT2_TOKENIZER "data/gpt2_tokenizer.bin"  // GPT-2's 50257 tokens (data/make_gpt2_tokenizer.js)

// everything a run holds: the model and what feeds it, what samples from it
typedef struct {
    GPT2 model;
    TrainState state;            // where training stands (step 0 unless resumed)
    int resume_step;             // the checkpoint resumed from, or -1
    char last_checkpoint[4096];  // the newest checkpoint written or resumed from
    Tokenizer tokenizer;
    int have_tokenizer;          // loaded, and its vocabulary matches the model's
    Sampler sampler;
    KVCache kv;
    int* prompt;                 // (maxT) the tokens generation starts from
    int prompt_len;
    DataLoader train, val;
    int have_val, val_batches;
    AdamWConfig adamw;           // from the flags
    LossHistory history;         // every step's loss and learning rate, the validation losses
} Run;

// the model: resumed from -o, loaded with -e, or fresh; with the tokenizer that names
// its vocabulary
void setup_model(const Options* o, Run* r) {
    struct stat sb;
    int default_tokenizer = !flag_given(o, "-tok");
    r->resume_step = o->resume ? latest_checkpoint(o->out_dir, 1) : -1;
    if (o->resume && r->resume_step < 0)
        printf("-y 1: no checkpoint in '%s' yet, starting from the beginning\n", o->out_dir);
    GPT2Config fresh = {.max_seq_len = o->max_seq_len ? o->max_seq_len : o->T, .num_layers = o->layers,
                        .num_heads = o->heads, .channels = o->channels};
    int is_fresh = r->resume_step < 0 && (!o->init[0] || parse_model_descriptor(o->init, &fresh.num_layers,
                                             &fresh.num_heads, &fresh.channels, &fresh.max_seq_len));
    if (is_fresh) {
        require_file(o->tokenizer_path, "-tok", !flag_given(o, "-tok"));
        tokenizer_init(&r->tokenizer, o->tokenizer_path);  // a fresh model takes its vocabulary from it
        r->have_tokenizer = 1;
    }
    if (r->resume_step >= 0) {
        snprintf(r->last_checkpoint, sizeof r->last_checkpoint, "%s/model_%08d.bin", o->out_dir,
                 r->resume_step);
        gpt2_build_from_checkpoint(&r->model, r->last_checkpoint);
    } else if (!is_fresh) {
        gpt2_build_from_file(&r->model, o->init);  // llm.c's checkpoint, or Hugging Face's .safetensors
    } else {
        fresh.vocab_size = r->tokenizer.vocab_size;
        fresh.padded_vocab_size = (r->tokenizer.vocab_size + 127) / 128 * 128;
        int* settings[5] = {&fresh.pos_encoding, &fresh.ln_place, &fresh.activation, &fresh.num_kv_heads,
                            &fresh.mask};
        apply_variant_flags(o, settings, 1, "", fresh.num_heads, fresh.channels);
        gpt2_init_random(&r->model, fresh, (uint64_t)o->seed);
    }
    GPT2Config* mc = &r->model.config;  // a loaded model: the flags must agree with it (-causal may switch)
    int* settings[5] = {&mc->pos_encoding, &mc->ln_place, &mc->activation, &mc->num_kv_heads, &mc->mask};
    const char* source = r->last_checkpoint[0] ? r->last_checkpoint : o->init;
    if (!is_fresh) apply_variant_flags(o, settings, 0, source, 0, 0);
    if (!is_fresh || o->init[0])  // a loaded model, or llm.c's descriptor (d12...): its shape, not -nl ...
        check_shape_given(o, source, mc->num_layers, mc->num_heads, mc->channels, mc->max_seq_len);
    GPT2Config c = r->model.config;
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
    if (o->hf_out[0]) {  // -hf: refused now rather than after training
        hf_check_representable(c, "-hf");
        if (dist.rank == 0) check_output_dir(o->hf_out, "-hf");
    }
    if (o->T > c.max_seq_len && (o->max_steps != 0 || o->gen_tokens == 0) && !o->attention_map[0])
        die("-t %d is larger than the model's maxT %d", o->T, c.max_seq_len);
    if (r->have_tokenizer && r->tokenizer.vocab_size != c.vocab_size) {
        printf("note: tokenizer '%s' has %d tokens, the model %d: samples are printed as token ids\n",
               tokenizer_path, r->tokenizer.vocab_size, c.vocab_size);
        tokenizer_free(&r->tokenizer);
        r->have_tokenizer = 0;
    }
    dist_shards_setup(r->model.num_parameters, SQUARES_CHUNKS);  // -z 1: this process's shard
    r->model.dropout_p = o->dropout;
    r->model.dropout_seed = (uint64_t)o->seed;
    r->model.dropout_row0 = dist.rank * o->B;
    r->model.grad_accum = o->grad_accum;  // -d: each micro-batch's gradients weigh 1/grad_accum
    if (r->resume_step >= 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/state_%08d.bin", o->out_dir, r->resume_step);
        gpt2_allocate_moments(&r->model);
        size_t n = r->model.num_parameters, lo = dist_shard_begin(), shard = dist_shard_end(n) - lo;
        float* m = dist.zero ? mallocCheck(n * sizeof(float)) : r->model.m_memory;  // -z 1: the file's
        float* v = dist.zero ? mallocCheck(n * sizeof(float)) : r->model.v_memory;  // whole moments
        read_train_state(path, &r->state, m, v, n);
        if (dist.zero) {  // this process keeps its shard of them (util/dist.h)
            memcpy(r->model.m_memory, m + lo, shard * sizeof(float));
            memcpy(r->model.v_memory, v + lo, shard * sizeof(float));
            free(m), free(v);
        }
        printf("resuming from %s at step %d\n", r->last_checkpoint, r->state.step);
    }
    printf("model: L=%d NH=%d C=%d maxT=%d V=%d (padded %d), %.2fM parameters, -prec %s, matmul kernel %s\n",
           c.num_layers, c.num_heads, c.channels, c.max_seq_len, c.vocab_size, c.padded_vocab_size,
           r->model.num_parameters / 1e6, o->precision, GEMM_PRODUCTS_NAME);
    print_block_variants(is_gpt2(c), c.num_kv_heads, c.pos_encoding, c.ln_place, c.activation, c.mask);
}

// sampler, KV cache and the prompt (the end-of-text token when there is none)
void setup_generation(const Options* o, Run* r) {
    GPT2Config c = r->model.config;
    sampler_init(&r->sampler, c.vocab_size, o->temperature, o->top_k, (uint64_t)o->seed ^ 0x5A4D504CULL);
    if (r->resume_step >= 0) r->sampler.rng = r->state.sampler_rng;
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
    return (TrainState){step, o->B * dist.size * o->grad_accum, o->T, r->train.epoch, r->train.batch_index,
                        r->sampler.rng, (uint64_t)o->seed, o->shuffle, r->train.total_tokens, o->max_steps};
}

// -o holds checkpoints and this run neither resumes them (-y 1) nor replaces them (-ow 1):
// refuse, rather than mix two runs' checkpoints and loss curves
static void protect_output_dir(const Options* o) {
    int newest = latest_checkpoint(o->out_dir, 0);
    if (newest < 0 || o->resume) return;
    if (!o->overwrite)
        die("-o '%s' holds the checkpoints of another run (the newest of step %d): resume it with -y 1, "
            "replace it with -ow 1, or choose another -o", o->out_dir, newest);
    printf("-ow 1: removed %d checkpoint(s) of another run from '%s'\n", prune_checkpoints(o->out_dir, 0, 0),
           o->out_dir);
}

// the validation batches: -m, or (-m 0) as many as fit in VAL_TOKENS tokens, or (-m -1) all
static int validation_batches(const Options* o, const DataLoader* val) {
    size_t all = val->total_batches, fit = VAL_TOKENS / ((size_t)val->B * val->T);
    size_t n = o->val_batches > 0 ? (size_t)o->val_batches : o->val_batches < 0 ? all : fit > 0 ? fit : 1;
    return (int)(n < all ? n : all);
}

// -y 1 with another -x than the run was started with: the schedule is computed for the new
// -x from here on (as llm.c's), so the learning rate jumps; one line says by how much
static void print_schedule_change(const AdamWConfig* a, int old_steps, int step) {
    float before = learning_rate(a->schedule, step, a->lr, a->warmup, old_steps, a->final_lr_frac);
    float now = learning_rate(a->schedule, step, a->lr, a->warmup, a->max_steps, a->final_lr_frac);
    printf("note: -x %d, the run was started with -x %d: the learning-rate schedule now ends at step %d "
           "(at step %d the learning rate is %.2e, not %.2e)\n", a->max_steps, old_steps, a->max_steps, step,
           now, before);
}

// the training and validation batches, and the optimiser's settings; -x -1 becomes one epoch
void setup_data(Options* o, Run* r) {
    int V = r->model.config.vocab_size;
    r->have_val = o->val_path[0] && (o->max_steps != 0 || o->gen_tokens == 0);
    int B = o->B * dist.size;  // N processes: the global batch of N x B rows
    const char* flags = dist.size > 1 ? "-b times the processes, -t" : "-b, -t";
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
    if (r->resume_step >= 0 && o->max_steps > 0) {  // the state must be this run's
        check_resumed_state(&r->state, train_state(o, r, r->resume_step), r->last_checkpoint);
        dataloader_seek(&r->train, r->state.epoch, r->state.batch_index);
        if (r->state.step >= o->max_steps)
            printf("-y 1: the checkpoint is at step %d, at or past -x %d: nothing to train\n", r->state.step,
                   o->max_steps);
        else if (r->state.max_steps && r->state.max_steps != o->max_steps)
            print_schedule_change(&r->adamw, r->state.max_steps, r->state.step);
    }
    history_init(&r->history, o->max_steps, r->resume_step >= 0 ? o->out_dir : NULL, r->state.step);
    if (o->out_dir[0] && o->max_steps > 0 && dist.rank == 0) {
        check_output_dir(o->out_dir, "-o");  // fail now, not at the end
        protect_output_dir(o);
    }
}

// -hf DIR: the model as Hugging Face's GPT-2 (after training, if any)
void export_hf(const Options* o, const Run* r) {
    if (!o->hf_out[0] || dist.rank != 0) return;  // N processes: the weights are the same
    gpt2_write_safetensors(&r->model, o->hf_out);
    printf("wrote %s/model.safetensors and %s/config.json (Hugging Face's GPT-2)\n", o->hf_out, o->hf_out);
}

void run_free(Run* r, const Options* o) {
    free(r->prompt); sampler_free(&r->sampler); history_free(&r->history);
    if (o->gen_tokens > 0) kvcache_free(&r->kv);
    if (r->have_tokenizer) tokenizer_free(&r->tokenizer);
    if (o->max_steps > 0) dataloader_free(&r->train);
    if (r->have_val) dataloader_free(&r->val);
    gpt2_free(&r->model);
}

#endif
