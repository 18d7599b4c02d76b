/*
compare_runs.c: is a change beyond the seed's noise? Several training runs' loss curves in
one picture, and each run's final validation loss against the spread of a few seeds of the
baseline.

    ./compare_runs [-o compare.svg] -b BASE_DIR -b BASE_DIR [-b ...] [RUN_DIR ...]

Each DIR is a run's -o folder (train_gpt2 -o DIR): its loss.tsv (every step's training loss
and the validation losses) and its newest checkpoint, model_*.bin and state_*.bin, whose
headers label the run with the flags in which it differs from the first baseline run: the
shape (-nl -nh -nc -mt), the block variants (-kv -pe -ln -act -causal -ff), and -sd -b -t -x
from the training state. (A change of the code itself, say of the attention's scale, has
no flag: the folder's name says it.)

The noise: the baseline runs are one model trained with different seeds (-sd); their final
validation losses have mean m and sample standard deviation s over n seeds. One more seed
would land within 2 s sqrt(1 + 1/n) of m about 19 times in 20 (for normal noise; with n = 2
or 3 seeds, s itself is rough, so take the verdict as a rule of thumb). A run farther from
m than that is "beyond the seed's noise", otherwise "within the seed's noise". Runs that
stopped at another step than the baseline are listed but not judged.

The picture (-o, default compare.svg): left the whole runs, right their last quarter at a
finer scale; each run's training loss as the mean of the last 50 steps (a line) and its
validation losses (dots joined by a thicker line); the baseline's seeds in grey.
Exit status: 0; 1 for a folder without a readable loss.tsv; 2 for bad flags.
*/
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/io.h"
#include "util/state.h"
#include "util/svg.h"

#define MAX_RUNS 16

typedef struct {
    const char* dir;
    int baseline;                // given with -b
    int steps;                   // training losses: steps 0..steps-1
    float* loss;
    int vals;                    // validation losses
    int* val_step;
    float* val_loss;
    int header[256];             // the newest checkpoint's header (0s if none)
    TrainState state;            // its training state (step -1 if none)
    char label[512];             // the folder's name and its flags
} Run;

// ----------------------------------------------------------------------------
// reading a run: loss.tsv, then the headers of its newest checkpoint

static void read_losses(Run* r) {
    char path[4096], line[256];
    snprintf(path, sizeof path, "%s/loss.tsv", r->dir);
    FILE* f = fopen(path, "r");
    if (!f) die("'%s': no loss.tsv (%s): give the -o folder of a training run", r->dir, strerror(errno));
    int cap = 0, vcap = 0, s;
    float a, b;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "val %d %f", &s, &a) == 2) {
            if (r->vals == vcap) {
                vcap = 2 * vcap + 16;
                r->val_step = realloc(r->val_step, (size_t)vcap * sizeof(int));
                r->val_loss = realloc(r->val_loss, (size_t)vcap * sizeof(float));
                if (!r->val_step || !r->val_loss) die("out of memory reading '%s'", path);
            }
            r->val_step[r->vals] = s;
            r->val_loss[r->vals++] = a;
        } else if (sscanf(line, "%d %f %f", &s, &a, &b) == 3 && s == r->steps) {
            if (r->steps == cap) {
                cap = 2 * cap + 256;
                r->loss = realloc(r->loss, (size_t)cap * sizeof(float));
                if (!r->loss) die("out of memory reading '%s'", path);
            }
            r->loss[r->steps++] = a;
        }
    }
    fclose(f);
    if (r->vals == 0) die("'%s' has no validation loss (a run with -v 0?): nothing to compare", path);
}

static void read_headers(Run* r) {
    r->state.step = -1;
    int step = latest_checkpoint(r->dir, 0);
    if (step < 0) return;  // a run without checkpoints: labelled by its folder alone
    char path[4096];
    snprintf(path, sizeof path, "%s/model_%08d.bin", r->dir, step);
    FILE* f = fopen(path, "rb");
    if (f) {
        if (fread(r->header, sizeof(int), 256, f) != 256) memset(r->header, 0, sizeof r->header);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/state_%08d.bin", r->dir, step);
    int32_t h[256];
    f = fopen(path, "rb");
    if (f && fread(h, sizeof(int32_t), 256, f) == 256 && h[0] == STATE_MAGIC) {
        r->state.step = h[2]; r->state.B = h[3]; r->state.T = h[4];
        r->state.seed = get_u64(h, 13);
        r->state.max_steps = h[18];
    }
    if (f) fclose(f);
}

// ----------------------------------------------------------------------------
// labels: the flags in which a run differs from the first baseline run

// a checkpoint's setting of the flag at header slot k (doc/formats.md); GPT-2's (llm.c's
// version 3) where a variant slot is absent
static int setting(const Run* r, int k) {
    const int* h = r->header;
    int variants = h[1] == 103 || h[1] == 104;
    if (k >= 8 && !variants) return k == 8 ? h[5] : 0;  // NKV = NH; the other variants 0
    if (k == 8 && h[8] == 0) return h[5];
    return h[k];
}

static void append(char* out, size_t n, const char* fmt, long long v) {
    size_t len = strlen(out);
    snprintf(out + len, n - len, fmt, v);
}

static void label_run(Run* r, const Run* base) {
    const char* name = strrchr(r->dir, '/');
    name = name && name[1] ? name + 1 : r->dir;
    snprintf(r->label, sizeof r->label, "%s", name);
    char flags[256] = "";
    static const struct { int slot; const char* flag; } SLOTS[] = {
        {4, " -nl %lld"}, {5, " -nh %lld"}, {6, " -nc %lld"}, {2, " -mt %lld"}, {8, " -kv %lld"},
        {9, " -pe %lld"}, {10, " -ln %lld"}, {11, " -act %lld"}, {12, " -causal %lld"}, {13, " -ff %lld"}};
    // the words of -pe, -ln, -act (util/cli.h's VARIANT_WORDS; cli.h would bring MPI's headers)
    static const char* const WORDS[3][4] = {{"learned", "rope", "sin"}, {"pre", "post"},
                                             {"gelu", "relu", "relu2"}};
    for (size_t i = 0; i < sizeof SLOTS / sizeof SLOTS[0]; i++) {
        int k = SLOTS[i].slot, v = setting(r, k);
        if (r->header[0] == 0 || v == setting(base, k)) continue;
        const char* word = k >= 9 && k <= 11 && v >= 0 && v < 4 ? WORDS[k - 9][v] : NULL;
        if (word) {
            size_t len = strlen(flags);
            snprintf(flags + len, sizeof flags - len, " %.*s %s", (int)strcspn(SLOTS[i].flag + 1, " "),
                     SLOTS[i].flag + 1, word);
        } else {
            append(flags, sizeof flags, SLOTS[i].flag, k == 12 ? !v : v);  // -causal 1 is mask 0
        }
    }
    const TrainState *s = &r->state, *b = &base->state;
    if (s->step >= 0 && b->step >= 0) {
        if (s->seed != b->seed || r->baseline) append(flags, sizeof flags, " -sd %lld", (long long)s->seed);
        if (s->B != b->B) append(flags, sizeof flags, " -b %lld", s->B);
        if (s->T != b->T) append(flags, sizeof flags, " -t %lld", s->T);
        if (s->max_steps != b->max_steps) append(flags, sizeof flags, " -x %lld", s->max_steps);
    }
    if (flags[0]) {
        size_t len = strlen(r->label);
        snprintf(r->label + len, sizeof r->label - len, " (%s)", flags + 1);
    }
}

// ----------------------------------------------------------------------------
// the verdict: each final validation loss against the baseline seeds' spread

static float final_val(const Run* r) { return r->val_loss[r->vals - 1]; }
static int final_step(const Run* r) { return r->val_step[r->vals - 1]; }

static void print_verdicts(const Run* runs, int n, const Run* base) {
    int nb = 0;
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++)
        if (runs[i].baseline) mean += final_val(&runs[i]), nb++;
    mean /= nb;
    for (int i = 0; i < n; i++)
        if (runs[i].baseline) var += (final_val(&runs[i]) - mean) * (final_val(&runs[i]) - mean);
    double sd = sqrt(var / (nb - 1)), noise = 2.0 * sd * sqrt(1.0 + 1.0 / nb);
    int step0 = final_step(base);
    printf("baseline: %d seeds, final val loss (step %d) mean %.4f, standard deviation %.4f; one more "
           "seed lands within +-%.4f of the mean about 19 times in 20\n", nb, step0, mean, sd, noise);
    for (int i = 0; i < n; i++) {
        const Run* r = &runs[i];
        double d = final_val(r) - mean;
        printf("%-44s val %.4f  %+.4f  ", r->label, final_val(r), d);
        if (final_step(r) != step0)
            printf("not judged: its last validation is at step %d, the baseline's at %d\n", final_step(r), step0);
        else if (r->baseline)
            printf("a baseline seed\n");
        else if (fabs(d) <= noise)
            printf("within the seed's noise\n");
        else
            printf("beyond the seed's noise (%s by %.4f, %.1f times the noise)\n", d < 0 ? "lower" : "higher",
                   fabs(d), fabs(d) / noise);
    }
}

// ----------------------------------------------------------------------------
// the picture: two panels (the whole runs, their last quarter), a legend below

typedef struct { int x0, x1, y0, y1; int from, to; double lo, hi; } Panel;  // y0: bottom

static double panel_x(const Panel* p, int step) {
    return p->x0 + (p->x1 - p->x0) * (double)(step - p->from) / (p->to - p->from);
}

// the lowest and highest loss drawn in steps from..to (the training loss as its 50-step mean)
static void panel_range(Panel* p, const Run* runs, int n) {
    p->lo = 1e30, p->hi = -1e30;
    for (int i = 0; i < n; i++) {
        double window = 0;
        for (int s = 0; s < runs[i].steps; s++) {
            window += runs[i].loss[s] - (s >= 50 ? runs[i].loss[s - 50] : 0);
            double v = window / (s < 50 ? s + 1 : 50);
            if (s >= p->from && s <= p->to) p->lo = fmin(p->lo, v), p->hi = fmax(p->hi, v);
        }
        for (int v = 0; v < runs[i].vals; v++)
            if (runs[i].val_step[v] >= p->from && runs[i].val_step[v] <= p->to)
                p->lo = fmin(p->lo, runs[i].val_loss[v]), p->hi = fmax(p->hi, runs[i].val_loss[v]);
    }
    double pad = 0.05 * (p->hi - p->lo) + 1e-3;
    p->lo -= pad, p->hi += pad;
}

static void draw_axes(FILE* f, const Panel* p, const char* title) {
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n", p->x0, p->y1 - 8, title);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", p->x0,
            p->y1, p->x1 - p->x0, p->y0 - p->y1);
    double span = p->hi - p->lo, tick = span > 2 ? 0.5 : span > 0.5 ? 0.1 : span > 0.1 ? 0.02 : 0.005;
    for (double v = ceil(p->lo / tick) * tick; v <= p->hi; v += tick) {
        double y = svg_y(v, p->lo, p->hi, p->y0, p->y1);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/><text x=\"%d\" y=\"%.1f\" "
                   "text-anchor=\"end\">%.*f</text>\n", p->x0, y, p->x1, y, p->x0 - 4, y + 4,
                tick < 0.01 ? 3 : tick < 0.1 ? 2 : 1, v);
    }
    for (int i = 0; i <= 4; i++)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n",
                panel_x(p, p->from + (p->to - p->from) * i / 4), p->y0 + 16, p->from + (p->to - p->from) * i / 4);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n", (p->x0 + p->x1) / 2, p->y0 + 32);
}

static void draw_run(FILE* f, const Panel* p, const Run* r, const char* colour) {
    fprintf(f, "<polyline class=\"train-mean\" fill=\"none\" stroke=\"%s\" stroke-width=\"1\" points=\"", colour);
    double window = 0;
    for (int s = 0; s < r->steps; s++) {
        window += r->loss[s] - (s >= 50 ? r->loss[s - 50] : 0);
        if (s >= p->from && s <= p->to)
            fprintf(f, "%.1f,%.1f ", panel_x(p, s), svg_y(window / (s < 50 ? s + 1 : 50), p->lo, p->hi, p->y0, p->y1));
    }
    fprintf(f, "\"/>\n<polyline class=\"val\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.5\" points=\"", colour);
    for (int v = 0; v < r->vals; v++)
        if (r->val_step[v] >= p->from && r->val_step[v] <= p->to)
            fprintf(f, "%.1f,%.1f ", panel_x(p, r->val_step[v]), svg_y(r->val_loss[v], p->lo, p->hi, p->y0, p->y1));
    fprintf(f, "\"/>\n");
    for (int v = 0; v < r->vals; v++)
        if (r->val_step[v] >= p->from && r->val_step[v] <= p->to)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", panel_x(p, r->val_step[v]),
                    svg_y(r->val_loss[v], p->lo, p->hi, p->y0, p->y1), colour);
}

static void write_compare_svg(const char* path, const Run* runs, int n) {
    static const char* const PALETTE[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
                                          "#e377c2", "#8c564b"};
    static const char* const GREYS[] = {"#555", "#888", "#aaa", "#777", "#999", "#666"};
    int last = 1;
    for (int i = 0; i < n; i++) {
        if (runs[i].steps - 1 > last) last = runs[i].steps - 1;
        if (final_step(&runs[i]) > last) last = final_step(&runs[i]);
    }
    int W = 900, H = 400 + 16 * n;
    Panel whole = {60, 420, 330, 50, 0, last, 0, 0}, end = {500, 860, 330, 50, last - last / 4, last, 0, 0};
    panel_range(&whole, runs, n);
    panel_range(&end, runs, n);
    char tmp[4096];
    FILE* f = atomic_open(path, tmp, sizeof tmp);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\" font-size=\"12\" data-runs=\"%d\">\n<rect width=\"100%%\" "
               "height=\"100%%\" fill=\"white\"/>\n", W, H, W, H, n);
    fprintf(f, "<text x=\"14\" y=\"190\" transform=\"rotate(-90 14 190)\" text-anchor=\"middle\">loss "
               "(nats/token)</text>\n");
    draw_axes(f, &whole, "the whole runs");
    draw_axes(f, &end, "the last quarter");
    int colour = 0, grey = 0;
    for (int i = 0; i < n; i++) {
        const char* c = runs[i].baseline ? GREYS[grey++ % 6] : PALETTE[colour++ % 8];
        draw_run(f, &whole, &runs[i], c);
        draw_run(f, &end, &runs[i], c);
        int y = 390 + 16 * i;
        fprintf(f, "<line x1=\"60\" y1=\"%d\" x2=\"90\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2.5\"/>"
                   "<text x=\"96\" y=\"%d\">", y - 4, y - 4, c, y);
        svg_put_text(f, runs[i].label);
        fprintf(f, "%s: final val loss %.4f</text>\n", runs[i].baseline ? ", a baseline seed" : "",
                final_val(&runs[i]));
    }
    fprintf(f, "<text x=\"60\" y=\"%d\" font-size=\"11\" fill=\"#555\">thin: training loss, mean of the last 50 "
               "steps; thick with dots: validation loss</text>\n</svg>\n", 390 + 16 * n);
    atomic_commit(f, tmp, path);
}

int main(int argc, char** argv) {
    error_program = "compare_runs";
    static Run runs[MAX_RUNS];
    int n = 0, nb = 0;
    const char* svg = "compare.svg";
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: ./compare_runs [-o compare.svg] -b BASE_DIR -b BASE_DIR [-b ...] [RUN_DIR ...]\n"
                   "  -b DIR  a baseline run: the same flags, another seed (-sd); two or more\n"
                   "  DIR     a run to compare (train_gpt2 -o DIR)\n"
                   "  -o FILE the picture (default compare.svg)\n");
            return 0;
        }
    for (int i = 1; i < argc; i++) {
        int base = strcmp(argv[i], "-b") == 0;
        if ((base || strcmp(argv[i], "-o") == 0) && i + 1 >= argc) usage_error("flag %s needs a value", argv[i]);
        if (strcmp(argv[i], "-o") == 0) { svg = argv[++i]; continue; }
        if (!base && argv[i][0] == '-') usage_error("unknown flag '%s'", argv[i]);
        if (n == MAX_RUNS) usage_error("at most %d runs", MAX_RUNS);
        runs[n].baseline = base;
        runs[n++].dir = argv[base ? ++i : i];
        nb += base;
    }
    if (nb < 2)
        usage_error("give at least two baseline runs (-b DIR -b DIR): the same flags with different seeds "
                    "(-sd), to measure the noise");
    for (int i = 0; i < n; i++) {  // the baseline first: the labels' reference
        read_losses(&runs[i]);
        read_headers(&runs[i]);
    }
    int first = 0;
    while (!runs[first].baseline) first++;
    for (int i = 0; i < n; i++)
        label_run(&runs[i], &runs[first]);
    print_verdicts(runs, n, &runs[first]);
    write_compare_svg(svg, runs, n);
    printf("the curves: %s\n", svg);
    return 0;
}
