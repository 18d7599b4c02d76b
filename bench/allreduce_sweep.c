/*
bench/allreduce_sweep.c: how long N processes take to sum GPT-2 124M's gradient buffer
(124,475,904 floats, 498 MB) with MPI, by the size of the pieces it is cut into. This is
what chose util/dist.h's bucket size (DIST_BUCKET_BYTES). For each piece size, in rounds
that alternate the sizes (a loaded machine drifts), the buffer is reduced
  blocking: one MPI_Allreduce per piece, one after the other (util/dist.h before buckets);
  nonblocking: one MPI_Iallreduce per piece, all started, then MPI_Waitall (the buckets'
               calls, without a backward pass to overlap).
Prints the median milliseconds of each. Build and run (bench/run_bench.sh part 9 does):
  mpicc -O2 -o bench/allreduce_sweep bench/allreduce_sweep.c
  mpirun -np 2 bench/allreduce_sweep [floats] [rounds]
*/
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int by_value(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

int main(int argc, char** argv) {
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
