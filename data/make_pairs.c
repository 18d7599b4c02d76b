/*
data/make_pairs.c: synthetic sequence-to-sequence tasks for the encoder-decoder, written as
a pair text (one pair per line: source, a tab, target) that `data/prepare -m pairs` turns
into pair token files.

  ./data/make_pairs -t reverse -n 20000 -o data/reverse.txt     "abc\tcba"
  ./data/make_pairs -t add -n 20000 -d 3 -o data/add.txt          "123+45\t168"

Tasks (every one needs the decoder to look across at the source, through cross-attention):
  reverse  random lowercase strings of 1..-l characters; the target is the string reversed
           (the cross-attention map of a trained model is an anti-diagonal)
  copy     the same strings; the target is the string itself (a diagonal)
  sort     the same strings; the target is their characters in alphabetical order
  add      two random numbers of 1..-d digits, "a+b"; the target is the sum, in decimal
The lengths (digit counts) are uniform over their range, then the characters uniform.
The same flags give the same file, byte for byte (the random stream is util/random.h's,
from -sd). The file is written as PATH.tmp and renamed when complete; errors are one line.
*/
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../util/io.h"
#include "../util/random.h"

#define MAX_LEN 1000  // -l: longest string
#define MAX_DIGITS 18 // -d: the sum of two 18-digit numbers fits in uint64

typedef struct {
    const char* task;  // -t reverse | copy | sort | add
    long long n;       // -n pairs
    long long seed;    // -sd
    int len;           // -l longest string (reverse, copy, sort)
    int digits;        // -d most digits of each number (add)
    const char* out;   // -o the pair text
} Args;

static void print_usage(FILE* f) {
    fprintf(f, "usage: ./data/make_pairs -t TASK -o FILE [flags]   (every flag takes a value)\n"
               "  -t    reverse | copy | sort | add (required)\n"
               "  -o    the pair text to write (one pair per line: source, a tab, target; required)\n"
               "  -n    number of pairs (default 1000)\n"
               "  -sd   random seed (default 1337)\n"
               "  -l    reverse, copy, sort: strings of 1..L lowercase letters (default 16)\n"
               "  -d    add: numbers of 1..D digits (default 3, at most 18)\n");
}

static long long int_flag(const char* flag, const char* v) {
    char* end;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end) usage_error("flag %s expects an integer, got '%s'", flag, v);
    return x;
}

static Args parse_args(int argc, char** argv) {
    Args a = {.task = NULL, .n = 1000, .seed = 1337, .len = 16, .digits = 3, .out = NULL};
    print_usage_to = print_usage;
    long long len = a.len, digits = a.digits;
    for (int i = 1; i < argc; i += 2) {
        const char* flag = argv[i];
        if (strcmp(flag, "-h") == 0 || strcmp(flag, "--help") == 0) {
            print_usage(stdout);
            exit(0);
        }
        if (i + 1 >= argc) usage_error("flag %s needs a value", flag);
        const char* v = argv[i + 1];
        if (strcmp(flag, "-t") == 0) a.task = v;
        else if (strcmp(flag, "-o") == 0) a.out = v;
        else if (strcmp(flag, "-n") == 0) a.n = int_flag(flag, v);
        else if (strcmp(flag, "-sd") == 0) a.seed = int_flag(flag, v);
        else if (strcmp(flag, "-l") == 0) len = int_flag(flag, v);
        else if (strcmp(flag, "-d") == 0) digits = int_flag(flag, v);
        else usage_error("unknown flag '%s'", flag);
    }
    if (!a.task) usage_error("-t is required: reverse, copy, sort or add");
    int known = 0;
    for (int k = 0; k < 4; k++)
        known |= strcmp(a.task, (const char* const[]){"reverse", "copy", "sort", "add"}[k]) == 0;
    if (!known)
        usage_error("-t must be reverse, copy, sort or add, not '%s'", a.task);
    if (!a.out) usage_error("-o is required: the pair text to write");
    if (a.n < 1 || a.n > INT32_MAX) usage_error("-n (pairs) must be in 1..%d", INT32_MAX);
    if (len < 1 || len > MAX_LEN) usage_error("-l (longest string) must be in 1..%d", MAX_LEN);
    if (digits < 1 || digits > MAX_DIGITS) usage_error("-d (digits) must be in 1..%d", MAX_DIGITS);
    a.len = (int)len;
    a.digits = (int)digits;
    return a;
}

// a uniform integer in lo..hi
static long long uniform(uint64_t* rng, long long lo, long long hi) {
    return lo + (long long)(random_u64(rng) % (uint64_t)(hi - lo + 1));
}

// a random number of 1..digits digits (the number of digits uniform, no leading zero)
static uint64_t random_number(uint64_t* rng, int digits) {
    int k = (int)uniform(rng, 1, digits);
    uint64_t x = k == 1 ? (uint64_t)uniform(rng, 0, 9) : (uint64_t)uniform(rng, 1, 9);
    for (int i = 1; i < k; i++)
        x = 10 * x + (uint64_t)uniform(rng, 0, 9);
    return x;
}

static int by_char(const void* a, const void* b) { return *(const char*)a - *(const char*)b; }

// one pair of the task as "source\ttarget\n" into line
static void make_pair(const Args* a, uint64_t* rng, char* line, size_t size) {
    if (strcmp(a->task, "add") == 0) {
        uint64_t x = random_number(rng, a->digits), y = random_number(rng, a->digits);
        snprintf(line, size, "%llu+%llu\t%llu\n", (unsigned long long)x, (unsigned long long)y,
                 (unsigned long long)(x + y));
        return;
    }
    int n = (int)uniform(rng, 1, a->len);
    char* src = line;               // line: the source, a tab, the target, "\n"
    char* tgt = line + n + 1;
    for (int i = 0; i < n; i++)
        src[i] = (char)('a' + uniform(rng, 0, 25));
    src[n] = '\t';
    for (int i = 0; i < n; i++)  // copy; reverse reads it backwards, sort sorts it
        tgt[i] = strcmp(a->task, "reverse") == 0 ? src[n - 1 - i] : src[i];
    if (strcmp(a->task, "sort") == 0) qsort(tgt, (size_t)n, 1, by_char);
    tgt[n] = '\n';
    tgt[n + 1] = '\0';
}

int main(int argc, char** argv) {
    error_program = "make_pairs";
    Args a = parse_args(argc, argv);
    struct stat sb;  // atomic_open renames over the path: never over a link, a device or a directory
    if (compat_lstat(a.out, &sb) == 0 && !S_ISREG(sb.st_mode)) die("-o '%s' is not a regular file", a.out);
    char tmp[4112];
    FILE* f = atomic_open(a.out, tmp, sizeof tmp);
    uint64_t rng = splitmix64((uint64_t)a.seed);  // the counter starts far from other seeds' counters
    char line[2 * MAX_LEN + 64];
    for (long long i = 0; i < a.n; i++) {
        make_pair(&a, &rng, line, sizeof line);
        fwrite_check(line, 1, strlen(line), f, tmp);
    }
    atomic_commit(f, tmp, a.out);
    printf("make_pairs: %lld %s pairs -> %s\n", a.n, a.task, a.out);
    return 0;
}
