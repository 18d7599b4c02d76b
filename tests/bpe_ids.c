/*
tests/bpe_ids.c: GPT-2's ids of many texts by util/bpe.h, for the differential fuzzing
against tiktoken (tests/tiktoken_fuzz.js, tests/tiktoken_unicode.js).

    tests/bpe_ids TOKENIZER.bin < texts > ids

stdin: one text per line, as the hex of its bytes; stdout: one line per text, its ids
separated by spaces (an empty line for an empty text). Each text is encoded whole, and
again in the parts data/prepare may cut it into (every place bpe_next_cut allows); parts
that give other ids are an error, so the fuzzing checks data/prepare's chunking too.
*/
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../util/io.h"
#include "../util/tokenizer.h"  // and util/bpe.h

static int hex_value(int c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// text[0..n) encoded in the parts cut at every bpe_next_cut, into ids; returns their count
static size_t encode_in_parts(const BPE* bpe, const unsigned char* text, size_t n, int* ids) {
    size_t count = 0;
    for (size_t start = 0, cut; start < n; start = cut) {
        cut = bpe_next_cut(text, n, start + 1);
        count += bpe_encode(bpe, text + start, cut - start, ids + count);
    }
    return count;
}

int main(int argc, char** argv) {
    error_program = "bpe_ids";
    if (argc != 2) die("usage: tests/bpe_ids TOKENIZER.bin < hex texts, one a line");
    Tokenizer tk;
    tokenizer_init(&tk, argv[1]);
    BPE bpe;
    bpe_init(&bpe, tk.vocab_size, tk.token_table, tk.token_length);
    char* line = NULL;
    size_t cap = 0;
    ssize_t got;
    for (long number = 1; (got = getline(&line, &cap, stdin)) >= 0; number++) {
        size_t hex = (size_t)got;
        while (hex > 0 && (line[hex - 1] == '\n' || line[hex - 1] == '\r'))
            hex--;
        unsigned char* text = mallocCheck(hex / 2 + 1);
        int* whole = mallocCheck((hex / 2 + 1) * sizeof(int));
        int* parts = mallocCheck((hex / 2 + 1) * sizeof(int));
        size_t n = 0;
        for (size_t i = 0; i < hex; i += 2, n++) {
            int hi = hex_value(line[i]), lo = i + 1 < hex ? hex_value(line[i + 1]) : -1;
            if (hi < 0 || lo < 0) die("stdin line %ld: not lowercase hex of whole bytes", number);
            text[n] = (unsigned char)(16 * hi + lo);
        }
        size_t count = bpe_encode(&bpe, text, n, whole);
        if (encode_in_parts(&bpe, text, n, parts) != count || memcmp(whole, parts, count * sizeof(int)) != 0)
            die("stdin line %ld: encoded in data/prepare's parts (bpe_next_cut) it gives other ids", number);
        for (size_t i = 0; i < count; i++)
            printf(i ? " %d" : "%d", whole[i]);
        putchar('\n');
        free(text);
        free(whole);
        free(parts);
    }
    free(line);
    bpe_free(&bpe);
    tokenizer_free(&tk);
    return 0;
}
