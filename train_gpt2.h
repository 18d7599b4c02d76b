/*
train_gpt2.h: the model's data, and the names of train_gpt2.c's functions.

The structs come first, as llama2.c's run.c opens with its Config, TransformerWeights and
RunState: a step of train_gpt2.c reads them, and its comments say where (each struct's old
place in the story holds a line pointing here). The functions are declared at the end.

Why a header: make compiles train_gpt2.c on its own (train_gpt2.o) and the programs around
it (train_gpt2_main.c, the parallel sequel, test_gpt2.c) apart, against this file, so that an
edit of the story recompiles the story alone. A program of one file (cc train_gpt2_main.c, the
benchmark, the mutants) takes train_gpt2.c itself in (train_gpt2_parallel.c says how).
*/
#ifndef TRAIN_GPT2_H
#define TRAIN_GPT2_H
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE  // also madvise(MADV_HUGEPAGE), see fast/alloc.h
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "util/tokenizer.h"    // Tokenizer (generate)
#include "util/sampler.h"      // Sampler (generate)
#include "fast/matvec_bf16.h"  // WeightsBF16 (the KV cache's bf16 weights)

// ----------------------------------------------------------------------------
// the layers' arguments

// dropout masks (train_gpt2.c, "dropout masks"): the four places a mask is drawn, and one mask
enum { DROP_EMBED = 0, DROP_ATT_PROBS = 1, DROP_ATT_OUT = 2, DROP_MLP_OUT = 3 };

typedef struct {
    float p;          // probability of dropping an element; 0 = off
    float scale;      // 1/(1-p): inverted dropout keeps the expected value unchanged
    uint32_t threshold; // an element is dropped when its 24-bit hash is below this
    uint64_t key;     // hash of seed, step, layer and site
    uint64_t first;   // the index of element 0 in the step's batch: the rows before this micro-batch's
    uint64_t block, stride;  // 0, or a slice of a larger tensor's mask: runs of block, one every stride
} DropoutMask;

// how a backward writes a parameter's gradient (train_gpt2.c, before encoder_forward)
typedef enum { GRAD_STORE = 0, GRAD_ADD = 1 } GradWrite;

// the sizes of one attention call; {B, T, C, NH, NKV, causal} alone is self-attention
typedef struct {
    int B, T, C;  // batch, queries per sequence, channels of the heads' output (NH heads of hs = C/NH)
    int NH, NKV;  // query heads, key/value heads: NKV = NH is multi-head attention; NKV < NH is
                  //   grouped-query attention (GQA, article 004): each group of NH/NKV query
                  //   heads shares one K/V head (its repeat_kv); NKV = 1 is multi-query
    int causal;   // 1: the causal mask (step 3; needs Tk == pos0 + T); 0: every query sees every key
    int Tk;       // keys per sequence; 0 = T. Cross-attention: the source length Ts
    int pos0;     // the first query's position among the keys: 0, or with a KV cache the
                  //   positions cached before this forward's (query t may see keys 0..pos0+t)
    int q_stride, kv_stride;  // floats from one row of q (of kv) to the next; 0 = the fused row C3
    const int* key_len;  // (B) or NULL: keys at and after key_len[b] are padding, masked as the future
    int plain;    // 1: the products by matmul_plain (-kernels plain); 0: by fast/gemm.h's kernels
    float scale;  // step 2's factor on the scores (-as); 0 = 1/sqrt(hs), the article's
} AttentionShape;

// ----------------------------------------------------------------------------
// the model: configuration, parameters, activations (train_gpt2.c, "the model")

// the block variants of articles 003 and 004; 0 is GPT-2's choice (doc/variants.md).
// A switch over one of them names every value, with no default: -Wswitch-enum (the Makefile's
// WARN) makes a value that a dispatch site does not handle a compile error.
typedef enum { POS_LEARNED, POS_ROPE, POS_SIN } PosEncoding;  // -pe: wpe table, rotary (004), sinusoids (003)
typedef enum { LN_PRE, LN_POST } LnPlace;       // -ln: layernorm before each branch, or after the sum (003)
typedef enum { ACT_GELU, ACT_RELU, ACT_RELU2 } Activation;  // -act: the MLP's non-linearity
typedef enum { MASK_CAUSAL, MASK_NONE } Mask;   // -causal 1 / 0 (training only: generation stays causal)

typedef struct {
    int max_seq_len;        // maxT: the longest sequence, rows of wpe
    int vocab_size;         // V: real tokens
    int padded_vocab_size;  // Vp: V rounded up to a multiple of 128, rows of wte
    int num_layers;         // L
    int num_heads;          // NH
    int channels;           // C
    int num_kv_heads;       // NKV: key/value heads (GQA, -kv); NH for GPT-2 (0 is read as NH)
    int pos_encoding, ln_place, activation, mask;  // the variants above
    int ff;                 // d_ff: the MLP's hidden width (-ff); 0 is read as GPT-2's 4C
    int head_size;          // hs; 0 is C/NH. Not in a file: set by train_gpt2_parallel.c's -tpar
    float att_scale;        // -as: the attention scores' factor; 0 is read as 1/sqrt(hs)
} GPT2Config;

// all parameters, in llm.c's file order
#define NUM_PARAMETER_TENSORS 16
typedef struct {
    float* wte;      // (Vp,C) token embedding, also the output head (tied)
    float* wpe;      // (maxT,C) position embedding (NULL unless learned: -pe)
    float* ln1w;     // (L,C)
    float* ln1b;     // (L,C)
    float* qkvw;     // (L,C3,C) Q rows, then K rows, then V rows; C3 = 3C (C + 2 NKV hs with GQA)
    float* qkvb;     // (L,C3)
    float* attprojw; // (L,C,C)
    float* attprojb; // (L,C)
    float* ln2w;     // (L,C)
    float* ln2b;     // (L,C)
    float* fcw;      // (L,F,C) F = d_ff, 4C unless -ff
    float* fcb;      // (L,F)
    float* fcprojw;  // (L,C,F)
    float* fcprojb;  // (L,C)
    float* lnfw;     // (C)
    float* lnfb;     // (C)
} ParameterTensors;

__attribute__((unused)) static const char* const PARAMETER_NAMES[NUM_PARAMETER_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};

// AdamW decays the matrices (embeddings and matmul weights), not biases or layernorm
static const int PARAMETER_DECAYS[NUM_PARAMETER_TENSORS] = {1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0};
static const int LAYER_TENSORS[2] = {2, 14};  // ln1w .. fcprojb: (L, ...), one slice per layer

// what the forward pass keeps for the backward pass, for a batch of B sequences of T
#define NUM_ACTIVATION_TENSORS 23
typedef struct {
    float* encoded;     // (B,T,C) wte[token] + the position's row (after embedding dropout)
    float* ln1;         // (L,B,T,C)
    float* ln1_mean;    // (L,B,T)
    float* ln1_rstd;    // (L,B,T)
    float* qkv;         // (L,B,T,C3) the fused Q,K,V projection (q and k rotated with -pe rope)
    float* atty;        // (L,B,T,C) the heads' outputs, before the projection
    float* att_scores;  // (L,B,NH,T,Tk) scaled, masked scores (attention steps 1-3); Tk = T
                        //   (generation: rows of maxT, the cached keys first)
    float* att_probs;   // (L,B,NH,T,Tk) softmax probabilities (steps 4-5)
    float* att_dropped; // (L,B,NH,T,Tk) probabilities after dropout (steps 6-7); NULL without dropout
    float* attproj;     // (L,B,T,C) attention projection (after residual dropout)
    float* residual2;   // (L,B,T,C) residual + attention branch
    float* ln2;         // (L,B,T,C)
    float* ln2_mean;    // (L,B,T)
    float* ln2_rstd;    // (L,B,T)
    float* fch;         // (L,B,T,F) MLP hidden, before GELU (or ReLU); F = d_ff
    float* fch_act;     // (L,B,T,F) MLP hidden, after it
    float* fcproj;      // (L,B,T,C) MLP projection (after residual dropout)
    float* residual3;   // (L,B,T,C) residual2 + MLP branch: the layer's output (pre-LN)
    float* lnf;         // (B,T,C)
    float* lnf_mean;    // (B,T)
    float* lnf_rstd;    // (B,T)
    float* logits;      // (B,T,Vp); the backward overwrites it with dlogits
    float* probs;       // (B,T,Vp)
} ActivationTensors;

// gradients of activations: one layer's worth, reused by every layer on the way down
#define NUM_SCRATCH_TENSORS 10
typedef struct {
    float* dres;        // (B,T,C) gradient of the residual stream, updated in place from the
                        //   top layer down: d(residual3) -> d(residual2) -> d(residual)
    float* dbranch;     // (B,T,C) gradient of a branch output (attproj or fcproj) before dropout
    float* dln;         // (B,T,C) gradient of a layernorm's output
    float* datty;       // (B,T,C)
    float* dqkv;        // (B,T,C3)
    float* dfch;        // (B,T,F)
    float* dfch_act;   // (B,T,F)
    float* dlosses;     // (B,T)
    float* losses;      // (B,T) the forward's per-position loss
    float* dsum;        // (B,T,C) post-LN only: the gradient of a residual sum (a layernorm's input)
} BackwardScratch;

// The one extension point: the parallel trainer (train_gpt2_parallel.c, article 004) runs this
// model on N processes by giving it these calls, which the story makes at the named moments
// of a step. A one-process model holds NULL (model->parallel) and none of them is made.
typedef struct {
    // before the embedding: the table it reads, and in *ids its rows of the tokens (wte, tokens)
    const float* (*embedding_rows)(const float* wte, const int* tokens, int n, int C, const int** ids);
    void (*weights_ready)(int l);        // before layer l reads its weights (L: lnf and the head)
    const float* (*branch_bias)(const float* bias);  // the bias a branch's last projection adds
    void (*branch_sum)(float* x, size_t n);  // a branch's output, or its input's gradient: a part
    void (*dropout_slice)(DropoutMask* m, int heads, int row0, int T);  // attention's masks in the whole
    // gpt2_backward begins; the head wrote dwte; layer l's gradients are final; the embedding's
    void (*backward_begin)(float* grads, const size_t* sizes, int tensors, const int* layered, int L,
                           int micro_batches);
    void (*head_grads_done)(float* dwte, int rows, int C);
    void (*layer_grads_done)(int l);
    void (*embedding_grads_begin)(void);
    int (*stop_agreed)(void);            // generate: stop here (all processes at the same token)
} ParallelHooks;

typedef struct KVCache KVCache;  // generation's keys and values (the end of this header)

typedef struct {
    GPT2Config config;
    const ParallelHooks* parallel;  // NULL: one process (see ParallelHooks)
    KVCache* cache;  // generation: the positions before this forward's are in it (NULL: training)
    int plain;      // -kernels plain: every matrix product by train_gpt2.c's plain loops, not fast/'s
    int precision;  // -prec: GEMM_FP32, or GEMM_BF16: the products' operands rounded to bfloat16
                    //   and summed in float32 (fast/bf16.h), the weights read from params_bf16
    // the weights
    ParameterTensors params;
    size_t param_sizes[NUM_PARAMETER_TENSORS];
    float* params_memory;
    size_t num_parameters;
    // fixed position tables, computed, not learned (NULL unless that -pe is chosen)
    float* sinusoids;    // (maxT,C) -pe sin
    float* rope_angles;  // (maxT,hs/2,2) -pe rope: cos and sin of each position's angles
    // their gradients, and AdamW's moments (allocated at the first backward / update)
    ParameterTensors grads;
    float* grads_memory;
    float* m_memory;       // AdamW's moments
    float* v_memory;
    int grads_held;        // the gradients hold a sum (gpt2_backward ran since gpt2_zero_grad)
    double grad_squares;   // the sum of their squares, added up by gpt2_backward as each is final
    uint16_t* params_bf16; // -prec bf16: the weights rounded to bf16, made by the first forward and
                           //   rewritten by AdamW with the weights (gpt2_weights_written: by others)
    // the forward's cache and the backward's scratch, for B x T (allocated at the first forward)
    ActivationTensors acts;
    size_t act_sizes[NUM_ACTIVATION_TENSORS];
    float* acts_memory;
    BackwardScratch scratch;
    float* scratch_memory;
    int batch_size;    // B the buffers hold
    int seq_len;       // T the buffers hold
    int cur_B, cur_T;  // B, T of the last forward (at most the above)
    int* inputs;       // (B,T) the last forward's tokens
    int* targets;      // (B,T) and targets
    float mean_loss;   // the last forward's loss, or -1 without targets
    int grad_accum;    // -d: a step sums the gradients of this many micro-batches (0 = 1)
    // dropout (training only): probability and seed; the step picks the masks
    float dropout_p;
    uint64_t dropout_seed;
    long dropout_step; // step of the last forward; -1 = evaluation (no dropout)
    int dropout_row0;  // the batch's first row in the step's rows (-d: micro-batches), whose masks it uses
} GPT2;

// llm.c's checkpoint versions of a model with block variants, with and without the checksum
// (train_gpt2.c, before is_gpt2; doc/formats.md)
#define CHECKPOINT_VARIANTS 104
#define CHECKPOINT_VARIANTS_NO_CHECKSUM 103
#define CHECKPOINT_SEQ2SEQ 201  // the encoder-decoder of train_seq2seq.c, refused here
#define CHECKPOINT_SEQ2SEQ_NO_CHECKSUM 200

// the layer-l slices of the parameters (or of their gradients) and of the cached activations
typedef struct {
    float *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
} LayerParams;

// layer l's slices of the cached activations
typedef struct {
    float *residual, *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att_scores, *att_probs, *att_dropped,
          *attproj, *residual2, *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_act, *fcproj, *residual3;
} LayerActs;

// ----------------------------------------------------------------------------
// training and generation

// the optimiser's settings: AdamW, the learning-rate schedule, clipping
typedef struct {
    float lr;                   // peak learning rate
    int schedule;               // LR_COSINE (0, the default), LR_LINEAR, LR_CONSTANT, LR_WSD
    int warmup;                 // linear warm-up steps
    int max_steps;              // the decay ends here (<= warmup: constant after warm-up)
    float final_lr_frac;        // the decay ends at final_lr_frac * lr
    float beta1, beta2, eps;    // Adam's moment decays and epsilon
    float weight_decay;         // AdamW's decoupled decay (matrices and embeddings only)
    float grad_clip;            // the largest global gradient norm; 0 = no clipping
} AdamWConfig;

// what a training step reports
typedef struct {
    float loss;  // the batch's mean loss
    float norm;  // the gradients' global norm, before clipping
    float lr;    // the learning rate of this step
} StepStats;

// generation's cache of keys and values (train_gpt2.c, "inference with a KV cache")
struct KVCache {
    float* kv;       // (L,maxT,2 NKV hs): each cached position's K heads, then its V heads, as a
                     //   row of qkv holds them, so that attention reads the cache as it reads
                     //   qkv. GQA stores only the NKV shared heads: NH/NKV times fewer bytes.
    int* tokens;     // (maxT) the tokens whose keys and values are cached
    int pos;         // positions cached so far = position of the next token
    GPT2 model;      // the model generation runs: the sampled model's weights and options, with
                     //   its own activations for one position, and this cache (kvcache_model)
    WeightsBF16 bf16;// -prec bf16: the weights the products read, rounded once (fast/matvec_bf16.h)
};

// ----------------------------------------------------------------------------
// the functions of train_gpt2.c, in its order (its comments say what each does)

// the layers (train_gpt2.c, in reading order): each _forward next to its _backward
DropoutMask dropout_mask(float p, uint64_t seed, uint64_t step, int layer, int site);
int dropout_keep(const DropoutMask* m, uint64_t idx);
void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C);
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C,
    GradWrite gw_wpe);
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
    const float* weight, const float* bias, int N, int C);
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
    const float* weight, const float* mean, const float* rstd, int N, int C,
    GradWrite gw);
void matmul_forward_plain(float* out, const float* inp, const float* weight, const float* bias,
    int BT, int C, int OC);
void matmul_backward_plain(float* dinp, float* dweight, float* dbias, const float* dout,
    const float* inp, const float* weight, int BT, int C, int OC, GradWrite gw);
void matmul_plain(float* Cm, int ldc, const float* A, int lda, int tA, const float* Bm, int ldb, int tB,
    int M, int N, int K, int add);
float attention_scale(float scale, int hs);
AttentionShape attention_shape_filled(AttentionShape s);
void attention_forward(float* out, float* att_scores, float* att_probs, float* att_dropped,
    const float* q, const float* kv, AttentionShape s, const DropoutMask* drop);
void attention_backward(float* dq, float* dkv, const float* dout, const float* q, const float* kv,
    const float* att_probs, const float* att_dropped,
    AttentionShape s, const DropoutMask* drop);
void sinusoids_init(float* table, int maxT, int C);
void rope_angles_init(float* angles, int maxT, int hs);
void rope_forward(float* x, const float* angles, int B, int T, int stride, int heads, int hs, int pos0);
void rope_backward(float* dx, const float* angles, int B, int T, int stride, int heads, int hs);
void gelu_forward(float* out, const float* inp, size_t N);
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t N);
void relu_forward(float* out, const float* inp, size_t N);
void relu_backward(float* dinp, const float* inp, const float* dout, size_t N);
void relu2_forward(float* out, const float* inp, size_t N);
void relu2_backward(float* dinp, const float* inp, const float* dout, size_t N);
void residual_forward(float* out, const float* inp1, const float* inp2, size_t N);
void dropout_forward(float* x, size_t N, const DropoutMask* drop);
void dropout_backward(float* dinp, const float* dout, size_t N, const DropoutMask* drop);
void softmax_forward(float* probs, const float* logits, int BT, int V, int Vp);
void crossentropy_forward(float* losses, const float* probs, const int* targets, int BT, int Vp);
void crossentropy_softmax_backward(float* dlogits, const float* dlosses, const float* probs,
    const int* targets, int BT, int V, int Vp);

// the model: its variants, shapes, parameters, checkpoints
const char* pos_encoding_word(int v);
const char* ln_place_word(int v);
const char* activation_word(int v);
const char* mask_word(int v);
int ff_channels(GPT2Config c);
int head_size(GPT2Config c);
int attention_channels(GPT2Config c);
int qkv_channels(GPT2Config c);
size_t sum_sizes(const size_t* sizes, int n);
void fill_in_parameter_sizes(size_t* sizes, GPT2Config cfg);
float* point_parameters(ParameterTensors* params, float* memory, const size_t* sizes);
void check_config(GPT2Config c, const char* source);
void gpt2_allocate_parameters(GPT2* model, GPT2Config config);
void gpt2_init_random(GPT2* model, GPT2Config config, uint64_t seed);
int is_gpt2(GPT2Config c);
void check_finite_weights(const float* params, size_t n, const char* what);
void check_checkpoint_size(FILE* f, const char* path, size_t n);
void read_checkpoint_parameters(FILE* f, const char* path, const int32_t h[256], float* params, size_t n,
    int checksummed);
void gpt2_build_from_checkpoint(GPT2* model, const char* path);
void gpt2_write_checkpoint(const GPT2* model, const char* path);
void gpt2_weights_written(GPT2* model);
void gpt2_free(GPT2* model);

// the whole model's forward and backward, and one layer of them
LayerParams layer_params(ParameterTensors p, GPT2Config c, int l);
float* block_output(const GPT2* model, int l, int B, int T);
float gpt2_forward(GPT2* model, const int* inputs, const int* targets, int B, int T, long step);
void gpt2_zero_grad(GPT2* model);
void block_backward(GPT2* model, int l, int B, int T, GradWrite gw);
void gpt2_backward(GPT2* model);

// AdamW and one training step
float gpt2_grad_norm(const GPT2* model);
float grad_clip_scale(float norm, float max_norm);
void allocate_moments(float** m, float** v, size_t n);
void adamw_update(float* params, uint16_t* params_bf16, const float* grads, float* m_all, float* v_all,
    const size_t* sizes, const int* decays, int n, const AdamWConfig* opt, float lr,
    float grad_scale, int t);
void gpt2_update(GPT2* model, const AdamWConfig* opt, float lr, float grad_scale, int t);
StepStats gpt2_optimizer_step(GPT2* model, int step, const AdamWConfig* opt);
StepStats gpt2_train_step(GPT2* model, const int* inputs, const int* targets, int B, int T, int step,
    const AdamWConfig* opt);

// generation with a KV cache
void kvcache_init(KVCache* kv, GPT2Config c);
void kvcache_free(KVCache* kv);
const float* gpt2_forward_token(const GPT2* model, KVCache* kv, int token);
int generate(const GPT2* model, KVCache* kv, Sampler* s, const Tokenizer* tk,
    const int* prompt, int prompt_len, int n, int slide, FILE* out);

#endif
