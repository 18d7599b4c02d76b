/*
util/cli.h: the command line: every flag, its default and its check. Plumbing. The letters
are those of llm.c's train_gpt2.cu, plus flags for the model shape and more. Every flag of
llm.c's is either here with llm.c's meaning (FLAGS) or in LLMC_OFF: accepted at the value
that changes nothing on a CPU (-r 0, -z 0, -h 0, ...), refused at any other with one line.
The README's table "llm.c's flags here" says which is which.
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
#include "dataloader.h"

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
    const char* schedule_word;   // -k cosine | linear | constant | wsd
    int schedule;                // its index in LR_SCHEDULES (train_gpt2.c's LR_*)
    float weight_decay;          // -c
    int max_steps;               // -x (-1 = one epoch of the training data, as llm.c's)
    int total_batch;             // -d tokens per step (-1 = B*T*processes: no accumulation)
    int grad_accum;              // micro-batches per step: -d / (B*T*processes)
    int val_every, val_batches;  // -v -m
    int sample_every, gen_tokens;// -s -g
    int checkpoint_every;        // -n
    int resume;                  // -y
    int keep_checkpoints;        // -nk (0 = all)
    int major_every;             // -nm: checkpoints at multiples of this are never removed (0 = none)
    int overwrite;               // -ow 1: replace another run's checkpoints in -o
    int force_vocab;             // -fv 1: train on tokens that look like another vocabulary's
    int layers, heads, channels, max_seq_len; // -nl -nh -nc -mt (fresh model)
    float grad_clip;             // -gc
    long long seed;              // -sd
    float dropout;               // -dr
    float beta1, beta2, eps;     // -b1 -b2 -ae
    float temperature;           // -tp
    int top_k;                   // -tk
    const char* prompt;          // -pr
    int shuffle;                 // -sh
    int overfit;                 // -a 1: every step trains on the first batch of -j (llm.c's)
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
// the words of -k, in the order of train_gpt2.c's LR_*
static const char* const LR_SCHEDULES[4] = {"cosine", "linear", "constant", "wsd"};
static const char* const VARIANT_FLAGS[3] = {"-pe", "-ln", "-act"};
static const char* const VARIANT_WORDS[3][3] = {{"learned", "rope", "sin"}, {"pre", "post", NULL},
                                                {"gelu", "relu", NULL}};

// validation with -m 0 reads at most this many tokens: a 100M-token shard is not read whole
// at every validation, yet every batch of Tiny Shakespeare's (111,540 tokens) is
#define VAL_TOKENS 131072
#define VAL_TOKENS_TEXT "131072"

typedef struct { const char* name; char type; size_t offset; const char* help; } Flag;
#define OPT(field) offsetof(Options, field)
static const Flag FLAGS[] = {
    {"-i", 's', OPT(train_path), "training tokens (llm.c token file)"},
    {"-j", 's', OPT(val_path), "validation tokens"},
    {"-tok", 's', OPT(tokenizer_path), "tokenizer (llm.c tokenizer file)"},
    {"-e", 's', OPT(init), "start from this llm.c checkpoint or Hugging Face model.safetensors, or a fresh "
                           "d12/d24/d36/d48; "
                           "default: a fresh model shaped by -nl -nh -nc -mt"},
    {"-o", 's', OPT(out_dir), "output directory for checkpoints (\"\" = none)"},
    {"-b", 'i', OPT(B), "batch size B"},
    {"-t", 'i', OPT(T), "sequence length T"},
    {"-l", 'f', OPT(lr), "peak learning rate"},
    {"-u", 'i', OPT(warmup), "warmup steps"},
    {"-q", 'f', OPT(final_lr_frac), "final learning rate as a fraction of the peak (the decay's end)"},
    {"-k", 's', OPT(schedule_word), "learning-rate schedule after the warmup: cosine | linear | constant "
                                    "(no warmup) | wsd (llm.c's)"},
    {"-c", 'f', OPT(weight_decay), "AdamW weight decay (matrices only)"},
    {"-d", 'i', OPT(total_batch), "tokens per step, a multiple of B*T*processes: gradient accumulation "
                                  "(-1 = B*T*processes)"},
    {"-x", 'i', OPT(max_steps), "training steps (0 = none: generate with -g, or evaluate; -1 = one epoch)"},
    {"-v", 'i', OPT(val_every), "validation loss every N steps (0 = only at the end)"},
    {"-m", 'i', OPT(val_batches), "validation batches (0 = as many as fit in " VAL_TOKENS_TEXT " tokens; "
                                  "-1 = the whole file)"},
    {"-s", 'i', OPT(sample_every), "sample every N steps (0 = only at the end)"},
    {"-g", 'i', OPT(gen_tokens), "tokens per sample (0 = no samples)"},
    {"-n", 'i', OPT(checkpoint_every), "checkpoint every N steps (0 = only at the end)"},
    {"-y", 'i', OPT(resume), "1 = resume from the newest checkpoint in -o"},
    {"-nk", 'i', OPT(keep_checkpoints), "keep only the newest N checkpoints in -o (0 = all)"},
    {"-nm", 'i', OPT(major_every), "with -nk: never remove the checkpoints of steps that are multiples of N"},
    {"-ow", 'i', OPT(overwrite), "1 = start afresh in an -o that holds another run's checkpoints, "
                                 "removing them"},
    {"-fv", 'i', OPT(force_vocab), "1 = train on tokens that look like another vocabulary's"},
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
    {"-a", 'i', OPT(overfit), "1 = overfit one batch: every step takes the first batch of -j (debugging)"},
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

// llm.c's flags that have nothing to do on a CPU: accepted at the values listed (llm.c's
// "off" or its default, which is what happens here), refused at any other. "" = refused
// whatever the value; NULL (-pn) = the number of processes, which mpirun sets here.
typedef struct { const char* name; const char* accepted; const char* meaning; } LlmcFlag;
static const LlmcFlag LLMC_OFF[] = {
    {"-h", "0", "HellaSwag evaluation"},
    {"-sl", "0", "skip updates whose loss is an outlier"},
    {"-sg", "0", "skip updates whose gradient norm is an outlier"},
    {"-f", "0 1", "TF32 matmuls; a CPU has none: fp32, or -prec bf16"},
    {"-w", "1", "float32 master weights; the weights are float32 here"},
    {"-ge", "-1 0", "GELU fused into the matmul on the GPU"},
    {"-z", "0", "ZeRO optimizer-state sharding"},
    {"-r", "0", "recompute activations in the backward; here all are kept"},
    {"-lg", "-1", "logging GPU information"},
    {"-pn", NULL, "number of processes; here mpirun -np N sets it"},
    {"-pg", "", "GPUs per node"},
    {"-pi", "", "NCCL's initialisation"}, {"-pm", "", "NCCL's initialisation"},
    {"-ps", "", "NCCL's server address"},
    {"-pf", "", "NCCL's shared folder"}, {"-pp", "", "NCCL's shared folder"},
};
#define NUM_LLMC_OFF ((int)(sizeof LLMC_OFF / sizeof LLMC_OFF[0]))

static Options default_options(void) {
    Options o = {
        .train_path = "data/tiny_shakespeare_train.bin", .val_path = "data/tiny_shakespeare_val.bin",
        .tokenizer_path = "data/tiny_shakespeare_tokenizer.bin", .init = "", .out_dir = "out",
        .B = 12, .T = 64, .lr = 1e-3f, .warmup = 100, .final_lr_frac = 0.5f, .schedule_word = "cosine",
        .weight_decay = 0.0f,
        .max_steps = 2000, .total_batch = -1, .grad_accum = 1, .val_every = 250, .val_batches = 0,
        .sample_every = 0, .gen_tokens = 400,
        .checkpoint_every = 0, .resume = 0, .layers = 4, .heads = 4, .channels = 128, .max_seq_len = 0,
        .grad_clip = 1.0f, .seed = 1337, .dropout = 0.0f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f,
        .temperature = 1.0f, .top_k = 0, .prompt = "", .shuffle = 1, .attention_map = "", .slide = 1,
        .kv_heads = 0, .pe = "", .ln = "", .act = "", .variant = {-1, -1, -1}, .causal = -1,
        .precision = "fp32", .hf_out = ""};
    return o;
}

// the usage of a program from its table of flags and its defaults (an options struct)
static void print_flag_table(FILE* f, const char* program, const Flag* flags, int n, const void* defaults) {
    fprintf(f, "usage: ./%s [flags]   (every flag takes a value; -h alone or --help: this list)\n", program);
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
    fprintf(f, "llm.c's flags with nothing to do here, accepted only at these values:\n ");
    for (int i = 0; i < NUM_LLMC_OFF; i++)
        if (LLMC_OFF[i].accepted && LLMC_OFF[i].accepted[0])
            fprintf(f, " %s %s", LLMC_OFF[i].name, LLMC_OFF[i].accepted);
    fprintf(f, " -pn <processes>; refused: -pg -pi -pm -ps -pf -pp (README: \"llm.c's flags here\")\n");
}

// the flag named s in a table of n, or NULL
static const Flag* find_flag(const Flag* flags, int n, const char* s) {
    for (int k = 0; k < n; k++)
        if (strcmp(s, flags[k].name) == 0) return &flags[k];
    return NULL;
}

// one flag's value v into its field of the options struct opts: one line naming the flag
// for a value that is not a number
static void parse_flag_value(const Flag* fl, void* opts, const char* v) {
    char* field = (char*)opts + fl->offset;
    char* end;
    errno = 0;
    if (fl->type == 's') { *(const char**)field = v; return; }
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

// fills the options struct opts from argv by the table of flags: one line naming the flag
// for an unknown flag, a missing value or a value that is not a number. -h prints usage.
static inline void parse_flag_table(const Flag* flags, int n, void* opts, int argc, char** argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) { print_usage_to(stdout); exit(0); }
    for (int i = 1; i < argc; i++) {
        const Flag* fl = find_flag(flags, n, argv[i]);
        if (!fl) usage_error("unknown flag '%s'", argv[i]);
        if (i + 1 >= argc) usage_error("flag %s needs a value", argv[i]);
        parse_flag_value(fl, opts, argv[++i]);
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
    {o.weight_decay < 0, "-c (weight decay) must be >= 0"},                                                  \
    {o.checkpoint_every < 0, "-n must be >= 0"}, {o.resume != 0 && o.resume != 1, "-y must be 0 or 1"},     \
    {o.resume && !o.out_dir[0], "-y 1 needs an output directory (-o)"},                                     \
    {o.heads <= 0, "-nh (heads) must be > 0"}, {o.channels <= 0, "-nc (channels) must be > 0"},             \
    {o.grad_clip < 0, "-gc (gradient clip) must be >= 0"}, {o.seed < 0, "-sd (seed) must be >= 0"},         \
    {!(o.dropout >= 0 && o.dropout < 1), "-dr (dropout) must satisfy 0 <= p < 1"},                          \
    {!(o.beta1 >= 0 && o.beta1 < 1), "-b1 must be in [0,1)"},                                               \
    {!(o.beta2 >= 0 && o.beta2 < 1), "-b2 must be in [0,1)"},                                               \
    {o.eps <= 0, "-ae (AdamW epsilon) must be > 0"}, {o.temperature < 0, "-tp (temperature) must be >= 0"}, \
    {o.top_k < 0, "-tk (top-k) must be >= 0"}

// whether v is one of the space-separated values in list (numbers compare as numbers: -sl 0.0)
static int value_in_list(const char* v, const char* list) {
    char* end;
    double x = strtod(v, &end);
    int number = end != v && !*end;
    for (const char* p = list; *p;) {
        size_t n = strcspn(p, " ");
        char word[32];
        snprintf(word, sizeof word, "%.*s", (int)n, p);
        double y = strtod(word, &end);
        if (number ? (end != word && !*end && x == y) : strcmp(v, word) == 0) return 1;
        p += n + (p[n] == ' ');
    }
    return 0;
}

static int is_integer(const char* s) {
    char* end;
    strtol(s, &end, 10);
    return end != s && !*end;
}

// llm.c's flag of LLMC_OFF at value v: "" if accepted, else the reason (one line's part)
static const char* llmc_refusal(const LlmcFlag* fl, const char* v, char* buf, size_t size) {
    char processes[16];
    snprintf(processes, sizeof processes, "%d", dist.size);
    const char* accepted = fl->accepted ? fl->accepted : processes;
    if (accepted[0] && value_in_list(v, accepted)) return "";
    if (!accepted[0])
        snprintf(buf, size, "%s %s is not supported here (llm.c: %s)", fl->name, v, fl->meaning);
    else snprintf(buf, size, "%s %s is not supported here, only %s %s (llm.c: %s)", fl->name, v, fl->name,
                  accepted, fl->meaning);
    return buf;
}

Options parse_args(int argc, char** argv) {
    Options o = default_options();
    print_usage_to = print_usage;
    char unknown[1024] = "", refused[2048] = "";
    for (int i = 1; i < argc; i++) {  // help first: -h alone (not llm.c's -h 0) or --help, anywhere
        if (strcmp(argv[i], "--help") == 0 || (strcmp(argv[i], "-h") == 0 && (i + 1 >= argc ||
                                               !is_integer(argv[i + 1])))) { print_usage(stdout); exit(0); }
    }
    for (int i = 1; i < argc; i++) {  // unknown and refused flags: all of them, in one line
        const Flag* fl = find_flag(FLAGS, NUM_FLAGS, argv[i]);
        const LlmcFlag* off = NULL;
        for (int k = 0; k < NUM_LLMC_OFF; k++)
            if (strcmp(argv[i], LLMC_OFF[k].name) == 0) off = &LLMC_OFF[k];
        char why[256];
        if (off && i + 1 < argc && llmc_refusal(off, argv[i + 1], why, sizeof why)[0])
            snprintf(refused + strlen(refused), sizeof refused - strlen(refused), "%s%s",
                     refused[0] ? "; " : "", why);
        if (!fl && !off)
            snprintf(unknown + strlen(unknown), sizeof unknown - strlen(unknown), "%s'%s'",
                     unknown[0] ? ", " : "", argv[i]);
        if (i + 1 < argc && (fl || off || argv[i + 1][0] != '-' || is_integer(argv[i + 1])))
            i++;  // its value (an unknown flag's too, unless a flag follows it)
    }
    if (unknown[0]) usage_error("unknown flag%s %s", strchr(unknown, ',') ? "s" : "", unknown);
    if (refused[0]) { print_usage_to = NULL; usage_error("%s", refused); }
    for (int i = 1; i < argc; i++) {
        const Flag* fl = find_flag(FLAGS, NUM_FLAGS, argv[i]);
        if (i + 1 >= argc) usage_error("flag %s needs a value", argv[i]);
        if (!fl) { i++; continue; }  // llm.c's, accepted above
        parse_flag_value(fl, &o, argv[++i]);
    }
    RangeCheck checks[] = {  // ranges: one line naming the flag
        COMMON_RANGE_CHECKS(o), {o.T <= 0, "-t (sequence length) must be > 0"},
        {o.max_steps < -1, "-x (steps) must be >= 0, or -1"},
        {o.total_batch == 0 || o.total_batch < -1, "-d (tokens per step) must be > 0, or -1"},
        {o.val_every < 0, "-v must be >= 0"}, {o.val_batches < -1, "-m must be >= 0, or -1"},
        {o.sample_every < 0, "-s must be >= 0"}, {o.gen_tokens < 0, "-g must be >= 0"},
        {o.layers <= 0, "-nl (layers) must be > 0"}, {o.max_seq_len < 0, "-mt (maxT) must be >= 0"},
        {o.shuffle != 0 && o.shuffle != 1, "-sh must be 0 or 1"},
        {o.overfit != 0 && o.overfit != 1, "-a must be 0 or 1"},
        {o.overfit && !o.val_path[0], "-a 1 needs -j"},
        {o.slide != 0 && o.slide != 1, "-sw must be 0 or 1"},
        {o.keep_checkpoints < 0, "-nk must be >= 0"}, {o.major_every < 0, "-nm must be >= 0"},
        {o.overwrite != 0 && o.overwrite != 1, "-ow must be 0 or 1"},
        {o.force_vocab != 0 && o.force_vocab != 1, "-fv must be 0 or 1"},
        {o.resume && o.overwrite, "-y 1 resumes the run in -o, -ow 1 replaces it: give one of them"},
        {o.kv_heads < 0, "-kv (key/value heads) must be >= 0"},
        {o.causal < -1 || o.causal > 1, "-causal must be 1 or 0"}};
    check_ranges(checks, sizeof checks / sizeof checks[0]);
    long long micro = (long long)o.B * o.T * dist.size;  // tokens of one forward and backward
    if (o.total_batch > 0 && o.total_batch % micro && (print_usage_to = NULL, 1))
        usage_error("-d %d must be a multiple of B*T%s = %lld", o.total_batch,
                    dist.size > 1 ? "*processes" : "", micro);
    o.grad_accum = o.total_batch > 0 ? (int)(o.total_batch / micro) : 1;
    o.schedule = -1;
    for (int k = 0; k < 4; k++)
        if (strcmp(o.schedule_word, LR_SCHEDULES[k]) == 0) o.schedule = k;
    if (o.schedule < 0)
        usage_error("flag -k: unknown schedule '%s' (cosine, linear, constant, wsd)", o.schedule_word);
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

// the first lines of a training run: its settings and its data (val NULL: no validation)
static void print_training_settings(const Options* o, int threads, const DataLoader* train,
                                    const DataLoader* val, int val_batches) {
    printf("training: B=%d T=%d, %d steps, lr %g (warmup %d, %s to %g), weight decay %g, clip %g, "
           "dropout %g, -prec %s, %d thread%s\n", o->B, o->T, o->max_steps, o->lr, o->warmup,
           o->schedule_word, o->final_lr_frac, o->weight_decay, o->grad_clip, o->dropout, o->precision,
           threads, threads == 1 ? "" : "s");
    printf("data: %s (%zu tokens", o->train_path, train->total_tokens);
    if (train->num_shards > 1) printf(" in %d shards", train->num_shards);
    printf("), ");
    if (!val) printf("no validation\n");
    else printf("%s (%zu tokens, %d validation batches%s)\n", o->val_path, val->total_tokens, val_batches,
                (size_t)val_batches == val->total_batches ? "" : o->val_batches ? " of -m" :
                ", -m 0: at most " VAL_TOKENS_TEXT " tokens; -m -1 = all");
    if (dist.size > 1)
        printf("processes: %d, each B=%d: a global batch of %d rows (util/dist.h)\n", dist.size, o->B,
               dist.size * o->B);
    if (o->grad_accum > 1)
        printf("-d %d: %d micro-batches of %d tokens a step, their gradients summed (accumulation)\n",
               o->total_batch, o->grad_accum, o->B * o->T * dist.size);
}

// the last line of a training run (val_loss NaN: no validation; checkpoint "": none)
static void print_training_done(const Options* o, int steps, double seconds_per_step, float val_loss,
                                const char* checkpoint) {
    printf("done: %d steps, %.1f ms/step (%.0f tok/s)", steps, 1e3 * seconds_per_step,
           (double)o->B * dist.size * o->T * o->grad_accum / seconds_per_step);
    if (dist.allreduce_calls > 0) {  // exposed: waited for after the backward pass; hidden: behind it
        double ms = 1e3 * dist.allreduce_seconds / dist.allreduce_calls;
        printf(", all-reduce %.2f ms/step exposed (%.1f%%)", ms, ms / (10 * seconds_per_step));
        if (dist.buckets)
            printf(" + %.2f ms/step hidden behind the backward pass (buckets of %zu KiB)",
                   1e3 * dist.hidden_seconds / dist.allreduce_calls, DIST_BUCKET_BYTES >> 10);
        else printf(", blocking (DIST_BLOCKING=1)");
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
