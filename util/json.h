/*
util/json.h: the JSON reader, strict and small: JSON's grammar (objects, arrays, strings
with escapes, numbers, true, false, null; nested at most 64 deep), nothing more. It reads
safetensors headers (util/safetensors.h) and config.json's top-level numbers and strings
(json_flat_read). Plumbing: a reader of the model may skip it.
*/
#ifndef UTIL_JSON_H
#define UTIL_JSON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io.h"

// ----------------------------------------------------------------------------
// JSON, strictly: a cursor over the text; any error names the file and the byte

typedef struct {
    const char* s;
    size_t n, pos;
    const char* path;  // the file, for errors
    const char* what;  // "header", "config"
} Json;

static void json_fail(const Json* j, const char* msg) {
    die("'%s': %s JSON: %s at byte %zu", j->path, j->what, msg, j->pos);
}

// the next character that is not white space, or -1 at the end
static int json_peek(Json* j) {
    while (j->pos < j->n && j->s[j->pos] && strchr(" \t\r\n", j->s[j->pos]))
        j->pos++;
    return j->pos < j->n ? (unsigned char)j->s[j->pos] : -1;
}

static void json_expect(Json* j, char c) {
    if (json_peek(j) != c) {
        char msg[32];
        snprintf(msg, sizeof msg, "expected '%c'", c);
        json_fail(j, msg);
    }
    j->pos++;
}

// an object's or array's opening; returns 0 (and consumes the closing) when it is empty
static int json_open(Json* j, char open, char close) {
    json_expect(j, open);
    if (json_peek(j) != close) return 1;
    j->pos++;
    return 0;
}

// after a member or element: 1 if another follows (','), 0 at the closing bracket
static int json_next(Json* j, char close) {
    int c = json_peek(j);
    if (c == ',' || c == close) {
        j->pos++;
        return c == ',';
    }
    json_fail(j, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    return 0;
}

static int json_hex(Json* j) {
    int v = 0;
    for (int i = 0; i < 4; i++, j->pos++) {
        int c = j->pos < j->n ? j->s[j->pos] : 0;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) json_fail(j, "bad \\u escape");
        v = 16 * v + d;
    }
    return v;
}

// a string, decoded (escapes; \uXXXX as UTF-8) into out[cap] when out is not NULL
static void json_string(Json* j, char* out, size_t cap) {
    json_expect(j, '"');
    size_t len = 0;
    for (;;) {
        if (j->pos >= j->n) json_fail(j, "unterminated string");
        unsigned char c = j->s[j->pos++], bytes[3];
        int nb = 1;
        bytes[0] = c;
        if (c == '"') break;
        if (c < 0x20) json_fail(j, "control character in a string");
        if (c == '\\') {
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *e;
            c = j->pos < j->n ? j->s[j->pos++] : 0;
            if (c == 'u') {
                int u = json_hex(j);
                if (u == 0) json_fail(j, "\\u0000 in a string");
                nb = u < 0x80 ? 1 : u < 0x800 ? 2 : 3;
                bytes[0] = nb == 1 ? u : nb == 2 ? 0xC0 | u >> 6 : 0xE0 | u >> 12;
                if (nb == 2) bytes[1] = 0x80 | (u & 0x3F);
                if (nb == 3) bytes[1] = 0x80 | ((u >> 6) & 0x3F), bytes[2] = 0x80 | (u & 0x3F);
            } else if (c && (e = strchr(from, c))) {
                bytes[0] = to[e - from];
            } else {
                json_fail(j, "bad escape in a string");
            }
        }
        if (out && len + nb >= cap) json_fail(j, "string too long");
        if (out) memcpy(out + len, bytes, nb);
        len += nb;
    }
    if (out) out[len] = 0;
}

// a number, by JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
static double json_number(Json* j) {
    json_peek(j);
    size_t start = j->pos;
    const char* s = j->s;
#define JSON_DIGITS(at_least_one)                                                      \
    do {                                                                               \
        if ((at_least_one) && !(j->pos < j->n && s[j->pos] >= '0' && s[j->pos] <= '9')) \
            json_fail(j, "bad number");                                                \
        while (j->pos < j->n && s[j->pos] >= '0' && s[j->pos] <= '9') j->pos++;         \
    } while (0)
    if (j->pos < j->n && s[j->pos] == '-') j->pos++;
    if (j->pos < j->n && s[j->pos] == '0') j->pos++;
    else JSON_DIGITS(1);
    if (j->pos < j->n && s[j->pos] == '.') { j->pos++; JSON_DIGITS(1); }
    if (j->pos < j->n && (s[j->pos] == 'e' || s[j->pos] == 'E')) {
        j->pos++;
        if (j->pos < j->n && (s[j->pos] == '+' || s[j->pos] == '-')) j->pos++;
        JSON_DIGITS(1);
    }
#undef JSON_DIGITS
    char text[64];
    if (j->pos - start >= sizeof text) json_fail(j, "number too long");
    memcpy(text, s + start, j->pos - start);
    text[j->pos - start] = 0;
    return strtod(text, NULL);
}

// a whole number 0 .. 2^53 (sizes and offsets: exact in a double)
static uint64_t json_size(Json* j) {
    json_peek(j);
    size_t start = j->pos;
    double v = json_number(j);
    for (size_t i = start; i < j->pos; i++)
        if (!(j->s[i] >= '0' && j->s[i] <= '9')) { j->pos = start; json_fail(j, "expected a whole number"); }
    if (v > 9007199254740992.0) { j->pos = start; json_fail(j, "number too large"); }
    return (uint64_t)v;
}

static void json_literal(Json* j, const char* word) {
    size_t n = strlen(word);
    if (j->n - j->pos < n || memcmp(j->s + j->pos, word, n) != 0) json_fail(j, "unexpected character");
    j->pos += n;
}

// any value, checked and skipped
static void json_skip(Json* j, int depth) {
    if (depth > 64) json_fail(j, "nested too deeply");
    int c = json_peek(j);
    if (c == '{') {
        if (json_open(j, '{', '}')) do {
            json_string(j, NULL, 0);
            json_expect(j, ':');
            json_skip(j, depth + 1);
        } while (json_next(j, '}'));
    } else if (c == '[') {
        if (json_open(j, '[', ']')) do json_skip(j, depth + 1); while (json_next(j, ']'));
    } else if (c == '"') {
        json_string(j, NULL, 0);
    } else if (c == 't' || c == 'f' || c == 'n') {
        json_literal(j, c == 't' ? "true" : c == 'f' ? "false" : "null");
    } else {
        json_number(j);
    }
}

// after the top-level value only white space may follow (safetensors pads with spaces)
static void json_end(Json* j) {
    if (json_peek(j) != -1) json_fail(j, "text after the top-level object");
}

// ----------------------------------------------------------------------------
// config.json: the top-level numbers, strings and true/false/null of a JSON object
// (nested values are checked and skipped)

#define JSON_FLAT_MAX 1024
typedef struct {
    const char *key, *text;  // decoded, in JsonFlat's strings; text: a string's value, or ""
    double number;
    char kind;               // 'n' number, 's' string, 't' true, 'f' false, '0' null
} JsonMember;
typedef struct {
    int n;
    JsonMember item[JSON_FLAT_MAX];
    char* strings;           // the decoded keys and strings (never longer than the text)
} JsonFlat;

// a string into the strings buffer at *at, which then points past it
static const char* json_flat_string(Json* j, char** at, const char* end) {
    char* s = *at;
    json_string(j, s, (size_t)(end - s));
    *at = s + strlen(s) + 1;
    return s;
}

static JsonFlat* json_flat_read(const char* path) {
    FILE* f = fopenCheck(path, "rb");
    long long size = file_size_of(f, path);
    if (size > (1 << 20)) die("'%s' is %lld bytes: a config.json has at most 1 MB", path, size);
    char* text = mallocCheck(size + 1);
    fread_check(text, 1, size, f, path, "text");
    fclose(f);
    JsonFlat* flat = callocCheck(1, sizeof *flat);
    char* at = flat->strings = mallocCheck(size + 1);
    const char* end = flat->strings + size + 1;
    Json j = {text, (size_t)size, 0, path, "config"};
    if (json_open(&j, '{', '}')) do {
        if (flat->n == JSON_FLAT_MAX) json_fail(&j, "more than 1024 members");
        JsonMember* it = &flat->item[flat->n];
        it->key = json_flat_string(&j, &at, end);
        for (int k = 0; k < flat->n; k++)  // Python's json keeps the last, a first-wins reader the first
            if (strcmp(flat->item[k].key, it->key) == 0)
                die("'%s': the key \"%s\" appears twice", path, it->key);
        it->text = "";
        json_expect(&j, ':');
        int c = json_peek(&j);
        it->kind = c == '"' ? 's' : c == 't' ? 't' : c == 'f' ? 'f' : c == 'n' ? '0'
                 : c == '-' || (c >= '0' && c <= '9') ? 'n' : 0;
        if (it->kind == 's') it->text = json_flat_string(&j, &at, end);
        else if (it->kind == 'n') it->number = json_number(&j);
        else json_skip(&j, 1);  // a literal, or an object or array (not kept)
        if (it->kind) flat->n++;
    } while (json_next(&j, '}'));
    json_end(&j);
    free(text);
    return flat;
}

static void json_flat_free(JsonFlat* flat) {
    free(flat->strings);
    free(flat);
}

// the member called key, or NULL
static const char* json_flat_find(const JsonFlat* flat, const char* key, char* kind, double* number) {
    for (int i = 0; i < flat->n; i++)
        if (strcmp(flat->item[i].key, key) == 0) {
            *kind = flat->item[i].kind;
            *number = flat->item[i].number;
            return flat->item[i].text;
        }
    return NULL;
}

#endif
