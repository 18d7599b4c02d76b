/*
tests/hf_checks.h: the tests of Hugging Face's GPT-2 checkpoints (util/safetensors.h,
util/hf_gpt2.h), included by test_gpt2.c.
- half and bfloat16 to float32 on values whose answer is known;
- the small GPT-2s that data/make_reference.py writes in GPT2LMHeadModel's layout (F32
  without the prefix, F16 with "transformer." and the tied lm_head, BF16 without
  config.json): logits, loss and every gradient against PyTorch's float64 ones at the
  reference tolerances (check_state, computed from the values the file stores);
- a Conv1D weight loaded without its transpose (each of the four in turn, attn.c_proj
  being square) changes the logits far beyond the tolerance: the check above catches it;
- an exported model reloads to the same bits and exports to the same bytes;
- an llm.c version 3 checkpoint (zero padding rows, as llm.c writes them) converted to
  safetensors and back is the same file, byte for byte;
- a file that kept the tied pair only as lm_head.weight loads as the same model.
*/

static void test_half_floats(void) {
    struct { uint16_t h; float want; } halves[] = {
        {0x3c00, 1.0f}, {0xc000, -2.0f}, {0x3555, 0.333251953125f}, {0x7bff, 65504.0f},
        {0x0001, 0x1p-24f}, {0x03ff, 1023 * 0x1p-24f}, {0x0400, 0x1p-14f}, {0x0000, 0.0f},
        {0x7c00, INFINITY}, {0xfc00, -INFINITY}};
    int ok = 1;
    for (size_t i = 0; i < sizeof halves / sizeof halves[0]; i++)
        ok &= half_to_float(halves[i].h) == halves[i].want;
    float negzero = half_to_float(0x8000), nan = half_to_float(0x7e00);
    ok &= negzero == 0.0f && signbit(negzero) && isnan(nan);
    ok &= bf16_to_float(0x3f80) == 1.0f && bf16_to_float(0xc020) == -2.5f;
    check(ok, "F16 and BF16 to float32: 1, -2, 1/3, 65504, subnormals, -0, inf, nan");
}

// the max |logit - reference| of model on the state's batch
static float logits_error(GPT2* model, const RefState* s) {
    gpt2_forward(model, s->x, s->y, s->B, s->T, -1);
    GPT2Config c = model->config;
    size_t BT = (size_t)s->B * s->T;
    return compare(model->acts.logits, s->logits, BT, c.vocab_size, c.padded_vocab_size).max_abs;
}

// a (rows, cols) matrix's values laid out as its transpose, in place: what a loader that
// forgot the transpose would have put there
static void untranspose(float* m, size_t rows, size_t cols) {
    float* copy = copy_floats(m, rows * cols);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            m[c * rows + r] = copy[r * cols + c];
    free(copy);
}

static void test_hf_missing_transpose(const char* model_path, const char* state_path) {
    GPT2 model;
    gpt2_build_from_file(&model, model_path);
    RefState s;
    read_state(&s, state_path, &model);
    size_t C = model.config.channels;
    float right = logits_error(&model, &s);
    struct { int param; size_t rows, cols; const char* name; } conv1d[4] = {
        {4, 3 * C, C, "attn.c_attn"}, {6, C, C, "attn.c_proj (square)"}, {10, 4 * C, C, "mlp.c_fc"},
        {12, C, 4 * C, "mlp.c_proj"}};
    for (int k = 0; k < 4; k++) {
        HFPlace p = {"", 0, 0, conv1d[k].param, 0, 1};
        // layer 0's (out, in) matrix
        float* w = hf_destination(model.params_memory, llmc_shape_of(model.config), &p);
        float* saved = copy_floats(w, conv1d[k].rows * conv1d[k].cols);
        untranspose(w, conv1d[k].rows, conv1d[k].cols);
        float wrong = logits_error(&model, &s);
        memcpy(w, saved, conv1d[k].rows * conv1d[k].cols * sizeof(float));
        free(saved);
        check(right <= TOL_LOGITS_ABS && wrong > 100 * TOL_LOGITS_ABS,
              "h.0.%s loaded without its transpose: logits off by %.2e (tolerance %.0e; transposed: %.2e)",
              conv1d[k].name, wrong, TOL_LOGITS_ABS, right);
    }
    free_state(&s);
    gpt2_free(&model);
}

static int files_equal(const char* a, const char* b) {
    FILE *fa = fopenCheck(a, "rb"), *fb = fopenCheck(b, "rb");
    long long na = file_size(fa), nb = file_size(fb);
    char *ba = mallocCheck(na), *bb = mallocCheck(nb);
    fread_check(ba, 1, na, fa, a, "file");
    fread_check(bb, 1, nb, fb, b, "file");
    int same = na == nb && memcmp(ba, bb, na) == 0;
    fclose(fa); fclose(fb); free(ba); free(bb);
    return same;
}

// a fresh scratch directory for the exports
static const char* hf_scratch(const char* name) {
    static char dir[2][1024];
    static int k;
    const char* tmp = compat_temp_dir();
    k = !k;
    snprintf(dir[k], sizeof dir[k], "%s/test_gpt2_%s_%d", tmp, name, (int)getpid());
    check_output_dir(dir[k], "scratch");
    return dir[k];
}

static void remove_export(const char* dir) {
    char path[1100];
    snprintf(path, sizeof path, "%s/model.safetensors", dir); remove(path);
    snprintf(path, sizeof path, "%s/config.json", dir); remove(path);
    rmdir(dir);
}

// a model exported and loaded again: the same parameters, bit for bit; exported again: the same bytes
static void test_hf_export(const char* model_path) {
    GPT2 m1, m2;
    gpt2_build_from_file(&m1, model_path);
    const char *d1 = hf_scratch("export1"), *d2 = hf_scratch("export2");
    char p1[1100], p2[1100], c1[1100], c2[1100];
    snprintf(p1, sizeof p1, "%s/model.safetensors", d1); snprintf(c1, sizeof c1, "%s/config.json", d1);
    snprintf(p2, sizeof p2, "%s/model.safetensors", d2); snprintf(c2, sizeof c2, "%s/config.json", d2);
    gpt2_write_safetensors(&m1, d1);
    gpt2_build_from_file(&m2, p1);
    int same = memcmp(&m1.config, &m2.config, sizeof m1.config) == 0 &&
               m1.num_parameters == m2.num_parameters &&
               memcmp(m1.params_memory, m2.params_memory, m1.num_parameters * sizeof(float)) == 0;
    gpt2_write_safetensors(&m2, d2);
    check(same && files_equal(p1, p2) && files_equal(c1, c2),
          "%s exported (-hf) and loaded again: the same %zu parameters bit for bit; exported again: the "
          "same bytes", model_path, m1.num_parameters);
    remove_export(d1); remove_export(d2);
    gpt2_free(&m1); gpt2_free(&m2);
}

// llm.c's version 3 -> safetensors -> version 3: the same file
static void test_hf_llmc_roundtrip(const char* llmc_model) {
    GPT2 m;
    gpt2_build_from_file(&m, llmc_model);
    GPT2Config c = m.config;
    size_t V = c.vocab_size, Vp = c.padded_vocab_size, C = c.channels;
    memset(m.params.wte + V * C, 0, (Vp - V) * C * sizeof(float));  // as llm.c's own files
    const char* dir = hf_scratch("llmc");
    char v3[1100], back[1100], st[1100];
    snprintf(v3, sizeof v3, "%s/llmc.bin", dir);
    snprintf(back, sizeof back, "%s/back.bin", dir);
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    gpt2_write_checkpoint(&m, v3);
    gpt2_write_safetensors(&m, dir);
    gpt2_free(&m);
    gpt2_build_from_file(&m, st);
    gpt2_write_checkpoint(&m, back);
    check(files_equal(v3, back), "an llm.c version 3 checkpoint (%s, padding rows zero) to safetensors and "
          "back: byte for byte", llmc_model);
    remove(v3); remove(back);
    remove_export(dir);
    gpt2_free(&m);
}

// GPT2LMHeadModel's names with the tied pair saved once, as lm_head.weight (wte.weight dropped):
// the same model
static void test_hf_head_only(const char* model_path) {
    GPT2 m1, m2;
    gpt2_build_from_file(&m1, model_path);
    LlmcShape c = llmc_shape_of(m1.config);
    int n = 4 + 12 * c.num_layers;
    HFPlace* places = mallocCheck(n * sizeof *places);
    SafeTensorOut* out = mallocCheck(n * sizeof *out);
    hf_places(c, "transformer.", places);
    strcpy(places[0].name, "lm_head.weight");  // wte
    for (int i = 0; i < n; i++)
        out[i] = (SafeTensorOut){places[i].name, places[i].cols ? 2 : 1, {places[i].rows, places[i].cols},
                                 hf_destination(m1.params_memory, c, &places[i]), places[i].transpose};
    const char* d = hf_scratch("head_only");
    char path[1100];
    snprintf(path, sizeof path, "%s/config.json", d);
    hf_write_config(c, path);
    snprintf(path, sizeof path, "%s/model.safetensors", d);
    safetensors_write(path, out, n);
    atomic_keep();
    gpt2_build_from_file(&m2, path);
    check(m1.num_parameters == m2.num_parameters &&
          memcmp(m1.params_memory, m2.params_memory, m1.num_parameters * sizeof(float)) == 0,
          "transformer.* names with the tied pair kept only as lm_head.weight: the same %zu parameters",
          m1.num_parameters);
    remove_export(d);
    free(places); free(out);
    gpt2_free(&m1); gpt2_free(&m2);
}

static void test_hf(const char* dir) {
    printf("-- Hugging Face's GPT-2 (model.safetensors, config.json)\n");
    test_half_floats();
    const char* models[] = {"hf_gpt2_f32", "hf_gpt2_prefix_f16", "hf_gpt2_noconfig_bf16"};
    char a[4096], b[4096];
    for (int i = 0; i < 3; i++) {
        snprintf(a, sizeof a, "%s/%s/model.safetensors", dir, models[i]);
        snprintf(b, sizeof b, "%s/%s/state.bin", dir, models[i]);
        check_state(a, b);
        if (i == 0) test_hf_missing_transpose(a, b);
        if (i == 1) test_hf_export(a);
        if (i == 1) test_hf_head_only(a);
    }
    snprintf(a, sizeof a, "%s/ref_a_model.bin", dir);
    test_hf_llmc_roundtrip(a);
}
