/*
tests/check.h: what test_gpt2.c and test_seq2seq.c share: a check that prints PASS or FAIL
with its line and counts it (CHECK_STOP_AT_FAIL=1: exits at the first failure), the named
groups of checks that -k WORD selects from, and the thread count for tiny models.
*/
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed = 0, failed = 0;

static int check(int ok, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "PASS" : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok) passed++; else failed++;
    // tests/mutations.sh: a mutant is caught at its first failing check; the rest need not run
    if (!ok && getenv("CHECK_STOP_AT_FAIL")) {
        printf("stopped at the first failure (CHECK_STOP_AT_FAIL is set)\n");
        exit(1);
    }
    return ok;
}

// ----------------------------------------------------------------------------
// named groups of checks: a program's main is a table of them, run in order; `-k WORD` runs
// only the groups whose names contain WORD (any case; a space, '-' or '_' matches any of
// the three), so that a learner can run the checks of the layer being changed alone;
// `-k '!WORD'` runs the others (CI's ARM64 stage under an emulator leaves out the slowest)

typedef struct { const char* name; void (*run)(void); } CheckGroup;

static int same_name_char(char a, char b) {
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
    if (a == ' ' || a == '-') a = '_';
    if (b == ' ' || b == '-') b = '_';
    return a == b;
}

static int name_contains(const char* name, const char* word) {
    if (!word) return 1;
    size_t n = strlen(word);
    for (const char* p = name; *p; p++) {
        size_t i = 0;
        while (i < n && p[i] && same_name_char(p[i], word[i])) i++;
        if (i == n) return 1;
    }
    return n == 0;
}

// whether WORD (NULL: every group; "!WORD": the groups it would not select) selects NAME
static int selects(const char* name, const char* word) {
    return word && word[0] == '!' ? !name_contains(name, word + 1) : name_contains(name, word);
}

// runs the groups that WORD selects (NULL: all), prints "N passed, M failed" and returns the
// exit status: 0 only if every check passed; 2 if WORD selects no group (the names listed)
static int run_check_groups(const char* program, const CheckGroup* groups, int n, const char* word) {
    int selected = 0;
    for (int i = 0; i < n; i++)
        selected += selects(groups[i].name, word);
    if (selected == 0) {
        fprintf(stderr, "%s: -k %s selects no group of checks; the groups are:\n", program, word);
        for (int i = 0; i < n; i++)
            fprintf(stderr, "  %s\n", groups[i].name);
        return 2;
    }
    for (int i = 0; i < n; i++)
        if (selects(groups[i].name, word)) groups[i].run();
    if (word) printf("-k %s: %d of %d groups of checks\n", word, selected, n);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

// -l: the groups' names, one a line
static int list_check_groups(const CheckGroup* groups, int n) {
    for (int i = 0; i < n; i++)
        printf("%s\n", groups[i].name);
    return 0;
}

// sets the number of threads; returns the number before
static int use_threads(int n) {
#ifdef _OPENMP
    int before = omp_get_max_threads();
    omp_set_num_threads(n);
    return before;
#else
    return n;
#endif
}

#endif
