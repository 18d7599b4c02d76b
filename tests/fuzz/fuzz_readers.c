/*
tests/fuzz/fuzz_readers.c: libFuzzer harnesses for every reader of outside input: the model
checkpoint, the token file, the tokenizer, the training-state file and the command line.
One file, the reader chosen at compile time (-DREADER=1..5). Build and run, e.g.:

  clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
      -DREADER=1 -o fuzz_checkpoint tests/fuzz/fuzz_readers.c -lm
  ASAN_OPTIONS=detect_leaks=0 ./fuzz_checkpoint -close_fd_mask=3 -max_total_time=600 \
      -rss_limit_mb=0 -malloc_limit_mb=2048 -dict=tests/fuzz/magic.dict CORPUS/
(-close_fd_mask=3 silences the readers' error lines; sanitizer reports still reach the terminal.)

A reader that refuses its input calls die(), which calls exit(); this file turns that exit
into a jump back here, so a refusal is a normal outcome and only a crash, a sanitizer
report, a hang or a single allocation over 2 GB is a finding. A refused input's allocations
are not freed (the program would exit), hence no leak check and no limit on the total RSS.
*/
#define _POSIX_C_SOURCE 200809L  // as train_gpt2.c, before the first system header
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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


// the input as a file the readers can open by name
static const char* as_file(const uint8_t* data, size_t size) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz_input_%d.bin", (int)getpid());
    FILE* f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    return path;
}

// the reader's exit, fopen and fclose become the harness's (above), in train_gpt2.c and its headers
#define exit fuzz_exit
#define fopen fuzz_fopen
#define fclose fuzz_fclose
#define TESTING
#undef _DEFAULT_SOURCE  // train_gpt2.c defines it again
#include "../../train_gpt2.c"

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
#endif
    }
#endif
    fuzz_close_all();
    return 0;
}
