/*
bench/allreduce_sweep.c: how long N processes take to sum GPT-2 124M's gradient buffer
(124,475,904 floats, 498 MB) with MPI, by the size of the pieces it is cut into. This is
what chose util/dist.h's bucket size (DIST_BUCKET_BYTES). For each piece size, in rounds
that alternate the sizes (a loaded machine drifts), the buffer is reduced
  blocking: one MPI_Allreduce per piece, one after the other (util/dist.h before buckets);
  nonblocking: one MPI_Iallreduce per piece, all started, then MPI_Waitall (the buckets'
               calls, without a backward pass to overlap).
Prints the median milliseconds of each. Then the buckets' size, 1 MiB, with at most W pieces
in flight (a new one starts as one lands, as util/dist.h's progress thread does), W = 1, 2,
4, 8, 16 and all: the -z 0 pattern (MPI_Iallreduce) and the -z 1 pattern (MPI_Ireduce to the
owner of the piece's shard, N equal shards): median milliseconds and the page faults of
process 0 a round (getrusage). This is what chose DIST_SUMS_IN_FLIGHT_LOCAL.
Build and run (bench/run_bench.sh part 9 does):
  mpicc -O2 -o bench/allreduce_sweep bench/allreduce_sweep.c
  mpirun -np 2 bench/allreduce_sweep [floats] [rounds]
*/
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static double reduce(float* x, size_t n, size_t piece, int nonblocking) {
    size_t pieces = (n + piece - 1) / piece;
    MPI_Request* req = malloc(pieces * sizeof *req);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (size_t k = 0; k < pieces; k++) {
        int count = (int)(n - k * piece < piece ? n - k * piece : piece);
        float* at = x + k * piece;
        if (nonblocking) MPI_Iallreduce(MPI_IN_PLACE, at, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req[k]);
        else MPI_Allreduce(MPI_IN_PLACE, at, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    if (nonblocking) MPI_Waitall((int)pieces, req, MPI_STATUSES_IGNORE);
    double t = MPI_Wtime() - t0;
    free(req);
    return t;
}

// piece k of n floats cut into pieces of `piece`, summed over the processes: to all of them
// (to_owner 0), or to the process whose shard (n / size each) it starts in
static void start_piece(float* x, size_t n, size_t piece, size_t k, int to_owner, MPI_Request* req) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int count = (int)(n - k * piece < piece ? n - k * piece : piece);
    float* at = x + k * piece;
    int owner = (int)(k * piece / ((n + size - 1) / size));
    if (!to_owner) MPI_Iallreduce(MPI_IN_PLACE, at, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, req);
    else if (owner == rank)
        MPI_Ireduce(MPI_IN_PLACE, at, count, MPI_FLOAT, MPI_SUM, owner, MPI_COMM_WORLD, req);
    else MPI_Ireduce(at, NULL, count, MPI_FLOAT, MPI_SUM, owner, MPI_COMM_WORLD, req);
}

// the pieces summed with at most `window` in flight: seconds; *faults: this process's page
// faults meanwhile
static double reduce_window(float* x, size_t n, size_t piece, int to_owner, size_t window, long* faults) {
    size_t pieces = (n + piece - 1) / piece, next = 0;
    int active = 0, done, *which = malloc(pieces * sizeof *which);
    MPI_Request* req = malloc(pieces * sizeof *req);
    struct rusage before, after;
    MPI_Barrier(MPI_COMM_WORLD);
    getrusage(RUSAGE_SELF, &before);
    double t0 = MPI_Wtime();
    while (next < pieces || active > 0) {
        while ((size_t)active < window && next < pieces)
            start_piece(x, n, piece, next++, to_owner, &req[active++]);
        MPI_Testsome(active, req, &done, which, MPI_STATUSES_IGNORE);
        int kept = 0;
        for (int k = 0; k < active; k++)
            if (req[k] != MPI_REQUEST_NULL) req[kept++] = req[k];
        active = kept;
    }
    double t = MPI_Wtime() - t0;
    getrusage(RUSAGE_SELF, &after);
    *faults = after.ru_minflt - before.ru_minflt;
    free(which);
    free(req);
    return t;
}

static int by_value(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

static int by_long(const void* a, const void* b) {
    long x = *(const long*)a, y = *(const long*)b;
    return (x > y) - (x < y);
}

int main(int argc, char** argv) {
    setenv("OMPI_MCA_coll_libnbc_ireduce_algorithm", "2", 0);  // as util/dist.h sets it
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 124475904;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    if (n == 0 || rounds < 1 || rounds > 100) {
        if (rank == 0)
            fprintf(stderr, "allreduce_sweep: error: usage: allreduce_sweep [floats > 0] [rounds 1..100]\n");
        MPI_Finalize();
        return 1;
    }
    float* x = malloc(n * sizeof *x);
    if (!x) {
        fprintf(stderr, "allreduce_sweep: error: cannot allocate %zu floats\n", n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < n; i++) x[i] = 1e-3f * (float)(i % 1000);
    const size_t windows[] = {1, 2, 4, 8, 16, (size_t)-1};  // (size_t)-1: all at once
    enum { WINDOWS = sizeof windows / sizeof windows[0] };
    static double w[WINDOWS][2][100];
    static long faults[WINDOWS][2][100];
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < WINDOWS; k++)
            for (int to_owner = 0; to_owner < 2; to_owner++) {
                memset(x, 0, 4096);
                long* f = &faults[k][to_owner][r];
                w[k][to_owner][r] = reduce_window(x, n, 262144, to_owner, windows[k], f);
            }
    if (rank == 0) {
        printf("pieces of 1 MiB, at most W in flight: median ms (process 0's page faults, median)\n");
        printf("%10s %22s %22s\n", "W", "all-reduce (-z 0)", "reduce to owner (-z 1)");
        for (int k = 0; k < WINDOWS; k++) {
            char name[16], cell[2][32];
            snprintf(name, sizeof name, windows[k] == (size_t)-1 ? "all" : "%zu", windows[k]);
            for (int o = 0; o < 2; o++) {
                qsort(w[k][o], rounds, sizeof(double), by_value);
                qsort(faults[k][o], rounds, sizeof(long), by_long);
                snprintf(cell[o], sizeof cell[o], "%.1f (%ld)", 1e3 * w[k][o][rounds / 2],
                         faults[k][o][rounds / 2]);
            }
            printf("%10s %22s %22s\n", name, cell[0], cell[1]);
        }
    }
    const double mib[] = {0.25, 1, 2, 4, 8, 16, 24, 32, 64, 4096};  // 4096 MiB = util/dist.h's 2^30 floats
    enum { SIZES = sizeof mib / sizeof mib[0] };
    static double t[SIZES][2][100];
    for (int r = 0; r < rounds; r++)
        for (int s = 0; s < SIZES; s++)
            for (int nb = 0; nb < 2; nb++) {
                memset(x, 0, 4096);  // keep the values from growing without bound over the rounds
                t[s][nb][r] = reduce(x, n, (size_t)(mib[s] * 262144), nb);
            }
    if (rank == 0) {
        printf("%d processes, %zu floats (%.0f MB), median of %d rounds, ms\n", size, n, n * 4e-6, rounds);
        printf("%10s %10s %12s\n", "piece MiB", "blocking", "nonblocking");
        for (int s = 0; s < SIZES; s++) {
            qsort(t[s][0], rounds, sizeof(double), by_value);
            qsort(t[s][1], rounds, sizeof(double), by_value);
            printf("%10g %10.1f %12.1f\n", mib[s], 1e3 * t[s][0][rounds / 2], 1e3 * t[s][1][rounds / 2]);
        }
    }
    free(x);
    MPI_Finalize();
    return 0;
}
