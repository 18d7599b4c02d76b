/*
tests/article002.c: article 002's worked example (three tokens of width 2, fixed Wq, Wk, Wv)
computed by the program's own matmul and attention, with the reader's numbers. A command,
not a test: the same computation is checked against PyTorch in test_gpt2 (test_errata
E1-E4, test_article_example). Build and run:
  make tests/article002
  ./tests/article002                       the article's numbers, no mask (as it computes)
  ./tests/article002 -causal 1             with a GPT's causal mask
  ./tests/article002 -x "1 0; 0 1; 1 1" -wq "1 0; 0 1"
Each matrix is rows separated by ';', numbers by spaces or commas: X is T x d (any T, d),
Wq, Wk, Wv are d x d, and Q = X Wq as the article writes it (row vectors). One head, so the
scores are divided by sqrt(d).
*/
#include "train_gpt2.c"  // the model alone (its program is train_gpt2_main.c)

enum { MAX_ROWS = 64 };

// "a b; c d" -> rows x cols numbers (row-major); dies naming the flag on anything else
static float* parse_matrix(const char* flag, const char* text, int* rows, int* cols) {
    float* m = mallocCheck((size_t)MAX_ROWS * MAX_ROWS * sizeof(float));
    int r = 0, c = 0, n = 0;
    *cols = 0;
    for (const char* p = text;;) {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ';' || *p == 0) {
            if (c == 0 || (*cols && c != *cols))
                die("%s: row %d has %d numbers, not %d", flag, r + 1, c, *cols);
            *cols = c, c = 0, r++;
            if (*p++ == 0) break;
            continue;
        }
        char* end;
        float v = strtof(p, &end);
        if (end == p || !isfinite(v)) die("%s: '%.12s' is not a number", flag, p);
        if (r >= MAX_ROWS || c >= MAX_ROWS) die("%s: more than %d rows or columns", flag, MAX_ROWS);
        m[n++] = v, c++, p = end;
    }
    *rows = r;
    return m;
}

static void print_matrix(const char* name, const float* m, int rows, int cols, int stride) {
    printf("%s = [", name);
    for (int i = 0; i < rows; i++) {
        printf("%s[", i ? ", " : "");
        for (int j = 0; j < cols; j++)
            printf("%s%.4f", j ? ", " : "", m[(size_t)i * stride + j]);
        printf("]");
    }
    printf("]\n");
}

int main(int argc, char** argv) {
    error_program = "article002";
    const char* text[4] = {"0.1 0.2; 0.3 0.4; 0.5 0.6", "0.1 0.2; 0.3 0.4", "0.5 0.6; 0.7 0.8",
                           "0.9 1.0; 1.1 1.2"};  // the article's embeddings, Wq, Wk, Wv
    const char* flags[4] = {"-x", "-wq", "-wk", "-wv"};
    int causal = 0;
    for (int i = 1; i < argc; i += 2) {
        int k = 0;
        while (k < 4 && strcmp(argv[i], flags[k]) != 0) k++;
        if (i + 1 >= argc || (k == 4 && strcmp(argv[i], "-causal") != 0))
            die("usage: ./tests/article002 [-x ROWS] [-wq ROWS] [-wk ROWS] [-wv ROWS] [-causal 0|1] "
                "(ROWS: \"a b; c d\")");
        if (k < 4) text[k] = argv[i + 1];
        else if (strcmp(argv[i + 1], "0") && strcmp(argv[i + 1], "1")) die("-causal must be 1 or 0");
        else causal = argv[i + 1][0] == '1';
    }
    int T, d, rows, cols;
    float* X = parse_matrix("-x", text[0], &T, &d);
    float qkvw[3 * MAX_ROWS * MAX_ROWS];  // our matmul computes X W^T: each block holds W transposed
    for (int k = 1; k < 4; k++) {
        float* W = parse_matrix(flags[k], text[k], &rows, &cols);
        if (rows != d || cols != d)
            die("%s is %d x %d; X's width is %d, so it must be %d x %d", flags[k], rows, cols, d, d, d);
        for (int o = 0; o < d; o++)
            for (int i = 0; i < d; i++)
                qkvw[((k - 1) * d + o) * d + i] = W[i * d + o];
        free(W);
    }
    size_t f = sizeof(float), TT = (size_t)T * T;
    float *qkv = mallocCheck(T * 3 * d * f), *out = mallocCheck(T * d * f), *Q = mallocCheck(T * 2 * d * f);
    float *S = mallocCheck(TT * f), *scores = mallocCheck(TT * f), *probs = mallocCheck(TT * f);
    matmul_forward(qkv, X, qkvw, NULL, T, d, 3 * d);  // rows [Q K V]
    AttentionShape shape = {.B = 1, .T = T, .C = d, .NH = 1, .NKV = 1, .causal = causal};
    attention_forward(out, scores, probs, NULL, qkv, qkv + d, shape, NULL);
    for (int t = 0; t < T; t++)  // Q and K apart, for QK^T with the same matmul (S = Q K^T)
        for (int i = 0; i < d; i++)
            Q[t * d + i] = qkv[t * 3 * d + i], Q[(T + t) * d + i] = qkv[t * 3 * d + d + i];
    matmul_forward(S, Q, Q + (size_t)T * d, NULL, T, d, T);
    printf("article 002's example: %d tokens of width %d, one head, %s\n", T, d,
           causal ? "causal mask (-causal 1)" : "no mask (as the article computes)");
    print_matrix("Q", qkv, T, d, 3 * d);
    print_matrix("K", qkv + d, T, d, 3 * d);
    print_matrix("V", qkv + 2 * d, T, d, 3 * d);
    print_matrix("attention_scores = Q K^T", S, T, T, T);
    print_matrix("scaled_attention_scores (/ sqrt(d), masked: -inf)", scores, T, T, T);
    print_matrix("attention_weights", probs, T, T, T);
    print_matrix("attention_output", out, T, d, d);
    free(X); free(qkv); free(out); free(S); free(scores); free(probs); free(Q);
    return 0;
}
