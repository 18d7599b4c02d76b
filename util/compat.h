/*
util/compat.h: what POSIX (Linux, macOS) and Windows (MinGW-w64) do differently, in one
place. Plumbing: a reader of the model may skip it. Each shim is the POSIX call, and on
Windows the nearest equivalent, with why it is needed; nothing else in the program asks
which system it runs on. Paths are byte strings in the program's code page on Windows (the
*A functions, as fopen), with '/' accepted as the separator (Windows takes both).
*/
#ifndef UTIL_COMPAT_H
#define UTIL_COMPAT_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>  // open's O_EXCL, O_NOFOLLOW (compat_create_new)
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN  // windows.h without most of what it brings: no GDI (its ERROR),
#define NOGDI                // no min/max macros
#define NOMINMAX
#include <windows.h>
#undef near  // empty macros of 16-bit Windows, which would eat variables of these names
#undef far
#include <direct.h>  // _mkdir
#include <io.h>      // _commit
#else
#include <glob.h>
#include <sys/wait.h>
#endif
#ifdef __APPLE__
#include <mach-o/dyld.h>  // _NSGetExecutablePath
#endif

#ifdef _WIN32
// a Windows error (GetLastError) as the errno value strerror names best
static inline int compat_errno_of(DWORD error) {
    switch (error) {
    case ERROR_FILE_NOT_FOUND: case ERROR_PATH_NOT_FOUND: return ENOENT;
    case ERROR_ACCESS_DENIED: case ERROR_SHARING_VIOLATION: return EACCES;
    case ERROR_DISK_FULL: case ERROR_HANDLE_DISK_FULL: return ENOSPC;
    case ERROR_ALREADY_EXISTS: case ERROR_FILE_EXISTS: return EEXIST;
    default: return EIO;
    }
}
#endif

// rename(from, to) replacing to atomically. Windows' rename() fails when to exists (every
// checkpoint rewrite would die); MoveFileEx replaces it, and WRITE_THROUGH returns only
// once the move is on the disk, as the fsync before it did for the bytes.
static inline int compat_rename(const char* from, const char* to) {
#ifdef _WIN32
    if (MoveFileExA(from, to, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) return 0;
    errno = compat_errno_of(GetLastError());
    return -1;
#else
    return rename(from, to);
#endif
}

// ftell and fseek with 64-bit offsets: long is 32 bits on Windows, and a GPT-2 774M
// checkpoint is 3 GB
static inline int64_t compat_ftell(FILE* f) {
#ifdef _WIN32
    return _ftelli64(f);
#else
    return (int64_t)ftello(f);
#endif
}
static inline int compat_fseek(FILE* f, int64_t offset, int whence) {
#ifdef _WIN32
    return _fseeki64(f, offset, whence);
#else
    return fseeko(f, (off_t)offset, whence);
#endif
}

// an open file's bytes onto the disk (Windows: _commit, its fsync)
static inline int compat_fsync(int fd) {
#ifdef _WIN32
    return _commit(fd);
#else
    return fsync(fd);
#endif
}

// a directory with the usual permissions (Windows' mkdir has no mode argument)
static inline int compat_mkdir(const char* path) {
#ifdef _WIN32
    return _mkdir(path);
#else
    return mkdir(path, 0755);
#endif
}

// A new file opened for writing (binary), created by this call: O_EXCL fails if the name
// exists, whatever it is, so a symbolic link planted at a temporary file's name is never
// followed to overwrite its target; O_NOFOLLOW says the same where the name is a link.
// Windows has no O_NOFOLLOW (its _O_EXCL alone refuses an existing name, links included).
// Returns a FILE or NULL with errno (EEXIST: something has the name).
static inline FILE* compat_create_new(const char* path) {
#ifdef _WIN32
    int fd = _open(path, _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY, _S_IREAD | _S_IWRITE);
    FILE* f = fd < 0 ? NULL : _fdopen(fd, "wb");
    if (fd >= 0 && !f) _close(fd);
#else
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE* f = fd < 0 ? NULL : fdopen(fd, "wb");
    if (fd >= 0 && !f) close(fd);
#endif
    return f;
}

// The lock one run holds on its output folder (util/io.h's lock_output_dir): an exclusive lock
// on one byte of the file at path (created if missing; never through a link), held until the
// process ends, and this process's id written in the file. The byte lies far past the file's
// end: on Windows a locked range cannot be read, and the id must stay readable. POSIX: an
// fcntl lock (on macOS and Linux alike, and over NFS), which any close of the file by this
// process would drop, so the descriptor is never closed. Windows: LockFileEx.
// Returns 0 when taken; -1 when another process holds it, with *holder its id (0: unknown);
// -2 with errno when the file cannot be opened or locked.
#define COMPAT_LOCK_BYTE 0x40000000L
static inline long compat_read_pid(int fd) {
    char text[32] = {0};
    long pid = 0;
    if (lseek(fd, 0, SEEK_SET) == 0 && read(fd, text, sizeof text - 1) > 0) pid = strtol(text, NULL, 10);
    return pid;
}
static inline int compat_lock_file(const char* path, long* holder) {
    char text[32];
    int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
#ifdef _WIN32
    int fd = _open(path, _O_RDWR | _O_CREAT | _O_BINARY, _S_IREAD | _S_IWRITE);
    if (fd < 0) return -2;
    HANDLE h = (HANDLE)_get_osfhandle(fd);
    OVERLAPPED at;
    memset(&at, 0, sizeof at);
    at.Offset = (DWORD)COMPAT_LOCK_BYTE;
    if (!LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &at)) {
        DWORD error = GetLastError();
        *holder = compat_read_pid(fd);
        _close(fd);
        if (error == ERROR_LOCK_VIOLATION || error == ERROR_IO_PENDING) return -1;
        errno = compat_errno_of(error);
        return -2;
    }
    if (_chsize(fd, 0) != 0 || _lseek(fd, 0, SEEK_SET) != 0 || _write(fd, text, n) != n) return -2;
#else
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return -2;
    struct flock want;
    memset(&want, 0, sizeof want);
    want.l_type = F_WRLCK;
    want.l_whence = SEEK_SET;
    want.l_start = COMPAT_LOCK_BYTE;
    want.l_len = 1;
    if (fcntl(fd, F_SETLK, &want) != 0) {
        int error = errno;
        struct flock held = want;  // who holds it (the file's id may not be written yet)
        *holder = fcntl(fd, F_GETLK, &held) == 0 && held.l_type != F_UNLCK ? (long)held.l_pid : 0;
        if (*holder == 0) *holder = compat_read_pid(fd);
        close(fd);
        errno = error;
        return error == EACCES || error == EAGAIN ? -1 : -2;
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) return -2;
#endif
    return 0;  // (the file stays open: the lock lasts until the process ends)
}

// stat without following a symbolic link (Windows has no lstat: stat, which for the callers'
// question "is it a regular file?" gives the same answer but for links)
static inline int compat_lstat(const char* path, struct stat* sb) {
#ifdef _WIN32
    return stat(path, sb);
#else
    return lstat(path, sb);
#endif
}

// is path absolute ('/x'; on Windows also 'C:/x', 'C:\x' and '\x')
static inline int compat_is_absolute(const char* path) {
#ifdef _WIN32
    if (path[0] == '\\' || (path[0] && path[1] == ':')) return 1;
#endif
    return path[0] == '/';
}

// The program's own file, with '/' as the separator, into buf; 0 on success, -1 where the
// system does not say (Linux: /proc/self/exe; macOS: _NSGetExecutablePath; Windows:
// GetModuleFileName, whose '\' become '/'; elsewhere: -1, and callers do without).
static inline int compat_exe_path(char* buf, size_t size) {
#if defined(_WIN32)
    DWORD n = GetModuleFileNameA(NULL, buf, (DWORD)size);
    if (n == 0 || n >= size) return -1;  // (n == size: cut short)
    for (char* c = buf; *c; c++)
        if (*c == '\\') *c = '/';
    return 0;
#elif defined(__APPLE__)
    uint32_t n = (uint32_t)size;
    return _NSGetExecutablePath(buf, &n) == 0 ? 0 : -1;
#else
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0) return -1;
    buf[n] = 0;
    return 0;
#endif
}

// Aligned memory, freed with compat_aligned_free, never free(): Windows has no aligned_alloc,
// and its _aligned_malloc blocks must go back through _aligned_free. size: any (aligned_alloc
// wants a multiple of align: the callers round it).
static inline void* compat_aligned_alloc(size_t align, size_t size) {
#ifdef _WIN32
    return _aligned_malloc(size, align);
#else
    return aligned_alloc(align, size);
#endif
}
static inline void compat_aligned_free(void* p) {
#ifdef _WIN32
    _aligned_free(p);
#else
    free(p);
#endif
}

// SIGINT and SIGTERM call handler. POSIX: sigaction, which keeps it installed. Windows has
// only signal(), which puts back the default before the handler runs (a second Ctrl-C would
// kill the run mid-save), so the handler is called through one that installs itself again.
static void (*compat_stop_handler)(int);
static inline void compat_on_stop(int sig) {
#ifdef _WIN32
    signal(sig, compat_on_stop);
#endif
    compat_stop_handler(sig);
}
static inline void compat_catch_stop_signals(void (*handler)(int)) {
    compat_stop_handler = handler;
#ifdef _WIN32
    signal(SIGINT, compat_on_stop);
    signal(SIGTERM, compat_on_stop);
#else
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = compat_on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
#endif
}

// a file larger than the size limit (ulimit -f) is a failed write, not a SIGXFSZ that kills
// (Windows has neither)
static inline void compat_ignore_file_size_signal(void) {
#ifdef SIGXFSZ
    signal(SIGXFSZ, SIG_IGN);
#endif
}

// a monotonic clock in seconds (Windows: QueryPerformanceCounter; MinGW's clock_gettime
// would need libwinpthread)
static inline double compat_seconds(void) {
#ifdef _WIN32
    LARGE_INTEGER count, frequency;
    QueryPerformanceCounter(&count);
    QueryPerformanceFrequency(&frequency);
    return (double)count.QuadPart / (double)frequency.QuadPart;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
#endif
}

// where temporary files go: $TMPDIR, else /tmp; on Windows (no /tmp) %TEMP%, %TMP% or .
static inline const char* compat_temp_dir(void) {
    const char* dir = getenv("TMPDIR");
#ifdef _WIN32
    if (!dir || !dir[0]) dir = getenv("TEMP");
    if (!dir || !dir[0]) dir = getenv("TMP");
    return dir && dir[0] ? dir : ".";
#else
    return dir && dir[0] ? dir : "/tmp";
#endif
}

// the file that swallows what is written to it
#ifdef _WIN32
#define COMPAT_NULL_DEVICE "NUL"
#else
#define COMPAT_NULL_DEVICE "/dev/null"
#endif

// Runs the program exe with args (flags without quotes or spaces) through the shell, its
// stderr into the file err_path, and returns its exit status (-1: it did not exit, or a
// path holds a quote). A portable fork(): the shells quote differently (sh: '...'; cmd.exe:
// "...", and `cmd /c` strips a first and last quote, hence the outer pair; it wants '\').
static inline int compat_run(const char* exe, const char* args, const char* err_path) {
    char cmd[3 * 4096];
#ifdef _WIN32
    char paths[2][4096];
    const char* given[2] = {exe, err_path};
    for (int i = 0; i < 2; i++) {
        if (strchr(given[i], '"') || strlen(given[i]) >= sizeof paths[i]) return -1;
        strcpy(paths[i], given[i]);
        for (char* c = paths[i]; *c; c++)
            if (*c == '/') *c = '\\';
    }
    snprintf(cmd, sizeof cmd, "\"\"%s\" %s 2>\"%s\"\"", paths[0], args, paths[1]);
    fflush(NULL);
    return system(cmd);
#else
    if (strchr(exe, '\'') || strchr(err_path, '\'')) return -1;
    snprintf(cmd, sizeof cmd, "'%s' %s 2>'%s'", exe, args, err_path);
    fflush(NULL);
    int status = system(cmd);
    return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
#endif
}

// ----------------------------------------------------------------------------
// glob for Windows, which has none: the shard patterns of -i and -j ('dir/shard_*.bin').
// POSIX's glob(3) for a pattern whose wildcards (* ? [...]) are in its last part, the file
// name; matches sorted by strcmp, as glob sorts them in the C locale; a name starting with
// '.' matched only by a pattern starting with '.'. Compiled everywhere so that test_gpt2
// compares it with glob(3) on Linux; programs use it on Windows only.

enum { COMPAT_GLOB_NOSPACE = 1, COMPAT_GLOB_ABORTED = 2, COMPAT_GLOB_NOMATCH = 3 };
typedef struct { size_t gl_pathc; char** gl_pathv; } compat_glob_t;

// just past the ']' of the bracket expression at p ('[...]'), or NULL if it has none (then
// '[' is an ordinary character, as in glob); a ']' first in it is one of its characters
static inline const char* compat_glob_bracket_end(const char* p) {
    const char* q = p + 1;
    if (*q == '!' || *q == '^') q++;
    if (*q == ']') q++;
    while (*q && *q != ']') q++;
    return *q ? q + 1 : NULL;
}

// does the bracket expression from p to end hold c? Characters and ranges (a-z); '!' or '^'
// first: does it not
static inline int compat_glob_bracket(const char* p, const char* end, unsigned char c) {
    const char *q = p + 1, *close = end - 1;
    int negate = *q == '!' || *q == '^', in = 0;
    q += negate;
    while (q < close) {
        unsigned char lo = (unsigned char)q[0], hi = lo;
        if (q[1] == '-' && q + 2 < close) hi = (unsigned char)q[2], q += 2;
        in |= c >= lo && c <= hi;
        q++;
    }
    return in != negate;
}

// does the file name match the pattern (no '/' in either)? A '*' goes back only to the
// last '*': enough, as what an earlier one matched can only grow
static inline int compat_glob_match(const char* pattern, const char* name) {
    const char *p = pattern, *s = name, *star = NULL, *star_s = NULL;
    if (name[0] == '.' && pattern[0] != '.') return 0;
    while (*s) {
        const char *next = NULL, *end;  // next: p past the one character, if it matches *s
        if (*p == '*') {
            star = ++p, star_s = s;
            continue;
        }
        if (*p == '?') next = p + 1;
        else if (*p == '[' && (end = compat_glob_bracket_end(p)) != NULL)
            next = compat_glob_bracket(p, end, (unsigned char)*s) ? end : NULL;
        else if (*p && *p == *s) next = p + 1;
        if (next) p = next, s++;
        else if (star) p = star, s = ++star_s;
        else return 0;
    }
    while (*p == '*') p++;
    return *p == 0;
}

static inline int compat_glob_strcmp(const void* a, const void* b) {
    return strcmp(*(char* const*)a, *(char* const*)b);
}

static inline void compat_globfree(compat_glob_t* g) {
    for (size_t i = 0; i < g->gl_pathc; i++)
        free(g->gl_pathv[i]);
    free(g->gl_pathv);
    g->gl_pathc = 0, g->gl_pathv = NULL;
}

// 0 and the matches in g; or COMPAT_GLOB_NOMATCH (none, or no such directory, as glob says),
// COMPAT_GLOB_ABORTED (wildcards outside the file name), COMPAT_GLOB_NOSPACE
static inline int compat_glob(const char* pattern, compat_glob_t* g) {
    const char* slash = strrchr(pattern, '/');
#ifdef _WIN32
    const char* back = strrchr(pattern, '\\');
    if (back && (!slash || back > slash)) slash = back;
#endif
    const char* name = slash ? slash + 1 : pattern;
    const char* wild = strpbrk(pattern, "*?[");
    char dir[4096];
    size_t dir_len = slash ? (size_t)(slash - pattern) + 1 : 0;  // with its separator
    g->gl_pathc = 0, g->gl_pathv = NULL;
    if (dir_len >= sizeof dir || (wild && wild < name)) return COMPAT_GLOB_ABORTED;
    memcpy(dir, pattern, dir_len);
    dir[dir_len] = 0;
    DIR* d = opendir(dir_len ? dir : ".");
    if (!d) return COMPAT_GLOB_NOMATCH;
    size_t cap = 0;
    int nospace = 0;
    for (struct dirent* e; !nospace && (e = readdir(d)) != NULL;) {
        if (!compat_glob_match(name, e->d_name)) continue;
        if (g->gl_pathc == cap) {
            char** more = realloc(g->gl_pathv, (cap = 2 * cap + 16) * sizeof(char*));
            if (!more) nospace = 1;
            else g->gl_pathv = more;
        }
        char* path = nospace ? NULL : malloc(dir_len + strlen(e->d_name) + 1);
        if (!path) {
            nospace = 1;
            continue;
        }
        memcpy(path, dir, dir_len);
        strcpy(path + dir_len, e->d_name);
        g->gl_pathv[g->gl_pathc++] = path;
    }
    closedir(d);
    if (nospace) compat_globfree(g);
    if (g->gl_pathc) qsort(g->gl_pathv, g->gl_pathc, sizeof(char*), compat_glob_strcmp);
    return nospace ? COMPAT_GLOB_NOSPACE : g->gl_pathc ? 0 : COMPAT_GLOB_NOMATCH;
}

// POSIX's glob(3) is there (test_gpt2 compares compat_glob with it)
#ifdef _WIN32
#define COMPAT_HAS_GLOB 0
#else
#define COMPAT_HAS_GLOB 1
#endif

#ifdef _WIN32  // glob(3)'s names for the subset above (flags and errfunc: 0 and NULL only)
#define glob_t compat_glob_t
#define glob(pattern, flags, errfunc, g) compat_glob(pattern, g)
#define globfree compat_globfree
#define GLOB_NOSPACE COMPAT_GLOB_NOSPACE
#define GLOB_ABORTED COMPAT_GLOB_ABORTED
#define GLOB_NOMATCH COMPAT_GLOB_NOMATCH
#endif

#endif
