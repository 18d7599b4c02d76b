/*
train_gpt2_parallel.c: the sequel of train_gpt2.c for several processes (MPI), read beside
article 004 (its n_local_heads = n_heads // model_parallel_size). train_gpt2.c is one
process with whole shapes; this file runs the same model on N processes in three ways, each
with util/dist.h's collectives (doc/mpi.md walks them through):
  1. data parallelism: every process holds the whole model and takes B rows of a global
     batch of N B; their gradients are summed in buckets while the backward pass runs
     (the hooks backward_begin, layer_grads_done, head_grads_done, embedding_grads_begin);
  2. ZeRO-1 (-z 1): each process keeps AdamW's moments of its shard of the parameters alone,
     updates that shard, and the new weights are gathered from their owners (parallel_update;
     with -zg 1 during the next forward pass: embedding_rows, weights_ready);
  3. tensor parallelism (-tpar N): the N processes share one model, each holding NH/N of every
     block's heads and F/N of its MLP's units (gpt2_take_share); the projections that end a
     branch then hold a partial sum, which branch_sum adds up, forward and backward.
It reaches into the story through one extension point, the ParallelHooks of train_gpt2.c: a
model whose `parallel` is NULL (one process) runs exactly the story's code.
*/
#include "train_gpt2.h"  // the model: make compiles train_gpt2.c apart (train_gpt2.o)
#ifndef TRAIN_GPT2_SEPARATE
#include "train_gpt2.c"  // a program of one file (cc train_gpt2_main.c) takes the story in
#endif
#include "util/dist.h"  // the collectives, the buckets, the shards
#include "util/schedulers.h"  // learning_rate
#include "fast/buffers.h"  // sum_of_squares

// ----------------------------------------------------------------------------
// -tpar: a process's share of the model

// the tensors split over the processes (qkvw, qkvb, attprojw by heads; fcw, fcb, fcprojw by
// hidden units); each process holds the others whole
static const int PARAMETER_SPLIT[NUM_PARAMETER_TENSORS] = {0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0};

// the whole model's configuration from a process's (the same without -tpar): a process holds
// NH/N heads (article 004's n_local_heads) and NKV/N key/value heads of the whole model's head
// size, and F/N of the MLP's units
GPT2Config whole_config(GPT2Config mine) {
    int N = dist.tp;
    if (N == 1) return mine;
    GPT2Config whole = mine;
    whole.num_heads *= N, whole.num_kv_heads *= N, whole.head_size = 0;
    whole.ff = mine.ff * N == 4 * mine.channels ? 0 : mine.ff * N;  // 4C is written 0, as a fresh model's
    return whole;
}
static GPT2Config share_config(GPT2Config whole, int N) {
    GPT2Config mine = whole;
    mine.head_size = head_size(whole);
    mine.num_heads /= N, mine.num_kv_heads /= N, mine.ff = ff_channels(whole) / N;
    return mine;
}

// the parameters of a configuration
size_t parameters_of(GPT2Config c) {
    size_t sizes[NUM_PARAMETER_TENSORS];
    fill_in_parameter_sizes(sizes, c);
    return sum_sizes(sizes, NUM_PARAMETER_TENSORS);
}

// rows x cols floats, whose rows lie ld_to (ld_from) floats apart
static void copy_block(float* to, size_t ld_to, const float* from, size_t ld_from, size_t rows, size_t cols) {
    for (size_t i = 0; i < rows; i++)
        memcpy(to + i * ld_to, from + i * ld_from, cols * sizeof(float));
}

// Process r's share of the model's parameters, between the whole model's buffer (whole:
// llm.c's layout, as in a checkpoint) and its own (mine: the layout of its configuration c):
// copied to_mine (a process takes its share of the model loaded or initialised whole), or back
// (process 0 puts the shares together to write the whole model). The tensors that are not
// split go whole. Of layer l's split tensors, with C_local = C/N, KV_local = (NKV/N) hs,
// F_local = F/N, process r holds:
//   qkvw (C + 2 NKV hs, C), the Q rows, then K's, then V's: its query heads' rows of Q, from
//     r C_local on, and its K/V heads' rows of K and of V, from r KV_local on in each:
//     (C_local + 2 KV_local, C); qkvb the same entries;
//   attprojw (C, C): in every row, the C_local columns its heads' outputs meet: (C, C_local)
//     (in the article's x W_O, whose W_O is this matrix transposed: rows of W_O);
//   fcw (F, C) and fcb (F): its hidden units' rows, from r F_local on;
//   fcprojw (C, F): in every row, its units' columns: (C, F_local).
static void tp_copy_share(GPT2Config c, int r, float* whole, float* mine, int to_mine) {
    GPT2Config one = whole_config(c);
    size_t whole_sizes[NUM_PARAMETER_TENSORS], my_sizes[NUM_PARAMETER_TENSORS], at_whole = 0, at_mine = 0;
    fill_in_parameter_sizes(whole_sizes, one);
    fill_in_parameter_sizes(my_sizes, c);
    for (int k = 0; k < NUM_PARAMETER_TENSORS; at_whole += whole_sizes[k], at_mine += my_sizes[k], k++) {
        float *w = whole + at_whole, *m = mine + at_mine;
        if (!PARAMETER_SPLIT[k]) copy_block(to_mine ? m : w, 0, to_mine ? w : m, 0, 1, my_sizes[k]);
    }
    ParameterTensors W, M;
    point_parameters(&W, whole, whole_sizes);
    point_parameters(&M, mine, my_sizes);
    size_t C = c.channels, hs = head_size(c), KV = one.num_kv_heads * hs, C_local = attention_channels(c);
    size_t KV_local = c.num_kv_heads * hs, F = ff_channels(one), F_local = ff_channels(c);
    for (int l = 0; l < c.num_layers; l++) {
        LayerParams w = layer_params(W, one, l), m = layer_params(M, c, l);
        struct Piece { float *whole, *mine; size_t rows, cols, ld_whole, ld_mine; } piece[] = {
            {w.qkvw + r * C_local * C, m.qkvw, C_local, C, C, C},                           // Q
            {w.qkvw + (C + r * KV_local) * C, m.qkvw + C_local * C, KV_local, C, C, C},     // K
            {w.qkvw + (C + KV + r * KV_local) * C, m.qkvw + (C_local + KV_local) * C, KV_local, C, C, C},
            {w.qkvb + r * C_local, m.qkvb, 1, C_local, 0, 0},
            {w.qkvb + C + r * KV_local, m.qkvb + C_local, 1, KV_local, 0, 0},
            {w.qkvb + C + KV + r * KV_local, m.qkvb + C_local + KV_local, 1, KV_local, 0, 0},
            {w.attprojw + r * C_local, m.attprojw, C, C_local, C, C_local},
            {w.fcw + r * F_local * C, m.fcw, F_local, C, C, C},
            {w.fcb + r * F_local, m.fcb, 1, F_local, 0, 0},
            {w.fcprojw + r * F_local, m.fcprojw, C, F_local, F, F_local}};
        for (size_t k = 0; k < sizeof piece / sizeof piece[0]; k++) {
            struct Piece p = piece[k];
            if (to_mine) copy_block(p.mine, p.ld_mine, p.whole, p.ld_whole, p.rows, p.cols);
            else copy_block(p.whole, p.ld_whole, p.mine, p.ld_mine, p.rows, p.cols);
        }
    }
}

// -tpar N: the whole model, loaded or initialised alike on every process (so that N processes
// start from one process's weights), cut to process r's share
void gpt2_take_share(GPT2* model, int N, int r) {
    GPT2 whole = *model;
    GPT2Config c = share_config(whole.config, N);
    check_config(c, "-tpar");
    gpt2_allocate_parameters(model, c);
    tp_copy_share(c, r, whole.params_memory, model->params_memory, 1);
    gpt2_free(&whole);
}

// -tpar: a buffer of the whole model's layout (its parameters, or AdamW's moments, which are
// laid out alike) on process 0, put together from every process's share `mine`; NULL on the
// others. Every process calls it.
float* tp_gather_whole(const GPT2* model, const float* mine) {
    size_t n = model->num_parameters;
    float* whole = dist.rank == 0 ? mallocCheck(parameters_of(whole_config(model->config)) * sizeof(float)) : NULL;
    float* theirs = dist.rank == 0 ? mallocCheck(n * sizeof(float)) : NULL;
    for (int r = 0; r < dist.tp; r++) {
        dist_tp_collect(theirs, mine, n, r);  // process r's share to process 0
        if (dist.rank == 0) tp_copy_share(model->config, r, whole, r == 0 ? (float*)mine : theirs, 0);
    }
    free(theirs);
    return whole;
}

// -tpar: process 0's share of the model, and the parameters' memory per process: the split
// matrices 1/N of one process's, the rest whole on each
void print_tensor_parallel(const GPT2* model) {
    if (dist.tp == 1) return;
    GPT2Config c = model->config, one = whole_config(c);
    int N = dist.tp, NH = c.num_heads, NKV = c.num_kv_heads, F = ff_channels(c);
    printf("tensor parallelism: -tpar %d, process 0 of %d holds heads 0-%d of %d (key/value heads 0-%d of "
           "%d) and MLP units 0-%d of %d\n", N, N, NH - 1, one.num_heads, NKV - 1, one.num_kv_heads, F - 1,
           F * N);
    size_t whole_sizes[NUM_PARAMETER_TENSORS], split = 0, split_whole = 0, shared = 0;
    fill_in_parameter_sizes(whole_sizes, one);
    for (int k = 0; k < NUM_PARAMETER_TENSORS; k++) {
        if (PARAMETER_SPLIT[k]) split += model->param_sizes[k], split_whole += whole_sizes[k];
        else shared += model->param_sizes[k];
    }
    double MiB = sizeof(float) / 1048576.0;
    printf("parameters per process: split matrices %.2f MiB (%.2f MiB on one process) + the rest, whole on "
           "each, %.2f MiB = %.2f MiB (%.2f MiB)\n", split * MiB, split_whole * MiB, shared * MiB,
           (split + shared) * MiB, (split_whole + shared) * MiB);
}

// ----------------------------------------------------------------------------
// the hooks: where the story's step meets the other processes

// -tpar: the projections that end a branch (attproj, fcproj) are split by their inputs, so each
// process's product is a partial sum, and dist_tp_sum (branch_sum) adds them; the bias, which
// every process holds whole, is added once, by process 0 of them
static const float* tp_bias(const float* bias) { return dist.tp_rank == 0 ? bias : NULL; }

// -tpar: the dropout masks of a process's `heads` heads are those of the same heads in the whole
// model: runs of heads T T elements, one every NH T T, after the rows before the batch's (row0)
// and the heads of the processes before this one
static void tp_dropout_slice(DropoutMask* m, int heads, int row0, int T) {
    if (dist.tp == 1) return;
    uint64_t TT = (uint64_t)T * T, NH = (uint64_t)heads * dist.tp;
    m->block = heads * TT, m->stride = NH * TT;
    m->first = (uint64_t)row0 * NH * TT + (uint64_t)dist.tp_rank * heads * TT;
}

static const ParallelHooks PARALLEL_HOOKS = {
    .embedding_rows = dist_embedding_rows, .weights_ready = dist_weights_ready, .branch_bias = tp_bias,
    .branch_sum = dist_tp_sum, .dropout_slice = tp_dropout_slice, .backward_begin = dist_backward_begin,
    .head_grads_done = dist_head_done, .layer_grads_done = dist_layer_done,
    .embedding_grads_begin = dist_embedding_begin, .stop_agreed = dist_tp_stop_agreed};

// a model run by N > 1 processes makes the hooks' calls; on one process it runs the story alone
void parallel_attach(GPT2* model) { model->parallel = dist.size > 1 ? &PARALLEL_HOOKS : NULL; }

// ----------------------------------------------------------------------------
// the optimizer step over N processes

// the squares of the mean gradients, by the chunks of fast/buffers.h added in chunk order;
// with -z 1 a process holds the mean of its shard alone, sums its shard's chunks and gathers
// the others' sums (util/dist.h), so the total is the same bits either way
static double mean_grad_squares(const GPT2* model) {
    double partial[SQUARES_CHUNKS], total = 0.0;
    int first, last;
    dist_shard_chunks(SQUARES_CHUNKS, &first, &last);
    sum_of_squares_chunks(model->grads_memory, model->num_parameters, first, last, partial);
    dist_gather_chunks(partial);
    for (int j = 0; j < SQUARES_CHUNKS; j++)
        total += partial[j];
    return total;
}

// -tpar: the squares of the whole model's gradients, from every process's share: each sums
// its split tensors, process 0 also the tensors every process holds whole (their gradients
// are the same on all), and dist_tp_sum_double adds the processes' sums
static double tp_grad_squares(const GPT2* model) {
    double mine = 0.0;
    size_t offset = 0;
    for (int k = 0; k < NUM_PARAMETER_TENSORS; offset += model->param_sizes[k++])
        if (PARAMETER_SPLIT[k] || dist.tp_rank == 0)
            mine += sum_of_squares(model->grads_memory + offset, model->param_sizes[k]);
    return dist_tp_sum_double(mine);
}

// the global norm of the gradients: the story's, summed in the backward pass, on one process;
// else by a pass of its own over N processes' mean (the all-reduce writes it last) or (-tpar)
// over their shares
static float parallel_grad_norm(const GPT2* model) {
    if (!model->parallel) return gpt2_grad_norm(model);
    return (float)sqrt(dist.tp > 1 ? tp_grad_squares(model) : mean_grad_squares(model));
}

// -zg 1 with -prec bf16: the bf16 copy of a piece of another process's shard, once it landed
static void bf16_round_landed(void* model, size_t offset, size_t count) {
    GPT2* m = model;
    bf16_round_all(m->params_bf16 + offset, m->params_memory + offset, count);
}

// -z 1 (ZeRO-1, util/dist.h): AdamW on this process's shard [lo, hi) of the parameters, with
// the moments of that shard alone; then every process's new weights to every process, now,
// or with -zg 1 during the next forward pass, layer by layer (the bf16 copy of -prec bf16
// rounded from them as they land); timed: the waits count as the gather's time
static void gpt2_update_shard(GPT2* model, const AdamWConfig* opt, float lr, float grad_scale, int t,
                              int timed) {
    size_t n = model->num_parameters, lo = dist_shard_begin(), hi = dist_shard_end(n);
    size_t sizes[NUM_PARAMETER_TENSORS], start = 0;  // the shard's part of each tensor
    for (int k = 0; k < NUM_PARAMETER_TENSORS; start += model->param_sizes[k++]) {
        size_t from = start > lo ? start : lo, to = start + model->param_sizes[k];
        to = to < hi ? to : hi;
        sizes[k] = to > from ? to - from : 0;
    }
    uint16_t* bf16 = model->params_bf16 ? model->params_bf16 + lo : NULL;
    adamw_update(model->params_memory + lo, bf16, model->grads_memory + lo, model->m_memory,
                 model->v_memory, sizes, PARAMETER_DECAYS, NUM_PARAMETER_TENSORS, opt, lr, grad_scale, t);
    if (dist_gather_overlaps()) {  // the next forward pass starts the gather
        dist_gather_due(model->params_memory, timed, bf16 ? bf16_round_landed : NULL, model);
        return;
    }
    dist_gather_weights(model->params_memory);  // all of them, now
    if (bf16) {
        bf16_round_all(model->params_bf16, model->params_memory, lo);
        bf16_round_all(model->params_bf16 + hi, model->params_memory + hi, n - hi);
    }
}

// AdamW's moments: of this process's shard of the parameters with -z 1, else of all of them
void parallel_allocate_moments(GPT2* model) {
    size_t shard = dist_shard_end(model->num_parameters) - dist_shard_begin();
    allocate_moments(&model->m_memory, &model->v_memory, shard);
}

// the story's gpt2_update, or with -z 1 on this process's shard; timed for the run's last line
static void parallel_update(GPT2* model, const AdamWConfig* opt, float lr, float grad_scale, int t) {
    double t0 = now_seconds(), gathered = dist.gather_seconds;
    int first = !model->m_memory;  // the first update touches the moments' new pages: not timed
    parallel_allocate_moments(model);
    if (dist.zero) gpt2_update_shard(model, opt, lr, grad_scale, t, !first);
    else gpt2_update(model, opt, lr, grad_scale, t);
    if (first) dist.gather_seconds = gathered;  // (a blocking gather's time is the gather's)
    else dist.update_seconds += now_seconds() - t0 - (dist.gather_seconds - gathered), dist.updates++;
}

// the story's gpt2_optimizer_step over N processes: first the gradients' mean over them
StepStats parallel_optimizer_step(GPT2* model, int step, const AdamWConfig* opt) {
    if (!model->parallel) return gpt2_optimizer_step(model, step, opt);
    dist_gradients_finish(model->grads_memory, model->num_parameters);  // the mean, all landed
    StepStats s = {model->mean_loss, parallel_grad_norm(model), 0.0f};
    s.lr = learning_rate(opt->schedule, step, opt->lr, opt->warmup, opt->max_steps, opt->final_lr_frac);
    if (isfinite(s.norm)) parallel_update(model, opt, s.lr, grad_clip_scale(s.norm, opt->grad_clip), step + 1);
    return s;
}
