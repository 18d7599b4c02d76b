/*
util/tokenizer.h: token ids to text and back, from an llm.c tokenizer file (magic
20240328; doc/formats.md). Plumbing. Decodes ids to bytes. Encodes text with either kind
of vocabulary: a character-level one (every token one UTF-8 character, as data/prepare
writes them) one token per character; any other with GPT-2's byte-pair encoding
(util/bpe.h; a token's id is its merge rank, as in GPT-2's vocabulary).
*/
#ifndef UTIL_TOKENIZER_H
#define UTIL_TOKENIZER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bpe.h"
#include "io.h"

typedef struct {
    int vocab_size;
    char** token_table;   // the bytes of each token, NUL-terminated for printing as text
    int* token_length;    // and how many they are (a token may hold a 0 byte)
    int eot_token;        // the first token of a generation
    int byte_to_token[256]; // the token of each single byte, -1 where there is none
    int char_level;       // every token but the end-of-text one (and the pair specials) is one
                          //   UTF-8 character
} Tokenizer;

// the names of a pair vocabulary's special tokens 0, 1, 2 (util/pairs.h, data/prepare -m pairs);
// they do not stop a vocabulary from being character level
static const char* const PAIR_SPECIAL_NAMES[3] = {"<pad>", "<bos>", "<eos>"};

static inline void tokenizer_init(Tokenizer* tk, const char* path) {
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
    tk->token_length = mallocCheck((size_t)tk->vocab_size * sizeof(int));
    tk->char_level = 1;
    for (int b = 0; b < 256; b++)
        tk->byte_to_token[b] = -1;
    for (int i = 0; i < tk->vocab_size; i++) {
        unsigned char len;
        fread_check(&len, 1, 1, f, path, "token table");
        if (len == 0) die("'%s': token %d has length 0", path, i);
        tk->token_table[i] = mallocCheck(len + 1);
        fread_check(tk->token_table[i], 1, len, f, path, "token table");
        tk->token_table[i][len] = '\0';
        tk->token_length[i] = len;
        unsigned char* bytes = (unsigned char*)tk->token_table[i];
        if (len == 1 && tk->byte_to_token[bytes[0]] < 0) tk->byte_to_token[bytes[0]] = i;
        uint32_t cp;
        int one_char = utf8_decode(bytes, len, &cp) == len && cp != UTF8_INVALID;
        int special = i < 3 && len == strlen(PAIR_SPECIAL_NAMES[i])
                      && memcmp(bytes, PAIR_SPECIAL_NAMES[i], len) == 0;
        if (i != tk->eot_token && !one_char && !special) tk->char_level = 0;
    }
    fclose(f);
}

// the lowest id whose bytes are s[0..n), or -1
static int token_of_bytes(const Tokenizer* tk, const unsigned char* s, int n) {
    if (n == 1) return tk->byte_to_token[s[0]];
    for (int i = 0; i < tk->vocab_size; i++)
        if (tk->token_length[i] == n && memcmp(tk->token_table[i], s, (size_t)n) == 0) return i;
    return -1;
}

// character level: one token per UTF-8 character of text[0..n)
static size_t encode_chars(const Tokenizer* tk, const char* text, size_t n, int* ids) {
    const unsigned char* s = (const unsigned char*)text;
    size_t count = 0;
    for (size_t p = 0; p < n;) {
        uint32_t cp;
        int len = utf8_decode(s + p, n - p, &cp);
        char quoted[160];
        if (cp == UTF8_INVALID) die("'%s' is not valid UTF-8 (byte %zu)", excerpt(text, quoted), p);
        int id = token_of_bytes(tk, s + p, len);
        if (id < 0)
            die("character '%.*s' (U+%04X) at byte %zu of '%s' is not in the tokenizer's vocabulary",
                cp < 32 ? 0 : len, text + p, cp, p, excerpt(text, quoted));
        ids[count++] = id;
        p += (size_t)len;
    }
    return count;
}

// Text to token ids: one per character for a character-level vocabulary, GPT-2's byte-pair
// encoding for any other. Returns the number of tokens; stops with an error naming a
// character the vocabulary lacks, or when the text needs more than max_tokens.
static inline int tokenizer_encode(const Tokenizer* tk, const char* text, int* out, int max_tokens) {
    size_t n = strlen(text), count;
    int* ids = mallocCheck(n * sizeof(int));  // never more tokens than bytes
    if (tk->char_level) {
        count = encode_chars(tk, text, n, ids);
    } else {
        BPE bpe;
        bpe_init(&bpe, tk->vocab_size, tk->token_table, tk->token_length);
        count = bpe_encode(&bpe, (const unsigned char*)text, n, ids);
        bpe_free(&bpe);
    }
    char quoted[160];
    if (count > (size_t)max_tokens)
        die("'%s' is %zu tokens, more than the %d that fit (the model's maxT)", excerpt(text, quoted), count,
            max_tokens);
    memcpy(out, ids, count * sizeof(int));
    free(ids);
    return (int)count;
}

// prints token id as text (its bytes, a 0 byte included), or as a number when there is no
// tokenizer (tk NULL)
static inline void print_token(const Tokenizer* tk, int id, FILE* out) {
    if (!tk) fprintf(out, "%d ", id);
    else if (id < 0 || id >= tk->vocab_size) fputs("?", out);
    else fwrite(tk->token_table[id], 1, (size_t)tk->token_length[id], out);
}

// stops with an error naming `what` if a token id is outside the vocabulary 0..V-1
static inline void check_tokens(const int* tokens, size_t n, int V, const char* what) {
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            die("%s: token %d at position %zu is outside the vocabulary (0..%d)", what, tokens[i], i, V - 1);
}

static inline void tokenizer_free(Tokenizer* tk) {
    for (int i = 0; i < tk->vocab_size; i++)
        free(tk->token_table[i]);
    free(tk->token_table);
    free(tk->token_length);
}

#endif
