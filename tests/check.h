/*
tests/check.h: what test_gpt2.c and test_seq2seq.c share: a check that prints PASS or FAIL
with its line and counts it (CHECK_STOP_AT_FAIL=1: exits at the first failure), and the
thread count for tiny models.
*/
#ifndef TESTS_CHECK_H
#define TESTS_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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
