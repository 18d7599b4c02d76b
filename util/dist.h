/*
util/dist.h: data-parallel training over MPI, `mpirun -np N ./train_gpt2 <flags>`.

Data parallelism is three ideas, one function each:
- every process holds the whole model and takes its own B rows of a global batch of N·B
  rows (dist_rows). All processes walk the same global order of batches (same seed, same
  loader), so they agree on the data positions by construction, and a resume needs only
  the one position the state file already records;
- each computes the gradients of its rows' mean loss; dist_average_gradients averages
  them with one MPI_Allreduce over the whole gradient buffer. The mean of N means over
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
#endif

typedef struct {
    int rank;                  // this process, 0..size-1; process 0 prints and writes
    int size;                  // N, the number of processes
    int training;              // setup is over: errors end the job without asking the others
    double allreduce_seconds;  // time spent averaging gradients, and in how many calls
    long allreduce_calls;
} Dist;
static Dist dist = {0, 1, 0, 0.0, 0};

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
    int provided;  // only the main thread calls MPI; OpenMP threads compute between calls
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &dist.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &dist.size);
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
