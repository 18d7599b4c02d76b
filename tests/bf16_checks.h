/*
tests/bf16_checks.h: the tests of -prec bf16 (fast/bf16.h), included by test_gpt2.c.
- bf16_round: round to nearest, ties to even, on values whose answer is known;
- the packing (vectorised where there are 16 columns) against the definition, and both
  kernels (vdpbf16ps, the widened FMAs) against their plain twin, bit for bit; on denormal
  products, the one difference between them (vdpbf16ps flushes them to 0);
- sgemm with bf16 operands against a float64 product of the same rounded operands, for
  every transpose (the only difference left: float32 sums), and against the plain twin's
  float32 sums, bit for bit (each kernel forced, by tests/run_tests.sh), or for AMX's tiles,
  whose sums are in their own order, within 8e-7 of sum |terms|;
- the gradients of the reference configurations against PyTorch's float64 ones, per
  tensor, relative to each tensor's largest value; the tolerances are from the measured
  errors (doc/tests.md, "Test tolerances");
- determinism: the same bits twice, and on 1 thread as on all;
- the weights' bf16 copy: products packed from it equal those rounding while packing, bit
  for bit (every transpose, odd sizes and strides), and AdamW keeps it equal to the rounded
  weights.
*/
#define TOL_BF16_LOSS_REL 5e-4  // measured up to 1.3e-4 (doc/tests.md)
#define TOL_BF16_GRAD_REL 3e-2  // measured up to 1.1e-2 (doc/tests.md)
#define TOL_BF16_GRAD_REL_RELU 0.3  // ReLU's kinks: measured 0.18 (doc/tests.md)

static void test_bf16_round(void) {
    struct { float x; uint16_t want; const char* what; } cases[] = {
        {1.0f, 0x3f80, "1"},
        {1.0f + 0x1p-8f, 0x3f80, "1 + 2^-8: a tie, to the even 1"},
        {1.0f + 0x1p-7f + 0x1p-8f, 0x3f82, "1 + 3*2^-8: a tie, to the even 1 + 2^-6"},
        {1.0f + 0x1p-8f + 0x1p-20f, 0x3f81, "just above a tie: up"},
        {-2.5f, 0xc020, "-2.5 (exact)"},
        {3.4028235e38f, 0x7f80, "the largest float rounds to infinity"},
        {0.0f, 0x0000, "0"},
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (bf16_round(cases[i].x) != cases[i].want) {
            ok = 0;
            printf("   bf16_round(%s) = %04x, expected %04x\n", cases[i].what, bf16_round(cases[i].x),
                   cases[i].want);
        }
    uint16_t nan = bf16_round(NAN);
    ok &= (nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0;
    // the packing's vector rounding (bf16_round_top), lane by lane, on the same values and NaN
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i0 = 0; i0 <= n; i0 += VEC_W) {
        float x[VEC_W];
        for (int l = 0; l < VEC_W; l++) x[l] = i0 + l < n ? cases[i0 + l].x : i0 + l == n ? NAN : -1.0f - l;
        bf16_vw top = bf16_round_top(*(const bf16_vwu*)x);
        for (int l = 0; l < VEC_W; l++) ok &= (uint16_t)(top[l] >> 16) == bf16_round(x[l]);
    }
    check(ok, "bf16_round and its vector form: ties to even, overflow to infinity, NaN stays NaN (%zu values)",
          sizeof cases / sizeof cases[0] + 1);
    // the vector form against bf16_round on every top half (each sign, exponent and bf16
    // mantissa: NaNs quiet and signalling, infinities, denormals), each with the low halves
    // that decide a rounding (ties, just below and above them)
    static const uint32_t lows[8] = {0x0000, 0x0001, 0x4000, 0x7fff, 0x8000, 0x8001, 0xc000, 0xffff};
    long differ = 0;
    for (uint32_t i0 = 0; i0 < 0x10000u * 8; i0 += VEC_W) {
        bf16_vw u;
        for (int l = 0; l < VEC_W; l++) u[l] = (i0 + l) / 8 << 16 | lows[(i0 + l) % 8];
        bf16_vw top = bf16_round_top(u);
        for (int l = 0; l < VEC_W; l++) {
            float x;
            memcpy(&x, (const uint32_t*)&u + l, sizeof x);
            differ += (uint16_t)(top[l] >> 16) != bf16_round(x);
        }
    }
    check(differ == 0, "bf16_round_top equals bf16_round on each of the 65536 top halves with 8 low halves "
          "(0, 0x7fff, 0x8000, 0x8001, ...): %ld differ", differ);
}

// bf16_pack_cols of the first cols columns of src (kc rows, ld apart) into an R-wide sliver
// dst: 1 if a pair differs from its definition (pairs of k down a column, zero-padded)
static int bf16_pack_cols_differs(const float* src, int ld, int cols, int R, int kc, uint32_t* dst) {
    int differs = 0;
    gemm_kernels.pack_cols(src, ld, cols, R, kc, dst);
    for (int p = 0; p < (kc + 1) / 2; p++)
        for (int c = 0; c < R; c++) {
            float even = c < cols ? src[(size_t)2 * p * ld + c] : 0.0f;
            float odd = c < cols && 2 * p + 1 < kc ? src[(size_t)(2 * p + 1) * ld + c] : 0.0f;
            differs |= dst[(size_t)p * R + c] != bf16_pair(even, odd);
        }
    return differs;
}

// the packed pairs of a kc x cols block against their definition; and the kernel, fed the
// same slivers, against its plain twin, bit for bit
static void test_bf16_pack_kernel(void) {
    uint64_t rng = 7;
    int worst_pack = 0, worst_kernel = 0, worst_widen = 0, worst_packed = 0;
    (void)worst_kernel;  // (set only in a build with vdpbf16ps)
    for (int kc = 1; kc <= 37; kc += 9) {
        for (int cols = 1; cols <= GEMM_NR; cols += 5) {
            int kc2 = (kc + 1) / 2, ld = 40;
            float* src = uniform_floats(&rng, (size_t)kc * ld);
            // (aligned: the kernel's aligned loads)
            uint32_t* packed = compat_aligned_alloc(64, (size_t)kc2 * GEMM_NR * 4);
            worst_pack |= bf16_pack_cols_differs(src, ld, cols, GEMM_NR, kc, packed);  // a B sliver
            uint32_t* a = compat_aligned_alloc(64, ((size_t)kc2 * GEMM_MR * 4 + 63) / 64 * 64);
            float* at = uniform_floats(&rng, (size_t)GEMM_MR * kc);
            int rows = 1 + cols % GEMM_MR;  // rows below GEMM_MR are zero-padded
            gemm_kernels.pack_rows(at, kc, rows, GEMM_MR, kc, a);
            for (int p = 0; p < kc2; p++)
                for (int i = 0; i < GEMM_MR; i++) {
                    float even = i < rows ? at[(size_t)i * kc + 2 * p] : 0.0f;
                    float odd = i < rows && 2 * p + 1 < kc ? at[(size_t)i * kc + 2 * p + 1] : 0.0f;
                    worst_pack |= a[(size_t)p * GEMM_MR + i] != bf16_pair(even, odd);
                }
            // an A sliver from columns (op(A) = A^T: dW = dout^T inp), GEMM_MR wide: at read
            // as a kc x GEMM_MR matrix of which rows columns are real
            uint32_t* acols = compat_aligned_alloc(64, ((size_t)kc2 * GEMM_MR * 4 + 63) / 64 * 64);
            worst_pack |= bf16_pack_cols_differs(at, GEMM_MR, rows, GEMM_MR, kc, acols);
            aligned_free(acols);
            float C1[GEMM_MR * GEMM_NR], C2[GEMM_MR * GEMM_NR], C3[GEMM_MR * GEMM_NR], C4[GEMM_MR * GEMM_NR];
            for (int acc = 0; acc < 2; acc++) {
                for (int i = 0; i < GEMM_MR * GEMM_NR; i++)
                    C1[i] = C2[i] = C3[i] = C4[i] = (float)i * 0.01f;
                gemm_kernels.bf16_widen(kc2, a, packed, C1, GEMM_NR, GEMM_MR, cols, !acc, NULL);
                gemm_kernels.bf16_plain(kc2, a, packed, C2, GEMM_NR, GEMM_MR, cols, !acc, NULL);
                gemm_kernels.bf16_packed(kc2, a, packed, C4, GEMM_NR, GEMM_MR, cols, !acc, NULL);
                worst_widen |= memcmp(C1, C2, sizeof C1) != 0;
                worst_packed |= memcmp(C4, C2, sizeof C1) != 0;
#if defined(__AVX512BF16__)
                gemm_kernels.bf16_dp(kc2, a, packed, C3, GEMM_NR, GEMM_MR, cols, !acc, NULL);
                worst_kernel |= memcmp(C3, C2, sizeof C1) != 0;
#endif
            }
            free(src); aligned_free(packed); aligned_free(a); free(at);
        }
    }
    check(!worst_pack, "bf16 packing of rows and of columns (vectorised, GEMM_NR and GEMM_MR wide) equals "
          "its definition: pairs of k, zero-padded");
    check(!worst_widen, "bf16 kernel widened to float32 FMA (%s) equals its plain twin bit for bit, = and +=, "
          "kc 1..37", GEMM_ISA);
    check(!worst_packed, "bf16 pairs widened when packed, then the float32 kernel (%s), equal the plain twin "
          "bit for bit, = and +=, kc 1..37", GEMM_ISA);
#if defined(__AVX512BF16__)
    check(!worst_kernel, "bf16 kernel (vdpbf16ps) equals its plain twin bit for bit, = and +=, kc 1..37");
#endif
}

// Products below float32's smallest normal, 2^-126: the widened kernel keeps them (the plain
// twin's bits), vdpbf16ps flushes them to 0: its sums lie between 0 and the widened ones
// (doc/precision.md). Every a 2^-68 (1 + i/64), every b 2^-68 (1 + j/128): products near 2^-136,
// exact (bits down to 2^-149), and their sums of 38 stay below 2^-126.
static void test_bf16_denormals(void) {
    int kc2 = 19;
    uint32_t* a = compat_aligned_alloc(64, ((size_t)kc2 * GEMM_MR * 4 + 63) / 64 * 64);
    uint32_t* b = compat_aligned_alloc(64, (size_t)kc2 * GEMM_NR * 4);
    for (int i = 0; i < kc2 * GEMM_MR; i++)
        a[i] = bf16_pair(0x1p-68f * (1 + (i % 17) / 64.0f), 0x1p-68f * (1 + (i % 13) / 64.0f));
    for (int j = 0; j < kc2 * GEMM_NR; j++)
        b[j] = bf16_pair(0x1p-68f * (1 + (j % 11) / 128.0f), 0x1p-68f * (1 + (j % 7) / 128.0f));
    float Cw[GEMM_MR * GEMM_NR], Cp[GEMM_MR * GEMM_NR], Cf[GEMM_MR * GEMM_NR];
    gemm_kernels.bf16_widen(kc2, a, b, Cw, GEMM_NR, GEMM_MR, GEMM_NR, 1, NULL);
    gemm_kernels.bf16_plain(kc2, a, b, Cp, GEMM_NR, GEMM_MR, GEMM_NR, 1, NULL);
    gemm_kernels.bf16_packed(kc2, a, b, Cf, GEMM_NR, GEMM_MR, GEMM_NR, 1, NULL);
    int denormal = Cw[0] > 0 && Cw[0] < 0x1p-126f;  // (the sums stay below 2^-126: all exact)
    check(denormal && memcmp(Cw, Cp, sizeof Cw) == 0 && memcmp(Cf, Cp, sizeof Cf) == 0,
          "bf16 widened kernel, in the kernel and when packed, keeps denormal products and sums (%.3e): its "
          "plain twin's bits", (double)Cw[0]);
#if defined(__AVX512BF16__)
    float Cd[GEMM_MR * GEMM_NR];
    gemm_kernels.bf16_dp(kc2, a, b, Cd, GEMM_NR, GEMM_MR, GEMM_NR, 1, NULL);
    int within = 1;
    for (int i = 0; i < GEMM_MR * GEMM_NR; i++) within &= Cd[i] >= 0 && Cd[i] <= Cw[i];
    check(within, "bf16 kernels on denormal products: vdpbf16ps's sums between 0 and the widened kernel's "
          "(here %.3e against %.3e): the stated difference", (double)Cd[0], (double)Cw[0]);
#endif
    aligned_free(a); aligned_free(b);
}

// sgemm with bf16 operands against the float64 product of the rounded operands: the error
// left is the float32 accumulation's, a few ulps of sum |a||b|
static void test_bf16_sgemm(void) {
    uint64_t rng = 11;
    // K over one KC block, edges in every direction; N wide enough that each thread's share
    // spans two blocks of columns (op(A) packed once and read again: keep_A in fast/gemm.c)
    int M = 37, N = 2 * gemm_blocking()->nc + 45, K = GEMM_KC_BF16 + 88;
    float worst = 0.0f;
    GemmPrecision bf16 = {.kind = GEMM_BF16};
    for (int tA = 0; tA < 2; tA++)
        for (int tB = 0; tB < 2; tB++) {
            float* A = uniform_floats(&rng, (size_t)M * K);
            float* B = uniform_floats(&rng, (size_t)K * N);
            float* C = zeros((size_t)M * N);
            sgemm_bias(&bf16, tA, tB, M, N, K, A, tA ? M : K, B, tB ? K : N, C, N, 0, NULL);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    double sum = 0.0, mag = 0.0;
                    for (int k = 0; k < K; k++) {
                        float av = tA ? A[(size_t)k * M + i] : A[(size_t)i * K + k];
                        float bv = tB ? B[(size_t)j * K + k] : B[(size_t)k * N + j];
                        double a = bf16_to_float(bf16_round(av)), b = bf16_to_float(bf16_round(bv));
                        sum += a * b;
                        mag += fabs(a * b);
                    }
                    float e = (float)(fabs(C[(size_t)i * N + j] - sum) / mag);
                    worst = e > worst ? e : worst;
                }
            free(A); free(B); free(C);
        }
    check(worst <= 4e-7f, "sgemm with bf16 operands, 4 transposes, 37x%dx%d: error of the float32 sums "
          "%.2e of sum |a||b| (tolerance 4e-7, as for fp32: sums of a 2^-24 rounding)", N, K, worst);
}

// the reference configurations' loss and gradients with bf16 matmuls against PyTorch's
// float64 ones: what bf16 costs in accuracy, per tensor
static void test_bf16_gradients(const char* model_path, const char* state_path) {
    GPT2 model;
    gpt2_build_from_checkpoint(&model, model_path);
    RefState s;
    read_state(&s, state_path, &model);
    model.precision = GEMM_BF16;
    float loss = gpt2_forward(&model, s.x, s.y, s.B, s.T, -1);
    gpt2_zero_grad(&model);
    gpt2_backward(&model);
    float loss_rel = fabsf(loss - s.loss) / fabsf(s.loss);
    check(loss_rel <= TOL_BF16_LOSS_REL, "-prec bf16, %s: loss relative error %.2e (tolerance %.0e)",
          model_path, loss_rel, TOL_BF16_LOSS_REL);
    size_t offset = 0;
    float worst = 0.0f;
    const char* worst_name = "";
    printf("   per tensor, error relative to its largest value:");
    for (int k = 0; k < NUM_PARAMETER_TENSORS; k++) {
        size_t n = model.param_sizes[k];
        if (n == 0) continue;
        float e = rel(compare(model.grads_memory + offset, s.grads + offset, 1, n, n));
        printf(" %s %.1e", PARAMETER_NAMES[k], e);
        if (e > worst) { worst = e; worst_name = PARAMETER_NAMES[k]; }
        offset += n;
    }
    printf("\n");
    // With ReLU, a pre-activation within bf16's rounding of 0 can change sign (3 of 4096 in
    // configuration c, the largest 9e-4), switching its unit's whole gradient on or off
    float tol = model.config.activation == ACT_RELU ? TOL_BF16_GRAD_REL_RELU : TOL_BF16_GRAD_REL;
    check(worst <= tol, "-prec bf16, %s: every gradient within %.0e of its tensor's largest value (worst "
          "%s: %.2e)%s", model_path, tol, worst_name, worst, tol > TOL_BF16_GRAD_REL ? ", ReLU" : "");
    free_state(&s);
    gpt2_free(&model);
}

// the same seed and flags give the same bits with bf16, on 1 thread as on all
static void test_bf16_determinism(const char* model_path) {
    float losses[3][6];
    for (int run = 0; run < 3; run++) {
        GPT2 model;
        gpt2_build_from_checkpoint(&model, model_path);
        int B = 2, T = 8, x[16], y[16];
        int V = model.config.vocab_size;
        for (int i = 0; i < B * T; i++) {
            x[i] = (i * 7) % V;
            y[i] = (i * 5 + 3) % V;
        }
        int threads = run == 2 ? use_threads(1) : 0;
        model.precision = GEMM_BF16;
        train_steps(&model, x, y, B, T, 6, losses[run]);
        if (run == 2) use_threads(threads);
        gpt2_free(&model);
    }
    int same = memcmp(losses[0], losses[1], sizeof losses[0]) == 0;
    same &= memcmp(losses[0], losses[2], sizeof losses[0]) == 0;
    check(same, "-prec bf16: 6 training steps give the same losses twice and on 1 thread (last %.7f)",
          losses[0][5]);
}

// sgemm with bf16 operands against the plain twin's sums, bit for bit, whichever kernel runs
// (the probe's choice; run_tests.sh runs this group with each BF16_KERNEL): per block of
// GEMM_KC_BF16 k, a chain from 0 of the odd k's product, then the even k's, for each pair; C
// (or the bias) plus the blocks in order. Every transpose, = and += (a bias with =), K odd and
// over one block, an operand rounded while packed or packed from its bf16 copy.
static float bf16_chain_element(const float* A, const float* B, int tA, int tB, int M, int N, int K,
                                int i, int j, float c, int accumulate, const float* bias) {
    for (int k0 = 0; k0 < K; k0 += GEMM_KC_BF16) {
        float acc = 0.0f;
        for (int k = k0; k < K && k < k0 + GEMM_KC_BF16; k += 2) {
            float a[2] = {0, 0}, b[2] = {0, 0};
            for (int q = 0; q < 2 && k + q < K; q++) {
                float av = tA ? A[(size_t)(k + q) * M + i] : A[(size_t)i * K + k + q];
                float bv = tB ? B[(size_t)j * K + k + q] : B[(size_t)(k + q) * N + j];
                a[q] = bf16_round_float(av), b[q] = bf16_round_float(bv);
            }
            acc = fmaf(a[1], b[1], acc);
            acc = fmaf(a[0], b[0], acc);
        }
        c = k0 == 0 && !accumulate ? (bias ? acc + bias[j] : acc) : c + acc;
    }
    return c;
}

static void test_bf16_sgemm_bits(void) {
    uint64_t rng = 17;
    int M = 37, N = 45, K = GEMM_KC_BF16 + 89, same = 1, cases = 0;
    int exact = bf16_kernel_exact();  // else AMX: within a bound (its sums are in another order)
    double worst = 0.0;  // |C - the plain twin's| over sum |terms|, where not exact
    for (int copy_of = 0; copy_of < 3; copy_of++)  // none, A's, B's
        for (int tA = 0; tA < 2; tA++)
            for (int tB = 0; tB < 2; tB++)
                for (int accumulate = 0; accumulate < 2; accumulate++) {
                    float *A = uniform_floats(&rng, (size_t)M * K), *B = uniform_floats(&rng, (size_t)K * N);
                    float *C = uniform_floats(&rng, (size_t)M * N), *bias = uniform_floats(&rng, N);
                    float* C0 = malloc((size_t)M * N * sizeof(float));
                    memcpy(C0, C, (size_t)M * N * sizeof(float));
                    const float* w = copy_of == 1 ? A : B;
                    size_t n = (size_t)(copy_of == 1 ? M * K : K * N);
                    uint16_t* copy = malloc(n * sizeof(uint16_t));
                    bf16_round_all(copy, w, n);
                    GemmPrecision p = {GEMM_BF16, copy_of ? w : NULL, copy_of ? copy : NULL, copy_of ? n : 0};
                    sgemm_bias(&p, tA, tB, M, N, K, A, tA ? M : K, B, tB ? K : N, C, N, accumulate, bias);
                    for (int i = 0; i < M; i++)
                        for (int j = 0; j < N; j++) {
                            size_t at = (size_t)i * N + j;
                            float want =
                                bf16_chain_element(A, B, tA, tB, M, N, K, i, j, C0[at], accumulate, bias);
                            same &= memcmp(&want, &C[at], sizeof want) == 0;
                            if (exact) continue;
                            double mag = fabs(!accumulate ? (bias ? bias[j] : 0.0f) : C0[at]);
                            for (int k = 0; k < K; k++) {
                                float av = tA ? A[(size_t)k * M + i] : A[(size_t)i * K + k];
                                float bv = tB ? B[(size_t)j * K + k] : B[(size_t)k * N + j];
                                mag += fabs((double)bf16_round_float(av) * bf16_round_float(bv));
                            }
                            double e = fabs((double)C[at] - want) / mag;
                            worst = e > worst ? e : worst;
                        }
                    cases++;
                    free(A); free(B); free(C); free(C0); free(bias); free(copy);
                }
    if (exact)
        check(same, "sgemm with bf16 operands (%s) equals the plain twin's sums bit for bit: %d cases (4 "
              "transposes, = with a bias and +=, rounded or from the copy), 37x45x%d", bf16_kernel_describe(),
              cases, K);
    else  // both within the 4e-7 of test_bf16_sgemm from the exact sum
        check(worst <= 8e-7, "sgemm with bf16 operands (%s) within 8e-7 of sum |terms| of the plain twin's "
              "sums: %.2e, %d cases (4 transposes, = with a bias and +=, rounded or from the copy), 37x45x%d",
              bf16_kernel_describe(), worst, cases, K);
}

// sgemm with an operand given as weights (packed from its bf16 copy: GemmPrecision) against
// the same sgemm rounding it while packing: the same bits, for A or B, every transpose, odd
// K (a pair padded with 0), K over one KC block, odd leading dimensions
static void test_bf16_weight_copy(void) {
    uint64_t rng = 13;
    int M = 37, N = 45, K = GEMM_KC_BF16 + 89, same = 1;
    GemmPrecision rounding = {.kind = GEMM_BF16};
    for (int which = 0; which < 2; which++)
        for (int tA = 0; tA < 2; tA++)
            for (int tB = 0; tB < 2; tB++) {
                float* A = uniform_floats(&rng, (size_t)M * K);
                float* B = uniform_floats(&rng, (size_t)K * N);
                float *C1 = zeros((size_t)M * N), *C2 = zeros((size_t)M * N);
                sgemm_bias(&rounding, tA, tB, M, N, K, A, tA ? M : K, B, tB ? K : N, C1, N, 0, NULL);
                size_t n = (size_t)(which ? K * N : M * K);
                uint16_t* copy = malloc(n * sizeof(uint16_t));
                bf16_round_all(copy, which ? B : A, n);
                GemmPrecision weights = {GEMM_BF16, which ? B : A, copy, n};
                sgemm_bias(&weights, tA, tB, M, N, K, A, tA ? M : K, B, tB ? K : N, C2, N, 0, NULL);
                same &= memcmp(C1, C2, (size_t)M * N * sizeof(float)) == 0;
                free(A); free(B); free(C1); free(C2); free(copy);
            }
    check(same, "bf16 products with an operand packed from its bf16 copy equal rounding while packing, "
          "bit for bit (A or B, 4 transposes, 37x45x%d)", K);
}

// after bf16 training steps, the copy AdamW rewrites equals the weights rounded
static void test_bf16_copy_in_step(const char* model_path) {
    GPT2 model;
    gpt2_build_from_checkpoint(&model, model_path);
    int x[16], y[16];
    for (int i = 0; i < 16; i++) {
        x[i] = (i * 3) % model.config.vocab_size;
        y[i] = (i * 5 + 1) % model.config.vocab_size;
    }
    float losses[3];
    model.precision = GEMM_BF16;
    train_steps(&model, x, y, 2, 8, 3, losses);
    size_t stale = 0;
    for (size_t i = 0; i < model.num_parameters; i++)
        stale += !model.params_bf16 || model.params_bf16[i] != bf16_round_packed(model.params_memory[i]);
    check(stale == 0, "-prec bf16: after 3 steps the weights' bf16 copy equals the rounded weights "
          "(%zu of %zu differ)", stale, model.num_parameters);
    gpt2_free(&model);
}

// a weight written outside AdamW is seen by the next bf16 forward once gpt2_weights_written
// says so (the copy made again): the loss of a model edited after its first forward equals
// that of the same model edited before any, bit for bit; without the call it is not seen
static void test_bf16_weights_written(const char* model_path) {
    GPT2 edited, fresh;
    gpt2_build_from_checkpoint(&edited, model_path);
    gpt2_build_from_checkpoint(&fresh, model_path);
    edited.precision = fresh.precision = GEMM_BF16;
    int x[16], y[16];
    for (int i = 0; i < 16; i++)
        x[i] = (i * 3) % edited.config.vocab_size, y[i] = (i * 5 + 1) % edited.config.vocab_size;
    size_t n = edited.param_sizes[4];  // qkvw: the matrices times 20, the experiment
    float before = gpt2_forward(&edited, x, y, 2, 8, -1);
    for (size_t i = 0; i < n; i++)
        edited.params.qkvw[i] *= 20.0f, fresh.params.qkvw[i] *= 20.0f;
    float unseen = gpt2_forward(&edited, x, y, 2, 8, -1);  // (the copy is the old weights')
    gpt2_weights_written(&edited);
    float seen = gpt2_forward(&edited, x, y, 2, 8, -1);
    float expected = gpt2_forward(&fresh, x, y, 2, 8, -1);
    check(unseen == before && seen == expected && seen != before,
          "-prec bf16: qkvw x 20 after a forward: loss %.6f -> %.6f once gpt2_weights_written says so, "
          "that of the model edited before its first forward (%.6f); unsaid, %.6f (the copy's)",
          before, seen, expected, unseen);
    gpt2_free(&edited);
    gpt2_free(&fresh);
}

static void test_bf16(const char* dir) {
    printf("-- bf16 matmuls (-prec bf16, fast/bf16.h)\n");
    test_bf16_round();
    test_bf16_pack_kernel();
    test_bf16_denormals();
    test_bf16_sgemm();
    test_bf16_weight_copy();
    const char* configs[] = {"a", "b", "c", "d"};
    char a[4096], b[4096];
    for (int i = 0; i < 4; i++) {
        snprintf(a, sizeof a, "%s/ref_%s_model.bin", dir, configs[i]);
        snprintf(b, sizeof b, "%s/ref_%s_state.bin", dir, configs[i]);
        test_bf16_gradients(a, b);
    }
    snprintf(a, sizeof a, "%s/ref_a_model.bin", dir);
    test_bf16_determinism(a);
    test_bf16_copy_in_step(a);
    test_bf16_weights_written(a);
}
