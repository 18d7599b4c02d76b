/*
util/io.h: errors and checked I/O. Plumbing: a reader of the model may skip it.

Every failure is one clear line naming the file, flag or source line, then a non-zero
exit (EXIT_BAD_INPUT for bad files and failures, EXIT_USAGE for bad flags): never a
crash. Writes go to a temporary file that is flushed and renamed over the target, so a
crash leaves the old file or the new one, never half of one.
*/
#ifndef UTIL_IO_H
#define UTIL_IO_H

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define EXIT_BAD_INPUT 1
#define EXIT_USAGE 2

// the program that errors name (data/prepare sets its own)
static const char* error_program = "train_gpt2";

// An error during a group of atomic writes (a checkpoint and its state file, say) removes
// the temporary file being written and the files of the group already committed, so a full
// disk leaves the previous checkpoint as the newest, and no stray file (atomic_open below).
static char atomic_pending[4096];        // the temporary file being written, or ""
static char atomic_group[8][4096];       // committed since the last atomic_keep()
static int atomic_group_size;
static inline void atomic_undo(void) {
    if (atomic_pending[0]) remove(atomic_pending);
    for (int i = 0; i < atomic_group_size; i++)
        remove(atomic_group[i]);
    atomic_pending[0] = 0;
    atomic_group_size = 0;
}

// print_usage_to: the program's usage, printed after a bad flag's line (set by the program
// that parses flags). dist_exit_hook: set by util/dist.h when several processes train
// together; it says the line once for all of them and ends them all (together: every
// process meets this error at the same step, as a stop they agreed on).
static void (*print_usage_to)(FILE*);
static void (*dist_exit_hook)(const char* line, int status, int together);

// "train_gpt2: error: " and the message, one line on stderr, then exit with status
static inline void fail(int status, int together, const char* fmt, va_list ap) {
    static char line[16384];
    vsnprintf(line, sizeof line, fmt, ap);
    atomic_undo();
    if (dist_exit_hook) dist_exit_hook(line, status, together);
    fprintf(stderr, "%s: error: %s\n", error_program, line);
    if (status == EXIT_USAGE && print_usage_to) print_usage_to(stderr);
    exit(status);
}

// a bad file, a failed write, a run that cannot go on
static inline void die(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail(EXIT_BAD_INPUT, 0, fmt, ap);
}

// the same, for a stop that every process of a data-parallel run reaches at the same step
// (a loss that is not finite, a signal they agreed on); one process alone: die
static inline void die_together(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail(EXIT_BAD_INPUT, 1, fmt, ap);
}

// a bad flag: the error line, then the program's usage, exit status EXIT_USAGE
static inline void usage_error(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail(EXIT_USAGE, 0, fmt, ap);
}

// fopen/fread/malloc that name the file (and the source line) when they fail
// A directory or a device opened to be read is named as such (it would otherwise look like
// an empty or truncated file); a pipe is allowed.
static inline FILE* fopen_check(const char* path, const char* mode, const char* src, int line) {
    struct stat sb;
    int dir = 0, device = 0;
    if (mode[0] == 'r' && stat(path, &sb) == 0) {
        dir = S_ISDIR(sb.st_mode);
        device = S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode);
    }
    if (dir || device) die("'%s' is a %s, not a file [%s:%d]", path, dir ? "directory" : "device", src, line);
    FILE* f = fopen(path, mode);
    if (!f) die("cannot open '%s' (%s) [%s:%d]", path, strerror(errno), src, line);
    return f;
}
#define fopenCheck(path, mode) fopen_check(path, mode, __FILE__, __LINE__)

static inline void fread_check(void* dst, size_t size, size_t count, FILE* f, const char* path,
                               const char* what) {
    if (fread(dst, size, count, f) != count)
        die("'%s' is truncated: it ends inside the %s", path, what);
}

static inline void fwrite_check(const void* src, size_t size, size_t count, FILE* f, const char* path) {
    if (fwrite(src, size, count, f) != count) die("cannot write '%s' (%s)", path, strerror(errno));
}

static inline void* malloc_check(size_t size, const char* src, int line) {
    void* p = malloc(size ? size : 1);
    if (!p) die("out of memory allocating %zu bytes [%s:%d]", size, src, line);
    return p;
}
#define mallocCheck(size) malloc_check(size, __FILE__, __LINE__)

static inline void* calloc_check(size_t count, size_t size, const char* src, int line) {
    void* p = calloc(count ? count : 1, size);
    if (!p) die("out of memory allocating %zu bytes [%s:%d]", count * size, src, line);
    return p;
}
#define callocCheck(count, size) calloc_check(count, size, __FILE__, __LINE__)

// the size of an open file, to check it against what its header promises
static inline long file_size(FILE* f) {
    long here = ftell(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, here, SEEK_SET);
    return size;
}

// reads the 256-int header every llm.c file starts with (doc/formats.md) and checks its magic
static inline void read_header(FILE* f, const char* path, int32_t header[256], int32_t magic,
                               const char* kind) {
    if (fread(header, sizeof(int32_t), 256, f) != 256)
        die("'%s' is truncated: shorter than the 1024-byte header of a %s", path, kind);
    if (header[0] != magic)
        die("'%s' is not a %s: magic number %d, expected %d", path, kind, header[0], magic);
}

// write to a temporary file, flush it to disk, then rename over the target: a crash
// leaves either the old file or the new one, never half of one
// A file larger than the size limit (ulimit -f) is a failed write, not a SIGXFSZ that kills.
static inline FILE* atomic_open(const char* path, char* tmp, size_t tmp_size) {
    signal(SIGXFSZ, SIG_IGN);
    struct stat sb;  // the rename would replace whatever is there: a device, a pipe, /dev/stdout
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        die("'%s' exists and is not a regular file (a %s): it is not replaced", path,
            S_ISDIR(sb.st_mode) ? "directory" : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "device" :
            S_ISFIFO(sb.st_mode) ? "pipe" : "special file");
    snprintf(tmp, tmp_size, "%s.tmp", path);
    FILE* f = fopenCheck(tmp, "wb");
    size_t n = strlen(tmp);
    if (n < sizeof atomic_pending) memcpy(atomic_pending, tmp, n + 1);
    return f;
}

static inline void atomic_commit(FILE* f, const char* tmp, const char* path) {
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) die("cannot flush '%s' (%s)", tmp, strerror(errno));
    if (fclose(f) != 0) die("cannot close '%s' (%s)", tmp, strerror(errno));
    if (rename(tmp, path) != 0) die("cannot rename '%s' to '%s' (%s)", tmp, path, strerror(errno));
    atomic_pending[0] = 0;
    size_t n = strlen(path);
    if (atomic_group_size < 8 && n < sizeof atomic_group[0])
        memcpy(atomic_group[atomic_group_size++], path, n + 1);
}

// the group of files written since the last call is complete: an error no longer removes them
static inline void atomic_keep(void) { atomic_group_size = 0; }

// An output directory, checked before any work: created if missing (one level: its parent
// must exist), and a file written and removed in it, so that a file, a missing parent or an
// unwritable directory is refused in the first second, not when the first result is saved.
static inline void check_output_dir(const char* dir, const char* flag) {
    struct stat sb;
    char probe[4096];
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) die("%s: '%s' is not a directory", flag, dir);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        die("%s: cannot create directory '%s' (%s)", flag, dir, strerror(errno));
    snprintf(probe, sizeof probe, "%s/.train_gpt2_write_test_%d", dir, (int)getpid());
    FILE* f = fopen(probe, "wb");
    if (!f || fclose(f) != 0) die("%s: cannot write in '%s' (%s)", flag, dir, strerror(errno));
    remove(probe);
}

// Ctrl-C (SIGINT) and SIGTERM, remembered rather than obeyed at once, so that the training
// loop can finish its step, save and stop (train_gpt2.c, stop_after)
static volatile sig_atomic_t stop_signal = 0;
static void on_stop_signal(int sig) { stop_signal = sig; }
static inline void catch_stop_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

// the threads a parallel region gets (OMP_NUM_THREADS, or the number of cores; 1 without OpenMP)
static inline int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static inline double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
