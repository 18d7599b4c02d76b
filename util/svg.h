/*
util/svg.h: the program's pictures, as SVG (text: no library, any browser shows them, and a
test can read them). Plumbing: a reader of the model may skip it.
  write_attention_svg  the attention maps of a prompt: a panel per layer and head, the
                       prompt's tokens as tick labels, a colour scale, the masked future
                       hatched (a masked weight is not a learned zero)
  print_attention_summary  where each head looks on average, the numbers doc/README.md quotes
  LossHistory, write_loss_svg  the training curve: the loss of every step, the validation
                       loss where it was measured, the learning rate on a second axis
*/
#ifndef UTIL_SVG_H
#define UTIL_SVG_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io.h"
#include "tokenizer.h"

// ---- text in a picture: well-formed XML whatever the bytes

// the length (1-4) of the UTF-8 character at s, of at most len bytes, its code point in *cp;
// 0 where the bytes are not one: a stray continuation byte, a character cut short, an
// overlong form, a surrogate, beyond U+10FFFF
static int svg_utf8_char(const unsigned char* s, int len, unsigned* cp) {
    int n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || n > len) return 0;
    unsigned c = n == 1 ? s[0] : s[0] & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        c = (c << 6) | (s[i] & 0x3F);
    }
    static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[n] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return n;
}

// svg_escape's work: s as XML text up to limit columns; *done: all of it fit
static int svg_escape_upto(char* out, size_t n, const unsigned char* s, int len, int label, int limit,
                           int* done) {
    size_t k = 0;
    int width = 0, i = 0;
    out[0] = 0;
    while (i < len) {
        unsigned cp = 0;
        int bytes = svg_utf8_char(s + i, len - i, &cp);
        const char* entity = cp == '&' ? "&amp;" : cp == '<' ? "&lt;" : cp == '>' ? "&gt;"
                           : cp == '"' ? "&quot;" : cp == '\'' ? "&apos;" : NULL;
        if (label && bytes == 1)
            entity = cp == '\n' ? "↵" : cp == ' ' && label == 1 ? "␣" : cp == '\t' ? "⇥" : entity;
        int escaped = bytes == 0 || (!entity && (cp < 32 || (cp >= 127 && cp < 160) || cp == 0xFFFE ||
                                                 cp == 0xFFFF));
        int w = escaped ? 4 : cp >= 0x2E80 ? 2 : 1;
        if (width + w > limit || k + 16 > n) break;  // 16: room for the longest piece and "…"
        if (escaped) {  // one byte at a time: U+0085 is \xC2\x85
            k += (size_t)snprintf(out + k, n - k, "\\x%02X", s[i]);
            bytes = 1;
        } else if (entity) {
            k += (size_t)snprintf(out + k, n - k, "%s", entity);
        } else {
            memcpy(out + k, s + i, (size_t)bytes);
            out[k += (size_t)bytes] = 0;
        }
        width += w;
        i += bytes;
    }
    *done = i == len;
    return width;
}

// s (len bytes) as XML text into out (n bytes, always terminated): & < > " ' as entities,
// each valid UTF-8 character as itself, every other byte as \xNN: control characters
// (C0, DEL, C1), U+FFFE/U+FFFF (not allowed in XML), invalid UTF-8, and the bytes of a
// character that GPT-2's byte-level BPE split across tokens ("世" is E4 B8 96; one token
// may hold E4 B8, the next 96). Why \xNN for those: they are what the token holds, and
// each is a row of the map; GPT-2's byte-to-unicode letters (ä¸ for E4 B8, Ġ for a space)
// would read as real characters, and giving two tokens one merged label would hide the
// split that the rows show. A token label (label = 1) shows a newline as ↵, a space as ␣,
// a tab as ⇥; a line of text (label = 2) the newline and the tab so. At most max_width
// columns are shown (an escape is 4, a CJK character or an emoji 2), the rest as "…".
// Returns the columns shown, for sizing the margins.
static int svg_escape(char* out, size_t n, const char* text, int len, int label, int max_width) {
    const unsigned char* s = (const unsigned char*)text;
    int done, width = svg_escape_upto(out, n, s, len, label, max_width, &done);
    if (done) return width;
    width = svg_escape_upto(out, n, s, len, label, max_width - 1, &done);
    strcat(out, "…");
    return width + 1;
}

// a token as a tick label, at most max_width columns (svg_escape); without a tokenizer, its id
static int svg_token_label(char* out, size_t n, const Tokenizer* tk, int id, int max_width) {
    if (!tk) return snprintf(out, n, "%d", id);
    return svg_escape(out, n, tk->token_table[id], tk->token_length[id], 1, max_width);
}

// title (a run directory, a model's path: any bytes) to f, escaped (f NULL: not written);
// returns its width in columns
static int svg_put_text(FILE* f, const char* title) {
    size_t len = strlen(title), n = 6 * len + 16;  // &quot; is the longest a byte can become
    char* out = mallocCheck(n);
    int width = svg_escape(out, n, title, (int)len, 0, 1 << 30);
    if (f) fputs(out, f);
    free(out);
    return width;
}

// probability 0 -> white, 1 -> dark blue, on a square-root scale so that small weights
// stay visible (the scale bar says so)
static void svg_colour(char* out, float p) {
    float s = sqrtf(p < 0 ? 0 : p > 1 ? 1 : p);
    snprintf(out, 8, "#%02x%02x%02x", (int)(255 - s * 247 + 0.5f), (int)(255 - s * 207 + 0.5f),
             (int)(255 - s * 148 + 0.5f));
}

// The attention maps' layout: as many panels side by side as fit SVG_WIDTH pixels (about
// the width at which GitHub shows a picture in a README or doc/README.md without
// shrinking it), a layer's further heads on the rows below, so that the tick labels
// (8 px at least) stay legible where the picture is embedded. A tick label shows at most
// SVG_LABEL_WIDTH columns of its token, then "…".
enum { SVG_WIDTH = 980, SVG_LABEL_WIDTH = 10, SVG_LABEL_BYTES = 96 };

typedef struct {
    int cell, font, every;     // a cell's side, the tick labels' font size (px), a label every `every` cells
    int rotate;                // the keys' labels read upwards: some are wider than a cell
    int left, bottom;          // room for the labels of the rows, of the columns
    int block_w, block_h;      // a panel with its title, labels and gaps
    int cols, rows_per_layer;  // panels side by side; rows of panels per layer
} AttentionLayout;

// labels is (T + Tk) labels of SVG_LABEL_BYTES: the queries', then the keys'
static AttentionLayout attention_layout(int NH, int T, int Tk, const int* tokens, const int* keys,
                                        const Tokenizer* tk, char* labels) {
    AttentionLayout a;
    int Tmax = T > Tk ? T : Tk, row_w = 1, col_w = 1;
    a.cell = Tmax <= 16 ? 18 : Tmax <= 32 ? 13 : Tmax <= 64 ? 8 : Tmax <= 640 ? 640 / Tmax : 1;
    a.font = a.cell > 13 ? 12 : a.cell > 8 ? a.cell - 1 : 8;
    a.every = (a.font + a.cell - 1) / a.cell;  // rows of labels never overlap
    for (int t = 0; t < T + Tk; t++) {
        int w = svg_token_label(labels + (size_t)t * SVG_LABEL_BYTES, SVG_LABEL_BYTES, tk,
                                t < T ? tokens[t] : keys[t - T], SVG_LABEL_WIDTH);
        if (t < T) row_w = w > row_w ? w : row_w;
        else col_w = w > col_w ? w : col_w;
    }
    double glyph = 0.6 * a.font;  // a monospace character's advance
    a.rotate = col_w * glyph > a.cell * a.every;
    a.left = (int)ceil(row_w * glyph) + 5;
    a.bottom = a.rotate ? (int)ceil(col_w * glyph) + 6 : a.font + 4;
    a.block_w = a.left + Tk * a.cell + 10;
    a.block_h = 18 + T * a.cell + a.bottom + 8;
    a.cols = (SVG_WIDTH - 8) / a.block_w;
    a.cols = a.cols < 1 ? 1 : a.cols > NH ? NH : a.cols;
    a.rows_per_layer = (NH + a.cols - 1) / a.cols;
    a.cols = (NH + a.rows_per_layer - 1) / a.rows_per_layer;  // 4 heads: 2 and 2, not 3 and 1
    return a;
}

// the text itself, under the title: the tokens' bytes joined, so that a character split
// between tokens shows whole; at most max_width columns
static void attention_text_line(FILE* f, const Tokenizer* tk, const int* tokens, int T, int max_width) {
    size_t len = 0;
    for (int t = 0; t < T; t++)
        len += (size_t)tk->token_length[tokens[t]];
    char *text = mallocCheck(len + 1), *out = mallocCheck(6 * len + 16);
    len = 0;
    for (int t = 0; t < T; t++) {
        memcpy(text + len, tk->token_table[tokens[t]], (size_t)tk->token_length[tokens[t]]);
        len += (size_t)tk->token_length[tokens[t]];
    }
    svg_escape(out, 6 * len + 16, text, (int)len, 2, max_width);
    fprintf(f, "<text class=\"text\" x=\"8\" y=\"38\" font-size=\"11\">the text: %s</text>\n", out);
    free(text);
    free(out);
}

// the header below the title and the text: what a panel is, what a cell's colour means (a
// probability, 0 to 1, coloured by its square root so that small weights stay visible;
// the ticks at 0.05 and 0.25 show how the scale stretches them) and, for a causal map,
// the hatching. split: some label shows \xNN
static void attention_legend(FILE* f, int causal, int split) {
    char colour[8];
    fprintf(f, "<text x=\"8\" y=\"54\" font-size=\"11\">each panel: a row per query, a column per key; "
               "a row's weights sum to 1%s</text>\n",
            split ? "; \\xNN: a byte of a split character" : "");
    for (int i = 0; i < 50; i++) {  // even steps of the square root, left to right
        float q = (i + 0.5f) / 50;
        svg_colour(colour, q * q);
        fprintf(f, "<rect x=\"%.1f\" y=\"62\" width=\"%.1f\" height=\"12\" fill=\"%s\"/>\n", 8 + i * 4.0, 4.5,
                colour);
    }
    fprintf(f, "<rect x=\"8\" y=\"62\" width=\"200\" height=\"12\" fill=\"none\" stroke=\"#444\"/>\n");
    const double ticks[5] = {0, 0.05, 0.25, 0.5, 1};
    for (int i = 0; i < 5; i++)
        fprintf(f, "<text x=\"%.1f\" y=\"86\" font-size=\"10\" text-anchor=\"middle\">%g</text>\n",
                8 + 200 * sqrt(ticks[i]), ticks[i]);
    fprintf(f, "<text class=\"scale\" x=\"220\" y=\"72\" font-size=\"11\">attention weight: a probability, "
               "0 to 1, coloured by its square root</text>\n");
    if (causal)
        fprintf(f, "<rect x=\"220\" y=\"78\" width=\"16\" height=\"12\" fill=\"url(#masked)\"/><text x=\"240\" "
                   "y=\"88\" font-size=\"11\">masked: a future key, never seen (not a weight of 0)</text>\n");
}

// a tick label's text and end tag; a label shortened with "…" carries the whole token as a
// tooltip (<title>, shown by a browser on hovering)
static void attention_tick_text(FILE* f, const char* label, const Tokenizer* tk, int id) {
    size_t n = strlen(label);
    if (tk && n >= 3 && strcmp(label + n - 3, "…") == 0) {
        size_t size = 6 * (size_t)tk->token_length[id] + 16;
        char* whole = mallocCheck(size);
        svg_escape(whole, size, tk->token_table[id], tk->token_length[id], 1, 1 << 30);
        fprintf(f, "%s<title>token %d: %s</title></text>\n", label, id, whole);
        free(whole);
    } else {
        fprintf(f, "%s</text>\n", label);
    }
}

// one panel's tick labels: the queries down the left, the keys along the bottom
static void attention_ticks(FILE* f, const AttentionLayout* a, int x0, int y0, int T, int Tk, const int* tokens,
                            const int* keys, const Tokenizer* tk, const char* labels) {
    for (int t = 0; t < T; t += a->every) {
        fprintf(f, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" font-size=\"%d\" text-anchor=\"end\">", x0 - 3,
                y0 + t * a->cell + a->cell / 2.0 + 0.35 * a->font, a->font);
        attention_tick_text(f, labels + (size_t)t * SVG_LABEL_BYTES, tk, tokens[t]);
    }
    for (int t = 0; t < Tk; t += a->every) {
        double x = x0 + t * a->cell + a->cell / 2.0;
        int y = y0 + T * a->cell;
        if (a->rotate)  // reads upwards, ending at the panel's edge
            fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" font-size=\"%d\" text-anchor=\"end\" "
                       "transform=\"rotate(-90 %.1f %d)\">",
                    x + 0.35 * a->font, y + 3, a->font, x + 0.35 * a->font, y + 3);
        else
            fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" font-size=\"%d\" text-anchor=\"middle\">", x,
                    y + a->font + 1, a->font);
        attention_tick_text(f, labels + (size_t)(T + t) * SVG_LABEL_BYTES, tk, keys[t]);
    }
}

// one panel's cells, in units of a cell: p is (T,Tk), a row per query. The cells are grouped
// by colour, 64 levels of the square root of the weight (one <path> per level, data-p its
// weight); a causal map's masked future is one hatched staircase above the diagonal
static void attention_cells(FILE* f, const float* p, int T, int Tk, int causal, int cell) {
    enum { LEVELS = 64 };
    char colour[8];
    for (int k = 0; k < LEVELS; k++) {
        int opened = 0;
        for (int t = 0; t < T; t++)
            for (int t2 = 0; t2 <= (causal ? t : Tk - 1); t2++) {
                float w = p[(size_t)t * Tk + t2];
                int level = (int)lroundf(sqrtf(w < 0 ? 0 : w > 1 ? 1 : w) * (LEVELS - 1));
                if (level != k) continue;
                if (!opened) {
                    double q = (double)k / (LEVELS - 1);
                    svg_colour(colour, (float)(q * q));
                    fprintf(f, "<path data-p=\"%.4f\" fill=\"%s\" d=\"", q * q, colour);
                    opened = 1;
                }
                fprintf(f, "M%d %dh1v1h-1z", t2, t);
            }
        if (opened) fprintf(f, "\"/>\n");
    }
    if (causal && T > 1) {  // the masked future: the staircase above the diagonal
        fprintf(f,
                "<path class=\"mask\" fill=\"url(#masked)\" transform=\"scale(%f)\" "
                "d=\"M%d 0H%dV%d",
                1.0 / cell, cell, Tk * cell, (T - 1) * cell);
        for (int t = T - 2; t >= 0; t--)
            fprintf(f, "H%dV%d", (t + 1) * cell, t * cell);
        fprintf(f, "Z\"/>\n");
    }
}

// probs is (L,NH,T,Tk): one sequence's attention probabilities, rows = queries, columns =
// keys; tokens (T) label the rows and keys (Tk) the columns (self-attention: the same
// tokens, Tk = T; cross-attention: the target's against the source's). causal: the keys
// after each query are masked (drawn hatched, no cell); 0: every cell is a weight. One
// <path> per colour level (attention_cells): a browser draws the file fast, and it stays
// small. Every text is escaped (svg_escape): the file is well-formed XML whatever the tokens and
// the title. Written atomically.
void write_attention_map_svg(const char* path, const float* probs, int L, int NH, int T, int Tk,
                             const int* tokens, const int* keys, const Tokenizer* tk, int causal,
                             const char* title) {
    enum { TOP = 100 };
    char* labels = mallocCheck((size_t)(T + Tk) * SVG_LABEL_BYTES);
    AttentionLayout a = attention_layout(NH, T, Tk, tokens, keys, tk, labels);
    int cell = a.cell, panel = Tk * cell, panel_h = T * cell;
    int W = 8 + a.cols * a.block_w, H = TOP + L * a.rows_per_layer * a.block_h;
    W = W < 680 ? 680 : W;  // the legend's width
    // the title's font: 14 px, smaller for a long title (down to 9 px, then the picture widens);
    // 60: the words around it
    int title_w = svg_put_text(NULL, title) + 60, title_font = (int)((W - 16) / (0.6 * title_w));
    title_font = title_font > 14 ? 14 : title_font < 9 ? 9 : title_font;
    W = W < 16 + 0.6 * 9 * title_w ? 16 + (int)(0.6 * 9 * title_w) : W;
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"monospace\" data-layers=\"%d\" data-heads=\"%d\" data-tokens=\"%d\">\n"
            "<defs><pattern id=\"masked\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
            "<rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/><path d=\"M0,6 L6,0\" stroke=\"#aaaaaa\"/>"
            "</pattern></defs>\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H, L, NH, T);
    fprintf(f, "<text x=\"8\" y=\"20\" font-size=\"%d\">attention of ", title_font);
    svg_put_text(f, title);
    if (Tk == T) fprintf(f, " on %d tokens</text>\n", T);
    else fprintf(f, ": %d queries (rows) against %d keys (columns)</text>\n", T, Tk);
    int split = 0;
    for (int t = 0; t < T + Tk; t++)
        split |= strstr(labels + (size_t)t * SVG_LABEL_BYTES, "\\x") != NULL;
    if (tk && Tk == T) attention_text_line(f, tk, tokens, T, (int)((W - 70) / 6.6));  // self-attention
    attention_legend(f, causal, split);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < NH; h++) {
            int bx = 8 + (h % a.cols) * a.block_w, by = TOP + (l * a.rows_per_layer + h / a.cols) * a.block_h;
            int x0 = bx + a.left, y0 = by + 18;
            fprintf(f,
                    "<g class=\"panel\" data-layer=\"%d\" data-head=\"%d\">\n<text x=\"%d\" y=\"%d\" "
                    "font-size=\"11\">layer %d, head %d</text>\n",
                    l, h, x0, y0 - 5, l, h);
            fprintf(f, "<g transform=\"translate(%d %d) scale(%d)\">\n", x0, y0, cell);  // in cells
            attention_cells(f, probs + (size_t)(l * NH + h) * T * Tk, T, Tk, causal, cell);
            fprintf(f,
                    "</g>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                    "stroke=\"#444\"/>\n",
                    x0, y0, panel, panel_h);
            attention_ticks(f, &a, x0, y0, T, Tk, tokens, keys, tk, labels);
            fprintf(f, "</g>\n");
        }
    fprintf(f, "</svg>\n");
    atomic_commit(f, tmp, path);
    free(labels);
}

// self-attention: the same tokens label the rows and the columns
void write_attention_svg(const char* path, const float* probs, int L, int NH, int T, const int* tokens,
                         const Tokenizer* tk, int causal, const char* title) {
    write_attention_map_svg(path, probs, L, NH, T, T, tokens, tokens, tk, causal, title);
}

// Where each head looks, averaged over the queries that have such a key: the previous
// token, the query itself, the first token, the start of the current word (the latest
// earlier token that begins with a space or a newline), and the first newline of the
// prompt (for the queries after it). One line per head, to stdout.
static int svg_starts_word(const Tokenizer* tk, int id) {
    return tk && tk->token_length[id] > 0 &&
           (tk->token_table[id][0] == ' ' || tk->token_table[id][0] == '\n');
}

void print_attention_summary(const char* path, const float* probs, int L, int NH, int T, const int* tokens,
                             const Tokenizer* tk) {
    printf("attention maps of %d prompt token%s: %s (%d layer%s x %d head%s)\n", T, T == 1 ? "" : "s", path,
           L, L == 1 ? "" : "s", NH, NH == 1 ? "" : "s");
    int newline = -1;
    for (int t = 0; t < T && newline < 0; t++)
        if (tk && tk->token_length[tokens[t]] == 1 && tk->token_table[tokens[t]][0] == '\n') newline = t;
    printf(
        "where each head looks (mean weight over the queries): previous token, itself, first token, "
        "the start of the current word, the first newline (token %d)\n",
        newline);
    printf("layer head  previous  itself   first    word   newline\n");
    for (int l = 0; l < L; l++)
        for (int h = 0; h < NH; h++) {
            const float* p = probs + (size_t)(l * NH + h) * T * T;
            double sum[5] = {0}, n[5] = {0};
            for (int t = 0; t < T; t++) {
                int word = -1;
                for (int j = 0; j < t; j++)
                    if (svg_starts_word(tk, tokens[j])) word = j;
                int key[5] = {t - 1, t, t > 0 ? 0 : -1, word, newline >= 0 && t > newline ? newline : -1};
                for (int k = 0; k < 5; k++)
                    if (key[k] >= 0) {
                        sum[k] += p[(size_t)t * T + key[k]];
                        n[k]++;
                    }
            }
            printf("%5d %4d", l, h);
            for (int k = 0; k < 5; k++)
                printf(n[k] > 0 ? " %8.3f" : "        -", n[k] > 0 ? sum[k] / n[k] : 0.0);
            printf("\n");
        }
}

// the training curve: the loss and learning rate of every step, the validation losses
typedef struct {
    int steps, max_steps;  // steps recorded (from step 0), at most
    float *loss, *lr;      // (cap): grown as the steps come, so that -x 1000000000 costs nothing
    int vals;              // validation points
    int* val_step;         // (val_cap)
    float* val_loss;
    int cap, val_cap;
} LossHistory;

// room for the steps before `steps` (at most max_steps) and for `vals` validation points
static void history_reserve(LossHistory* hist, int steps, int vals) {
    if (steps > hist->cap) {
        int cap = hist->cap;
        while (cap < steps) cap = cap < hist->max_steps / 2 ? 2 * cap + 64 : hist->max_steps;
        hist->loss = realloc(hist->loss, (size_t)cap * sizeof(float));
        hist->lr = realloc(hist->lr, (size_t)cap * sizeof(float));
        if (!hist->loss || !hist->lr) die("out of memory for the loss curve of %d steps", cap);
        memset(hist->loss + hist->cap, 0, (size_t)(cap - hist->cap) * sizeof(float));
        memset(hist->lr + hist->cap, 0, (size_t)(cap - hist->cap) * sizeof(float));
        hist->cap = cap;
    }
    if (vals > hist->val_cap) {
        int cap = 2 * vals + 16;
        hist->val_step = realloc(hist->val_step, (size_t)cap * sizeof(int));
        hist->val_loss = realloc(hist->val_loss, (size_t)cap * sizeof(float));
        if (!hist->val_step || !hist->val_loss) die("out of memory for %d validation losses", cap);
        hist->val_cap = cap;
    }
}

void history_read(LossHistory* hist, const char* path, int before_step);

// room for max_steps; a run resumed at step from reads dir/loss.tsv up to there (dir NULL:
// a fresh run)
void history_init(LossHistory* hist, int max_steps, const char* dir, int from) {
    memset(hist, 0, sizeof *hist);
    hist->max_steps = max_steps;
    history_reserve(hist, max_steps < 1024 ? max_steps : 1024, 16);
    char path[4096];
    snprintf(path, sizeof path, "%s/loss.tsv", dir ? dir : ".");
    if (dir) history_read(hist, path, from);
}

// The steps before `from` that loss.tsv did not restore (NaN in hist->loss: a file older than
// the checkpoint, or none), in one line; they stay gaps in loss.tsv and loss.svg, never zeros
static void history_report_gaps(const LossHistory* hist, const char* path, int from) {
    char ranges[160] = "";
    int missing = 0, shown = 0;
    for (int s = 0; s < from; s++) {
        if (!isnan(hist->loss[s])) continue;
        int end = s;
        while (end + 1 < from && isnan(hist->loss[end + 1])) end++;
        missing += end - s + 1;
        size_t at = strlen(ranges);
        if (shown++ < 4) snprintf(ranges + at, sizeof ranges - at, "%s%d%s%.0d", at ? ", " : "", s,
                                  end > s ? "-" : "", end > s ? end : 0);
        else if (shown == 5) snprintf(ranges + at, sizeof ranges - at, ", ...");
        s = end;
    }
    if (missing)
        printf("-y 1: '%s' has no loss for step%s %s (%d of the %d before the checkpoint): they stay a gap "
               "in the curve\n", path, missing == 1 ? "" : "s", ranges, missing, from);
}

void history_free(LossHistory* hist) {
    free(hist->loss);
    free(hist->lr);
    free(hist->val_step);
    free(hist->val_loss);
}

void history_step(LossHistory* hist, int step, float loss, float lr) {
    if (step < 0 || step >= hist->max_steps) return;
    history_reserve(hist, step + 1, 0);
    hist->loss[step] = loss;
    hist->lr[step] = lr;
    hist->steps = step + 1;
}

void history_val(LossHistory* hist, int step, float loss) {
    while (hist->vals > 0 && hist->val_step[hist->vals - 1] >= step)
        hist->vals--;  // a resumed step again
    history_reserve(hist, 0, hist->vals + 1);
    if (hist->vals <= hist->max_steps) {
        hist->val_step[hist->vals] = step;
        hist->val_loss[hist->vals++] = loss;
    }
}

// The history as text beside the checkpoints ("step loss lr" lines, then "val step loss"
// lines), so that a resumed run draws its whole curve; read back up to a step.
void history_write(const LossHistory* hist, const char* path) {
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    for (int s = 0; s < hist->steps; s++)
        if (!isnan(hist->loss[s])) fprintf(f, "%d %.9g %.9g\n", s, hist->loss[s], hist->lr[s]);
    for (int v = 0; v < hist->vals; v++)
        fprintf(f, "val %d %.9g\n", hist->val_step[v], hist->val_loss[v]);
    atomic_commit(f, tmp, path);
}

void history_read(LossHistory* hist, const char* path, int before_step) {
    history_reserve(hist, before_step < hist->max_steps ? before_step : hist->max_steps, 0);
    for (int s = 0; s < before_step && s < hist->max_steps; s++) hist->loss[s] = NAN;  // (not restored)
    if (before_step > 0 && before_step <= hist->max_steps) hist->steps = before_step;
    FILE* f = fopen(path, "r");
    if (!f) {  // an older run without one: the curve starts at the resumed step
        history_report_gaps(hist, path, before_step < hist->max_steps ? before_step : hist->max_steps);
        return;
    }
    char line[256];
    int s;
    float a, b;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "val %d %f", &s, &a) == 2 && s <= before_step)
            history_val(hist, s, a);
        else if (sscanf(line, "%d %f %f", &s, &a, &b) == 3 && s < before_step)
            history_step(hist, s, a, b);
    }
    fclose(f);
    if (before_step > 0 && before_step <= hist->max_steps) hist->steps = before_step;
    history_report_gaps(hist, path, before_step < hist->max_steps ? before_step : hist->max_steps);
}

// y of a value in [lo, hi] on an axis from y_bottom up to y_top
static double svg_y(double v, double lo, double hi, double y_bottom, double y_top) {
    return y_bottom - (v - lo) / (hi - lo) * (y_bottom - y_top);
}

// the loss curve's plot area (px): x from X0 to X1, y from Y0 (bottom) up to Y1
enum { LOSS_X0 = 60, LOSS_X1 = 680, LOSS_Y0 = 370, LOSS_Y1 = 50 };

// The final values written at the curves' ends: the mean of the last 50 training losses
// (the thick line) and the last validation loss; the higher one above its point, the
// lower one below, so that they never overlap
static void loss_final_labels(FILE* f, const LossHistory* hist, int last, double lo, double hi) {
    int X0 = LOSS_X0, X1 = LOSS_X1, Y0 = LOSS_Y0, Y1 = LOSS_Y1;
    int n = hist->steps, k = 0;  // k: the last 50 steps' restored losses (a gap is NaN)
    double mean = 0, val = hist->vals > 0 ? hist->val_loss[hist->vals - 1] : 0;
    for (int s = n < 50 ? 0 : n - 50; s < n; s++)
        k += !isnan(hist->loss[s]);
    for (int s = n < 50 ? 0 : n - 50; s < n; s++)
        if (!isnan(hist->loss[s])) mean += hist->loss[s] / k;
    if (n > 0 && k > 0) {
        double x = X0 + (X1 - X0) * (double)(n - 1) / last, y = svg_y(mean, lo, hi, Y0, Y1);
        int above = !(hist->vals > 0 && val >= mean);
        fprintf(f, "<text class=\"final\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#08519c\" "
                   "font-weight=\"bold\">train, mean %.4f</text>\n", x - 4, above ? y - 8 : y + 16, mean);
    }
    if (hist->vals > 0) {
        int s = hist->val_step[hist->vals - 1];
        double x = X0 + (X1 - X0) * (double)s / last, y = svg_y(val, lo, hi, Y0, Y1);
        int above = n == 0 || val >= mean;
        fprintf(f, "<text class=\"final\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#d62728\" "
                   "font-weight=\"bold\">val %.4f</text>\n", x - 6, above ? y - 9 : y + 17, val);
    }
}

// The curve: each step's training loss (thin), the mean of the last 50 steps (thick), the validation
// loss as markers where it was measured (nothing drawn between them), and the learning
// rate (dashed) on the right-hand axis. title names the run. Written atomically.
void write_loss_svg(const LossHistory* hist, const char* path, const char* title) {
    int W = 760, H = 420, X0 = LOSS_X0, X1 = LOSS_X1, Y0 = LOSS_Y0, Y1 = LOSS_Y1, n = hist->steps;
    double lo = 1e30, hi = -1e30, lr_hi = 1e-30;
    // comparisons, not fmin/fmax of floats into a double: gcc 12 for aarch64 ICEs on that loop
    for (int s = 0; s < n; s++) {
        double loss = hist->loss[s], lr = hist->lr[s];
        if (loss < lo) lo = loss;
        if (loss > hi) hi = loss;
        if (lr > lr_hi) lr_hi = lr;
    }
    for (int v = 0; v < hist->vals; v++) {
        double loss = hist->val_loss[v];
        if (loss < lo) lo = loss;
        if (loss > hi) hi = loss;
    }
    if (!(hi > lo)) {
        lo = lo < 1e30 ? lo - 1 : 0;
        hi = lo + 2;
    }
    lo = floor(lo * 2) / 2;
    hi = ceil(hi * 2) / 2;
    int last = n > 1 ? n - 1 : 1;
    for (int v = 0; v < hist->vals; v++)
        last = hist->val_step[v] > last ? hist->val_step[v] : last;
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"sans-serif\" font-size=\"12\" data-steps=\"%d\" data-vals=\"%d\">\n<rect "
            "width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"24\" font-size=\"14\">",
            W, H, W, H, n, hist->vals, X0);
    svg_put_text(f, title);
    fprintf(f, "</text>\n");
    double tick = hi - lo <= 3 ? 0.5 : 1.0;  // axes: loss on the left, learning rate on the right
    for (double v = lo; v <= hi + 1e-9; v += tick) {
        double y = svg_y(v, lo, hi, Y0, Y1);
        fprintf(
            f,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" "
            "text-anchor=\"end\">%.1f</text>\n",
            X0, y, X1, y, X0 - 4, y + 4, v);
    }
    for (int i = 0; i <= 4; i++) {  // the learning rate's axis, and the steps below
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" fill=\"#b05000\">%.1e</text>\n", X1 + 4,
                svg_y(lr_hi * i / 4, 0, lr_hi, Y0, Y1) + 4, lr_hi * i / 4);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", X0 + (X1 - X0) * i / 4.0,
                Y0 + 16, (int)lround(last * i / 4.0));
    }
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n<text x=\"14\" y=\"%d\" "
            "transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">loss (nats/token)</text>\n<text x=\"%d\" y=\"%d\" "
            "fill=\"#b05000\" transform=\"rotate(90 %d %d)\" text-anchor=\"middle\">learning rate</text>\n",
            (X0 + X1) / 2, Y0 + 34, (Y0 + Y1) / 2, (Y0 + Y1) / 2, W - 12, (Y0 + Y1) / 2, W - 12,
            (Y0 + Y1) / 2);
    const char* styles[3] = {"stroke=\"#9ecae1\" stroke-width=\"0.8\"",
                             "stroke=\"#08519c\" stroke-width=\"2\"",
                             "stroke=\"#b05000\" stroke-width=\"1.2\" stroke-dasharray=\"5,3\""};
    const char* classes[3] = {"train", "train-mean", "lr"};
    for (int k = 0; k < 3; k++) {
        fprintf(f, "<polyline class=\"%s\" fill=\"none\" %s points=\"", classes[k], styles[k]);
        double window = 0;  // the last 50 steps' losses, of which `in` restored (not a gap: NaN)
        int in = 0;
        for (int s = 0; s < n; s++) {
            int gap = isnan(hist->loss[s]), gap_out = s >= 50 && isnan(hist->loss[s - 50]);
            window += (gap ? 0 : hist->loss[s]) - (s >= 50 && !gap_out ? hist->loss[s - 50] : 0);
            in += !gap - (s >= 50 && !gap_out);
            if (gap) continue;  // a step loss.tsv did not restore (history_read): no point
            double v = k == 0 ? hist->loss[s] : k == 1 ? window / in : hist->lr[s];
            double y = k == 2 ? svg_y(v, 0, lr_hi, Y0, Y1) : svg_y(v, lo, hi, Y0, Y1);
            fprintf(f, "%.1f,%.1f ", X0 + (X1 - X0) * (double)s / last, y);
        }
        fprintf(f, "\"/>\n");
    }
    loss_final_labels(f, hist, last, lo, hi);
    for (int v = 0; v < hist->vals; v++)
        fprintf(f,
                "<circle class=\"val\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#d62728\"><title>step %d: "
                "val loss %.4f</title></circle>\n",
                X0 + (X1 - X0) * (double)hist->val_step[v] / last, svg_y(hist->val_loss[v], lo, hi, Y0, Y1),
                hist->val_step[v], hist->val_loss[v]);
    fprintf(f,
            "<g font-size=\"11\"><line x1=\"%d\" y1=\"64\" x2=\"%d\" y2=\"64\" %s/><text x=\"%d\" y=\"68\">"
            "train loss, each step</text><line x1=\"%d\" y1=\"80\" x2=\"%d\" y2=\"80\" %s/><text x=\"%d\" "
            "y=\"84\">mean of the last 50 steps</text><circle cx=\"%d\" cy=\"96\" r=\"4\" "
            "fill=\"#d62728\"/><text "
            "x=\"%d\" y=\"100\">validation loss</text><line x1=\"%d\" y1=\"112\" x2=\"%d\" y2=\"112\" %s/>"
            "<text x=\"%d\" y=\"116\">learning rate</text></g>\n</svg>\n",
            X1 - 170, X1 - 150, styles[0], X1 - 145, X1 - 170, X1 - 150, styles[1], X1 - 145, X1 - 160,
            X1 - 145, X1 - 170, X1 - 150, styles[2], X1 - 145);
    atomic_commit(f, tmp, path);
}

// dir/loss.tsv and dir/loss.svg, beside the checkpoints
void history_save(const LossHistory* hist, const char* dir, const char* title) {
    char path[4096];
    snprintf(path, sizeof path, "%s/loss.tsv", dir);
    history_write(hist, path);
    snprintf(path, sizeof path, "%s/loss.svg", dir);
    write_loss_svg(hist, path, title);
}

#endif
