/*
util/safetensors.h: Hugging Face's safetensors files, read and written in C. Plumbing: a
reader of the model may skip it (util/hf_gpt2.h maps GPT-2's tensors onto llm.c's layout).

The format (github.com/huggingface/safetensors): an 8-byte little-endian length N, N bytes
of JSON, then the data:
    {"wte.weight": {"dtype": "F32", "shape": [50257, 768], "data_offsets": [0, 154389504]},
     ..., "__metadata__": {"format": "pt"}}
Offsets count from the data's first byte; the tensors cover the data exactly, without gaps
or overlaps, each (product of its shape) x (its dtype's size) bytes, row-major. F32, F16
and BF16 tensors are read as float32; a tensor of another dtype may be listed (GPT-2's mask
buffers are BOOL or F32) and skipped, but not read.

Everything the header says is checked against the file's size before anything is
allocated for it, and every error is one line naming the file and, where there is one,
the tensor. The JSON reader is util/json.h.
*/
#ifndef UTIL_SAFETENSORS_H
#define UTIL_SAFETENSORS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io.h"
#include "json.h"  // the header's JSON

// ----------------------------------------------------------------------------
// the reader

#define SAFETENSORS_MAX_DIMS 8
typedef struct {
    const char* name;
    char dtype[8];                            // "F32", "F16", "BF16", ... (ST_DTYPES)
    int ndim;
    uint64_t shape[SAFETENSORS_MAX_DIMS];
    uint64_t begin, end;                      // byte offsets in the data
    uint64_t count;                           // elements: the product of the shape
} SafeTensor;

typedef struct {
    const char* path;
    FILE* f;
    uint64_t data_start;  // 8 + the header's length
    int num_tensors;
    SafeTensor* tensors;
    char* names;          // the tensors' names, decoded
} SafeTensors;

// the dtypes of the format and their sizes in bytes
static const struct { const char* name; int size; } ST_DTYPES[] = {
    {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4}, {"I16", 2}, {"I8", 1},
    {"U64", 8}, {"U32", 4}, {"U16", 2}, {"U8", 1}, {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};

static int st_dtype_size(const char* dtype) {
    for (size_t i = 0; i < sizeof ST_DTYPES / sizeof ST_DTYPES[0]; i++)
        if (strcmp(dtype, ST_DTYPES[i].name) == 0) return ST_DTYPES[i].size;
    return 0;
}

// one tensor's entry: {"dtype": ..., "shape": [...], "data_offsets": [begin, end]}
static void st_parse_entry(Json* j, SafeTensor* t) {
    int seen = 0;
    if (json_open(j, '{', '}')) do {
        char key[16];
        json_string(j, key, sizeof key);
        json_expect(j, ':');
        int field = strcmp(key, "dtype") == 0 ? 1 : strcmp(key, "shape") == 0 ? 2
                  : strcmp(key, "data_offsets") == 0 ? 4 : 0;
        if (!field) die("'%s': tensor '%s': unknown field '%s'", j->path, t->name, key);
        if (seen & field) die("'%s': tensor '%s': field '%s' appears twice", j->path, t->name, key);
        seen |= field;
        if (field == 1) {
            char dtype[16];
            json_string(j, dtype, sizeof dtype);
            if (!st_dtype_size(dtype)) die("'%s': tensor '%s': unknown dtype '%s'", j->path, t->name, dtype);
            strcpy(t->dtype, dtype);
        } else if (field == 2) {
            if (json_open(j, '[', ']')) do {
                if (t->ndim == SAFETENSORS_MAX_DIMS)
                    die("'%s': tensor '%s' has more than %d dimensions", j->path, t->name,
                        SAFETENSORS_MAX_DIMS);
                t->shape[t->ndim++] = json_size(j);
            } while (json_next(j, ']'));
        } else {
            json_expect(j, '[');
            t->begin = json_size(j);
            json_expect(j, ',');
            t->end = json_size(j);
            json_expect(j, ']');
        }
    } while (json_next(j, '}'));
    if (seen != 7) die("'%s': tensor '%s' lacks its dtype, shape or data_offsets", j->path, t->name);
}

// the header's top level: tensors, and "__metadata__" (strings only, as the format says);
// with st->tensors NULL, only counts the tensors
static void st_parse_header(Json* j, SafeTensors* st) {
    char* name = st->names;
    int n = 0;
    if (json_open(j, '{', '}')) do {
        SafeTensor* t = st->tensors ? &st->tensors[n] : NULL;
        json_string(j, name, (size_t)(st->names + j->n + 1 - name));
        json_expect(j, ':');
        if (strcmp(name, "__metadata__") == 0) {
            if (json_open(j, '{', '}')) do {
                json_string(j, NULL, 0);
                json_expect(j, ':');
                json_string(j, NULL, 0);
            } while (json_next(j, '}'));
        } else if (t) {
            memset(t, 0, sizeof *t);
            t->name = name;
            st_parse_entry(j, t);
            name += strlen(name) + 1;
            n++;
        } else {
            json_skip(j, 1);
            n++;
        }
    } while (json_next(j, '}'));
    json_end(j);
    st->num_tensors = n;
}

static int st_by_offset(const void* a, const void* b) {
    const SafeTensor *x = *(const SafeTensor* const*)a, *y = *(const SafeTensor* const*)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

static int st_by_name(const void* a, const void* b) {
    return strcmp((*(const SafeTensor* const*)a)->name, (*(const SafeTensor* const*)b)->name);
}

// every tensor's bytes agree with its dtype and shape, lie in the data, and the tensors
// cover the data without gaps or overlaps; names are unique
static void st_check_layout(const SafeTensors* st, uint64_t data_size) {
    const char* path = st->path;
    for (int i = 0; i < st->num_tensors; i++) {
        SafeTensor* t = &st->tensors[i];
        if (t->begin > t->end || t->end > data_size)
            die("'%s': tensor '%s': data_offsets [%llu, %llu] outside the data's %llu bytes%s", path, t->name,
                (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)data_size,
                t->begin <= t->end ? " (a truncated file?)" : "");
        uint64_t bytes = t->end - t->begin, count = 1;
        int size = st_dtype_size(t->dtype), fits = 1;
        for (int d = 0; d < t->ndim; d++) {  // no product can overflow: each stays within the file
            if (t->shape[d] && count > data_size / t->shape[d]) fits = 0;
            count = fits ? count * t->shape[d] : 0;
        }
        if (!fits || count * size != bytes)
            die("'%s': tensor '%s': its shape and dtype %s do not fit its %llu bytes "
                "(data_offsets [%llu, %llu])", path, t->name, t->dtype, (unsigned long long)bytes,
                (unsigned long long)t->begin, (unsigned long long)t->end);
        t->count = count;
    }
    SafeTensor** order = mallocCheck((st->num_tensors + 1) * sizeof *order);
    for (int i = 0; i < st->num_tensors; i++)
        order[i] = &st->tensors[i];
    qsort(order, st->num_tensors, sizeof *order, st_by_offset);
    uint64_t at = 0;
    for (int i = 0; i < st->num_tensors; i++) {
        if (order[i]->begin != at)
            die("'%s': tensor '%s' (data_offsets [%llu, %llu]) %s", path, order[i]->name,
                (unsigned long long)order[i]->begin, (unsigned long long)order[i]->end,
                order[i]->begin < at ? "overlaps another tensor" : "leaves a gap after the tensor before it");
        at = order[i]->end;
    }
    if (at != data_size)
        die("'%s': %llu bytes after the last tensor (the data is %llu bytes)", path,
            (unsigned long long)(data_size - at), (unsigned long long)data_size);
    qsort(order, st->num_tensors, sizeof *order, st_by_name);  // sorted, not pairwise: n log n
    for (int i = 1; i < st->num_tensors; i++)
        if (strcmp(order[i - 1]->name, order[i]->name) == 0)
            die("'%s': tensor '%s' appears twice", path, order[i]->name);
    free(order);
}

// opens and checks a safetensors file; its tensors are read with safetensors_read
static void safetensors_open(SafeTensors* st, const char* path) {
    memset(st, 0, sizeof *st);
    st->path = path;
    st->f = fopenCheck(path, "rb");
    uint64_t size = (uint64_t)file_size_of(st->f, path), n = 0;
    unsigned char len[8];
    fread_check(len, 1, 8, st->f, path, "8-byte header length of a safetensors file");
    for (int i = 7; i >= 0; i--)
        n = n << 8 | len[i];
    if (n > size - 8)
        die("'%s': header length %llu is beyond the file's %llu bytes", path, (unsigned long long)n,
            (unsigned long long)size);
    if (n < 2 || n > 100000000)
        die("'%s': header length %llu is not that of a safetensors file (2 .. 100 MB)", path,
            (unsigned long long)n);
    char* text = mallocCheck(n + 1);
    fread_check(text, 1, n, st->f, path, "header");
    text[n] = 0;
    st->names = mallocCheck(n + 1);  // decoded names are never longer than the text
    Json j = {text, n, 0, path, "header"};
    st_parse_header(&j, st);  // counts the tensors, checks the JSON
    st->tensors = callocCheck(st->num_tensors + 1, sizeof *st->tensors);
    j.pos = 0;
    st_parse_header(&j, st);
    free(text);
    st->data_start = 8 + n;
    st_check_layout(st, size - 8 - n);
}

// "[50257, 768]" into buf[256]
static const char* st_shape_text(const SafeTensor* t, char* buf) {
    int len = snprintf(buf, 256, "[");
    for (int d = 0; d < t->ndim; d++)
        len += snprintf(buf + len, 256 - len, "%s%llu", d ? ", " : "", (unsigned long long)t->shape[d]);
    snprintf(buf + len, 256 - len, "]");
    return buf;
}

static const SafeTensor* safetensors_find(const SafeTensors* st, const char* name) {
    for (int i = 0; i < st->num_tensors; i++)
        if (strcmp(st->tensors[i].name, name) == 0) return &st->tensors[i];
    return NULL;
}

// bfloat16 to float32: its bits are the top half of the float's (fast/bf16.h rounds the
// other way; util/ stands below fast/, so the two lines are written again here)
static inline float st_bf16_to_float(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

// IEEE half to float32, exactly (every half is a float32 value)
static inline float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
    if (exp == 0) {  // zero and subnormals: man x 2^-24
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    bits = sign | (exp == 31 ? 0x7F800000 | man << 13 : (exp + 112) << 23 | man << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static int st_readable(const SafeTensor* t) {
    return !strcmp(t->dtype, "F32") || !strcmp(t->dtype, "F16") || !strcmp(t->dtype, "BF16");
}

// the tensor's t->count values, as float32, into dst
static void safetensors_read(const SafeTensors* st, const SafeTensor* t, float* dst) {
    if (!st_readable(t))
        die("'%s': tensor '%s' has dtype %s: only F32, F16 and BF16 are read", st->path, t->name, t->dtype);
    if (compat_fseek(st->f, (int64_t)(st->data_start + t->begin), SEEK_SET) != 0)
        die("'%s': cannot seek to tensor '%s'", st->path, t->name);
    if (!strcmp(t->dtype, "F32")) {
        fread_check(dst, sizeof(float), t->count, st->f, st->path, t->name);
        return;
    }
    int half = !strcmp(t->dtype, "F16");
    uint16_t buf[4096];
    for (uint64_t i = 0; i < t->count; i += 4096) {
        size_t k = t->count - i < 4096 ? t->count - i : 4096;
        fread_check(buf, 2, k, st->f, st->path, t->name);
        for (size_t e = 0; e < k; e++)
            dst[i + e] = half ? half_to_float(buf[e]) : st_bf16_to_float(buf[e]);
    }
}

static void safetensors_close(SafeTensors* st) {
    fclose(st->f);
    free(st->tensors);
    free(st->names);
    memset(st, 0, sizeof *st);
}

// ----------------------------------------------------------------------------
// the writer: float32 tensors, in the order given, one after the other

typedef struct {
    const char* name;    // plain: letters, digits, '.' and '_' (no JSON escapes needed)
    int ndim;            // 1 or 2
    size_t shape[2];     // as written
    const float* data;   // row-major; with transpose, the (shape[1], shape[0]) matrix written transposed
    int transpose;
} SafeTensorOut;

// the header, {"__metadata__":{"format":"pt"},"NAME":{...},...}, into buf (NULL: measures it);
// returns its length before padding
static size_t st_header_text(char* buf, size_t cap, const SafeTensorOut* t, int n) {
    size_t len = 0, offset = 0;
#define ST_PRINT(...) len += snprintf(buf ? buf + len : NULL, buf ? cap - len : 0, __VA_ARGS__)
    ST_PRINT("{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < n; i++) {
        size_t count = t[i].shape[0] * (t[i].ndim == 2 ? t[i].shape[1] : 1);
        ST_PRINT(",\"%s\":{\"dtype\":\"F32\",\"shape\":[%zu", t[i].name, t[i].shape[0]);
        if (t[i].ndim == 2) ST_PRINT(",%zu", t[i].shape[1]);
        ST_PRINT("],\"data_offsets\":[%zu,%zu]}", offset, offset + 4 * count);
        offset += 4 * count;
    }
    ST_PRINT("}");
#undef ST_PRINT
    return len;
}

// writes path atomically (util/io.h); the header is padded with spaces to a multiple of 8
// bytes, so that the data is aligned
static void safetensors_write(const char* path, const SafeTensorOut* t, int n) {
    size_t len = st_header_text(NULL, 0, t, n), padded = (len + 7) / 8 * 8;
    char* header = mallocCheck(padded + 1);
    st_header_text(header, len + 1, t, n);
    memset(header + len, ' ', padded - len);
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    unsigned char size[8];
    for (int i = 0; i < 8; i++)
        size[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    fwrite_check(size, 1, 8, f, tmp);
    fwrite_check(header, 1, padded, f, tmp);
    for (int i = 0; i < n; i++) {
        size_t rows = t[i].shape[0], cols = t[i].ndim == 2 ? t[i].shape[1] : 1;
        if (!t[i].transpose) {
            fwrite_check(t[i].data, sizeof(float), rows * cols, f, tmp);
            continue;
        }
        float* row = mallocCheck(cols * sizeof(float));
        for (size_t r = 0; r < rows; r++) {  // row r of the transpose is column r of data
            for (size_t c = 0; c < cols; c++)
                row[c] = t[i].data[c * rows + r];
            fwrite_check(row, sizeof(float), cols, f, tmp);
        }
        free(row);
    }
    atomic_commit(f, tmp, path);
    free(header);
}

#endif
