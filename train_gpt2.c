/*
train_gpt2.c: a GPT-2 trainer in one C file.

Every layer of GPT-2 is here with its forward pass and, right beside it, its
hand-derived backward pass; then AdamW, a data loader, a tokenizer, a sampler,
generation with a KV cache, checkpoints and a command line. It reads and writes
llm.c's file formats (see ../shared/formats.md), so llm.c checkpoints continue here
and ours load in llm.c.

Reading order for a learner:
  1. the layers (encoder, layernorm, matmul, attention, gelu, residual, dropout,
     softmax + cross-entropy), each _forward next to its _backward;
  2. the model (GPT2: config, parameters, activations) and gpt2_forward / gpt2_backward;
  3. the training loop in main().
The attention layer carries comments numbered like the steps of the article
"因果自注意力" (causal self-attention, forward steps 1-8, backward steps 1-8).

Shapes: B batch, T time (sequence length), C channels, NH heads, hs = C/NH head size,
V vocabulary, Vp vocabulary padded to a multiple of 128, L layers, OC output channels.

Build: make. Test: make test. Run ./train_gpt2 -h for the flags.
*/
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE  // also madvise(MADV_HUGEPAGE), see aligned_alloc_check
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <errno.h>
#include <dirent.h>
#include <unistd.h>
#include <sys/stat.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

// ----------------------------------------------------------------------------
// errors: one clear line naming the file or flag, then a non-zero exit

#define EXIT_BAD_INPUT 1
#define EXIT_USAGE 2

static void die(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "train_gpt2: error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(EXIT_BAD_INPUT);
}

// fopen/fread/malloc that name the file (and the source line) when they fail
static FILE* fopen_check(const char* path, const char* mode, const char* src, int line) {
    FILE* f = fopen(path, mode);
    if (!f) die("cannot open '%s' (%s) [%s:%d]", path, strerror(errno), src, line);
    return f;
}
#define fopenCheck(path, mode) fopen_check(path, mode, __FILE__, __LINE__)

static void fread_check(void* dst, size_t size, size_t count, FILE* f, const char* path, const char* what) {
    if (fread(dst, size, count, f) != count)
        die("'%s' is truncated: it ends inside the %s", path, what);
}

static void fwrite_check(const void* src, size_t size, size_t count, FILE* f, const char* path) {
    if (fwrite(src, size, count, f) != count) die("cannot write '%s' (%s)", path, strerror(errno));
}

static void* malloc_check(size_t size, const char* src, int line) {
    void* p = malloc(size ? size : 1);
    if (!p) die("out of memory allocating %zu bytes [%s:%d]", size, src, line);
    return p;
}
#define mallocCheck(size) malloc_check(size, __FILE__, __LINE__)

static void* calloc_check(size_t count, size_t size, const char* src, int line) {
    void* p = calloc(count ? count : 1, size);
    if (!p) die("out of memory allocating %zu bytes [%s:%d]", count * size, src, line);
    return p;
}
#define callocCheck(count, size) calloc_check(count, size, __FILE__, __LINE__)

// The model's big buffers (weights, gradients, AdamW moments, activations, KV cache) and
// the layers' scratch: aligned to 64 bytes, and those of 2 MiB or more to 2 MiB, which
// does two things. Alignment: glibc hands out big blocks 16 bytes into a page, so every
// 64-byte vector load of a weight row straddled two cache lines (124M step 735 -> 665 ms
// once aligned). Huge pages: the 2 MiB blocks are offered to Linux as transparent huge
// pages (madvise; with THP in "madvise" mode, as here, nothing else gets them): a step
// streams through tens of megabytes, and 2 MiB pages mean 512x fewer TLB entries and
// page faults (665 -> 634 ms; the first 124M step 6 s -> 2.4 s).
// Zeroed if zero is set. Freed with free().
static void* aligned_alloc_check(size_t size, int zero, const char* src, int line) {
    const size_t huge = (size_t)2 << 20;
    size_t align = size >= huge ? huge : 64;
    size_t rounded = size ? (size + align - 1) / align * align : align;
    void* p = aligned_alloc(align, rounded);
    if (!p) die("out of memory allocating %zu bytes [%s:%d]", size, src, line);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == huge) madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure only means small pages
#endif
    if (zero) memset(p, 0, size);
    return p;
}
#define alignedMallocCheck(size) aligned_alloc_check(size, 0, __FILE__, __LINE__)
#define alignedCallocCheck(count, size) aligned_alloc_check((size_t)(count) * (size), 1, __FILE__, __LINE__)

// the size of an open file, to check it against what its header promises
static long file_size(FILE* f) {
    long here = ftell(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, here, SEEK_SET);
    return size;
}

// reads the 256-int header every llm.c file starts with and checks its magic number
static void read_header(FILE* f, const char* path, int32_t header[256], int32_t magic, const char* kind) {
    if (fread(header, sizeof(int32_t), 256, f) != 256)
        die("'%s' is truncated: shorter than the 1024-byte header of a %s", path, kind);
    if (header[0] != magic)
        die("'%s' is not a %s: magic number %d, expected %d", path, kind, header[0], magic);
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// ----------------------------------------------------------------------------
// random numbers: counter-based, so every stream is reproducible from its seed

// splitmix64: a 64-bit mixing function; feeding it a counter gives a good random stream
static inline uint64_t splitmix64(uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// a sequential generator for initialisation, shuffling and sampling: state is a counter
static inline uint64_t random_u64(uint64_t* state) { return splitmix64((*state)++); }
static inline float random_f32(uint64_t* state) { return (random_u64(state) >> 40) / 16777216.0f; } // [0,1)

// standard normal by Box-Muller (one value per call, so the stream is simple to follow)
static float random_normal(uint64_t* state) {
    double u1 = ((random_u64(state) >> 11) + 1.0) / 9007199254740993.0; // (0,1]
    double u2 = (random_u64(state) >> 11) / 9007199254740992.0;         // [0,1)
    return (float)(sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
}

// ----------------------------------------------------------------------------
// dropout masks: a hash of (seed, step, layer, site, element index)
// Each element decides alone whether it is dropped, so a mask needs no storage (the
// backward recomputes it), is the same for any thread count, and a resumed run gets
// the same masks. data/make_reference.py implements the same function in numpy.

enum { DROP_EMBED = 0, DROP_ATT_PROBS = 1, DROP_ATT_OUT = 2, DROP_MLP_OUT = 3 };

typedef struct {
    float p;          // probability of dropping an element; 0 = off
    float scale;      // 1/(1-p): inverted dropout keeps the expected value unchanged
    uint32_t threshold; // an element is dropped when its 24-bit hash is below this
    uint64_t key;     // hash of seed, step, layer and site
} DropoutMask;

static DropoutMask dropout_mask(float p, uint64_t seed, uint64_t step, int layer, int site) {
    DropoutMask m;
    m.p = p;
    m.scale = 1.0f / (1.0f - p);
    m.threshold = (uint32_t)floor((double)p * 16777216.0);
    m.key = splitmix64(splitmix64(splitmix64(seed) ^ step) ^ (uint64_t)(layer * 4 + site));
    return m;
}

static inline int dropout_keep(const DropoutMask* m, uint64_t idx) {
    return (uint32_t)(splitmix64(m->key ^ idx) >> 40) >= m->threshold;
}

// ----------------------------------------------------------------------------
// exp and tanh that the compiler can vectorise: the C library's expf and tanhf are
// function calls it will not turn into vector code (without -ffast-math), and in GELU
// they took 40% of a training step. Cody-Waite range reduction, e^x = 2^n e^r with
// |r| <= ln2/2, and a degree-7 Taylor polynomial for e^r: relative error about 2e-7.

static inline float exp_approx(float x) {
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);  // e^x stays a normal float
    float n = floorf(x * 1.44269504f + 0.5f);      // nearest integer to x / ln 2
    float r = x - n * 0.693145752f - n * 1.42860677e-6f; // x - n ln2, in two parts for accuracy
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.66666672e-1f + r * (4.16666679e-2f
              + r * (8.33333377e-3f + r * (1.38888892e-3f + r * 1.98412701e-4f))))));
    uint32_t bits = (uint32_t)(x == x ? (int32_t)n + 127 : 127) << 23; // 2^n in the exponent field
    float scale;                                   // (a NaN input keeps scale 1, so NaN comes out)
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

// tanh(u) = 1 - 2 / (1 + e^(2u)); absolute error about 1e-7
static inline float tanh_approx(float u) { return 1.0f - 2.0f / (1.0f + exp_approx(2.0f * u)); }

// ----------------------------------------------------------------------------
// the layers: each forward with its backward. Backward functions ADD (+=) into the
// gradients of parameters (a weight used at every position sums its gradient over all
// of them) and into the residual stream's gradient (layernorm_backward: the stream feeds
// a layernorm and also passes on through the residual, and the two gradients add up).
// The gradient of an activation that has one user is WRITTEN (=): no buffer has to be
// zeroed before a layer's backward.

// encoder: token embedding plus position embedding
// out is (B,T,C); inp is (B,T) token ids; wte is (Vp,C); wpe is (maxT,C)
void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T, int C) {
    #pragma omp parallel for collapse(2) if (B * T > 1)
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            float* out_bt = out + ((size_t)b * T + t) * C;
            const float* wte_ix = wte + (size_t)inp[b * T + t] * C;
            const float* wpe_t = wpe + (size_t)t * C;
            for (int i = 0; i < C; i++) out_bt[i] = wte_ix[i] + wpe_t[i];
        }
    }
}

// Several positions may hold the same token, so dwte rows receive several additions.
// To stay deterministic without locks, each thread owns a slice of the channels and
// walks all positions in order.
void encoder_backward(float* dwte, float* dwpe, const float* dout, const int* inp, int B, int T, int C) {
    #pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < C; c0 += 16) {
        int c1 = c0 + 16 < C ? c0 + 16 : C;
        for (int b = 0; b < B; b++) {
            for (int t = 0; t < T; t++) {
                const float* dout_bt = dout + ((size_t)b * T + t) * C;
                float* dwte_ix = dwte + (size_t)inp[b * T + t] * C;
                float* dwpe_t = dwpe + (size_t)t * C;
                for (int i = c0; i < c1; i++) {
                    dwte_ix[i] += dout_bt[i];
                    dwpe_t[i] += dout_bt[i];
                }
            }
        }
    }
}

// layernorm over the channels of each of N = B*T rows
// out = (x - mean) * rstd * weight + bias, rstd = 1/sqrt(var + 1e-5); mean and rstd are
// cached (N,) for the backward
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int N, int C) {
    const float eps = 1e-5f;
    #pragma omp parallel for if (N > 1)
    for (int n = 0; n < N; n++) {
        const float* x = inp + (size_t)n * C;
        float m = 0.0f;
        #pragma omp simd reduction(+ : m)
        for (int i = 0; i < C; i++) m += x[i];
        m /= C;
        float v = 0.0f;
        #pragma omp simd reduction(+ : v)
        for (int i = 0; i < C; i++) { float d = x[i] - m; v += d * d; }
        v /= C;
        float s = 1.0f / sqrtf(v + eps);
        float* o = out + (size_t)n * C;
        for (int i = 0; i < C; i++) o[i] = (x[i] - m) * s * weight[i] + bias[i];
        mean[n] = m;
        rstd[n] = s;
    }
}

// With xhat = (x - mean) * rstd and g = dout * weight, the gradient through the
// normalisation is dx = rstd * (g - mean(g) - xhat * mean(g * xhat)): the two means
// remove the parts of g that the centring and the scaling cancel.
// dweight and dbias sum over all N rows; each thread owns a slice of the channels.
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
    #pragma omp parallel  // one team for both loops: they write different outputs (nowait)
    {
        #pragma omp for nowait
        for (int n = 0; n < N; n++) {
            const float* x = inp + (size_t)n * C;
            const float* dy = dout + (size_t)n * C;
            float m = mean[n], s = rstd[n];
            float g_mean = 0.0f, gx_mean = 0.0f;
            #pragma omp simd reduction(+ : g_mean, gx_mean)
            for (int i = 0; i < C; i++) {
                float g = dy[i] * weight[i];
                g_mean += g;
                gx_mean += g * (x[i] - m) * s;
            }
            g_mean /= C;
            gx_mean /= C;
            float* dx = dinp + (size_t)n * C;
            for (int i = 0; i < C; i++) {
                float xhat = (x[i] - m) * s;
                dx[i] += s * (dy[i] * weight[i] - g_mean - xhat * gx_mean);
            }
        }
        // dweight and dbias: sums over all positions, 16 channels per task, each summed
        // down the rows in order in a local (register) accumulator
        #pragma omp for schedule(static)
        for (int c0 = 0; c0 < C; c0 += 16) {
            int w = C - c0 < 16 ? C - c0 : 16;
            float db[16] = {0}, dw[16] = {0};
            for (int n = 0; n < N; n++) {
                const float* x = inp + (size_t)n * C + c0;
                const float* dy = dout + (size_t)n * C + c0;
                float m = mean[n], s = rstd[n];
                for (int i = 0; i < w; i++) {
                    db[i] += dy[i];
                    dw[i] += dy[i] * (x[i] - m) * s;
                }
            }
            for (int i = 0; i < w; i++) {
                dbias[c0 + i] += db[i];
                dweight[c0 + i] += dw[i];
            }
        }
    }
}

// ----------------------------------------------------------------------------
// matmul: out = inp @ weight^T + bias (PyTorch's nn.Linear layout)
// inp is (BT,C), weight is (OC,C), bias is (OC) or NULL, out is (BT,OC)
//
// The plain version below is the one to read first: three loops, the maths as it
// is. The fast version hands the same product to sgemm() (further down), a cache-
// and register-blocked kernel; the tests check one against the other.

void matmul_forward_plain(float* out, const float* inp, const float* weight, const float* bias,
                          int BT, int C, int OC) {
    #pragma omp parallel for
    for (int bt = 0; bt < BT; bt++) {
        const float* x = inp + (size_t)bt * C;
        for (int o = 0; o < OC; o++) {
            const float* w = weight + (size_t)o * C;
            float sum = bias ? bias[o] : 0.0f;
            for (int i = 0; i < C; i++) sum += x[i] * w[i];
            out[(size_t)bt * OC + o] = sum;
        }
    }
}

// With out = x W^T + b: dx = dout W, dW = dout^T x, db = column sums of dout.
// dinp is written; dweight and dbias are added to.
void matmul_backward_plain(float* dinp, float* dweight, float* dbias, const float* dout,
                           const float* inp, const float* weight, int BT, int C, int OC) {
    #pragma omp parallel for
    for (int bt = 0; bt < BT; bt++) {
        const float* dy = dout + (size_t)bt * OC;
        float* dx = dinp + (size_t)bt * C;
        for (int i = 0; i < C; i++) dx[i] = 0.0f;
        for (int o = 0; o < OC; o++) {
            const float* w = weight + (size_t)o * C;
            for (int i = 0; i < C; i++) dx[i] += dy[o] * w[i];
        }
    }
    #pragma omp parallel for
    for (int o = 0; o < OC; o++) {
        float* dw = dweight + (size_t)o * C;
        float db = 0.0f;
        for (int bt = 0; bt < BT; bt++) {
            float dy = dout[(size_t)bt * OC + o];
            const float* x = inp + (size_t)bt * C;
            for (int i = 0; i < C; i++) dw[i] += dy * x[i];
            db += dy;
        }
        if (dbias) dbias[o] += db;
    }
}

void sgemm(int transA, int transB, int M, int N, int K, const float* A, int lda,
           const float* B, int ldb, float* Cm, int ldc, int accumulate);
void sgemm_bias(int transA, int transB, int M, int N, int K, const float* A, int lda,
                const float* B, int ldb, float* Cm, int ldc, int accumulate, const float* bias);
void sgemm_share(int t, int T, int transA, int transB, int M, int N, int K, const float* A, int lda,
                 const float* B, int ldb, float* Cm, int ldc, int accumulate, const float* bias);
int sgemm_threads(int M, int N, int K);
static int team_thread(void);
static int team_size(void);
static void bias_grad_share(int t, int T, float* dbias, const float* dout, int BT, int OC);

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    int BT, int C, int OC) {
    sgemm_bias(0, 1, BT, OC, C, inp, C, weight, C, out, OC, 0, bias);   // out = inp @ weight^T + bias
}

// The three products are independent: one team computes its share of each in turn,
// with no barrier between them (a second and third parallel region would cost a thread
// wake-up each, and the team's uneven shares even out over the three).
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int BT, int C, int OC) {
    int nt = sgemm_threads(BT, C, OC);
    #pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = team_thread(), T = team_size();
        sgemm_share(t, T, 0, 0, BT, C, OC, dout, OC, weight, C, dinp, C, 0, NULL);  // dinp = dout @ weight
        // (the shares are counted from the other end, so the thread with the larger share
        // of dinp gets the smaller share of dweight)
        sgemm_share(T - 1 - t, T, 1, 0, OC, C, BT, dout, OC, inp, C, dweight, C, 1, NULL);  // dweight += dout^T @ inp
        if (dbias) bias_grad_share(t, T, dbias, dout, BT, OC);
    }
}

// add_weighted_rows (below): one output row += a weighted sum of many rows, summed in
// vector registers. The bias gradient uses it, with every weight 1 (the column sums).
// The kernel: 16*NV outputs summed in registers, NV = 1, 2 or 4 vectors of 16 floats, in 4 partial
// sums (rows t2 = 0,4,8.. / 1,5,9.. / ...) so that 4*NV independent FMA chains hide the
// adder's latency. One body, instantiated below for the three widths with NV a constant,
// because fixed-size accumulators are what stay in vector registers. (Plain C arrays of
// this size were spilled to memory by GCC, so the AVX-512 build uses intrinsics.)
#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define NOINLINE
#define ALWAYS_INLINE inline
#endif
static ALWAYS_INLINE void weighted_rows_kernel(float* restrict out, const float* w, size_t w_stride,
                                               const float* rows, size_t stride, int count, const int NV) {
#ifdef __AVX512F__
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++)
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) acc[u][j] = _mm512_setzero_ps();
    int t2 = 0;
    for (; t2 + 4 <= count; t2 += 4)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            __m512 wt = _mm512_set1_ps(w[(t2 + u) * w_stride]);
            const float* r = rows + (t2 + u) * stride;
#pragma GCC unroll 4
            for (int j = 0; j < NV; j++) acc[u][j] = _mm512_fmadd_ps(wt, _mm512_loadu_ps(r + 16 * j), acc[u][j]);
        }
#pragma GCC unroll 3
    for (int u = 0; u < 3; u++) {  // the last count % 4 rows
        if (t2 + u >= count) break;
        __m512 wt = _mm512_set1_ps(w[(t2 + u) * w_stride]);
        const float* r = rows + (t2 + u) * stride;
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) acc[u][j] = _mm512_fmadd_ps(wt, _mm512_loadu_ps(r + 16 * j), acc[u][j]);
    }
#pragma GCC unroll 4
    for (int j = 0; j < NV; j++) {
        __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[0][j], acc[1][j]), _mm512_add_ps(acc[2][j], acc[3][j]));
        _mm512_storeu_ps(out + 16 * j, _mm512_add_ps(_mm512_loadu_ps(out + 16 * j), sum));
    }
#else
    float acc[4][64] = {{0}};
    for (int t2 = 0; t2 < count; t2++) {
        const float* r = rows + t2 * stride;
        float wt = w[t2 * w_stride];
        for (int j = 0; j < 16 * NV; j++) acc[t2 % 4][j] += wt * r[j];
    }
    for (int j = 0; j < 16 * NV; j++) out[j] += (acc[0][j] + acc[1][j]) + (acc[2][j] + acc[3][j]);
#endif
}
#define ADD_WEIGHTED_ROWS_BLOCK(WIDTH)                                                              \
static NOINLINE void add_weighted_rows_##WIDTH(float* restrict out, const float* w, size_t w_stride, \
                                               const float* rows, size_t stride, int count) {       \
    weighted_rows_kernel(out, w, w_stride, rows, stride, count, WIDTH / 16);                        \
}
ADD_WEIGHTED_ROWS_BLOCK(64)
ADD_WEIGHTED_ROWS_BLOCK(32)
ADD_WEIGHTED_ROWS_BLOCK(16)

// out (n) += sum over t2 < count of w[t2 * w_stride] * rows[t2 * stride .. + n]: a
// weighted sum of rows. The outputs are summed in registers, 64, 32 or 16 at a time (the
// wider, the more independent FMA chains hide the adder's latency), instead of going
// through memory for every t2; each output's sum still runs over t2 in order.
static inline void add_weighted_rows(float* restrict out, const float* w, size_t w_stride,
                                     const float* rows, size_t stride, int count, int n) {
    int i = 0;
    for (; i + 64 <= n; i += 64) add_weighted_rows_64(out + i, w, w_stride, rows + i, stride, count);
    for (; i + 32 <= n; i += 32) add_weighted_rows_32(out + i, w, w_stride, rows + i, stride, count);
    for (; i + 16 <= n; i += 16) add_weighted_rows_16(out + i, w, w_stride, rows + i, stride, count);
    for (; i < n; i++) {
        float acc = 0.0f;
        for (int t2 = 0; t2 < count; t2++) acc += w[t2 * w_stride] * rows[t2 * stride + i];
        out[i] += acc;
    }
}

// dbias (OC) += the column sums of dout (BT,OC): a weighted sum of dout's rows with
// every weight 1 (w_stride 0). Thread t of T takes its share of the 64-column blocks;
// each column's sum runs down the rows in order.
static void bias_grad_share(int t, int T, float* dbias, const float* dout, int BT, int OC) {
    static const float one = 1.0f;
    int blocks = (OC + 63) / 64;
    for (int k = blocks * t / T; k < blocks * (t + 1) / T; k++)
        add_weighted_rows(dbias + 64 * k, &one, 0, dout + 64 * k, OC, BT, OC - 64 * k < 64 ? OC - 64 * k : 64);
}

// ----------------------------------------------------------------------------
// causal multi-head self-attention, following the article "因果自注意力"
//
// inp is (B,T,3C): the fused Q,K,V projection (article forward: "输入与注意力权重矩阵相乘";
//   the training forward keeps it, it is the qkv activation). Head h owns channels
//   h*hs..(h+1)*hs-1 of each of Q, K and V ("多头计算").
// att_scores is (B,NH,T,T): scaled, masked scores (steps 1-3); masked entries are -inf
// att_probs is (B,NH,T,T): softmax probabilities (steps 4-5)
// att_dropped is (B,NH,T,T) or NULL: the probabilities after dropout (steps 6-7); with
//   dropout off it is att_probs itself, so nothing is copied
// out is (B,T,C): the heads' outputs side by side (step 8), ready for the projection
// drop describes the dropout of this layer's attention probabilities (drop->p == 0: off)
//
// attention_forward and attention_backward (below) follow the article's steps. The
// matrix products of a head (steps 1 and 8 of the forward; 1, 2, 7 and 8 of the backward)
// go to sgemm, further down; the helpers first are plumbing for the row-by-row steps
// (softmax and its backward): thread_scratch, reductions that vectorise, store_row.

// Per-thread scratch memory that grows on demand and is kept (OpenMP's threads live as
// long as the program), so the layers allocate nothing once training runs.
static _Thread_local float* thread_scratch_memory;
static _Thread_local size_t thread_scratch_floats;
static float* thread_scratch(size_t n) {
    if (n > thread_scratch_floats) {
        free(thread_scratch_memory);
        thread_scratch_memory = alignedMallocCheck(n * sizeof(float));
        thread_scratch_floats = n;
    }
    return thread_scratch_memory;
}

#define ROUND16(n) (((n) + 15) / 16 * 16)

// Reductions over n floats, n a multiple of 16, in 16 running lanes (one vector
// register). C does not let the compiler reorder a float sum by itself; written this way
// the order is fixed and vectorises. The 16 lanes are combined by halving; with AVX-512
// the intrinsic does the same halving in registers (GCC's own version of the loop goes
// through memory and stalls).
static inline float reduce16(const float v[16], int take_max) {  // the maximum, or the sum
#ifdef __AVX512F__
    __m512 x = _mm512_loadu_ps(v);
    return take_max ? _mm512_reduce_max_ps(x) : _mm512_reduce_add_ps(x);
#else
    float r[16];
    memcpy(r, v, sizeof r);
    for (int w = 8; w > 0; w /= 2)
        for (int j = 0; j < w; j++) r[j] = take_max ? (r[j + w] > r[j] ? r[j + w] : r[j]) : r[j] + r[j + w];
    return r[0];
#endif
}
static inline float max16(const float m[16]) { return reduce16(m, 1); }
static inline float sum16(const float s[16]) { return reduce16(s, 0); }
static inline float max_lanes(const float* x, int n) {
    float m[16];
    for (int j = 0; j < 16; j++) m[j] = x[j];
    for (int i = 16; i < n; i += 16)
        for (int j = 0; j < 16; j++) m[j] = x[i + j] > m[j] ? x[i + j] : m[j];
    return max16(m);
}
static inline float dot_lanes(const float* x, const float* y, int n) {  // y NULL: sum of x
    float s[16] = {0};
    for (int i = 0; i < n; i += 16)
        for (int j = 0; j < 16; j++) s[j] += x[i + j] * (y ? y[i + j] : 1.0f);
    return sum16(s);
}

// dst (T) = the first n entries of row (n <= Tp), then fill up to T
static void store_row(float* dst, const float* row, int n, int T, float fill) {
    int m = n < T ? n : T;
    memcpy(dst, row, (size_t)m * sizeof(float));
    for (int t2 = m; t2 < T; t2++) dst[t2] = fill;
}

// Steps 1 and 8 are matrix products of one head's slices, done by sgemm (the matmul's
// kernel, one thread per head). Steps 2-7 go row by row through the (T, Tp) score matrix
// in scratch, touching keys 0..n-1, n = t+1 rounded up to a multiple of 16: whole
// vectors, with the keys beyond t (the future, step 3) masked inside them.
void attention_forward(float* out, float* att_scores, float* att_probs, float* att_dropped,
                       const float* inp, int B, int T, int C, int NH, const DropoutMask* drop) {
    int C3 = C * 3, hs = C / NH, Tp = ROUND16(T);
    float scale = 1.0f / sqrtf((float)hs);
    int dropping = drop && drop->p > 0.0f;
    if (!dropping) att_dropped = att_probs;
    #pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float* q = inp + (size_t)b * T * C3 + h * hs;  // Q_h, K_h, V_h: (T, hs) at row stride C3
            const float* k = q + C;
            const float* v = q + 2 * C;
            size_t head = ((size_t)b * NH + h) * T * T;
            float* scores = thread_scratch((size_t)T * Tp);      // (T, Tp)
            // step 1 (计算注意力分数): scores = Q_h K_h^T, every query against every key
            sgemm(0, 1, T, T, hs, q, C3, k, C3, scores, Tp, 0);
            for (int t = 0; t < T; t++) {
                float* row = scores + (size_t)t * Tp;
                size_t cache_row = head + (size_t)t * T;
                int n = ROUND16(t + 1);
                // step 2 (注意力分数缩放): times 1/sqrt(hs), so the scores' spread does not
                //   grow with the head size and the softmax does not saturate
                // step 3 (因果掩码): keys after t are the future: -inf, so softmax gives 0
                for (int t2 = 0; t2 < n; t2++) row[t2] = t2 <= t ? row[t2] * scale : -INFINITY;
                store_row(att_scores + cache_row, row, n, T, -INFINITY);
                // step 4 (计算 att Softmax): subtract the row maximum first so exp never
                //   overflows; the result is unchanged. (exp_approx(-inf) is not exactly 0,
                //   so the future is set to 0 explicitly.)
                // step 5: att_probs is the cache of this step's result
                float maxval = max_lanes(row, n);
                for (int t2 = 0; t2 < n; t2++) row[t2] = t2 <= t ? exp_approx(row[t2] - maxval) : 0.0f;
                float inv_sum = 1.0f / dot_lanes(row, NULL, n);
                for (int t2 = 0; t2 < n; t2++) row[t2] *= inv_sum;
                store_row(att_probs + cache_row, row, n, T, 0.0f);
                // step 6 (dropout): drop probabilities, scale the kept ones by 1/(1-p)
                // step 7: att_dropped is the cache of this step's result
                if (dropping) {
                    for (int t2 = 0; t2 <= t; t2++)
                        row[t2] = dropout_keep(drop, cache_row + t2) ? row[t2] * drop->scale : 0.0f;
                    store_row(att_dropped + cache_row, row, n, T, 0.0f);
                }
            }
            // step 8 (计算 att · V): the output of position t is the weighted sum of values,
            //   out_h = att_dropped · V_h
            sgemm(0, 0, T, hs, T, att_dropped + head, T, v, C3, out + (size_t)b * T * C + h * hs, C, 0);
        }
    }
}

// dinp is (B,T,3C): receives dQ, dK, dV; dout is (B,T,C), the gradient of the heads'
// outputs (the article's G_in, after the projection's backward).
// As in the article, each head gets a (T,T) grad_att matrix (per-thread scratch). Steps
// 1, 2, 7 and 8 are matrix products of one head's slices, done by sgemm (the matmul's
// kernel, one thread per head: the product of a (T,T) and a (T,hs) matrix); the causal
// zeros take part in them, which costs twice the FLOPs but runs at the kernel's speed.
// Steps 3-6 go row by row. Each (b,h) pair is one task that writes only its own head's
// slices of dinp, so the threads never touch the same gradient and the sums are in a
// fixed order.
void attention_backward(float* dinp, const float* dout, const float* inp,
                        const float* att_probs, const float* att_dropped,
                        int B, int T, int C, int NH, const DropoutMask* drop) {
    int C3 = C * 3, hs = C / NH, Tp = ROUND16(T);
    float scale = 1.0f / sqrtf((float)hs);
    int dropping = drop && drop->p > 0.0f;
    if (!dropping) att_dropped = att_probs;
    #pragma omp parallel for collapse(2)
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float* q = inp + (size_t)b * T * C3 + h * hs;  // Q_h, K_h, V_h: (T, hs) at row stride C3
            const float* k = q + C;
            const float* v = q + 2 * C;
            float* dq = dinp + (size_t)b * T * C3 + h * hs;      // dQ_h, dK_h, dV_h, the same layout
            float* dk = dq + C;
            float* dv = dq + 2 * C;
            const float* dy = dout + (size_t)b * T * C + h * hs; // G_in of this head: (T, hs) at stride C
            size_t head = ((size_t)b * NH + h) * T * T;
            const float* probs = att_probs + head;               // (T, T)
            float* grad_att = thread_scratch((size_t)T * Tp + Tp); // (T, Tp), then one row of probs
            float* p_row = grad_att + (size_t)T * Tp;
            // step 1 (grad_att = G_in · V^T): gradient of the (dropped-out) probabilities
            sgemm(0, 1, T, T, hs, dy, C, v, C3, grad_att, Tp, 0);
            // step 2 (grad_v = att_dropped^T · G_in): value t2 collects att_dropped[t][t2] dy_t
            //   from every query t that saw it
            sgemm(1, 0, T, hs, T, att_dropped + head, T, dy, C, dv, C3, 0);
            for (int t = 0; t < T; t++) {
                float* dscores = grad_att + (size_t)t * Tp;
                int n = ROUND16(t + 1);  // keys 0..n-1 in whole vectors; P is 0 beyond t
                memcpy(p_row, probs + (size_t)t * T, (size_t)(t + 1) * sizeof(float));
                for (int t2 = t + 1; t2 < n; t2++) p_row[t2] = 0.0f;
                // step 3 (dropout backward): the same mask as the forward, the same 1/(1-p)
                if (dropping) {
                    for (int t2 = 0; t2 <= t; t2++)
                        dscores[t2] = dropout_keep(drop, head + (size_t)t * T + t2) ? dscores[t2] * drop->scale : 0.0f;
                }
                // step 4 (softmax backward): with P the probabilities and dP their gradient,
                //   dS = P * (dP - sum_j P_j dP_j), the Jacobian of softmax applied to dP
                float dot = dot_lanes(p_row, dscores, n);
                // step 5 (mask backward): masked scores were constants (-inf), so their
                //   gradient is zero (P is 0 there)
                // step 6 (scale backward): the forward multiplied by 1/sqrt(hs), so does this
                for (int t2 = 0; t2 < n; t2++) dscores[t2] = p_row[t2] * (dscores[t2] - dot) * scale;
                for (int t2 = n; t2 < T; t2++) dscores[t2] = 0.0f;
            }
            // step 7 (grad_q = grad_att · K): row t of dQ is a weighted sum of the keys
            sgemm(0, 0, T, hs, T, grad_att, Tp, k, C3, dq, C3, 0);
            // step 8 (grad_k = grad_att^T · Q): key t2 collects grad_att[t][t2] q_t
            sgemm(1, 0, T, hs, T, grad_att, Tp, q, C3, dk, C3, 0);
        }
    }
}

// ----------------------------------------------------------------------------
// GELU, tanh approximation (GPT-2's):
// gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
#define GELU_SCALE 0.7978845608028654f  // sqrt(2/pi)

// (a few thousand elements, one position of the KV cache, are not worth waking a thread)
#define PARALLEL_MIN 16384

void gelu_forward(float* out, const float* inp, size_t N) {
    #pragma omp parallel for schedule(static) if (N >= PARALLEL_MIN)
    for (size_t i = 0; i < N; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        out[i] = 0.5f * x * (1.0f + tanh_approx(u));
    }
}

// d gelu/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) du/dx, du/dx = sqrt(2/pi)(1 + 3*0.044715 x^2)
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t N) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < N; i++) {
        float x = inp[i];
        float u = GELU_SCALE * (x + 0.044715f * x * x * x);
        float th = tanh_approx(u);
        float du = GELU_SCALE * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] = dout[i] * (0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du);
    }
}

// ----------------------------------------------------------------------------
// residual: out = inp1 + inp2. Its backward is the identity on both inputs: the
// gradient flows unchanged into the branch and into the stream. block_backward does it
// by handing the same gradient buffer to both (no copy, no residual_backward function).

void residual_forward(float* out, const float* inp1, const float* inp2, size_t N) {
    #pragma omp parallel for if (N >= PARALLEL_MIN)
    for (size_t i = 0; i < N; i++) out[i] = inp1[i] + inp2[i];
}

// ----------------------------------------------------------------------------
// dropout (inverted): in training, each element is zeroed with probability p and the
// rest are scaled by 1/(1-p), so the expected value is unchanged and evaluation needs
// no rescaling. In place: the backward needs only the mask, which it recomputes.

void dropout_forward(float* x, size_t N, const DropoutMask* drop) {
    if (drop->p <= 0.0f) return;
    #pragma omp parallel for
    for (size_t i = 0; i < N; i++) x[i] = dropout_keep(drop, i) ? x[i] * drop->scale : 0.0f;
}

void dropout_backward(float* dinp, const float* dout, size_t N, const DropoutMask* drop) {
    #pragma omp parallel for
    for (size_t i = 0; i < N; i++)
        dinp[i] = (drop->p <= 0.0f || dropout_keep(drop, i)) ? dout[i] * drop->scale : 0.0f;
}

// the gradient before a dropout site: dinp filled by
// dropout_backward, or dout itself when the site is off, which saves a copy
static const float* dropout_grad(float* dinp, const float* dout, size_t N, const DropoutMask* drop) {
    if (drop->p <= 0.0f) return dout;
    dropout_backward(dinp, dout, N, drop);
    return dinp;
}

// ----------------------------------------------------------------------------
// softmax + cross-entropy over the vocabulary
// logits and probs are (BT,Vp); only the first V entries of a row are real tokens:
// the padded ones get probability 0 and gradient 0

void softmax_forward(float* probs, const float* logits, int BT, int V, int Vp) {
    #pragma omp parallel for
    for (int bt = 0; bt < BT; bt++) {
        const float* z = logits + (size_t)bt * Vp;
        float* p = probs + (size_t)bt * Vp;
        float maxval = -INFINITY;
        for (int i = 0; i < V; i++) maxval = z[i] > maxval ? z[i] : maxval;
        float sum = 0.0f;
        #pragma omp simd reduction(+ : sum)
        for (int i = 0; i < V; i++) { p[i] = exp_approx(z[i] - maxval); sum += p[i]; }
        float inv_sum = 1.0f / sum;
        for (int i = 0; i < V; i++) p[i] *= inv_sum;
        for (int i = V; i < Vp; i++) p[i] = 0.0f;
    }
}

// losses is (BT): -log p[target]
void crossentropy_forward(float* losses, const float* probs, const int* targets, int BT, int Vp) {
    for (int bt = 0; bt < BT; bt++) losses[bt] = -logf(probs[(size_t)bt * Vp + targets[bt]]);
}

// The gradient of -log softmax(z)[y] with respect to z is p - onehot(y): softmax and
// cross-entropy fused, which is both simpler and more accurate than chaining them.
void crossentropy_softmax_backward(float* dlogits, const float* dlosses, const float* probs,
                                   const int* targets, int BT, int V, int Vp) {
    #pragma omp parallel for
    for (int bt = 0; bt < BT; bt++) {
        float* dz = dlogits + (size_t)bt * Vp;
        const float* p = probs + (size_t)bt * Vp;
        float dl = dlosses[bt];
        for (int i = 0; i < V; i++) dz[i] = (p[i] - (i == targets[bt] ? 1.0f : 0.0f)) * dl;
        for (int i = V; i < Vp; i++) dz[i] = 0.0f;  // padding: not a real logit
    }
}

// ----------------------------------------------------------------------------
// sgemm: deterministic single-precision matrix multiply, the engine of every matmul
// (OpenMP + AVX-512 intrinsics; a plain-C fallback where AVX-512 is absent)
//
//   C[M,N] (= or +=) op(A)[M,K] * op(B)[K,N]
//
// Blocking (GotoBLAS / BLIS style)
// --------------------------------
// The loops, outermost first (inside one thread's share of C):
//
//   for jc in N, step NC        B block column
//     for pc in K, step KC      pack op(B)[pc:pc+KC, jc:jc+NC] -> Bp  (KC x NC, lives in L2/L3)
//       for ic in M, step MC    pack op(A)[ic:ic+MC, pc:pc+KC] -> Ap  (MC x KC, lives in L2)
//         for jr in NC, step NR     one KC x NR sliver of Bp (stays in L1 for the whole ir loop)
//           for ir in MC, step MR   one MR x KC sliver of Ap (streamed from L2)
//             micro-kernel: MR x NR block of C += Ap-sliver * Bp-sliver
//
// Packing copies each sliver into k-major order (for every k: MR floats of A,
// resp. NR floats of B), zero-padded to full MR / NR, so the micro-kernel
// reads both operands with unit stride and never needs an edge case inside
// its k loop. transA/transB only change how the packing routines read memory.
//
// Micro-kernel (AVX-512): MR=14 rows x NR=32 columns = 14 x 2 zmm = 28
// accumulators (of 32 registers). Per k: 2 vector loads of B, 14 broadcasts
// of A, 28 FMAs. Zen 5 has 2 FMA pipes with 4-cycle latency, so >= 8
// independent chains are needed; 28 is plenty and the 16 loads per 28 FMAs
// stay under the 2-loads-per-cycle limit. 6x64, 8x48 and 12x32 were 2-5% slower.
//
// Cache sizes (Zen 5: L1D 48 KB, L2 1 MB per core):
//   B sliver  KC*NR*4 = 256*32*4 = 32 KB  -> fits L1 next to the A stream
//   A block   MC*KC*4 = 168*256*4 = 168 KB -> comfortably in L2
//   B block   KC*NC*4 = 256*768*4 = 768 KB -> L2 next to the A block; each
//             sliver is pulled into L1 once per ic block and reused MC/MR = 12
//             times. (NC=768 beat 3072 by ~5% on the 50304-wide LM head, where B
//             streams from DRAM; elsewhere NC made no measurable difference.)
//
// Determinism: each element of C belongs to exactly one thread. Its value is
// C (or 0) + sum over K blocks in increasing order, where each block sum is a
// sequential FMA chain k = pc, pc+1, ... started from 0. KC is a constant and
// edge tiles run the same kernel on zero-padded data, so the result does not
// depend on the thread count or on where the thread boundaries fall.
// Threads split C by whole MR-row or NR-column panels (whichever of M, N is
// larger), and every thread packs its own operands: no barriers, no sharing.
#ifndef GEMM_MR
#define GEMM_MR 14
#endif
#ifndef GEMM_NR
#define GEMM_NR 32
#endif
#ifndef GEMM_KC
#define GEMM_KC 256
#endif
#ifndef GEMM_MC
#define GEMM_MC (12 * GEMM_MR)
#endif
#ifndef GEMM_NC
#define GEMM_NC 768
#endif
#define GEMM_MIN_PAR_FLOPS 2e6  // below this, one thread is faster than waking a second

static int gemm_imin(int a, int b) { return a < b ? a : b; }

#ifdef __AVX512F__
static __mmask16 gemm_lanes(int n) { return n >= 16 ? 0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }

// transpose 16 rows of 16 floats in place
static void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    }
}
#endif

// dst[k*R + r] = src[r*ld + k] for r < rows (rows of src are contiguous in k), 0 for rows <= r < R
static void gemm_pack_rows(const float* src, int ld, int rows, int R, int kc, float* dst) {
#ifdef __AVX512F__
    for (int r0 = 0; r0 < R; r0 += 16) {
        int nr = rows - r0, w = gemm_imin(16, R - r0);
        for (int k0 = 0; k0 < kc; k0 += 16) {
            int nk = gemm_imin(16, kc - k0);
            __m512 v[16];
            for (int i = 0; i < nr && i < 16; i++)  // long strided streams: help the prefetcher
                _mm_prefetch((const char*)(src + (size_t)(r0 + i) * ld + k0 + 64), _MM_HINT_T0);
            for (int i = 0; i < 16; i++)
                v[i] = i < nr ? _mm512_maskz_loadu_ps(gemm_lanes(nk), src + (size_t)(r0 + i) * ld + k0)
                              : _mm512_setzero_ps();
            transpose16(v);
            for (int k = 0; k < nk; k++) _mm512_mask_storeu_ps(dst + (size_t)(k0 + k) * R + r0, gemm_lanes(w), v[k]);
        }
    }
#else
    for (int r = 0; r < R; r++)
        for (int k = 0; k < kc; k++) dst[(size_t)k * R + r] = r < rows ? src[(size_t)r * ld + k] : 0.0f;
#endif
}

// dst[k*R + c] = src[k*ld + c] for c < cols (rows of src are contiguous in c), 0 for cols <= c < R
static void gemm_pack_cols(const float* src, int ld, int cols, int R, int kc, float* dst) {
    for (int k = 0; k < kc; k++) {
        const float* s = src + (size_t)k * ld;
        float* d = dst + (size_t)k * R;
#ifdef __AVX512F__
        for (int c0 = 0; c0 < R; c0 += 16)
            _mm512_mask_storeu_ps(d + c0, gemm_lanes(R - c0), _mm512_maskz_loadu_ps(gemm_lanes(cols - c0), s + c0));
#else
        for (int c = 0; c < R; c++) d[c] = c < cols ? s[c] : 0.0f;
#endif
    }
}

// C[m x n] (=, or += if !overwrite) a-sliver (kc x GEMM_MR) * b-sliver (kc x GEMM_NR); m <= GEMM_MR, n <= GEMM_NR
// When overwriting, bias (n values, one per column) is added if not NULL.
static void gemm_kernel(int kc, const float* restrict a, const float* restrict b, float* C, int ldc, int m, int n,
                   int overwrite, const float* bias) {
#ifdef __AVX512F__
    enum { NV = GEMM_NR / 16 };
    __m512 acc[GEMM_MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < GEMM_MR; i++)
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) acc[i][j] = _mm512_setzero_ps();
    for (int i = 0; i < m; i++)  // C is needed only at the end: start fetching it now
        for (int j = 0; j < n; j += 16) _mm_prefetch((const char*)(C + (size_t)i * ldc + j), _MM_HINT_T0);
    for (int k = 0; k < kc; k++, a += GEMM_MR, b += GEMM_NR) {
        __m512 bv[NV];
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) bv[j] = _mm512_load_ps(b + 16 * j);
#pragma GCC unroll 16
        for (int i = 0; i < GEMM_MR; i++) {
            __m512 av = _mm512_set1_ps(a[i]);
#pragma GCC unroll 4
            for (int j = 0; j < NV; j++) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < GEMM_MR; i++) {
        if (i >= m) break;
        float* c = C + (size_t)i * ldc;
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) {
            __mmask16 mk = gemm_lanes(n - 16 * j);
            __m512 v = acc[i][j];
            if (!overwrite) v = _mm512_add_ps(_mm512_maskz_loadu_ps(mk, c + 16 * j), v);
            else if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, bias + 16 * j));
            _mm512_mask_storeu_ps(c + 16 * j, mk, v);
        }
    }
#else
    float acc[GEMM_MR][GEMM_NR];
    memset(acc, 0, sizeof acc);
    for (int k = 0; k < kc; k++, a += GEMM_MR, b += GEMM_NR)
        for (int i = 0; i < GEMM_MR; i++)
            for (int j = 0; j < GEMM_NR; j++) acc[i][j] += a[i] * b[j];
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            C[(size_t)i * ldc + j] = overwrite ? acc[i][j] + (bias ? bias[j] : 0.0f) : C[(size_t)i * ldc + j] + acc[i][j];
#endif
}

// Per-thread packing buffers, allocated on first use and kept for the thread's lifetime
// (OpenMP worker threads persist). _Thread_local also keeps callers in different
// threads of an outer parallel region from sharing a buffer.
static _Thread_local float* gemm_Ap;
static _Thread_local float* gemm_Bp;

// One thread's share: the m x n block of C whose top-left is C, with A and B already
// offset to the matching row / column.
static void gemm_block(int tA, int tB, int m, int n, int K, const float* A, int lda, const float* B, int ldb,
                       float* C, int ldc, int accumulate, const float* bias) {
    if (!gemm_Ap) {
        gemm_Ap = aligned_alloc(64, sizeof(float) * GEMM_MC * GEMM_KC);
        gemm_Bp = aligned_alloc(64, sizeof(float) * GEMM_KC * ((GEMM_NC + GEMM_NR - 1) / GEMM_NR * GEMM_NR));
        if (!gemm_Ap || !gemm_Bp) die("out of memory for the matmul packing buffers");
    }
    float *Ap = gemm_Ap, *Bp = gemm_Bp;
    for (int jc = 0; jc < n; jc += GEMM_NC) {
        int nc = gemm_imin(GEMM_NC, n - jc);
        for (int pc = 0; pc < K; pc += GEMM_KC) {
            int kc = gemm_imin(GEMM_KC, K - pc);
            for (int jr = 0; jr < nc; jr += GEMM_NR) {
                int w = gemm_imin(GEMM_NR, nc - jr);
                if (tB) gemm_pack_rows(B + (size_t)(jc + jr) * ldb + pc, ldb, w, GEMM_NR, kc, Bp + (size_t)jr * kc);
                else    gemm_pack_cols(B + (size_t)pc * ldb + jc + jr, ldb, w, GEMM_NR, kc, Bp + (size_t)jr * kc);
            }
            for (int ic = 0; ic < m; ic += GEMM_MC) {
                int mc = gemm_imin(GEMM_MC, m - ic);
                for (int ir = 0; ir < mc; ir += GEMM_MR) {
                    int h = gemm_imin(GEMM_MR, mc - ir);
                    if (tA) gemm_pack_cols(A + (size_t)pc * lda + ic + ir, lda, h, GEMM_MR, kc, Ap + (size_t)ir * kc);
                    else    gemm_pack_rows(A + (size_t)(ic + ir) * lda + pc, lda, h, GEMM_MR, kc, Ap + (size_t)ir * kc);
                }
                for (int jr = 0; jr < nc; jr += GEMM_NR)
                    for (int ir = 0; ir < mc; ir += GEMM_MR)
                        gemm_kernel(kc, Ap + (size_t)ir * kc, Bp + (size_t)jr * kc, C + (size_t)(ic + ir) * ldc + jc + jr,
                               ldc, gemm_imin(GEMM_MR, mc - ir), gemm_imin(GEMM_NR, nc - jr), !accumulate && pc == 0,
                               bias ? bias + jc + jr : NULL);
            }
        }
    }
}

// this thread's number and the size of its team (0 and 1 outside a parallel region)
static int team_thread(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
static int team_size(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

// Thread t of a team of T computes its share of C = op(A) op(B) + bias (see sgemm_bias).
// C is split along the larger dimension in whole GEMM_MR / GEMM_NR panels. (Each thread
// re-packs the whole operand along the other dimension, so split the dimension that makes
// that duplicated operand the smaller one.)
void sgemm_share(int t, int T, int transA, int transB, int M, int N, int K, const float* A, int lda,
                 const float* B, int ldb, float* C, int ldc, int accumulate, const float* bias) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {  // empty sum
        if (!accumulate && t == 0)
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) C[(size_t)i * ldc + j] = bias ? bias[j] : 0.0f;
        return;
    }
    int splitN = N > M;
    int panels = splitN ? (N + GEMM_NR - 1) / GEMM_NR : (M + GEMM_MR - 1) / GEMM_MR;
    // thread 0 (which starts first: the others have to wake up) takes the larger share
    int p0 = (int)(((long)panels * t + T - 1) / T), p1 = (int)(((long)panels * (t + 1) + T - 1) / T);
    if (splitN) {
        int j0 = p0 * GEMM_NR, j1 = gemm_imin(N, p1 * GEMM_NR);
        if (j1 > j0)
            gemm_block(transA, transB, M, j1 - j0, K, A, lda, transB ? B + (size_t)j0 * ldb : B + j0, ldb,
                       C + j0, ldc, accumulate, bias ? bias + j0 : NULL);
    } else {
        int i0 = p0 * GEMM_MR, i1 = gemm_imin(M, p1 * GEMM_MR);
        if (i1 > i0)
            gemm_block(transA, transB, i1 - i0, N, K, transA ? A + i0 : A + (size_t)i0 * lda, lda, B, ldb,
                       C + (size_t)i0 * ldc, ldc, accumulate, bias);
    }
}

// threads worth using for a product of M x N x K: 1 when already inside a parallel region
// (a nested call) or when the product is too small to pay for waking a second thread
int sgemm_threads(int M, int N, int K) {
#ifdef _OPENMP
    if (omp_get_level() == 0 && 2.0 * M * N * K >= GEMM_MIN_PAR_FLOPS) return omp_get_max_threads();
#else
    (void)M; (void)N; (void)K;
#endif
    return 1;
}

// C = op(A) op(B) + bias (bias: N values added to every row, or NULL), or, with
// accumulate, C += op(A) op(B) (bias ignored)
void sgemm_bias(int transA, int transB, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                float* C, int ldc, int accumulate, const float* bias) {
    int nt = sgemm_threads(M, N, K);
    if (nt == 1) {  // (even an inactive parallel region costs a call into the OpenMP runtime)
        sgemm_share(0, 1, transA, transB, M, N, K, A, lda, B, ldb, C, ldc, accumulate, bias);
        return;
    }
    #pragma omp parallel num_threads(nt)
    sgemm_share(team_thread(), team_size(), transA, transB, M, N, K, A, lda, B, ldb, C, ldc, accumulate, bias);
}

void sgemm(int transA, int transB, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
           float* C, int ldc, int accumulate) {
    sgemm_bias(transA, transB, M, N, K, A, lda, B, ldb, C, ldc, accumulate, NULL);
}

// ----------------------------------------------------------------------------
// the model: configuration, parameters, activations

typedef struct {
    int max_seq_len;        // maxT: the longest sequence, rows of wpe
    int vocab_size;         // V: real tokens
    int padded_vocab_size;  // Vp: V rounded up to a multiple of 128, rows of wte
    int num_layers;         // L
    int num_heads;          // NH
    int channels;           // C
} GPT2Config;

// all parameters live in one allocation; these point into it, in llm.c's file order
#define NUM_PARAMETER_TENSORS 16
typedef struct {
    float* wte;      // (Vp,C) token embedding, also the output head (tied)
    float* wpe;      // (maxT,C) position embedding
    float* ln1w;     // (L,C)
    float* ln1b;     // (L,C)
    float* qkvw;     // (L,3C,C) Q rows, then K rows, then V rows
    float* qkvb;     // (L,3C)
    float* attprojw; // (L,C,C)
    float* attprojb; // (L,C)
    float* ln2w;     // (L,C)
    float* ln2b;     // (L,C)
    float* fcw;      // (L,4C,C)
    float* fcb;      // (L,4C)
    float* fcprojw;  // (L,C,4C)
    float* fcprojb;  // (L,C)
    float* lnfw;     // (C)
    float* lnfb;     // (C)
} ParameterTensors;

__attribute__((unused)) static const char* const PARAMETER_NAMES[NUM_PARAMETER_TENSORS] = {
    "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb"};

// AdamW decays the matrices (embeddings and matmul weights), not biases or layernorm
static const int PARAMETER_DECAYS[NUM_PARAMETER_TENSORS] = {1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0};

static void fill_in_parameter_sizes(size_t* sizes, GPT2Config cfg) {
    size_t Vp = cfg.padded_vocab_size, C = cfg.channels, maxT = cfg.max_seq_len, L = cfg.num_layers;
    size_t shapes[NUM_PARAMETER_TENSORS] = {
        Vp * C, maxT * C, L * C, L * C, L * 3 * C * C, L * 3 * C, L * C * C, L * C,
        L * C, L * C, L * 4 * C * C, L * 4 * C, L * C * 4 * C, L * C, C, C};
    memcpy(sizes, shapes, sizeof shapes);
}

// points the named tensors into one block of memory; returns the block
static float* point_parameters(ParameterTensors* params, float* memory, const size_t* sizes) {
    float** ptrs[NUM_PARAMETER_TENSORS] = {
        &params->wte, &params->wpe, &params->ln1w, &params->ln1b, &params->qkvw, &params->qkvb,
        &params->attprojw, &params->attprojb, &params->ln2w, &params->ln2b, &params->fcw, &params->fcb,
        &params->fcprojw, &params->fcprojb, &params->lnfw, &params->lnfb};
    float* p = memory;
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) { *ptrs[i] = p; p += sizes[i]; }
    return memory;
}

// what the forward pass keeps for the backward pass, for a batch of B sequences of T
#define NUM_ACTIVATION_TENSORS 23
typedef struct {
    float* encoded;     // (B,T,C) wte[token] + wpe[position] (after embedding dropout)
    float* ln1;         // (L,B,T,C)
    float* ln1_mean;    // (L,B,T)
    float* ln1_rstd;    // (L,B,T)
    float* qkv;         // (L,B,T,3C) the fused Q,K,V projection
    float* atty;        // (L,B,T,C) the heads' outputs, before the projection
    float* att_scores;  // (L,B,NH,T,T) scaled, masked scores (attention steps 1-3)
    float* att_probs;   // (L,B,NH,T,T) softmax probabilities (steps 4-5)
    float* att_dropped; // (L,B,NH,T,T) probabilities after dropout (steps 6-7); NULL without dropout
    float* attproj;     // (L,B,T,C) attention projection (after residual dropout)
    float* residual2;   // (L,B,T,C) residual + attention branch
    float* ln2;         // (L,B,T,C)
    float* ln2_mean;    // (L,B,T)
    float* ln2_rstd;    // (L,B,T)
    float* fch;         // (L,B,T,4C) MLP hidden, before GELU
    float* fch_gelu;    // (L,B,T,4C) MLP hidden, after GELU
    float* fcproj;      // (L,B,T,C) MLP projection (after residual dropout)
    float* residual3;   // (L,B,T,C) residual2 + MLP branch: the layer's output
    float* lnf;         // (B,T,C)
    float* lnf_mean;    // (B,T)
    float* lnf_rstd;    // (B,T)
    float* logits;      // (B,T,Vp); the backward overwrites it with dlogits
    float* probs;       // (B,T,Vp)
} ActivationTensors;

static void fill_in_activation_sizes(size_t* sizes, GPT2Config cfg, int B, int T, int dropout) {
    size_t C = cfg.channels, NH = cfg.num_heads, L = cfg.num_layers, Vp = cfg.padded_vocab_size;
    size_t BT = (size_t)B * T, att = L * B * NH * T * T;
    size_t s[NUM_ACTIVATION_TENSORS] = {
        BT * C, L * BT * C, L * BT, L * BT, L * BT * 3 * C, L * BT * C, att, att, dropout ? att : 0,
        L * BT * C, L * BT * C, L * BT * C, L * BT, L * BT, L * BT * 4 * C, L * BT * 4 * C,
        L * BT * C, L * BT * C, BT * C, BT, BT, BT * Vp, BT * Vp};
    memcpy(sizes, s, sizeof s);
}

static void point_activations(ActivationTensors* a, float* memory, const size_t* sizes) {
    float** ptrs[NUM_ACTIVATION_TENSORS] = {
        &a->encoded, &a->ln1, &a->ln1_mean, &a->ln1_rstd, &a->qkv, &a->atty, &a->att_scores,
        &a->att_probs, &a->att_dropped, &a->attproj, &a->residual2, &a->ln2, &a->ln2_mean,
        &a->ln2_rstd, &a->fch, &a->fch_gelu, &a->fcproj, &a->residual3, &a->lnf, &a->lnf_mean,
        &a->lnf_rstd, &a->logits, &a->probs};
    float* p = memory;
    for (int i = 0; i < NUM_ACTIVATION_TENSORS; i++) { *ptrs[i] = sizes[i] ? p : NULL; p += sizes[i]; }
}

// gradients of activations: one layer's worth, reused by every layer on the way down
#define NUM_SCRATCH_TENSORS 9
typedef struct {
    float* dres;        // (B,T,C) gradient of the residual stream, updated in place from the
                        //   top layer down: d(residual3) -> d(residual2) -> d(residual)
    float* dbranch;     // (B,T,C) gradient of a branch output (attproj or fcproj) before dropout
    float* dln;         // (B,T,C) gradient of a layernorm's output
    float* datty;       // (B,T,C)
    float* dqkv;        // (B,T,3C)
    float* dfch;        // (B,T,4C)
    float* dfch_gelu;   // (B,T,4C)
    float* dlosses;     // (B,T)
    float* losses;      // (B,T) the forward's per-position loss
} BackwardScratch;

static void fill_in_scratch_sizes(size_t* sizes, GPT2Config cfg, int B, int T) {
    size_t C = cfg.channels, BT = (size_t)B * T;
    size_t s[NUM_SCRATCH_TENSORS] = {BT * C, BT * C, BT * C, BT * C, BT * 3 * C, BT * 4 * C, BT * 4 * C, BT, BT};
    memcpy(sizes, s, sizeof s);
}

static void point_scratch(BackwardScratch* s, float* memory, const size_t* sizes) {
    float** ptrs[NUM_SCRATCH_TENSORS] = {&s->dres, &s->dbranch, &s->dln, &s->datty, &s->dqkv,
        &s->dfch, &s->dfch_gelu, &s->dlosses, &s->losses};
    float* p = memory;
    for (int i = 0; i < NUM_SCRATCH_TENSORS; i++) { *ptrs[i] = p; p += sizes[i]; }
}

static size_t sum_sizes(const size_t* sizes, int n) {
    size_t total = 0;
    for (int i = 0; i < n; i++) total += sizes[i];
    return total;
}

typedef struct {
    GPT2Config config;
    // the weights
    ParameterTensors params;
    size_t param_sizes[NUM_PARAMETER_TENSORS];
    float* params_memory;
    size_t num_parameters;
    // their gradients, and AdamW's moments (allocated at the first backward / update)
    ParameterTensors grads;
    float* grads_memory;
    float* m_memory;
    float* v_memory;
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
    // dropout (training only): probability and seed; the step picks the masks
    float dropout_p;
    uint64_t dropout_seed;
    long dropout_step; // step of the last forward; -1 = evaluation (no dropout)
} GPT2;

// checks a configuration read from a file or the command line; names the source on failure
static void check_config(GPT2Config c, const char* source) {
    if (c.max_seq_len <= 0 || c.vocab_size <= 0 || c.num_layers <= 0 || c.num_heads <= 0 || c.channels <= 0)
        die("%s: model shape must be positive (maxT %d, V %d, L %d, NH %d, C %d)", source,
            c.max_seq_len, c.vocab_size, c.num_layers, c.num_heads, c.channels);
    if (c.channels % c.num_heads != 0)
        die("%s: channels %d are not divisible by heads %d", source, c.channels, c.num_heads);
    if (c.padded_vocab_size < c.vocab_size)
        die("%s: padded vocabulary %d is smaller than the vocabulary %d", source, c.padded_vocab_size, c.vocab_size);
    if (c.vocab_size > 65536)
        die("%s: vocabulary %d does not fit llm.c's uint16 token files", source, c.vocab_size);
}

static void gpt2_allocate_parameters(GPT2* model, GPT2Config config) {
    memset(model, 0, sizeof *model);
    model->config = config;
    fill_in_parameter_sizes(model->param_sizes, config);
    model->num_parameters = sum_sizes(model->param_sizes, NUM_PARAMETER_TENSORS);
    model->params_memory = point_parameters(&model->params,
        alignedMallocCheck(model->num_parameters * sizeof(float)), model->param_sizes);
    model->mean_loss = -1.0f;
    model->dropout_step = -1;
}

// GPT-2's initialisation: weights and embeddings N(0, 0.02), the projections that write
// into the residual stream (attproj, fcproj) scaled by 1/sqrt(2L) so the stream's
// variance does not grow with depth, biases 0, layernorm weights 1. Padding rows of wte
// stay 0.
void gpt2_init_random(GPT2* model, GPT2Config config, uint64_t seed) {
    check_config(config, "model shape");
    gpt2_allocate_parameters(model, config);
    ParameterTensors p = model->params;
    size_t C = config.channels, L = config.num_layers;
    memset(model->params_memory, 0, model->num_parameters * sizeof(float));
    uint64_t rng = splitmix64(seed);
    float residual_std = 0.02f / sqrtf(2.0f * L);
    struct { float* t; size_t n; float std; } normal_init[] = {
        {p.wte, (size_t)config.vocab_size * C, 0.02f}, {p.wpe, (size_t)config.max_seq_len * C, 0.02f},
        {p.qkvw, L * 3 * C * C, 0.02f}, {p.attprojw, L * C * C, residual_std},
        {p.fcw, L * 4 * C * C, 0.02f}, {p.fcprojw, L * C * 4 * C, residual_std}};
    for (size_t k = 0; k < sizeof normal_init / sizeof normal_init[0]; k++)
        for (size_t i = 0; i < normal_init[k].n; i++) normal_init[k].t[i] = normal_init[k].std * random_normal(&rng);
    for (size_t i = 0; i < L * C; i++) { p.ln1w[i] = 1.0f; p.ln2w[i] = 1.0f; }
    for (size_t i = 0; i < C; i++) p.lnfw[i] = 1.0f;
}

// llm.c's descriptors for fresh models: d12 is GPT-2 124M's shape, and so on
int parse_model_descriptor(const char* s, GPT2Config* c) {
    int depth;
    char extra;
    if (sscanf(s, "d%d%c", &depth, &extra) != 1) return 0;
    int channels[] = {768, 1024, 1280, 1600}, heads[] = {12, 16, 20, 25}, depths[] = {12, 24, 36, 48};
    for (int i = 0; i < 4; i++) {
        if (depth == depths[i]) {
            c->num_layers = depth; c->channels = channels[i]; c->num_heads = heads[i];
            c->max_seq_len = 1024;
            return 1;
        }
    }
    die("-e %s: unknown model descriptor (llm.c's are d12, d24, d36, d48)", s);
    return 0;
}

void gpt2_build_from_checkpoint(GPT2* model, const char* path) {
    FILE* f = fopenCheck(path, "rb");
    int32_t h[256];
    read_header(f, path, h, 20240326, "llm.c model checkpoint");
    if (h[1] != 3)
        die("'%s': checkpoint version %d is not supported (expected 3, float32 parameters%s)", path, h[1],
            h[1] == 5 ? "; version 5 is llm.c's bfloat16 format" : "");
    GPT2Config c = {.max_seq_len = h[2], .vocab_size = h[3], .num_layers = h[4], .num_heads = h[5],
                    .channels = h[6], .padded_vocab_size = h[7]};
    check_config(c, path);
    gpt2_allocate_parameters(model, c);
    long expected = 1024L + (long)(model->num_parameters * sizeof(float));
    long actual = file_size(f);
    if (actual < expected)
        die("'%s' is truncated: its header describes %zu parameters (%ld bytes), the file has %ld bytes",
            path, model->num_parameters, expected, actual);
    if (actual > expected)
        die("'%s' is longer than its header says (%ld bytes, expected %ld)", path, actual, expected);
    fread_check(model->params_memory, sizeof(float), model->num_parameters, f, path, "parameters");
    fclose(f);
}

// write to a temporary file, flush it to disk, then rename over the target: a crash
// leaves either the old file or the new one, never half of one
static FILE* atomic_open(const char* path, char* tmp, size_t tmp_size) {
    snprintf(tmp, tmp_size, "%s.tmp", path);
    return fopenCheck(tmp, "wb");
}

static void atomic_commit(FILE* f, const char* tmp, const char* path) {
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) die("cannot flush '%s' (%s)", tmp, strerror(errno));
    if (fclose(f) != 0) die("cannot close '%s' (%s)", tmp, strerror(errno));
    if (rename(tmp, path) != 0) die("cannot rename '%s' to '%s' (%s)", tmp, path, strerror(errno));
}

void gpt2_write_checkpoint(const GPT2* model, const char* path) {
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    int32_t h[256] = {0};
    GPT2Config c = model->config;
    h[0] = 20240326; h[1] = 3; h[2] = c.max_seq_len; h[3] = c.vocab_size;
    h[4] = c.num_layers; h[5] = c.num_heads; h[6] = c.channels; h[7] = c.padded_vocab_size;
    fwrite_check(h, sizeof(int32_t), 256, f, tmp);
    fwrite_check(model->params_memory, sizeof(float), model->num_parameters, f, tmp);
    atomic_commit(f, tmp, path);
}

// the forward's cache and the backward's scratch for batches up to B x T; grows (once,
// outside the training loop in practice) when a larger batch comes
static void gpt2_allocate_activations(GPT2* model, int B, int T) {
    GPT2Config c = model->config;
    if (T > c.max_seq_len) die("sequence length %d is larger than the model's maxT %d", T, c.max_seq_len);
    int dropout = model->dropout_p > 0.0f;
    if (model->acts_memory) {
        if (B <= model->batch_size && T <= model->seq_len && (!dropout || model->acts.att_dropped)) return;
        B = B > model->batch_size ? B : model->batch_size;
        T = T > model->seq_len ? T : model->seq_len;
        free(model->acts_memory); free(model->scratch_memory); free(model->inputs); free(model->targets);
    }
    model->batch_size = B;
    model->seq_len = T;
    fill_in_activation_sizes(model->act_sizes, c, B, T, dropout);
    model->acts_memory = alignedMallocCheck(sum_sizes(model->act_sizes, NUM_ACTIVATION_TENSORS) * sizeof(float));
    point_activations(&model->acts, model->acts_memory, model->act_sizes);
    size_t scratch_sizes[NUM_SCRATCH_TENSORS];
    fill_in_scratch_sizes(scratch_sizes, c, B, T);
    model->scratch_memory = alignedMallocCheck(sum_sizes(scratch_sizes, NUM_SCRATCH_TENSORS) * sizeof(float));
    point_scratch(&model->scratch, model->scratch_memory, scratch_sizes);
    model->inputs = mallocCheck((size_t)B * T * sizeof(int));
    model->targets = mallocCheck((size_t)B * T * sizeof(int));
}

void gpt2_free(GPT2* model) {
    free(model->params_memory); free(model->grads_memory);
    free(model->m_memory); free(model->v_memory);
    free(model->acts_memory); free(model->scratch_memory);
    free(model->inputs); free(model->targets);
    memset(model, 0, sizeof *model);
}

// ----------------------------------------------------------------------------
// the forward and backward passes of the whole model

// the layer-l slices of the parameters and of the cached activations
typedef struct {
    const float *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
} LayerParams;

static LayerParams layer_params(ParameterTensors p, GPT2Config c, int l) {
    size_t C = c.channels;
    LayerParams lp = {p.ln1w + l * C, p.ln1b + l * C, p.qkvw + l * 3 * C * C, p.qkvb + l * 3 * C,
                      p.attprojw + l * C * C, p.attprojb + l * C, p.ln2w + l * C, p.ln2b + l * C,
                      p.fcw + l * 4 * C * C, p.fcb + l * 4 * C, p.fcprojw + l * 4 * C * C, p.fcprojb + l * C};
    return lp;
}

typedef struct {
    float *residual, *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att_scores, *att_probs, *att_dropped,
          *attproj, *residual2, *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *fcproj, *residual3;
} LayerActs;

static LayerActs layer_acts(const GPT2* model, int l, int B, int T) {
    const ActivationTensors* a = &model->acts;
    size_t C = model->config.channels, NH = model->config.num_heads, BT = (size_t)B * T;
    size_t att = NH * BT * T;
    LayerActs la = {
        l == 0 ? a->encoded : a->residual3 + (l - 1) * BT * C,
        a->ln1 + l * BT * C, a->ln1_mean + l * BT, a->ln1_rstd + l * BT, a->qkv + l * BT * 3 * C,
        a->atty + l * BT * C, a->att_scores + l * att, a->att_probs + l * att,
        a->att_dropped ? a->att_dropped + l * att : NULL,
        a->attproj + l * BT * C, a->residual2 + l * BT * C, a->ln2 + l * BT * C, a->ln2_mean + l * BT,
        a->ln2_rstd + l * BT, a->fch + l * BT * 4 * C, a->fch_gelu + l * BT * 4 * C,
        a->fcproj + l * BT * C, a->residual3 + l * BT * C};
    return la;
}

// the dropout mask of one site for the current forward; p = 0 in evaluation
static DropoutMask model_dropout(const GPT2* model, int layer, int site) {
    float p = model->dropout_step >= 0 ? model->dropout_p : 0.0f;
    return dropout_mask(p, model->dropout_seed, (uint64_t)model->dropout_step, layer, site);
}

static void check_tokens(const int* tokens, size_t n, int V, const char* what) {
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            die("%s: token %d at position %zu is outside the vocabulary (0..%d)", what, tokens[i], i, V - 1);
}

// One transformer block: x + attn(ln1(x)), then + mlp(ln2(.)) (pre-LN GPT-2)
static void block_forward(GPT2* model, int l, int B, int T) {
    GPT2Config c = model->config;
    int C = c.channels, NH = c.num_heads, BT = B * T;
    LayerParams w = layer_params(model->params, c, l);
    LayerActs a = layer_acts(model, l, B, T);
    DropoutMask att_drop = model_dropout(model, l, DROP_ATT_PROBS);
    DropoutMask att_out_drop = model_dropout(model, l, DROP_ATT_OUT);
    DropoutMask mlp_out_drop = model_dropout(model, l, DROP_MLP_OUT);
    layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, a.residual, w.ln1w, w.ln1b, BT, C);
    matmul_forward(a.qkv, a.ln1, w.qkvw, w.qkvb, BT, C, 3 * C);
    attention_forward(a.atty, a.att_scores, a.att_probs, a.att_dropped, a.qkv, B, T, C, NH, &att_drop);
    matmul_forward(a.attproj, a.atty, w.attprojw, w.attprojb, BT, C, C);
    dropout_forward(a.attproj, (size_t)BT * C, &att_out_drop);
    residual_forward(a.residual2, a.residual, a.attproj, (size_t)BT * C);
    layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.residual2, w.ln2w, w.ln2b, BT, C);
    matmul_forward(a.fch, a.ln2, w.fcw, w.fcb, BT, C, 4 * C);
    gelu_forward(a.fch_gelu, a.fch, (size_t)BT * 4 * C);
    matmul_forward(a.fcproj, a.fch_gelu, w.fcprojw, w.fcprojb, BT, 4 * C, C);
    dropout_forward(a.fcproj, (size_t)BT * C, &mlp_out_drop);
    residual_forward(a.residual3, a.residual2, a.fcproj, (size_t)BT * C);
}

// inputs, targets are (B,T) token ids; targets may be NULL (then no loss).
// step >= 0 is a training forward whose dropout masks depend on the step; step < 0 is
// evaluation (no dropout). Returns the mean loss, or -1 without targets.
float gpt2_forward(GPT2* model, const int* inputs, const int* targets, int B, int T, long step) {
    GPT2Config c = model->config;
    int C = c.channels, L = c.num_layers, V = c.vocab_size, Vp = c.padded_vocab_size, BT = B * T;
    if (B <= 0 || T <= 0) die("batch size %d and sequence length %d must be positive", B, T);
    gpt2_allocate_activations(model, B, T);
    check_tokens(inputs, (size_t)BT, V, "inputs");
    if (targets) check_tokens(targets, (size_t)BT, V, "targets");
    memcpy(model->inputs, inputs, (size_t)BT * sizeof(int));
    if (targets) memcpy(model->targets, targets, (size_t)BT * sizeof(int));
    model->dropout_step = step;
    model->cur_B = B;
    model->cur_T = T;

    ActivationTensors a = model->acts;
    encoder_forward(a.encoded, inputs, model->params.wte, model->params.wpe, B, T, C);
    DropoutMask embed_drop = model_dropout(model, 0, DROP_EMBED);
    dropout_forward(a.encoded, (size_t)BT * C, &embed_drop);
    for (int l = 0; l < L; l++) block_forward(model, l, B, T);
    const float* last = a.residual3 + (size_t)(L - 1) * BT * C;
    layernorm_forward(a.lnf, a.lnf_mean, a.lnf_rstd, last, model->params.lnfw, model->params.lnfb, BT, C);
    matmul_forward(a.logits, a.lnf, model->params.wte, NULL, BT, C, Vp);  // tied output head
    softmax_forward(a.probs, a.logits, BT, V, Vp);
    model->mean_loss = -1.0f;
    if (targets) {
        crossentropy_forward(model->scratch.losses, a.probs, targets, BT, Vp);
        double sum = 0.0;
        for (int i = 0; i < BT; i++) sum += model->scratch.losses[i];
        model->mean_loss = (float)(sum / BT);
    }
    return model->mean_loss;
}

// memset, split over the threads for large buffers (all gradients: megabytes)
static void zero_floats(float* p, size_t n) {
    const size_t chunk = 16384;
    #pragma omp parallel for schedule(static) if (n >= 4 * chunk)
    for (size_t k = 0; k < n; k += chunk) memset(p + k, 0, (n - k < chunk ? n - k : chunk) * sizeof(float));
}

void gpt2_zero_grad(GPT2* model) {
    if (model->grads_memory) zero_floats(model->grads_memory, model->num_parameters);
}

// One block backward: s->dres holds d(residual3) on entry and d(residual), the gradient
// of the block's input, on exit. The order is the forward's, reversed. Every residual
// backward is the identity on both of its inputs (see residual_forward): the branch reads
// s->dres as its output gradient, and the layernorm that opens the branch adds its input
// gradient into s->dres, which turns it into the gradient of the residual before.
static void block_backward(GPT2* model, int l, int B, int T) {
    GPT2Config c = model->config;
    int C = c.channels, NH = c.num_heads, BT = B * T;
    size_t BTC = (size_t)BT * C;
    LayerParams w = layer_params(model->params, c, l);
    LayerParams dw = layer_params(model->grads, c, l);  // gradient slices, same layout
    LayerActs a = layer_acts(model, l, B, T);
    BackwardScratch* s = &model->scratch;
    DropoutMask att_drop = model_dropout(model, l, DROP_ATT_PROBS);
    DropoutMask att_out_drop = model_dropout(model, l, DROP_ATT_OUT);
    DropoutMask mlp_out_drop = model_dropout(model, l, DROP_MLP_OUT);

    // MLP branch: residual3 = residual2 + dropout(fcproj(gelu(fc(ln2(residual2)))))
    const float* dfcproj = dropout_grad(s->dbranch, s->dres, BTC, &mlp_out_drop);
    matmul_backward(s->dfch_gelu, (float*)dw.fcprojw, (float*)dw.fcprojb, dfcproj, a.fch_gelu, w.fcprojw, BT, 4 * C, C);
    gelu_backward(s->dfch, a.fch, s->dfch_gelu, 4 * BTC);
    matmul_backward(s->dln, (float*)dw.fcw, (float*)dw.fcb, s->dfch, a.ln2, w.fcw, BT, C, 4 * C);
    layernorm_backward(s->dres, (float*)dw.ln2w, (float*)dw.ln2b, s->dln, a.residual2, w.ln2w, a.ln2_mean, a.ln2_rstd, BT, C);

    // attention branch: residual2 = residual + dropout(attproj(attention(qkv(ln1(residual)))))
    const float* dattproj = dropout_grad(s->dbranch, s->dres, BTC, &att_out_drop);
    matmul_backward(s->datty, (float*)dw.attprojw, (float*)dw.attprojb, dattproj, a.atty, w.attprojw, BT, C, C);
    attention_backward(s->dqkv, s->datty, a.qkv, a.att_probs, a.att_dropped, B, T, C, NH, &att_drop);
    matmul_backward(s->dln, (float*)dw.qkvw, (float*)dw.qkvb, s->dqkv, a.ln1, w.qkvw, BT, C, 3 * C);
    layernorm_backward(s->dres, (float*)dw.ln1w, (float*)dw.ln1b, s->dln, a.residual, w.ln1w, a.ln1_mean, a.ln1_rstd, BT, C);
}

// gradients of the mean loss of the last forward (which must have had targets), added
// into model->grads (call gpt2_zero_grad first for a fresh step)
void gpt2_backward(GPT2* model) {
    if (model->mean_loss < 0.0f) die("gpt2_backward needs a forward pass with targets first");
    GPT2Config c = model->config;
    if (!model->grads_memory) {
        model->grads_memory = point_parameters(&model->grads,
            alignedCallocCheck(model->num_parameters, sizeof(float)), model->param_sizes);
    }
    int B = model->cur_B, T = model->cur_T;  // the last forward's batch
    int C = c.channels, L = c.num_layers, V = c.vocab_size, Vp = c.padded_vocab_size, BT = B * T;
    size_t BTC = (size_t)BT * C;
    ActivationTensors a = model->acts;
    BackwardScratch* s = &model->scratch;

    // the loss is the mean over B*T positions, so each position's loss has weight 1/(B*T)
    for (int i = 0; i < BT; i++) s->dlosses[i] = 1.0f / BT;
    float* dlogits = a.logits;  // the logits are not needed any more: reuse their memory
    crossentropy_softmax_backward(dlogits, s->dlosses, a.probs, model->targets, BT, V, Vp);
    matmul_backward(s->dln, model->grads.wte, NULL, dlogits, a.lnf, model->params.wte, BT, C, Vp);
    zero_floats(s->dres, BTC);  // the final layernorm is the only user of the last residual
    const float* last = a.residual3 + (size_t)(L - 1) * BTC;
    layernorm_backward(s->dres, model->grads.lnfw, model->grads.lnfb, s->dln, last,
                       model->params.lnfw, a.lnf_mean, a.lnf_rstd, BT, C);
    for (int l = L - 1; l >= 0; l--) block_backward(model, l, B, T);
    // s->dres is now the gradient of the (dropped-out) embedding sum
    DropoutMask embed_drop = model_dropout(model, 0, DROP_EMBED);
    const float* dencoded = dropout_grad(s->dbranch, s->dres, BTC, &embed_drop);
    encoder_backward(model->grads.wte, model->grads.wpe, dencoded, model->inputs, B, T, C);
}

// ----------------------------------------------------------------------------
// AdamW, gradient clipping, learning-rate schedule

// global L2 norm of all gradients. The sum of squares is split into a fixed number of
// chunks summed in double and combined in order, so the result does not depend on the
// number of threads.
float gpt2_grad_norm(const GPT2* model) {
    enum { CHUNKS = 64, BLOCK = 1024 };
    double partial[CHUNKS];
    size_t n = model->num_parameters;
    const float* g = model->grads_memory;
    #pragma omp parallel for
    for (int k = 0; k < CHUNKS; k++) {
        size_t lo = n * k / CHUNKS, hi = n * (k + 1) / CHUNKS;
        double s = 0.0;
        for (size_t b = lo; b < hi; b += BLOCK) {  // float sums of short blocks (vectorised), added in double
            size_t e = b + BLOCK < hi ? b + BLOCK : hi;
            float block = 0.0f;
            #pragma omp simd reduction(+ : block)
            for (size_t i = b; i < e; i++) block += g[i] * g[i];
            s += block;
        }
        partial[k] = s;
    }
    double total = 0.0;
    for (int k = 0; k < CHUNKS; k++) total += partial[k];
    return (float)sqrt(total);
}

// the factor that brings the gradients' global norm down to max_norm (1 when it is already
// below, or when max_norm is 0 = no clipping); AdamW applies it as it reads each gradient,
// which saves a pass over all of them
float grad_clip_scale(float norm, float max_norm) {
    return (max_norm > 0.0f && norm > max_norm) ? max_norm / norm : 1.0f;
}

// AdamW (Loshchilov & Hutter): Adam's update on bias-corrected moments plus a weight
// decay that acts on the weights directly rather than through the gradient.
// grad_scale multiplies every gradient first (clipping); t is the 1-based update number.
void gpt2_update(GPT2* model, float lr, float beta1, float beta2, float eps, float weight_decay,
                 float grad_scale, int t) {
    if (!model->m_memory) {
        model->m_memory = alignedCallocCheck(model->num_parameters, sizeof(float));
        model->v_memory = alignedCallocCheck(model->num_parameters, sizeof(float));
    }
    float bc1 = (float)(1.0 - pow(beta1, t)), bc2 = (float)(1.0 - pow(beta2, t));
    #pragma omp parallel  // one team for all tensors; no barrier between them (nowait)
    {
        size_t offset = 0;
        for (int k = 0; k < NUM_PARAMETER_TENSORS; k++) {
            float wd = PARAMETER_DECAYS[k] ? weight_decay : 0.0f;
            float* p = model->params_memory + offset;
            const float* g = model->grads_memory + offset;
            float* m = model->m_memory + offset;
            float* v = model->v_memory + offset;
            #pragma omp for nowait
            for (size_t i = 0; i < model->param_sizes[k]; i++) {
                float gi = g[i] * grad_scale;
                m[i] = beta1 * m[i] + (1.0f - beta1) * gi;
                v[i] = beta2 * v[i] + (1.0f - beta2) * gi * gi;
                float m_hat = m[i] / bc1, v_hat = v[i] / bc2;
                p[i] -= lr * (m_hat / (sqrtf(v_hat) + eps) + wd * p[i]);
            }
            offset += model->param_sizes[k];
        }
    }
}

// linear warmup over `warmup` steps, then cosine decay to final_frac * lr at max_steps
float learning_rate(int step, float lr, int warmup, int max_steps, float final_frac) {
    if (step < warmup) return lr * (step + 1) / warmup;
    if (max_steps <= warmup) return lr;
    double ratio = (double)(step - warmup) / (max_steps - warmup);
    if (ratio > 1.0) ratio = 1.0;
    double coeff = 0.5 * (1.0 + cos(M_PI * ratio));
    float lr_min = lr * final_frac;
    return (float)(lr_min + coeff * (lr - lr_min));
}

// ----------------------------------------------------------------------------
// inference with a KV cache (the KV-cache article, file 004, which also covers GQA and RoPE):
// generating token t+1 needs the keys and values of positions 0..t. They do not change
// once computed (a position only attends to earlier ones), so we keep them and compute
// only the new position: one query against all cached keys. The new query is the last
// position, so no mask is needed, and nothing is kept for a backward pass.

typedef struct {
    float* keys;     // (L,NH,maxT,hs) cached keys, each head's in one block: attention
                     //   reads them from position 0 to pos, one contiguous stream
    float* values;   // (L,NH,maxT,hs) cached values, the same layout
    float* x;        // (C) the residual stream of the new position
    float* ln;       // (C) layernorm output
    float* qkv;      // (3C) Q,K,V of the new position
    float* atty;     // (C) attention output of the new position
    float* proj;     // (C) output of a projection (attention or MLP)
    float* fch;      // (4C) MLP hidden
    float* att;      // (NH,maxT) the new query's scores, then probabilities
    float* logits;   // (Vp)
    float mean, rstd;// layernorm statistics (written by layernorm_forward, not needed)
    int* tokens;     // (maxT) the tokens whose keys and values are cached
    int pos;         // positions cached so far = position of the next token
} KVCache;

void kvcache_init(KVCache* kv, GPT2Config c) {
    size_t C = c.channels, L = c.num_layers, maxT = c.max_seq_len;
    // Zeroed, so touched, here: a fresh page costs microseconds on this kind of machine,
    // and a cache touched on first use would make every token or two of the generation
    // pay for one (for GPT-2 124M, about 0.4 ms per token).
    kv->keys = alignedCallocCheck(L * maxT * C, sizeof(float));
    kv->values = alignedCallocCheck(L * maxT * C, sizeof(float));
    kv->x = mallocCheck(C * sizeof(float));
    kv->ln = mallocCheck(C * sizeof(float));
    kv->qkv = mallocCheck(3 * C * sizeof(float));
    kv->atty = mallocCheck(C * sizeof(float));
    kv->proj = mallocCheck(C * sizeof(float));
    kv->fch = mallocCheck(4 * C * sizeof(float));
    kv->att = mallocCheck((size_t)c.num_heads * maxT * sizeof(float));
    kv->logits = mallocCheck((size_t)c.padded_vocab_size * sizeof(float));
    kv->tokens = mallocCheck(maxT * sizeof(int));
    kv->pos = 0;
}

void kvcache_free(KVCache* kv) {
    free(kv->keys); free(kv->values); free(kv->x); free(kv->ln); free(kv->qkv);
    free(kv->atty); free(kv->proj); free(kv->fch); free(kv->att); free(kv->logits); free(kv->tokens);
}

// out (OC) = W (OC,IC) x (IC) + b: one position through a linear layer. It reads every
// weight once, so its speed is the memory bandwidth: four rows at a time keep four
// independent streams (and FMA chains) going, and 16 partial sums per row let the compiler
// use full vector registers while each row's order of summation stays fixed.
static inline float dot16_finish(const float acc[16], const float* w, const float* x, int i, int IC) {
    float sum = 0.0f;
    for (; i < IC; i++) sum += w[i] * x[i];
    for (int j = 0; j < 16; j++) sum += acc[j];
    return sum;
}

void matvec_forward(float* out, const float* x, const float* weight, const float* bias, int IC, int OC) {
    #pragma omp parallel for schedule(static)
    for (int o0 = 0; o0 < OC; o0 += 4) {
        int rows = OC - o0 < 4 ? OC - o0 : 4;
        const float* w[4];
        for (int r = 0; r < 4; r++) w[r] = weight + (size_t)(o0 + (r < rows ? r : 0)) * IC;
        float acc[4][16] = {{0}};
        int i = 0;
        for (; i + 16 <= IC; i += 16)
            for (int r = 0; r < 4; r++) {
                #pragma omp simd
                for (int j = 0; j < 16; j++) acc[r][j] += w[r][i + j] * x[i + j];
            }
        for (int r = 0; r < rows; r++)
            out[o0 + r] = dot16_finish(acc[r], w[r], x, i, IC) + (bias ? bias[o0 + r] : 0.0f);
    }
}

// attention of the newest position (pos) against the cached keys/values of layer l
// q is (C): the new position's query, all heads; keys and values are (NH,maxT,hs)
static void attention_forward_cached(float* out, float* att, const float* q, const float* keys,
                                     const float* values, int pos, int C, int NH, int maxT) {
    int hs = C / NH, hs16 = hs / 16 * 16;
    float scale = 1.0f / sqrtf((float)hs);
    #pragma omp parallel for
    for (int h = 0; h < NH; h++) {
        float* scores = att + (size_t)h * maxT;
        const float* qh = q + h * hs;
        float maxval = -INFINITY;
        for (int t2 = 0; t2 <= pos; t2++) {              // steps 1-2; no mask needed
            const float* k = keys + ((size_t)h * maxT + t2) * hs;
            float dot = dot_lanes(qh, k, hs16);          // whole vectors, then the rest
            for (int i = hs16; i < hs; i++) dot += qh[i] * k[i];
            scores[t2] = dot * scale;
            if (scores[t2] > maxval) maxval = scores[t2];
        }
        for (int t2 = 0; t2 <= pos; t2++) scores[t2] = exp_approx(scores[t2] - maxval);  // step 4
        float sum = 0.0f;                                // (a loop of its own: it vectorises)
        #pragma omp simd reduction(+ : sum)
        for (int t2 = 0; t2 <= pos; t2++) sum += scores[t2];
        float inv_sum = 1.0f / sum;
        float* o = out + h * hs;                         // step 8: o = sum of p_t2 v_t2,
        for (int i = 0; i < hs; i++) o[i] = 0.0f;        //   normalised at the end
        add_weighted_rows(o, scores, 1, values + (size_t)h * maxT * hs, hs, pos + 1, hs);
        for (int i = 0; i < hs; i++) o[i] *= inv_sum;
    }
}

// feeds one token at position kv->pos; returns the logits (Vp) for the next token
const float* gpt2_forward_token(const GPT2* model, KVCache* kv, int token) {
    GPT2Config c = model->config;
    int C = c.channels, NH = c.num_heads, hs = C / NH, maxT = c.max_seq_len, pos = kv->pos;
    if (pos >= maxT) die("the KV cache is full: position %d reaches maxT %d", pos, maxT);
    if (token < 0 || token >= c.vocab_size) die("token %d is outside the vocabulary (0..%d)", token, c.vocab_size - 1);
    const ParameterTensors* p = &model->params;
    encoder_forward(kv->x, &token, p->wte, p->wpe + (size_t)pos * C, 1, 1, C);
    for (int l = 0; l < c.num_layers; l++) {
        LayerParams w = layer_params(*p, c, l);
        float* keys = kv->keys + (size_t)l * maxT * C;
        float* values = kv->values + (size_t)l * maxT * C;
        layernorm_forward(kv->ln, &kv->mean, &kv->rstd, kv->x, w.ln1w, w.ln1b, 1, C);
        matvec_forward(kv->qkv, kv->ln, w.qkvw, w.qkvb, C, 3 * C);
        for (int h = 0; h < NH; h++) {                                       // cache K and V
            size_t slot = ((size_t)h * maxT + pos) * hs;
            memcpy(keys + slot, kv->qkv + C + h * hs, hs * sizeof(float));
            memcpy(values + slot, kv->qkv + 2 * C + h * hs, hs * sizeof(float));
        }
        attention_forward_cached(kv->atty, kv->att, kv->qkv, keys, values, pos, C, NH, maxT);
        matvec_forward(kv->proj, kv->atty, w.attprojw, w.attprojb, C, C);
        residual_forward(kv->x, kv->x, kv->proj, C);
        layernorm_forward(kv->ln, &kv->mean, &kv->rstd, kv->x, w.ln2w, w.ln2b, 1, C);
        matvec_forward(kv->fch, kv->ln, w.fcw, w.fcb, C, 4 * C);
        gelu_forward(kv->fch, kv->fch, 4 * C);
        matvec_forward(kv->proj, kv->fch, w.fcprojw, w.fcprojb, 4 * C, C);
        residual_forward(kv->x, kv->x, kv->proj, C);
    }
    layernorm_forward(kv->ln, &kv->mean, &kv->rstd, kv->x, p->lnfw, p->lnfb, 1, C);
    matvec_forward(kv->logits, kv->ln, p->wte, NULL, C, c.vocab_size);  // padded rows are never used
    kv->tokens[pos] = token;
    kv->pos++;
    return kv->logits;
}

// ----------------------------------------------------------------------------
// data loader for llm.c token files (magic 20240520): uint16 tokens after the header.
// Sequential (llm.c's way, -sh 0): a batch is B*T+1 consecutive tokens, inputs the
// first B*T and targets the same shifted by one; batches follow each other through the
// file and wrap around. Shuffled (-sh 1, the default): the file is cut into windows of
// T+1 tokens, at an offset drawn anew each epoch, and each batch takes B windows in a
// random order, so consecutive steps see unrelated text (as nanoGPT's random windows
// do) while every epoch still covers the file once. Validation is always sequential.

typedef struct {
    const char* path;
    uint16_t* tokens;
    size_t num_tokens;
    int B, T;
    size_t num_batches;  // batches per epoch
    int shuffle;         // windows in a random order, shifted by a random offset
    uint64_t seed;
    size_t* order;       // sequential: batch order; shuffled: window order
    size_t offset;       // shuffled: where this epoch's windows start (0..T-1)
    long epoch;          // the position: batch batch_index of epoch comes next
    size_t batch_index;
    int* inputs;         // (B,T)
    int* targets;        // (B,T)
} DataLoader;

static void load_token_file(DataLoader* d, const char* path, int V) {
    FILE* f = fopenCheck(path, "rb");
    int32_t h[256];
    read_header(f, path, h, 20240520, "llm.c token file");
    if (h[1] != 1) die("'%s': token file version %d is not supported (expected 1)", path, h[1]);
    if (h[2] < 0) die("'%s': negative token count %d in the header", path, h[2]);
    size_t n = (size_t)h[2];
    long expected = 1024L + 2L * (long)n, actual = file_size(f);
    if (actual < expected)
        die("'%s' is truncated: its header promises %zu tokens (%ld bytes), the file has %ld bytes", path, n, expected, actual);
    if (actual > expected) die("'%s' is longer than its header says (%ld bytes, expected %ld)", path, actual, expected);
    d->tokens = mallocCheck(n * sizeof(uint16_t) + 1);
    fread_check(d->tokens, sizeof(uint16_t), n, f, path, "tokens");
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (d->tokens[i] >= V)
            die("'%s': token %d at position %zu is outside the model's vocabulary (0..%d)", path, d->tokens[i], i, V - 1);
    d->num_tokens = n;
}

// windows of T+1 tokens that fit after any offset < T
static size_t dataloader_num_windows(const DataLoader* d) { return (d->num_tokens - d->T) / d->T; }

// the order of this epoch: identity when sequential, a seeded permutation of the windows
// (and a seeded offset) when shuffled; recomputable from (seed, epoch) alone, so a
// resumed run continues exactly
static void dataloader_shuffle(DataLoader* d) {
    size_t n = d->shuffle ? dataloader_num_windows(d) : d->num_batches;
    for (size_t i = 0; i < n; i++) d->order[i] = i;
    if (!d->shuffle) return;
    uint64_t rng = d->seed ^ splitmix64((uint64_t)d->epoch);
    d->offset = random_u64(&rng) % d->T;
    for (size_t i = n - 1; i > 0; i--) {   // Fisher-Yates
        size_t j = random_u64(&rng) % (i + 1);
        size_t t = d->order[i]; d->order[i] = d->order[j]; d->order[j] = t;
    }
}

void dataloader_init(DataLoader* d, const char* path, int B, int T, int V, int shuffle, uint64_t seed,
                     const char* flags) {
    memset(d, 0, sizeof *d);
    d->path = path; d->B = B; d->T = T; d->shuffle = shuffle; d->seed = seed;
    load_token_file(d, path, V);
    size_t need = (size_t)B * T + 1;
    if (d->num_tokens < need)
        die("'%s' has %zu tokens, fewer than one batch of B*T+1 = %zu (%s)", path, d->num_tokens, need, flags);
    d->num_batches = shuffle ? dataloader_num_windows(d) / B : (d->num_tokens - 1) / ((size_t)B * T);
    if (d->num_batches == 0)  // shuffled windows can need up to T-1 more tokens
        die("'%s' has %zu tokens, too few for one shuffled batch of %d windows of %d (%s, or -sh 0)", path, d->num_tokens, B, T + 1, flags);
    d->order = mallocCheck((shuffle ? dataloader_num_windows(d) : d->num_batches) * sizeof(size_t));
    d->inputs = mallocCheck((size_t)B * T * sizeof(int));
    d->targets = mallocCheck((size_t)B * T * sizeof(int));
    dataloader_shuffle(d);
}

// copies T+1 tokens starting at src into row r of inputs/targets
static void dataloader_fill_row(DataLoader* d, int r, const uint16_t* src) {
    for (int t = 0; t < d->T; t++) {
        d->inputs[(size_t)r * d->T + t] = src[t];
        d->targets[(size_t)r * d->T + t] = src[t + 1];
    }
}

// loads sequential batch number k of the file (k < (num_tokens-1) / (B*T))
void dataloader_load_batch(DataLoader* d, size_t k) {
    for (int r = 0; r < d->B; r++) dataloader_fill_row(d, r, d->tokens + (k * d->B + r) * d->T);
}

void dataloader_next_batch(DataLoader* d) {
    if (d->shuffle) {
        for (int r = 0; r < d->B; r++)
            dataloader_fill_row(d, r, d->tokens + d->offset + d->order[d->batch_index * d->B + r] * d->T);
    } else {
        dataloader_load_batch(d, d->order[d->batch_index]);
    }
    if (++d->batch_index == d->num_batches) { d->batch_index = 0; d->epoch++; dataloader_shuffle(d); }
}

void dataloader_seek(DataLoader* d, long epoch, size_t batch_index) {
    if (batch_index >= d->num_batches) die("'%s': saved data position %zu is past its %zu batches", d->path, batch_index, d->num_batches);
    d->epoch = epoch;
    d->batch_index = batch_index;
    dataloader_shuffle(d);
}

void dataloader_free(DataLoader* d) {
    free(d->tokens); free(d->order); free(d->inputs); free(d->targets);
}

// ----------------------------------------------------------------------------
// tokenizer (llm.c format, magic 20240328): decodes ids to bytes; for a vocabulary of
// single bytes (character level) it also encodes text

typedef struct {
    int vocab_size;
    char** token_table;   // NUL-terminated bytes of each token
    int eot_token;        // the first token of a generation
    int byte_to_token[256]; // character-level encoding, -1 where no single-byte token
} Tokenizer;

void tokenizer_init(Tokenizer* tk, const char* path) {
    FILE* f = fopenCheck(path, "rb");
    int32_t h[256];
    read_header(f, path, h, 20240328, "llm.c tokenizer");
    if (h[1] != 1 && h[1] != 2) die("'%s': tokenizer version %d is not supported (expected 1 or 2)", path, h[1]);
    if (h[2] <= 0 || h[2] > 65536) die("'%s': implausible vocabulary size %d", path, h[2]);
    tk->vocab_size = h[2];
    tk->eot_token = h[1] == 1 ? 50256 : h[3];
    if (tk->eot_token < 0 || tk->eot_token >= tk->vocab_size) tk->eot_token = 0;
    tk->token_table = mallocCheck((size_t)tk->vocab_size * sizeof(char*));
    for (int b = 0; b < 256; b++) tk->byte_to_token[b] = -1;
    for (int i = 0; i < tk->vocab_size; i++) {
        unsigned char len;
        fread_check(&len, 1, 1, f, path, "token table");
        if (len == 0) die("'%s': token %d has length 0", path, i);
        tk->token_table[i] = mallocCheck(len + 1);
        fread_check(tk->token_table[i], 1, len, f, path, "token table");
        tk->token_table[i][len] = '\0';
        if (len == 1 && tk->byte_to_token[(unsigned char)tk->token_table[i][0]] < 0)
            tk->byte_to_token[(unsigned char)tk->token_table[i][0]] = i;
    }
    fclose(f);
}

const char* tokenizer_decode(const Tokenizer* tk, int id) {
    return (id >= 0 && id < tk->vocab_size) ? tk->token_table[id] : "?";
}

// character-level encoding; returns the number of tokens, or dies naming the character
int tokenizer_encode_chars(const Tokenizer* tk, const char* text, int* out, int max_tokens) {
    int n = 0;
    for (const unsigned char* s = (const unsigned char*)text; *s; s++) {
        int id = tk->byte_to_token[*s];
        if (id < 0) die("-pr: character '%c' (byte %d) is not in the tokenizer's vocabulary", *s, *s);
        if (n == max_tokens) die("-pr: the prompt is longer than the model's maxT %d", max_tokens);
        out[n++] = id;
    }
    return n;
}

void tokenizer_free(Tokenizer* tk) {
    for (int i = 0; i < tk->vocab_size; i++) free(tk->token_table[i]);
    free(tk->token_table);
}

// ----------------------------------------------------------------------------
// sampler: turns logits into the next token; separate from the model

typedef struct {
    float temperature;  // 0 = always the most likely token
    int top_k;          // keep the k most likely tokens; 0 = all
    uint64_t rng;       // counter of the random stream (saved in checkpoints)
    int V;
    float* probs;       // (V) scratch
    int* order;         // (V) scratch for top-k
} Sampler;

void sampler_init(Sampler* s, int V, float temperature, int top_k, uint64_t seed) {
    s->V = V; s->temperature = temperature; s->top_k = top_k; s->rng = splitmix64(seed);
    s->probs = mallocCheck((size_t)V * sizeof(float));
    s->order = mallocCheck((size_t)V * sizeof(int));
}

void sampler_free(Sampler* s) { free(s->probs); free(s->order); }

static const float* sort_probs;  // for qsort's comparator
static int compare_by_prob(const void* a, const void* b) {
    int i = *(const int*)a, j = *(const int*)b;
    if (sort_probs[i] != sort_probs[j]) return sort_probs[i] > sort_probs[j] ? -1 : 1;
    return i - j;  // ties by id, so the order is deterministic
}

int sampler_sample(Sampler* s, const float* logits) {
    int V = s->V;
    if (s->temperature <= 0.0f) {
        int best = 0;
        for (int i = 1; i < V; i++) if (logits[i] > logits[best]) best = i;
        return best;
    }
    float maxval = -INFINITY;
    for (int i = 0; i < V; i++) if (logits[i] > maxval) maxval = logits[i];
    for (int i = 0; i < V; i++) { s->probs[i] = expf((logits[i] - maxval) / s->temperature); s->order[i] = i; }
    int n = V;
    if (s->top_k > 0 && s->top_k < V) {
        sort_probs = s->probs;
        qsort(s->order, V, sizeof(int), compare_by_prob);
        n = s->top_k;
    }
    double total = 0.0;
    for (int i = 0; i < n; i++) total += s->probs[s->order[i]];
    double r = random_f32(&s->rng) * total, cdf = 0.0;
    for (int i = 0; i < n; i++) {
        cdf += s->probs[s->order[i]];
        if (r < cdf) return s->order[i];
    }
    return s->order[n - 1];
}

// ----------------------------------------------------------------------------
// generation: feed the prompt through the KV cache, then sample one token at a time

static void print_token(const Tokenizer* tk, int id, FILE* out) {
    if (tk) fputs(tokenizer_decode(tk, id), out);
    else fprintf(out, "%d ", id);
}

// prints the prompt and n new tokens. When the context fills the model's maxT, either
// stop with a notice (slide == 0) or keep the newest maxT/2 tokens as the new context
// and recompute their keys and values (slide == 1), the way nanoGPT crops its context.
// Returns the number of tokens generated.
int generate(const GPT2* model, KVCache* kv, Sampler* s, const Tokenizer* tk,
             const int* prompt, int prompt_len, int n, int slide, FILE* out) {
    int maxT = model->config.max_seq_len, keep = maxT / 2 > 0 ? maxT / 2 : 1, slides = 0, generated = 0;
    kv->pos = 0;
    for (int i = 0; i < prompt_len; i++) print_token(tk, prompt[i], out);
    for (int i = 0; i < prompt_len - 1; i++) gpt2_forward_token(model, kv, prompt[i]);
    int token = prompt[prompt_len - 1];
    while (generated < n) {
        if (kv->pos == maxT) {
            if (!slide) {
                fprintf(out, "\n[generation stopped: the context reached the model's maxT of %d tokens]", maxT);
                break;
            }
            int* history = kv->tokens;
            memmove(history, history + maxT - keep + 1, (keep - 1) * sizeof(int));
            kv->pos = 0;
            for (int i = 0; i < keep - 1; i++) gpt2_forward_token(model, kv, history[i]);
            slides++;
        }
        token = sampler_sample(s, gpt2_forward_token(model, kv, token));
        print_token(tk, token, out);
        generated++;
    }
    fputc('\n', out);
    if (slides) fprintf(out, "[the context reached maxT = %d %d time%s; each time the newest %d tokens were kept]\n",
                        maxT, slides, slides == 1 ? "" : "s", keep);
    fflush(out);
    return generated;
}

// ----------------------------------------------------------------------------
// training state: everything besides the weights that a resumed run needs to continue
// exactly: AdamW's moments, the step, the data position, the sampler's random stream.
// Our own format (magic 20241124, version 1): header of 256 int32, then m and v as
// float32 in parameter order.

#define STATE_MAGIC 20241124

typedef struct {
    int step;          // updates done
    int B, T;
    long epoch;        // data loader position
    size_t batch_index;
    uint64_t sampler_rng;
} TrainState;

static void put_u64(int32_t* h, int i, uint64_t v) { h[i] = (int32_t)(v & 0xffffffffu); h[i + 1] = (int32_t)(v >> 32); }
static uint64_t get_u64(const int32_t* h, int i) { return (uint64_t)(uint32_t)h[i] | ((uint64_t)(uint32_t)h[i + 1] << 32); }

void write_train_state(const char* path, const GPT2* model, const TrainState* st) {
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    int32_t h[256] = {0};
    h[0] = STATE_MAGIC; h[1] = 1; h[2] = st->step; h[3] = st->B; h[4] = st->T;
    put_u64(h, 5, model->num_parameters);
    put_u64(h, 7, (uint64_t)st->epoch);
    put_u64(h, 9, st->batch_index);
    put_u64(h, 11, st->sampler_rng);
    fwrite_check(h, sizeof(int32_t), 256, f, tmp);
    fwrite_check(model->m_memory, sizeof(float), model->num_parameters, f, tmp);
    fwrite_check(model->v_memory, sizeof(float), model->num_parameters, f, tmp);
    atomic_commit(f, tmp, path);
}

void read_train_state(const char* path, GPT2* model, TrainState* st) {
    FILE* f = fopenCheck(path, "rb");
    int32_t h[256];
    read_header(f, path, h, STATE_MAGIC, "training state file");
    if (h[1] != 1) die("'%s': training state version %d is not supported (expected 1)", path, h[1]);
    if (get_u64(h, 5) != model->num_parameters)
        die("'%s' belongs to a model with %llu parameters, this one has %zu", path,
            (unsigned long long)get_u64(h, 5), model->num_parameters);
    long expected = 1024L + 2L * (long)(model->num_parameters * sizeof(float));
    if (file_size(f) != expected) die("'%s' is truncated or too long: %ld bytes, expected %ld", path, file_size(f), expected);
    st->step = h[2]; st->B = h[3]; st->T = h[4];
    st->epoch = (long)get_u64(h, 7);
    st->batch_index = (size_t)get_u64(h, 9);
    st->sampler_rng = get_u64(h, 11);
    if (!model->m_memory) {
        model->m_memory = alignedMallocCheck(model->num_parameters * sizeof(float));
        model->v_memory = alignedMallocCheck(model->num_parameters * sizeof(float));
    }
    fread_check(model->m_memory, sizeof(float), model->num_parameters, f, path, "AdamW moments");
    fread_check(model->v_memory, sizeof(float), model->num_parameters, f, path, "AdamW moments");
    fclose(f);
}

// the newest step in dir that has both model_%08d.bin and state_%08d.bin; -1 if none
int latest_checkpoint(const char* dir) {
    DIR* d = opendir(dir);
    if (!d) return -1;
    int best = -1;
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        int step;
        char name[64], model_path[4096];
        struct stat sb;
        if (sscanf(e->d_name, "state_%8d", &step) != 1 || step <= best) continue;
        snprintf(name, sizeof name, "state_%08d.bin", step);
        if (strcmp(name, e->d_name) != 0) continue;  // e.g. a leftover .tmp file
        snprintf(model_path, sizeof model_path, "%s/model_%08d.bin", dir, step);
        if (stat(model_path, &sb) == 0) best = step;
    }
    closedir(d);
    return best;
}

// ----------------------------------------------------------------------------
// command line: llm.c's train_gpt2.cu letters, plus flags for the model shape and more

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
    float weight_decay;          // -c
    int max_steps;               // -x
    int val_every, val_batches;  // -v -m
    int sample_every, gen_tokens;// -s -g
    int checkpoint_every;        // -n
    int resume;                  // -y
    int layers, heads, channels, max_seq_len; // -nl -nh -nc -mt (fresh model)
    float grad_clip;             // -gc
    long long seed;              // -sd
    float dropout;               // -dr
    float beta1, beta2, eps;     // -b1 -b2 -ae
    float temperature;           // -tp
    int top_k;                   // -tk
    const char* prompt;          // -pr
    int shuffle;                 // -sh
    const char* attention_map;   // -am
    int slide;                   // -sw
} Options;

typedef struct { const char* name; char type; size_t offset; const char* help; } Flag;
#define OPT(field) offsetof(Options, field)
static const Flag FLAGS[] = {
    {"-i", 's', OPT(train_path), "training tokens (llm.c token file)"},
    {"-j", 's', OPT(val_path), "validation tokens"},
    {"-tok", 's', OPT(tokenizer_path), "tokenizer (llm.c tokenizer file)"},
    {"-e", 's', OPT(init), "start from this llm.c checkpoint, or a fresh d12/d24/d36/d48; default: a fresh model shaped by -nl -nh -nc -mt"},
    {"-o", 's', OPT(out_dir), "output directory for checkpoints (\"\" = none)"},
    {"-b", 'i', OPT(B), "batch size B"},
    {"-t", 'i', OPT(T), "sequence length T"},
    {"-l", 'f', OPT(lr), "peak learning rate"},
    {"-u", 'i', OPT(warmup), "warmup steps"},
    {"-q", 'f', OPT(final_lr_frac), "final learning rate as a fraction of the peak (cosine decay)"},
    {"-c", 'f', OPT(weight_decay), "AdamW weight decay (matrices only)"},
    {"-x", 'i', OPT(max_steps), "training steps (0 = none: generate with -g, or evaluate)"},
    {"-v", 'i', OPT(val_every), "validation loss every N steps (0 = only at the end)"},
    {"-m", 'i', OPT(val_batches), "validation batches (0 = the whole validation file)"},
    {"-s", 'i', OPT(sample_every), "sample every N steps (0 = only at the end)"},
    {"-g", 'i', OPT(gen_tokens), "tokens per sample (0 = no samples)"},
    {"-n", 'i', OPT(checkpoint_every), "checkpoint every N steps (0 = only at the end)"},
    {"-y", 'i', OPT(resume), "1 = resume from the newest checkpoint in -o"},
    {"-nl", 'i', OPT(layers), "fresh model: layers"},
    {"-nh", 'i', OPT(heads), "fresh model: heads"},
    {"-nc", 'i', OPT(channels), "fresh model: channels"},
    {"-mt", 'i', OPT(max_seq_len), "fresh model: maxT (0 = T)"},
    {"-gc", 'f', OPT(grad_clip), "clip the global gradient norm to this (0 = off)"},
    {"-sd", 'L', OPT(seed), "seed for initialisation, dropout, shuffling and sampling"},
    {"-dr", 'f', OPT(dropout), "dropout probability, 0 <= p < 1 (training only)"},
    {"-b1", 'f', OPT(beta1), "AdamW beta1"},
    {"-b2", 'f', OPT(beta2), "AdamW beta2"},
    {"-ae", 'f', OPT(eps), "AdamW epsilon"},
    {"-tp", 'f', OPT(temperature), "sampling temperature (0 = greedy)"},
    {"-tk", 'i', OPT(top_k), "sample from the k most likely tokens (0 = all)"},
    {"-pr", 's', OPT(prompt), "prompt to continue (character-level tokenizers)"},
    {"-sh", 'i', OPT(shuffle), "1 = random windows in a random order each epoch; 0 = llm.c's sequential batches"},
    {"-sw", 'i', OPT(slide), "1 = when generation fills maxT, keep the newest maxT/2 tokens and go on; 0 = stop"},
    {"-am", 's', OPT(attention_map), "write the attention maps of the prompt to this PGM file and exit"},
};
#define NUM_FLAGS ((int)(sizeof FLAGS / sizeof FLAGS[0]))

static Options default_options(void) {
    Options o = {
        .train_path = "data/tiny_shakespeare_train.bin", .val_path = "data/tiny_shakespeare_val.bin",
        .tokenizer_path = "data/tiny_shakespeare_tokenizer.bin", .init = "", .out_dir = "out",
        .B = 12, .T = 64, .lr = 1e-3f, .warmup = 100, .final_lr_frac = 0.5f, .weight_decay = 0.0f,
        .max_steps = 2000, .val_every = 250, .val_batches = 0, .sample_every = 0, .gen_tokens = 400,
        .checkpoint_every = 0, .resume = 0, .layers = 4, .heads = 4, .channels = 128, .max_seq_len = 0,
        .grad_clip = 1.0f, .seed = 1337, .dropout = 0.0f, .beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f,
        .temperature = 1.0f, .top_k = 0, .prompt = "", .shuffle = 1, .attention_map = "", .slide = 1};
    return o;
}

static void print_usage(FILE* f) {
    Options d = default_options();
    fprintf(f, "usage: ./train_gpt2 [flags]   (every flag takes a value)\n");
    for (int i = 0; i < NUM_FLAGS; i++) {
        const Flag* fl = &FLAGS[i];
        const char* field = (const char*)&d + fl->offset;
        char def[64];
        if (fl->type == 'i') snprintf(def, sizeof def, "%d", *(const int*)field);
        else if (fl->type == 'L') snprintf(def, sizeof def, "%lld", *(const long long*)field);
        else if (fl->type == 'f') snprintf(def, sizeof def, "%g", *(const float*)field);
        else snprintf(def, sizeof def, "\"%s\"", *(const char* const*)field);
        fprintf(f, "  %-4s %-36s (default %s)\n", fl->name, fl->help, def);
    }
}

static void usage_error(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "train_gpt2: error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    print_usage(stderr);
    exit(EXIT_USAGE);
}

Options parse_args(int argc, char** argv) {
    Options o = default_options();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) { print_usage(stdout); exit(0); }
        const Flag* fl = NULL;
        for (int k = 0; k < NUM_FLAGS; k++) if (strcmp(argv[i], FLAGS[k].name) == 0) fl = &FLAGS[k];
        if (!fl) usage_error("unknown flag '%s'", argv[i]);
        if (i + 1 >= argc) usage_error("flag %s needs a value", argv[i]);
        const char* v = argv[++i];
        char* field = (char*)&o + fl->offset;
        char* end;
        errno = 0;
        if (fl->type == 's') { *(const char**)field = v; continue; }
        if (fl->type == 'f') {
            float x = strtof(v, &end);
            if (end == v || *end || errno || !isfinite(x)) usage_error("flag %s expects a number, got '%s'", fl->name, v);
            *(float*)field = x;
        } else {
            long long x = strtoll(v, &end, 10);
            if (end == v || *end || errno) usage_error("flag %s expects an integer, got '%s'", fl->name, v);
            if (fl->type == 'i' && (x < -2147483647LL || x > 2147483647LL)) usage_error("flag %s: %s is out of range", fl->name, v);
            if (fl->type == 'i') *(int*)field = (int)x; else *(long long*)field = x;
        }
    }
    // ranges: one line naming the flag
    struct { int bad; const char* msg; } checks[] = {
        {o.B <= 0, "-b (batch size) must be > 0"}, {o.T <= 0, "-t (sequence length) must be > 0"},
        {o.lr < 0, "-l (learning rate) must be >= 0"}, {o.warmup < 0, "-u (warmup steps) must be >= 0"},
        {o.final_lr_frac < 0 || o.final_lr_frac > 1, "-q (final learning-rate fraction) must be in [0,1]"},
        {o.weight_decay < 0, "-c (weight decay) must be >= 0"}, {o.max_steps < 0, "-x (steps) must be >= 0"},
        {o.val_every < 0, "-v must be >= 0"}, {o.val_batches < 0, "-m must be >= 0"},
        {o.sample_every < 0, "-s must be >= 0"}, {o.gen_tokens < 0, "-g must be >= 0"},
        {o.checkpoint_every < 0, "-n must be >= 0"}, {o.resume != 0 && o.resume != 1, "-y must be 0 or 1"},
        {o.layers <= 0, "-nl (layers) must be > 0"}, {o.heads <= 0, "-nh (heads) must be > 0"},
        {o.channels <= 0, "-nc (channels) must be > 0"}, {o.max_seq_len < 0, "-mt (maxT) must be >= 0"},
        {o.grad_clip < 0, "-gc (gradient clip) must be >= 0"}, {o.seed < 0, "-sd (seed) must be >= 0"},
        {!(o.dropout >= 0 && o.dropout < 1), "-dr (dropout) must satisfy 0 <= p < 1"},
        {!(o.beta1 >= 0 && o.beta1 < 1), "-b1 must be in [0,1)"}, {!(o.beta2 >= 0 && o.beta2 < 1), "-b2 must be in [0,1)"},
        {o.eps <= 0, "-ae (AdamW epsilon) must be > 0"}, {o.temperature < 0, "-tp (temperature) must be >= 0"},
        {o.top_k < 0, "-tk (top-k) must be >= 0"}, {o.shuffle != 0 && o.shuffle != 1, "-sh must be 0 or 1"}, {o.slide != 0 && o.slide != 1, "-sw must be 0 or 1"},
        {o.resume && !o.out_dir[0], "-y 1 needs an output directory (-o)"}};
    for (size_t k = 0; k < sizeof checks / sizeof checks[0]; k++)
        if (checks[k].bad) { fprintf(stderr, "train_gpt2: error: %s\n", checks[k].msg); exit(EXIT_USAGE); }
    return o;
}

// ----------------------------------------------------------------------------
// the program

// mean loss over the first n batches of the validation file (no dropout)
float validation_loss(GPT2* model, DataLoader* val, int n) {
    double sum = 0.0;
    for (int k = 0; k < n; k++) {
        dataloader_load_batch(val, (size_t)k);
        sum += gpt2_forward(model, val->inputs, val->targets, val->B, val->T, -1);
    }
    return (float)(sum / n);
}

// attention probabilities of every layer and head on the prompt, as one grayscale PGM:
// a grid with a row per layer and a column per head, each tile a T x T map (query rows,
// key columns, white = probability 1), enlarged so short prompts stay visible
void write_attention_maps(GPT2* model, const int* tokens, int T, const char* path) {
    GPT2Config c = model->config;
    int L = c.num_layers, NH = c.num_heads, zoom = T < 128 ? (256 + T - 1) / T : 1, gap = 4;
    gpt2_forward(model, tokens, NULL, 1, T, -1);
    int tile = T * zoom, W = NH * tile + (NH - 1) * gap, H = L * tile + (L - 1) * gap;
    unsigned char* img = callocCheck((size_t)W * H, 1);
    memset(img, 64, (size_t)W * H);  // grey gaps between tiles
    for (int l = 0; l < L; l++)
        for (int h = 0; h < NH; h++)
            for (int y = 0; y < tile; y++)
                for (int x = 0; x < tile; x++) {
                    float p = model->acts.att_probs[((size_t)(l * NH + h) * T + y / zoom) * T + x / zoom];
                    img[(size_t)(l * (tile + gap) + y) * W + h * (tile + gap) + x] = (unsigned char)(255.0f * sqrtf(p) + 0.5f);
                }
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    fprintf(f, "P5\n# attention probabilities (sqrt scale): rows = layers, columns = heads\n%d %d\n255\n", W, H);
    fwrite_check(img, 1, (size_t)W * H, f, tmp);
    atomic_commit(f, tmp, path);
    free(img);
}

// writes dir/model_STEP.bin and dir/state_STEP.bin; refuses weights that are not finite,
// so the newest checkpoint on disk is always a usable one
void save_checkpoint(const char* dir, int step, const GPT2* model, const TrainState* st, char* model_path, size_t n) {
    char state_path[4096];
    for (size_t i = 0; i < model->num_parameters; i++)
        if (!isfinite(model->params_memory[i]))
            die("the weights became nan or inf after step %d; not writing a checkpoint. Last good checkpoint: %s",
                step, model_path[0] ? model_path : "none");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) die("-o: cannot create directory '%s' (%s)", dir, strerror(errno));
    snprintf(model_path, n, "%s/model_%08d.bin", dir, step);
    snprintf(state_path, sizeof state_path, "%s/state_%08d.bin", dir, step);
    gpt2_write_checkpoint(model, model_path);
    write_train_state(state_path, model, st);
}

// everything a run holds: the model and what feeds it, what samples from it
typedef struct {
    GPT2 model;
    TrainState state;            // where training stands (step 0 unless resumed)
    int resume_step;             // the checkpoint resumed from, or -1
    char last_checkpoint[4096];  // the newest checkpoint written or resumed from
    Tokenizer tokenizer;
    int have_tokenizer;          // loaded, and its vocabulary matches the model's
    Sampler sampler;
    KVCache kv;
    int* prompt;                 // (maxT) the tokens generation starts from
    int prompt_len;
    DataLoader train, val;
    int have_val, val_batches;
} Run;

// the model: resumed from -o, loaded with -e, or fresh; with the tokenizer that names
// its vocabulary
void setup_model(const Options* o, Run* r) {
    struct stat sb;
    int default_tokenizer = strcmp(o->tokenizer_path, default_options().tokenizer_path) == 0;
    r->resume_step = o->resume ? latest_checkpoint(o->out_dir) : -1;
    if (o->resume && r->resume_step < 0) printf("-y 1: no checkpoint in '%s' yet, starting from the beginning\n", o->out_dir);
    GPT2Config fresh = {.max_seq_len = o->max_seq_len ? o->max_seq_len : o->T, .num_layers = o->layers,
                        .num_heads = o->heads, .channels = o->channels};
    int is_fresh = r->resume_step < 0 && (!o->init[0] || parse_model_descriptor(o->init, &fresh));
    if (is_fresh || !default_tokenizer || stat(o->tokenizer_path, &sb) == 0) {
        tokenizer_init(&r->tokenizer, o->tokenizer_path);  // a fresh model takes its vocabulary from it
        r->have_tokenizer = 1;
    }
    if (r->resume_step >= 0) {
        snprintf(r->last_checkpoint, sizeof r->last_checkpoint, "%s/model_%08d.bin", o->out_dir, r->resume_step);
        gpt2_build_from_checkpoint(&r->model, r->last_checkpoint);
    } else if (!is_fresh) {
        gpt2_build_from_checkpoint(&r->model, o->init);
    } else {
        fresh.vocab_size = r->tokenizer.vocab_size;
        fresh.padded_vocab_size = (r->tokenizer.vocab_size + 127) / 128 * 128;
        gpt2_init_random(&r->model, fresh, (uint64_t)o->seed);
    }
    GPT2Config c = r->model.config;
    if (o->T > c.max_seq_len && (o->max_steps > 0 || o->gen_tokens == 0))
        die("-t %d is larger than the model's maxT %d", o->T, c.max_seq_len);
    if (r->have_tokenizer && r->tokenizer.vocab_size != c.vocab_size) {
        printf("note: tokenizer '%s' has %d tokens, the model %d: samples are printed as token ids\n",
               o->tokenizer_path, r->tokenizer.vocab_size, c.vocab_size);
        tokenizer_free(&r->tokenizer);
        r->have_tokenizer = 0;
    }
    r->model.dropout_p = o->dropout;
    r->model.dropout_seed = (uint64_t)o->seed;
    if (r->resume_step >= 0) {
        char state_path[4096];
        snprintf(state_path, sizeof state_path, "%s/state_%08d.bin", o->out_dir, r->resume_step);
        read_train_state(state_path, &r->model, &r->state);
        if (r->state.B != o->B || r->state.T != o->T)
            die("'%s' was written with -b %d -t %d; resume with the same, not -b %d -t %d", state_path,
                r->state.B, r->state.T, o->B, o->T);
        printf("resuming from %s at step %d\n", r->last_checkpoint, r->state.step);
    }
    printf("model: L=%d NH=%d C=%d maxT=%d V=%d (padded %d), %.2fM parameters\n", c.num_layers, c.num_heads,
           c.channels, c.max_seq_len, c.vocab_size, c.padded_vocab_size, r->model.num_parameters / 1e6);
}

// sampler, KV cache and the prompt (the end-of-text token when there is none)
void setup_generation(const Options* o, Run* r) {
    GPT2Config c = r->model.config;
    sampler_init(&r->sampler, c.vocab_size, o->temperature, o->top_k, (uint64_t)o->seed ^ 0x5A4D504CULL);
    if (r->resume_step >= 0) r->sampler.rng = r->state.sampler_rng;
    if (o->gen_tokens > 0) kvcache_init(&r->kv, c);
    r->prompt = mallocCheck((size_t)c.max_seq_len * sizeof(int));
    r->prompt_len = 1;
    r->prompt[0] = r->have_tokenizer ? r->tokenizer.eot_token : 0;
    if (o->prompt[0]) {
        if (!r->have_tokenizer) die("-pr needs a tokenizer that matches the model (-tok)");
        r->prompt_len = tokenizer_encode_chars(&r->tokenizer, o->prompt, r->prompt, c.max_seq_len);
    }
}

void setup_data(const Options* o, Run* r) {
    int V = r->model.config.vocab_size;
    r->have_val = o->val_path[0] && (o->max_steps > 0 || o->gen_tokens == 0);
    if (o->max_steps > 0) dataloader_init(&r->train, o->train_path, o->B, o->T, V, o->shuffle, (uint64_t)o->seed, "-b, -t");
    if (r->have_val) {
        dataloader_init(&r->val, o->val_path, o->B, o->T, V, 0, 0, "-b, -t");
        size_t all = r->val.num_batches;  // sequential: every whole batch of the file
        r->val_batches = (o->val_batches == 0 || (size_t)o->val_batches > all) ? (int)all : o->val_batches;
    }
    if (r->resume_step >= 0 && o->max_steps > 0) dataloader_seek(&r->train, r->state.epoch, r->state.batch_index);
}

static void sample(const Options* o, Run* r) {
    generate(&r->model, &r->kv, &r->sampler, r->have_tokenizer ? &r->tokenizer : NULL, r->prompt, r->prompt_len,
             o->gen_tokens, o->slide, stdout);
}

static void stop_if_not_finite(const char* what, float value, int step, const Run* r) {
    if (isfinite(value)) return;
    fprintf(stderr, "train_gpt2: error: the %s became %f at step %d; stopping. Last good checkpoint: %s\n",
            what, value, step, r->last_checkpoint[0] ? r->last_checkpoint : "none");
    exit(EXIT_BAD_INPUT);
}

// one optimisation step; prints its line. A checkpoint due at this step is written after
// the forward pass, for weights whose loss just came out finite.
static double train_step(const Options* o, Run* r, int step) {
    double t0 = now_seconds();
    TrainState before = {step, o->B, o->T, r->train.epoch, r->train.batch_index, r->sampler.rng};
    dataloader_next_batch(&r->train);
    float loss = gpt2_forward(&r->model, r->train.inputs, r->train.targets, o->B, o->T, step);
    stop_if_not_finite("training loss", loss, step, r);
    if (o->out_dir[0] && o->checkpoint_every > 0 && step % o->checkpoint_every == 0 && step > r->state.step)
        save_checkpoint(o->out_dir, step, &r->model, &before, r->last_checkpoint, sizeof r->last_checkpoint);
    gpt2_zero_grad(&r->model);
    gpt2_backward(&r->model);
    float norm = gpt2_grad_norm(&r->model);
    stop_if_not_finite("gradient norm", norm, step, r);
    float lr = learning_rate(step, o->lr, o->warmup, o->max_steps, o->final_lr_frac);
    gpt2_update(&r->model, lr, o->beta1, o->beta2, o->eps, o->weight_decay, grad_clip_scale(norm, o->grad_clip), step + 1);
    double dt = now_seconds() - t0;
    printf("step %5d/%d | loss %.6f | lr %.2e | norm %.4f | %.1f ms | %.0f tok/s\n",
           step + 1, o->max_steps, loss, lr, norm, dt * 1e3, o->B * o->T / dt);
    fflush(stdout);
    return dt;
}

// the training loop: validation every -v steps, a sample every -s, checkpoints every -n,
// and all three at the end
void train(const Options* o, Run* r) {
#ifdef _OPENMP
    int threads = omp_get_max_threads();
#else
    int threads = 1;
#endif
    printf("training: B=%d T=%d, %d steps, lr %g (warmup %d, cosine to %g), weight decay %g, clip %g, dropout %g, %d thread%s\n",
           o->B, o->T, o->max_steps, o->lr, o->warmup, o->final_lr_frac, o->weight_decay, o->grad_clip, o->dropout,
           threads, threads == 1 ? "" : "s");
    printf("data: %s (%zu tokens), %s (%zu tokens, %d validation batches)\n", o->train_path, r->train.num_tokens,
           r->have_val ? o->val_path : "no validation", r->val.num_tokens, r->val_batches);
    double train_seconds = 0.0;
    int timed_steps = 0;
    float val_loss = -1.0f;
    for (int step = r->state.step; step <= o->max_steps; step++) {
        int last = step == o->max_steps;
        if (r->have_val && ((o->val_every > 0 && step % o->val_every == 0) || last)) {
            val_loss = validation_loss(&r->model, &r->val, r->val_batches);
            printf("step %5d | val loss %.4f\n", step, val_loss);
        }
        if (o->gen_tokens > 0 && ((o->sample_every > 0 && step % o->sample_every == 0 && step > 0) || last)) {
            printf("---- sample at step %d ----\n", step);
            sample(o, r);
            printf("----\n");
        }
        if (last) break;
        double dt = train_step(o, r, step);
        if (step > r->state.step) { train_seconds += dt; timed_steps++; }  // the first step warms up
    }
    if (o->out_dir[0] && o->max_steps > r->state.step) {
        if (r->have_val && !isfinite(val_loss))
            die("the validation loss is %f at the end; not writing a checkpoint. Last good checkpoint: %s",
                val_loss, r->last_checkpoint[0] ? r->last_checkpoint : "none");
        TrainState now = {o->max_steps, o->B, o->T, r->train.epoch, r->train.batch_index, r->sampler.rng};
        save_checkpoint(o->out_dir, o->max_steps, &r->model, &now, r->last_checkpoint, sizeof r->last_checkpoint);
    }
    if (timed_steps > 0) {
        printf("done: %d steps, %.1f ms/step (%.0f tok/s)", o->max_steps - r->state.step, 1e3 * train_seconds / timed_steps,
               o->B * o->T * timed_steps / train_seconds);
        if (r->have_val) printf(", final val loss %.4f", val_loss);
        if (r->last_checkpoint[0]) printf(", checkpoint %s", r->last_checkpoint);
        printf("\n");
    }
}

void run_free(Run* r, const Options* o) {
    free(r->prompt);
    sampler_free(&r->sampler);
    if (o->gen_tokens > 0) kvcache_free(&r->kv);
    if (r->have_tokenizer) tokenizer_free(&r->tokenizer);
    if (o->max_steps > 0) dataloader_free(&r->train);
    if (r->have_val) dataloader_free(&r->val);
    gpt2_free(&r->model);
}

#ifndef TESTING
int main(int argc, char** argv) {
    Options o = parse_args(argc, argv);
    static Run r;  // zeroed
    setup_model(&o, &r);
    setup_generation(&o, &r);
    if (o.attention_map[0]) {
        write_attention_maps(&r.model, r.prompt, r.prompt_len, o.attention_map);
        printf("attention maps of %d prompt tokens: %s (%d layers x %d heads)\n", r.prompt_len, o.attention_map,
               r.model.config.num_layers, r.model.config.num_heads);
    } else {
        setup_data(&o, &r);
        if (o.max_steps > 0) train(&o, &r);
        else if (o.gen_tokens > 0) sample(&o, &r);  // -x 0: generate, or evaluate
        else if (r.have_val) printf("val loss %.4f (%d batches of %dx%d)\n", validation_loss(&r.model, &r.val, r.val_batches), r.val_batches, o.B, o.T);
    }
    run_free(&r, &o);
    return 0;
}
#endif
