/*
tests/fuzz/fuzz_readers.c: libFuzzer harnesses for every reader of outside input: the model
checkpoint, the token file, the tokenizer, the training-state file, the command line, the
pair token file (util/pairs.h, with a padded batch of every pair), a Hugging Face
model.safetensors (with a fixed config.json beside it: L=1 NH=2 C=8 maxT=4 V=5, the seeds'
shape) and config.json itself. One file, the reader chosen at compile time (-DREADER=1..8).
Build and run, e.g.:

  clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
      -DREADER=1 -o fuzz_checkpoint tests/fuzz/fuzz_readers.c -lm
  ASAN_OPTIONS=detect_leaks=0 ./fuzz_checkpoint -close_fd_mask=3 -max_total_time=600 \
      -rss_limit_mb=0 -malloc_limit_mb=2048 -dict=tests/fuzz/magic.dict CORPUS/
(-close_fd_mask=3 silences the readers' error lines; sanitizer reports still reach the terminal.)

A reader that refuses its input calls die(), which calls exit(); this file turns that exit
into a jump back here, so a refusal is a normal outcome and only a crash, a sanitizer
report, a hang or a single allocation over 2 GB is a finding. The program would exit on a
refused input without freeing what it had allocated; the harness keeps a table of the live
allocations and frees them after each input, so that a long run's memory stays flat.
*/
#define _POSIX_C_SOURCE 200809L  // as train_gpt2.c, before the first system header
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
static jmp_buf fuzz_return;
__attribute__((noreturn)) void fuzz_exit(int code) {
    (void)code;
    longjmp(fuzz_return, 1);
}
// the files a reader left open when it refused its input, closed after each input so that
// the harness does not run out of them
static FILE* fuzz_open_files[16];
FILE* fuzz_fopen(const char* path, const char* mode) {
    FILE* f = fopen(path, mode);
    for (int i = 0; f && i < 16; i++)
        if (!fuzz_open_files[i]) { fuzz_open_files[i] = f; break; }
    return f;
}
int fuzz_fclose(FILE* f) {
    for (int i = 0; i < 16; i++)
        if (fuzz_open_files[i] == f) fuzz_open_files[i] = NULL;
    return fclose(f);
}
static void fuzz_close_all(void) {
    for (int i = 0; i < 16; i++)
        if (fuzz_open_files[i]) { fclose(fuzz_open_files[i]); fuzz_open_files[i] = NULL; }
}

// every live allocation of the reader, in an open-addressing table (a freed slot becomes a
// tombstone); what is left after an input is freed by fuzz_free_all
#define FUZZ_SLOTS (1u << 21)
#define FUZZ_TOMBSTONE ((void*)1)
static void* fuzz_live[FUZZ_SLOTS];
static size_t fuzz_used[FUZZ_SLOTS], fuzz_n_used;  // the slots filled since the last input
static size_t fuzz_slot(const void* p) { return ((uintptr_t)p >> 4) * 2654435761u % FUZZ_SLOTS; }
static void* fuzz_remember(void* p) {
    if (!p) return p;
    for (size_t i = fuzz_slot(p), n = 0; n < FUZZ_SLOTS; i = (i + 1) % FUZZ_SLOTS, n++)
        if (!fuzz_live[i] || fuzz_live[i] == FUZZ_TOMBSTONE) {
            if (fuzz_n_used == FUZZ_SLOTS) break;
            fuzz_live[i] = p;
            fuzz_used[fuzz_n_used++] = i;
            return p;
        }
    abort();  // more live allocations than slots: the reader allocates without bound
}
void fuzz_free(void* p) {
    if (!p) return;
    for (size_t i = fuzz_slot(p); fuzz_live[i]; i = (i + 1) % FUZZ_SLOTS)
        if (fuzz_live[i] == p) { fuzz_live[i] = FUZZ_TOMBSTONE; break; }
    free(p);
}
void* fuzz_malloc(size_t size) { return fuzz_remember(malloc(size)); }
void* fuzz_calloc(size_t count, size_t size) { return fuzz_remember(calloc(count, size)); }
void* fuzz_aligned_alloc(size_t align, size_t size) { return fuzz_remember(aligned_alloc(align, size)); }
static void fuzz_free_all(void) {
    for (size_t k = 0; k < fuzz_n_used; k++) {
        void** slot = &fuzz_live[fuzz_used[k]];
        if (*slot && *slot != FUZZ_TOMBSTONE) free(*slot);
        *slot = NULL;
    }
    fuzz_n_used = 0;
}

// the input as a file the readers can open by name; a safetensors file (READER 7) goes in
// a folder of its own, beside the config.json of the seeds' shape
static const char* as_file(const uint8_t* data, size_t size) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz_input_%d.bin", (int)getpid());
#if READER == 7
    snprintf(path, sizeof path, "/tmp/fuzz_hf_%d", (int)getpid());
    mkdir(path, 0755);
    snprintf(path, sizeof path, "/tmp/fuzz_hf_%d/config.json", (int)getpid());
    FILE* c = fopen(path, "wb");
    if (!c) abort();
    fprintf(c, "{\"n_layer\": 1, \"n_head\": 2, \"n_embd\": 8, \"n_positions\": 4, \"vocab_size\": 5}\n");
    fclose(c);
    snprintf(path, sizeof path, "/tmp/fuzz_hf_%d/model.safetensors", (int)getpid());
#endif
    FILE* f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    return path;
}

// the reader's exit, fopen, fclose and allocations become the harness's (above), in
// train_gpt2.c and its headers
#define exit fuzz_exit
#define malloc fuzz_malloc
#define calloc fuzz_calloc
#define aligned_alloc fuzz_aligned_alloc
#define free fuzz_free
#define fopen fuzz_fopen
#define fclose fuzz_fclose
#define TESTING
#undef _DEFAULT_SOURCE  // train_gpt2.c defines it again
#include "../../train_gpt2_main.c"  // the model (train_gpt2.c) and its program
#include "../../util/pairs.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
#if READER == 5
    char text[4096];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = 0;
    char* argv[64] = {"train_gpt2"};
    int argc = 1;
    for (char* p = text; argc < 63 && p < text + n; p += strlen(p) + 1)
        argv[argc++] = p;  // the arguments, separated by 0 bytes
    if (setjmp(fuzz_return) == 0) parse_args(argc, argv);
#else
    const char* path = as_file(data, size);
    if (setjmp(fuzz_return) == 0) {
#if READER == 1
        GPT2 model;
        gpt2_build_from_checkpoint(&model, path);
        gpt2_free(&model);
#elif READER == 2
        DataLoader d;
        memset(&d, 0, sizeof d);
        load_token_file(&d, path, 50257);
        free(d.tokens);
#elif READER == 3
        Tokenizer tk;
        tokenizer_init(&tk, path);
        tokenizer_free(&tk);
#elif READER == 4
        static float m[4096], v[4096];
        TrainState st;
        read_train_state(path, &st, m, v, 4096);
#elif READER == 6
        PairSet ps;
        pairs_load(&ps, path);
        PairBatch pb;
        pair_batch_alloc(&pb, 4, ps.max_src, ps.max_tgt);
        int ids[4];
        for (int i = 0; i < ps.num_pairs; i += 4) {
            int B = ps.num_pairs - i < 4 ? ps.num_pairs - i : 4;
            for (int b = 0; b < B; b++)
                ids[b] = i + b;
            pair_batch_fill(&pb, &ps, ids, B);
        }
        pairs_check_max_len(&ps, path, 16);
        pair_batch_free(&pb);
        pairs_free(&ps);
#elif READER == 7
        GPT2 model;
        gpt2_build_from_safetensors(&model, path);
        gpt2_free(&model);
#elif READER == 8
        hf_read_config(path);
#endif
    }
#endif
    fuzz_close_all();
    fuzz_free_all();
    return 0;
}
