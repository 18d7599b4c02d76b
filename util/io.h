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

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "crc32c.h"  // the checksum of our own formats
#include "compat.h"  // what POSIX and Windows do differently: rename, fsync, mkdir, clocks
#ifdef _OPENMP
#include <omp.h>
#endif

#define EXIT_BAD_INPUT 1
#define EXIT_USAGE 2

// The state below (the program's name, the atomic writes under way, the hooks, the stop
// signal) is one per program. A program of one file defines it here. A program linked from
// several objects (make's train_gpt2: train_gpt2.o, the model, compiled apart) defines it in
// its main object, and the others, compiled with -DUTIL_IO_EXTERN, only declare it here: else
// each object would keep a copy of its own (a checkpoint written by the model would miss the
// group that the run's loop began, an error in the model would miss the processes' hook).
#ifdef UTIL_IO_EXTERN
#define IO_STATE extern
extern const char* error_program;
#else
#define IO_STATE
// the program that errors name (data/prepare sets its own)
const char* error_program = "train_gpt2";
#endif

// Atomic writes (atomic_open below). A group of them (a checkpoint, its state file and the
// loss curve; a -hf export's two files; data/prepare's outputs), begun by atomic_begin(),
// lands together: each file is written to its .tmp and flushed, and only atomic_keep()
// renames them all over their targets. An error before that removes the .tmp files and
// leaves every previous file as it was (a full disk at loss.svg keeps the old loss.tsv).
IO_STATE char atomic_pending[4096];        // the temporary file being written, or ""
IO_STATE struct { char tmp[4096], path[4096]; } atomic_staged[8];  // flushed, not yet renamed
IO_STATE int atomic_staged_count, atomic_grouped;
static inline void atomic_undo(void) {
    if (atomic_pending[0]) remove(atomic_pending);
    for (int i = 0; i < atomic_staged_count; i++)
        remove(atomic_staged[i].tmp);
    atomic_pending[0] = 0;
    atomic_staged_count = atomic_grouped = 0;
}

// print_usage_to: the program's usage (set by the program that parses flags); a bad
// flag's line is followed by one line saying where the usage is (-h), not by the usage,
// which would scroll the line itself off a small terminal. dist_exit_hook: set by
// util/dist.h when several processes train together; it says the line once for all of
// them and ends them all (together: every process meets this error at the same step, as
// a stop they agreed on).
IO_STATE void (*print_usage_to)(FILE*);
IO_STATE void (*dist_exit_hook)(const char* line, int status, int together);
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

// The CRC-32C of the file atomic_open is writing, over the bytes fwrite_check wrote to it, and of
// the last such file committed: a training state records its checkpoint's (util/run.h), computed
// as the checkpoint is written rather than read back.
IO_STATE FILE* atomic_file;
IO_STATE uint32_t atomic_crc, atomic_committed_crc;

static inline void fwrite_check(const void* src, size_t size, size_t count, FILE* f, const char* path) {
    if (fwrite(src, size, count, f) != count) die("cannot write '%s' (%s)", path, strerror(errno));
    if (f == atomic_file) atomic_crc = crc32c_update(atomic_crc, src, size * count);
}

// the CRC-32C of a whole file's bytes (as atomic_committed_crc is of a file written)
static inline uint32_t file_crc32c(const char* path) {
    FILE* f = fopen_check(path, "rb");
    static unsigned char buf[1 << 20];
    uint32_t crc = 0;
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) crc = crc32c_update(crc, buf, n);
    if (ferror(f)) die("cannot read '%s' (%s)", path, strerror(errno));
    fclose(f);
    return crc;
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

// A text the user gave (a -pr prompt), quoted in an error line: its first 40 bytes (not
// cutting a UTF-8 character), a line break as \n, and its length when it is longer, so that a
// 100 KB prompt is not echoed whole and the error stays one line. out: 160 bytes.
static inline const char* excerpt(const char* text, char out[160]) {
    size_t n = strlen(text), i = 0, o = 0;
    for (; i < n && i < 40 && o < 150; i++) {
        int newline = text[i] == '\n' || text[i] == '\r';
        if (newline) out[o++] = '\\';
        out[o++] = !newline ? text[i] : text[i] == '\n' ? 'n' : 'r';
    }
    while (i < n && i > 0 && ((unsigned char)text[i] & 0xC0) == 0x80 && o < 150) out[o++] = text[i++];
    out[o] = 0;
    if (i < n) snprintf(out + o, 160 - o, "... (%zu bytes)", n);
    return out;
}

// the size of a file whose size is checked against its header: a pipe or another stream,
// whose size is unknown (file_size: -1), is refused by name rather than called "-1 bytes"
static inline long long file_size_of(FILE* f, const char* path) {
    long long n = file_size(f);
    if (n < 0) die("'%s' has no size (a pipe?): it must be a regular file", path);
    return n;
}

// reads the 256-int header every llm.c file starts with (doc/formats.md) and checks its magic
static inline void read_header(FILE* f, const char* path, int32_t header[256], int32_t magic,
                               const char* kind) {
    if (fread(header, sizeof(int32_t), 256, f) != 256)
        die("'%s' is truncated: shorter than the 1024-byte header of a %s", path, kind);
    if (header[0] != magic)
        die("'%s' is not a %s: magic number %d, expected %d", path, kind, header[0], magic);
}

// The checksum of our own formats (the training state, checkpoint versions 104 and 201;
// doc/formats.md): CRC-32C of the header's slots 0..254 and then of the payload, in slot 255.
// crc: header_checksum(h), then crc32c_update over the payload's pieces in file order.
static inline uint32_t header_checksum(const int32_t h[256]) {
    return crc32c_update(0, h, 255 * sizeof(int32_t));
}
static inline void check_checksum(const char* path, const int32_t h[256], uint32_t crc) {
    if ((uint32_t)h[255] != crc)
        die("'%s' is damaged: its checksum (CRC-32C, header slot 255) is %08x, its bytes give %08x", path,
            (uint32_t)h[255], crc);
}

// header slots from..to are unused, and must be 0: a damaged file, or a newer program's
static inline void check_unused_slots(const char* path, const int32_t h[256], int from, int to) {
    for (int i = from; i <= to; i++)
        if (h[i] != 0)
            die("'%s': header slot %d is %d, expected 0 (the file is damaged, or a newer program's)",
                path, i, h[i]);
}

// the temporary file of path: path.tmp, created new (compat_create_new: never through a
// planted link). One left by a killed run is removed first; a link or anything but a
// regular file at that name is refused, not followed and not removed.
static inline FILE* atomic_create_tmp(const char* path, char* tmp, size_t tmp_size) {
    struct stat sb;
    if (snprintf(tmp, tmp_size, "%s.tmp", path) >= (int)tmp_size) die("'%s': the path is too long", path);
    FILE* f = compat_create_new(tmp);
    if (!f && errno == EEXIST && compat_lstat(tmp, &sb) == 0 && S_ISREG(sb.st_mode) && remove(tmp) == 0)
        f = compat_create_new(tmp);  // a killed run's leftover
    if (!f && errno == EEXIST)
        die("'%s' exists and is not a file a killed run left (a link, a directory?): it is not written "
            "through nor removed", tmp);
    if (!f) die("cannot create '%s' (%s)", tmp, strerror(errno));
    return f;
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
    FILE* f = atomic_create_tmp(path, tmp, tmp_size);
    atomic_file = f;
    atomic_crc = 0;
    size_t n = strlen(tmp);
    if (n < sizeof atomic_pending) memcpy(atomic_pending, tmp, n + 1);
    return f;
}

static inline void atomic_rename(const char* tmp, const char* path) {
    if (compat_rename(tmp, path) != 0) die("cannot rename '%s' to '%s' (%s)", tmp, path, strerror(errno));
}

// the file is complete: flushed to disk, then renamed over path, or in a group (atomic_begin)
// staged for atomic_keep to rename
static inline void atomic_commit(FILE* f, const char* tmp, const char* path) {
    if (fflush(f) != 0 || compat_fsync(fileno(f)) != 0) die("cannot flush '%s' (%s)", tmp, strerror(errno));
    if (f == atomic_file) atomic_committed_crc = atomic_crc, atomic_file = NULL;
    if (fclose(f) != 0) die("cannot close '%s' (%s)", tmp, strerror(errno));
    if (!atomic_grouped) {
        atomic_rename(tmp, path);
        atomic_pending[0] = 0;
        return;
    }
    int i = atomic_staged_count;
    if (i == 8 || strlen(tmp) >= sizeof atomic_staged[i].tmp || strlen(path) >= sizeof atomic_staged[i].path)
        die("internal: too many files in one group of writes (at '%s')", path);
    strcpy(atomic_staged[i].tmp, tmp);
    strcpy(atomic_staged[i].path, path);
    atomic_staged_count++;
    atomic_pending[0] = 0;
}

// the files written from here to atomic_keep() land together or not at all
static inline void atomic_begin(void) { atomic_grouped = 1; }

// the group is complete: every staged file renamed over its target. The new names first:
// a rename that adds a name (model_STEP.bin) can fail for want of room in the directory, and
// then the new names already landed are removed, leaving the directory as it was; a rename
// over an existing name (loss.tsv) needs no room, and comes after them.
static inline void atomic_keep(void) {
    int n = atomic_staged_count, order[8], is_new[8], k = 0;
    struct stat sb;
    for (int i = 0; i < n; i++)
        is_new[i] = stat(atomic_staged[i].path, &sb) != 0;
    for (int pass = 1; pass >= 0; pass--)  // the new names, then the replaced ones
        for (int i = 0; i < n; i++)
            if (is_new[i] == pass) order[k++] = i;
    atomic_grouped = 0;
    for (int landed = 0; landed < n; landed++) {
        int i = order[landed];
        if (compat_rename(atomic_staged[i].tmp, atomic_staged[i].path) == 0) continue;
        int error = errno;
        for (int j = 0; j < landed; j++)  // (all new names: the replacing renames come last)
            if (is_new[order[j]]) remove(atomic_staged[order[j]].path);
        die("cannot rename '%s' to '%s' (%s)", atomic_staged[i].tmp, atomic_staged[i].path, strerror(error));
    }
    atomic_staged_count = 0;
}

// is name a temporary file that atomic_open makes in an output directory (a checkpoint's,
// a state file's, the loss curve's, a -hf export's)?
static inline int is_our_temporary(const char* name) {
    static const char* fixed[] = {"loss.tsv.tmp", "loss.svg.tmp", "model.safetensors.tmp",
                                  "config.json.tmp"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (strcmp(name, fixed[i]) == 0) return 1;
    return n > 14 && (strncmp(name, "model_", 6) == 0 || strncmp(name, "state_", 6) == 0) &&
           strcmp(name + n - 8, ".bin.tmp") == 0;
}

// The temporary files a killed run left in dir are removed (one line says how many); a link
// or anything but a regular file by such a name is refused before any work (atomic_open would
// refuse it at the first save, not follow it).
static inline void remove_stale_temporaries(const char* dir, const char* flag) {
    DIR* d = opendir(dir);
    if (!d) return;
    int removed = 0;
    for (struct dirent* e; (e = readdir(d)) != NULL;) {
        char path[4096];
        struct stat sb;
        if (!is_our_temporary(e->d_name)) continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) continue;
        if (compat_lstat(path, &sb) != 0) continue;
        if (!S_ISREG(sb.st_mode)) {
            closedir(d);
            die("%s: '%s' is not a file a killed run left (a link, a directory?): it is not written through "
                "nor removed", flag, path);
        }
        removed += remove(path) == 0;
    }
    closedir(d);
    if (removed)
        printf("%s: removed %d temporary file%s that a killed run left in '%s'\n", flag, removed,
               removed == 1 ? "" : "s", dir);
}

// One run per output directory: the lock on DIR/.run.lock (util/compat.h), held until the
// process ends, taken before any file of the directory is read or removed. A second run into
// the directory (a script started twice) is refused in one line naming the holder's process id,
// rather than take the first run's temporary files for a killed run's and interleave its
// checkpoints with the first's. A lock outlives no process: a killed run's is gone.
static inline void lock_output_dir(const char* dir, const char* flag) {
    char path[4096];
    long holder = 0;
    snprintf(path, sizeof path, "%s/.run.lock", dir);
    int taken = compat_lock_file(path, &holder);
    if (taken == 0 || (taken == -1 && holder == (long)getpid())) return;  // (this process's: -o = -hf)
    if (taken == -2) die("%s: cannot lock '%s' (%s)", flag, path, strerror(errno));
    char who[64] = "another process";
    if (holder > 0) snprintf(who, sizeof who, "process %ld", holder);
    die("%s '%s' is in use by another run (%s holds '%s'): one run per output directory; wait for it to "
        "end, or choose another %s", flag, dir, who, path, flag);
}

// An output directory, checked before any work: created if missing (one level: its parent
// must exist), and a file written and removed in it, so that a file, a missing parent or an
// unwritable directory is refused in the first second, not when the first result is saved.
// It is locked for this run (lock_output_dir), then the temporary files a killed run left
// there are removed.
// The paths in it (DIR/state_00000000.bin.tmp, DIR/model.safetensors.tmp) must fit the
// program's 4096-byte path buffers: a longer DIR is refused here, not cut short at the save.
#define OUTPUT_NAME_ROOM 48  // the longest name put in an output directory, with room to spare
static inline void check_output_dir(const char* dir, const char* flag) {
    struct stat sb;
    char probe[4096];
    if (strlen(dir) + OUTPUT_NAME_ROOM >= sizeof probe)
        die("%s: the directory's path is %zu characters; at most %zu fit (the file names go after it)", flag,
            strlen(dir), sizeof probe - OUTPUT_NAME_ROOM - 1);
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) die("%s: '%s' is not a directory", flag, dir);
    if (compat_mkdir(dir) != 0 && errno != EEXIST)
        die("%s: cannot create directory '%s' (%s)", flag, dir, strerror(errno));
    snprintf(probe, sizeof probe, "%s/.train_gpt2_write_test_%d", dir, (int)getpid());
    FILE* f = compat_create_new(probe);
    if (!f || fclose(f) != 0) die("%s: cannot write in '%s' (%s)", flag, dir, strerror(errno));
    remove(probe);
    lock_output_dir(dir, flag);  // a .tmp is removed only when no live run holds the directory
    remove_stale_temporaries(dir, flag);
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
// loop can finish its step, save and stop (train_gpt2_main.c's train(), util/run.h's stop_after)
IO_STATE volatile sig_atomic_t stop_signal;
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
