/*
bench/bench_gpt2.c: the speed benchmark of train_gpt2.c. `make bench` builds it and runs
bench/run_bench.sh, which starts one process per part and prints a single report.

  bench_gpt2 --machine            the CPU, the FMA peak measured on independent FMAs (and
                                  the bf16 kernels' rates), the best sgemm() on 2048^3, copy
                                  bandwidth
  bench_gpt2 --shape 124m|default training steps exactly as main() does them: median ms,
                                  tokens/s, GFLOP/s; each kernel timed alone; peak RSS;
                                  a second run of 3 steps from the same init (determinism)
  bench_gpt2 --pairs 124m|default float32 against bf16 step by step in one process: two
                                  models take turns on the same batches; the median of each
                                  pair's fp32/bf16 ratio
  bench_gpt2 --gen                generating with the KV cache vs recomputing the forward
  bench_gpt2 --kernels            the build's float32 kernel, the bf16 kernel it chooses on
                                  this CPU (BF16_KERNEL forces one) and the cache blocking
  bench_gpt2 --summary FILE       peaks, ratios and the checklist of targets, from the
                                  "@ key value" lines the other modes printed (run_bench.sh
                                  collects them into FILE)
Options: --warmup N, --steps N (training steps), --kernel-ms MS (time budget per kernel),
         --gen-tokens N, --gen-full 1 (time the recomputation at every length, slow)

It includes train_gpt2_main.c, the model and its program, as a library (as test_gpt2.c
does) and calls their functions directly; it prints and never asserts: the exit status is
0 unless something crashed.
*/
#define TESTING  // train_gpt2_main.c without its main
#include "../train_gpt2_main.c"  // the model (train_gpt2.c) and its program
#include <sys/resource.h>

// ----------------------------------------------------------------------------
// small helpers

static int num_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static int cmp_double(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return x < y ? -1 : x > y;
}

static double median(const double* v, int n) {
    double* s = mallocCheck((size_t)n * sizeof(double));
    memcpy(s, v, (size_t)n * sizeof(double));
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

static double vmin(const double* v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < m) m = v[i];
    return m;
}

static double vmax(const double* v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] > m) m = v[i];
    return m;
}

// a result for run_bench.sh and --summary: "@ key value"
static void result(const char* prefix, const char* key, double v) {
    printf("@ %s%s%s %.9g\n", prefix, prefix[0] ? "." : "", key, v);
}

static double peak_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;  // Linux: kilobytes
}

// a cheap hash of a float array (bit patterns), to compare weights between runs
static uint64_t hash_floats(const float* p, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    const uint32_t* w = (const uint32_t*)p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ w[i]) * 1099511628211ULL;
    return h;
}

// ----------------------------------------------------------------------------
// --machine: the CPU, the measured FMA peak, best sgemm, memory bandwidth

// The CPU's vendor, family and model (x86: cpuid; elsewhere /proc/cpuinfo's first lines, or
// "unknown"), so that a figure says where it was measured
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
static void cpu_identity(char* out, size_t size) {
    unsigned r[4] = {0}, brand[12] = {0};
    char vendor[13] = {0};
    __get_cpuid(0, &r[0], &r[1], &r[2], &r[3]);
    memcpy(vendor, &r[1], 4), memcpy(vendor + 4, &r[3], 4), memcpy(vendor + 8, &r[2], 4);
    __get_cpuid(1, &r[0], &r[1], &r[2], &r[3]);
    unsigned family = (r[0] >> 8) & 15, model = (r[0] >> 4) & 15;
    if (family == 15) family += (r[0] >> 20) & 255;
    if (family == 6 || family >= 15) model += ((r[0] >> 16) & 15) << 4;
    for (unsigned i = 0; i < 3; i++)
        if (!__get_cpuid(0x80000002 + i, &brand[4 * i], &brand[4 * i + 1], &brand[4 * i + 2], &brand[4 * i + 3]))
            brand[4 * i] = 0;
    char* name = (char*)brand;
    name[47] = 0;
    while (*name == ' ') name++;
    snprintf(out, size, "%s family %u model %u, %s", vendor, family, model, name[0] ? name : "(no brand string)");
}
#else
static void cpu_identity(char* out, size_t size) {
    snprintf(out, size, "unknown");
    FILE* f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256], found[3][96] = {"", "", ""};
    const char* keys[3] = {"CPU implementer", "CPU part", "model name"};
    while (fgets(line, sizeof line, f))
        for (int k = 0; k < 3; k++)
            if (!found[k][0] && strncmp(line, keys[k], strlen(keys[k])) == 0 && strchr(line, ':')) {
                snprintf(found[k], sizeof found[k], "%s", strchr(line, ':') + 2);
                found[k][strcspn(found[k], "\n")] = 0;
            }
    fclose(f);
    if (found[2][0]) snprintf(out, size, "%s", found[2]);
    else if (found[0][0]) snprintf(out, size, "implementer %s part %s", found[0], found[1]);
}
#endif

static void fill_random(float* p, size_t n, uint64_t seed) {
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++)
        p[i] = random_f32(&s) - 0.5f;
}

// reps timings (seconds) of C = A @ B^T on n x n matrices, after the caller's warm-up
static void time_square_sgemm(const float* A, const float* Bm, float* Cm, int n, int reps, double* times) {
    for (int r = 0; r < reps; r++) {
        double t0 = now_seconds();
        sgemm(0, 1, n, n, n, A, n, Bm, n, Cm, n, 0);
        times[r] = now_seconds() - t0;
    }
}

// A quick look at what the machine delivers right now: sgemm on 768^3 (0.9 GFLOP), best of
// 3, on all threads. Printed before and after each timed part: this VM's speed moves (at
// times its two vCPUs give barely more than one core), and a part measured in such a
// period is slow for that reason. Returns GFLOP/s. Always float32, also under --prec bf16:
// the probe measures the machine, not the precision being timed.
// --prec: the precision of the models the training steps are timed in (as train_gpt2 -prec)
static int bench_precision = GEMM_FP32;

static double machine_probe(const char* when) {
    int n = 768;
    size_t nn = (size_t)n * n;
    float* A = alignedMallocCheck(nn * sizeof(float));
    float* Bm = alignedMallocCheck(nn * sizeof(float));
    float* Cm = alignedMallocCheck(nn * sizeof(float));
    fill_random(A, nn, 3);
    fill_random(Bm, nn, 4);
    sgemm(0, 1, n, n, n, A, n, Bm, n, Cm, n, 0);  // warm-up
    double times[3];
    time_square_sgemm(A, Bm, Cm, n, 3, times);
    free(A); free(Bm); free(Cm);
    double gf = 2.0 * n * n * n / vmin(times, 3) / 1e9;
    printf("machine probe %s: sgemm 768^3 on %d threads at %.1f GFLOP/s\n", when, num_threads(), gf);
    return gf;
}

// --isa: this build's matmul kernel against the FMA peak of its own vectors (an AVX2 build's
// ymm FMA, an AVX-512 build's zmm FMA), on one thread, timed by the thread's CPU time (which
// another process taking turns on the core does not inflate)
static double process_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
// FMA peak of this build's widest vectors on the calling thread: 16 independent chains of
// vec_fma (fast/vec.h; 4-cycle latency x 2 pipes needs 8), best of 5 rounds by CPU time
static double thread_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double vec_fma_peak(void) {
    vec_f acc[16], b = (vec_f){0} + 1e-7f;
    for (int i = 0; i < 16; i++) acc[i] = (vec_f){0} + (float)i;
    float a = 0.999f;
    __asm__ __volatile__("" : "+m"(a));
    double best = 0.0;
    for (int r = 0; r < 5; r++) {
        long iters = 2000000;
        double t0 = thread_seconds();
        for (long k = 0; k < iters; k++) {
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) acc[i] = vec_fma(acc[i], a, b);
        }
        double gf = 16.0 * 2 * VEC_W * iters / (thread_seconds() - t0) / 1e9;
        if (gf > best) best = gf;
    }
    float sink = 0.0f;  // (the sums are used: the loop stays)
    for (int i = 0; i < 16; i++) sink += acc[i][0];
    __asm__ __volatile__("" : "+m"(sink));
    return best;
}

#if defined(__AVX512BF16__)
// the same for vdpbf16ps: 16 chains, 64 flops per instruction (32 multiply-adds)
static double dpbf16_peak(void) {
    __m512 acc[16];
    for (int i = 0; i < 16; i++) acc[i] = _mm512_set1_ps((float)i);
    __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80);  // pairs of 1.0
    __asm__ __volatile__("" : "+v"(x));
    double best = 0.0;
    for (int r = 0; r < 5; r++) {
        long iters = 1000000;
        double t0 = thread_seconds();
        for (long k = 0; k < iters; k++) {
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) acc[i] = _mm512_dpbf16_ps(acc[i], x, x);
        }
        double gf = 16.0 * 64 * iters / (thread_seconds() - t0) / 1e9;
        if (gf > best) best = gf;
    }
    float sink = 0.0f;
    for (int i = 0; i < 16; i++) sink += acc[i][0];
    __asm__ __volatile__("" : "+m"(sink));
    return best;
}
#endif

// GFLOP/s of the bf16 micro-kernel kind (BF16_DPBF16, BF16_WIDEN) on one full tile 256 pairs
// deep, in L1 (the kernel alone: no packing, no blocking), best of 5 rounds of 200 calls
static double bf16_kernel_gflops(int kind) {
    int kc2 = 256;
    uint32_t* a = compat_aligned_alloc(64, sizeof(uint32_t) * kc2 * (GEMM_MR + GEMM_NR));
    float* c = compat_aligned_alloc(64, sizeof(float) * GEMM_MR * GEMM_NR);
    uint32_t* b = a + (size_t)kc2 * GEMM_MR;
    for (int i = 0; i < kc2 * (GEMM_MR + GEMM_NR); i++) a[i] = bf16_pair(1.0f + (i % 7) / 64.0f, 0.5f);
    double best = 0.0;
    for (int r = 0; r < 5; r++) {
        double t0 = thread_seconds();
        for (int k = 0; k < 200; k++) {
#if defined(__AVX512BF16__)
            if (kind == BF16_DPBF16) gemm_kernel_bf16_dp(kc2, a, b, c, GEMM_NR, GEMM_MR, GEMM_NR, k == 0, NULL);
            else
#endif
            gemm_kernel_bf16_widen(kc2, a, b, c, GEMM_NR, GEMM_MR, GEMM_NR, k == 0, NULL);
        }
        double gf = 200.0 * kc2 * 4 * GEMM_MR * GEMM_NR / (thread_seconds() - t0) / 1e9;
        if (gf > best) best = gf;
    }
    (void)kind;
    aligned_free(a); aligned_free(c);
    return best;
}

// one thread's GFLOP/s on the 124M step's products (B*T = 256 rows): forward qkv, fc,
// fcproj; backward dW (A^T) and dX; in the precision `prec`, with the bf16 kernel `kind`
static double isa_products(int prec, int kind, double peak, const char* title) {
    int shapes[][5] = {{256, 2304, 768, 0, 1}, {256, 3072, 768, 0, 1}, {256, 768, 3072, 0, 1},
                       {768, 3072, 256, 1, 0}, {256, 768, 3072, 0, 0}};
    int saved_kind = atomic_load(&bf16_kernel);
    GemmPrecision p = {.kind = prec};
    if (kind) atomic_store(&bf16_kernel, kind);
    double sum_flops = 0.0, sum_s = 0.0;
    printf("  %s, one thread:", title);
    for (int s = 0; s < 5; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], tA = shapes[s][3], tB = shapes[s][4];
        float* A = alignedMallocCheck((size_t)M * K * sizeof(float));
        float* B = alignedMallocCheck((size_t)K * N * sizeof(float));
        float* C = alignedMallocCheck((size_t)M * N * sizeof(float));
        fill_random(A, (size_t)M * K, 1);
        fill_random(B, (size_t)K * N, 2);
        sgemm_share(&p, 0, 1, tA, tB, M, N, K, A, tA ? M : K, B, tB ? K : N, C, N, 0, NULL);  // warm-up
        double best = 1e30;
        for (int r = 0; r < 5; r++) {
            double t0 = process_seconds();
            sgemm_share(&p, 0, 1, tA, tB, M, N, K, A, tA ? M : K, B, tB ? K : N, C, N, 0, NULL);
            double dt = process_seconds() - t0;
            if (dt < best) best = dt;
        }
        double flops = 2.0 * M * N * K;
        sum_flops += flops, sum_s += best;
        printf(" %.0f", flops / best / 1e9);
        free(A); free(B); free(C);
    }
    atomic_store(&bf16_kernel, saved_kind);
    double gf = sum_flops / sum_s / 1e9;
    printf(" GFLOP/s; all five %.1f = %.0f%% of the FMA peak\n", gf, 100.0 * gf / peak);
    return gf;
}

static void bench_isa(void) {
    printf("matmul kernel: %s (%d floats per vector, %s); blocking %s\n", GEMM_KERNEL_NAME, VEC_W,
           VEC_FUSED ? "FMA" : "multiply, then add", gemm_blocking_describe());
    double peak = vec_fma_peak();
    printf("FMA peak of this build's vectors, one thread (16 independent chains, CPU time): %.1f GFLOP/s\n", peak);
    result("", "isa_peak_gflops", peak);
    printf("the 124M step's products (256x2304x768 A B^T, 256x3072x768, 256x768x3072, 768x3072x256 A^T B, "
           "256x768x3072 A B):\n");
    result("", "isa_sgemm_gflops", isa_products(GEMM_FP32, 0, peak, "float32        "));
    result("", "isa_bf16_widen_gflops", isa_products(GEMM_BF16, BF16_WIDEN, peak, "bf16, widened  "));
#if defined(__AVX512BF16__)
    result("", "isa_bf16_dp_gflops", isa_products(GEMM_BF16, BF16_DPBF16, peak, "bf16, vdpbf16ps"));
#endif
    printf("-prec bf16 runs: %s\n", bf16_kernel_describe());
}

static void bench_machine(void) {
    int threads = num_threads();
    printf("threads: %d (OpenMP%s)\n", threads,
#ifdef _OPENMP
           ""
#else
           " not available"
#endif
    );
#ifdef __AVX512F__
    printf("build: AVX-512 enabled (sgemm uses 512-bit FMA)\n");
#else
    printf("build: no AVX-512 in this build (-march does not enable it): sgemm runs its fallback\n");
#endif

    char cpu[256];
    cpu_identity(cpu, sizeof cpu);
    printf("cpu: %s\n", cpu);

    // 1. the FMA peak, measured: every thread runs independent FMAs at the same time
    double per_thread[256] = {0}, cpu_thread[256] = {0}, w0 = now_seconds();
    #pragma omp parallel num_threads(threads)
    {
        int t = team_thread();
        double c0 = thread_seconds(), g = vec_fma_peak();
        if (t < 256) per_thread[t] = g, cpu_thread[t] = thread_seconds() - c0;
    }
    double wall = now_seconds() - w0, busy = 0.0;  // (CPU time against the wall clock: the share)
    for (int t = 0; t < threads && t < 256; t++) busy += cpu_thread[t] / threads;
    printf("this process had %.0f%% of the cores during the FMA loop below%s\n", 100.0 * busy / wall,
           busy < 0.9 * wall ? " (another process is using them: all timings below are slowed)" : "");
    result("", "cpu_share", busy / wall);
    double peak = 0.0;
    printf("FMA peak, measured (16 independent chains of %d-float FMAs per thread, thread CPU time, best "
           "of 5), GFLOP/s:", VEC_W);
    for (int t = 0; t < threads && t < 256; t++) {
        printf(" %.1f", per_thread[t]);
        peak += per_thread[t];
    }
    printf("; all %d threads %.1f\n", threads, peak);
    double widen = bf16_kernel_gflops(BF16_WIDEN);
    printf("bf16 on one thread: the widened kernel (one tile in L1) %.1f GFLOP/s = %.2fx the FMA peak",
           widen, widen / per_thread[0]);
#if defined(__AVX512BF16__)
    double dp_peak = dpbf16_peak(), dp = bf16_kernel_gflops(BF16_DPBF16);
    printf("; vdpbf16ps: independent chains %.1f GFLOP/s = %.2fx the FMA peak, its kernel %.1f\n", dp_peak,
           dp_peak / per_thread[0], dp);
    result("", "dpbf16_peak_gflops", dp_peak);
    result("", "bf16_dp_gflops", dp);
#else
    printf("; no vdpbf16ps in this build\n");
#endif
    result("", "bf16_widen_gflops", widen);
    printf("-prec bf16 runs: %s\n", bf16_kernel_describe());
    printf("sgemm blocking: %s\n", gemm_blocking_describe());

    // 2. the best matmul: sgemm on 2048^3 (out = A @ B^T, the layout of matmul_forward)
    int n = 2048;
    size_t nn = (size_t)n * n;
    float* A = alignedMallocCheck(nn * sizeof(float));  // huge pages, as the model's buffers
    float* Bm = alignedMallocCheck(nn * sizeof(float));
    float* Cm = alignedMallocCheck(nn * sizeof(float));
    fill_random(A, nn, 1);
    fill_random(Bm, nn, 2);
    memset(Cm, 0, nn * sizeof(float));
    double flops = 2.0 * n * n * n, times[6];
    sgemm(0, 1, n, n, n, A, n, Bm, n, Cm, n, 0);  // warm-up
    time_square_sgemm(A, Bm, Cm, n, 6, times);
    double sg_best = flops / vmin(times, 6) / 1e9, sg_med = flops / median(times, 6) / 1e9;
    printf("sgemm %dx%dx%d (A @ B^T), %d threads: best %.1f GFLOP/s, median %.1f (of 6 runs)",
           n, n, n, threads, sg_best, sg_med);
    if (peak > 0) printf(" = %.0f%% of the measured FMA peak", 100.0 * sg_best / peak);
    printf("\n");
    // the same product on one thread: two threads should be nearly twice as fast. Much less
    // means the two vCPUs are not getting two cores' worth of vector units right now (this
    // VM sometimes behaves as if they were one core's two hyper-threads), and every number
    // of this run is low for that reason.
    double times1[3];
#ifdef _OPENMP
    omp_set_num_threads(1);
#endif
    time_square_sgemm(A, Bm, Cm, n, 3, times1);
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    double sg1 = flops / vmin(times1, 3) / 1e9, scaling = sg_best / sg1;
    printf("sgemm on 1 thread: best %.1f GFLOP/s; %d threads are %.2fx faster\n", sg1, threads, scaling);
    if (threads >= 2 && scaling < 1.6)
        printf("WARNING: %d threads are only %.2fx faster than one: the machine is not delivering %d full "
               "cores now; the timings of this run are low for that reason\n", threads, scaling, threads);
    free(A); free(Bm); free(Cm);

    // 3. memory bandwidth: memcpy of 256 MiB, each thread copies its half (best of 5)
    size_t bytes = (size_t)256 << 20;
    char* src = alignedMallocCheck(bytes);
    char* dst = alignedMallocCheck(bytes);
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    double ct[5], rt[5];
    for (int r = 0; r < 5; r++) {
        double t0 = now_seconds();
        #pragma omp parallel num_threads(threads)
        {
            int t = 0, T = 1;
#ifdef _OPENMP
            t = omp_get_thread_num(); T = omp_get_num_threads();
#endif
            size_t lo = bytes * t / T, hi = bytes * (t + 1) / T;
            memcpy(dst + lo, src + lo, hi - lo);
        }
        ct[r] = now_seconds() - t0;
    }
    // read only: a sum over the same buffer (for information)
    const float* fp = (const float*)src;
    size_t nf = bytes / sizeof(float);
    volatile float sink = 0.0f;
    for (int r = 0; r < 5; r++) {
        double t0 = now_seconds();
        float s = 0.0f;
        #pragma omp parallel for reduction(+ : s) num_threads(threads) schedule(static)
        for (size_t blk = 0; blk < nf / 4096; blk++) {  // 64 independent sums: not latency-bound
            const float* p = fp + blk * 4096;
            float acc[64] = {0};
            for (int j = 0; j < 4096; j += 64)
                for (int u = 0; u < 64; u++)
                    acc[u] += p[j + u];
            for (int u = 0; u < 64; u++)
                s += acc[u];
        }
        sink = s;
        rt[r] = now_seconds() - t0;
    }
    (void)sink;
    double copy_gbs = 2.0 * bytes / vmin(ct, 5) / 1e9, read_gbs = (double)bytes / vmin(rt, 5) / 1e9;
    printf("memory: memcpy of 256 MiB on %d threads: %.1f GB/s counting read + write (%.1f GB/s copied)\n",
           threads, copy_gbs, copy_gbs / 2);
    printf("        read only (sum of 256 MiB of floats): %.1f GB/s (for information)\n", read_gbs);
    free(src); free(dst);

    result("", "probe_gflops", machine_probe("(reference for the parts below)"));
    result("", "threads", threads);
    result("", "peak_gflops", peak);
    result("", "sgemm_gflops", sg_best);
    result("", "sgemm_scaling", scaling);
    result("", "copy_gbs", copy_gbs);
    result("", "read_gbs", read_gbs);
}

// ----------------------------------------------------------------------------
// --shape: training steps, the kernel breakdown, peak RSS, determinism

typedef struct {
    const char* name;   // "124m", "default"
    const char* title;
    GPT2Config c;
    int B, T, warmup, steps;
    double kernel_ms;   // time budget per kernel (ms)
} Shape;

// the shape `name` (of the flag `flag`), with the warm-up, timed steps and kernel budget the
// command line gave (a negative warm-up, or 0 steps or ms: the shape's own)
static Shape get_shape(const char* flag, const char* name, int warmup, int steps, double kernel_ms) {
    Shape s;
    memset(&s, 0, sizeof s);
    if (strcmp(name, "124m") == 0) {
        GPT2Config c = {.max_seq_len = 1024, .vocab_size = 50257, .padded_vocab_size = 50304,
                        .num_layers = 12, .num_heads = 12, .channels = 768, .num_kv_heads = 12};
        s = (Shape){"124m", "GPT-2 124M", c, 4, 64, 2, 5, 300.0};
    } else if (strcmp(name, "default") == 0) {
        GPT2Config c = {.max_seq_len = 64, .vocab_size = 65, .padded_vocab_size = 128,
                        .num_layers = 4, .num_heads = 4, .channels = 128, .num_kv_heads = 4};
        s = (Shape){"default", "default run", c, 12, 64, 10, 50, 100.0};
    } else {
        die("%s %s: expected 124m or default", flag, name);
    }
    if (warmup >= 0) s.warmup = warmup;
    if (steps > 0) s.steps = steps;
    if (kernel_ms > 0) s.kernel_ms = kernel_ms;
    return s;
}

// one batch of B T + 1 random tokens for each of `total` steps, made before any timing
static int* random_batches(const Shape* sh, int total) {
    size_t n = (size_t)total * (sh->B * sh->T + 1);
    int* tokens = mallocCheck(n * sizeof(int));
    uint64_t rng = 42;
    for (size_t i = 0; i < n; i++)
        tokens[i] = (int)(random_u64(&rng) % (uint64_t)sh->c.vocab_size);
    return tokens;
}

// FLOPs of one training step (forward + backward, the usual 6 N D count plus attention)
static double step_flops(const Shape* s) {
    double B = s->B, T = s->T, L = s->c.num_layers, C = s->c.channels, Vp = s->c.padded_vocab_size;
    return 6 * B * T * (12 * L * C * C + Vp * C) + 6 * L * B * T * T * C;
}

// one training step, as the trainer runs it (gpt2_train_step with the default flags)
static float bench_train_step(GPT2* m, const int* inputs, const int* targets, int B, int T, int step,
                              float* norm_out) {
    Options o = default_options();
    AdamWConfig opt = adamw_config(&o);
    StepStats s = gpt2_train_step(m, inputs, targets, B, T, step, &opt);
    *norm_out = s.norm;
    return s.loss;
}

// the kernel table
#define MAX_ROWS 40
#define MAX_REPS 2000
typedef struct {
    const char* name;
    const char* part;   // forward, backward, optimizer
    double calls;       // per training step
    double ms;          // median per call
    double flops;       // per call (matmuls), 0 = not counted
} Row;
static Row rows[MAX_ROWS];
static int num_rows;
static double rep_times[MAX_REPS];

// Times CODE alone: one call to estimate, then enough repetitions to fill the budget
// (at least 5), each timed on its own; keeps the median. Per-layer kernels see the
// variable l = rep % L and use that layer's buffers, so weights are not all in cache.
#define TIME_KERNEL(NAME, PART, CALLS, FLOPS, CODE) do {                                  \
        int l = 0;                                                                        \
        double t0_ = now_seconds();                                                       \
        CODE;                                                                             \
        double first_ = now_seconds() - t0_;                                              \
        int reps_ = first_ > 0 ? (int)(budget_s / first_) : MAX_REPS;                    \
        if (reps_ < 5) reps_ = 5;                                                         \
        if (reps_ > MAX_REPS) reps_ = MAX_REPS;                                           \
        for (int r_ = 0; r_ < reps_; r_++) {                                              \
            l = (r_ + 1) % L;                                                             \
            t0_ = now_seconds();                                                          \
            CODE;                                                                         \
            rep_times[r_] = now_seconds() - t0_;                                          \
        }                                                                                 \
        (void)l;                                                                          \
        rows[num_rows++] = (Row){NAME, PART, CALLS, 1e3 * median(rep_times, reps_), FLOPS}; \
    } while (0)

// Every kernel of gpt2_forward, gpt2_backward and the optimizer, called directly on the
// model's own buffers (right after training, so they hold real activations), with the
// shapes and call counts of one step. Backward kernels add into their outputs; repeated
// calls only make those sums larger, which does not change the time.
static void kernel_breakdown(GPT2* m, const Shape* sh, double step_ms) {
    GPT2Config c = m->config;
    int B = sh->B, T = sh->T, C = c.channels, L = c.num_layers, V = c.vocab_size,
        Vp = c.padded_vocab_size, BT = B * T;
    size_t BTC = (size_t)BT * C;
    double budget_s = sh->kernel_ms * 1e-3;
    GemmPrecision prec = model_precision(m);  // (-prec, as the step)
    ActivationTensors a = m->acts;
    BackwardScratch* s = &m->scratch;
    LayerParams* W = mallocCheck((size_t)L * sizeof(LayerParams));
    LayerParams* DW = mallocCheck((size_t)L * sizeof(LayerParams));
    LayerActs* A = mallocCheck((size_t)L * sizeof(LayerActs));
    for (int i = 0; i < L; i++) {
        W[i] = layer_params(m->params, c, i);
        DW[i] = layer_params(m->grads, c, i);
        A[i] = layer_acts(m, i, B, T);
    }
    DropoutMask off = model_dropout(m, 0, DROP_ATT_PROBS);  // dropout p = 0, as in the step
    double fL = L, mm = 2.0 * BT * C;  // matmul forward FLOPs = mm * OC
    num_rows = 0;

    // forward (gpt2_forward, block_forward)
    TIME_KERNEL("encoder", "forward", 1, 0,
                encoder_forward(a.encoded, m->inputs, m->params.wte, m->params.wpe, B, T, C));
    TIME_KERNEL("layernorm (ln1, ln2 x L, lnf)", "forward", 2 * fL + 1, 0,
                layernorm_forward(A[l].ln1, A[l].ln1_mean, A[l].ln1_rstd, A[l].residual, W[l].ln1w, W[l].ln1b,
                                  BT, C));
    TIME_KERNEL("matmul qkv", "forward", fL, mm * 3 * C,
                matmul_forward_in(&prec, A[l].qkv, A[l].ln1, W[l].qkvw, W[l].qkvb, BT, C, 3 * C));
    TIME_KERNEL("attention", "forward", fL, 0,
                attention_forward(A[l].atty, A[l].att_scores, A[l].att_probs, A[l].att_dropped, A[l].qkv,
                                  A[l].qkv + C, attention_shape(c, B, T), &off));
    TIME_KERNEL("matmul attproj", "forward", fL, mm * C,
                matmul_forward_in(&prec, A[l].attproj, A[l].atty, W[l].attprojw, W[l].attprojb, BT, C, C));
    TIME_KERNEL("residual (x 2L)", "forward", 2 * fL, 0,
                residual_forward(A[l].residual2, A[l].residual, A[l].attproj, BTC));
    TIME_KERNEL("matmul fc", "forward", fL, mm * 4 * C,
                matmul_forward_in(&prec, A[l].fch, A[l].ln2, W[l].fcw, W[l].fcb, BT, C, 4 * C));
    TIME_KERNEL("gelu", "forward", fL, 0, gelu_forward(A[l].fch_act, A[l].fch, 4 * BTC));
    TIME_KERNEL("matmul fcproj", "forward", fL, mm * 4 * C,
                matmul_forward_in(&prec, A[l].fcproj, A[l].fch_act, W[l].fcprojw, W[l].fcprojb, BT, 4 * C, C));
    TIME_KERNEL("matmul lm head", "forward", 1, mm * Vp,
                matmul_forward_in(&prec, a.logits, a.lnf, m->params.wte, NULL, BT, C, Vp));
    TIME_KERNEL("softmax + crossentropy", "forward", 1, 0,
                softmax_forward(a.probs, a.logits, BT, V, Vp);
                crossentropy_forward(s->losses, a.probs, m->targets, BT, Vp));

    // backward (gpt2_backward, block_backward)
    TIME_KERNEL("crossentropy + softmax", "backward", 1, 0,
                crossentropy_softmax_backward(a.logits, s->dlosses, a.probs, m->targets, BT, V, Vp));
    TIME_KERNEL("matmul lm head", "backward", 1, 2 * mm * Vp,
                matmul_backward_in(&prec, s->dln, m->grads.wte, NULL, a.logits, a.lnf, m->params.wte, BT, C, Vp,
                                GRAD_ADD));
    TIME_KERNEL("layernorm (ln1, ln2 x L, lnf)", "backward", 2 * fL + 1, 0,
                layernorm_backward(s->dres, DW[l].ln2w, DW[l].ln2b, s->dln, A[l].residual2, W[l].ln2w,
                                   A[l].ln2_mean, A[l].ln2_rstd, BT, C, GRAD_ADD));
    TIME_KERNEL("matmul fcproj", "backward", fL, 2 * mm * 4 * C,
                matmul_backward_in(&prec, s->dfch_act, DW[l].fcprojw, DW[l].fcprojb, s->dbranch, A[l].fch_act,
                                W[l].fcprojw, BT, 4 * C, C, GRAD_ADD));
    TIME_KERNEL("gelu", "backward", fL, 0, gelu_backward(s->dfch, A[l].fch, s->dfch_act, 4 * BTC));
    TIME_KERNEL("matmul fc", "backward", fL, 2 * mm * 4 * C,
                matmul_backward_in(&prec, s->dln, DW[l].fcw, DW[l].fcb, s->dfch, A[l].ln2, W[l].fcw, BT, C, 4 * C,
                                GRAD_ADD));
    TIME_KERNEL("matmul attproj", "backward", fL, 2 * mm * C,
                matmul_backward_in(&prec, s->datty, DW[l].attprojw, DW[l].attprojb, s->dbranch, A[l].atty,
                                W[l].attprojw, BT, C, C, GRAD_ADD));
    TIME_KERNEL("attention", "backward", fL, 0,
                attention_backward(s->dqkv, s->dqkv + C, s->datty, A[l].qkv, A[l].qkv + C, A[l].att_probs,
                                   A[l].att_dropped, attention_shape(c, B, T), &off));
    TIME_KERNEL("matmul qkv", "backward", fL, 2 * mm * 3 * C,
                matmul_backward_in(&prec, s->dln, DW[l].qkvw, DW[l].qkvb, s->dqkv, A[l].ln1, W[l].qkvw, BT, C, 3 * C,
                                GRAD_ADD));
    TIME_KERNEL("encoder", "backward", 1, 0,
                encoder_backward(m->grads.wte, m->grads.wpe, s->dbranch, m->inputs, B, T, C, GRAD_ADD));

    // the optimizer part of the step
    volatile float sink = 0.0f;
    // (no zeroing pass: the backward's first writers store; the squares are summed in the
    // backward as each layer's gradients are final, here timed as the same sums on their own)
    TIME_KERNEL("zero_grad (a flag: first writers store)", "optimizer", 1, 0, gpt2_zero_grad(m));
    TIME_KERNEL("grad norm (squares summed per layer)", "optimizer", 1, 0,
                sink = (float)(sum_of_squares(m->grads.lnfw, 2 * (size_t)C)
                               + sum_of_squares(m->grads_memory, m->param_sizes[0] + m->param_sizes[1]));
                for (int k = 0; k < L; k++)
                    sink += (float)layer_grad_squares(m, k));
    AdamWConfig adamw = {.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f, .weight_decay = 0.1f};
    TIME_KERNEL("AdamW update (with the clipping scale)", "optimizer", 1, 0,
                gpt2_update(m, &adamw, 1e-4f, 0.5f, 1000));
    (void)sink;
    free(W); free(DW); free(A);

    // the table
    printf("\nper-kernel breakdown (%s, B=%d T=%d): each kernel timed alone on this step's shapes,\n",
           sh->title, B, T);
    printf("median of repeated calls, times its calls per step (L = %d)\n", L);
    printf("  %-9s %-36s %6s %10s %10s %7s %9s\n", "part", "kernel", "calls", "ms/call", "ms/step", "% step",
           "GFLOP/s");
    double total = 0.0, part_total = 0.0;
    for (int i = 0; i < num_rows; i++) {
        Row* r = &rows[i];
        double per_step = r->ms * r->calls;
        total += per_step;
        part_total += per_step;
        char calls[32];
        if (r->calls == (int)r->calls) snprintf(calls, sizeof calls, "%d", (int)r->calls);
        else snprintf(calls, sizeof calls, "%.2f", r->calls);
        printf("  %-9s %-36s %6s %10.4f %10.3f %6.1f%%", r->part, r->name, calls, r->ms, per_step,
               100.0 * per_step / step_ms);
        if (r->flops > 0) printf(" %9.1f", r->flops / (r->ms * 1e-3) / 1e9);
        printf("\n");
        if (i + 1 == num_rows || strcmp(rows[i + 1].part, r->part) != 0) {
            printf("  %-9s %-36s %6s %10s %10.3f %6.1f%%\n", "", "subtotal", "", "", part_total,
                   100.0 * part_total / step_ms);
            if (strcmp(r->part, "optimizer") == 0) result(sh->name, "optimizer_share", part_total / step_ms);
            part_total = 0.0;
        }
    }
    double matmul = 0.0;
    for (int i = 0; i < num_rows; i++)
        if (rows[i].flops > 0) matmul += rows[i].ms * rows[i].calls;
    printf("  sum of kernels %.3f ms = %.1f%% of the measured step (%.3f ms); "
           "matmuls alone %.3f ms (%.1f%%)\n", total, 100.0 * total / step_ms, step_ms, matmul,
           100.0 * matmul / step_ms);
    printf("  difference %.3f ms (%.1f%%): mostly cache effects: in a real step each kernel finds "
           "its inputs\n"
           "  further out in the memory hierarchy than when it is timed alone; also a thread wake-up per\n"
           "  parallel region (~3 us each here, ~23 regions per layer), the loss sum, one buffer zeroed\n",
           step_ms - total, 100.0 * (step_ms - total) / step_ms);
    result(sh->name, "kernel_sum_ms", total);
    result(sh->name, "matmul_ms", matmul);
}

static void bench_shape(const char* name, int warmup, int steps, double kernel_ms) {
    Shape sh = get_shape("--shape", name, warmup, steps, kernel_ms);
    GPT2Config c = sh.c;
    int B = sh.B, T = sh.T, BT = B * T, total = sh.warmup + sh.steps;
    int det_steps = 3;
    if (total < det_steps) total = det_steps;
    double flops = step_flops(&sh);
    printf("%s: L=%d NH=%d C=%d maxT=%d V=%d Vp=%d; B=%d T=%d; %d threads\n", sh.title, c.num_layers,
           c.num_heads, c.channels, c.max_seq_len, c.vocab_size, c.padded_vocab_size, B, T, num_threads());
    printf("FLOPs per step = 6*B*T*(12*L*C^2 + Vp*C) + 6*L*B*T^2*C = %.2f GFLOP\n", flops / 1e9);

    int* tokens = random_batches(&sh, total);

    GPT2 model;
    double t0 = now_seconds();
    gpt2_init_random(&model, c, 1337);
    model.precision = bench_precision;
    printf("model: %.2fM parameters (random init in %.1f s)\n", model.num_parameters / 1e6,
           now_seconds() - t0);
    double* ms = mallocCheck((size_t)total * sizeof(double));
    double* cpu_ms = mallocCheck((size_t)total * sizeof(double));  // the process's CPU time per step
    float losses[2][3], norms[2][3];
    uint64_t hashes[2] = {0, 0};
    double probe_before = machine_probe("before the steps");
    printf("%d warm-up + %d timed steps (a step: forward, zero_grad, backward, grad norm, clip, lr, "
           "AdamW update)\n", sh.warmup, total - sh.warmup);
    for (int step = 0; step < total; step++) {
        const int* batch = tokens + (size_t)step * (BT + 1);
        float norm;
        double s0 = now_seconds(), c0 = process_seconds();
        float loss = bench_train_step(&model, batch, batch + 1, B, T, step, &norm);
        ms[step] = 1e3 * (now_seconds() - s0);
        cpu_ms[step] = 1e3 * (process_seconds() - c0);
        if (step < det_steps) {
            losses[0][step] = loss; norms[0][step] = norm;
            if (step == det_steps - 1) hashes[0] = hash_floats(model.params_memory, model.num_parameters);
        }
        if (total <= 12 || step < 3 || step == total - 1)
            printf("  step %3d%s: loss %.6f, norm %.4f, %.2f ms\n", step,
                   step < sh.warmup ? " (warm-up)" : "", loss, norm, ms[step]);
        else if (step == 3)
            printf("  ...\n");
    }
    double probe_after = machine_probe("after the steps");
    result(sh.name, "probe_gflops", probe_before < probe_after ? probe_before : probe_after);
    const double* timed = ms + sh.warmup;
    int n = total - sh.warmup;
    double med = median(timed, n);
    double rss = peak_rss_mib();
    printf("step time over %d timed steps: median %.2f ms (min %.2f, max %.2f); %.0f tokens/s; "
           "%.1f GFLOP/s\n",
           n, med, vmin(timed, n), vmax(timed, n), BT / (med * 1e-3), flops / (med * 1e-3) / 1e9);
    printf("peak RSS (getrusage ru_maxrss) after training: %.0f MiB\n", rss);
    result(sh.name, "ms", med);
    result(sh.name, "ms_min", vmin(timed, n));
    // on one thread, the CPU time of a step is its time with a core to itself: what part 11
    // compares when other processes share the cores
    printf("CPU time per step (all threads together): median %.2f ms\n", median(cpu_ms + sh.warmup, n));
    result(sh.name, "cpu_ms", median(cpu_ms + sh.warmup, n));
    result(sh.name, "tok_s", BT / (med * 1e-3));
    result(sh.name, "gflops", flops / (med * 1e-3) / 1e9);
    result(sh.name, "flops", flops);
    result(sh.name, "rss_mib", rss);
    fflush(stdout);

    kernel_breakdown(&model, &sh, med);
    gpt2_free(&model);
    free(cpu_ms);

    // determinism: the same 3 steps again from the same init
    gpt2_init_random(&model, c, 1337);
    model.precision = bench_precision;
    for (int step = 0; step < det_steps; step++) {
        const int* batch = tokens + (size_t)step * (BT + 1);
        losses[1][step] = bench_train_step(&model, batch, batch + 1, B, T, step, &norms[1][step]);
    }
    hashes[1] = hash_floats(model.params_memory, model.num_parameters);
    gpt2_free(&model);
    int same_loss = memcmp(losses[0], losses[1], sizeof losses[0]) == 0;
    int same_norm = memcmp(norms[0], norms[1], sizeof norms[0]) == 0;
    int same_weights = hashes[0] == hashes[1];
    printf("\ndeterminism: the first %d steps run twice from the same init\n", det_steps);
    for (int i = 0; i < det_steps; i++)
        printf("  step %d: loss %.9g vs %.9g, norm %.9g vs %.9g\n", i, losses[0][i], losses[1][i],
               norms[0][i], norms[1][i]);
    printf("  losses %s, gradient norms %s, weights after step %d %s (hash %016llx vs %016llx)\n",
           same_loss ? "bit-identical" : "DIFFER", same_norm ? "bit-identical" : "DIFFER", det_steps,
           same_weights ? "bit-identical" : "DIFFER", (unsigned long long)hashes[0],
           (unsigned long long)hashes[1]);
    result(sh.name, "deterministic", same_loss && same_norm && same_weights);
    free(tokens);
    free(ms);
}

// --pairs: float32 against bf16 in one process, step by step. Two models from the same
// init, one -prec fp32 and one -prec bf16, take turns on the same batches (who goes first
// alternates), so that both see the machine as it is at that moment: where other jobs share
// the cores, separate processes can run minutes apart at speeds 30% apart, a pair of steps
// only milliseconds apart. The ratio of each pair's times, fp32 / bf16 (> 1: bf16 faster);
// the median of those ratios. Times: the process's CPU time (all threads together: on one
// thread, the step's time with a core to itself), or the wall clock with more threads.
static void bench_pairs(const char* name, int warmup, int steps) {
    Shape sh = get_shape("--pairs", name, warmup, steps, 0);
    int B = sh.B, T = sh.T, BT = B * T, total = sh.warmup + sh.steps, cpu = num_threads() == 1;
    int* tokens = random_batches(&sh, total);
    GPT2 models[2];  // [0] float32, [1] bf16
    for (int i = 0; i < 2; i++) {
        gpt2_init_random(&models[i], sh.c, 1337);
        models[i].precision = i ? GEMM_BF16 : GEMM_FP32;
    }
    double* ms = mallocCheck(2 * (size_t)total * sizeof(double));  // [step * 2 + precision]
    double* ratio = mallocCheck((size_t)total * sizeof(double));
    for (int step = 0; step < total; step++) {
        const int* batch = tokens + (size_t)step * (BT + 1);
        for (int turn = 0; turn < 2; turn++) {
            int i = turn ^ (step & 1);  // (fp32 first on even steps, bf16 first on odd ones)
            float norm;
            double t0 = cpu ? process_seconds() : now_seconds();
            bench_train_step(&models[i], batch, batch + 1, B, T, step, &norm);
            ms[2 * step + i] = 1e3 * ((cpu ? process_seconds() : now_seconds()) - t0);
        }
        ratio[step] = ms[2 * step] / ms[2 * step + 1];
    }
    int n = sh.steps;
    const double* timed = ratio + sh.warmup;
    double* f32 = mallocCheck(2 * (size_t)n * sizeof(double)), *b16 = f32 + n;  // (the timed steps)
    for (int k = 0; k < n; k++) f32[k] = ms[2 * (sh.warmup + k)], b16[k] = ms[2 * (sh.warmup + k) + 1];
    double r = median(timed, n);
    printf("%s, %d threads, %d warm-up + %d pairs of steps (%s): fp32 median %.2f ms (min %.2f), "
           "bf16 median %.2f ms (min %.2f); fp32/bf16 per pair: median %.3f (min %.3f, max %.3f)\n",
           sh.title, num_threads(), sh.warmup, n, cpu ? "CPU time" : "wall clock", median(f32, n),
           vmin(f32, n), median(b16, n), vmin(b16, n), r, vmin(timed, n), vmax(timed, n));
    printf("bf16 products: %s\n", bf16_kernel_describe());
    result(sh.name, "pair_fp32_ms", median(f32, n));
    result(sh.name, "pair_bf16_ms", median(b16, n));
    result(sh.name, "pair_ratio", r);
    for (int i = 0; i < 2; i++) gpt2_free(&models[i]);
    free(tokens); free(ms); free(ratio); free(f32);
}

// ----------------------------------------------------------------------------
// --gen: generation with the KV cache vs recomputing the whole forward per token

// Grouped-query attention (-kv): the cache keeps NKV of the NH heads' keys and values, so a
// token costs 2 L NKV hs floats of cache. Tokens/s with NKV = NH, NH/2 and 1 (same shape,
// random weights, n tokens each from position 0), the best of 3 rounds that alternate
// between the three models, so that a slow period of the machine hits all of them.
static void bench_gen_gqa(GPT2Config c, const int* tokens, int n) {
    int kvs[3] = {c.num_heads, c.num_heads / 2, 1}, hs = c.channels / c.num_heads;
    GPT2 models[3];
    KVCache kv[3];
    double best[3] = {1e30, 1e30, 1e30};
    for (int i = 0; i < 3; i++) {
        c.num_kv_heads = kvs[i];
        gpt2_init_random(&models[i], c, 1337);
        kvcache_init(&kv[i], c);
    }
    printf("grouped-query attention (-kv), %d tokens each, best of 3 alternating rounds:\n", n);
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 3; i++) {
            kv[i].pos = 0;
            gpt2_forward_token(&models[i], &kv[i], tokens[0]);  // warm-up
            kv[i].pos = 0;
            double t0 = now_seconds();
            for (int t = 0; t < n; t++)
                gpt2_forward_token(&models[i], &kv[i], tokens[t]);
            double dt = now_seconds() - t0;
            if (dt < best[i]) best[i] = dt;
        }
    for (int i = 0; i < 3; i++) {
        double per_token = 2.0 * c.num_layers * kvs[i] * hs * sizeof(float);
        printf("  -kv %2d: KV cache %6.0f bytes per token (%5.1f MB for maxT = %d), %.2fM parameters, "
               "%.1f tokens/s\n", kvs[i], per_token, per_token * c.max_seq_len / 1e6, c.max_seq_len,
               models[i].num_parameters / 1e6, n / best[i]);
        char name[32];
        snprintf(name, sizeof name, "gen_kv%d", kvs[i]);
        result(name, "bytes_per_token", per_token);
        result(name, "tok_s", n / best[i]);
        kvcache_free(&kv[i]);
        gpt2_free(&models[i]);
    }
}

// -prec bf16: the same model generating from its bf16 copy (fast/matvec_bf16.h) against the
// float32 weights, n tokens each from position 0, the best of 3 rounds alternating between
// the two, so that a slow period of the machine hits both; and the largest logit difference
static void bench_gen_bf16(GPT2* model, const int* tokens, int n) {
    GPT2Config c = model->config;
    KVCache kv[2];  // 0: float32, 1: bf16
    double best[2] = {1e30, 1e30};
    float maxdiff = 0.0f, largest = 0.0f;
    float* logits32 = mallocCheck((size_t)n * c.vocab_size * sizeof(float));
    for (int p = 0; p < 2; p++) {
        kvcache_init(&kv[p], c);
        weights_bf16_sync(&kv[p].bf16, p ? GEMM_BF16 : GEMM_FP32, model->params_memory, model->num_parameters,
                          model->params_bf16);
    }
    for (int round = 0; round < 3; round++)
        for (int p = 0; p < 2; p++) {
            kv[p].pos = 0;
            gpt2_forward_token(model, &kv[p], tokens[0]);  // warm-up
            kv[p].pos = 0;
            double t0 = now_seconds();
            for (int t = 0; t < n; t++) {
                const float* l = gpt2_forward_token(model, &kv[p], tokens[t]);
                if (round == 0 && p == 0)
                    memcpy(logits32 + (size_t)t * c.vocab_size, l, c.vocab_size * sizeof(float));
                if (round == 0 && p == 1)
                    for (int v = 0; v < c.vocab_size; v++) {
                        float ref = logits32[(size_t)t * c.vocab_size + v], d = fabsf(l[v] - ref);
                        if (!(d <= maxdiff)) maxdiff = d;
                        if (fabsf(ref) > largest) largest = fabsf(ref);
                    }
            }
            double dt = now_seconds() - t0;
            if (dt < best[p]) best[p] = dt;
        }
    // bytes per token: the weights (without wte's padding rows) in 4 or 2 bytes, the cache in float32
    double params = (double)model->num_parameters - (double)(c.padded_vocab_size - c.vocab_size) * c.channels;
    double kvbytes = 0.0;
    for (int pos = 0; pos < n; pos++)
        kvbytes += 2.0 * c.num_layers * (pos + 1) * c.channels * 4.0 / n;
    printf("-prec bf16 generation (weights read in bf16), %d tokens each, best of 3 alternating rounds:\n"
           "  float32 %.1f tokens/s (%.1f MB per token), bf16 %.1f tokens/s (%.1f MB per token): %.2fx;\n"
           "  logits max |bf16 - float32| %.2e (largest |logit| %.2f)\n", n, n / best[0],
           (4 * params + kvbytes) / 1e6, n / best[1], (2 * params + kvbytes) / 1e6, best[0] / best[1], maxdiff,
           largest);
    result("gen_bf16", "tokens", n);
    result("gen_bf16", "fp32_tok_s", n / best[0]);
    result("gen_bf16", "tok_s", n / best[1]);
    result("gen_bf16", "fp32_bytes_per_token", 4 * params + kvbytes);
    result("gen_bf16", "bytes_per_token", 2 * params + kvbytes);
    result("gen_bf16", "maxdiff", maxdiff);
    for (int p = 0; p < 2; p++)
        kvcache_free(&kv[p]);
    free(logits32);
}

static void bench_gen(int N, int full) {
    GPT2Config c = {.max_seq_len = 1024, .vocab_size = 50257, .padded_vocab_size = 50304,
                    .num_layers = 12, .num_heads = 12, .channels = 768, .num_kv_heads = 12};
    if (N < 2) N = 2;
    if (N > c.max_seq_len) N = c.max_seq_len;
    GPT2 model;
    gpt2_init_random(&model, c, 1337);
    int V = c.vocab_size, Vp = c.padded_vocab_size;
    printf("GPT-2 124M shape, random weights (maxT %d, %.2fM parameters), %d threads; generating %d tokens\n",
           c.max_seq_len, model.num_parameters / 1e6, num_threads(), N);
    int* tokens = mallocCheck((size_t)N * sizeof(int));
    uint64_t rng = 7;
    for (int i = 0; i < N; i++)
        tokens[i] = (int)(random_u64(&rng) % (uint64_t)V);

    // the lengths at which the recomputation is timed (and the logits compared)
    int cand[] = {1, 8, 32, 64, 128, 192, 256, 320, 384, 448, 512};
    int lens[1024], nl = 0;
    if (full) {
        for (int t = 1; t <= N; t++)
            lens[nl++] = t;
    } else {
        for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++)
            if (cand[i] < N) lens[nl++] = cand[i];
        lens[nl++] = N;
    }
    float* kv_logits = mallocCheck((size_t)nl * V * sizeof(float));

    // 1. KV cache: one gpt2_forward_token per token
    KVCache kv;
    kvcache_init(&kv, c);
    for (int i = 0; i < 8; i++)
        gpt2_forward_token(&model, &kv, tokens[i]);  // warm-up
    kv.pos = 0;
    int k = 0;
    double t0 = now_seconds();
    for (int i = 0; i < N; i++) {
        const float* logits = gpt2_forward_token(&model, &kv, tokens[i]);
        if (k < nl && lens[k] == i + 1)
            memcpy(kv_logits + (size_t)k++ * V, logits, (size_t)V * sizeof(float));
    }
    double kv_s = now_seconds() - t0;
    printf("KV cache: %d tokens in %.2f s = %.1f tokens/s (%.2f ms/token)\n", N, kv_s, N / kv_s,
           1e3 * kv_s / N);

    // 2. recomputation (llm.c's way): the whole forward on the sequence so far, for every
    //    new token, then the last position's logits. The activations are allocated once for
    //    the longest sequence first (as llm.c allocates them for its B, T), not timed.
    gpt2_forward(&model, tokens, NULL, 1, N, -1);
    double* tl = mallocCheck((size_t)nl * sizeof(double));
    float maxdiff = 0.0f;
    for (int i = 0; i < nl; i++) {
        int t = lens[i];
        tl[i] = 1e30;
        for (int r = 0; r < (full ? 1 : 2); r++) {  // best of 2
            double s0 = now_seconds();
            gpt2_forward(&model, tokens, NULL, 1, t, -1);
            double dt = now_seconds() - s0;
            if (dt < tl[i]) tl[i] = dt;
        }
        const float* last = model.acts.logits + (size_t)(t - 1) * Vp;
        for (int j = 0; j < V; j++) {
            float d = fabsf(last[j] - kv_logits[(size_t)i * V + j]);
            if (!(d <= maxdiff)) maxdiff = d;
        }
    }
    double re_s = 0.0;
    if (full) {
        for (int i = 0; i < nl; i++)
            re_s += tl[i];
        printf("recompute: timed at every length 1..%d: %.2f s = %.2f tokens/s\n", N, re_s, N / re_s);
    } else {
        // integrate over t = 1..N, linear between the timed lengths
        for (int t = 1; t <= N; t++) {
            int i = 0;
            while (i + 1 < nl && lens[i + 1] < t)
                i++;
            double f;
            if (t <= lens[0]) f = tl[0];
            else if (i + 1 >= nl) f = tl[nl - 1];
            else f = tl[i] + (tl[i + 1] - tl[i]) * (t - lens[i]) / (double)(lens[i + 1] - lens[i]);
            re_s += f;
        }
        printf("recompute: a forward of the whole sequence per token would take too long "
               "for all %d lengths;\n"
               "  timed at %d lengths (best of 2) and integrated over 1..%d (linear between them):\n  ",
               N, nl, N);
        for (int i = 0; i < nl; i++)
            printf(" t=%d %.1f ms%s", lens[i], 1e3 * tl[i], i + 1 < nl ? "," : "\n");
        printf("  estimated %.1f s for %d tokens = %.2f tokens/s\n", re_s, N, N / re_s);
    }
    printf("speedup of the KV cache: %.1fx; KV-cache logits vs recomputed: max |diff| %.2e at %d lengths\n",
           re_s / kv_s, maxdiff, nl);

    // 3. the memory-bandwidth bound of the KV cache: each token reads every weight once
    //    (all parameters but the padding rows of wte) and the cached keys and values so far
    double weights = 4.0 * ((double)model.num_parameters - (double)(Vp - V) * c.channels);
    double kvbytes = 0.0;
    for (int pos = 0; pos < N; pos++)
        kvbytes += 2.0 * c.num_layers * (pos + 1) * c.channels * 4.0;
    kvbytes /= N;
    printf("bytes read per token: %.1f MB of weights + %.1f MB of KV cache (average over %d tokens) "
           "= %.1f MB\n",
           weights / 1e6, kvbytes / 1e6, N, (weights + kvbytes) / 1e6);
    result("gen", "tokens", N);
    result("gen", "kv_tok_s", N / kv_s);
    result("gen", "re_tok_s", N / re_s);
    result("gen", "speedup", re_s / kv_s);
    result("gen", "sampled", !full);
    result("gen", "bytes_per_token", weights + kvbytes);
    result("gen", "maxdiff", maxdiff);
    kvcache_free(&kv);
    bench_gen_bf16(&model, tokens, N / 2 > 16 ? N / 2 : N);
    gpt2_free(&model);
    bench_gen_gqa(c, tokens, N / 4 > 16 ? N / 4 : N);
    free(tokens); free(kv_logits); free(tl);
}

// ----------------------------------------------------------------------------
// --summary: peaks, ratios, the checklist

#define MAX_KEYS 200
static char keys[MAX_KEYS][64];
static double vals[MAX_KEYS];
static int num_keys;

static int have(const char* key) {
    for (int i = 0; i < num_keys; i++)
        if (strcmp(keys[i], key) == 0) return 1;
    return 0;
}

static double get(const char* key) {
    for (int i = num_keys - 1; i >= 0; i--)
        if (strcmp(keys[i], key) == 0) return vals[i];
    return NAN;
}

static const char* mark(int ok) { return ok ? "[x]" : "[ ]"; }

static void fmt_thousands(char* out, size_t n, double v) {  // 2463 -> "2,463"
    long x = lround(v);
    if (x >= 1000) snprintf(out, n, "%ld,%03ld", x / 1000, x % 1000);
    else snprintf(out, n, "%ld", x);
}

static void bench_summary(const char* path) {
    FILE* f = fopen(path, "r");
    if (!f) { printf("no results in '%s'\n", path); return; }
    char line[256];
    while (fgets(line, sizeof line, f) && num_keys < MAX_KEYS) {
        double v;
        if (sscanf(line, "%63s %lf", keys[num_keys], &v) == 2) vals[num_keys++] = v;
    }
    fclose(f);
    double peak = get("peak_gflops"), sg = get("sgemm_gflops");
    if (have("peak_gflops"))
        printf("peaks: fp32 FMA %.1f GFLOP/s (%.0f threads, measured on independent FMAs); "
               "best sgemm %.1f GFLOP/s (%.0f%%)\n", peak, get("threads"), sg, 100.0 * sg / peak);
    printf("\n  %-22s %9s %9s %8s %7s %7s %11s %9s\n", "training step", "ms/step", "tokens/s", "GFLOP/s",
           "% peak", "% sgemm", "PyTorch ms", "ours/PT");
    const char* shapes[2] = {"124m", "default"};
    const char* titles[2] = {"124M (B=4, T=64)", "default (B=12, T=64)"};
    char k[64];
    for (int i = 0; i < 2; i++) {
        snprintf(k, sizeof k, "%s.ms", shapes[i]);
        if (!have(k)) { printf("  %-22s (not measured)\n", titles[i]); continue; }
        double ms = get(k);
        snprintf(k, sizeof k, "%s.tok_s", shapes[i]); double tok = get(k);
        snprintf(k, sizeof k, "%s.gflops", shapes[i]); double gf = get(k);
        printf("  %-22s %9.2f %9.0f %8.1f %6.1f%% %6.1f%%", titles[i], ms, tok, gf, 100 * gf / peak,
               100 * gf / sg);
        snprintf(k, sizeof k, "torch.%s.ms", shapes[i]);
        if (have(k)) printf(" %11.2f %9.2f\n", get(k), ms / get(k));
        else printf(" %11s %9s\n", "n/a", "n/a");
    }
    printf("  (ours/PT < 1: ours is faster; PyTorch with the tuned settings of bench/README.md)\n");
    if (have("torch.blas_optimised") && get("torch.blas_optimised") == 0)
        printf("  !! PyTorch ran on the unoptimised reference BLAS here: its times are no baseline\n");
    if (have("cpu_share") && get("cpu_share") < 0.9)
        printf("  !! this run had only %.0f%% of the CPUs (another process was busy): every time is slowed\n",
               100 * get("cpu_share"));
    for (int i = 0; i < 2; i++) {
        snprintf(k, sizeof k, "%s.probe_gflops", shapes[i]);
        if (have(k) && have("probe_gflops") && get(k) < 0.9 * get("probe_gflops"))
            printf("  !! while the %s steps ran, the machine probe (sgemm 768^3) was down to %.0f%% of its "
                   "speed in the\n"
                   "     machine part: this VM was giving less than before, and that row is slow for that "
                   "reason\n",
                   titles[i], 100.0 * get(k) / get("probe_gflops"));
    }
    if (have("sgemm_scaling") && get("threads") >= 2 && get("sgemm_scaling") < 1.6)
        printf("  !! in the machine part, %.0f threads ran sgemm only %.2fx faster than one thread: "
               "the machine did not\n"
               "     deliver %.0f full cores then, and the times of this run are probably low for that "
               "reason\n",
               get("threads"), get("sgemm_scaling"), get("threads"));
    if (have("torch.default.ms"))
        printf("  nanoGPT's baby Shakespeare CPU config was reported at 54-56 ms/iteration tuned; "
               "measured here %.2f ms\n", get("torch.default.ms"));

    double rss = get("124m.rss_mib");
    char ours[32], llmc[32];
    fmt_thousands(ours, sizeof ours, rss);
    fmt_thousands(llmc, sizeof llmc, 2463);
    if (have("124m.rss_mib"))
        printf("\npeak RSS of the 124M training: %s MiB (llm.c's CPU trainer: %s MiB)\n", ours, llmc);

    if (have("gen.kv_tok_s")) {
        double bpt = get("gen.bytes_per_token"), bw = get("copy_gbs"), rd = get("read_gbs");
        double bound = bw * 1e9 / bpt;
        printf("\ngeneration (124M shape, %.0f tokens): KV cache %.1f tokens/s, "
               "recompute %.2f tokens/s%s: %.1fx\n",
               get("gen.tokens"), get("gen.kv_tok_s"), get("gen.re_tok_s"),
               get("gen.sampled") > 0 ? " (sampled lengths, integrated)" : "", get("gen.speedup"));
        if (have("copy_gbs")) {
            printf("  bandwidth bound: %.1f MB read per token / %.1f GB/s (memcpy, read + write counted) "
                   "= %.1f tokens/s;\n"
                   "  the KV cache reaches %.0f%% of it",
                   bpt / 1e6, bw, bound, 100.0 * get("gen.kv_tok_s") / bound);
            if (have("read_gbs"))
                printf(" (against the read-only %.1f GB/s: bound %.1f tokens/s, %.0f%%)", rd, rd * 1e9 / bpt,
                       100.0 * get("gen.kv_tok_s") / (rd * 1e9 / bpt));
            printf("\n");
        }
    }

    if (have("gen_bf16.tok_s")) {
        double r = get("gen_bf16.tok_s") / get("gen_bf16.fp32_tok_s"), bw = get("copy_gbs");
        printf("\n-prec bf16 generation (%.0f tokens): %.1f tokens/s against float32's %.1f (%.2fx), "
               "logits max |diff| %.2e\n", get("gen_bf16.tokens"), get("gen_bf16.tok_s"),
               get("gen_bf16.fp32_tok_s"), r, get("gen_bf16.maxdiff"));
        if (have("copy_gbs"))
            printf("  bandwidth bounds at %.1f GB/s (memcpy): float32 %.1f MB per token = %.1f tokens/s "
                   "(reached %.0f%%), bf16 %.1f MB = %.1f tokens/s (reached %.0f%%)\n", bw,
                   get("gen_bf16.fp32_bytes_per_token") / 1e6,
                   bw * 1e9 / get("gen_bf16.fp32_bytes_per_token"),
                   100 * get("gen_bf16.fp32_tok_s") * get("gen_bf16.fp32_bytes_per_token") / (bw * 1e9),
                   get("gen_bf16.bytes_per_token") / 1e6, bw * 1e9 / get("gen_bf16.bytes_per_token"),
                   100 * get("gen_bf16.tok_s") * get("gen_bf16.bytes_per_token") / (bw * 1e9));
    }

    printf("\ntargets (printed, not enforced):\n");
    double ms124 = get("124m.ms"), msdef = get("default.ms"), sp = get("gen.speedup");
    double frac = get("124m.gflops") / peak;
    if (have("124m.ms")) printf("  %s 124M step <= 800 ms: %.1f ms\n", mark(ms124 <= 800), ms124);
    else printf("  [ ] 124M step <= 800 ms: not measured\n");
    if (have("default.ms")) printf("  %s default step <= 18 ms: %.2f ms\n", mark(msdef <= 18), msdef);
    else printf("  [ ] default step <= 18 ms: not measured\n");
    if (have("124m.ms") && have("peak_gflops"))
        printf("  %s 124M step >= 55%% of the measured FMA peak: %.1f%% (%.1f of %.1f GFLOP/s)\n",
               mark(frac >= 0.55), 100 * frac, get("124m.gflops"), peak);
    else printf("  [ ] 124M step >= 55%% of the measured FMA peak: not measured\n");
    if (have("124m.rss_mib")) printf("  %s 124M peak RSS <= 2,463 MiB: %s MiB\n", mark(rss <= 2463), ours);
    else printf("  [ ] 124M peak RSS <= 2,463 MiB: not measured\n");
    int det_known = have("124m.deterministic") || have("default.deterministic");
    int det = (!have("124m.deterministic") || get("124m.deterministic") > 0) &&
              (!have("default.deterministic") || get("default.deterministic") > 0);
    if (det_known)
        printf("  %s bit-identical runs: 124M %s, default %s\n", mark(det),
               !have("124m.deterministic") ? "n/a" : get("124m.deterministic") > 0 ? "yes" : "NO",
               !have("default.deterministic") ? "n/a" : get("default.deterministic") > 0 ? "yes" : "NO");
    else printf("  [ ] bit-identical runs: not measured\n");
    if (have("gen.speedup")) printf("  %s KV-cache speedup >= 20x: %.1fx\n", mark(sp >= 20), sp);
    else printf("  [ ] KV-cache speedup >= 20x: not measured\n");
    double gr = get("gen_bf16.tok_s") / get("gen_bf16.fp32_tok_s");
    if (have("gen_bf16.tok_s"))
        printf("  %s bf16 generation >= 1.7x float32's tokens/s: %.2fx\n", mark(gr >= 1.7), gr);
    else printf("  [ ] bf16 generation >= 1.7x float32's tokens/s: not measured\n");
    double share = 100 * get("124m.optimizer_share");  // issue 28; its speed ratios: part 8 (BASE=REV)
    if (have("124m.optimizer_share"))
        printf("  %s the optimizer's share of the 124M step < 5%%: %.1f%% "
               "(its kernels timed alone, part 2)\n",
               mark(share < 5), share);
    else printf("  [ ] the optimizer's share of the 124M step < 5%%: not measured\n");
}

// ----------------------------------------------------------------------------

static void usage(void) {
    fprintf(stderr,
            "usage: bench_gpt2 --machine | --isa | --kernels | --shape 124m|default [--warmup N] [--steps N] "
            "[--kernel-ms MS] [--prec fp32|bf16]\n"
            "                  | --pairs 124m|default [--warmup N] [--steps N]\n"
            "                  | --gen [--gen-tokens N] [--gen-full 1] | --summary FILE\n");
    exit(EXIT_USAGE);
}

int main(int argc, char** argv) {
    error_program = "bench_gpt2";  // its errors name it, not the train_gpt2.c it includes
    const char *mode = NULL, *arg = NULL;
    int warmup = -1, steps = 0, gen_tokens = 512, gen_full = 0;
    double kernel_ms = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--machine") == 0 || strcmp(a, "--gen") == 0 || strcmp(a, "--isa") == 0
            || strcmp(a, "--kernels") == 0) {
            mode = a;
            continue;
        }
        if (!v) usage();
        if (strcmp(a, "--shape") == 0 || strcmp(a, "--summary") == 0 || strcmp(a, "--pairs") == 0) {
            mode = a;
            arg = v;
        }
        else if (strcmp(a, "--warmup") == 0) warmup = atoi(v);
        else if (strcmp(a, "--steps") == 0) steps = atoi(v);
        else if (strcmp(a, "--kernel-ms") == 0) kernel_ms = atof(v);
        else if (strcmp(a, "--gen-tokens") == 0) gen_tokens = atoi(v);
        else if (strcmp(a, "--gen-full") == 0) gen_full = atoi(v);
        else if (strcmp(a, "--prec") == 0 && (strcmp(v, "fp32") == 0 || strcmp(v, "bf16") == 0))
            bench_precision = strcmp(v, "bf16") == 0 ? GEMM_BF16 : GEMM_FP32;  // as train_gpt2 -prec
        else usage();
        i++;
    }
    if (!mode) usage();
    if (strcmp(mode, "--machine") == 0) bench_machine();
    else if (strcmp(mode, "--shape") == 0) bench_shape(arg, warmup, steps, kernel_ms);
    else if (strcmp(mode, "--pairs") == 0) bench_pairs(arg, warmup, steps);
    else if (strcmp(mode, "--gen") == 0) bench_gen(gen_tokens, gen_full);
    else if (strcmp(mode, "--isa") == 0) bench_isa();
    else if (strcmp(mode, "--kernels") == 0)  // (make bench names each build's kernels)
        printf("float32 %s; bf16 %s; blocking %s\n", GEMM_KERNEL_NAME, bf16_kernel_describe(),
               gemm_blocking_describe());
    else bench_summary(arg);
    return 0;
}
