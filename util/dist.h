/*
util/dist.h: data-parallel training over MPI, `mpirun -np N ./train_gpt2 <flags>`.

Data parallelism is three ideas, one function each:
- every process holds the whole model and takes its own B rows of a global batch of N·B
  rows (dist_rows). All processes walk the same global order of batches (same seed, same
  loader), so they agree on the data positions by construction, and a resume needs only
  the one position the state file already records;
- each computes the gradients of its rows' mean loss, and they are summed over the
  processes and scaled by 1/N: in buckets while the backward pass runs (the section
  "buckets" below), or with dist_average_gradients after it. The mean of N means over
  equal numbers of rows is the global batch's mean: every process now holds the
  gradients of the global batch, bit for bit the same, so each computes the same norm,
  clips the same way and makes the same AdamW update;
- the weights therefore stay identical, which dist_check_weights verifies at every
  validation by comparing a checksum across the processes.
Only process 0 prints (the others' stdout goes to /dev/null), samples and writes files.

Errors: before training (dist_setup_done) a process that fails, say one that cannot open
its file, tells the others in one collective call, and process 0 prints that one line for
all of them; then every process exits. During training an error of one process ends the
job with MPI_Abort, and a stop all processes agreed on (die_together) ends it with
MPI_Finalize, once the files are written.

Built without -DUSE_MPI (the Makefile adds it when it finds mpicc), or started without
mpirun, these functions are those of a single process: N = 1, no communication.
*/
#ifndef UTIL_DIST_H
#define UTIL_DIST_H

#include "io.h"
#ifdef USE_MPI
#include <mpi.h>
#include <pthread.h>
#include <time.h>
#endif

// the largest piece of the gradients one nonblocking all-reduce sums (see "buckets" below)
#define DIST_BUCKET_BYTES ((size_t)1 << 20)

typedef struct {
    int rank;                  // this process, 0..size-1; process 0 prints and writes
    int size;                  // N, the number of processes
    int training;              // setup is over: errors end the job without asking the others
    double allreduce_seconds;  // time spent waiting for the gradients' mean after the backward
    long allreduce_calls;      // pass (exposed), and in how many steps
    double hidden_seconds;     // time the buckets were in flight while the backward pass ran
    int buckets;               // 1: buckets overlapped with the backward; 0: DIST_BLOCKING=1
} Dist;
static Dist dist = {0, 1, 0, 0.0, 0, 0.0, 0};

// the rows of a global batch (N·B rows of T tokens) that this process computes
static inline const int* dist_rows(const int* global_batch, int B, int T) {
    return global_batch + (size_t)dist.rank * B * T;
}

#ifdef USE_MPI
// mpirun (Open MPI), MPICH's and Slurm's launchers say so in the environment; run
// directly, the program never calls MPI_Init and is the one-process program
static inline int dist_launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

static inline void dist_finalize(void) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Finalize();
}

// Setup's one collective call: status 0 from a process that is ready, non-zero with its
// error line from one that is not. If any failed, process 0 prints the line of the first
// failed process (with its rank if it is not 0) and every process exits with the status.
static inline void dist_agree(const char* line, int status) {
    int worst = 0, first = dist.size, mine = status ? dist.rank : dist.size;
    MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst == 0) return;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    static char text[16384];
    if (first == 0 && dist.rank == 0) snprintf(text, sizeof text, "%s", line);
    if (first != 0 && dist.rank == first)
        MPI_Send(line, (int)strlen(line) + 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    if (first != 0 && dist.rank == 0)
        MPI_Recv(text, sizeof text, MPI_CHAR, first, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (dist.rank == 0) {
        char who[64] = "";
        if (first != 0) snprintf(who, sizeof who, "process %d of %d: ", first, dist.size);
        fprintf(stderr, "%s: error: %s%s\n", error_program, who, text);
        if (worst == EXIT_USAGE && print_usage_to)
            fprintf(stderr, "%s: run with -h for the flags\n", error_program);
    }
    MPI_Finalize();
    exit(worst);
}

// die()'s way out when several processes run (util/io.h's dist_exit_hook)
static inline void dist_exit(const char* line, int status, int together) {
    if (!dist.training) dist_agree(line, status);
    if (together) {  // every process is here: one line, and a clean end once all arrive
        if (dist.rank == 0) fprintf(stderr, "%s: %s%s\n", error_program, fail_label, line);
        MPI_Finalize();
        exit(status);
    }
    fprintf(stderr, "%s: error: process %d of %d: %s\n", error_program, dist.rank, dist.size, line);
    MPI_Abort(MPI_COMM_WORLD, status);  // the others may be waiting for this one: end them
    exit(status);
}

static inline void dist_init(int* argc, char*** argv) {
    if (!dist_launched()) return;
    int provided;  // the main thread and the progress thread call MPI, never both at once
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &dist.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &dist.size);
    const char* blocking = getenv("DIST_BLOCKING");  // 1: the reduction after the backward pass
    dist.buckets = dist.size > 1 && provided >= MPI_THREAD_SERIALIZED && !(blocking && atoi(blocking));
    atexit(dist_finalize);
    dist_exit_hook = dist_exit;
    if (dist.rank != 0 && !freopen("/dev/null", "w", stdout)) die("cannot silence process %d", dist.rank);
}

// every process has read its files and is ready to train (or stops with the first error)
static inline void dist_setup_done(void) {
    if (dist.size > 1) dist_agree(NULL, 0);
    dist.training = 1;
}

// the mean of x over the processes (the loss of the global batch from each one's rows)
static inline float dist_mean(float x) {
    if (dist.size == 1) return x;
    double mine = x, sum = 0.0;
    MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return (float)(sum / dist.size);
}

// whether any process has flag set (a stop signal reaches one process or all)
static inline int dist_any(int flag) {
    int any = flag;
    if (dist.size > 1) MPI_Allreduce(&flag, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

// grads = the mean of every process's grads: one MPI_Allreduce (sum) over the whole buffer
// (in pieces of at most 2^30 floats, as MPI counts are int), then a scale by 1/N
static inline void dist_average_gradients(float* grads, size_t n) {
    if (dist.size == 1) return;
    double t0 = now_seconds();
    for (size_t done = 0; done < n;) {
        int count = n - done < ((size_t)1 << 30) ? (int)(n - done) : 1 << 30;
        MPI_Allreduce(MPI_IN_PLACE, grads + done, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        done += (size_t)count;
    }
    float scale = 1.0f / dist.size;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        grads[i] *= scale;
    dist.allreduce_seconds += now_seconds() - t0;
    dist.allreduce_calls++;
}

// ---- buckets: the gradients summed while the backward pass runs
//
// dist_average_gradients starts after the whole backward pass, and every process then
// waits for all of it. But the backward pass finishes the last layer's gradients first and
// the first layer's last: each layer's can travel while the layers below it compute
// (PyTorch's DistributedDataParallel does this). So:
// - gpt2_backward calls dist_layer_done(l) when layer l's gradients are final; the slice
//   of layer l of each per-layer tensor is cut into buckets of at most DIST_BUCKET_BYTES,
//   one MPI_Iallreduce (sum, in place) each. bench/allreduce_sweep chose the size
//   (bench/README.md): much larger pieces take a slow path in Open MPI here, and much
//   smaller ones add up the calls' fixed costs.
// - dist_gradients_finish, before the gradient norm, queues the rest (the embeddings: wte
//   is also the output head, written first by the head and last by the encoder; the final
//   layernorm; any layer not announced) and waits for every bucket.
// - Open MPI moves a nonblocking collective's bytes only inside MPI calls, and the OpenMP
//   threads are busy computing. A progress thread therefore polls: it starts the queued
//   buckets in queue order (every process starts the same collectives in the same order,
//   as MPI requires), calls MPI_Testsome every DIST_POLL_US while any is in flight (a TCP
//   link is fed only as fast as the socket buffer drains), sleeps on a condition variable
//   otherwise, and scales each finished bucket by 1/N. While buckets fly it is the only
//   thread calling MPI; the main thread calls MPI only once all have landed, so
//   MPI_THREAD_SERIALIZED suffices (cheaper than MULTIPLE: no locks inside Open MPI).
// Bits: an element is still one MPI_SUM of the N processes' values, times 1/N. On 2
// processes a + b = b + a whatever the algorithm, so the bits are the blocking reduction's.
// On 3 or more the order of the sums depends on the algorithm Open MPI picks for a
// message's size (buckets are smaller messages than 2^30 floats), so the last bits may
// differ from the blocking path's; all processes still get the same bits.
// With -d (accumulation) only the last micro-batch's backward pass reduces.
// wte goes early too ("wte's rows, early" below), so little is left for the end.
// DIST_BLOCKING=1 in the environment forces the blocking path (the tests compare them).
#define DIST_POLL_US 200

typedef struct {
    float* at;  // a range of the gradient buffer, final on this process
    int count;  // at most DIST_BUCKET_BYTES / 4 floats
    int wte;    // 1: a piece of wte queued after the output head (dist_head_done)
} Bucket;

typedef struct {
    // the gradient buffer: tensors of sizes[k] floats one after the other; those from
    // layered[0] to layered[1] - 1 hold `layers` slices each, layer-major
    float* grads;
    size_t sizes[32];
    int tensors, layered[2], layers;
    // the queue: the main thread appends, the progress thread starts and lands, under lock
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake, landed;  // progress thread: buckets queued; main thread: all landed
    Bucket* queue;                // this step's buckets, in the order they were queued
    int capacity, queued, started, finished;
    int micro;                    // backward passes since the last update (-d)
    int armed;                    // this backward pass is the step's last: reduce as it goes
    unsigned char* layer_queued;  // (layers) dist_layer_done(l) was called this step
    int busy;                     // buckets in flight during the backward pass, since busy_since
    double busy_since, hidden;    // time with buckets in flight during the backward pass
    // wte's rows, early (dist_head_done): wte is tensor 0, at grads
    const int* tokens;            // the tokens of every process's rows in this backward pass
    size_t ntokens;               // (dist_step_tokens); NULL: wte waits for the end
    int wte_early, wte_pending;   // wte's buckets were queued after the head; not landed yet
    int wte_C, nrows, *rows;      // the rows the batch reads (embedding), ascending
    unsigned char* seen;          // (rows of wte) scratch: a row is read by the batch
    float* kept;                  // (nrows, C) this process's values of those rows
    size_t kept_cap;
} DistBuckets;
static DistBuckets buckets = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
                              .landed = PTHREAD_COND_INITIALIZER};

// the progress thread: starts the queued buckets, tests those in flight, scales those landed
static void* dist_progress(void* unused) {
    (void)unused;
    DistBuckets* q = &buckets;
    int cap = q->capacity, active = 0, *which = mallocCheck((size_t)cap * sizeof(int));
    MPI_Request* req = mallocCheck((size_t)cap * sizeof *req);
    Bucket* flying = mallocCheck((size_t)cap * sizeof *flying);
    float scale = 1.0f / dist.size;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        if (q->started == q->queued && active == 0) {
            pthread_cond_wait(&q->wake, &q->lock);
            continue;
        }
        int n = q->queued - q->started;  // the new buckets: copied out, started unlocked
        memcpy(flying + active, q->queue + q->started, (size_t)n * sizeof *flying);
        q->started += n;
        pthread_mutex_unlock(&q->lock);
        for (int k = active; k < active + n; k++)
            MPI_Iallreduce(MPI_IN_PLACE, flying[k].at, flying[k].count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                           &req[k]);
        active += n;
        int done = 0, kept = 0, wte_done = 0;
        MPI_Testsome(active, req, &done, which, MPI_STATUSES_IGNORE);
        if (done == MPI_UNDEFINED) done = 0;
        for (int k = 0; k < done; k++) {
            for (int i = 0; i < flying[which[k]].count; i++)
                flying[which[k]].at[i] *= scale;
            wte_done += flying[which[k]].wte;
        }
        for (int k = 0; k < active; k++)  // the requests still in flight, in order
            if (req[k] != MPI_REQUEST_NULL) { req[kept] = req[k]; flying[kept++] = flying[k]; }
        active = kept;
        if (active > 0) nanosleep(&(struct timespec){0, DIST_POLL_US * 1000}, NULL);
        pthread_mutex_lock(&q->lock);
        q->finished += done;
        q->wte_pending -= wte_done;
        if (wte_done > 0 && q->wte_pending == 0) pthread_cond_signal(&q->landed);
        if (done > 0 && q->finished == q->queued) {
            if (q->busy) q->hidden += now_seconds() - q->busy_since;
            q->busy = 0;
            pthread_cond_signal(&q->landed);
        }
    }
    return NULL;
}

// tensor k's slice: a layer's part of a per-layer tensor (*layered = 1), else all of it
static size_t dist_slice(int k, int* layered) {
    DistBuckets* q = &buckets;
    *layered = k >= q->layered[0] && k < q->layered[1];
    return *layered ? q->sizes[k] / q->layers : q->sizes[k];
}

// buckets start flying during the backward pass: the hidden time runs from the first one
// (the caller holds the lock)
static void dist_overlap_begins(DistBuckets* q) {
    if (!q->busy) q->busy_since = now_seconds();
    q->busy = 1;
}

// appends the buckets of n floats at `at` to the queue (the caller holds the lock); their number
static int dist_queue(float* at, size_t n) {
    const size_t most = DIST_BUCKET_BYTES / sizeof(float);
    int count = 0;
    for (size_t done = 0; done < n; done += most, count++)
        buckets.queue[buckets.queued++] = (Bucket){at + done, (int)(n - done < most ? n - done : most), 0};
    return count;
}

// the buckets of layer l (l < 0: of the tensors that are not per layer); the caller holds the lock
static void dist_queue_layer(int l) {
    DistBuckets* q = &buckets;
    size_t offset = 0;
    for (int k = 0; k < q->tensors; offset += q->sizes[k++]) {
        int layered;
        size_t slice = dist_slice(k, &layered);
        if (k == 0 && q->wte_early) continue;  // wte: queued after the head, its batch rows at the end
        if (layered == (l >= 0)) dist_queue(q->grads + offset + (layered ? l * slice : 0), slice);
    }
    if (l >= 0) q->layer_queued[l] = 1;
}

// the first backward pass of a run: the buffer's layout, the queue's size, the thread
static void dist_buckets_build(void) {
    DistBuckets* q = &buckets;
    const size_t most = DIST_BUCKET_BYTES / sizeof(float);
    for (int k = 0; k < q->tensors; k++) {
        int layered;
        size_t slice = dist_slice(k, &layered);
        q->capacity += (int)((slice + most - 1) / most) * (layered ? q->layers : 1);
    }
    q->capacity += (int)((q->sizes[0] + most - 1) / most);  // wte's batch rows, packed (at most all)
    q->queue = mallocCheck((size_t)q->capacity * sizeof *q->queue);
    q->layer_queued = calloc((size_t)q->layers, 1);
    if (!q->layer_queued || pthread_create(&q->thread, NULL, dist_progress, NULL) != 0)
        die("cannot start the all-reduce's progress thread");
    pthread_detach(q->thread);  // it sleeps between steps, and ends with the process
}

// gpt2_backward begins: the gradient buffer's layout (tensors of sizes[k] floats; those
// from layered[0] to layered[1] - 1 are per layer, layer-major), and the number of
// backward passes (micro-batches) a step sums: the last one reduces as it goes
static inline void dist_backward_begin(float* grads, const size_t* sizes, int tensors, const int* layered,
                                       int layers, int micro_batches) {
    if (dist.size == 1) return;
    DistBuckets* q = &buckets;
    if (!q->queue && dist.buckets) {
        q->grads = grads;
        if (tensors > 32) die("dist_backward_begin: %d tensors, at most 32", tensors);
        q->tensors = tensors;
        q->layered[0] = layered[0];
        q->layered[1] = layered[1];
        q->layers = layers;
        memcpy(q->sizes, sizes, (size_t)tensors * sizeof *sizes);
        dist_buckets_build();
    }
    q->grads = grads;
    q->armed = dist.buckets && ++q->micro >= micro_batches;
}

// the backward pass has written layer l's gradients for the last time this step
static inline void dist_layer_done(int l) {
    if (dist.size == 1 || !buckets.armed) return;
    DistBuckets* q = &buckets;
    pthread_mutex_lock(&q->lock);
    dist_overlap_begins(q);
    dist_queue_layer(l);
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
}

// ---- wte's rows, early
//
// wte is written twice in a backward pass: first by the tied output head (every row), last
// by encoder_backward (only the rows of the tokens in the batch). Waiting for the second
// write would leave all of wte (154 MB of 498 MB at 124M) to the end, exposed. But a row
// that no process's batch reads is final after the head. So:
// - dist_head_done keeps this process's values of the rows any process's batch reads, then
//   queues all of wte (its buckets go while the layers' backward runs);
// - dist_embedding_begin waits for wte's buckets and puts the kept values back, so that
//   encoder_backward adds to what it adds to without MPI;
// - dist_gradients_finish sums those rows alone, packed (at most N·B·T rows).
// Each element is still one sum of the N processes' final values (a row of the batch: the
// head's part plus the embedding's, summed on each process first), so on 2 processes the
// bits are the blocking reduction's. run_step names the tokens (dist_step_tokens): every
// process holds the whole step's rows; without them wte waits for the end, as before.

// the tokens of every process's rows in the step's last backward pass (n = N·B·T)
static inline void dist_step_tokens(const int* tokens, size_t n) {
    buckets.tokens = tokens;
    buckets.ntokens = n;
}

// copies the batch's rows of wte into kept (to_kept) or back
static void dist_wte_rows(int to_kept) {
    DistBuckets* q = &buckets;
    size_t bytes = (size_t)q->wte_C * sizeof(float);
    for (int k = 0; k < q->nrows; k++) {
        float *row = q->grads + (size_t)q->rows[k] * q->wte_C, *packed = q->kept + (size_t)k * q->wte_C;
        if (to_kept) memcpy(packed, row, bytes);
        else memcpy(row, packed, bytes);
    }
}

// the output head's backward has written dwte (rows x C, the gradient buffer's tensor 0)
static inline void dist_head_done(float* dwte, int rows, int C) {
    DistBuckets* q = &buckets;
    if (dist.size == 1 || !q->armed || !q->tokens) return;
    if (dwte != q->grads) die("dist_head_done: wte must be the gradient buffer's first tensor");
    if (!q->seen) q->seen = callocCheck((size_t)rows, 1);
    if (!q->rows) q->rows = callocCheck((size_t)rows, sizeof(int));
    for (size_t i = 0; i < q->ntokens; i++)
        if (q->tokens[i] >= 0 && q->tokens[i] < rows) q->seen[q->tokens[i]] = 1;
    q->nrows = 0;
    for (int r = 0; r < rows; r++)
        if (q->seen[r]) q->rows[q->nrows++] = r, q->seen[r] = 0;
    size_t need = (size_t)q->nrows * C;
    if (need > q->kept_cap) free(q->kept), q->kept = mallocCheck(need * sizeof(float)), q->kept_cap = need;
    q->wte_C = C;
    dist_wte_rows(1);
    pthread_mutex_lock(&q->lock);
    dist_overlap_begins(q);
    int first = q->queued;
    q->wte_pending = dist_queue(dwte, (size_t)rows * C);
    for (int k = first; k < q->queued; k++) q->queue[k].wte = 1;
    q->wte_early = 1;
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
}

// before encoder_backward: wte's buckets have landed; the batch's rows get this process's
// values back (the time waited, if any, is exposed)
static inline void dist_embedding_begin(void) {
    DistBuckets* q = &buckets;
    if (dist.size == 1 || !q->wte_early) return;
    double t0 = now_seconds();
    pthread_mutex_lock(&q->lock);
    while (q->wte_pending > 0) pthread_cond_wait(&q->landed, &q->lock);
    pthread_mutex_unlock(&q->lock);
    dist.allreduce_seconds += now_seconds() - t0;
    dist_wte_rows(0);
}

// after the backward pass: the gradients' mean over the processes, all landed
static inline void dist_gradients_finish(float* grads, size_t n) {
    if (dist.size == 1) return;
    DistBuckets* q = &buckets;
    if (!q->armed) {  // DIST_BLOCKING=1: one reduction after the backward pass
        dist_average_gradients(grads, n);
        return;
    }
    double t0 = now_seconds();
    pthread_mutex_lock(&q->lock);
    if (q->busy) q->hidden += t0 - q->busy_since;  // what flies from now on is exposed
    q->busy = 0;
    if (q->wte_early) {  // wte's landed early but for the batch's rows: those now, packed
        dist_wte_rows(1);
        dist_queue(q->kept, (size_t)q->nrows * q->wte_C);
    }
    dist_queue_layer(-1);
    for (int l = 0; l < q->layers; l++)
        if (!q->layer_queued[l]) dist_queue_layer(l);
    pthread_cond_signal(&q->wake);
    while (q->finished < q->queued) pthread_cond_wait(&q->landed, &q->lock);
    if (q->wte_early) dist_wte_rows(0);
    dist.hidden_seconds += q->hidden;
    q->hidden = 0.0;
    q->wte_early = q->wte_pending = 0;
    q->tokens = NULL;
    q->queued = q->started = q->finished = q->micro = q->armed = 0;
    memset(q->layer_queued, 0, (size_t)q->layers);
    pthread_mutex_unlock(&q->lock);
    dist.allreduce_seconds += now_seconds() - t0;
    dist.allreduce_calls++;
}

// the weights of every process must be the same bits: compare a checksum of them
static inline void dist_check_weights(const float* params, size_t n, int step) {
    if (dist.size == 1) return;
    uint64_t sum = 0, lo, hi;
    const uint32_t* bits = (const uint32_t*)params;
    for (size_t i = 0; i < n; i++)
        sum += (uint64_t)bits[i] * (2 * i + 1);  // a change in any one weight changes the sum
    MPI_Allreduce(&sum, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&sum, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (lo != hi)
        die_together("the weights of the %d processes differ at step %d (checksums %016llx .. %016llx): "
                     "their updates diverged", dist.size, step, (unsigned long long)lo,
                     (unsigned long long)hi);
}
#else
static inline void dist_init(int* argc, char*** argv) { (void)argc; (void)argv; }
static inline void dist_setup_done(void) { dist.training = 1; }
static inline float dist_mean(float x) { return x; }
static inline int dist_any(int flag) { return flag; }
static inline void dist_average_gradients(float* grads, size_t n) { (void)grads; (void)n; }
static inline void dist_backward_begin(float* grads, const size_t* sizes, int tensors, const int* layered,
                                       int layers, int micro_batches) {
    (void)grads; (void)sizes; (void)tensors; (void)layered; (void)layers; (void)micro_batches;
}
static inline void dist_layer_done(int l) { (void)l; }
static inline void dist_step_tokens(const int* tokens, size_t n) { (void)tokens; (void)n; }
static inline void dist_head_done(float* dwte, int rows, int C) { (void)dwte; (void)rows; (void)C; }
static inline void dist_embedding_begin(void) {}
static inline void dist_gradients_finish(float* grads, size_t n) { (void)grads; (void)n; }
static inline void dist_check_weights(const float* params, size_t n, int step) {
    (void)params; (void)n; (void)step;
}
#endif

// whether any process has been asked to stop (util/io.h's stop_signal), the same answer for
// all; a signal that comes while this process waits in the collective call is kept for the
// next call, not overwritten by the answer computed without it
static inline int dist_stop_agreed(void) {
    int any = dist_any(stop_signal);
    if (any && !stop_signal) stop_signal = any;
    return any;
}

#endif
