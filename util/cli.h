/*
util/cli.h: the command line of both programs: every flag, its default and its check.
Plumbing. train_gpt2's letters are those of llm.c's train_gpt2.cu, plus flags for the model
shape and more. Every flag of llm.c's is either here with llm.c's meaning (FLAGS) or in
LLMC_OFF: accepted at the value that changes nothing on a CPU (-r 0, -z 0, -h 0, ...),
refused at any other with one line. doc/usage.md's table "llm.c's flags here" says which is
which. train_seq2seq's flags (SEQ2SEQ_FLAGS) are its own rows and, where a flag means the
same in both programs, a row that only names FLAGS' row: each such flag is defined once.
Both programs fill the same Options.
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
    int ff;                      // -ff (fresh model): the MLP's hidden width d_ff; 0 = 4C
    const char *pe, *ln, *act;   // -pe -ln -act: words ("" = not given)
    int variant[3];              // their indices in VARIANT_WORDS; -1 = not given
    int causal;                  // -causal 1 or 0; -1 = not given
    const char* att_scale_word;  // -as sqrt | none | a number ("" = not given)
    float att_scale;             // its value: 0 = sqrt (1/sqrt(hs)), none = 1; -1 = not given
    const char* precision;       // -prec fp32 | bf16: the matmuls' operands (fast/bf16.h)
    int bf16;                    // -prec bf16
    const char* kernels;         // -kernels fast | plain: which code computes the matrix products
    int plain;                   // -kernels plain
    const char* hf_out;          // -hf DIR: write the model in Hugging Face's GPT-2 format ("" = no)
    int zero;                    // -z 1: AdamW's state sharded over the processes (-1: not given)
    int zero_gather;             // -zg 1: -z 1's gather of the weights overlapped with the forward pass
    int tpar;                    // -tpar N: each layer's heads and MLP split over N processes (1: no)
    float deadline;              // -dt: seconds a process waits for the others in a collective
    int enc_layers, dec_layers;  // train_seq2seq's -nle -nld: its stacks' layers (0 = -nl)
    int eval_pairs, examples;    // train_seq2seq's -ne -g: held-out pairs to evaluate, to print
    int embed_scale;             // train_seq2seq's -es: 1, 0, or -1 = not given
    int freeze_encoder;          // train_seq2seq's -fe
    const char* optimizer;       // train_seq2seq's -opt adamw | sgd
    unsigned long long given;    // bit k: a flag named as FLAGS[k] was on the command line
} Options;

// the words of -pe, -ln and -act, in the order of train_gpt2.c's POS_*, LN_* and ACT_*
// the words of -k, in the order of train_gpt2.c's LR_*
static const char* const LR_SCHEDULES[4] = {"cosine", "linear", "constant", "wsd"};
static const char* const VARIANT_FLAGS[3] = {"-pe", "-ln", "-act"};
#define MAX_VARIANT_WORDS 8  // each row ends at its first NULL
static const char* const VARIANT_WORDS[3][MAX_VARIANT_WORDS] = {{"learned", "rope", "sin"}, {"pre", "post"},
                                                                {"gelu", "relu", "relu2"}};

// -ff's largest value: 4C for the largest C (1 << 16), so that no size overflows
#define FF_MAX (1 << 18)
#define FF_MAX_TEXT "262144"

// validation with -m 0 reads at most this many tokens: a 100M-token shard is not read whole
// at every validation, yet every batch of Tiny Shakespeare's (111,540 tokens) is
#define VAL_TOKENS 131072
#define VAL_TOKENS_TEXT "131072"

// A flag: its name, its type ('s' string, 'i' int, 'L' long long, 'f' float) and field,
// `help` for -h (one line of an 80-column terminal), `def` the default in words where its
// value alone would not say it (-pe "" is learned positions; NULL: the value), `readme`
// its meaning at length for doc/usage.md's table (NULL: help). One table gives both -h and
// doc/usage.md's table (`./train_gpt2 -h md` prints it; make test compares the two). A row
// with a name alone ({.name = "-l"}, in SEQ2SEQ_FLAGS) stands for FLAGS' row of that name.
typedef struct {
    const char* name; char type; size_t offset; const char* help; const char* def; const char* readme;
} Flag;
#define OPT(field) offsetof(Options, field)
static const Flag FLAGS[] = {
    {"-i", 's', OPT(train_path), "training tokens (llm.c token file, or a glob)", NULL,
     "training tokens: an llm.c token file, or a glob pattern over shards (`'fineweb_train_*.bin'`, "
     "quoted), walked in sorted order; a default path not found here is looked for beside the program"},
    {"-j", 's', OPT(val_path), "validation tokens, a file or a glob (\"\" = no validation)", NULL,
     "validation tokens, a file or a pattern (`\"\"` = no validation); a default path not found here is "
     "looked for beside the program"},
    {"-tok", 's', OPT(tokenizer_path), "tokenizer (llm.c tokenizer file)",
     "data/tiny_shakespeare_tokenizer.bin (GPT-2's for its models)",
     "tokenizer (llm.c tokenizer file); the default for a loaded model of GPT-2's 50,257 tokens is "
     "`data/gpt2_tokenizer.bin`; a default path not found here is looked for beside the program"},
    {"-e", 's', OPT(init), "start from a checkpoint, model.safetensors or d12..d48",
     "a fresh model",
     "start from this llm.c checkpoint, a Hugging Face GPT-2 `model.safetensors` (with `config.json` "
     "beside it; [GPT-2 124M](gpt2_124m.md)), or a fresh `d12`/`d24`/`d36`/`d48` (llm.c's descriptors)"},
    {"-o", 's', OPT(out_dir), "output directory: checkpoints, loss.svg (\"\" = none)", NULL, NULL},
    {"-b", 'i', OPT(B), "(micro-)batch size B", NULL, NULL},
    {"-t", 'i', OPT(T), "sequence length T", NULL, NULL},
    {"-d", 'i', OPT(total_batch), "tokens per step (gradient accumulation)",
     "B*T*processes",
     "tokens per optimizer step, a multiple of B·T·processes: each step sums the gradients of "
     "`d / (B·T·processes)` micro-batches (gradient accumulation); -1 = B·T·processes"},
    {"-l", 'f', OPT(lr), "peak learning rate", NULL, NULL},
    {"-u", 'i', OPT(warmup), "warm-up steps (linear)", NULL, NULL},
    {"-q", 'f', OPT(final_lr_frac), "final learning rate as a fraction of the peak", NULL,
     "final learning rate as a fraction of the peak (the decay's end)"},
    {"-k", 's', OPT(schedule_word), "schedule after the warm-up: cosine|linear|constant|wsd", NULL,
     "schedule after the warm-up: `cosine`; `linear`; `constant` (no warm-up either); `wsd`, constant "
     "until 80% of the steps, then 1 - sqrt down to `-q` (llm.c's four)"},
    {"-c", 'f', OPT(weight_decay), "AdamW weight decay (matrices and embeddings only)", NULL, NULL},
    {"-x", 'i', OPT(max_steps), "training steps (0 = generate or evaluate; -1 = an epoch)", NULL,
     "training steps; 0 = train nothing (generate with `-g`, or evaluate); -1 = one epoch of `-i` "
     "(llm.c's); on resume (`-y 1`) another `-x` than the run's stretches its schedule, with a note"},
    {"-v", 'i', OPT(val_every), "validation every N steps (0 = only at the end)", NULL, NULL},
    {"-m", 'i', OPT(val_batches), "validation batches (-1 = all)",
     "0 = up to " VAL_TOKENS_TEXT " tokens",
     "validation batches; 0 = as many as fit in 131,072 tokens (all of Tiny Shakespeare's 111,540; "
     "1,024 batches of 4x32 from a 100M-token shard, not 781,250); -1 = the whole file (llm.c's -1)"},
    {"-s", 'i', OPT(sample_every), "sample every N steps (0 = only at the end)", NULL, NULL},
    {"-g", 'i', OPT(gen_tokens), "tokens per sample (0 = no samples)", NULL, NULL},
    {"-n", 'i', OPT(checkpoint_every), "checkpoint every N steps (0 = only at the end)", NULL, NULL},
    {"-y", 'i', OPT(resume), "1 = resume from the newest checkpoint in -o", NULL, NULL},
    {"-nk", 'i', OPT(keep_checkpoints), "keep only the newest N checkpoints in -o (0 = all)", "0 = all",
     "keep only the newest N checkpoints (model + state pairs) in `-o`, removing older ones after each new "
     "one is written (0 = keep all)"},
    {"-nm", 'i', OPT(major_every), "with -nk: keep the checkpoints of multiples of N", "0 = none",
     "with `-nk`: the checkpoints of steps that are multiples of N are never removed"},
    {"-ow", 'i', OPT(overwrite), "1 = replace another run's checkpoints in -o", NULL,
     "1 = start a new run in an `-o` that holds another run's checkpoints, removing them first (without it "
     "such a run is refused)"},
    {"-fv", 'i', OPT(force_vocab), "1 = train on tokens that look like another vocabulary's", NULL,
     "1 = train on a token file whose ids look like another vocabulary's (see Bad input)"},
    {"-nl", 'i', OPT(layers), "fresh model: layers", NULL, NULL},
    {"-nh", 'i', OPT(heads), "fresh model: heads", NULL, NULL},
    {"-nc", 'i', OPT(channels), "fresh model: channels", NULL, NULL},
    {"-mt", 'i', OPT(max_seq_len), "fresh model: maxT, the longest context", "T (-t)", NULL},
    {"-gc", 'f', OPT(grad_clip), "clip the global gradient norm to this (0 = off)", NULL, NULL},
    {"-sd", 'L', OPT(seed), "seed: initialisation, dropout, data order, sampling", NULL, NULL},
    {"-dr", 'f', OPT(dropout), "dropout probability, 0 <= p < 1 (training only)", "0 = off", NULL},
    {"-b1", 'f', OPT(beta1), "AdamW beta1", NULL, NULL},
    {"-b2", 'f', OPT(beta2), "AdamW beta2", NULL, NULL},
    {"-ae", 'f', OPT(eps), "AdamW epsilon", NULL, NULL},
    {"-tp", 'f', OPT(temperature), "sampling temperature (0 = greedy)", NULL, NULL},
    {"-tk", 'i', OPT(top_k), "sample from the k most likely tokens (0 = all)", "0 = all", NULL},
    {"-pr", 's', OPT(prompt), "prompt to continue (encoded with -tok)", "end-of-text token",
     "prompt to continue, encoded with `-tok`: one token per character for a character-level tokenizer, "
     "GPT-2's byte-pair encoding (as tiktoken) for GPT-2's"},
    {"-a", 'i', OPT(overfit), "1 = overfit one batch: every step takes -j's first", NULL,
     "1 = overfit one batch: every step trains on the first batch of `-j` (llm.c's debugging aid)"},
    {"-sh", 'i', OPT(shuffle), "1 = random windows; 0 = llm.c's sequential batches", NULL,
     "1 = random windows in a random order each epoch (nanoGPT-like); 0 = llm.c's sequential batches"},
    {"-sw", 'i', OPT(slide), "at maxT: 1 = keep the newest maxT/2 tokens; 0 = stop", NULL,
     "1 = when generation fills maxT, keep the newest maxT/2 tokens and go on; 0 = stop with a notice"},
    {"-am", 's', OPT(attention_map), "draw the attention maps of -pr into this SVG, and exit", "none",
     "write the attention maps of the prompt `-pr` (required) to this SVG file (a panel per layer and head, "
     "the prompt as labels), print where each head looks, and exit"},
    {"-kv", 'i', OPT(kv_heads), "fresh model: key/value heads, dividing -nh (GQA)", "-nh",
     "fresh model: key/value heads, dividing `-nh` (grouped-query attention; 1 = multi-query; 0 = `-nh`)"},
    {"-ff", 'i', OPT(ff), "fresh model: the MLP's hidden width d_ff", "4C (4 x -nc)",
     "fresh model: the MLP's hidden width d_ff (article 003's toy layer has 2d, GPT-2 and the paper 4d); "
     "a model with another width than 4C is a block variant (version 104, no `-hf`)"},
    {"-pe", 's', OPT(pe), "fresh model: positions learned | rope | sin", "learned",
     "fresh model: positions `learned` (GPT-2's `wpe`), `rope` (rotary, article 004), `sin` (fixed "
     "sinusoids, article 003)"},
    {"-ln", 's', OPT(ln), "fresh model: layernorm pre (GPT-2) | post (Transformer)", "pre",
     "fresh model: layernorm `pre` (GPT-2) or `post` (the original Transformer)"},
    {"-act", 's', OPT(act), "fresh model: the MLP's non-linearity gelu | relu | relu2", "gelu", NULL},
    {"-as", 's', OPT(att_scale_word), "fresh model: attention scores times sqrt | none | VALUE",
     "sqrt: 1/sqrt(hs)",
     "fresh model: the factor on the attention scores before the softmax: `sqrt` = 1/sqrt(hs), the "
     "articles' and GPT-2's; `none` = 1; or a number > 0; another than `sqrt` is a block variant "
     "(checkpoint slot 14; [doc/variants.md](variants.md))"},
    {"-causal", 'i', OPT(causal), "1 = causal; 0 = no mask (an experiment)",
     "the model's (1 when fresh)",
     "1 = causal attention; 0 = no mask (an experiment, with a warning; generation stays causal); with "
     "`-e`, switches a trained model's mask"},
    {"-prec", 's', OPT(precision), "matmul operands: fp32 | bf16 (summed in fp32)", NULL,
     "the matrix products' operands: `fp32`, or `bf16` (rounded to bfloat16 as they are packed, summed "
     "in float32; the weights, the optimizer and everything else stay float32; "
     "[doc/precision.md](precision.md)); may change on resume"},
    {"-kernels", 's', OPT(kernels), "matrix products: fast (fast/) | plain (train_gpt2.c's loops)", "fast",
     "which code computes every matrix product of training and generation: `fast`, the speed engine's "
     "blocked sgemm (`fast/`), or `plain`, the story's own loops (`matmul_forward_plain`, "
     "`matmul_backward_plain`, `matmul_plain`: what you read is what runs; far slower; float32 only)"},
    {"-hf", 's', OPT(hf_out), "at the end, write Hugging Face's GPT-2 files into DIR", "none",
     "at the end (after training, or at once with `-x 0`), write the model to this directory as Hugging "
     "Face's GPT-2: `model.safetensors` + `config.json`; refused at the start for a model with block "
     "variants"},
    {"-z", 'i', OPT(zero), "ZeRO stage: 1 = AdamW's state sharded over the processes",
     "1 under mpirun -np N >= 2",
     "ZeRO stage (llm.c's): 1 = each of the processes of `mpirun -np N ./train_gpt2_mpi` runs AdamW on "
     "its shard of the parameters and keeps that shard's moments (ZeRO-1, the same bits as 0 on 2 "
     "processes); 0 = each runs all of it; needs 2 or more processes; 2 and 3 are refused"},
    {"-zg", 'i', OPT(zero_gather), "-z 1: 1 = the weights' gather overlapped with the forward pass", "0",
     "with `-z 1`: 1 = each owner's new weights travel during the next forward pass, layer by layer, "
     "which waits for each layer's ([doc/mpi.md](mpi.md)); 0 = all of them right after AdamW. The "
     "same bits either way; on one 2-core machine 1 was slower (bench/README.md)"},
    {"-tpar", 'i', OPT(tpar), "tensor parallel: heads and MLP over N processes", "1 = none",
     "tensor parallelism ([doc/mpi.md](mpi.md)): each layer's heads and MLP hidden units split over the N "
     "processes of `mpirun -np N ./train_gpt2_mpi` (N must be the number of processes and divide the "
     "heads, the key/value heads and d_ff); they compute one model on the same rows; 1 = none"},
    {"-dt", 'f', OPT(deadline), "mpirun: seconds to wait for the other processes", NULL,
     "under `mpirun`: the seconds a process waits for the others in one collective call before it ends "
     "the job, naming the process that does not answer (stopped, in a debugger, swapping; "
     "[doc/mpi.md](mpi.md)); raise it for a long sample (`-g`) or checkpoint on a slow disk"},
};
#define NUM_FLAGS ((int)(sizeof FLAGS / sizeof FLAGS[0]))
_Static_assert(sizeof FLAGS / sizeof FLAGS[0] <= 64, "Options.given has a bit per flag");

// the flag named s in a table of n, or NULL
static const Flag* find_flag(const Flag* flags, int n, const char* s) {
    for (int k = 0; k < n; k++)
        if (strcmp(s, flags[k].name) == 0) return &flags[k];
    return NULL;
}

// the row that defines a flag: fl itself, or for a row with a name alone, the row of FLAGS
// it stands for
static const Flag* flag_row(const Flag* fl) {
    const Flag* row = fl->type ? fl : find_flag(FLAGS, NUM_FLAGS, fl->name);
    if (!row) die("flag table: %s has no type and no row in FLAGS", fl->name);  // a typo in the table
    return row;
}

// whether the flag named name was on the command line
static int flag_given(const Options* o, const char* name) {
    for (int k = 0; k < NUM_FLAGS; k++)
        if (strcmp(FLAGS[k].name, name) == 0) return (int)(o->given >> k & 1);
    return 0;
}

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
        .att_scale_word = "", .att_scale = -1.0f, .precision = "fp32", .kernels = "fast", .hf_out = "",
        .zero = -1, .tpar = 1, .deadline = (float)DIST_DEADLINE};
    return o;
}

// a flag's default as -h and doc/usage.md say it: its words (def), or its value
static void flag_default(const Flag* fl, const void* defaults, int markdown, char* out, size_t size) {
    const char* field = (const char*)defaults + fl->offset;
    if (fl->def) snprintf(out, size, "%s", fl->def);
    else if (fl->type == 'i') snprintf(out, size, "%d", *(const int*)field);
    else if (fl->type == 'L') snprintf(out, size, "%lld", *(const long long*)field);
    else if (fl->type == 'f') snprintf(out, size, "%g", *(const float*)field);
    else if (!(*(const char* const*)field)[0]) snprintf(out, size, markdown ? "`\"\"`" : "\"\"");
    else snprintf(out, size, markdown ? "`%s`" : "%s", *(const char* const*)field);
}

// text in lines of at most 80 columns, broken only after a comma or semicolon, or before " ("
static void print_wrapped(FILE* f, const char* text) {
    int col = 0;
    while (*text) {
        int n = 0;  // the next unit: up to a comma or semicolon, or up to " ("
        while (text[n] && !(n > 0 && (text[n - 1] == ',' || text[n - 1] == ';') && text[n] == ' ')
               && !(text[n] == ' ' && text[n + 1] == '(')) n++;
        if (col > 0 && col + 1 + n > 80) { fprintf(f, "\n"); col = 0; }
        else if (col > 0) col += fprintf(f, " ");
        col += fprintf(f, "%.*s", n, text);
        text += n + (text[n] == ' ');
    }
    fprintf(f, "\n");
}

// the usage of a program from its table of flags and its defaults (an options struct),
// in 80 columns: a flag's help and default on one line, or the default on the next
static void print_flag_table(FILE* f, const char* program, const Flag* flags, int n, const void* defaults) {
    fprintf(f, "usage: ./%s [flags]   (every flag takes a value; -h: this list)\n", program);
    for (int i = 0; i < n; i++) {
        char def[256], line[512];
        const Flag* fl = flag_row(&flags[i]);
        flag_default(fl, defaults, 0, def, sizeof def);
        int len = snprintf(line, sizeof line, "  %-7s %s; default %s", fl->name, fl->help, def);
        if (len <= 80) fprintf(f, "%s\n", line);
        else fprintf(f, "  %-7s %s\n%10sdefault %s\n", fl->name, fl->help, "", def);
    }
}

// doc/usage.md's table of the flags (`./train_gpt2 -h md`), from the same table as -h
static void print_flag_markdown(FILE* f, const Flag* flags, int n, const void* defaults) {
    fprintf(f, "| flag | meaning | default |\n| --- | --- | --- |\n");
    for (int i = 0; i < n; i++) {
        char def[256];
        const Flag* fl = flag_row(&flags[i]);
        flag_default(fl, defaults, 1, def, sizeof def);
        fprintf(f, "| `%s` | %s | %s |\n", fl->name, fl->readme ? fl->readme : fl->help, def);
    }
}

static void print_usage(FILE* f) {
    Options d = default_options();
    char accepted[512] = "llm.c's flags with nothing to do here are accepted only at";
    print_flag_table(f, "train_gpt2", FLAGS, NUM_FLAGS, &d);
    for (int i = 0; i < NUM_LLMC_OFF; i++)
        if (LLMC_OFF[i].accepted && LLMC_OFF[i].accepted[0])
            snprintf(accepted + strlen(accepted), sizeof accepted - strlen(accepted), " %s %s,",
                     LLMC_OFF[i].name, LLMC_OFF[i].accepted);
    snprintf(accepted + strlen(accepted), sizeof accepted - strlen(accepted), " -pn <processes>; refused: "
             "-pg -pi -pm -ps -pf -pp (doc/usage.md: \"llm.c's flags here\"). -h md: its table of the "
             "flags.");
    print_wrapped(f, accepted);
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
        if (end != v && !*end && errno == ERANGE)  // 1e-50, 1e50: numbers, out of a float's range
            usage_error("flag %s: %s is %s a float's range (%s)", fl->name, v, isinf(x) ? "above" : "below",
                        isinf(x) ? "at most about 3.4e38" : "at least about 1.2e-38, or 0");
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

// fills o from argv by a table of flags: one line naming the flag for an unknown flag, a
// missing value or a value that is not a number. -h prints usage.
static inline void parse_flag_table(const Flag* flags, int n, Options* o, int argc, char** argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) { print_usage_to(stdout); exit(0); }
    for (int i = 1; i < argc; i++) {
        const Flag* fl = find_flag(flags, n, argv[i]);
        if (!fl) usage_error("unknown flag '%s'", argv[i]);
        if (i + 1 >= argc) usage_error("flag %s needs a value", argv[i]);
        const Flag* namesake = find_flag(FLAGS, NUM_FLAGS, argv[i]);  // flag_given answers by name
        if (namesake) o->given |= 1ULL << (namesake - FLAGS);
        parse_flag_value(flag_row(fl), o, argv[++i]);
    }
}

// the words of -pe, -ln and -act ("" = not given) into their indices in VARIANT_WORDS (-1)
static void parse_variant_words(const char* const words[3], int variant[3]) {
    for (int k = 0; k < 3; k++) {
        char known[128] = "";
        for (int w = 0; w < MAX_VARIANT_WORDS && VARIANT_WORDS[k][w]; w++) {
            if (words[k][0] && strcmp(words[k], VARIANT_WORDS[k][w]) == 0) variant[k] = w;
            size_t len = strlen(known);
            snprintf(known + len, sizeof known - len, "%s%s", w ? ", " : "", VARIANT_WORDS[k][w]);
        }
        if (words[k][0] && variant[k] < 0)
            usage_error("flag %s: unknown value '%s' (%s)", VARIANT_FLAGS[k], words[k], known);
    }
}

// -as's word into o->att_scale: "" -1 (not given), sqrt 0 (1/sqrt(hs)), none 1, or a number > 0
static void parse_att_scale(Options* o) {
    const char* w = o->att_scale_word;
    char* end;
    float x = strtof(w, &end);
    if (!w[0]) o->att_scale = -1.0f;
    else if (strcmp(w, "sqrt") == 0) o->att_scale = 0.0f;
    else if (strcmp(w, "none") == 0) o->att_scale = 1.0f;
    else if (end != w && !*end && x > 0.0f && x < 1e6f) o->att_scale = x;
    else usage_error("flag -as: unknown value '%s' (sqrt, none, or a number above 0 and below 1e6)", w);
}

// a fresh model's attention scale from -as (0 = 1/sqrt(hs) when not given); a loaded model's
// model_scale must agree with -as where it is given (chosen when a model is created, as -es)
static inline float att_scale_for(const Options* o, float model_scale, int fresh, const char* source) {
    if (fresh) return o->att_scale < 0.0f ? 0.0f : o->att_scale;
    if (o->att_scale >= 0.0f && o->att_scale != model_scale)
        usage_error("-as: the model in '%s' was built with another attention scale (%s); it is chosen when a "
                    "model is created (leave -as out, or start a fresh model)", source,
                    model_scale == 0.0f ? "sqrt" : "a number");
    return model_scale;
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
                                               !is_integer(argv[i + 1])))) {
            Options d = default_options();
            if (i + 1 < argc && strcmp(argv[i + 1], "md") == 0)  // doc/usage.md's table
                print_flag_markdown(stdout, FLAGS, NUM_FLAGS, &d);
            else print_usage(stdout);
            exit(0);
        }
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
        o.given |= 1ULL << (fl - FLAGS);
        parse_flag_value(fl, &o, argv[++i]);
    }
    char tp_count[160];  // -tpar N on another number of processes
    snprintf(tp_count, sizeof tp_count, "-tpar %d must be the number of processes (mpirun -np %d): they "
             "share one model (tensor and data parallelism do not combine here)", o.tpar, dist.size);
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
        {o.ff < 0 || (o.ff == 0 && flag_given(&o, "-ff")) || o.ff > FF_MAX, "-ff (MLP width) must be in 1.."
         FF_MAX_TEXT},
        {o.causal < -1 || o.causal > 1, "-causal must be 1 or 0"},
        {o.attention_map[0] && !o.prompt[0], "-am draws the attention maps of a prompt: give one with -pr"},
        {o.zero < -1 || o.zero > 1 || (o.zero == -1 && flag_given(&o, "-z")),
         "-z (ZeRO stage) must be 0 or 1: llm.c's stages 2 and 3 (gradients, weights sharded) are not here"},
        {o.zero == 1 && dist.size == 1, DIST_MPI ? "-z 1 shards AdamW's state over the processes of mpirun "
            "-np N (N >= 2): this run is one process (leave -z out, or -z 0)" : "-z 1 shards AdamW's state "
            "over MPI processes: this program is one process (train_gpt2_mpi under mpirun; or leave -z out)"},
        {o.zero == 1 && dist.size > DIST_MAX_SHARDS, "-z 1 shards over at most 64 processes (or -z 0)"},
        {o.zero_gather != 0 && o.zero_gather != 1, "-zg must be 0 or 1"},
        {o.tpar < 1, "-tpar (tensor-parallel processes) must be >= 1"},
        {!(o.deadline > 0), "-dt (seconds to wait for the other processes) must be > 0"},
        {o.tpar > 1 && dist.size == 1, DIST_MPI ? "-tpar N splits each layer's heads and MLP over the N "
            "processes of mpirun -np N: this run is one process (leave -tpar out)" : "-tpar N splits each "
            "layer's heads and MLP over MPI processes: this program is one process (train_gpt2_mpi "
            "under mpirun)"},
        {o.tpar > 1 && dist.size > 1 && o.tpar != dist.size, tp_count},
        {o.tpar > 1 && o.zero == 1, "-z 1 with -tpar: ZeRO-1 and tensor parallelism do not combine here "
            "(leave -z out)"},
        {o.tpar > 1 && o.attention_map[0], "-am with -tpar: each process holds some of the heads; draw the "
            "attention maps on one process"}};
    check_ranges(checks, sizeof checks / sizeof checks[0]);
    if (o.zero < 0) o.zero = dist.size > 1 && dist.size <= DIST_MAX_SHARDS && o.tpar == 1;  // on under mpirun
    if (o.zero_gather == 1 && o.zero != 1) {
        print_usage_to = NULL;
        usage_error("-zg 1 overlaps -z 1's gather of the weights: this run has no -z 1 (-z 0, one "
                    "process, or -tpar)");
    }
    if (!flag_given(&o, "-i")) o.train_path = find_default_path(o.train_path, 0);  // beside the program
    if (!flag_given(&o, "-j")) o.val_path = find_default_path(o.val_path, 0);
    if (!flag_given(&o, "-tok")) o.tokenizer_path = find_default_path(o.tokenizer_path, 0);
    int replicas = dist.size / o.tpar;  // data parallelism's: -tpar N shares one model over N processes
    long long micro = (long long)o.B * o.T * replicas;  // tokens of one forward and backward
    if (o.total_batch > 0 && o.total_batch % micro && (print_usage_to = NULL, 1))
        usage_error("-d %d must be a multiple of B*T%s = %lld", o.total_batch,
                    replicas > 1 ? "*processes" : "", micro);
    o.grad_accum = o.total_batch > 0 ? (int)(o.total_batch / micro) : 1;
    o.schedule = -1;
    for (int k = 0; k < 4; k++)
        if (strcmp(o.schedule_word, LR_SCHEDULES[k]) == 0) o.schedule = k;
    if (o.schedule < 0)
        usage_error("flag -k: unknown schedule '%s' (cosine, linear, constant, wsd)", o.schedule_word);
    o.bf16 = strcmp(o.precision, "bf16") == 0;
    if (!o.bf16 && strcmp(o.precision, "fp32") != 0)
        usage_error("flag -prec: unknown value '%s' (fp32, bf16)", o.precision);
    o.plain = strcmp(o.kernels, "plain") == 0;
    if (!o.plain && strcmp(o.kernels, "fast") != 0)
        usage_error("flag -kernels: unknown value '%s' (fast, plain)", o.kernels);
    if (o.plain && o.bf16) usage_error("-kernels plain computes in float32: not with -prec bf16");
    const char* words[3] = {o.pe, o.ln, o.act};
    parse_variant_words(words, o.variant);
    parse_att_scale(&o);
    return o;
}

// ----------------------------------------------------------------------------
// mpirun: the processes of one job must share their flags, or they train different models
// (each applies its own -l to its shard under -z 1) or wait for ever in a collective call
// another never makes (-x 6 against -x 3). Each flag's value is hashed and the hashes are
// compared across the processes before any work; the first that differs is named.

// FNV-1a (64 bits) of n bytes, continuing from h
static uint64_t hash_bytes(uint64_t h, const void* bytes, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char*)bytes)[i]) * 0x100000001b3ULL;
    return h;
}

// What of flag fl must agree: its value, or for the flags that only process 0 acts on (it
// prints, samples, draws, writes) whether it is given. -o "" against -o DIR would still
// differ: the checkpoints' moments are gathered from every process. Under -tpar every process
// computes each generated token, and under -zg 1 a sample's step moves the weights' gather:
// there -pr, -g and -s must agree as well.
static uint64_t flag_agreement_hash(const Flag* fl, const Options* o) {
    const char* field = (const char*)o + fl->offset;
    const char* name = fl->name;
    int shared = o->tpar > 1 || o->zero_gather == 1;
    uint64_t h = 0xcbf29ce484222325ULL;
    static Options defaults;  // a flag not given: its default as written (a default path may be
    defaults = default_options();  // found beside the program on one process and here on another)
    if (!flag_given(o, name)) field = (const char*)&defaults + fl->offset;
    if ((!strcmp(name, "-g") || !strcmp(name, "-s") || !strcmp(name, "-pr")) && !shared) return h;
    if (!strcmp(name, "-o") || !strcmp(name, "-am") || !strcmp(name, "-hf")) {
        int given = (*(const char* const*)field)[0] != 0;
        return hash_bytes(h, &given, sizeof given);
    }
    if (fl->type == 's') return hash_bytes(h, *(const char* const*)field, strlen(*(const char* const*)field));
    size_t size = fl->type == 'i' ? sizeof(int) : fl->type == 'L' ? sizeof(long long) : sizeof(float);
    return hash_bytes(h, field, size);
}

// every process of the job has the same flags (and DIST_BLOCKING), or all stop with one line
// naming the first flag that differs (nothing to do for one process)
static inline void check_flags_agree(const Options* o) {
    uint64_t hashes[NUM_FLAGS + 1];
    int order[NUM_FLAGS], n = 0;  // -tpar and -zg first: they decide whether -pr -g -s must agree
    for (int k = 0; k < NUM_FLAGS; k++)
        if (!strcmp(FLAGS[k].name, "-tpar") || !strcmp(FLAGS[k].name, "-zg")) order[n++] = k;
    for (int k = 0; k < NUM_FLAGS; k++)
        if (strcmp(FLAGS[k].name, "-tpar") && strcmp(FLAGS[k].name, "-zg")) order[n++] = k;
    for (int i = 0; i < NUM_FLAGS; i++) hashes[i] = flag_agreement_hash(&FLAGS[order[i]], o);
    hashes[NUM_FLAGS] = (uint64_t)dist.buckets;  // the environment's DIST_BLOCKING=1 (util/dist.h)
    int first = dist_first_difference(hashes, NUM_FLAGS + 1);
    if (first < 0) return;
    print_usage_to = NULL;
    int k = first == NUM_FLAGS ? NUM_FLAGS : order[first];
    if (k == NUM_FLAGS)
        usage_error("the processes of this job differ in DIST_BLOCKING (the environment): process 0 %s it; "
                    "every process must sum the gradients the same way", dist.buckets ? "lacks" : "has");
    const Flag* fl = &FLAGS[k];
    const char* field = (const char*)o + fl->offset;
    char value[200], text[160];
    if (fl->type == 's') snprintf(value, sizeof value, "'%s'", excerpt(*(const char* const*)field, text));
    else if (fl->type == 'i') snprintf(value, sizeof value, "%d", *(const int*)field);
    else if (fl->type == 'L') snprintf(value, sizeof value, "%lld", *(const long long*)field);
    else snprintf(value, sizeof value, "%g", *(const float*)field);
    usage_error("the processes of this job were given different %s (process 0: %s %s): every process "
                "needs the same flags, but for the paths of -o -am -hf and (without -tpar or -zg 1) -pr -g -s",
                fl->name, fl->name, value);
}

// ----------------------------------------------------------------------------
// train_seq2seq's command line: its own rows, and FLAGS' rows of the flags that mean the same
// in both programs (a name alone)

static const Flag SEQ2SEQ_FLAGS[] = {
    {"-i", 's', OPT(train_path), "training pairs (pair file, util/pairs.h)", NULL, NULL},
    {"-j", 's', OPT(val_path), "held-out pairs (\"\" = none)", NULL, NULL},
    {"-tok", 's', OPT(tokenizer_path), "tokenizer, to print tokens (\"\" = print ids)", NULL, NULL},
    {"-e", 's', OPT(init), "start from this encoder-decoder checkpoint", "a fresh model", NULL},
    {.name = "-o"}, {"-b", 'i', OPT(B), "batch size: pairs per step", NULL, NULL},
    {.name = "-l"}, {.name = "-u"}, {.name = "-q"}, {.name = "-c"},
    {"-x", 'i', OPT(max_steps), "training steps (0 = none: evaluate and decode)", NULL, NULL},
    {.name = "-v"}, {.name = "-n"}, {.name = "-y"},
    {"-nl", 'i', OPT(layers), "fresh model: layers of each stack", NULL, NULL},
    {"-nle", 'i', OPT(enc_layers), "fresh model: encoder layers (0 = -nl)", "-nl", NULL},
    {"-nld", 'i', OPT(dec_layers), "fresh model: decoder layers (0 = -nl)", "-nl", NULL},
    {.name = "-nh"}, {.name = "-nc"},
    {"-mt", 'i', OPT(max_seq_len), "fresh model: maxT", "the longest source or target + 1", NULL},
    {.name = "-ff"}, {.name = "-gc"}, {.name = "-sd"}, {.name = "-dr"},
    {.name = "-b1"}, {.name = "-b2"}, {.name = "-ae"}, {.name = "-tp"}, {.name = "-tk"},
    {"-ne", 'i', OPT(eval_pairs), "held-out pairs to evaluate (exact match, accuracy)", NULL, NULL},
    {"-g", 'i', OPT(examples), "decoded examples to print", NULL, NULL},
    {"-am", 's', OPT(attention_map), "attention maps of a pair: this SVG, _encoder, _decoder", "none", NULL},
    {"-pe", 's', OPT(pe), "fresh model: positions learned | sin (both stacks)", "learned", NULL},
    {.name = "-ln"}, {.name = "-act"}, {.name = "-as"},
    {"-causal", 'i', OPT(causal), "decoder self-attention: 1 = causal; 0 = no mask (an experiment)",
     "the model's (1 when fresh)", NULL},
    {"-es", 'i', OPT(embed_scale), "fresh model: 1 = token embeddings times sqrt(C) (the Transformer's)",
     "0", NULL},
    {"-fe", 'i', OPT(freeze_encoder), "1 = freeze the encoder (the decoder and wte learn)", NULL, NULL},
    {"-opt", 's', OPT(optimizer), "optimizer: adamw | sgd (plain: W -= lr dL/dW)", NULL, NULL},
};
#define NUM_SEQ2SEQ_FLAGS ((int)(sizeof SEQ2SEQ_FLAGS / sizeof SEQ2SEQ_FLAGS[0]))

// train_seq2seq's defaults train the reversal task (data/reverse_*.bin, `make seq2seq`)
static Options default_seq2seq_options(void) {
    Options o = {
        .train_path = "data/reverse_train.bin", .val_path = "data/reverse_val.bin",
        .tokenizer_path = "data/reverse_tokenizer.bin", .init = "", .out_dir = "out_seq2seq", .B = 32,
        .lr = 3e-3f, .warmup = 100, .final_lr_frac = 0.0f, .schedule_word = "cosine", .max_steps = 2000,
        .val_every = 250, .layers = 2, .heads = 4, .channels = 64, .grad_clip = 1.0f, .seed = 1337,
        .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .eval_pairs = 1000, .examples = 5, .attention_map = "",
        .pe = "", .ln = "", .act = "", .variant = {-1, -1, -1}, .causal = -1, .embed_scale = -1,
        .att_scale_word = "", .att_scale = -1.0f,
        .optimizer = "adamw", .grad_accum = 1, .precision = "fp32", .prompt = "", .hf_out = ""};
    return o;
}

static void print_seq2seq_usage(FILE* f) {
    Options d = default_seq2seq_options();
    print_flag_table(f, "train_seq2seq", SEQ2SEQ_FLAGS, NUM_SEQ2SEQ_FLAGS, &d);
}

Options parse_seq2seq_args(int argc, char** argv) {
    Options o = default_seq2seq_options();
    print_usage_to = print_seq2seq_usage;
    parse_flag_table(SEQ2SEQ_FLAGS, NUM_SEQ2SEQ_FLAGS, &o, argc, argv);
    RangeCheck checks[] = {  // the flags train_gpt2 has too, then its own
        COMMON_RANGE_CHECKS(o), {o.max_steps < 0, "-x (steps) must be >= 0"},
        {o.val_every < 0, "-v must be >= 0"},
        {o.layers <= 0, "-nl (layers) must be > 0"}, {o.enc_layers < 0, "-nle must be >= 0"},
        {o.dec_layers < 0, "-nld must be >= 0"}, {o.max_seq_len < 0, "-mt (maxT) must be >= 0"},
        {o.ff < 0 || (o.ff == 0 && flag_given(&o, "-ff")) || o.ff > FF_MAX, "-ff (MLP width) must be in 1.."
         FF_MAX_TEXT},
        {o.eval_pairs < 0, "-ne must be >= 0"}, {o.examples < 0, "-g must be >= 0"},
        {o.causal < -1 || o.causal > 1, "-causal must be 1 or 0"},
        {o.freeze_encoder < 0 || o.freeze_encoder > 1, "-fe must be 1 or 0"},
        {o.embed_scale < -1 || o.embed_scale > 1, "-es must be 1 or 0"},
        {strcmp(o.optimizer, "adamw") != 0 && strcmp(o.optimizer, "sgd") != 0, "-opt must be adamw or sgd"}};
    check_ranges(checks, sizeof checks / sizeof checks[0]);
    if (!flag_given(&o, "-i")) o.train_path = find_default_path(o.train_path, 0);  // beside the program
    if (!flag_given(&o, "-j")) o.val_path = find_default_path(o.val_path, 0);
    if (!flag_given(&o, "-tok")) o.tokenizer_path = find_default_path(o.tokenizer_path, 0);
    const char* words[3] = {o.pe, o.ln, o.act};
    parse_variant_words(words, o.variant);
    parse_att_scale(&o);
    print_usage_to = NULL;  // from here on a value's one line is enough
    if (o.variant[0] == 1)  // VARIANT_WORDS[0][1]
        usage_error("-pe rope: the encoder-decoder has learned or sinusoidal positions (rope is "
                    "train_gpt2's)");
    return o;
}

// The block variants from the flags into a model's settings (train_gpt2.c's GPT2Config):
// *settings[] are the -pe, -ln, -act indices, the key/value heads and the mask (0 causal,
// 1 none). A fresh model takes the flags (GPT-2's choice where one is not given); a loaded
// model keeps its own, and a flag that contradicts it is an error, except -causal, which
// may switch the mask of a trained model (to evaluate the -causal 0 experiment).
// heads and channels: the fresh model's, to check -kv and -pe rope against them.
static inline void apply_variant_flags(const Options* o, int* settings[5], int fresh, const char* source,
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

// A loaded model (-e, or -y 1) has its own shape: -nl -nh -nc -mt given on the command
// line must agree with it (so that the command that started a run resumes it), or the run
// is refused, as a block variant's flag is (apply_variant_flags). layers..ff: the model's
// (-1: not checked; train_seq2seq's -nl sets the layers of both stacks, a model's may differ).
static inline void check_shape_given(const Options* o, const char* source, int layers, int heads,
                                     int channels, int max_seq_len, int ff) {
    const char* flags[5] = {"-nl", "-nh", "-nc", "-mt", "-ff"};
    const char* what[5] = {"L", "NH", "C", "maxT", "d_ff"};  // as "model: L=4 NH=4 C=128 maxT=64" names them
    int given[5] = {o->layers, o->heads, o->channels, o->max_seq_len ? o->max_seq_len : o->T, o->ff};
    int model[5] = {layers, heads, channels, max_seq_len, ff};
    for (int i = 0; i < 5; i++)
        if (model[i] >= 0 && flag_given(o, flags[i]) && given[i] != model[i])
            usage_error("%s %d: the model in '%s' has %s=%d; its shape is its own (leave %s out, or start a "
                        "fresh model)", flags[i], given[i], source, what[i], model[i], flags[i]);
}

// the model's block variants (nothing for GPT-2), and the warning of -causal 0 (mask 1)
static inline void print_block_variants(int gpt2, int kv_heads, int pos, int ln, int act, int mask) {
    if (!gpt2)
        printf("block: %d key/value head%s, positions %s, %s-LN, %s, %s attention\n", kv_heads,
               kv_heads == 1 ? "" : "s", VARIANT_WORDS[0][pos], VARIANT_WORDS[1][ln], VARIANT_WORDS[2][act],
               mask ? "unmasked" : "causal");
    if (mask)
        printf("warning: -causal 0: without the mask each position reads the token it must predict; the "
               "training loss collapses while generation, which stays causal, is nonsense\n");
}

// the first lines of a training run: its settings and its data (val NULL: no validation)
static inline void print_training_settings(const Options* o, int threads, const DataLoader* train,
                                           const DataLoader* val, int val_batches) {
    printf("training: B=%d T=%d, %d step%s, lr %g (warmup %d, %s to %g), weight decay %g, clip %g, "
           "dropout %g, -prec %s, %d thread%s\n", o->B, o->T, o->max_steps, o->max_steps == 1 ? "" : "s",
           o->lr, o->warmup, o->schedule_word, o->final_lr_frac, o->weight_decay, o->grad_clip, o->dropout,
           o->precision, threads, threads == 1 ? "" : "s");
    printf("data: %s (%zu tokens", o->train_path, train->total_tokens);
    if (train->num_shards > 1) printf(" in %d shards", train->num_shards);
    printf("), ");
    if (!val) printf("no validation\n");
    else printf("%s (%zu tokens, %d validation batches%s)\n", o->val_path, val->total_tokens, val_batches,
                (size_t)val_batches == val->total_batches ? "" : o->val_batches ? " of -m" :
                ", -m 0: at most " VAL_TOKENS_TEXT " tokens; -m -1 = all");
    if (dist_replicas() > 1) {
        printf("processes: %d, each B=%d: a global batch of %d rows; ", dist.size, o->B, dist.size * o->B);
        if (!dist.buckets) printf("gradients summed after the backward pass (DIST_BLOCKING=1)");
        else printf("%s: at most %zu MiB of gradients in flight", dist.one_machine ? "on one machine"
                    : "not all on one machine", dist_sums_window() >> 20);
        printf(" (util/dist.h)\n");
    }
    if (dist.tp > 1)
        printf("processes: %d share one model (-tpar %d), each the same B=%d rows (util/dist.h)\n", dist.size,
               dist.tp, o->B);
    if (o->grad_accum > 1)
        printf("-d %d: %d micro-batches of %d tokens a step, their gradients summed (accumulation)\n",
               o->total_batch, o->grad_accum, o->B * o->T * dist_replicas());
}

// -x 0 without -g: the validation loss alone
static inline void print_evaluation(const Options* o, float val_loss, int batches) {
    printf("val loss %.4f (%d batch%s of %dx%d)\n", val_loss, batches, batches == 1 ? "" : "es", o->B, o->T);
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
