/*
tests/gen_bf16_checks.h: generation from bf16 weights (-prec bf16, fast/matvec_bf16.h),
included by test_gpt2.c.
- matvec_bf16 (the AVX-512 kernel where IC is a multiple of 16) against its plain twin, bit
  for bit, and against matvec_forward on the same rounded weights (bit for bit where the
  compiler fused all of its sums, within matvec_forward's own tolerance in every build): the
  only difference from float32 is the weights' rounding;
- the KV cache from the bf16 copy against the float32 KV cache on the reference models:
  the logits within a measured tolerance, never equal (equal would mean the float32 weights
  were read), the same argmax at every position;
- generate() with -prec bf16 makes the copy (and without it makes none), and greedy
  generation on a small model trained here on a periodic sequence gives the same tokens
  as float32;
- after -prec bf16 training steps the KV cache reads the model's own copy (AdamW's) instead
  of making one, and its logits are the bits a fresh copy gives.
*/
#define TOL_GEN_BF16_REL 1.5e-2f  // bf16 vs fp32 logits, relative to the largest |logit|: measured 6.8e-3

static void test_matvec_bf16(void) {
    int shapes[][2] = {{1, 1}, {17, 5}, {32, 7}, {48, 130}, {36, 9}, {128, 384}, {768, 2304}};  // IC, OC
    uint64_t rng = 99;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int IC = shapes[s][0], OC = shapes[s][1];
        float *x = uniform_floats(&rng, IC), *w = uniform_floats(&rng, (size_t)OC * IC);
        float* b = uniform_floats(&rng, OC);
        uint16_t* wb = mallocCheck((size_t)OC * IC * sizeof(uint16_t));
        for (size_t i = 0; i < (size_t)OC * IC; i++)
            wb[i] = bf16_round(w[i]), w[i] = bf16_to_float(wb[i]);  // w: the rounded weights
        float *fast = uniform_floats(&rng, OC + 1), *plain = copy_floats(fast, OC + 1);  // + 1: a sentinel
        float* ref = copy_floats(fast, OC + 1);
        matvec_bf16(fast, x, wb, b, IC, OC);
        for (int o0 = 0; o0 < OC; o0 += 4)
            matvec_bf16_rows_plain(plain, x, wb, b, IC, o0, OC - o0 < 4 ? OC - o0 : 4);
        matvec_forward(ref, x, w, b, IC, OC);
        int same_plain = memcmp(fast, plain, (OC + 1) * sizeof(float)) == 0;
        // against matvec_forward on the same rounded weights: the same bits where the compiler fused
        // all its multiply-adds (-O3 -ffp-contract=fast does; -O1, as make asan, and -O2's tail loop
        // do not), and in every build within the tolerance matvec_forward itself is held to (TOL_MATVEC_REL)
        int outside = 0;
        float err = view_error(fast, ref, OC + 1, 0, 1, OC, OC + 1, &outside);
        int bits = memcmp(fast, ref, (OC + 1) * sizeof(float)) == 0;
        int same_fp32 = err <= TOL_MATVEC_REL && !outside;
        check(same_plain && same_fp32, "matvec_bf16 IC=%d OC=%d: the same bits as its plain twin (%s); "
              "against matvec_forward on the rounded weights %s (error %.1e, tolerance %.0e), sentinel %s",
              IC, OC, same_plain ? "yes" : "NO", bits ? "the same bits" : "other roundings", err,
              TOL_MATVEC_REL, outside ? "overwritten" : "kept");
        free(x); free(w); free(b); free(wb); free(fast); free(plain); free(ref);
    }
}

// float32 and bf16 KV caches on the same tokens, position by position
static void test_gen_bf16_logits(const char* model_path) {
    GPT2 model;
    gpt2_build_from_checkpoint(&model, model_path);
    model.config.mask = MASK_CAUSAL;
    GPT2Config c = model.config;
    KVCache fp32, bf16;
    kvcache_init(&fp32, c);
    kvcache_init(&bf16, c);
    weights_bf16_sync(&bf16.bf16, GEMM_BF16, model.params_memory, model.num_parameters, NULL);
    uint64_t rng = 11;
    float worst = 0.0f, largest = 0.0f;
    int argmax_same = 0, T = c.max_seq_len;
    for (int t = 0; t < T; t++) {
        int token = (int)(random_u64(&rng) % c.vocab_size);
        const float* a = gpt2_forward_token(&model, &fp32, token);
        const float* b = gpt2_forward_token(&model, &bf16, token);
        Error e = compare(b, a, 1, c.vocab_size, 0);
        if (!(e.max_abs <= worst)) worst = e.max_abs;
        if (e.max_ref > largest) largest = e.max_ref;
        int ia = 0, ib = 0;
        for (int v = 1; v < c.vocab_size; v++)
            ia = a[v] > a[ia] ? v : ia, ib = b[v] > b[ib] ? v : ib;
        argmax_same += ia == ib;
    }
    check(worst <= TOL_GEN_BF16_REL * largest && worst > 0.0f && argmax_same == T,
          "KV cache from bf16 weights (%s): max |logit - float32's| %.2e, relative to the largest |logit| "
          "%.1e (tolerance %.1e, and > 0: the copy is read), the same argmax at %d of %d positions",
          model_path, worst, worst / largest, TOL_GEN_BF16_REL, argmax_same, T);
    kvcache_free(&fp32);
    kvcache_free(&bf16);
    gpt2_free(&model);
}

// greedy generate() on a model trained here to continue a period-7 sequence: the same tokens
// from the bf16 copy as from float32, and the copy made only with -prec bf16
static void test_gen_bf16_greedy(const char* model_path) {
    GPT2 model;
    gpt2_build_from_checkpoint(&model, model_path);
    GPT2Config c = model.config;
    enum { B = 4, T = 16, N = 12 };  // 3 + N within maxT 16: no sliding
    int x[B * T], y[B * T];
    for (int i = 0; i < B * T; i++)
        x[i] = (i * 3) % 7, y[i] = (i * 3 + 3) % 7;
    float losses[60];
    train_steps(&model, x, y, B, T, 60, losses);
    Sampler greedy;
    int out[2][N - 1], copy_made[2] = {0, 0};
    for (int prec = 0; prec < 2; prec++) {
        sampler_init(&greedy, c.vocab_size, 0.0f, 0, 1);
        KVCache kv;
        kvcache_init(&kv, c);
        FILE* sink = fopen(COMPAT_NULL_DEVICE, "w");
        model.precision = prec ? GEMM_BF16 : GEMM_FP32;
        generate(&model, &kv, &greedy, NULL, x, 3, N, 1, sink);
        model.precision = GEMM_FP32;
        fclose(sink);
        copy_made[prec] = kv.bf16.w != NULL;
        memcpy(out[prec], kv.tokens + 3, (N - 1) * sizeof(int));  // fed after the prompt (the last is not)
        kvcache_free(&kv);
        sampler_free(&greedy);
    }
    int right = 0;  // how many follow the period-7 sequence: the model learned it
    for (int i = 0; i < N - 1; i++)
        right += out[0][i] == (3 * (i + 3)) % 7;
    check(memcmp(out[0], out[1], sizeof out[0]) == 0 && !copy_made[0] && copy_made[1] && right == N - 1,
          "greedy generate() of %d tokens after 60 training steps (loss %.3f): bf16 weights give the float32 "
          "tokens (%d of %d follow the sequence), the copy made with -prec bf16 only", N, losses[59], right,
          N - 1);
    gpt2_free(&model);
}

// -prec bf16 training keeps a bf16 copy of the weights (AdamW rewrites it): generation reads
// it instead of rounding 124M weights into a second copy, with the same bits
static void test_gen_bf16_kept_copy(const char* model_path) {
    GPT2 model;
    gpt2_build_from_checkpoint(&model, model_path);
    model.config.mask = MASK_CAUSAL;
    int V = model.config.vocab_size, x[16], y[16];
    for (int i = 0; i < 16; i++)
        x[i] = (i * 3) % V, y[i] = (i * 5 + 1) % V;
    float losses[3];
    KVCache kept, fresh;
    kvcache_init(&kept, model.config);
    kvcache_init(&fresh, model.config);
    model.precision = GEMM_BF16;
    train_steps(&model, x, y, 2, 8, 3, losses);
    weights_bf16_sync(&kept.bf16, GEMM_BF16, model.params_memory, model.num_parameters, model.params_bf16);
    weights_bf16_sync(&fresh.bf16, GEMM_BF16, model.params_memory, model.num_parameters, NULL);
    model.precision = GEMM_FP32;
    int borrowed = model.params_bf16 && kept.bf16.w == model.params_bf16 && !kept.bf16.own
                   && fresh.bf16.w && fresh.bf16.w != model.params_bf16;
    int differ = 0;
    for (int t = 0; t < 8; t++) {
        const float* a = gpt2_forward_token(&model, &kept, x[t]);
        const float* b = gpt2_forward_token(&model, &fresh, x[t]);
        differ += memcmp(a, b, (size_t)V * sizeof(float)) != 0;
    }
    check(borrowed && differ == 0, "after 3 -prec bf16 steps the KV cache reads the model's own bf16 copy "
          "(%s, no second copy), and its logits equal a fresh copy's, bit for bit (%d of 8 positions differ)",
          borrowed ? "yes" : "NO", differ);
    kvcache_free(&kept);  // (must not free the model's copy: gpt2_free does, once)
    kvcache_free(&fresh);
    gpt2_free(&model);
}

static void test_gen_bf16(const char* dir) {
    printf("-- generation from bf16 weights (-prec bf16, fast/matvec_bf16.h)\n");
    test_matvec_bf16();
    const char* configs[] = {"b", "c", "d"};
    char a[4096];
    for (int i = 0; i < 3; i++) {
        snprintf(a, sizeof a, "%s/ref_%s_model.bin", dir, configs[i]);
        test_gen_bf16_logits(a);
    }
    snprintf(a, sizeof a, "%s/ref_a_model.bin", dir);
    test_gen_bf16_greedy(a);
    test_gen_bf16_kept_copy(a);
}
