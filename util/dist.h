/*
util/dist.h: data-parallel training over MPI, `mpirun -np N ./train_gpt2_mpi <flags>`.

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
With -z 1 (ZeRO-1, the default under mpirun; the section "ZeRO-1" below) the last two
change: each process gets the mean gradients of its shard of the parameters alone, updates
that shard with the moments of that shard alone, and the new weights are gathered from
their owners, so they are identical by construction.
With -tpar N (tensor parallelism, the section of that name below) the N processes split
one model instead: each holds some of every block's heads and MLP units, all read the same
rows, and the blocks' partial sums are all-reduced as the forward and backward passes go.
Only process 0 prints (the others' stdout goes to /dev/null), samples and writes files.

Errors: before training (dist_setup_done) a process that fails, say one that cannot open
its file, tells the others in one collective call, and process 0 prints that one line for
all of them; then every process exits. During training an error of one process ends the
job with MPI_Abort, and a stop all processes agreed on (die_together) ends it with
MPI_Finalize, once the files are written.

Built without -DUSE_MPI (train_gpt2; the Makefile builds train_gpt2_mpi with it when it finds
mpicc), or started without mpirun, these functions are those of a single process: N = 1, no
communication.
*/
#ifndef UTIL_DIST_H
#define UTIL_DIST_H

#include "io.h"
#ifdef USE_MPI
#include <mpi.h>
#include <pthread.h>
#include <time.h>
#endif

#ifdef USE_MPI
#define DIST_MPI 1  // built with MPI: mpirun -np N runs N processes
#else
#define DIST_MPI 0
#endif

// the largest piece of the gradients one nonblocking all-reduce sums (see "buckets" below)
#define DIST_BUCKET_BYTES ((size_t)1 << 20)
// at most this many full buckets' bytes of gradients in flight when all the processes share
// one machine, and between machines ("How many buckets fly at once" below)
#define DIST_SUMS_IN_FLIGHT_LOCAL 2
#define DIST_SUMS_IN_FLIGHT_NETWORK 32

typedef struct {
    int rank;                  // this process, 0..size-1; process 0 prints and writes
    int size;                  // N, the number of processes
    int training;              // setup is over: errors end the job without asking the others
    double allreduce_seconds;  // time spent waiting for the gradients' mean after the backward
    long allreduce_calls;      // pass (exposed), and in how many steps
    double hidden_seconds;     // time the buckets were in flight while the backward pass ran
    int buckets;               // 1: buckets overlapped with the backward; 0: DIST_BLOCKING=1
    int zero;                  // -z 1: AdamW's state sharded over the processes (ZeRO-1, below)
    double update_seconds;     // time in the updates: AdamW (on this process's shard with -z 1)
    double gather_seconds;     //   and, -z 1, the new weights' way to every process (of those)
    long updates;              // the updates timed
    long gathers;              // -z 1: the forward passes that waited for a timed update's gather
    int gather_overlap;        // -zg 1: -z 1's gather overlapped with the next forward pass
    int tp;                    // -tpar N: the processes one model is split over (below); 1: none
    int tp_rank;               //   this process's share of it, 0..tp-1
    double tp_seconds;         //   time in its all-reduces (forward and backward, all of them)
    double tp_step_seconds;    //   of which in the timed training steps (train_gpt2_main.c's run_step)
    int one_machine;           // all the processes share one machine (its memory)
    double deadline;           // -dt: seconds a collective may wait for the others ("the deadline")
} Dist;
// -dt's default: 10 minutes, far above any step measured here (bench/README.md: GPT-2 124M,
// B=4 T=64, about 1 s a step on one 2-core machine, 4.5-7 s on 2 processes over TCP) and above
// the 1.5 GB of a 124M checkpoint and state that process 0 writes while the others wait
#define DIST_DEADLINE 600.0
static Dist dist = {0, 1, 0, 0.0, 0, 0.0, 0, 0, 0.0, 0.0, 0, 0, 0, 1, 0, 0.0, 0.0, 1, DIST_DEADLINE};

// the most bytes of gradients in flight at once ("How many buckets fly at once" below)
static inline size_t dist_sums_window(void) {
    return (dist.one_machine ? DIST_SUMS_IN_FLIGHT_LOCAL : DIST_SUMS_IN_FLIGHT_NETWORK) * DIST_BUCKET_BYTES;
}

// Data parallelism's replicas: the processes (or with -tpar, groups of processes) that each
// hold the whole model and take their own B rows of the global batch. -tpar splits one model
// over all the processes, so there is one replica, and every process reads the same rows.
static inline int dist_replicas(void) { return dist.size / dist.tp; }
static inline int dist_replica(void) { return dist.rank / dist.tp; }

// ---- ZeRO-1 (-z 1): the optimizer sharded over the processes
//
// Without it every process runs AdamW over all the parameters and keeps both moments of all
// of them (1 GB at 124M): the same work and memory N times. With it, process r owns the
// shard [bounds[r], bounds[r+1]) of the parameter buffer (contiguous, N about equal parts):
// - the gradients' buckets are each reduced to the process that owns them (MPI_Ireduce, a
//   bucket never straddles two shards): the buckets together are a reduce-scatter, half the
//   bytes an all-reduce sends, still overlapped with the backward pass;
// - each process runs AdamW on its shard alone and keeps the moments of its shard alone;
// - the updated weights go from each owner to all right after AdamW (dist_gather_weights),
//   or with -zg 1 during the next forward pass, layer by layer ("the new weights' way to
//   every process" below);
// - the gradient norm (clipping) is summed by the chunks of fast/buffers.h's sum_of_squares:
//   a shard is a run of whole chunks, each process sums its own, and every process adds all
//   the chunks' sums in chunk order, as the unsharded path does (dist_gather_chunks).
// Bits, on 2 processes: a reduced element is a + b as in the all-reduce, the norm adds the
// same chunk sums in the same order, AdamW is element by element: the weights, losses and
// files are those of -z 0, bit for bit (tests/mpi_tests.sh). The state file holds the whole
// moments, gathered to process 0 when written (dist_gather_moments) and cut to each
// process's shard when read, so a run resumes on any number of processes.
#define DIST_MAX_SHARDS 64  // a shard is at least one chunk of the norm's (SQUARES_CHUNKS)
typedef struct {
    size_t n;                                // the parameters
    size_t bounds[DIST_MAX_SHARDS + 1];      // process r's shard: [bounds[r], bounds[r + 1])
    int first_chunk[DIST_MAX_SHARDS + 1];    // its chunks of the norm's: [first_chunk[r], ..[r + 1])
} DistShards;
static DistShards shards;

// -z 1: the shards of n parameters, cut at the norm's chunk boundaries (chunk j of `chunks`
// starts at n * j / chunks, as in fast/buffers.h); without -z 1 one shard of all n
static inline void dist_shards_setup(size_t n, int chunks) {
    int N = dist.zero ? dist.size : 1;
    if (N > chunks || N > DIST_MAX_SHARDS) die("-z 1: %d processes, at most %d shards", N, chunks);
    shards.n = n;
    for (int r = 0; r <= N; r++) {
        shards.first_chunk[r] = chunks * r / N;
        shards.bounds[r] = n * (size_t)shards.first_chunk[r] / (size_t)chunks;
    }
}

// this process's shard [begin, end) of n parameters, and its chunks [first, last) of the
// norm's `chunks`: all of them without -z 1
static inline size_t dist_shard_begin(void) { return dist.zero ? shards.bounds[dist.rank] : 0; }
static inline size_t dist_shard_end(size_t n) { return dist.zero ? shards.bounds[dist.rank + 1] : n; }
static inline void dist_shard_chunks(int chunks, int* first, int* last) {
    *first = dist.zero ? shards.first_chunk[dist.rank] : 0;
    *last = dist.zero ? shards.first_chunk[dist.rank + 1] : chunks;
}

// ---- tensor parallelism (-tpar N): one model split over the processes
//
// Article 004 (the KV-cache article) writes its attention for a model split over
// model_parallel_size devices: each holds n_local_heads = n_heads / model_parallel_size of the
// query heads and as many of the key/value heads. So here: process r of N holds its heads'
// rows of the Q, K, V projection and the matching columns of the output projection, and 1/N
// of the MLP's hidden units (rows of fc, columns of fc's projection); train_gpt2.c lays the
// shares out and computes with local shapes. What crosses the processes is in this file:
// - dist_tp_sum: the output projection of a block's attention (and of its MLP) is, on each
//   process, the sum over its own heads (units) only; an all-reduce adds the N partial sums,
//   and every process goes on with the whole result. The backward pass mirrors it: the
//   gradient of the block's input through qkv (fc) is a sum over the heads (units), so it is
//   all-reduced too. Four all-reduces of B·T·C floats per block and training step (the f and
//   g operators of Megatron-LM), two per block and generated token;
// - the gradient norm: each process sums the squares of its shares, and of the tensors every
//   process holds whole (layernorms, embeddings, the projections' biases) only on process 0,
//   then dist_tp_sum_double adds them;
// - checkpoints hold the whole model: process 0 collects every process's share to write it
//   (dist_tp_collect), and every process reads the whole file and keeps its share.
// The N processes compute one model on the same rows, so there is one data-parallel replica:
// -tpar N needs N = the processes (data and tensor parallelism do not combine here), and every
// collective below runs over all of them (MPI_COMM_WORLD).
static inline void dist_tp_init(int tp) {
    dist.tp = tp > 1 ? tp : 1;
    dist.tp_rank = dist.rank % dist.tp;
}

// the rows of a global batch (N·B rows of T tokens) that this process computes
static inline const int* dist_rows(const int* global_batch, int B, int T) {
    return global_batch + (size_t)dist_replica() * B * T;
}

#ifdef USE_MPI
// mpirun (Open MPI), MPICH's and Slurm's launchers say so in the environment; run
// directly, the program never calls MPI_Init and is the one-process program
static inline int dist_launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

static inline void dist_mpi_quiet(void);  // (below: -z 1's gather, no piece in flight)

// ---- the deadline: a process that stops answering
//
// A process stopped by SIGSTOP or a debugger, or one that swaps for minutes, is not dead:
// mpirun sees nothing wrong, and the others would wait in their next collective call for
// ever, at 100% of a core. So no call here waits without a deadline: every collective of the
// main thread is started nonblocking and waited for by dist_wait, and the progress thread
// (buckets, below) notes when its requests last moved. After -dt seconds without progress
// the waiting process finds out which processes still answer: it sends each of the others a
// notice on a communicator of its own, and any process waiting anywhere sees it, sends its
// own, and listens too, for a short window. The processes no notice came from are the ones
// that do not answer: the lowest live process names the first of them, with its process id
// and machine, in one line, and MPI_Abort ends the job (mpirun kills the stopped one too).
// If every process answered, they all wait in calls that do not match (a bug, or two
// builds): the line says so.
#define DIST_NOTICE_TAG 4242
static MPI_Comm dist_notice_comm = MPI_COMM_NULL;  // the notices' own (dist_init: a duplicate)
typedef struct { long pid; char host[56]; } DistWho;
static DistWho* dist_who;                          // (size) every process's id and machine

// a notice from a process whose deadline passed: then this one answers (dist_unanswered)
static inline int dist_notice_pending(void) {
    int flag = 0;
    if (dist_notice_comm != MPI_COMM_NULL)
        MPI_Iprobe(MPI_ANY_SOURCE, DIST_NOTICE_TAG, dist_notice_comm, &flag, MPI_STATUS_IGNORE);
    return flag;
}

// -dt passed while this process waited `waited` seconds in `what` (or another process's did):
// which processes answer, one line naming the first that does not, and the job ends
static void dist_unanswered(const char* what, double waited) {
    int N = dist.size, token = dist.rank;
    unsigned char* heard = calloc((size_t)N, 1);
    MPI_Request* sent = calloc((size_t)N, sizeof *sent);
    if (!heard || !sent) MPI_Abort(MPI_COMM_WORLD, EXIT_BAD_INPUT);
    heard[dist.rank] = 1;
    for (int r = 0; r < N; r++)
        if (r != dist.rank) MPI_Isend(&token, 1, MPI_INT, r, DIST_NOTICE_TAG, dist_notice_comm, &sent[r]);
    double window = dist.deadline / 4 < 1 ? 1 : dist.deadline / 4 > 10 ? 10 : dist.deadline / 4;
    int heard_all = 0;
    for (double until = now_seconds() + window; !heard_all && now_seconds() < until;) {
        int flag = 0, from;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, DIST_NOTICE_TAG, dist_notice_comm, &flag, &st);
        if (!flag) { nanosleep(&(struct timespec){0, 1000000}, NULL); continue; }
        MPI_Recv(&from, 1, MPI_INT, st.MPI_SOURCE, DIST_NOTICE_TAG, dist_notice_comm, MPI_STATUS_IGNORE);
        heard[st.MPI_SOURCE] = 1;
        heard_all = 1;
        for (int r = 0; r < N; r++) heard_all &= heard[r];
    }
    int silent = -1, first_live = -1;
    for (int r = N - 1; r >= 0; r--) {
        if (!heard[r]) silent = r;
        else first_live = r;
    }
    if (first_live == dist.rank) {
        if (silent < 0)
            fprintf(stderr, "%s: error: every one of the %d processes answers, but %s has waited %.0f s: they "
                    "wait in calls that do not match (two builds of the program?); ending the job\n",
                    error_program, N, what, waited);
        else
            fprintf(stderr, "%s: error: process %d of %d (pid %ld on %s) has not answered for %.0f s (-dt %g) "
                    "while process %d waited in %s: stopped (SIGSTOP, a debugger) or swapping? Ending the "
                    "job\n", error_program, silent, N, dist_who ? dist_who[silent].pid : 0L,
                    dist_who ? dist_who[silent].host : "?", waited, dist.deadline, dist.rank, what);
        fflush(stderr);
    } else nanosleep(&(struct timespec){1, 0}, NULL);  // the lowest live process speaks first
    MPI_Abort(MPI_COMM_WORLD, EXIT_BAD_INPUT);
    exit(EXIT_BAD_INPUT);
}

// waits for n requests of the main thread (a collective, its sends and receives), within -dt
static void dist_wait(int n, MPI_Request* req, const char* what) {
    double start = now_seconds();
    for (long k = 1;; k++) {
        int done = 0;
        MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (done) return;
        if (k % 256) continue;
        double waited = now_seconds() - start;
        if (waited > dist.deadline || dist_notice_pending()) dist_unanswered(what, waited);
        if (waited > 1e-3) nanosleep(&(struct timespec){0, 20000}, NULL);  // a long wait: spare the core
    }
}

// the blocking collectives this file calls, each waited for by dist_wait (bits: the same
// operations on the same values as the blocking ones; on 2 processes a + b either way)
static inline void dist_allreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op,
                                  const char* what) {
    MPI_Request req;
    MPI_Iallreduce(in, out, count, type, op, MPI_COMM_WORLD, &req);
    dist_wait(1, &req, what);
}
static inline void dist_send(const void* buf, int count, MPI_Datatype type, int to, int tag, const char* what) {
    MPI_Request req;
    MPI_Isend(buf, count, type, to, tag, MPI_COMM_WORLD, &req);
    dist_wait(1, &req, what);
}
static inline void dist_recv(void* buf, int count, MPI_Datatype type, int from, int tag, const char* what) {
    MPI_Request req;
    MPI_Irecv(buf, count, type, from, tag, MPI_COMM_WORLD, &req);
    dist_wait(1, &req, what);
}

static inline void dist_finalize(void) {
    dist_mpi_quiet();
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
    dist_allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, "setup's agreement");
    if (worst == 0) return;
    dist_allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, "setup's agreement");
    static char text[16384];
    if (first == 0 && dist.rank == 0) snprintf(text, sizeof text, "%s", line);
    if (first != 0 && dist.rank == first)
        dist_send(line, (int)strlen(line) + 1, MPI_CHAR, 0, 0, "setup's error line");
    if (first != 0 && dist.rank == 0)
        dist_recv(text, sizeof text, MPI_CHAR, first, 0, "setup's error line");
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
    // -z 1 reduces each bucket to its owner (MPI_Ireduce, "ZeRO-1" above): Open MPI's default
    // for it picks a chain of segments that each wait for the progress thread's next poll;
    // the binomial tree (on 2 processes one message) measured half the exposed time, that of
    // the all-reduce. A value the user sets wins; another MPI ignores the name.
    setenv("OMPI_MCA_coll_libnbc_ireduce_algorithm", "2", 0);
    int provided;  // the main thread and the progress thread call MPI, never both at once
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &dist.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &dist.size);
    MPI_Comm node;  // the processes on this machine: all of them (on every process alike:
    int on_node;    // if one machine holds fewer, so do all), or the sums cross a network
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &on_node);
    MPI_Comm_free(&node);
    dist.one_machine = on_node == dist.size;
    MPI_Comm_dup(MPI_COMM_WORLD, &dist_notice_comm);  // the deadline's notices (above)
    DistWho me = {(long)getpid(), ""};
    gethostname(me.host, sizeof me.host - 1);
    dist_who = mallocCheck((size_t)dist.size * sizeof *dist_who);
    MPI_Allgather(&me, sizeof me, MPI_BYTE, dist_who, sizeof me, MPI_BYTE, MPI_COMM_WORLD);
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

// The index of the first of n values (hashes of the settings that must agree: util/cli.h's
// check_flags_agree) that differs between the processes, the same answer on every process;
// -1 when all agree. First a round of setup's collective (dist_agree): a process that failed
// before this call (a bad flag) meets the others there, and its line ends them all.
static inline int dist_first_difference(const uint64_t* values, int n) {
    if (dist.size == 1) return -1;
    dist_agree(NULL, 0);
    uint64_t lo[64], hi[64];
    if (n > 64) die("internal: %d settings to compare, at most 64", n);
    dist_allreduce(values, lo, n, MPI_UINT64_T, MPI_MIN, "the flags' comparison");
    dist_allreduce(values, hi, n, MPI_UINT64_T, MPI_MAX, "the flags' comparison");
    for (int k = 0; k < n; k++)
        if (lo[k] != hi[k]) return k;
    return -1;
}

// grads = the mean of every process's grads: one MPI_Allreduce (sum) over the whole buffer
// (in pieces of at most 2^30 floats, as MPI counts are int), then a scale by 1/N
static inline void dist_average_gradients(float* grads, size_t n) {
    if (dist_replicas() == 1) return;
    double t0 = now_seconds();
    for (size_t done = 0; done < n;) {
        int count = n - done < ((size_t)1 << 30) ? (int)(n - done) : 1 << 30;
        dist_allreduce(MPI_IN_PLACE, grads + done, count, MPI_FLOAT, MPI_SUM, "the gradients' sum");
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
//   link is fed only as fast as the socket buffer drains; with no pause while the main
//   thread waits for them, its core idle), sleeps on a condition variable otherwise, and
//   scales each finished bucket by 1/N. While buckets fly it is the only
//   thread calling MPI; the main thread calls MPI only once all have landed, so
//   MPI_THREAD_SERIALIZED suffices (cheaper than MULTIPLE: no locks inside Open MPI).
// - How many buckets fly at once. Open MPI's cost per bucket grows with the buckets in
//   flight (its copies, its temporary buffers, its progress over every pending request):
//   bench/allreduce_sweep reduced 124M's 475 buckets to their owners in 93-104 ms with 1-2 in
//   flight, 134 ms with 16, 1.1 s with all at once. In training (124M, 2 processes x 1
//   thread, one machine) all queued in flight cost the progress thread 280-470 ms of CPU a
//   step and 15 thousand more page faults than 2 did (70-78 ms), and left 100-300 ms of the
//   sum exposed against 9-18 (4 in flight: 172 ms of CPU). On one machine the sums are
//   copies in shared memory, and 2 keep up. Between machines a link is busy only with many
//   bytes on their way: over TCP between the namespaces at 10 Gbit/s the 124M step took
//   4.5-5.2 s with 32 in flight, 5.1-6.1 s with 8, 5.9-6.0 s with 2, 6.4-7.1 s with all.
//   bench/README.md, "Buckets in flight". Every process starts the same buckets in the
//   same order either way: the limit only delays the next start.
// Bits: an element is still one MPI_SUM of the N processes' values, times 1/N. On 2
// processes a + b = b + a whatever the algorithm, so the bits are the blocking reduction's.
// On 3 or more the order of the sums depends on the algorithm Open MPI picks for a
// message's size (buckets are smaller messages than 2^30 floats), so the last bits may
// differ from the blocking path's; all processes still get the same bits.
// With -d (accumulation) only the last micro-batch's backward pass reduces.
// wte goes early too ("wte's rows, early" below), so little is left for the end.
// DIST_BLOCKING=1 in the environment forces the blocking path (the tests compare them).
#define DIST_POLL_US 200
// -z 1's gather keeps at most this many bytes in flight (8 pieces of the largest size), so
// that they land in the order the forward pass reads them (started all at once, the
// embedding's waited for nearly all of them); small pieces go many at a time
#define DIST_GATHER_WINDOW (8 * DIST_BUCKET_BYTES)

typedef struct {
    float* at;  // a range of the gradient buffer, final on this process
    int count;  // at most DIST_BUCKET_BYTES / 4 floats
    int wte;    // 1: a piece of wte queued after the output head (dist_head_done)
    int owner;  // -z 1: the process whose shard it lies in gets the sum; -1: all (all-reduce)
    int group;  // -1: gradients; >= 0: weights from their owner, read by the forward pass's
                // group: 0 the embedding, l + 1 layer l, L + 1 the head ("the new weights' way")
    MPI_Datatype type;  // MPI_FLOAT, or (the batch's rows of wte) count = 1 of an indexed type
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
    int main_waiting;             // the main thread waits for buckets: the progress thread spins
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
    // -z 1: the new weights on their way to every process during the next forward pass
    int gather_due, gathering;    // AdamW is done, the pieces not queued yet; queued, not all waited for
    int gather_timed;             // the forward's waits count as the gather's time
    int* group_pending;           // (layers + 2) pieces of each group not landed yet
    unsigned char* group_ready;   // (layers + 2) the forward has waited for the group
    float* params;                // the weights, laid out as grads
    void (*on_landed)(void* ctx, size_t offset, size_t count);  // another's piece, landed
    void* landed_ctx;
    int *all_tokens, *ids, ids_cap;  // every process's tokens, of the embedding's rows (the batch's)
    int* row_of;                  // (rows of wte) -1, or 1 + its place in packed (while planned)
    float* packed;                // (nrows, C) the rows every process's batch reads, from their owners
    size_t packed_cap;
    MPI_Datatype row_types[DIST_MAX_SHARDS];  // per owner: its blocks, in wte (owner) or packed
    int row_type_count;
} DistBuckets;
static DistBuckets buckets = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
                              .landed = PTHREAD_COND_INITIALIZER};

// the sum of a bucket's floats over the processes starts: to all of them, or (-z 1) to the
// owner of the shard it lies in
static void dist_bucket_start(const Bucket* b, MPI_Request* req) {
    if (b->group >= 0) MPI_Ibcast(b->at, b->count, b->type, b->owner, MPI_COMM_WORLD, req);
    else if (b->owner < 0)
        MPI_Iallreduce(MPI_IN_PLACE, b->at, b->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, req);
    else if (b->owner == dist.rank)
        MPI_Ireduce(MPI_IN_PLACE, b->at, b->count, MPI_FLOAT, MPI_SUM, b->owner, MPI_COMM_WORLD, req);
    else MPI_Ireduce(b->at, NULL, b->count, MPI_FLOAT, MPI_SUM, b->owner, MPI_COMM_WORLD, req);
}

// the progress thread: starts the queued buckets, tests those in flight, scales those landed
static void* dist_progress(void* unused) {
    (void)unused;
    DistBuckets* q = &buckets;
    int cap = q->capacity, active = 0, *which = mallocCheck((size_t)cap * sizeof(int));
    int* groups = mallocCheck((size_t)cap * sizeof(int));  // the group of each landed bucket
    MPI_Request* req = mallocCheck((size_t)cap * sizeof *req);
    Bucket* flying = mallocCheck((size_t)cap * sizeof *flying);
    float scale = 1.0f / dist.size;
    double moved = 0.0;  // when a request last landed, or the first started (the deadline, above)
    long polls = 0;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        if (q->started == q->queued && active == 0) {
            pthread_cond_wait(&q->wake, &q->lock);
            continue;
        }
        if (active == 0) moved = now_seconds();
        int n = 0;  // the new buckets: copied out, started unlocked, each kind a window at a time
        size_t flies[2] = {0, 0};  // bytes in flight: [0] gradients' sums, [1] the weights' gather
        const size_t window[2] = {dist_sums_window(), DIST_GATHER_WINDOW};
        for (int k = 0; k < active; k++)
            flies[flying[k].group >= 0] += (size_t)flying[k].count * sizeof(float);
        for (const Bucket* b = q->queue + q->started; b < q->queue + q->queued; b++, n++) {
            int kind = b->group >= 0;
            size_t bytes = (size_t)b->count * sizeof(float);  // (a piece of wte's rows, count 1 of
                                                              // an indexed type, counts 4 bytes)
            if (flies[kind] > 0 && flies[kind] + bytes > window[kind]) break;
            flies[kind] += bytes;
        }
        int spin = q->main_waiting;  // the main thread waits for what flies: its core is free
        memcpy(flying + active, q->queue + q->started, (size_t)n * sizeof *flying);
        q->started += n;
        pthread_mutex_unlock(&q->lock);
        for (int k = active; k < active + n; k++)
            dist_bucket_start(&flying[k], &req[k]);
        active += n;
        int done = 0, kept = 0, wte_done = 0;
        MPI_Testsome(active, req, &done, which, MPI_STATUSES_IGNORE);
        if (done == MPI_UNDEFINED) done = 0;
        for (int k = 0; k < done; k++) {
            Bucket* b = &flying[which[k]];
            if (b->group == -1 && (b->owner < 0 || b->owner == dist.rank))  // (another's shard:
                for (int i = 0; i < b->count; i++)                          // its owner got the sum)
                    b->at[i] *= scale;
            wte_done += b->wte;
            groups[k] = b->group;
        }
        for (int k = 0; k < active; k++)  // the requests still in flight, in order
            if (req[k] != MPI_REQUEST_NULL) { req[kept] = req[k]; flying[kept++] = flying[k]; }
        active = kept;
        if (done > 0) moved = now_seconds();
        if (active > 0 && ++polls % 64 == 0) {  // (every ~13 ms while waiting)
            double waited = now_seconds() - moved;
            if (waited > dist.deadline || dist_notice_pending())
                dist_unanswered(flying[0].group >= 0 ? "the weights' gather (-zg 1)" : "the gradients' sums",
                                waited);
        }
        if (active > 0 && !spin) nanosleep(&(struct timespec){0, DIST_POLL_US * 1000}, NULL);
        pthread_mutex_lock(&q->lock);
        q->finished += done;
        q->wte_pending -= wte_done;
        if (wte_done > 0 && q->wte_pending == 0) pthread_cond_signal(&q->landed);
        int group_done = 0;
        for (int k = 0; k < done; k++) {  // the weights' pieces
            if (groups[k] >= 0) q->group_pending[groups[k]]--;
            group_done += groups[k] >= 0;
        }
        if (group_done > 0) pthread_cond_signal(&q->landed);
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

// the process whose shard holds parameter `offset`, and *count cut at the end of its shard
static int dist_shard_owner(size_t offset, size_t* count) {
    int r = 0;
    while (offset >= shards.bounds[r + 1]) r++;
    if (*count > shards.bounds[r + 1] - offset) *count = shards.bounds[r + 1] - offset;
    return r;
}

// -z 1: the owner of the gradient at `at` (-1 outside the gradient buffer, or without -z 1),
// and *count cut at the end of its shard
static int dist_owner(const float* at, size_t* count) {
    const float* grads = buckets.grads;
    if (!dist.zero || at < grads || at >= grads + shards.n) return -1;
    return dist_shard_owner((size_t)(at - grads), count);
}

// appends bucket b to the queue (the caller holds the lock); a piece of the gather counts in
// its group's pending pieces
static void dist_queue_piece(Bucket b) {
    DistBuckets* q = &buckets;
    if (q->queued == q->capacity) die("dist_queue_piece: the queue is full");
    q->queue[q->queued++] = b;
    if (b.group >= 0) q->group_pending[b.group]++;
}

// appends the buckets of n floats at `at` to the queue (the caller holds the lock): group -1,
// gradients to be summed (at their owner with -z 1); group g >= 0, -z 1's gather: weights at
// `at` in buckets.params, each piece from its owner. Their number
static int dist_queue(float* at, size_t n, int group) {
    DistBuckets* q = &buckets;
    const size_t most = DIST_BUCKET_BYTES / sizeof(float);
    int count = 0;
    for (size_t done = 0, piece; done < n; done += piece, count++) {
        piece = n - done < most ? n - done : most;
        int owner = group < 0 ? dist_owner(at + done, &piece)
                              : dist_shard_owner((size_t)(at + done - q->params), &piece);
        dist_queue_piece((Bucket){at + done, (int)piece, 0, owner, group, MPI_FLOAT});
    }
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
        if (layered == (l >= 0)) dist_queue(q->grads + offset + (layered ? l * slice : 0), slice, -1);
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
    q->capacity += dist.size;  // -z 1: a bucket cut at a shard's end is two
    q->capacity += dist.size;  // -zg 1's gather: the same pieces, and a piece of wte's rows per owner
    q->queue = mallocCheck((size_t)q->capacity * sizeof *q->queue);
    q->layer_queued = calloc((size_t)q->layers, 1);
    q->group_pending = calloc((size_t)q->layers + 2, sizeof(int));
    q->group_ready = calloc((size_t)q->layers + 2, 1);
    if (!q->layer_queued || !q->group_pending || !q->group_ready
        || pthread_create(&q->thread, NULL, dist_progress, NULL) != 0)
        die("cannot start the all-reduce's progress thread");
    pthread_detach(q->thread);  // it sleeps between steps, and ends with the process
}

// gpt2_backward begins: the gradient buffer's layout (tensors of sizes[k] floats; those
// from layered[0] to layered[1] - 1 are per layer, layer-major), and the number of
// backward passes (micro-batches) a step sums: the last one reduces as it goes
static inline void dist_backward_begin(float* grads, const size_t* sizes, int tensors, const int* layered,
                                       int layers, int micro_batches) {
    if (dist_replicas() == 1) return;
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
    q->wte_pending = dist_queue(dwte, (size_t)rows * C, -1);
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
    q->main_waiting = 1;
    while (q->wte_pending > 0) pthread_cond_wait(&q->landed, &q->lock);
    q->main_waiting = 0;
    pthread_mutex_unlock(&q->lock);
    dist.allreduce_seconds += now_seconds() - t0;
    dist_wte_rows(0);
}

// after the backward pass: the gradients' mean over the processes, all landed
static inline void dist_gradients_finish(float* grads, size_t n) {
    if (dist_replicas() == 1) return;
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
        dist_queue(q->kept, (size_t)q->nrows * q->wte_C, -1);
    }
    dist_queue_layer(-1);
    for (int l = 0; l < q->layers; l++)
        if (!q->layer_queued[l]) dist_queue_layer(l);
    pthread_cond_signal(&q->wake);
    q->main_waiting = 1;
    while (q->finished < q->queued) pthread_cond_wait(&q->landed, &q->lock);
    q->main_waiting = 0;
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

// ---- -zg 1: the new weights' way to every process, overlapped with the next forward pass
//
// After AdamW each process holds the new weights of its shard only. Waiting for all of them
// before the next forward pass exposes the whole gather: (N-1)/N of the weights cross to
// every process (250 MB a step at 124M on 2 processes, 0.2 s at 10 Gbit/s). But the forward
// pass reads them layer by layer. So:
// - after AdamW the gather is due (dist_gather_due); the next forward pass starts it before
//   its embedding (dist_embedding_rows), when the batch's tokens are known: the processes
//   exchange their tokens, and the pieces go in the order the forward pass reads them:
//   group 0, what the embedding reads (the rows of wte that any process's batch reads,
//   packed, and wpe); group l + 1, layer l's slice of each per-layer tensor; group L + 1,
//   the final layernorm and all of wte (the output head). Each is cut at the shards' ends
//   and into pieces of at most DIST_BUCKET_BYTES, broadcast from its owner (MPI_Ibcast) by
//   the progress thread, as the gradients' buckets are;
// - gpt2_forward waits for each group before the layer that reads it (dist_weights_ready);
//   the time waited is the exposed gather. The embedding reads its rows from the packed
//   copy, so it need not wait for the 31% of 124M's weights that wte is;
// - a reader of all the weights (validation, samples, the last step, a stop's checkpoint)
//   starts a due gather without rows and waits for all of it (dist_weights_landed); every
//   MPI call of the main thread, and gpt2_free, first waits for the pieces in flight
//   (dist_mpi_quiet: the progress thread may call MPI only while the main thread does not,
//   MPI_THREAD_SERIALIZED).
// A piece's bits are its owner's, as with the blocking gather: the same weights, losses and
// files (tests/mpi_tests.sh compares -z 1 -zg 1 with -z 0 bit for bit). Without -zg 1 (or
// with DIST_BLOCKING=1) the gather runs right after AdamW, in one go (dist_gather_weights
// below): on 2 cores that was the faster (doc/mpi.md).

// whether the gather overlaps: -zg 1, buckets on, and a backward pass has told the layout
static inline int dist_gather_overlaps(void) {
    return dist.zero && dist.gather_overlap && dist.buckets && buckets.queue;
}

// after AdamW on this process's shard of params (laid out as the gradients): the gather is
// due. landed(ctx, offset, count) will be called on this thread for each piece of another's
// shard once the forward pass has waited for it (-prec bf16 rounds its copy); timed: the
// waits count in dist.gather_seconds
static inline void dist_gather_due(float* params, int timed, void (*landed)(void*, size_t, size_t),
                                   void* ctx) {
    DistBuckets* q = &buckets;
    q->params = params;
    q->on_landed = landed;
    q->landed_ctx = ctx;
    q->gather_timed = timed;
    q->gather_due = 1;
}

// owner r's blocks of the rows of wte listed in rows (ascending): their offsets in wte (at)
// and in the packed copy (to, row k at k·C), and their lengths; their number
static int dist_row_blocks(int r, const int* rows, int nrows, int C, int* at, int* to, int* len) {
    size_t lo = shards.bounds[r], hi = shards.bounds[r + 1];
    int n = 0;
    for (int k = 0; k < nrows; k++) {
        size_t from = (size_t)rows[k] * C, end = from + C;
        from = from > lo ? from : lo;
        end = end < hi ? end : hi;
        if (from >= end) continue;
        at[n] = (int)from;
        to[n] = k * C + (int)(from - (size_t)rows[k] * C);
        len[n++] = (int)(end - from);
    }
    return n;
}

// the embedding's rows: every process's n tokens exchanged, the rows of wte they read (in
// order), q->ids the batch's tokens as indices into them, and per owner one broadcast of its
// blocks of those rows into q->packed (an indexed type each side; the owner copies its own).
// Nothing flies yet: the main thread alone calls MPI. Returns 0 where it cannot (the
// processes' batches differ in size, or wte is too large for int offsets).
static int dist_queue_rows(const int* tokens, int n, int C) {
    DistBuckets* q = &buckets;
    int V = (int)(q->sizes[0] / C), sizes[2] = {n, -n}, most[2];
    dist_allreduce(sizes, most, 2, MPI_INT, MPI_MAX, "the batch's rows of wte");
    if (most[0] != -most[1] || q->sizes[0] > (size_t)INT32_MAX) return 0;
    size_t all = (size_t)n * dist.size;
    if (n > q->ids_cap) {
        free(q->all_tokens); free(q->ids);
        q->all_tokens = mallocCheck(all * sizeof(int));
        q->ids = mallocCheck((size_t)n * sizeof(int));
        q->ids_cap = n;
    }
    if (!q->row_of) {
        q->row_of = mallocCheck((size_t)V * sizeof(int));
        for (int v = 0; v < V; v++) q->row_of[v] = -1;
    }
    MPI_Request all_tokens;
    MPI_Iallgather(tokens, n, MPI_INT, q->all_tokens, n, MPI_INT, MPI_COMM_WORLD, &all_tokens);
    dist_wait(1, &all_tokens, "the batch's rows of wte");
    for (size_t i = 0; i < all; i++) q->row_of[q->all_tokens[i]] = 0;  // (checked by gpt2_forward)
    int* rows = mallocCheck((all + 1) * 4 * sizeof(int));  // the rows read, then 3 block lists
    int nrows = 0;
    for (int v = 0; v < V; v++)
        if (q->row_of[v] == 0) rows[nrows] = v, q->row_of[v] = nrows++ + 1;
    for (int i = 0; i < n; i++) q->ids[i] = q->row_of[tokens[i]] - 1;
    for (int k = 0; k < nrows; k++) q->row_of[rows[k]] = -1;
    if ((size_t)nrows * C > q->packed_cap) {
        free(q->packed);
        q->packed_cap = (size_t)nrows * C;
        q->packed = mallocCheck(q->packed_cap * sizeof(float));
    }
    int *at = rows + all + 1, *to = at + all + 1, *len = to + all + 1;
    for (int r = 0; r < dist.size; r++) {
        int blocks = dist_row_blocks(r, rows, nrows, C, at, to, len);
        if (blocks == 0) continue;
        MPI_Datatype* t = &q->row_types[q->row_type_count];
        MPI_Type_indexed(blocks, len, r == dist.rank ? at : to, MPI_FLOAT, t);
        MPI_Type_commit(t);
        q->row_type_count++;
        if (r == dist.rank)
            for (int b = 0; b < blocks; b++)
                memcpy(q->packed + to[b], q->params + at[b], (size_t)len[b] * sizeof(float));
        dist_queue_piece((Bucket){r == dist.rank ? q->params : q->packed, 1, 0, r, 0, *t});
    }
    free(rows);
    return 1;
}

// queues the due gather (tokens: the batch's, whose rows of wte go first; NULL: wte whole
// in group 0) and wakes the progress thread
static void dist_gather_queue(const int* tokens, int n, int C) {
    DistBuckets* q = &buckets;
    for (int k = 0; k < q->row_type_count; k++) MPI_Type_free(&q->row_types[k]);
    q->row_type_count = 0;
    int L = q->layers, rows = tokens && dist_queue_rows(tokens, n, C);
    pthread_mutex_lock(&q->lock);
    size_t offset = 0;
    for (int k = 0; k < q->tensors; offset += q->sizes[k++])  // the embedding's: wpe (and wte)
        if (k < q->layered[0] && !(k == 0 && rows)) dist_queue(q->params + offset, q->sizes[k], 0);
    for (int l = 0; l < L; l++) {  // layer l's slices
        offset = 0;
        for (int k = 0; k < q->tensors; offset += q->sizes[k++]) {
            size_t slice = q->sizes[k] / L;
            if (k >= q->layered[0] && k < q->layered[1])
                dist_queue(q->params + offset + l * slice, slice, l + 1);
        }
    }
    offset = 0;
    for (int k = 0; k < q->tensors; offset += q->sizes[k++])  // the head's: lnf (and wte)
        if (k >= q->layered[1] || (k == 0 && rows)) dist_queue(q->params + offset, q->sizes[k], L + 1);
    memset(q->group_ready, 0, (size_t)L + 2);
    q->gather_due = 0;
    q->gathering = 1;
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
}

// the pieces of group g have landed (the caller holds the lock): each of another's shard to
// the `landed` hook; once every group has, the queue is free for the next backward pass
static void dist_group_landed(int g) {
    DistBuckets* q = &buckets;
    if (q->on_landed)
        for (int k = 0; k < q->queued; k++) {
            const Bucket* b = &q->queue[k];
            if (b->group == g && b->owner != dist.rank && b->type == MPI_FLOAT)
                q->on_landed(q->landed_ctx, (size_t)(b->at - q->params), (size_t)b->count);
        }
    q->group_ready[g] = 1;
    for (int h = 0; h < q->layers + 2; h++)
        if (!q->group_ready[h]) return;
    while (q->finished < q->queued) pthread_cond_wait(&q->landed, &q->lock);
    q->queued = q->started = q->finished = 0;
    q->gathering = 0;
}

// before layer l's forward (l = -1: the embedding, l = L: the final layernorm and the head;
// l = -2: every group)
static inline void dist_weights_ready(int l) {
    DistBuckets* q = &buckets;
    if (!q->gathering) return;
    double t0 = now_seconds();
    pthread_mutex_lock(&q->lock);
    int last = l == -2 ? q->layers + 1 : l + 1;
    for (int g = l == -2 ? 0 : l + 1; q->gathering && g <= last; g++) {
        if (q->group_ready[g]) continue;
        q->main_waiting = 1;
        while (q->group_pending[g] > 0) pthread_cond_wait(&q->landed, &q->lock);
        q->main_waiting = 0;
        dist_group_landed(g);
    }
    pthread_mutex_unlock(&q->lock);
    if (q->gather_timed && l != -2) dist.gather_seconds += now_seconds() - t0;  // (in a step)
}

// gpt2_forward, before the embedding: a due gather starts, and the embedding's group lands.
// Returns the table the embedding reads and, in *ids, the rows of it for the n tokens: wte
// and the tokens themselves, or with -zg 1 the batch's rows of wte, packed, and their indices
static inline const float* dist_embedding_rows(const float* wte, const int* tokens, int n, int C,
                                               const int** ids) {
    DistBuckets* q = &buckets;
    *ids = tokens;
    if (!q->gather_due) return dist_weights_ready(-1), wte;
    double t0 = now_seconds();
    dist_gather_queue(wte == q->params ? tokens : NULL, n, C);
    if (q->gather_timed) dist.gather_seconds += now_seconds() - t0, dist.gathers++;  // (the tokens)
    dist_weights_ready(-1);
    if (q->row_type_count == 0) return wte;
    *ids = q->ids;
    return q->packed;
}

// the pieces in flight have landed: the main thread may call MPI
static inline void dist_mpi_quiet(void) { dist_weights_ready(-2); }

// every weight is this step's: a due gather starts (no rows) and every piece lands
static inline void dist_weights_landed(void) {
    if (buckets.gather_due) dist_gather_queue(NULL, 0, 0);
    dist_weights_ready(-2);
}

// the mean of x over the processes (the loss of the global batch from each one's rows; -tpar:
// one replica, whose processes all hold the same x)
static inline float dist_mean(float x) {
    if (dist_replicas() == 1) return x;
    dist_mpi_quiet();
    double mine = x, sum = 0.0;
    dist_allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, "the loss's mean");
    return (float)(sum / dist.size);
}

// whether any process has flag set (a stop signal reaches one process or all)
static inline int dist_any(int flag) {
    if (dist.size == 1) return flag;
    dist_mpi_quiet();
    int any = flag;
    dist_allreduce(&flag, &any, 1, MPI_INT, MPI_MAX, "the stop's agreement");
    return any;
}

// ---- ZeRO-1's gathers (the section "ZeRO-1" above); the progress thread is idle in each

// partial[first_chunk[r] .. first_chunk[r + 1] - 1], summed by process r, to every process
static inline void dist_gather_chunks(double* partial) {
    dist_mpi_quiet();
    if (!dist.zero) return;
    int counts[DIST_MAX_SHARDS], starts[DIST_MAX_SHARDS];
    for (int r = 0; r < dist.size; r++) {
        starts[r] = shards.first_chunk[r];
        counts[r] = shards.first_chunk[r + 1] - starts[r];
    }
    MPI_Request req;
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, partial, counts, starts, MPI_DOUBLE, MPI_COMM_WORLD, &req);
    dist_wait(1, &req, "the gradient norm's sums");
}

// process r's shard, at `shard`, in pieces of at most 2^30 floats (MPI counts are int): the
// requests of one broadcast from r to all (to = -1) or of sends to process `to` (its
// receives there), appended at req; their number
static int dist_shard_pieces(float* shard, int r, int to, MPI_Request* req) {
    const size_t most = (size_t)1 << 30, n = shards.bounds[r + 1] - shards.bounds[r];
    int k = 0;
    for (size_t at = 0; at < n; at += most, k++) {
        int count = n - at < most ? (int)(n - at) : (int)most;
        if (to < 0) MPI_Ibcast(shard + at, count, MPI_FLOAT, r, MPI_COMM_WORLD, &req[k]);
        else if (dist.rank == r) MPI_Isend(shard + at, count, MPI_FLOAT, to, r, MPI_COMM_WORLD, &req[k]);
        else MPI_Irecv(shard + at, count, MPI_FLOAT, r, r, MPI_COMM_WORLD, &req[k]);
    }
    return k;
}

// after AdamW: every process's updated shard of the weights to every process (all of them
// broadcast at once, so that the N owners send at the same time)
static inline void dist_gather_weights(float* params) {
    if (!dist.zero) return;
    double t0 = now_seconds();
    int most = (int)(shards.n >> 30) + 2 * DIST_MAX_SHARDS, n = 0;
    MPI_Request* req = mallocCheck((size_t)most * sizeof *req);
    for (int r = 0; r < dist.size; r++)
        n += dist_shard_pieces(params + shards.bounds[r], r, -1, req + n);
    dist_wait(n, req, "the weights' gather");
    free(req);
    dist.gather_seconds += now_seconds() - t0;
}

// the whole moment `all` (n floats) on process 0 from every process's shard of it, `mine`
// (the state file holds the whole moments); all may be NULL on the other processes
static inline void dist_gather_moments(float* all, const float* mine) {
    dist_mpi_quiet();
    int most = (int)(shards.n >> 30) + 2 * DIST_MAX_SHARDS, n = 0;
    MPI_Request* req = mallocCheck((size_t)most * sizeof *req);
    if (dist.rank == 0) {
        memcpy(all, mine, (shards.bounds[1] - shards.bounds[0]) * sizeof(float));
        for (int r = 1; r < dist.size; r++)
            n += dist_shard_pieces(all + shards.bounds[r], r, 0, req + n);
    } else n = dist_shard_pieces((float*)mine, dist.rank, 0, req);  // (sent, not written)
    dist_wait(n, req, "the moments' gather for a checkpoint");
    free(req);
}

// the weights of every process must be the same bits: compare a checksum of them (-tpar:
// the processes hold different shares; the tensors all hold get the same gradients by construction)
static inline void dist_check_weights(const float* params, size_t n, int step) {
    if (dist_replicas() == 1) return;
    dist_weights_landed();
    uint64_t sum = 0, lo, hi;
    const uint32_t* bits = (const uint32_t*)params;
    for (size_t i = 0; i < n; i++)
        sum += (uint64_t)bits[i] * (2 * i + 1);  // a change in any one weight changes the sum
    dist_allreduce(&sum, &lo, 1, MPI_UINT64_T, MPI_MIN, "the weights' check");
    dist_allreduce(&sum, &hi, 1, MPI_UINT64_T, MPI_MAX, "the weights' check");
    if (lo != hi)
        die_together("the weights of the %d processes differ at step %d (checksums %016llx .. %016llx): "
                     "their updates diverged", dist.size, step, (unsigned long long)lo,
                     (unsigned long long)hi);
}

// ---- tensor parallelism's collectives (the section "tensor parallelism" above)

// x (n floats) = its sum over the processes, on every process: each held a partial sum
// (in pieces of at most 2^30 floats, as MPI counts are int; on 2 processes each element is
// a + b, the same bits on both, so the copies of the shared tensors stay identical)
static inline void dist_tp_sum(float* x, size_t n) {
    if (dist.tp == 1) return;
    double t0 = now_seconds();
    for (size_t done = 0; done < n;) {
        int count = n - done < ((size_t)1 << 30) ? (int)(n - done) : 1 << 30;
        dist_allreduce(MPI_IN_PLACE, x + done, count, MPI_FLOAT, MPI_SUM, "-tpar's partial sums");
        done += (size_t)count;
    }
    dist.tp_seconds += now_seconds() - t0;
}

// x summed over the processes (the gradient norm's squares)
static inline double dist_tp_sum_double(double x) {
    double sum = x;
    if (dist.tp > 1) dist_allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, "-tpar's gradient norm");
    return sum;
}

// process `from`'s n floats, `mine` there, into `into` on process 0; every process calls it
// for every `from` in turn (from 0: nothing moves, process 0's share is its own)
static inline void dist_tp_collect(float* into, const float* mine, size_t n, int from) {
    if (from == 0 || (dist.rank != 0 && dist.rank != from)) return;
    for (size_t done = 0; done < n;) {
        int count = n - done < ((size_t)1 << 30) ? (int)(n - done) : 1 << 30;
        if (dist.rank == from) dist_send(mine + done, count, MPI_FLOAT, 0, from, "-tpar's shares for a checkpoint");
        else dist_recv(into + done, count, MPI_FLOAT, from, from, "-tpar's shares for a checkpoint");
        done += (size_t)count;
    }
}
#else
// A program built without MPI is one process. Started by mpirun as one of N >= 2 (Open MPI and
// MPICH say so in the environment), it would train N separate models into the same files: it
// stops, with one line from the first of them
static inline void dist_init(int* argc, char*** argv) {
    const char *n = getenv("OMPI_COMM_WORLD_SIZE"), *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!n) n = getenv("PMI_SIZE"), rank = getenv("PMI_RANK");
    int size = n ? atoi(n) : 1;
    if (size > 1 && rank && atoi(rank) > 0) exit(2);
    if (size > 1)
        die("mpirun started %d processes of a program built without MPI, which would train one model "
            "each: run train_gpt2_mpi (make mpi) under mpirun", size);
    (void)argc, (void)argv;
}
static inline void dist_setup_done(void) { dist.training = 1; }
static inline int dist_first_difference(const uint64_t* values, int n) { (void)values; (void)n; return -1; }
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
static inline void dist_gather_chunks(double* partial) { (void)partial; }
static inline void dist_gather_weights(float* params) { (void)params; }
static inline int dist_gather_overlaps(void) { return 0; }
static inline void dist_gather_due(float* params, int timed, void (*landed)(void*, size_t, size_t),
                                   void* ctx) {
    (void)params; (void)timed; (void)landed; (void)ctx;
}
static inline void dist_weights_ready(int l) { (void)l; }
static inline const float* dist_embedding_rows(const float* wte, const int* tokens, int n, int C,
                                               const int** ids) {
    (void)n; (void)C;
    *ids = tokens;
    return wte;
}
static inline void dist_weights_landed(void) {}
static inline void dist_mpi_quiet(void) {}
static inline void dist_gather_moments(float* all, const float* mine) { (void)all; (void)mine; }
static inline void dist_tp_sum(float* x, size_t n) { (void)x; (void)n; }
static inline double dist_tp_sum_double(double x) { return x; }
static inline void dist_tp_collect(float* into, const float* mine, size_t n, int from) {
    (void)into; (void)mine; (void)n; (void)from;
}
#endif

// whether any process has been asked to stop (util/io.h's stop_signal), the same answer for
// all; a signal that comes while this process waits in the collective call is kept for the
// next call, not overwritten by the answer computed without it
static inline int dist_stop_agreed(void) {
    int any = dist_any(stop_signal);
    if (any && !stop_signal) stop_signal = any;
    if (any) dist_weights_landed();  // -zg 1: the stop writes a checkpoint of all the weights
    return any;
}

// -tpar: the processes compute each generated token together, so they stop at the same one
// (the signal agreed); without it, this process's own signal
static inline int dist_tp_stop_agreed(void) { return dist.tp > 1 ? dist_stop_agreed() : stop_signal; }

#endif
