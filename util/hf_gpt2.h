/*
util/hf_gpt2.h: Hugging Face's GPT-2 checkpoints (model.safetensors + config.json), read
into llm.c's checkpoint layout and written back from it. Plumbing that knows no model:
it speaks llm.c's layout (LlmcShape, the shape its checkpoint header holds; the 16
parameter tensors one after the other in llm.c's order, as a model_*.bin holds them),
and train_gpt2.c maps that onto its GPT2. -e path/model.safetensors loads gpt2,
gpt2-medium/-large/-xl or distilgpt2; -hf DIR writes DIR/model.safetensors and
DIR/config.json, which transformers' GPT2LMHeadModel loads.

Hugging Face names and shapes, against llm.c's (train_gpt2.c's ParameterTensors):
    wte.weight (V,C)                 wte (Vp,C): rows V..Vp-1 are zero padding
    wpe.weight (maxT,C)              wpe
    h.N.ln_1.weight/bias (C)         ln1w/ln1b, layer N's row
    h.N.attn.c_attn.weight (C,3C)    qkvw (3C,C): transposed
    h.N.attn.c_attn.bias (3C)        qkvb
    h.N.attn.c_proj.weight (C,C)     attprojw (C,C): transposed (square: a missing transpose
                                     would load without any shape error; tests catch it)
    h.N.attn.c_proj.bias (C)         attprojb
    h.N.ln_2.weight/bias (C)         ln2w/ln2b
    h.N.mlp.c_fc.weight (C,4C)       fcw (4C,C): transposed
    h.N.mlp.c_fc.bias (4C)           fcb
    h.N.mlp.c_proj.weight (4C,C)     fcprojw (C,4C): transposed
    h.N.mlp.c_proj.bias (C)          fcprojb
    ln_f.weight/bias (C)             lnfw/lnfb
GPT-2's Conv1D computes y = x W + b with W stored (in, out); our matmul computes
y = x W^T + b with W stored (out, in), so those four weights are transposed either way.
Names may carry the prefix "transformer." (GPT2LMHeadModel's own state dict); the mask
buffers h.N.attn.bias and h.N.attn.masked_bias are skipped; lm_head.weight, where present,
must be wte itself (GPT-2 ties them), and stands for it in a file that kept only the head.
*/
#ifndef UTIL_HF_GPT2_H
#define UTIL_HF_GPT2_H

#include <ctype.h>
#include <sys/stat.h>
#include "safetensors.h"

// GPT-2's shape as llm.c's checkpoint header holds it (doc/formats.md)
typedef struct {
    int max_seq_len, vocab_size, num_layers, num_heads, channels, padded_vocab_size;
} LlmcShape;

// the 16 parameter tensors' sizes in floats, in llm.c's order (wte, wpe, ln1w, ..., lnfb)
static void llmc_param_sizes(LlmcShape c, size_t sizes[16]) {
    size_t C = c.channels, L = c.num_layers;
    size_t s[16] = {c.padded_vocab_size * C, c.max_seq_len * C, L * C, L * C, L * 3 * C * C, L * 3 * C,
                    L * C * C, L * C, L * C, L * C, L * 4 * C * C, L * 4 * C, L * C * 4 * C, L * C, C, C};
    memcpy(sizes, s, sizeof s);
}

// one tensor of the file and where it goes in llm.c's layout
typedef struct {
    char name[96];
    size_t rows, cols;  // its shape in the file; cols 0: a vector
    int param, layer;   // llm.c's parameter tensor (0-15), and the layer's slice (-1: all)
    int transpose;      // a Conv1D weight: (in, out) in the file, (out, in) here
} HFPlace;

// the 12 tensors of a layer, in our parameter order: parameter, shape in units of C, transposed
static const struct { const char* name; int param, rows, cols, transpose; } HF_LAYER[12] = {
    {"ln_1.weight", 2, 1, 0, 0},        {"ln_1.bias", 3, 1, 0, 0},
    {"attn.c_attn.weight", 4, 1, 3, 1}, {"attn.c_attn.bias", 5, 3, 0, 0},
    {"attn.c_proj.weight", 6, 1, 1, 1}, {"attn.c_proj.bias", 7, 1, 0, 0},
    {"ln_2.weight", 8, 1, 0, 0},        {"ln_2.bias", 9, 1, 0, 0},
    {"mlp.c_fc.weight", 10, 1, 4, 1},   {"mlp.c_fc.bias", 11, 4, 0, 0},
    {"mlp.c_proj.weight", 12, 4, 1, 1}, {"mlp.c_proj.bias", 13, 1, 0, 0}};

// every tensor of a GPT-2 of shape c (4 + 12 L of them) into places, in the file's order:
// wte, wpe, the layers, ln_f
static int hf_places(LlmcShape c, const char* prefix, HFPlace* places) {
    size_t C = c.channels;
    HFPlace top[4] = {{"wte.weight", c.vocab_size, C, 0, -1, 0}, {"wpe.weight", c.max_seq_len, C, 1, -1, 0},
                      {"ln_f.weight", C, 0, 14, -1, 0}, {"ln_f.bias", C, 0, 15, -1, 0}};
    int n = 0;
    for (int k = 0; k < 4; k++) {
        if (k == 2)
            for (int l = 0; l < c.num_layers; l++)
                for (int i = 0; i < 12; i++, n++) {
                    HFPlace p = {"", HF_LAYER[i].rows * C, HF_LAYER[i].cols * C, HF_LAYER[i].param, l,
                                 HF_LAYER[i].transpose};
                    snprintf(p.name, sizeof p.name, "%.16sh.%d.%s", prefix, l, HF_LAYER[i].name);
                    places[n] = p;
                }
        places[n] = top[k];
        snprintf(places[n++].name, sizeof places[0].name, "%.16s%.32s", prefix, top[k].name);
    }
    return n;
}

// where a place's values live among parameters of llm.c's layout
static float* hf_destination(float* params, LlmcShape c, const HFPlace* p) {
    size_t sizes[16];
    llmc_param_sizes(c, sizes);
    float* t = params;
    for (int k = 0; k < p->param; k++)
        t += sizes[k];
    return p->layer < 0 ? t : t + (size_t)p->layer * (sizes[p->param] / c.num_layers);
}

// a whole number of config.json, 1 .. 2^30
static int hf_config_int(const JsonFlat* flat, const char* path, const char* key, const char* key2) {
    char kind = 0;
    double v = 0;
    if (!json_flat_find(flat, key, &kind, &v) && key2) json_flat_find(flat, key = key2, &kind, &v);
    if (kind == 'n' && v == floor(v) && v > (1 << 30))  // (2^40: a whole number, but too large)
        die("'%s': %s is %.0f, larger than the 2^30 = 1073741824 this program reads", path, key, v);
    if (kind != 'n' || v != floor(v) || v < 1)
        die("'%s': %s must be a whole number >= 1%s", path, key, kind ? "" : " (missing)");
    return (int)v;
}

// config.json's shape and the settings GPT-2 has (anything else is refused with its key);
// hf_config_untied: it says tie_word_embeddings false (a file without lm_head.weight gets a note)
static int hf_config_untied;
static LlmcShape hf_read_config(const char* path) {
    JsonFlat* flat = json_flat_read(path);
    LlmcShape c = {.num_layers = hf_config_int(flat, path, "n_layer", NULL),
                    .num_heads = hf_config_int(flat, path, "n_head", NULL),
                    .channels = hf_config_int(flat, path, "n_embd", NULL),
                    .max_seq_len = hf_config_int(flat, path, "n_positions", "n_ctx"),
                    .vocab_size = hf_config_int(flat, path, "vocab_size", NULL)};
    char kind = 0;
    double v = 0;
    const char* s = json_flat_find(flat, "activation_function", &kind, &v);
    if (s && (kind != 's' || (strcmp(s, "gelu_new") && strcmp(s, "gelu_pytorch_tanh"))))
        die("'%s': activation_function '%s': this GPT-2 has GELU's tanh form (gelu_new)", path, s);
    s = json_flat_find(flat, "model_type", &kind, &v);
    if (s && (kind != 's' || strcmp(s, "gpt2"))) die("'%s': model_type '%s' is not gpt2", path, s);
    if (json_flat_find(flat, "layer_norm_epsilon", &kind, &v) && (kind != 'n' || fabs(v - 1e-5) > 1e-12))
        die("'%s': layer_norm_epsilon must be 1e-5 (GPT-2's, this program's layernorm)", path);
    if (json_flat_find(flat, "n_inner", &kind, &v) && kind == 'n' && v != 4.0 * c.channels)
        die("'%s': n_inner %g: this GPT-2's MLP is 4 x n_embd = %d wide", path, v, 4 * c.channels);
    const char* off[3] = {"scale_attn_by_inverse_layer_idx", "add_cross_attention", "scale_attn_weights"};
    for (int k = 0; k < 3; k++)
        if (json_flat_find(flat, off[k], &kind, &v) && kind == (k < 2 ? 't' : 'f'))
            die("'%s': %s %s is not GPT-2's attention", path, off[k], k < 2 ? "true" : "false");
    hf_config_untied = json_flat_find(flat, "tie_word_embeddings", &kind, &v) && kind == 'f';
    json_flat_free(flat);
    c.padded_vocab_size = (c.vocab_size + 127) / 128 * 128;
    return c;
}

// the layer N of a name "PREFIXh.N.REST", with *rest pointing at REST; -1 for other names
static int hf_layer_of(const char* name, const char* prefix, const char** rest) {
    size_t plen = strlen(prefix);
    int l, at = 0;
    if (strncmp(name, prefix, plen) != 0 || strncmp(name + plen, "h.", 2) != 0 ||
        !isdigit((unsigned char)name[plen + 2]) || strspn(name + plen + 2, "0123456789") > 4 ||
        sscanf(name + plen, "h.%d.%n", &l, &at) != 1 || at == 0 || l >= (1 << 12))
        return -1;
    *rest = name + plen + at;
    return l;
}

// a tensor by name; wte.weight, when a file kept only its tied twin, is lm_head.weight
static const SafeTensor* hf_find(const SafeTensors* st, const char* name) {
    const SafeTensor* t = safetensors_find(st, name);
    size_t n = strlen(name);
    if (!t && n >= 10 && strcmp(name + n - 10, "wte.weight") == 0) t = safetensors_find(st, "lm_head.weight");
    return t;
}

// without config.json: L from the h.N names, C and V from wte, maxT from wpe, NH = C/64
static LlmcShape hf_infer_config(const SafeTensors* st, const char* prefix) {
    char name[128];
    snprintf(name, sizeof name, "%swte.weight", prefix);
    const SafeTensor* wte = hf_find(st, name);
    snprintf(name, sizeof name, "%swpe.weight", prefix);
    const SafeTensor* wpe = safetensors_find(st, name);
    if (!wte || !wpe || wte->ndim != 2 || wpe->ndim != 2 || wte->shape[1] > (1 << 20) ||
        wte->shape[0] > (1 << 20) || wpe->shape[0] > (1 << 20))
        die("'%s': without config.json the shape is read from %swte.weight and %swpe.weight, two "
            "matrices: %s", st->path, prefix, prefix, !wte || !wpe ? "missing" : "not of a GPT-2");
    LlmcShape c = {.vocab_size = (int)wte->shape[0], .channels = (int)wte->shape[1],
                    .max_seq_len = (int)wpe->shape[0]};
    for (int i = 0; i < st->num_tensors; i++) {
        const char* rest;
        int l = hf_layer_of(st->tensors[i].name, prefix, &rest);
        if (l + 1 > c.num_layers) c.num_layers = l + 1;
    }
    if (c.channels % 64 != 0 || c.channels == 0)
        die("'%s': without config.json the heads are taken as C/64, but C = %d; put config.json beside it",
            st->path, c.channels);
    c.num_heads = c.channels / 64;
    c.padded_vocab_size = (c.vocab_size + 127) / 128 * 128;
    printf("note: no config.json beside '%s': assumed L=%d (the h.N names), C=%d and V=%d (wte), "
           "maxT=%d (wpe), NH=C/64=%d\n", st->path, c.num_layers, c.channels, c.vocab_size, c.max_seq_len,
           c.num_heads);
    return c;
}

// the file's tensor for place p, checked: present, readable, of p's shape
static const SafeTensor* hf_tensor(const SafeTensors* st, const HFPlace* p, const char* source) {
    const SafeTensor* t = hf_find(st, p->name);
    if (!t) die("'%s': tensor '%s' is missing", st->path, p->name);
    SafeTensor want = {.ndim = p->cols ? 2 : 1, .shape = {p->rows, p->cols}};
    if (t->ndim != want.ndim || t->shape[0] != p->rows || (want.ndim == 2 && t->shape[1] != p->cols)) {
        char has[256], says[256];
        die("'%s': tensor '%s' has shape %s, %s says %s", st->path, p->name, st_shape_text(t, has),
            source, st_shape_text(&want, says));
    }
    if (!st_readable(t))
        die("'%s': tensor '%s' has dtype %s: only F32, F16 and BF16 are read", st->path, p->name, t->dtype);
    return t;
}

// h.N.attn.bias or h.N.attn.masked_bias (N < L): GPT-2's causal mask and its fill value,
// buffers rather than weights
static int hf_is_mask_buffer(const char* name, const char* prefix, int L) {
    const char* rest;
    int l = hf_layer_of(name, prefix, &rest);
    return l >= 0 && l < L && (!strcmp(rest, "attn.bias") || !strcmp(rest, "attn.masked_bias"));
}

// a tensor of the file that is none of the model's: the mask buffers (skipped), the tied head
static void hf_check_extra(const SafeTensors* st, const SafeTensor* t, const char* prefix, LlmcShape c) {
    const char* s = t->name;
    if (hf_is_mask_buffer(s, prefix, c.num_layers)) return;
    if (strcmp(s, "lm_head.weight") == 0) {
        HFPlace head = {"lm_head.weight", c.vocab_size, c.channels, 0, -1, 0};
        hf_tensor(st, &head, "wte.weight");
        return;
    }
    die("'%s': unexpected tensor '%s': not part of GPT-2 (GPT2LMHeadModel)", st->path, s);
}

// lm_head.weight, when the file has one, must hold wte's values: GPT-2's head is tied
static void hf_check_tied_head(const SafeTensors* st, const float* wte) {
    const SafeTensor* head = safetensors_find(st, "lm_head.weight");
    if (!head) return;
    float* values = mallocCheck(head->count * sizeof(float));
    safetensors_read(st, head, values);
    if (memcmp(values, wte, head->count * sizeof(float)) != 0)
        die("'%s': lm_head.weight differs from wte.weight: an untied output head, which GPT-2 (and this "
            "program) does not have", st->path);
    free(values);
}

// a model.safetensors being read: its shape (config.json from the same directory, or
// inferred from the tensors), then its tensors checked, then read
typedef struct {
    SafeTensors st;
    const char* prefix;     // "transformer." (GPT2LMHeadModel's own names) or ""
    char config_path[4096];
    int have_config;
    LlmcShape shape;
    int n;                  // the tensors of the model, 4 + 12 L
    HFPlace* places;
    const SafeTensor** tensors;
} HFReader;

// -e path/model.safetensors: opens the file and reads its shape (nothing allocated yet for
// the weights); the caller checks the shape, names config_path or path in its errors
static void hf_open(HFReader* r, const char* path) {
    memset(r, 0, sizeof *r);
    safetensors_open(&r->st, path);
    r->prefix = "";  // GPT2LMHeadModel's own names: every weight under "transformer."
    for (int i = 0; i < r->st.num_tensors; i++)
        if (strncmp(r->st.tensors[i].name, "transformer.", 12) == 0) r->prefix = "transformer.";
    const char* slash = strrchr(path, '/');
    snprintf(r->config_path, sizeof r->config_path, "%.*sconfig.json", slash ? (int)(slash - path + 1) : 0,
             path);
    struct stat sb;
    r->have_config = stat(r->config_path, &sb) == 0;
    r->shape = r->have_config ? hf_read_config(r->config_path) : hf_infer_config(&r->st, r->prefix);
}

// every tensor of the shape present, readable and of its shape; nothing else but the mask
// buffers and the tied head: all checked before the weights are allocated
static void hf_check(HFReader* r) {
    r->n = 4 + 12 * r->shape.num_layers;
    r->places = mallocCheck(r->n * sizeof *r->places);
    hf_places(r->shape, r->prefix, r->places);
    char* known = callocCheck(r->st.num_tensors, 1);
    r->tensors = mallocCheck(r->n * sizeof *r->tensors);
    for (int i = 0; i < r->n; i++) {
        const char* source = r->have_config ? "config.json" : "the shape assumed";
        r->tensors[i] = hf_tensor(&r->st, &r->places[i], source);
        known[r->tensors[i] - r->st.tensors] = 1;
    }
    for (int i = 0; i < r->st.num_tensors; i++)
        if (!known[i]) hf_check_extra(&r->st, &r->st.tensors[i], r->prefix, r->shape);
    free(known);
}

// the weights into params (llm.c's layout of r->shape, wte's padding rows zeroed), the
// Conv1D weights transposed; then the file is closed
static void hf_read(HFReader* r, float* params) {
    LlmcShape c = r->shape;
    size_t sizes[16], total = 0;
    llmc_param_sizes(c, sizes);
    for (int k = 0; k < 16; k++)
        total += sizes[k];
    memset(params, 0, total * sizeof(float));  // wte's padding rows
    float* matrix = mallocCheck((size_t)4 * c.channels * c.channels * sizeof(float));
    for (int i = 0; i < r->n; i++) {
        const HFPlace* p = &r->places[i];
        float* dst = hf_destination(params, c, p);
        if (!p->transpose) {
            safetensors_read(&r->st, r->tensors[i], dst);
            continue;
        }
        safetensors_read(&r->st, r->tensors[i], matrix);  // (in, out) = (rows, cols) -> ours (out, in)
        for (size_t row = 0; row < p->rows; row++)
            for (size_t k = 0; k < p->cols; k++)
                dst[k * p->rows + row] = matrix[row * p->cols + k];
    }
    hf_check_tied_head(&r->st, params);  // wte: the first tensor
    if (r->have_config && hf_config_untied && !safetensors_find(&r->st, "lm_head.weight"))
        printf("note: '%s' says tie_word_embeddings false, but '%s' has no lm_head.weight: the output head "
               "is wte.weight (tied), as GPT-2's\n", r->config_path, r->st.path);
    free(matrix); free(r->tensors); free(r->places);
    safetensors_close(&r->st);
}

// an llm.c checkpoint, or (by its name) a Hugging Face one
static int is_safetensors_path(const char* path) {
    size_t n = strlen(path);
    return n >= 12 && strcmp(path + n - 12, ".safetensors") == 0;
}

static void hf_write_config(LlmcShape c, const char* path) {
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    char tokens[96] = "";
    if (c.vocab_size == 50257)  // GPT-2's vocabulary: <|endoftext|> begins and ends a text
        snprintf(tokens, sizeof tokens, "  \"bos_token_id\": 50256,\n  \"eos_token_id\": 50256,\n");
    if (fprintf(f, "{\n  \"activation_function\": \"gelu_new\",\n"
                "  \"architectures\": [\"GPT2LMHeadModel\"],\n"
                "%s  \"layer_norm_epsilon\": 1e-05,\n  \"model_type\": \"gpt2\",\n  \"n_ctx\": %d,\n"
                "  \"n_embd\": %d,\n  \"n_head\": %d,\n  \"n_inner\": null,\n  \"n_layer\": %d,\n"
                "  \"n_positions\": %d,\n  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"float32\",\n"
                "  \"vocab_size\": %d\n}\n", tokens, c.max_seq_len, c.channels, c.num_heads, c.num_layers,
                c.max_seq_len, c.vocab_size) < 0)
        die("cannot write '%s' (%s)", tmp, strerror(errno));
    atomic_commit(f, tmp, path);
}

// -hf DIR: DIR/model.safetensors (float32, no prefix, as openai-community/gpt2's file) and
// DIR/config.json, from params in llm.c's layout of shape c; the vocabulary unpadded to V,
// the Conv1D weights transposed back
static void hf_write(const char* dir, LlmcShape c, float* params) {
    int n = 4 + 12 * c.num_layers;
    HFPlace* places = mallocCheck(n * sizeof *places);
    SafeTensorOut* out = mallocCheck(n * sizeof *out);
    hf_places(c, "", places);
    for (int i = 0; i < n; i++) {
        HFPlace* p = &places[i];
        out[i] = (SafeTensorOut){p->name, p->cols ? 2 : 1, {p->rows, p->cols}, hf_destination(params, c, p),
                                 p->transpose};
    }
    char path[4096];  // (check_output_dir left room for the names and atomic_open's ".tmp")
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    atomic_begin();  // both files, or neither: an earlier export stays whole
    safetensors_write(path, out, n);
    snprintf(path, sizeof path, "%s/config.json", dir);
    hf_write_config(c, path);
    atomic_keep();
    free(out); free(places);
}

#endif
