/*
util/io.h: errors and checked I/O. Plumbing: a reader of the model may skip it.

Every failure is one clear line naming the file or flag, then a non-zero exit
(EXIT_BAD_INPUT for bad files and failures, EXIT_USAGE for bad flags): never a crash.
No line names a source file: every check here guards the user's input (flags, files,
memory for the shape asked for), and a user cannot act on "[util/io.h:98]"; the tests
(make test, tests/newcomer.sh) check that no message carries one. Writes go to a
temporary file that is flushed and renamed over the target, so a crash leaves the old
file or the new one, never half of one.
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
#include "compat.h"  // what POSIX and Windows do differently: rename, fsync, mkdir, clocks
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

// print_usage_to: the program's usage (set by the program that parses flags); a bad
// flag's line is followed by one line saying where the usage is (-h), not by the usage,
// which would scroll the line itself off a small terminal. dist_exit_hook: set by
// util/dist.h when several processes train together; it says the line once for all of
// them and ends them all (together: every process meets this error at the same step, as
// a stop they agreed on).
static void (*print_usage_to)(FILE*);
static void (*dist_exit_hook)(const char* line, int status, int together);
// "error: " before a failure's line; "" before a stop the user asked for (Ctrl-C)
static const char* fail_label = "error: ";

// "train_gpt2: error: " and the message, one line on stderr, then exit with status
static inline void fail(int status, int together, const char* fmt, va_list ap) {
    static char line[16384];
    vsnprintf(line, sizeof line, fmt, ap);
    atomic_undo();
    if (dist_exit_hook) dist_exit_hook(line, status, together);
    fprintf(stderr, "%s: %s%s\n", error_program, fail_label, line);
    if (status == EXIT_USAGE && print_usage_to)
        fprintf(stderr, "%s: run with -h for the flags\n", error_program);
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

// a stop the user asked for (Ctrl-C, SIGTERM), reached by every process together: its
// line without "error:", exit status 1 all the same (a script sees the run unfinished)
static inline void stop_together(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_label = "";
    fail(EXIT_BAD_INPUT, 1, fmt, ap);
}

// a bad flag: the error line, then "run with -h for the flags", exit status EXIT_USAGE
static inline void usage_error(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail(EXIT_USAGE, 0, fmt, ap);
}

// fopen/fread/malloc that name the file (or the bytes asked for) when they fail
// A directory or a device opened to be read is named as such (it would otherwise look like
// an empty or truncated file); a pipe is allowed.
static inline FILE* fopen_check(const char* path, const char* mode) {
    struct stat sb;
    int dir = 0, device = 0;
    if (mode[0] == 'r' && stat(path, &sb) == 0) {
        dir = S_ISDIR(sb.st_mode);
        device = S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode);
    }
    if (dir || device) die("'%s' is a %s, not a file", path, dir ? "directory" : "device");
    FILE* f = fopen(path, mode);
    if (!f) die("cannot open '%s' (%s)", path, strerror(errno));
    return f;
}
#define fopenCheck(path, mode) fopen_check(path, mode)

static inline void fread_check(void* dst, size_t size, size_t count, FILE* f, const char* path,
                               const char* what) {
    if (fread(dst, size, count, f) != count)
        die("'%s' is truncated: it ends inside the %s", path, what);
}

static inline void fwrite_check(const void* src, size_t size, size_t count, FILE* f, const char* path) {
    if (fwrite(src, size, count, f) != count) die("cannot write '%s' (%s)", path, strerror(errno));
}

static inline void* malloc_check(size_t size) {
    void* p = malloc(size ? size : 1);
    if (!p) die("out of memory allocating %zu bytes", size);
    return p;
}
#define mallocCheck(size) malloc_check(size)

static inline void* calloc_check(size_t count, size_t size) {
    void* p = calloc(count ? count : 1, size);
    if (!p) die("out of memory allocating %zu bytes", count * size);
    return p;
}
#define callocCheck(count, size) calloc_check(count, size)

// the size of an open file, to check it against what its header promises (64 bits: long is
// 32 on Windows, and checkpoints pass 2 GiB)
static inline long long file_size(FILE* f) {
    int64_t here = compat_ftell(f);
    compat_fseek(f, 0, SEEK_END);
    int64_t size = compat_ftell(f);
    compat_fseek(f, here, SEEK_SET);
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
    compat_ignore_file_size_signal();
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
    if (fflush(f) != 0 || compat_fsync(fileno(f)) != 0) die("cannot flush '%s' (%s)", tmp, strerror(errno));
    if (fclose(f) != 0) die("cannot close '%s' (%s)", tmp, strerror(errno));
    if (compat_rename(tmp, path) != 0) die("cannot rename '%s' to '%s' (%s)", tmp, path, strerror(errno));
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
    if (compat_mkdir(dir) != 0 && errno != EEXIST)
        die("%s: cannot create directory '%s' (%s)", flag, dir, strerror(errno));
    snprintf(probe, sizeof probe, "%s/.train_gpt2_write_test_%d", dir, (int)getpid());
    FILE* f = fopen(probe, "wb");
    if (!f || fclose(f) != 0) die("%s: cannot write in '%s' (%s)", flag, dir, strerror(errno));
    remove(probe);
}

// A default path (data/..., relative to the repository) that is not in the working
// directory: the same path under the repository the program was built in (the directory
// of the program's file, levels_up above it: 1 for data/prepare), if it is there, so that
// `~/llm/train_gpt2` works from any directory. Returns path itself otherwise (whose error,
// if it is needed, names the flag that sets it). The result lives until the program ends.
static inline const char* find_default_path(const char* path, int levels_up) {
    static char found[4][4096];
    static int used;
    char exe[4096];
    struct stat sb;
    if (compat_is_absolute(path) || stat(path, &sb) == 0 || used == 4) return path;
    if (compat_exe_path(exe, sizeof exe) != 0) return path;
    for (int up = 0; up <= levels_up; up++) {  // the program's file name, then levels_up directories
        char* slash = strrchr(exe, '/');
        if (!slash) return path;
        *slash = 0;
    }
    if (snprintf(found[used], sizeof found[used], "%s/%s", exe, path) >= (int)sizeof found[used]) return path;
    return stat(found[used], &sb) == 0 ? found[used++] : path;
}

// a file that must exist, set by flag (is_default: flag was not given): one line naming
// the flag if it does not
static inline void require_file(const char* path, const char* flag, int is_default) {
    struct stat sb;
    if (stat(path, &sb) == 0) return;
    if (is_default)
        die("%s: the default '%s' is not here nor beside the program (run make, which prepares it, or "
            "set %s)", flag, path, flag);
    die("%s '%s': %s", flag, path, strerror(errno));
}

// Ctrl-C (SIGINT) and SIGTERM, remembered rather than obeyed at once, so that the training
// loop can finish its step, save and stop (train_gpt2.c, stop_after)
static volatile sig_atomic_t stop_signal = 0;
static void on_stop_signal(int sig) { stop_signal = sig; }
static inline void catch_stop_signals(void) { compat_catch_stop_signals(on_stop_signal); }

// the threads a parallel region gets (OMP_NUM_THREADS, or the number of cores; 1 without OpenMP)
static inline int max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static inline double now_seconds(void) { return compat_seconds(); }

#endif
