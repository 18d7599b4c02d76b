/*
util/cli.h: the command line: every flag, its default and its check. Plumbing. The letters
are those of llm.c's train_gpt2.cu, plus flags for the model shape and more.
*/
#ifndef UTIL_CLI_H
#define UTIL_CLI_H

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io.h"
#include "dist.h"  // dist: the processes of a data-parallel run

typedef struct {
    const char* train_path;      // -i
    const char* val_path;        // -j
    const char* tokenizer_path;  // -tok
    const char* init;            // -e checkpoint file or llm.c descriptor (d12...); "" = fresh model
    const char* out_dir;         // -o
    int B, T;                    // -b -t
    float lr;                    // -l
    int warmup;                  // -u
    float final_lr_frac;         // -q
    float weight_decay;          // -c
    int max_steps;               // -x
    int val_every, val_batches;  // -v -m
    int sample_every, gen_tokens;// -s -g
    int checkpoint_every;        // -n
    int resume;                  // -y
    int layers, heads, channels, max_seq_len; // -nl -nh -nc -mt (fresh model)
    float grad_clip;             // -gc
    long long seed;              // -sd
    float dropout;               // -dr
    float beta1, beta2, eps;     // -b1 -b2 -ae
    float temperature;           // -tp
    int top_k;                   // -tk
    const char* prompt;          // -pr
    int shuffle;                 // -sh
    const char* attention_map;   // -am
    int slide;                   // -sw
    int kv_heads;                // -kv (fresh model; 0 = -nh)
    const char *pe, *ln, *act;   // -pe -ln -act: words ("" = not given)
    int variant[3];              // their indices in VARIANT_WORDS; -1 = not given
    int causal;                  // -causal 1 or 0; -1 = not given
    const char* precision;       // -prec fp32 | bf16: the matmuls' operands (fast/bf16.h)
    int bf16;                    // -prec bf16
    const char* hf_out;          // -hf DIR: write the model in Hugging Face's GPT-2 format ("" = no)
} Options;

// the words of -pe, -ln and -act, in the order of train_gpt2.c's POS_*, LN_* and ACT_*
static const char* const VARIANT_FLAGS[3] = {"-pe", "-ln", "-act"};
static const char* const VARIANT_WORDS[3][3] = {{"learned", "rope", "sin"}, {"pre", "post", NULL},
                                                {"gelu", "relu", NULL}};

typedef struct { const char* name; char type; size_t offset; const char* help; } Flag;
#define OPT(field) offsetof(Options, field)
static const Flag FLAGS[] = {
    {"-i", 's', OPT(train_path), "training tokens (llm.c token file)"},
    {"-j", 's', OPT(val_path), "validation tokens"},
    {"-tok", 's', OPT(tokenizer_path), "tokenizer (llm.c tokenizer file)"},
    {"-e", 's', OPT(init), "start from this llm.c checkpoint, a Hugging Face GPT-2 (.safetensors), "
                           "or a fresh d12/d24/d36/d48; "
                           "default: a fresh model shaped by -nl -nh -nc -mt"},
    {"-o", 's', OPT(out_dir), "output directory for checkpoints (\"\" = none)"},
    {"-b", 'i', OPT(B), "batch size B"},
    {"-t", 'i', OPT(T), "sequence length T"},
    {"-l", 'f', OPT(lr), "peak learning rate"},
    {"-u", 'i', OPT(warmup), "warmup steps"},
    {"-q", 'f', OPT(final_lr_frac), "final learning rate as a fraction of the peak (cosine decay)"},
    {"-c", 'f', OPT(weight_decay), "AdamW weight decay (matrices only)"},
    {"-x", 'i', OPT(max_steps), "training steps (0 = none: generate with -g, or evaluate)"},
    {"-v", 'i', OPT(val_every), "validation loss every N steps (0 = only at the end)"},
    {"-m", 'i', OPT(val_batches), "validation batches (0 = the whole validation file)"},
    {"-s", 'i', OPT(sample_every), "sample every N steps (0 = only at the end)"},
    {"-g", 'i', OPT(gen_tokens), "tokens per sample (0 = no samples)"},
    {"-n", 'i', OPT(checkpoint_every), "checkpoint every N steps (0 = only at the end)"},
    {"-y", 'i', OPT(resume), "1 = resume from the newest checkpoint in -o"},
    {"-nl", 'i', OPT(layers), "fresh model: layers"},
    {"-nh", 'i', OPT(heads), "fresh model: heads"},
    {"-nc", 'i', OPT(channels), "fresh model: channels"},
    {"-mt", 'i', OPT(max_seq_len), "fresh model: maxT (0 = T)"},
    {"-gc", 'f', OPT(grad_clip), "clip the global gradient norm to this (0 = off)"},
    {"-sd", 'L', OPT(seed), "seed for initialisation, dropout, shuffling and sampling"},
    {"-dr", 'f', OPT(dropout), "dropout probability, 0 <= p < 1 (training only)"},
    {"-b1", 'f', OPT(beta1), "AdamW beta1"},
    {"-b2", 'f', OPT(beta2), "AdamW beta2"},
    {"-ae", 'f', OPT(eps), "AdamW epsilon"},
    {"-tp", 'f', OPT(temperature), "sampling temperature (0 = greedy)"},
    {"-tk", 'i', OPT(top_k), "sample from the k most likely tokens (0 = all)"},
    {"-pr", 's', OPT(prompt), "prompt to continue (encoded with the tokenizer, -tok)"},
    {"-sh", 'i', OPT(shuffle), "1 = random windows in a random order each epoch; "
                               "0 = llm.c's sequential batches"},
    {"-sw", 'i', OPT(slide), "1 = when generation fills maxT, keep the newest maxT/2 tokens and go on; "
                             "0 = stop"},
    {"-am", 's', OPT(attention_map), "write the attention maps of the prompt to this SVG file and exit"},
    {"-kv", 'i', OPT(kv_heads), "fresh model: key/value heads, dividing -nh (GQA; 1 = multi-query; 0 = -nh)"},
    {"-pe", 's', OPT(pe), "fresh model: positions learned | rope | sin (\"\" = learned)"},
    {"-ln", 's', OPT(ln), "fresh model: layernorm pre (GPT-2) | post (the original Transformer)"},
    {"-act", 's', OPT(act), "fresh model: MLP non-linearity gelu | relu"},
    {"-causal", 'i', OPT(causal), "1 = causal attention; 0 = no mask, an experiment (doc/variants.md); "
                                  "-1 = the model's"},
    {"-prec", 's', OPT(precision), "matmul operands: fp32 | bf16 (rounded to bfloat16, summed in fp32)"},
    {"-hf", 's', OPT(hf_out), "at the end, write DIR/model.safetensors + config.json (Hugging Face's GPT-2)"},
};
#define NUM_FLAGS ((int)(sizeof FLAGS / sizeof FLAGS[0]))

static Options default_options(void) {
    Options o = {
        .train_path = "data/tiny_shakespeare_train.bin", .val_path = "data/tiny_shakespeare_val.bin",
        .tokenizer_path = "data/tiny_shakespeare_tokenizer.bin", .init = "", .out_dir = "out",
        .B = 12, .T = 64, .lr = 1e-3f, .warmup = 100, .final_lr_frac = 0.5f, .weight_decay = 0.0f,
        .max_steps = 2000, .val_every = 250, .val_batches = 0, .sample_every = 0, .gen_tokens = 400,
        .checkpoint_every = 0, .resume = 0, .layers = 4, .heads = 4, .channels = 128, .max_seq_len = 0,
        .grad_clip = 1.0f, .seed = 1337, .dropout = 0.0f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f,
        .temperature = 1.0f, .top_k = 0, .prompt = "", .shuffle = 1, .attention_map = "", .slide = 1,
        .kv_heads = 0, .pe = "", .ln = "", .act = "", .variant = {-1, -1, -1}, .causal = -1,
        .precision = "fp32", .hf_out = ""};
    return o;
}

// the usage of a program from its table of flags and its defaults (an options struct)
static void print_flag_table(FILE* f, const char* program, const Flag* flags, int n, const void* defaults) {
    fprintf(f, "usage: ./%s [flags]   (every flag takes a value)\n", program);
    for (int i = 0; i < n; i++) {
        const Flag* fl = &flags[i];
        const char* field = (const char*)defaults + fl->offset;
        char def[64];
        if (fl->type == 'i') snprintf(def, sizeof def, "%d", *(const int*)field);
        else if (fl->type == 'L') snprintf(def, sizeof def, "%lld", *(const long long*)field);
        else if (fl->type == 'f') snprintf(def, sizeof def, "%g", *(const float*)field);
        else snprintf(def, sizeof def, "\"%s\"", *(const char* const*)field);
        fprintf(f, "  %-4s %-36s (default %s)\n", fl->name, fl->help, def);
    }
}

static void print_usage(FILE* f) {
    Options d = default_options();
    print_flag_table(f, "train_gpt2", FLAGS, NUM_FLAGS, &d);
}

// fills the options struct opts from argv by the table of flags: one line naming the flag
// for an unknown flag, a missing value or a value that is not a number. -h prints usage.
static void parse_flag_table(const Flag* flags, int n, void* opts, int argc, char** argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) { print_usage_to(stdout); exit(0); }
        const Flag* fl = NULL;
        for (int k = 0; k < n; k++)
            if (strcmp(argv[i], flags[k].name) == 0) fl = &flags[k];
        if (!fl) usage_error("unknown flag '%s'", argv[i]);
        if (i + 1 >= argc) usage_error("flag %s needs a value", argv[i]);
        const char* v = argv[++i];
        char* field = (char*)opts + fl->offset;
        char* end;
        errno = 0;
        if (fl->type == 's') { *(const char**)field = v; continue; }
        if (fl->type == 'f') {
            float x = strtof(v, &end);
            if (end == v || *end || errno || !isfinite(x))
                usage_error("flag %s expects a number, got '%s'", fl->name, v);
            *(float*)field = x;
        } else {
            long long x = strtoll(v, &end, 10);
            if (end == v || *end || errno)
                usage_error("flag %s expects an integer, got '%s'", fl->name, v);
            if (fl->type == 'i' && (x < -2147483647LL || x > 2147483647LL))
                usage_error("flag %s: %s is out of range", fl->name, v);
            if (fl->type == 'i') *(int*)field = (int)x; else *(long long*)field = x;
        }
    }
}

// the words of -pe, -ln and -act ("" = not given) into their indices in VARIANT_WORDS (-1)
static void parse_variant_words(const char* const words[3], int variant[3]) {
    for (int k = 0; k < 3; k++) {
        for (int w = 0; w < 3 && words[k][0] && VARIANT_WORDS[k][w]; w++)
            if (strcmp(words[k], VARIANT_WORDS[k][w]) == 0) variant[k] = w;
        if (words[k][0] && variant[k] < 0)
            usage_error("flag %s: unknown value '%s' (%s, %s%s%s)", VARIANT_FLAGS[k], words[k],
                        VARIANT_WORDS[k][0], VARIANT_WORDS[k][1], VARIANT_WORDS[k][2] ? ", " : "",
                        VARIANT_WORDS[k][2] ? VARIANT_WORDS[k][2] : "");
    }
}

// a flag's value out of range: the first failing check's line, no usage after it
typedef struct { int bad; const char* msg; } RangeCheck;
static void check_ranges(const RangeCheck* checks, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (checks[k].bad) {
            print_usage_to = NULL;
            usage_error("%s", checks[k].msg);
        }
}

// the checks of the flags that train_gpt2 and train_seq2seq share (their options structs
// name them alike): RangeCheck entries for a table
#define COMMON_RANGE_CHECKS(o)                                                                               \
    {o.B <= 0, "-b (batch size) must be > 0"}, {o.lr < 0, "-l (learning rate) must be >= 0"},                \
    {o.warmup < 0, "-u (warmup steps) must be >= 0"},                                                        \
    {o.final_lr_frac < 0 || o.final_lr_frac > 1, "-q (final learning-rate fraction) must be in [0,1]"},     \
    {o.weight_decay < 0, "-c (weight decay) must be >= 0"}, {o.max_steps < 0, "-x (steps) must be >= 0"},   \
    {o.checkpoint_every < 0, "-n must be >= 0"}, {o.resume != 0 && o.resume != 1, "-y must be 0 or 1"},     \
    {o.resume && !o.out_dir[0], "-y 1 needs an output directory (-o)"},                                     \
    {o.heads <= 0, "-nh (heads) must be > 0"}, {o.channels <= 0, "-nc (channels) must be > 0"},             \
    {o.grad_clip < 0, "-gc (gradient clip) must be >= 0"}, {o.seed < 0, "-sd (seed) must be >= 0"},         \
    {!(o.dropout >= 0 && o.dropout < 1), "-dr (dropout) must satisfy 0 <= p < 1"},                          \
    {!(o.beta1 >= 0 && o.beta1 < 1), "-b1 must be in [0,1)"},                                               \
    {!(o.beta2 >= 0 && o.beta2 < 1), "-b2 must be in [0,1)"},                                               \
    {o.eps <= 0, "-ae (AdamW epsilon) must be > 0"}, {o.temperature < 0, "-tp (temperature) must be >= 0"}, \
    {o.top_k < 0, "-tk (top-k) must be >= 0"}

Options parse_args(int argc, char** argv) {
    Options o = default_options();
    print_usage_to = print_usage;
    parse_flag_table(FLAGS, NUM_FLAGS, &o, argc, argv);
    // ranges: one line naming the flag
    RangeCheck checks[] = {
        COMMON_RANGE_CHECKS(o), {o.T <= 0, "-t (sequence length) must be > 0"},
        {o.val_every < 0, "-v must be >= 0"}, {o.val_batches < 0, "-m must be >= 0"},
        {o.sample_every < 0, "-s must be >= 0"}, {o.gen_tokens < 0, "-g must be >= 0"},
        {o.layers <= 0, "-nl (layers) must be > 0"}, {o.max_seq_len < 0, "-mt (maxT) must be >= 0"},
        {o.shuffle != 0 && o.shuffle != 1, "-sh must be 0 or 1"},
        {o.slide != 0 && o.slide != 1, "-sw must be 0 or 1"},
        {o.kv_heads < 0, "-kv (key/value heads) must be >= 0"},
        {o.causal < -1 || o.causal > 1, "-causal must be 1 or 0"}};
    check_ranges(checks, sizeof checks / sizeof checks[0]);
    o.bf16 = strcmp(o.precision, "bf16") == 0;
    if (!o.bf16 && strcmp(o.precision, "fp32") != 0)
        usage_error("flag -prec: unknown value '%s' (fp32, bf16)", o.precision);
    const char* words[3] = {o.pe, o.ln, o.act};
    parse_variant_words(words, o.variant);
    return o;
}

// The block variants from the flags into a model's settings (train_gpt2.c's GPT2Config):
// *settings[] are the -pe, -ln, -act indices, the key/value heads and the mask (0 causal,
// 1 none). A fresh model takes the flags (GPT-2's choice where one is not given); a loaded
// model keeps its own, and a flag that contradicts it is an error, except -causal, which
// may switch the mask of a trained model (to evaluate the -causal 0 experiment).
// heads and channels: the fresh model's, to check -kv and -pe rope against them.
static void apply_variant_flags(const Options* o, int* settings[5], int fresh, const char* source,
                                int heads, int channels) {
    int given[4] = {o->variant[0], o->variant[1], o->variant[2], o->kv_heads ? o->kv_heads : -1};
    const char* flags[4] = {"-pe", "-ln", "-act", "-kv"};
    for (int i = 0; i < 4; i++) {
        if (fresh && given[i] >= 0) *settings[i] = given[i];
        else if (given[i] >= 0 && *settings[i] != given[i])
            usage_error("%s: the model in '%s' was built otherwise; a block variant is chosen when a model "
                        "is created (leave %s out, or start a fresh model)", flags[i], source, flags[i]);
    }
    if (o->causal >= 0) *settings[4] = !o->causal;
    if (fresh && o->kv_heads && heads % o->kv_heads)
        usage_error("-kv %d must divide the number of heads (-nh) %d", o->kv_heads, heads);
    if (fresh && o->variant[0] == 1 && channels % heads == 0 && (channels / heads) % 2)
        usage_error("-pe rope rotates pairs of channels: the head size -nc/-nh = %d must be even",
                    channels / heads);
}

// the model's block variants (nothing for GPT-2), and the warning of -causal 0 (mask 1)
static void print_block_variants(int gpt2, int kv_heads, int pos, int ln, int act, int mask) {
    if (!gpt2)
        printf("block: %d key/value heads, positions %s, %s-LN, %s, %s attention\n", kv_heads,
               VARIANT_WORDS[0][pos], VARIANT_WORDS[1][ln], VARIANT_WORDS[2][act],
               mask ? "unmasked" : "causal");
    if (mask)
        printf("warning: -causal 0: without the mask each position reads the token it must predict; the "
               "training loss collapses while generation, which stays causal, is nonsense\n");
}

// the first lines of a training run: its settings and its data
static void print_training_settings(const Options* o, int threads, size_t train_tokens, int have_val,
                                    size_t val_tokens, int val_batches) {
    printf("training: B=%d T=%d, %d steps, lr %g (warmup %d, cosine to %g), weight decay %g, clip %g, "
           "dropout %g, %d thread%s\n", o->B, o->T, o->max_steps, o->lr, o->warmup, o->final_lr_frac,
           o->weight_decay, o->grad_clip, o->dropout, threads, threads == 1 ? "" : "s");
    printf("data: %s (%zu tokens), %s (%zu tokens, %d validation batches)\n", o->train_path, train_tokens,
           have_val ? o->val_path : "no validation", val_tokens, val_batches);
    if (dist.size > 1)
        printf("processes: %d, each B=%d: a global batch of %d rows (util/dist.h)\n", dist.size, o->B,
               dist.size * o->B);
}

// the last line of a training run (val_loss NaN: no validation; checkpoint "": none)
static void print_training_done(const Options* o, int steps, double seconds_per_step, float val_loss,
                                const char* checkpoint) {
    printf("done: %d steps, %.1f ms/step (%.0f tok/s)", steps, 1e3 * seconds_per_step,
           o->B * dist.size * o->T / seconds_per_step);
    if (dist.allreduce_calls > 0) {
        double ms = 1e3 * dist.allreduce_seconds / dist.allreduce_calls;
        printf(", all-reduce %.2f ms/step (%.1f%%)", ms, ms / (10 * seconds_per_step));
    }
    if (!isnan(val_loss)) printf(", final val loss %.4f", val_loss);
    if (checkpoint[0]) printf(", checkpoint %s", checkpoint);
    printf("\n");
}

// -e d12, d24, d36, d48: llm.c's descriptors of fresh models, GPT-2 124M's shape and up.
// Returns 0 if s is not a descriptor (then it names a checkpoint file), 1 after setting
// the shape (maxT 1024), and stops with an error for an unknown depth.
int parse_model_descriptor(const char* s, int* layers, int* heads, int* channels, int* max_seq_len) {
    int depth;
    char extra;
    if (sscanf(s, "d%d%c", &depth, &extra) != 1) return 0;
    int all_channels[] = {768, 1024, 1280, 1600}, all_heads[] = {12, 16, 20, 25}, depths[] = {12, 24, 36, 48};
    for (int i = 0; i < 4; i++) {
        if (depth == depths[i]) {
            *layers = depth;
            *heads = all_heads[i];
            *channels = all_channels[i];
            *max_seq_len = 1024;
            return 1;
        }
    }
    die("-e %s: unknown model descriptor (llm.c's are d12, d24, d36, d48)", s);
    return 0;
}

#endif
