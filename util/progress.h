/*
util/progress.h: how long, and how much longer. Plumbing: durations as text, and the
progress line of a long loop (validation on a large file).
*/
#ifndef UTIL_PROGRESS_H
#define UTIL_PROGRESS_H

#include <stdio.h>
#include "io.h"
#include "dist.h"

// seconds as "42.0s", "12m05s" or "3h07m"
static const char* format_duration(double seconds, char* buf, size_t size) {
    long s = seconds > 0 ? (long)(seconds + 0.5) : 0;
    if (seconds < 60) snprintf(buf, size, "%.1fs", seconds > 0 ? seconds : 0.0);
    else if (s < 3600) snprintf(buf, size, "%ldm%02lds", s / 60, s % 60);
    else snprintf(buf, size, "%ldh%02ldm", s / 3600, s % 3600 / 60);
    return buf;
}

// the progress of a loop that started at `start` (now_seconds()) and has done `done` of
// `total`: nothing in its first second, then a line on stdout every 10 s; process 0 alone.
// (Lines, not a line rewritten with \r: mpirun's output and logs stay readable.)
static inline void show_progress(const char* what, int done, int total, double start) {
    static double last;
    double now = now_seconds(), elapsed = now - start;
    if (dist.rank != 0 || elapsed < 1.0 || done == total || (now - last < 10.0 && last > start)) return;
    char took[32], eta[32];
    last = now;
    printf("%s: %d/%d, %s, ETA %s\n", what, done, total, format_duration(elapsed, took, sizeof took),
           format_duration(elapsed / done * (total - done), eta, sizeof eta));
    fflush(stdout);
}

#endif
