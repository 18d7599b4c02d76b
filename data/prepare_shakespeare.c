/*
Turns Tiny Shakespeare (data/tiny_shakespeare.txt) into llm.c-format files for a
character-level model, the way nanoGPT's shakespeare_char/prepare.py does:

- the vocabulary is the sorted set of distinct bytes in the text (65 for Tiny Shakespeare);
- the first 90% of the characters are the training split, the last 10% validation;
- data/tiny_shakespeare_train.bin, data/tiny_shakespeare_val.bin: token files
  (magic 20240520, version 1, N, then N uint16 tokens);
- data/tiny_shakespeare_tokenizer.bin: tokenizer (magic 20240328, version 2), one
  byte per token. A character-level vocabulary has no end-of-text token, so slot 3
  holds the id of '\n': our sampler and llm.c's start generating from that token.

Usage: prepare_shakespeare [input.txt] [output_prefix]
(defaults: data/tiny_shakespeare.txt data/tiny_shakespeare)
*/
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

static void die(const char* what, const char* path) {
    fprintf(stderr, "prepare_shakespeare: %s '%s'\n", what, path);
    exit(1);
}

// writes header + payload to path.tmp, then renames, so a reader never sees half a file
static void write_file(const char* path, const int32_t header[256], const void* payload, size_t nbytes) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE* f = fopen(tmp, "wb");
    if (!f) die("cannot write", tmp);
    if (fwrite(header, sizeof(int32_t), 256, f) != 256 || fwrite(payload, 1, nbytes, f) != nbytes) die("short write to", tmp);
    if (fclose(f) != 0) die("cannot close", tmp);
    if (rename(tmp, path) != 0) die("cannot rename onto", path);
}

static void write_tokens(const char* path, const uint16_t* tokens, int32_t n) {
    int32_t header[256] = {0};
    header[0] = 20240520; header[1] = 1; header[2] = n;
    write_file(path, header, tokens, (size_t)n * sizeof(uint16_t));
}

int main(int argc, char** argv) {
    const char* input = argc > 1 ? argv[1] : "data/tiny_shakespeare.txt";
    const char* prefix = argc > 2 ? argv[2] : "data/tiny_shakespeare";
    FILE* f = fopen(input, "rb");
    if (!f) die("cannot open", input);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n <= 1 || n > 0x7fffffffL) die("empty or too large text", input);
    unsigned char* text = malloc((size_t)n);
    if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) die("cannot read", input);
    fclose(f);

    // the vocabulary: distinct bytes in increasing order, byte -> token id
    int id_of[256], vocab_size = 0;
    unsigned char byte_of[256];
    int seen[256] = {0};
    for (long i = 0; i < n; i++) seen[text[i]] = 1;
    for (int b = 0; b < 256; b++) {
        id_of[b] = seen[b] ? vocab_size : -1;
        if (seen[b]) byte_of[vocab_size++] = (unsigned char)b;
    }

    uint16_t* tokens = malloc((size_t)n * sizeof(uint16_t));
    if (!tokens) die("out of memory reading", input);
    for (long i = 0; i < n; i++) tokens[i] = (uint16_t)id_of[text[i]];
    int32_t n_train = (int32_t)(n * 9 / 10);   // nanoGPT: data[:int(n*0.9)]
    char path[4096];
    snprintf(path, sizeof path, "%s_train.bin", prefix);
    write_tokens(path, tokens, n_train);
    snprintf(path, sizeof path, "%s_val.bin", prefix);
    write_tokens(path, tokens + n_train, (int32_t)(n - n_train));

    // tokenizer: per token a uint8 length (1) and the byte itself
    unsigned char payload[512];
    for (int i = 0; i < vocab_size; i++) { payload[2 * i] = 1; payload[2 * i + 1] = byte_of[i]; }
    int32_t header[256] = {0};
    header[0] = 20240328; header[1] = 2; header[2] = vocab_size;
    header[3] = seen['\n'] ? id_of['\n'] : 0;
    snprintf(path, sizeof path, "%s_tokenizer.bin", prefix);
    write_file(path, header, payload, (size_t)(2 * vocab_size));

    printf("prepare_shakespeare: %ld characters, vocabulary %d, %d train and %ld val tokens -> %s_{train,val,tokenizer}.bin\n",
           n, vocab_size, n_train, n - n_train, prefix);
    free(text); free(tokens);
    return 0;
}
