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

// a token as a tick label, XML-escaped: "\n" is shown as ↵, a space as ␣, a tab as ⇥,
// other control bytes as \xNN; without a tokenizer, the id
static void svg_token_label(char* out, size_t n, const Tokenizer* tk, int id) {
    if (!tk) {
        snprintf(out, n, "%d", id);
        return;
    }
    size_t k = 0;
    out[0] = 0;
    for (int i = 0; i < tk->token_length[id] && k + 12 < n; i++) {
        unsigned char c = (unsigned char)tk->token_table[id][i];
        const char* s = c == '\n'   ? "↵"
                        : c == ' '  ? "␣"
                        : c == '\t' ? "⇥"
                        : c == '&'  ? "&amp;"
                        : c == '<'  ? "&lt;"
                        : c == '>'  ? "&gt;"
                        : c == '"'  ? "&quot;"
                                    : NULL;
        if (s)
            k += (size_t)snprintf(out + k, n - k, "%s", s);
        else if (c < 32 || c == 127)
            k += (size_t)snprintf(out + k, n - k, "\\x%02X", c);
        else
            out[k++] = (char)c, out[k] = 0;
    }
}

// probability 0 -> white, 1 -> dark blue, on a square-root scale so that small weights
// stay visible (the scale bar says so)
static void svg_colour(char* out, float p) {
    float s = sqrtf(p < 0 ? 0 : p > 1 ? 1 : p);
    snprintf(out, 8, "#%02x%02x%02x", (int)(255 - s * 247 + 0.5f), (int)(255 - s * 207 + 0.5f),
             (int)(255 - s * 148 + 0.5f));
}

// probs is (L,NH,T,Tk): one sequence's attention probabilities, rows = queries, columns =
// keys; tokens (T) label the rows and keys (Tk) the columns (self-attention: the same
// tokens, Tk = T; cross-attention: the target's against the source's). causal: the keys
// after each query are masked (drawn hatched, no cell); 0: every cell is a weight. The
// cells of a panel are grouped by colour, 64 levels of the square root of the weight (one
// <path> per level, data-p its weight; a browser draws the file fast, and it stays small).
// Written atomically.
void write_attention_map_svg(const char* path, const float* probs, int L, int NH, int T, int Tk,
                             const int* tokens, const int* keys, const Tokenizer* tk, int causal,
                             const char* title) {
    enum { LEVELS = 64 };
    int Tmax = T > Tk ? T : Tk;
    int cell = Tmax <= 16 ? 18 : Tmax <= 32 ? 13 : Tmax <= 64 ? 9 : 5, font = cell <= 5 ? 5 : cell - 1;
    int margin = 3 * font + 12, panel = Tk * cell, panel_h = T * cell, gap = 30;
    int W = margin + NH * (panel + margin) + 90, H = 50 + L * (panel_h + font + gap + 8);
    char tmp[4096], colour[8], label[64];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"monospace\" data-layers=\"%d\" data-heads=\"%d\" data-tokens=\"%d\">\n"
            "<defs><pattern id=\"masked\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
            "<rect width=\"6\" height=\"6\" fill=\"#eeeeee\"/><path d=\"M0,6 L6,0\" stroke=\"#aaaaaa\"/>"
            "</pattern></defs>\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, L, NH, T);
    if (Tk == T)
        fprintf(f, "<text x=\"8\" y=\"20\" font-size=\"14\">attention of %s on %d tokens: a row per query, a "
                   "column per key</text>\n", title, T);
    else
        fprintf(f, "<text x=\"8\" y=\"20\" font-size=\"14\">attention of %s: %d queries (rows) against %d "
                   "keys (columns)</text>\n", title, T, Tk);
    for (int l = 0; l < L; l++)
        for (int h = 0; h < NH; h++) {
            int x0 = margin + h * (panel + margin), y0 = 50 + gap + l * (panel_h + font + gap + 8);
            fprintf(f,
                    "<g class=\"panel\" data-layer=\"%d\" data-head=\"%d\">\n<text x=\"%d\" y=\"%d\" "
                    "font-size=\"13\">layer %d, head %d</text>\n",
                    l, h, x0, y0 - 8, l, h);
            const float* p = probs + (size_t)(l * NH + h) * T * Tk;
            fprintf(f, "<g transform=\"translate(%d %d) scale(%d)\">\n", x0, y0, cell);  // in cells
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
                        1.0 / cell, cell, panel, (T - 1) * cell);
                for (int t = T - 2; t >= 0; t--)
                    fprintf(f, "H%dV%d", (t + 1) * cell, t * cell);
                fprintf(f, "Z\"/>\n");
            }
            fprintf(f,
                    "</g>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                    "stroke=\"#444\"/>\n",
                    x0, y0, panel, panel_h);
            for (int t = 0; t < T; t++) {  // the tokens: queries down the left, keys along the bottom
                svg_token_label(label, sizeof label, tk, tokens[t]);
                fprintf(f,
                        "<text class=\"tick\" x=\"%d\" y=\"%d\" font-size=\"%d\" text-anchor=\"end\">%s"
                        "</text>\n",
                        x0 - 2, y0 + t * cell + cell - 1, font, label);
            }
            for (int t = 0; t < Tk; t++) {
                svg_token_label(label, sizeof label, tk, keys[t]);
                fprintf(f,
                        "<text class=\"tick\" x=\"%d\" y=\"%d\" font-size=\"%d\" text-anchor=\"middle\">"
                        "%s</text>\n",
                        x0 + t * cell + cell / 2, y0 + panel_h + font + 1, font, label);
            }
            fprintf(f, "</g>\n");
        }
    int bx = W - 70, by = 80, bh = 200;  // the colour scale, even steps of the square root
    for (int i = 0; i < 50; i++) {
        float q = 1.0f - (i + 0.5f) / 50;
        svg_colour(colour, q * q);
        fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"16\" height=\"%.1f\" fill=\"%s\"/>\n", bx,
                by + i * bh / 50.0, bh / 50.0 + 0.5, colour);
    }
    for (int i = 0; i <= 4; i++)
        fprintf(f, "<text x=\"%d\" y=\"%.0f\" font-size=\"10\">%.2f</text>\n", bx + 20,
                by + bh * (1 - sqrt(i / 4.0)) + 4, i / 4.0);
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" font-size=\"10\">weight</text>\n<rect x=\"%d\" y=\"%d\" "
            "width=\"16\" height=\"12\" fill=\"url(#masked)\"/><text x=\"%d\" y=\"%d\" font-size=\"10\">"
            "masked</text>\n</svg>\n",
            bx, by - 8, bx, by + bh + 16, bx + 20, by + bh + 26);
    atomic_commit(f, tmp, path);
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
    int steps, max_steps;  // steps recorded (from step 0), room for
    float *loss, *lr;      // (max_steps)
    int vals;              // validation points
    int* val_step;         // (max_steps + 1)
    float* val_loss;
} LossHistory;

void history_read(LossHistory* hist, const char* path, int before_step);

// room for max_steps; a run resumed at step from reads dir/loss.tsv up to there (dir NULL:
// a fresh run)
void history_init(LossHistory* hist, int max_steps, const char* dir, int from) {
    memset(hist, 0, sizeof *hist);
    hist->max_steps = max_steps;
    hist->loss = callocCheck((size_t)max_steps + 1, sizeof(float));
    hist->lr = callocCheck((size_t)max_steps + 1, sizeof(float));
    hist->val_step = callocCheck((size_t)max_steps + 1, sizeof(int));
    hist->val_loss = callocCheck((size_t)max_steps + 1, sizeof(float));
    char path[4096];
    snprintf(path, sizeof path, "%s/loss.tsv", dir ? dir : ".");
    if (dir) history_read(hist, path, from);
}

void history_free(LossHistory* hist) {
    free(hist->loss);
    free(hist->lr);
    free(hist->val_step);
    free(hist->val_loss);
}

void history_step(LossHistory* hist, int step, float loss, float lr) {
    if (step < 0 || step >= hist->max_steps) return;
    hist->loss[step] = loss;
    hist->lr[step] = lr;
    hist->steps = step + 1;
}

void history_val(LossHistory* hist, int step, float loss) {
    while (hist->vals > 0 && hist->val_step[hist->vals - 1] >= step)
        hist->vals--;  // a resumed step again
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
        fprintf(f, "%d %.9g %.9g\n", s, hist->loss[s], hist->lr[s]);
    for (int v = 0; v < hist->vals; v++)
        fprintf(f, "val %d %.9g\n", hist->val_step[v], hist->val_loss[v]);
    atomic_commit(f, tmp, path);
}

void history_read(LossHistory* hist, const char* path, int before_step) {
    FILE* f = fopen(path, "r");
    if (!f) return;  // an older run without one: the curve starts at the resumed step
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
}

// y of a value in [lo, hi] on an axis from y_bottom up to y_top
static double svg_y(double v, double lo, double hi, double y_bottom, double y_top) {
    return y_bottom - (v - lo) / (hi - lo) * (y_bottom - y_top);
}

// The curve: each step's training loss (thin), the mean of the last 50 steps (thick), the validation
// loss as markers where it was measured (nothing drawn between them), and the learning
// rate (dashed) on the right-hand axis. title names the run. Written atomically.
void write_loss_svg(const LossHistory* hist, const char* path, const char* title) {
    int W = 760, H = 420, X0 = 60, X1 = 680, Y0 = 370, Y1 = 50, n = hist->steps;
    double lo = 1e30, hi = -1e30, lr_hi = 1e-30;
    for (int s = 0; s < n; s++) {
        lo = fmin(lo, hist->loss[s]);
        hi = fmax(hi, hist->loss[s]);
        lr_hi = fmax(lr_hi, hist->lr[s]);
    }
    for (int v = 0; v < hist->vals; v++) {
        lo = fmin(lo, hist->val_loss[v]);
        hi = fmax(hi, hist->val_loss[v]);
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
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
            "font-size=\"12\" data-steps=\"%d\" data-vals=\"%d\">\n<rect width=\"100%%\" height=\"100%%\" "
            "fill=\"white\"/>\n<text x=\"%d\" y=\"24\" font-size=\"14\">%s</text>\n",
            W, H, n, hist->vals, X0, title);
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
            "transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">loss</text>\n<text x=\"%d\" y=\"%d\" "
            "fill=\"#b05000\" transform=\"rotate(90 %d %d)\" text-anchor=\"middle\">learning rate</text>\n",
            (X0 + X1) / 2, Y0 + 34, (Y0 + Y1) / 2, (Y0 + Y1) / 2, W - 12, (Y0 + Y1) / 2, W - 12,
            (Y0 + Y1) / 2);
    const char* styles[3] = {"stroke=\"#9ecae1\" stroke-width=\"0.8\"",
                             "stroke=\"#08519c\" stroke-width=\"2\"",
                             "stroke=\"#b05000\" stroke-width=\"1.2\" stroke-dasharray=\"5,3\""};
    const char* classes[3] = {"train", "train-mean", "lr"};
    for (int k = 0; k < 3; k++) {
        fprintf(f, "<polyline class=\"%s\" fill=\"none\" %s points=\"", classes[k], styles[k]);
        double window = 0;
        for (int s = 0; s < n; s++) {
            window += hist->loss[s] - (s >= 50 ? hist->loss[s - 50] : 0);
            double v = k == 0 ? hist->loss[s] : k == 1 ? window / (s < 50 ? s + 1 : 50) : hist->lr[s];
            double y = k == 2 ? svg_y(v, 0, lr_hi, Y0, Y1) : svg_y(v, lo, hi, Y0, Y1);
            fprintf(f, "%.1f,%.1f ", X0 + (X1 - X0) * (double)s / last, y);
        }
        fprintf(f, "\"/>\n");
    }
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
