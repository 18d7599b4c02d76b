/*
train_seq2seq.c: the encoder-decoder Transformer of the encoder/decoder article (file 003),
trained with teacher forcing and decoded token by token (article 002: training vs
inference). A sequel to train_gpt2.c: it #includes that file (the model alone; its
program is train_gpt2_main.c) and builds the two stacks from the same layers: layernorm,
matmul, attention (with a key-padding mask, and as cross-attention), GELU/ReLU, dropout,
softmax and cross-entropy, AdamW, the learning-rate schedule, the sampler and the pictures.
Reading order:
  1. Seq2SeqConfig, the parameters (one allocation, named pointers), the activations;
  2. the sublayer: x -> x + f(ln(x)) (pre-LN) or ln(x + f(x)) (post-LN), where f is a
     self-attention, a cross-attention or an MLP branch; an encoder layer is two
     sublayers, a decoder layer three (branch_forward, sublayer_forward);
  3. seq2seq_forward: the encoder over the padded source, then the decoder over the
     shifted target (teacher forcing); the loss is the mean over real target positions;
  4. seq2seq_backward: the same steps reversed; the encoder output's gradient is the sum
     over every decoder layer that reads it (branch_backward, SUB_CROSS);
  5. checkpoints (version 201 of llm.c's header, doc/formats.md);
  6. inference: the decoder one token at a time with a KV cache, the cross-attention's
     K and V computed once per source (decoder_forward_token, seq2seq_decode);
  7. evaluation: decoding (greedy, sampled) against teacher forcing at the same positions,
     and after the first wrong token (exact match = teacher-forced sequence accuracy);
then the program, train_seq2seq_main.c: the run's setup from the flags, the training loop,
the report and the pictures (its flags util/cli.h's, its resume, checkpoints, stops and step
line util/run.h's, as train_gpt2's). This file holds no program: test_seq2seq.c includes it.
Tokens (util/pairs.h): PAD = 0, BOS = 1, EOS = 2, characters from 3. A batch holds B pairs:
src (B,Ts) padded with PAD after src_len[b]; dec_in (B,Tt) = BOS, target, PAD...; dec_tgt
(B,Tt) = target, EOS, -1 (no loss)... Shapes: Ts source length, Tt target length + 1,
Le and Ld the layers of the encoder and the decoder; the rest as in train_gpt2.c.
Names: seq2seq_ for the model's operations, the counterparts of train_gpt2.c's gpt2_
(seq2seq_forward, seq2seq_backward, seq2seq_train_step, seq2seq_decode, checkpoints);
s2s_ for everything else of this file that would otherwise take a name of train_gpt2.c or
train_gpt2_main.c (its helpers s2s_parameter_sizes, s2s_dropout, ..., and the program's S2SRun, s2s_setup,
s2s_train).
*/
#include "train_gpt2.c"  // the model alone (its program is train_gpt2_main.c)
#include "util/pairs.h"  // PairSet, PairBatch: pair files and their batches

#define CHECKPOINT_MAGIC 20240326  // llm.c's model checkpoint header

// ----------------------------------------------------------------------------
// the model: configuration, parameters, activations

typedef struct {
    int max_seq_len;        // maxT: the longest source, and the longest target + 1
    int vocab_size;         // V, the specials included
    int padded_vocab_size;  // Vp: V rounded up to a multiple of 128, rows of wte
    int enc_layers;         // Le
    int dec_layers;         // Ld
    int num_heads;          // NH
    int channels;           // C
    int pos_encoding, ln_place, activation;  // train_gpt2.c's POS_LEARNED|POS_SIN, LN_*, ACT_*
    int mask;               // the decoder's self-attention: MASK_CAUSAL, or MASK_NONE (-causal 0,
                            //   an experiment: in training each position reads what it predicts)
    int embed_scale;        // 1 (-es 1): token embeddings times sqrt(C) on the way in, not in the
                            //   tied head (the original Transformer's; doc/errata.md E15)
    int ff;                 // d_ff: the MLPs' hidden width (-ff); 0 = 4C (article 003's toy layer: 2d)
    float att_scale;        // -as: every attention's factor on its scores; 0 = 1/sqrt(hs)
} Seq2SeqConfig;

// the MLPs' hidden width F: -ff, or 4C
static int s2s_ff(Seq2SeqConfig c) { return c.ff ? c.ff : 4 * c.channels; }

// all parameters, in the checkpoint's order. L.. arrays hold one slice per layer.
#define NUM_S2S_PARAMETERS 38
typedef struct {
    float* wte;        // (Vp,C) token embedding of source and target, and the output head (tied)
    float* wpe;        // (maxT,C) learned positions, shared by both stacks (NULL with -pe sin)
    // the encoder, Le layers of GPT-2's tensors: self-attention (unmasked), MLP
    float* e_ln1w;     // (Le,C)
    float* e_ln1b;     // (Le,C)
    float* e_qkvw;     // (Le,3C,C)
    float* e_qkvb;     // (Le,3C)
    float* e_attprojw; // (Le,C,C)
    float* e_attprojb; // (Le,C)
    float* e_ln2w;     // (Le,C)
    float* e_ln2b;     // (Le,C)
    float* e_fcw;      // (Le,F,C) F = d_ff, 4C unless -ff
    float* e_fcb;      // (Le,F)
    float* e_fcprojw;  // (Le,C,F)
    float* e_fcprojb;  // (Le,C)
    float* enc_lnfw;   // (C) the encoder's final layernorm: its output is the memory
    float* enc_lnfb;   // (C)
    // the decoder, Ld layers: causal self-attention, cross-attention, MLP
    float* d_ln1w;     // (Ld,C)
    float* d_ln1b;     // (Ld,C)
    float* d_qkvw;     // (Ld,3C,C)
    float* d_qkvb;     // (Ld,3C)
    float* d_attprojw; // (Ld,C,C)
    float* d_attprojb; // (Ld,C)
    float* d_lnxw;     // (Ld,C) the cross-attention's layernorm
    float* d_lnxb;     // (Ld,C)
    float* d_xqw;      // (Ld,C,C) queries from the decoder stream
    float* d_xqb;      // (Ld,C)
    float* d_xkvw;     // (Ld,2C,C) keys and values from the memory: K rows, then V rows
    float* d_xkvb;     // (Ld,2C)
    float* d_xprojw;   // (Ld,C,C)
    float* d_xprojb;   // (Ld,C)
    float* d_ln2w;     // (Ld,C)
    float* d_ln2b;     // (Ld,C)
    float* d_fcw;      // (Ld,F,C)
    float* d_fcb;      // (Ld,F)
    float* d_fcprojw;  // (Ld,C,F)
    float* d_fcprojb;  // (Ld,C)
    float* lnfw;       // (C) the decoder's final layernorm
    float* lnfb;       // (C)
} Seq2SeqParams;

__attribute__((unused)) static const char* const S2S_PARAMETER_NAMES[NUM_S2S_PARAMETERS] = {
    "wte", "wpe", "e_ln1w", "e_ln1b", "e_qkvw", "e_qkvb", "e_attprojw", "e_attprojb", "e_ln2w", "e_ln2b",
    "e_fcw", "e_fcb", "e_fcprojw", "e_fcprojb", "enc_lnfw", "enc_lnfb", "d_ln1w", "d_ln1b", "d_qkvw",
    "d_qkvb", "d_attprojw", "d_attprojb", "d_lnxw", "d_lnxb", "d_xqw", "d_xqb", "d_xkvw", "d_xkvb",
    "d_xprojw", "d_xprojb", "d_ln2w", "d_ln2b", "d_fcw", "d_fcb", "d_fcprojw", "d_fcprojb", "lnfw", "lnfb"};

// AdamW decays the embeddings and the matmul weights, not biases or layernorms
static const int S2S_DECAYS[NUM_S2S_PARAMETERS] = {
    1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0,
    0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0};

static void s2s_parameter_sizes(size_t* sizes, Seq2SeqConfig c) {
    size_t Vp = c.padded_vocab_size, C = c.channels, Le = c.enc_layers, Ld = c.dec_layers, F = s2s_ff(c);
    size_t wpe = c.pos_encoding == POS_LEARNED ? (size_t)c.max_seq_len * C : 0;
    size_t s[NUM_S2S_PARAMETERS] = {
        Vp * C, wpe,
        Le * C, Le * C, Le * 3 * C * C, Le * 3 * C, Le * C * C, Le * C,
        Le * C, Le * C, Le * F * C, Le * F, Le * C * F, Le * C, C, C,
        Ld * C, Ld * C, Ld * 3 * C * C, Ld * 3 * C, Ld * C * C, Ld * C,
        Ld * C, Ld * C, Ld * C * C, Ld * C, Ld * 2 * C * C, Ld * 2 * C, Ld * C * C, Ld * C,
        Ld * C, Ld * C, Ld * F * C, Ld * F, Ld * C * F, Ld * C, C, C};
    memcpy(sizes, s, sizeof s);
}

// The structs of named pointers below hold nothing but float pointers, in file order, so
// their fields are laid out as an array: point_fields points them all into one allocation.
static float* point_fields(void* fields, int n, float* memory, const size_t* sizes) {
    float** ptrs[64];
    for (int i = 0; i < n; i++)
        ptrs[i] = (float**)fields + i;
    return point_tensors(ptrs, n, memory, sizes);
}

// The sublayers of both stacks, in the order of the forward pass: encoder layer l is
// sublayers 2l (self-attention) and 2l+1 (MLP); decoder layer l is 2Le + 3l (causal
// self-attention), 2Le + 3l + 1 (cross-attention) and 2Le + 3l + 2 (MLP). The attention
// branches are numbered apart (sites: encoder layer l's is l; decoder layer l's self- and
// cross-attention Le + 2l and Le + 2l + 1), and so are the MLPs (Le + l for the decoder).
enum { SUB_SELF, SUB_CROSS, SUB_MLP };
static int num_sublayers(Seq2SeqConfig c) { return 2 * c.enc_layers + 3 * c.dec_layers; }
static int num_att_sites(Seq2SeqConfig c) { return c.enc_layers + 2 * c.dec_layers; }
static int num_mlp_sites(Seq2SeqConfig c) { return c.enc_layers + c.dec_layers; }

// what the forward pass keeps, for batches of up to B pairs and sequences of up to maxT
// (T below): every per-sublayer or per-site tensor has a slot of that capacity, of which a
// batch uses its B x Ts (encoder) or B x Tt (decoder) rows
#define NUM_S2S_ACTIVATIONS 21
typedef struct {
    float* src_embed;   // (B,T,C) wte[src] + positions (after dropout): the encoder's input
    float* tgt_embed;   // (B,T,C) wte[dec_in] + positions: the decoder's input
    float* ln;          // (S,B,T,C) each sublayer's layernorm output (S sublayers)
    float* ln_mean;     // (S,B,T)
    float* ln_rstd;     // (S,B,T)
    float* branch;      // (S,B,T,C) each sublayer's branch output (after dropout)
    float* res;         // (S,B,T,C) the stream plus the branch
    float* qkv;         // (A,B,T,3C) attention sites: self: the fused Q,K,V; cross: Q (B,Tt,C),
                        //   then K,V (B,Ts,2C) at offset B T C
    float* atty;        // (A,B,T,C) the heads' outputs, before the projection
    float* att_scores;  // (A,B,NH,T,T) of which (B,NH,Tq,Tk) are used
    float* att_probs;   // (A,B,NH,T,T)
    float* att_dropped; // (A,B,NH,T,T), NULL without dropout
    float* fch;         // (M,B,T,F) MLP sites: hidden before the non-linearity
    float* fch_act;     // (M,B,T,F) and after it
    float* memory;      // (B,T,C) the encoder's output (its final layernorm), read by every
                        //   decoder layer's cross-attention
    float* memory_mean; // (B,T)
    float* memory_rstd; // (B,T)
    float* lnf;         // (B,T,C) the decoder's final layernorm
    float* lnf_mean;    // (B,T)
    float* lnf_rstd;    // (B,T)
    float* logits;      // (B,T,Vp); the backward overwrites it with dlogits
    float* probs;       // (B,T,Vp)
} Seq2SeqActs;

static void s2s_activation_sizes(size_t* sizes, Seq2SeqConfig c, int B, int dropout) {
    size_t C = c.channels, BT = (size_t)B * c.max_seq_len, S = num_sublayers(c), A = num_att_sites(c);
    size_t M = num_mlp_sites(c) * (size_t)s2s_ff(c);  // the MLP sites' hidden values per position
    size_t att = A * B * c.num_heads * (size_t)c.max_seq_len * c.max_seq_len;
    size_t s[NUM_S2S_ACTIVATIONS + 1] = {
        BT * C, BT * C, S * BT * C, S * BT, S * BT, S * BT * C, S * BT * C, A * BT * 3 * C, A * BT * C,
        att, att, dropout ? att : 0, M * BT, M * BT, BT * C, BT, BT, BT * C, BT, BT,
        BT * c.padded_vocab_size, BT * c.padded_vocab_size};
    memcpy(sizes, s, sizeof s);
}

// gradients of activations: one sublayer's worth, reused on the way down
#define NUM_S2S_SCRATCH 12
typedef struct {
    float* dres;      // (B,T,C) the stream's gradient, updated in place from the top down
    float* dbranch;   // (B,T,C) a branch output's gradient before its dropout
    float* dln;       // (B,T,C) the gradient of a branch's input
    float* dsum;      // (B,T,C) post-LN: the gradient of a residual sum
    float* datty;     // (B,T,C)
    float* dqkv;      // (B,T,3C) as qkv: cross-attention's dQ, then dK,dV at offset B T C
    float* dfch;      // (B,T,F)
    float* dfch_act;  // (B,T,F)
    float* dmemory;   // (B,T,C) the memory's gradient: the sum over the decoder layers
    float* dmemory_l; // (B,T,C) one decoder layer's part of it
    float* losses;    // (B,T) the forward's per-position loss (0 where no target)
    float* dlosses;   // (B,T)
} Seq2SeqScratch;

typedef struct {
    Seq2SeqConfig config;
    Seq2SeqParams params;
    size_t param_sizes[NUM_S2S_PARAMETERS];
    float* params_memory;
    size_t num_parameters;
    float* sinusoids;     // (maxT,C) -pe sin, or NULL
    Seq2SeqParams grads;  // gradients and AdamW's moments, allocated when first needed
    float* grads_memory;
    float* m_memory;
    float* v_memory;
    Seq2SeqActs acts;     // the forward's cache and the backward's scratch for B pairs
    float* acts_memory;
    Seq2SeqScratch scratch;
    float* scratch_memory;
    int batch_size;       // B the buffers hold
    int B, Ts, Tt;        // the last forward's batch
    int *src, *src_len, *dec_in, *dec_tgt;  // (B,T) (B) (B,T) (B,T) its tokens
    int* dec_len;         // (B) real decoder inputs (BOS + target): -causal 0's key-padding mask
    int num_targets;      // positions carrying loss in it
    float mean_loss;      // its loss, or -1 without targets
    float dropout_p;      // dropout (training only): probability, seed, the step of the forward
    uint64_t dropout_seed;
    long dropout_step;    // -1 = evaluation
    int freeze_encoder;   // -fe 1: the backward stops at the memory, the update skips the encoder
    int sgd;              // -opt sgd: plain SGD, W -= lr dL/dW (article 002's update), not AdamW
} Seq2Seq;

static void s2s_check_config(Seq2SeqConfig c, const char* source) {
    if (c.max_seq_len <= 0 || c.vocab_size <= 3 || c.enc_layers <= 0 || c.dec_layers <= 0 ||
        c.num_heads <= 0 || c.channels <= 0)
        die("%s: model shape must be positive, V above the 3 specials (maxT %d, V %d, Le %d, Ld %d, NH %d, "
            "C %d)", source, c.max_seq_len, c.vocab_size, c.enc_layers, c.dec_layers, c.num_heads,
            c.channels);
    if (c.channels % c.num_heads != 0)
        die("%s: channels %d are not divisible by heads %d", source, c.channels, c.num_heads);
    if (c.padded_vocab_size < c.vocab_size || c.vocab_size > 65536 || c.padded_vocab_size > 1 << 20 ||
        c.channels > 1 << 14 || c.enc_layers > 256 || c.dec_layers > 256 || c.max_seq_len > 4096)
        die("%s: model shape out of range (V %d, Vp %d, C %d, Le %d, Ld %d, maxT %d)", source, c.vocab_size,
            c.padded_vocab_size, c.channels, c.enc_layers, c.dec_layers, c.max_seq_len);
    if (c.ff < 0 || c.ff > 1 << 18)
        die("%s: MLP width d_ff %d out of range (1..262144, or 0 for 4C)", source, c.ff);
    if (!(c.att_scale >= 0.0f && c.att_scale < 1e6f))
        die("%s: attention scale %g out of range (0 < scale < 1e6; 0 = 1/sqrt(hs))", source, c.att_scale);
    if ((c.pos_encoding != POS_LEARNED && c.pos_encoding != POS_SIN) || !ln_place_word(c.ln_place) ||
        !activation_word(c.activation) || !mask_word(c.mask) || (unsigned)c.embed_scale > 1)
        die("%s: unknown variant setting (positions %d: learned or sin; layernorm %d, activation %d, "
            "mask %d, embedding scale %d)", source, c.pos_encoding, c.ln_place, c.activation, c.mask,
            c.embed_scale);
}

static void s2s_allocate_parameters(Seq2Seq* m, Seq2SeqConfig c) {
    memset(m, 0, sizeof *m);
    m->config = c;
    s2s_parameter_sizes(m->param_sizes, c);
    m->num_parameters = sum_sizes(m->param_sizes, NUM_S2S_PARAMETERS);
    m->params_memory = point_fields(&m->params, NUM_S2S_PARAMETERS,
                                    alignedMallocCheck(m->num_parameters * sizeof(float)), m->param_sizes);
    m->mean_loss = -1.0f;
    m->dropout_step = -1;
    if (c.pos_encoding == POS_SIN)
        sinusoids_init(m->sinusoids = mallocCheck((size_t)c.max_seq_len * c.channels * sizeof(float)),
                       c.max_seq_len, c.channels);
}

// GPT-2's initialisation (train_gpt2.c, gpt2_init_random): matrices N(0, 0.02), the
// projections into the residual stream scaled by 1/sqrt(2L) for a stack of L layers,
// biases 0, layernorm weights 1, padding rows of wte 0
void seq2seq_init_random(Seq2Seq* m, Seq2SeqConfig c, uint64_t seed) {
    if ((long long)c.ff == 4LL * c.channels) c.ff = 0;  // the default width: one spelling of it
    s2s_check_config(c, "the fresh model (-nl, -nle, -nld, -nh, -nc, -mt, -ff)");
    s2s_allocate_parameters(m, c);
    memset(m->params_memory, 0, m->num_parameters * sizeof(float));
    Seq2SeqParams p = m->params;
    size_t C = c.channels, Le = c.enc_layers, Ld = c.dec_layers, *n = m->param_sizes;
    float enc_std = 0.02f / sqrtf(2.0f * Le), dec_std = 0.02f / sqrtf(3.0f * Ld);  // 3: three writers
    struct { float* t; size_t n; float std; } normal_init[] = {
        {p.wte, (size_t)c.vocab_size * C, 0.02f}, {p.wpe, n[1], 0.02f},
        {p.e_qkvw, n[4], 0.02f}, {p.e_attprojw, n[6], enc_std}, {p.e_fcw, n[10], 0.02f},
        {p.e_fcprojw, n[12], enc_std}, {p.d_qkvw, n[18], 0.02f}, {p.d_attprojw, n[20], dec_std},
        {p.d_xqw, n[24], 0.02f}, {p.d_xkvw, n[26], 0.02f}, {p.d_xprojw, n[28], dec_std},
        {p.d_fcw, n[32], 0.02f}, {p.d_fcprojw, n[34], dec_std}};
    uint64_t rng = splitmix64(seed);
    for (size_t k = 0; k < sizeof normal_init / sizeof normal_init[0]; k++)
        for (size_t i = 0; i < normal_init[k].n; i++)
            normal_init[k].t[i] = normal_init[k].std * random_normal(&rng);
    float* ones[] = {p.e_ln1w, p.e_ln2w, p.d_ln1w, p.d_lnxw, p.d_ln2w};
    size_t ones_n[] = {Le * C, Le * C, Ld * C, Ld * C, Ld * C};
    for (int k = 0; k < 5; k++)
        for (size_t i = 0; i < ones_n[k]; i++)
            ones[k][i] = 1.0f;
    for (size_t i = 0; i < C; i++)
        p.enc_lnfw[i] = p.lnfw[i] = 1.0f;
}

// the forward's cache and the backward's scratch for up to B pairs (maxT long)
static void s2s_allocate_activations(Seq2Seq* m, int B) {
    int dropout = m->dropout_p > 0.0f;
    if (m->acts_memory && B <= m->batch_size && (!dropout || m->acts.att_dropped)) return;
    if (m->acts_memory) B = B > m->batch_size ? B : m->batch_size;
    aligned_free(m->acts_memory); aligned_free(m->scratch_memory);
    free(m->src); free(m->src_len); free(m->dec_in); free(m->dec_tgt); free(m->dec_len);
    Seq2SeqConfig c = m->config;
    size_t sizes[NUM_S2S_ACTIVATIONS + 1], C = c.channels, BT = (size_t)B * c.max_seq_len;
    s2s_activation_sizes(sizes, c, B, dropout);
    m->acts_memory = point_fields(&m->acts, NUM_S2S_ACTIVATIONS + 1,
        alignedMallocCheck(sum_sizes(sizes, NUM_S2S_ACTIVATIONS + 1) * sizeof(float)), sizes);
    size_t F = s2s_ff(c);
    size_t s[NUM_S2S_SCRATCH] = {BT * C, BT * C, BT * C, BT * C, BT * C, BT * 3 * C, BT * F, BT * F,
                                 BT * C, BT * C, BT, BT};
    m->scratch_memory = point_fields(&m->scratch, NUM_S2S_SCRATCH,
        alignedMallocCheck(sum_sizes(s, NUM_S2S_SCRATCH) * sizeof(float)), s);
    m->src = mallocCheck(BT * sizeof(int));
    m->src_len = mallocCheck((size_t)B * sizeof(int));
    m->dec_len = mallocCheck((size_t)B * sizeof(int));
    m->dec_in = mallocCheck(BT * sizeof(int));
    m->dec_tgt = mallocCheck(BT * sizeof(int));
    m->batch_size = B;
}

void seq2seq_free(Seq2Seq* m) {
    aligned_free(m->params_memory); aligned_free(m->grads_memory);
    aligned_free(m->m_memory); aligned_free(m->v_memory);
    free(m->sinusoids); aligned_free(m->acts_memory); aligned_free(m->scratch_memory);
    free(m->src); free(m->src_len); free(m->dec_in); free(m->dec_tgt); free(m->dec_len);
    memset(m, 0, sizeof *m);
}

// ----------------------------------------------------------------------------
// a sublayer: its weights and its activations

typedef struct {
    int kind;         // SUB_SELF, SUB_CROSS or SUB_MLP
    int decoder;      // 0: encoder, 1: decoder
    int layer;        // its layer in its stack
    int site;         // its attention site (SUB_SELF, SUB_CROSS) or MLP site (SUB_MLP)
    float *lnw, *lnb; // (C) its layernorm
    float *w1, *b1;   // the branch's first matmul: qkvw (3C,C), xqw (C,C) or fcw (F,C); bias
    float *w2, *b2;   // its last: attprojw (C,C), xprojw (C,C) or fcprojw (C,F); bias
    float *wkv, *bkv; // cross-attention: xkvw (2C,C), xkvb (2C); otherwise NULL
} Sublayer;

// sublayer s's slices of the parameters p (or of their gradients, the same layout)
static Sublayer sublayer(const Seq2SeqParams* p, Seq2SeqConfig c, int s) {
    size_t C = c.channels, F = s2s_ff(c);
    Sublayer u = {0};
    u.decoder = s >= 2 * c.enc_layers;
    int r = u.decoder ? s - 2 * c.enc_layers : s;
    u.layer = u.decoder ? r / 3 : r / 2;
    u.kind = u.decoder ? r % 3 : (r % 2 ? SUB_MLP : SUB_SELF);
    size_t l = u.layer;
    if (u.kind == SUB_MLP) {
        u.site = u.decoder ? c.enc_layers + u.layer : u.layer;
        float *lnw = u.decoder ? p->d_ln2w : p->e_ln2w, *lnb = u.decoder ? p->d_ln2b : p->e_ln2b;
        float *fcw = u.decoder ? p->d_fcw : p->e_fcw, *fcb = u.decoder ? p->d_fcb : p->e_fcb;
        float *pw = u.decoder ? p->d_fcprojw : p->e_fcprojw, *pb = u.decoder ? p->d_fcprojb : p->e_fcprojb;
        u.lnw = lnw + l * C; u.lnb = lnb + l * C; u.w1 = fcw + l * F * C; u.b1 = fcb + l * F;
        u.w2 = pw + l * F * C; u.b2 = pb + l * C;
    } else if (u.kind == SUB_SELF) {
        u.site = u.decoder ? c.enc_layers + 2 * u.layer : u.layer;
        float *lnw = u.decoder ? p->d_ln1w : p->e_ln1w, *lnb = u.decoder ? p->d_ln1b : p->e_ln1b;
        float *qw = u.decoder ? p->d_qkvw : p->e_qkvw, *qb = u.decoder ? p->d_qkvb : p->e_qkvb;
        float *pw = u.decoder ? p->d_attprojw : p->e_attprojw;
        float *pb = u.decoder ? p->d_attprojb : p->e_attprojb;
        u.lnw = lnw + l * C; u.lnb = lnb + l * C; u.w1 = qw + l * 3 * C * C; u.b1 = qb + l * 3 * C;
        u.w2 = pw + l * C * C; u.b2 = pb + l * C;
    } else {
        u.site = c.enc_layers + 2 * u.layer + 1;
        u.lnw = p->d_lnxw + l * C; u.lnb = p->d_lnxb + l * C;
        u.w1 = p->d_xqw + l * C * C; u.b1 = p->d_xqb + l * C;
        u.wkv = p->d_xkvw + l * 2 * C * C; u.bkv = p->d_xkvb + l * 2 * C;
        u.w2 = p->d_xprojw + l * C * C; u.b2 = p->d_xprojb + l * C;
    }
    return u;
}

// sublayer s's slots of the activations
typedef struct {
    float *ln, *ln_mean, *ln_rstd, *branch, *res;           // the sublayer's own
    float *qkv, *atty, *att_scores, *att_probs, *att_dropped; // its attention site's
    float *fch, *fch_act;                                     // its MLP site's
} SublayerActs;

static SublayerActs sublayer_acts(const Seq2Seq* m, Sublayer u, int s) {
    const Seq2SeqActs* a = &m->acts;
    Seq2SeqConfig c = m->config;
    size_t C = c.channels, BT = (size_t)m->batch_size * c.max_seq_len;
    size_t att = (size_t)m->batch_size * c.num_heads * c.max_seq_len * c.max_seq_len, site = u.site;
    SublayerActs sa = {a->ln + s * BT * C, a->ln_mean + s * BT, a->ln_rstd + s * BT, a->branch + s * BT * C,
                       a->res + s * BT * C, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    if (u.kind == SUB_MLP) {
        sa.fch = a->fch + site * BT * s2s_ff(c);
        sa.fch_act = a->fch_act + site * BT * s2s_ff(c);
    } else {
        sa.qkv = a->qkv + site * BT * 3 * C;
        sa.atty = a->atty + site * BT * C;
        sa.att_scores = a->att_scores + site * att;
        sa.att_probs = a->att_probs + site * att;
        sa.att_dropped = a->att_dropped ? a->att_dropped + site * att : NULL;
    }
    return sa;
}

// the output of sublayer s: the sum (pre-LN) or its layernorm (post-LN)
static float* sublayer_output(const Seq2Seq* m, int s) {
    Seq2SeqConfig c = m->config;
    size_t BT = (size_t)m->batch_size * c.max_seq_len;
    return (c.ln_place == LN_POST ? m->acts.ln : m->acts.res) + (size_t)s * BT * c.channels;
}

// the stream that enters sublayer s: an embedding, or the output of sublayer s - 1
static float* sublayer_input(const Seq2Seq* m, int s) {
    if (s == 0) return m->acts.src_embed;
    if (s == 2 * m->config.enc_layers) return m->acts.tgt_embed;
    return sublayer_output(m, s - 1);
}

// the attention of a sublayer: the encoder's sees every real source position (padded keys
// masked), the decoder's self-attention is causal, and its cross-attention reads the
// memory's real positions: queries (B,Tt) of row C, keys and values (B,Ts) of row 2C
static AttentionShape sublayer_attention(const Seq2Seq* m, Sublayer u) {
    Seq2SeqConfig c = m->config;
    int NH = c.num_heads, C = c.channels;
    if (!u.decoder)
        return (AttentionShape){.B = m->B, .T = m->Ts, .C = C, .NH = NH, .NKV = NH, .causal = 0,
                                .key_len = m->src_len, .scale = c.att_scale};
    if (u.kind == SUB_SELF)  // -causal 0: every real position of the target, padding masked
        return (AttentionShape){.B = m->B, .T = m->Tt, .C = C, .NH = NH, .NKV = NH,
                                .causal = c.mask == MASK_CAUSAL,
                                .key_len = c.mask == MASK_NONE ? m->dec_len : NULL, .scale = c.att_scale};
    return (AttentionShape){.B = m->B, .T = m->Tt, .C = C, .NH = NH, .NKV = NH, .causal = 0, .Tk = m->Ts,
                            .q_stride = C, .kv_stride = 2 * C, .key_len = m->src_len, .scale = c.att_scale};
}

// the dropout mask of a site of sublayer s (site DROP_EMBED: s = 0 the source's, s = 1 the
// target's embedding); p = 0 in evaluation
static DropoutMask s2s_dropout(const Seq2Seq* m, int s, int site) {
    float p = m->dropout_step >= 0 ? m->dropout_p : 0.0f;
    return dropout_mask(p, m->dropout_seed, (uint64_t)m->dropout_step, s, site);
}

// ----------------------------------------------------------------------------
// the forward pass

// the branch f of sublayer s on its input in (B,T,C); writes acts' branch slot
static void branch_forward(Seq2Seq* m, int s, const float* in) {
    Seq2SeqConfig c = m->config;
    Sublayer w = sublayer(&m->params, c, s);
    SublayerActs a = sublayer_acts(m, w, s);
    int C = c.channels, rows = m->B * (w.decoder ? m->Tt : m->Ts);
    DropoutMask att_drop = s2s_dropout(m, s, DROP_ATT_PROBS);
    DropoutMask out_drop = s2s_dropout(m, s, w.kind == SUB_MLP ? DROP_MLP_OUT : DROP_ATT_OUT);
    if (w.kind == SUB_MLP) {  // fcproj(act(fc(in))), hidden width F
        int F = s2s_ff(c);
        matmul_forward(a.fch, in, w.w1, w.b1, rows, C, F);
        activation_forward(a.fch_act, a.fch, (size_t)rows * F, c.activation);
        matmul_forward(a.branch, a.fch_act, w.w2, w.b2, rows, F, C);
    } else {
        const float* kv = a.qkv + C;  // self-attention: K,V follow Q in each fused row
        if (w.kind == SUB_SELF) {
            matmul_forward(a.qkv, in, w.w1, w.b1, rows, C, 3 * C);
        } else {  // cross: Q = in Wq^T from the decoder, [K V] = memory Wkv^T from the encoder
            float* xkv = a.qkv + (size_t)m->batch_size * c.max_seq_len * C;
            matmul_forward(a.qkv, in, w.w1, w.b1, rows, C, C);
            matmul_forward(xkv, m->acts.memory, w.wkv, w.bkv, m->B * m->Ts, C, 2 * C);
            kv = xkv;
        }
        attention_forward(a.atty, a.att_scores, a.att_probs, a.att_dropped, a.qkv, kv,
                          sublayer_attention(m, w), &att_drop);
        matmul_forward(a.branch, a.atty, w.w2, w.b2, rows, C, C);
    }
    dropout_forward(a.branch, (size_t)rows * C, &out_drop);
}

// pre-LN: res = x + f(ln(x)); post-LN (the original Transformer): ln = ln(x + f(x))
static void sublayer_forward(Seq2Seq* m, int s) {
    Seq2SeqConfig c = m->config;
    Sublayer w = sublayer(&m->params, c, s);
    SublayerActs a = sublayer_acts(m, w, s);
    const float* x = sublayer_input(m, s);
    int C = c.channels, rows = m->B * (w.decoder ? m->Tt : m->Ts);
    if (c.ln_place == LN_PRE) {
        layernorm_forward(a.ln, a.ln_mean, a.ln_rstd, x, w.lnw, w.lnb, rows, C);
        branch_forward(m, s, a.ln);
        residual_forward(a.res, x, a.branch, (size_t)rows * C);
    } else {
        branch_forward(m, s, x);
        residual_forward(a.res, x, a.branch, (size_t)rows * C);
        layernorm_forward(a.ln, a.ln_mean, a.ln_rstd, a.res, w.lnw, w.lnb, rows, C);
    }
}

static const float* s2s_positions(const Seq2Seq* m) {
    return m->config.pos_encoding == POS_LEARNED ? m->params.wpe : m->sinusoids;
}

// the embedding of tokens (B,T) -> out (B,T,C): wte[token] (times sqrt(C) with -es 1) plus
// the positions' rows (positions: row 0 is the first of the T; NULL: none)
static void s2s_embed(const Seq2Seq* m, float* out, const int* tokens, int B, int T,
                      const float* positions) {
    int C = m->config.channels;
    if (!m->config.embed_scale) {  // train_gpt2.c's encoder_forward as it is
        encoder_forward(out, tokens, m->params.wte, positions, B, T, C);
        return;
    }
    encoder_forward(out, tokens, m->params.wte, NULL, B, T, C);
    float scale = sqrtf((float)C);
    for (size_t bt = 0; bt < (size_t)B * T; bt++)
        for (int i = 0; i < C; i++)
            out[bt * C + i] = scale * out[bt * C + i] + (positions ? positions[(bt % T) * C + i] : 0.0f);
}

// its backward: dwte[token] += sqrt(C) dout (-es 1) or dout, dwpe[t] += dout (learned
// positions); scaled is (B,T,C) scratch
static void s2s_embed_backward(Seq2Seq* m, const float* dout, const int* tokens, int B, int T,
                               float* scaled) {
    int C = m->config.channels;
    float* dwpe = m->config.pos_encoding == POS_LEARNED ? m->grads.wpe : NULL;
    if (!m->config.embed_scale) {
        encoder_backward(m->grads.wte, dwpe, dout, tokens, B, T, C, GRAD_ADD);
        return;
    }
    float scale = sqrtf((float)C);
    for (size_t i = 0; i < (size_t)B * T * C; i++)
        scaled[i] = scale * dout[i];
    encoder_backward(m->grads.wte, NULL, scaled, tokens, B, T, C, GRAD_ADD);
    for (int b = 0; dwpe && b < B; b++)
        for (int t = 0; t < T; t++)
            for (int i = 0; i < C; i++)
                dwpe[(size_t)t * C + i] += dout[((size_t)b * T + t) * C + i];
}

// the encoder: src (B,Ts) with src_len (B) real tokens each -> acts.memory (B,Ts,C)
void seq2seq_encode(Seq2Seq* m, const int* src, const int* src_len, int B, int Ts, long step) {
    Seq2SeqConfig c = m->config;
    int C = c.channels;
    if (B <= 0 || Ts <= 0 || Ts > c.max_seq_len)
        die("source batch %d x %d does not fit the model (maxT %d)", B, Ts, c.max_seq_len);
    for (int b = 0; b < B; b++)
        if (src_len[b] < 1 || src_len[b] > Ts)
            die("source %d has length %d, not in 1..%d", b, src_len[b], Ts);
    check_tokens(src, (size_t)B * Ts, c.vocab_size, "source");
    s2s_allocate_activations(m, B);
    memcpy(m->src, src, (size_t)B * Ts * sizeof(int));
    memcpy(m->src_len, src_len, (size_t)B * sizeof(int));
    m->B = B;
    m->Ts = Ts;
    m->dropout_step = step;
    Seq2SeqActs a = m->acts;
    s2s_embed(m, a.src_embed, src, B, Ts, s2s_positions(m));
    DropoutMask embed_drop = s2s_dropout(m, 0, DROP_EMBED);
    dropout_forward(a.src_embed, (size_t)B * Ts * C, &embed_drop);
    for (int s = 0; s < 2 * c.enc_layers; s++)
        sublayer_forward(m, s);
    layernorm_forward(a.memory, a.memory_mean, a.memory_rstd, sublayer_output(m, 2 * c.enc_layers - 1),
                      m->params.enc_lnfw, m->params.enc_lnfb, B * Ts, C);
}

// the decoder with teacher forcing, after seq2seq_encode: dec_in (B,Tt) is BOS and the
// target (then PAD); position t predicts dec_tgt[t] (the target, then EOS, then -1 = no
// loss). Every position is computed in one pass, each seeing the true previous tokens.
// Returns the mean loss over the positions with a target, or -1 without targets.
float seq2seq_decode_teacher(Seq2Seq* m, const int* dec_in, const int* dec_tgt, int Tt) {
    Seq2SeqConfig c = m->config;
    int B = m->B, C = c.channels, V = c.vocab_size, Vp = c.padded_vocab_size, BT = B * Tt;
    if (Tt <= 0 || Tt > c.max_seq_len)
        die("target length %d does not fit the model (maxT %d)", Tt, c.max_seq_len);
    check_tokens(dec_in, (size_t)BT, V, "decoder input");
    memcpy(m->dec_in, dec_in, (size_t)BT * sizeof(int));
    m->Tt = Tt;
    for (int b = 0; b < B; b++) {  // the real inputs: one per target position (all without targets)
        m->dec_len[b] = dec_tgt ? 0 : Tt;
        for (int t = 0; dec_tgt && t < Tt; t++)
            m->dec_len[b] += dec_tgt[b * Tt + t] >= 0;
        if (m->dec_len[b] == 0) m->dec_len[b] = 1;  // no target: its loss is 0 whatever it reads
    }
    Seq2SeqActs a = m->acts;
    s2s_embed(m, a.tgt_embed, dec_in, B, Tt, s2s_positions(m));
    DropoutMask embed_drop = s2s_dropout(m, 1, DROP_EMBED);
    dropout_forward(a.tgt_embed, (size_t)BT * C, &embed_drop);
    for (int s = 2 * c.enc_layers; s < num_sublayers(c); s++)
        sublayer_forward(m, s);
    layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, sublayer_output(m, num_sublayers(c) - 1), m->params.lnfw,
                      m->params.lnfb, BT, C);
    matmul_forward(a.logits, a.lnf, m->params.wte, NULL, BT, C, Vp);  // tied output head
    softmax_forward(a.probs, a.logits, BT, V, Vp);
    m->mean_loss = -1.0f;
    if (!dec_tgt) return -1.0f;
    memcpy(m->dec_tgt, dec_tgt, (size_t)BT * sizeof(int));
    // the loss is the mean over the real target positions: padding carries none
    double sum = 0.0;
    m->num_targets = 0;
    for (int i = 0; i < BT; i++) {
        m->scratch.losses[i] = 0.0f;
        if (dec_tgt[i] < 0) continue;
        if (dec_tgt[i] >= V) die("target token %d at position %d is outside the vocabulary (0..%d)",
                                 dec_tgt[i], i, V - 1);
        crossentropy_forward(m->scratch.losses + i, a.probs + (size_t)i * Vp, dec_tgt + i, 1, Vp);
        sum += m->scratch.losses[i];
        m->num_targets++;
    }
    if (m->num_targets == 0) die("a batch with no target positions has no loss");
    m->mean_loss = (float)(sum / m->num_targets);
    return m->mean_loss;
}

// the whole forward pass on a batch; step >= 0: training (dropout masks of that step)
float seq2seq_forward(Seq2Seq* m, const PairBatch* pb, long step) {
    seq2seq_encode(m, pb->src, pb->src_len, pb->B, pb->Ts, step);
    return seq2seq_decode_teacher(m, pb->dec_in, pb->dec_tgt, pb->Tt);
}

// ----------------------------------------------------------------------------
// the backward pass: train_gpt2.c's layers in reverse; backward functions add into the
// parameters' gradients (train_gpt2.c, "the layers")

// the branch of sublayer s backward: dout is the gradient of its output (before dropout),
// in its input; writes the gradient of in into scratch.dln. A cross-attention also adds
// the gradient of the memory through its K,V projection into scratch.dmemory.
static void branch_backward(Seq2Seq* m, int s, const float* in, const float* dout) {
    Seq2SeqConfig c = m->config;
    Sublayer w = sublayer(&m->params, c, s);
    Sublayer dw = sublayer(&m->grads, c, s);
    SublayerActs a = sublayer_acts(m, w, s);
    Seq2SeqScratch* g = &m->scratch;
    int C = c.channels, rows = m->B * (w.decoder ? m->Tt : m->Ts);
    DropoutMask att_drop = s2s_dropout(m, s, DROP_ATT_PROBS);
    DropoutMask out_drop = s2s_dropout(m, s, w.kind == SUB_MLP ? DROP_MLP_OUT : DROP_ATT_OUT);
    const float* dbranch = dropout_grad(g->dbranch, dout, (size_t)rows * C, &out_drop);
    if (w.kind == SUB_MLP) {  // the same steps for any width F
        int F = s2s_ff(c);
        matmul_backward(g->dfch_act, dw.w2, dw.b2, dbranch, a.fch_act, w.w2, rows, F, C, GRAD_ADD);
        activation_backward(g->dfch, a.fch, g->dfch_act, (size_t)rows * F, c.activation);
        matmul_backward(g->dln, dw.w1, dw.b1, g->dfch, in, w.w1, rows, C, F, GRAD_ADD);
        return;
    }
    matmul_backward(g->datty, dw.w2, dw.b2, dbranch, a.atty, w.w2, rows, C, C, GRAD_ADD);
    AttentionShape shape = sublayer_attention(m, w);
    if (w.kind == SUB_SELF) {  // dQ, dK, dV side by side in the fused rows, as qkv
        attention_backward(g->dqkv, g->dqkv + C, g->datty, a.qkv, a.qkv + C, a.att_probs, a.att_dropped,
                           shape, &att_drop);
        matmul_backward(g->dln, dw.w1, dw.b1, g->dqkv, in, w.w1, rows, C, 3 * C, GRAD_ADD);
        return;
    }
    size_t kv_offset = (size_t)m->batch_size * c.max_seq_len * C;  // where K,V (and dK,dV) start
    attention_backward(g->dqkv, g->dqkv + kv_offset, g->datty, a.qkv, a.qkv + kv_offset, a.att_probs,
                       a.att_dropped, shape, &att_drop);
    // dQ -> the decoder stream
    matmul_backward(g->dln, dw.w1, dw.b1, g->dqkv, in, w.w1, rows, C, C, GRAD_ADD);
    // dK, dV -> the memory. Every decoder layer projects its own K and V from the same
    // memory, so the memory's gradient is the SUM of these terms over the decoder layers:
    // dmemory = sum_l [dK_l dV_l] Wkv_l (derived in doc/seq2seq.md). Added here, layer by layer.
    int mem_rows = m->B * m->Ts;
    matmul_backward(g->dmemory_l, dw.wkv, dw.bkv, g->dqkv + kv_offset, m->acts.memory, w.wkv, mem_rows, C,
                    2 * C, GRAD_ADD);
    residual_forward(g->dmemory, g->dmemory, g->dmemory_l, (size_t)mem_rows * C);
}

// one sublayer backward: scratch.dres holds the gradient of its output on entry and that
// of its input on exit. Pre-LN: res = x + f(ln(x)), so dx = dres + ln's backward of
// f's input gradient (layernorm_backward adds into dres). Post-LN: out = ln(x + f(x)), so
// dsum = ln's backward of dres, and dx = dsum + f's input gradient.
static void sublayer_backward(Seq2Seq* m, int s) {
    Seq2SeqConfig c = m->config;
    Sublayer w = sublayer(&m->params, c, s);
    Sublayer dw = sublayer(&m->grads, c, s);
    SublayerActs a = sublayer_acts(m, w, s);
    Seq2SeqScratch* g = &m->scratch;
    const float* x = sublayer_input(m, s);
    int C = c.channels, rows = m->B * (w.decoder ? m->Tt : m->Ts);
    size_t N = (size_t)rows * C;
    if (c.ln_place == LN_PRE) {
        branch_backward(m, s, a.ln, g->dres);
        layernorm_backward(g->dres, dw.lnw, dw.lnb, g->dln, x, w.lnw, a.ln_mean, a.ln_rstd, rows, C,
                           GRAD_ADD);
        return;
    }
    zero_floats(g->dsum, N);
    layernorm_backward(g->dsum, dw.lnw, dw.lnb, g->dres, a.res, w.lnw, a.ln_mean, a.ln_rstd, rows, C,
                       GRAD_ADD);
    branch_backward(m, s, x, g->dsum);
    stream_backward(g->dres, g->dsum, g->dln, N);
}

// gradients of the mean loss of the last forward, added into m->grads (zero them first
// for a fresh step). The decoder first, top down; the memory's gradient it collects then
// enters the encoder through the encoder's final layernorm.
void seq2seq_backward(Seq2Seq* m) {
    if (m->mean_loss < 0.0f) die("seq2seq_backward needs a forward pass with targets first");
    Seq2SeqConfig c = m->config;
    if (!m->grads_memory)
        m->grads_memory = point_fields(&m->grads, NUM_S2S_PARAMETERS,
                                       alignedCallocCheck(m->num_parameters, sizeof(float)), m->param_sizes);
    int B = m->B, C = c.channels, V = c.vocab_size, Vp = c.padded_vocab_size;
    int BT = B * m->Tt, BS = B * m->Ts, S = num_sublayers(c), Se = 2 * c.enc_layers;
    Seq2SeqActs a = m->acts;
    Seq2SeqScratch* g = &m->scratch;
    Seq2SeqParams* dp = &m->grads;
    // each real target position weighs 1/n in the mean; padded positions 0
    for (int i = 0; i < BT; i++)
        g->dlosses[i] = m->dec_tgt[i] >= 0 ? 1.0f / m->num_targets : 0.0f;
    float* dlogits = a.logits;  // the logits are not needed any more
    crossentropy_softmax_backward(dlogits, g->dlosses, a.probs, m->dec_tgt, BT, V, Vp);
    matmul_backward(g->dln, dp->wte, NULL, dlogits, a.lnf, m->params.wte, BT, C, Vp, GRAD_ADD);
    zero_floats(g->dres, (size_t)BT * C);
    layernorm_backward(g->dres, dp->lnfw, dp->lnfb, g->dln, sublayer_output(m, S - 1), m->params.lnfw,
                       a.lnf_mean, a.lnf_rstd, BT, C, GRAD_ADD);
    zero_floats(g->dmemory, (size_t)BS * C);  // the cross-attentions add into it
    for (int s = S - 1; s >= Se; s--)
        sublayer_backward(m, s);
    DropoutMask tgt_drop = s2s_dropout(m, 1, DROP_EMBED);
    const float* dtgt = dropout_grad(g->dbranch, g->dres, (size_t)BT * C, &tgt_drop);
    s2s_embed_backward(m, dtgt, m->dec_in, B, m->Tt, g->dln);
    if (m->freeze_encoder) return;  // -fe 1: nothing below the memory learns (nor wte from the source)
    // the encoder: its output's gradient is the memory's, through the final layernorm
    zero_floats(g->dres, (size_t)BS * C);
    layernorm_backward(g->dres, dp->enc_lnfw, dp->enc_lnfb, g->dmemory, sublayer_output(m, Se - 1),
                       m->params.enc_lnfw, a.memory_mean, a.memory_rstd, BS, C, GRAD_ADD);
    for (int s = Se - 1; s >= 0; s--)
        sublayer_backward(m, s);
    DropoutMask src_drop = s2s_dropout(m, 0, DROP_EMBED);
    const float* dsrc = dropout_grad(g->dbranch, g->dres, (size_t)BS * C, &src_drop);
    s2s_embed_backward(m, dsrc, m->src, B, m->Ts, g->dln);
}

// ----------------------------------------------------------------------------
// one training step: forward, backward, clipping, AdamW (train_gpt2.c's pieces)

// the tensors an update changes: all, or (-fe 1) all but the encoder's, e_ln1w..enc_lnfb
enum { FIRST_ENCODER_TENSOR = 2, FIRST_DECODER_TENSOR = 16 };
static int s2s_trained(const Seq2Seq* m, int k) {
    return !m->freeze_encoder || k < FIRST_ENCODER_TENSOR || k >= FIRST_DECODER_TENSOR;
}

// AdamW (train_gpt2.c's adamw_update) on the trained tensors, or plain SGD (-opt sgd):
// W -= lr (g + wd W), g the clipped gradient (article 002, section 4 (4); doc/errata.md E18)
static void s2s_update(Seq2Seq* m, const AdamWConfig* opt, float lr, float grad_scale, int t) {
    size_t offset = 0;
    for (int k = 0; k < NUM_S2S_PARAMETERS; offset += m->param_sizes[k++]) {
        if (!s2s_trained(m, k)) continue;
        float *p = m->params_memory + offset, *g = m->grads_memory + offset;
        if (!m->sgd) {
            adamw_update(p, NULL, g, m->m_memory + offset, m->v_memory + offset, m->param_sizes + k,
                         S2S_DECAYS + k, 1, opt, lr, grad_scale, t);
            continue;
        }
        float wd = S2S_DECAYS[k] ? opt->weight_decay : 0.0f;
        #pragma omp parallel for
        for (size_t i = 0; i < m->param_sizes[k]; i++)
            p[i] -= lr * (g[i] * grad_scale + wd * p[i]);
    }
}

StepStats seq2seq_train_step(Seq2Seq* m, const PairBatch* pb, int step, const AdamWConfig* opt) {
    float loss = seq2seq_forward(m, pb, step);
    if (!isfinite(loss)) return (StepStats){loss, 0.0f, 0.0f};
    if (m->grads_memory) zero_floats(m->grads_memory, m->num_parameters);
    seq2seq_backward(m);
    StepStats st = {loss, (float)sqrt(sum_of_squares(m->grads_memory, m->num_parameters)), 0.0f};
    st.lr = learning_rate(opt->schedule, step, opt->lr, opt->warmup, opt->max_steps, opt->final_lr_frac);
    if (!isfinite(st.norm)) return st;
    allocate_moments(&m->m_memory, &m->v_memory, m->num_parameters);  // train_gpt2.c's
    s2s_update(m, opt, st.lr, grad_clip_scale(st.norm, opt->grad_clip), step + 1);
    return st;
}

// ----------------------------------------------------------------------------
// checkpoints: llm.c's 256-int header, version 201, then the parameters in file order.
// Slots (doc/formats.md): 2 maxT, 3 V, 4 Le, 5 NH, 6 C, 7 Vp, 8 key/value heads (= NH),
// 9 positions, 10 layernorm, 11 activation (train_gpt2.c's numbering of the variants),
// 12 mask (0: the decoder's self-attention is causal; 1: none, -causal 0), 13 Ld, 14 embedding
// scale (0: none; 1: token embeddings times sqrt(C), -es 1), 15 d_ff (0: 4C; -ff), 16 the
// attention scale's float bits (0: 1/sqrt(hs); -as). 255 the checksum (200: none).

void seq2seq_write_checkpoint(const Seq2Seq* m, const char* path) {
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    Seq2SeqConfig c = m->config;
    int32_t h[256] = {0};
    h[0] = CHECKPOINT_MAGIC; h[1] = CHECKPOINT_SEQ2SEQ; h[2] = c.max_seq_len; h[3] = c.vocab_size;
    h[4] = c.enc_layers; h[5] = c.num_heads; h[6] = c.channels; h[7] = c.padded_vocab_size;
    h[8] = c.num_heads; h[9] = c.pos_encoding; h[10] = c.ln_place; h[11] = c.activation; h[12] = c.mask;
    h[13] = c.dec_layers; h[14] = c.embed_scale; h[15] = s2s_ff(c) == 4 * c.channels ? 0 : c.ff;
    memcpy(&h[16], &c.att_scale, sizeof c.att_scale);
    h[255] = (int32_t)crc32c_update(header_checksum(h), m->params_memory, m->num_parameters * sizeof(float));
    fwrite_check(h, sizeof(int32_t), 256, f, tmp);
    fwrite_check(m->params_memory, sizeof(float), m->num_parameters, f, tmp);
    atomic_commit(f, tmp, path);
}

void seq2seq_build_from_checkpoint(Seq2Seq* m, const char* path) {
    FILE* f = fopenCheck(path, "rb");
    int32_t h[256];
    read_header(f, path, h, CHECKPOINT_MAGIC, "llm.c model checkpoint");
    if (h[1] == 3 || h[1] == CHECKPOINT_VARIANTS || h[1] == CHECKPOINT_VARIANTS_NO_CHECKSUM)
        die("'%s' is a GPT-2 checkpoint (version %d): use train_gpt2; train_seq2seq reads encoder-decoder "
            "checkpoints (version %d)", path, h[1], CHECKPOINT_SEQ2SEQ);
    if (h[1] != CHECKPOINT_SEQ2SEQ && h[1] != CHECKPOINT_SEQ2SEQ_NO_CHECKSUM)
        die("'%s': checkpoint version %d is not supported (%d: an encoder-decoder)", path, h[1],
            CHECKPOINT_SEQ2SEQ);
    Seq2SeqConfig c = {.max_seq_len = h[2], .vocab_size = h[3], .enc_layers = h[4], .num_heads = h[5],
                       .channels = h[6], .padded_vocab_size = h[7], .pos_encoding = h[9], .ln_place = h[10],
                       .activation = h[11], .mask = h[12], .dec_layers = h[13],
                       .embed_scale = h[14], .ff = h[15]};
    memcpy(&c.att_scale, &h[16], sizeof c.att_scale);  // 0 in files from before -as
    s2s_check_config(c, path);
    if (h[8] != h[5])
        die("'%s': key/value heads %d (must equal the heads %d) not supported", path, h[8], h[5]);
    check_unused_slots(path, h, 17, h[1] == CHECKPOINT_SEQ2SEQ ? 254 : 255);
    size_t sizes[NUM_S2S_PARAMETERS];
    s2s_parameter_sizes(sizes, c);
    check_checkpoint_size(f, path, sum_sizes(sizes, NUM_S2S_PARAMETERS));
    s2s_allocate_parameters(m, c);
    read_checkpoint_parameters(f, path, h, m->params_memory, m->num_parameters, h[1] == CHECKPOINT_SEQ2SEQ);
}

// ----------------------------------------------------------------------------
// inference: the decoder one token at a time (article 002: at inference the decoder
// feeds back its own outputs). Its self-attention keeps the keys and values of the
// positions so far (the KV cache of train_gpt2.c, article 004); the cross-attention's
// keys and values depend only on the source, so each decoder layer projects them from
// the memory once per source and every generated token reuses them.

typedef struct {
    int B, Ts, pos;    // sources decoded together, their padded length, the next position
    int capacity;      // B the buffers hold
    int* src_len;      // (B) real source tokens: the cross-attention's key-padding mask
    float* self_kv;    // (Ld,B,maxT,2C) each decoder layer's self-attention K,V per position
    float* cross_kv;   // (Ld,B,Ts,2C) each decoder layer's cross-attention K,V of the memory
    float* x;          // (B,C) the stream of the new positions
    float* ln;         // (B,C) a layernorm's output
    float* qkv;        // (B,3C) the new positions' Q,K,V (cross-attention: Q in (B,C))
    float* atty;       // (B,C)
    float* proj;       // (B,C) a branch's output
    float* fch;        // (B,F)
    float* fch_act;    // (B,F)
    float* scores;     // (B,NH,maxT) the new queries' scores
    float* probs;      // (B,NH,maxT)
    float* mean;       // (B) layernorm statistics (not needed after)
    float* rstd;       // (B)
    float* logits;     // (B,Vp)
    float* buffers;    // the memory of everything from self_kv on
} DecodeCache;

void decode_cache_init(DecodeCache* dc, Seq2SeqConfig c, int batch) {
    size_t B = (size_t)batch, C = c.channels, Ld = c.dec_layers, T = c.max_seq_len, NH = c.num_heads;
    float** ptrs[] = {&dc->self_kv, &dc->cross_kv, &dc->x, &dc->ln, &dc->qkv, &dc->atty, &dc->proj,
                      &dc->fch, &dc->fch_act, &dc->scores, &dc->probs, &dc->mean, &dc->rstd, &dc->logits};
    size_t F = s2s_ff(c);
    size_t sizes[] = {Ld * B * T * 2 * C, Ld * B * T * 2 * C, B * C, B * C, B * 3 * C, B * C, B * C,
                      B * F, B * F, B * NH * T, B * NH * T, B, B, B * (size_t)c.padded_vocab_size};
    int n = sizeof sizes / sizeof sizes[0];
    dc->buffers = point_tensors(ptrs, n, alignedCallocCheck(sum_sizes(sizes, n), sizeof(float)), sizes);
    dc->src_len = mallocCheck(B * sizeof(int));
    dc->capacity = batch;
}

void decode_cache_free(DecodeCache* dc) { aligned_free(dc->buffers); free(dc->src_len); }

// after seq2seq_encode: every decoder layer's cross-attention K,V from the memory, once
static void decode_cache_start(const Seq2Seq* m, DecodeCache* dc) {
    Seq2SeqConfig c = m->config;
    int C = c.channels;
    if (m->B > dc->capacity) die("decoding %d sources at once; the cache holds %d", m->B, dc->capacity);
    dc->B = m->B;
    dc->Ts = m->Ts;
    dc->pos = 0;
    memcpy(dc->src_len, m->src_len, (size_t)m->B * sizeof(int));
    for (int l = 0; l < c.dec_layers; l++) {
        Sublayer w = sublayer(&m->params, c, 2 * c.enc_layers + 3 * l + 1);
        matmul_forward(dc->cross_kv + (size_t)l * dc->capacity * c.max_seq_len * 2 * C, m->acts.memory, w.wkv,
                       w.bkv, m->B * m->Ts, C, 2 * C);
    }
}

// the branch of decoder sublayer s on the new positions: in (B,C) -> dc->proj (B,C)
static void cached_branch(const Seq2Seq* m, DecodeCache* dc, int s, const float* in) {
    Seq2SeqConfig c = m->config;
    Sublayer w = sublayer(&m->params, c, s);
    int B = dc->B, C = c.channels, NH = c.num_heads, maxT = c.max_seq_len, pos = dc->pos;
    size_t slot = (size_t)w.layer * dc->capacity * maxT * 2 * C;  // this layer's part of a K,V cache
    if (w.kind == SUB_MLP) {
        int F = s2s_ff(c);
        matmul_forward(dc->fch, in, w.w1, w.b1, B, C, F);
        activation_forward(dc->fch_act, dc->fch, (size_t)B * F, c.activation);
        matmul_forward(dc->proj, dc->fch_act, w.w2, w.b2, B, F, C);
        return;
    }
    if (w.kind == SUB_SELF) {  // cache K,V of the new position, then one query against pos+1 keys
        matmul_forward(dc->qkv, in, w.w1, w.b1, B, C, 3 * C);
        for (int b = 0; b < B; b++) {
            float* kv = dc->self_kv + slot + (size_t)b * maxT * 2 * C;
            memcpy(kv + (size_t)pos * 2 * C, dc->qkv + (size_t)b * 3 * C + C, 2 * C * sizeof(float));
            AttentionShape one = {.B = 1, .T = 1, .C = C, .NH = NH, .NKV = NH, .causal = 0, .Tk = pos + 1,
                                  .q_stride = 3 * C, .kv_stride = 2 * C, .scale = c.att_scale};
            attention_forward(dc->atty + (size_t)b * C, dc->scores, dc->probs, NULL,
                              dc->qkv + (size_t)b * 3 * C, kv, one, NULL);
        }
    } else {                   // B queries against their sources' cached K,V, padding masked
        matmul_forward(dc->qkv, in, w.w1, w.b1, B, C, C);
        AttentionShape cross = {.B = B, .T = 1, .C = C, .NH = NH, .NKV = NH, .causal = 0, .Tk = dc->Ts,
                                .q_stride = C, .kv_stride = 2 * C, .key_len = dc->src_len,
                                .scale = c.att_scale};
        attention_forward(dc->atty, dc->scores, dc->probs, NULL, dc->qkv, dc->cross_kv + slot, cross, NULL);
    }
    matmul_forward(dc->proj, dc->atty, w.w2, w.b2, B, C, C);
}

// feeds tokens (B), one per source, at position dc->pos; returns the logits (B,Vp) of
// the next tokens. The training forward's sublayers, on one position.
const float* decoder_forward_token(const Seq2Seq* m, DecodeCache* dc, const int* tokens) {
    Seq2SeqConfig c = m->config;
    int B = dc->B, C = c.channels, pos = dc->pos, post = c.ln_place == LN_POST;
    if (pos >= c.max_seq_len)
        die("the decoder's cache is full: position %d reaches maxT %d", pos, c.max_seq_len);
    check_tokens(tokens, (size_t)B, c.vocab_size, "decoder input");
    const float* positions = s2s_positions(m);
    s2s_embed(m, dc->x, tokens, B, 1, positions ? positions + (size_t)pos * C : NULL);
    for (int s = 2 * c.enc_layers; s < num_sublayers(c); s++) {
        Sublayer w = sublayer(&m->params, c, s);
        if (!post) layernorm_forward(dc->ln, dc->mean, dc->rstd, dc->x, w.lnw, w.lnb, B, C);
        cached_branch(m, dc, s, post ? dc->x : dc->ln);
        residual_forward(dc->x, dc->x, dc->proj, (size_t)B * C);
        if (post) layernorm_forward(dc->x, dc->mean, dc->rstd, dc->x, w.lnw, w.lnb, B, C);  // in place
    }
    layernorm_forward(dc->ln, dc->mean, dc->rstd, dc->x, m->params.lnfw, m->params.lnfb, B, C);
    matmul_forward(dc->logits, dc->ln, m->params.wte, NULL, B, C, c.padded_vocab_size);
    dc->pos++;
    return dc->logits;
}

// Decodes B sources (src (B,Ts), src_len (B)): BOS first, then each step's token, chosen
// by the sampler (temperature 0: greedy) among EOS and the characters, is fed back until
// EOS or maxT. out (B,maxT) receives each output without BOS and EOS, out_len (B) its
// length (maxT: no EOS came).
void seq2seq_decode(Seq2Seq* m, DecodeCache* dc, Sampler* sampler, const int* src, const int* src_len, int B,
                    int Ts, int* out, int* out_len) {
    Seq2SeqConfig c = m->config;
    int maxT = c.max_seq_len, Vp = c.padded_vocab_size, running = B;
    int* tokens = mallocCheck((size_t)B * sizeof(int));
    seq2seq_encode(m, src, src_len, B, Ts, -1);
    decode_cache_start(m, dc);
    for (int b = 0; b < B; b++) {
        tokens[b] = PAIR_BOS;
        out_len[b] = 0;
    }
    for (int pos = 0; pos < maxT && running > 0; pos++) {
        decoder_forward_token(m, dc, tokens);
        for (int b = 0; b < B; b++) {
            if (tokens[b] == PAIR_EOS) continue;  // finished: fed EOS until the others are
            float* logits = dc->logits + (size_t)b * Vp;
            // PAD and BOS are inputs only, never a target: the loss is unchanged and an
            // untrained model's argmax could pick them, so decoding never may (E27)
            logits[PAIR_PAD] = logits[PAIR_BOS] = -INFINITY;
            tokens[b] = sampler_sample(sampler, logits);
            if (tokens[b] == PAIR_EOS) running--;
            else out[(size_t)b * maxT + out_len[b]++] = tokens[b];
        }
    }
    free(tokens);
}

// ----------------------------------------------------------------------------
// evaluation on held-out pairs: teacher forcing against decoding (article 002)
//
// Greedy exact match equals teacher-forced SEQUENCE accuracy by construction: while its
// prefix is right, greedy decoding feeds the decoder exactly the teacher-forced input,
// so both take the same argmax at the first wrong token and both fail there. The
// difference between the two regimes shows only where their inputs differ: at the
// positions after the first wrong token, where decoding reads its own mistake and
// teacher forcing the truth. evaluate counts both there, position by position.

typedef struct {
    double loss;           // mean loss per target position, teacher forced
    int pairs, positions;  // held-out pairs; their target positions (the target, then EOS)
    int tf_right;          // positions whose most likely token is the target's, given the true prefix
    int tf_sequences;      // pairs with every position right under teacher forcing
    int greedy_right, greedy_exact;    // positions a greedy decoding emits right; pairs all right
    int sampled_right, sampled_exact;  // the same for a sampled decoding (if asked)
    int erring;            // pairs with a wrong greedy token
    int after, after_greedy, after_tf;  // positions after the first wrong greedy token; right in each
    int *pos_n, *pos_tf, *pos_greedy, *pos_sampled;  // (maxT) per target position: pairs, right
    int *gap_n, *gap_greedy, *gap_tf;  // (maxT) k positions after the first wrong greedy token
    long long edits;       // the greedy outputs' edit distances to their targets, summed
    int chars;             // the targets' characters (EOS not counted)
    int one_extra, one_dropped, one_replaced;  // greedy outputs one edit from the target, by kind
    int* edit_row;         // (maxT + 2) edit_distance's scratch
} EvalStats;

static void eval_stats_init(EvalStats* e, int maxT) {
    memset(e, 0, sizeof *e);
    int** counts[] = {&e->pos_n, &e->pos_tf, &e->pos_greedy, &e->pos_sampled, &e->gap_n, &e->gap_greedy,
                      &e->gap_tf};
    for (int k = 0; k < 7; k++)
        *counts[k] = callocCheck((size_t)maxT + 1, sizeof(int));
    e->edit_row = callocCheck((size_t)maxT + 2, sizeof(int));
}

static void eval_stats_free(EvalStats* e) {
    free(e->pos_n); free(e->pos_tf); free(e->pos_greedy); free(e->pos_sampled);
    free(e->gap_n); free(e->gap_greedy); free(e->gap_tf); free(e->edit_row);
}

// Levenshtein's edit distance: the fewest characters inserted, dropped or replaced that
// turn a (na) into b (nb); row holds nb + 1 ints. Scoring position by position counts
// every position after a character too many or too few as wrong; this counts the one edit.
int edit_distance(const int* a, int na, const int* b, int nb, int* row) {
    for (int j = 0; j <= nb; j++)
        row[j] = j;                            // the empty prefix of a: j insertions
    for (int i = 1; i <= na; i++) {
        int diag = row[0];                     // distance(a[..i-1], b[..j-1])
        row[0] = i;
        for (int j = 1; j <= nb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);  // keep or replace a[i-1]
            best = up + 1 < best ? up + 1 : best;                   // drop a[i-1]
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;   // insert b[j-1]
            diag = up;
            row[j] = best;
        }
    }
    return row[nb];
}

// the greedy output out (its characters, EOS not included) against the target tgt (n)
static void score_edits(EvalStats* e, const int* tgt, int n, const int* out, int out_len) {
    int d = edit_distance(out, out_len, tgt, n, e->edit_row);
    e->edits += d;
    e->chars += n;
    if (d == 1) {
        e->one_extra += out_len == n + 1;
        e->one_dropped += out_len == n - 1;
        e->one_replaced += out_len == n;
    }
}

// the most likely token that decoding may emit (EOS or a character; seq2seq_decode's rule)
static int best_output_token(const float* probs, int V) {
    int best = PAIR_EOS;
    for (int v = PAIR_EOS + 1; v < V; v++)
        best = probs[v] > probs[best] ? v : best;
    return best;
}

// the token a decoding emitted at position t: its output, then EOS (if it came), then none
static int emitted_token(const int* out, int out_len, int maxT, int t) {
    return t < out_len ? out[t] : t == out_len && out_len < maxT ? PAIR_EOS : -1;
}

// one pair's decodings scored against its target tgt (n + 1 positions, EOS last) and the
// teacher-forced argmax tf_best (n + 1): per position, and after the first wrong greedy token.
// Returns whether the greedy output is the target.
static int score_pair(EvalStats* e, const int* tgt, const int* tf_best, int n, const int* greedy,
                       int greedy_len, const int* sampled, int sampled_len, int maxT) {
    int tf_all = 1, greedy_all = 1, sampled_all = 1, first_wrong = -1;
    for (int t = 0; t <= n; t++) {
        int tf = tf_best[t] == tgt[t], g = emitted_token(greedy, greedy_len, maxT, t) == tgt[t];
        int s = sampled && emitted_token(sampled, sampled_len, maxT, t) == tgt[t];
        e->pos_n[t]++; e->pos_tf[t] += tf; e->pos_greedy[t] += g; e->pos_sampled[t] += s;
        e->tf_right += tf; e->greedy_right += g; e->sampled_right += s;
        tf_all &= tf; greedy_all &= g; sampled_all &= s;
        if (first_wrong >= 0) {  // decoding reads its own mistake here, teacher forcing the truth
            e->after++; e->after_greedy += g; e->after_tf += tf;
            int k = t - first_wrong;
            e->gap_n[k]++; e->gap_greedy[k] += g; e->gap_tf[k] += tf;
        } else if (!g) {
            first_wrong = t;
        }
    }
    score_edits(e, tgt, n, greedy, greedy_len);
    e->positions += n + 1;
    e->tf_sequences += tf_all; e->greedy_exact += greedy_all; e->sampled_exact += sampled && sampled_all;
    e->erring += first_wrong >= 0;
    e->pairs++;
    return greedy_all;
}

// one decoded example: "  mark source -> output"
static void print_example(const Tokenizer* tk, const char* mark, const int* src, int src_len, const int* out,
                          int out_len) {
    printf("  %s ", mark);
    for (int t = 0; t < src_len; t++)
        print_token(tk, src[t], stdout);
    printf(" -> ");
    for (int t = 0; t < out_len; t++)
        print_token(tk, out[t], stdout);
    printf("\n");
}

// decoding buffers for B pairs of up to maxT tokens
typedef struct { int *greedy, *greedy_len, *sampled, *sampled_len, *tf_best; } DecodedBatch;

// the first n pairs of ps, B at a time: teacher forced, decoded greedily and, with a
// sampler, sampled. Prints the first `examples` pairs: source, greedy output, whether it
// is right. Free the result with eval_stats_free.
EvalStats evaluate(Seq2Seq* m, DecodeCache* dc, const PairSet* ps, int n, int B, Sampler* sampler,
                   int examples, const Tokenizer* tk) {
    Seq2SeqConfig c = m->config;
    int maxT = c.max_seq_len, V = c.vocab_size, Vp = c.padded_vocab_size;
    n = n < ps->num_pairs ? n : ps->num_pairs;
    EvalStats e;
    eval_stats_init(&e, maxT);
    PairBatch pb;
    pair_batch_alloc(&pb, B, ps->max_src, ps->max_tgt);
    Sampler greedy;
    sampler_init(&greedy, V, 0.0f, 0, 0);
    size_t BT = (size_t)B * maxT, isz = sizeof(int);  // not I: <complex.h> (OpenBLAS) defines it
    DecodedBatch d = {callocCheck(BT, isz), callocCheck(B, isz), callocCheck(BT, isz), callocCheck(B, isz),
                      callocCheck(BT, isz)};
    int* ids = mallocCheck((size_t)B * sizeof(int));
    double loss_sum = 0.0;
    for (int i0 = 0; i0 < n; i0 += B) {
        int b_n = n - i0 < B ? n - i0 : B;
        for (int b = 0; b < b_n; b++)
            ids[b] = i0 + b;
        pair_batch_fill(&pb, ps, ids, b_n);
        loss_sum += (double)seq2seq_forward(m, &pb, -1) * m->num_targets;
        for (int i = 0; i < b_n * pb.Tt; i++)
            d.tf_best[i] = best_output_token(m->acts.probs + (size_t)i * Vp, V);
        seq2seq_decode(m, dc, &greedy, pb.src, pb.src_len, b_n, pb.Ts, d.greedy, d.greedy_len);
        if (sampler)
            seq2seq_decode(m, dc, sampler, pb.src, pb.src_len, b_n, pb.Ts, d.sampled, d.sampled_len);
        for (int b = 0; b < b_n; b++) {
            int *out = d.greedy + (size_t)b * maxT;
            int *sampled = sampler ? d.sampled + (size_t)b * maxT : NULL;
            int right = score_pair(&e, pb.dec_tgt + b * pb.Tt, d.tf_best + b * pb.Tt, ps->tgt_len[ids[b]],
                                   out, d.greedy_len[b], sampled, d.sampled_len[b], maxT);
            if (i0 + b < examples)
                print_example(tk, right ? "  right" : "  WRONG", pb.src + b * pb.Ts, pb.src_len[b], out,
                              d.greedy_len[b]);
        }
    }
    sampler_free(&greedy);
    free(ids); free(d.greedy); free(d.greedy_len); free(d.sampled); free(d.sampled_len); free(d.tf_best);
    pair_batch_free(&pb);
    e.loss = loss_sum / e.positions;
    return e;
}
