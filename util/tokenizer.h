/*
util/tokenizer.h: token ids to text and back, from an llm.c tokenizer file (magic
20240328; doc/formats.md). Plumbing. Decodes ids to bytes; for a vocabulary of single
bytes (character level) it also encodes text.
*/
#ifndef UTIL_TOKENIZER_H
#define UTIL_TOKENIZER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "io.h"

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
    if (h[1] != 1 && h[1] != 2)
        die("'%s': tokenizer version %d is not supported (expected 1 or 2)", path, h[1]);
    if (h[2] <= 0 || h[2] > 65536) die("'%s': implausible vocabulary size %d", path, h[2]);
    tk->vocab_size = h[2];
    tk->eot_token = h[1] == 1 ? 50256 : h[3];
    if (tk->eot_token < 0 || tk->eot_token >= tk->vocab_size) tk->eot_token = 0;
    tk->token_table = mallocCheck((size_t)tk->vocab_size * sizeof(char*));
    for (int b = 0; b < 256; b++)
        tk->byte_to_token[b] = -1;
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

// prints token id as text, or as a number when there is no tokenizer (tk NULL)
static void print_token(const Tokenizer* tk, int id, FILE* out) {
    if (tk) fputs(tokenizer_decode(tk, id), out);
    else fprintf(out, "%d ", id);
}

// stops with an error naming `what` if a token id is outside the vocabulary 0..V-1
static void check_tokens(const int* tokens, size_t n, int V, const char* what) {
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            die("%s: token %d at position %zu is outside the vocabulary (0..%d)", what, tokens[i], i, V - 1);
}

void tokenizer_free(Tokenizer* tk) {
    for (int i = 0; i < tk->vocab_size; i++)
        free(tk->token_table[i]);
    free(tk->token_table);
}

#endif
