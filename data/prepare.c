/*
data/prepare.c: any UTF-8 text -> llm.c token files for train_gpt2 (-i, -j), and for a
character-level model its tokenizer (-tok).

  ./data/prepare -i book.txt                  characters: book_train.bin, book_val.bin, book_tokenizer.bin
  ./data/prepare -i web.txt -m bpe -eot 1     GPT-2's tokens: web_train.bin, web_val.bin
  ./data/prepare -i rev.txt -m pairs          pairs: rev_train.bin, rev_val.bin, rev_tokenizer.bin

-m char (the default): one token per Unicode character that occurs in the text, the
  vocabulary sorted by code point (nanoGPT's shakespeare_char/prepare.py, for any UTF-8
  text: accents, Chinese, emoji; for Tiny Shakespeare its 65 bytes, which is how `make`
  prepares it). The vocabulary goes to PREFIX_tokenizer.bin (llm.c tokenizer, version 2);
  a character vocabulary has no end-of-text token, so its slot 3 holds the id of '\n' (0
  when the text has none). A byte that is not well-formed UTF-8 is an error naming its
  offset.
-m bpe: GPT-2's byte-pair encoding (util/bpe.h) with the tokenizer of -tok, by default
  data/gpt2_tokenizer.bin (GPT-2's 50257 tokens): the ids of tiktoken's "gpt2" encoding
  (encode_ordinary), for any bytes. -tok is the tokenizer to train with; nothing else is
  written for it. With -eot 1 the end-of-text token (<|endoftext|>, 50256) goes before
  each document, and the documents are separated by lines that are exactly -sep (default
  "<|endoftext|>"; "" makes blank lines the separators). A separator line and its line
  break are not part of any document, and empty documents are dropped. Without -eot the
  text is encoded as it is, separator lines included.
-m pairs: source/target pairs for the encoder-decoder, one pair per line: the source, the
  separator -sep (default a tab), the target (a line may end in \r\n). Characters, with
  the special tokens PAD = 0, BOS = 1, EOS = 2 (named <pad>, <bos>, <eos> in the
  tokenizer, whose slot 3 is EOS) and the characters of the sources and targets from id 3
  on, by code point; the separator is not a token. The outputs are pair token files
  (util/pairs.h, doc/formats.md). A line without exactly one separator, with an empty
  source or target, or not valid UTF-8 is an error naming its line; so is, with -mt N, a
  source longer than N characters or a target longer than N - 1 (the model's maxT: the
  decoder reads BOS + target). -v is the fraction of the pairs (rounded) for validation,
  the last lines; -v 0 writes no validation file.

The first (1 - v) of the tokens (rounded down) are PREFIX_train.bin, the rest
PREFIX_val.bin (llm.c token files: magic 20240520, version 1; doc/formats.md); -v 0 puts
them all in PREFIX_train.bin and writes no PREFIX_val.bin (removing an older one). A large
text is encoded in parallel (OpenMP), in chunks of about -cs bytes cut only where
util/bpe.h's bpe_next_cut shows the pieces cannot change, so the files are the same for
any thread count and any -cs. Every output is written as PATH.tmp and renamed only when
all are complete: after an error none is left behind. Errors are one line, "prepare:
error: ...", naming the file or flag; exit status 2 for a bad flag, 1 otherwise.
*/
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "../util/io.h"
#include "../util/tokenizer.h"  // and util/bpe.h
#include "../util/pairs.h"

#define PROGRESS_BYTES (10 * 1000 * 1000)  // a progress line on stderr every ~10 MB
#define MAX_CHARS 65536                    // a token file holds uint16 ids

typedef struct {
    const char* input;      // -i the text
    const char* prefix;     // -o the output prefix (default: -i without its extension)
    const char* mode;       // -m char | bpe | pairs
    const char* tokenizer;  // -tok (bpe)
    double val_fraction;    // -v
    int eot;                // -eot 1: the end-of-text token before each document (bpe)
    const char* separator;  // -sep the line between documents (with -eot 1); pairs: source | target
    int max_len;            // -mt (pairs): the model's maxT; 0 = no limit
    long long chunk_bytes;  // -cs the size of the chunks encoded in parallel
} Args;

static void print_usage(FILE* f) {
    fprintf(f, "usage: ./data/prepare -i TEXT [flags]   (every flag takes a value)\n"
               "  -i    the text to prepare (UTF-8; required)\n"
               "  -o    output prefix: PREFIX_train.bin, PREFIX_val.bin and, with -m char,\n"
               "        PREFIX_tokenizer.bin (default: TEXT without its extension)\n"
               "  -m    char: one token per character; bpe: GPT-2's tokens; pairs: source/target\n"
               "        pairs of characters, one per line (default char)\n"
               "  -tok  -m bpe: the BPE tokenizer (default data/gpt2_tokenizer.bin, here or\n"
               "        in the repository of this program)\n"
               "  -v    the fraction of the tokens (of the pairs) for validation, at the end\n"
               "        (default 0.1; 0 = none: all for training, no PREFIX_val.bin)\n"
               "  -eot  -m bpe: 1 = the end-of-text token before each document (default 0)\n"
               "  -sep  with -eot 1: the line that separates documents (default \"<|endoftext|>\";\n"
               "        \"\" = blank lines); -m pairs: between source and target (default a tab)\n"
               "  -mt   -m pairs: refuse a source longer than N characters or a target longer\n"
               "        than N - 1 (the model's maxT; default 0 = no limit)\n"
               "  -cs   bytes per chunk encoded in parallel; the output does not depend on it\n"
               "        (default 65536)\n");
}

static Args parse_args(int argc, char** argv) {
    Args a = {.input = NULL, .prefix = NULL, .mode = "char", .tokenizer = NULL, .val_fraction = 0.1,
              .eot = 0, .separator = NULL, .chunk_bytes = 1 << 16, .max_len = 0};
    print_usage_to = print_usage;
    static const char* const flags[] = {"-i", "-o", "-m", "-tok", "-v", "-eot", "-sep", "-cs", "-mt"};
    for (int i = 1; i < argc; i += 2) {
        const char* flag = argv[i];
        if (strcmp(flag, "-h") == 0 || strcmp(flag, "--help") == 0) {
            print_usage(stdout);
            exit(0);
        }
        int known = 0;
        for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
            known |= strcmp(flag, flags[k]) == 0;
        if (!known) usage_error("unknown flag '%s'", flag);
        if (i + 1 >= argc) usage_error("flag %s needs a value", flag);
        const char* v = argv[i + 1];
        char* end;
        if (strcmp(flag, "-i") == 0) a.input = v;
        else if (strcmp(flag, "-o") == 0) a.prefix = v;
        else if (strcmp(flag, "-m") == 0) a.mode = v;
        else if (strcmp(flag, "-tok") == 0) a.tokenizer = v;
        else if (strcmp(flag, "-sep") == 0) a.separator = v;
        else if (strcmp(flag, "-v") == 0) {
            a.val_fraction = strtod(v, &end);
            if (end == v || *end) usage_error("flag -v expects a number, got '%s'", v);
        } else {
            long long x = strtoll(v, &end, 10);
            if (end == v || *end) usage_error("flag %s expects an integer, got '%s'", flag, v);
            if (strcmp(flag, "-eot") == 0) a.eot = x == 0 ? 0 : x == 1 ? 1 : -1;
            else if (strcmp(flag, "-mt") == 0) a.max_len = x < 0 || x > INT32_MAX ? -1 : (int)x;
            else a.chunk_bytes = x;
        }
    }
    int bpe = strcmp(a.mode, "bpe") == 0, pairs = strcmp(a.mode, "pairs") == 0;
    if (!a.input) usage_error("-i is required: the text to prepare");
    if (!bpe && !pairs && strcmp(a.mode, "char") != 0)
        usage_error("-m must be char, bpe or pairs, not '%s'", a.mode);
    if (!(a.val_fraction >= 0 && a.val_fraction < 1))
        usage_error("-v (validation fraction) must be >= 0 and < 1 (0 = no validation file)");
    if (a.max_len < 0) usage_error("-mt (the model's maxT) must be >= 0");
    if (a.max_len && !pairs) usage_error("-mt is for -m pairs");
    if (pairs && !a.separator) a.separator = "\t";
    if (pairs && (!a.separator[0] || strchr(a.separator, '\n')))
        usage_error("-sep must be a non-empty string without a line break for -m pairs");
    if (!a.separator) a.separator = "<|endoftext|>";
    if (a.eot < 0) usage_error("-eot must be 0 or 1");
    if (a.eot && !bpe) usage_error("-eot 1 needs -m bpe: a character vocabulary has no end-of-text token");
    if (a.tokenizer && !bpe) usage_error("-tok is for -m bpe; -m %s writes its own tokenizer", a.mode);
    if (a.chunk_bytes < 1) usage_error("-cs (chunk size) must be >= 1");
    struct stat sb;  // -o is a prefix of file names: PREFIX_train.bin beside, not inside, what it names
    if (a.prefix && (!a.prefix[0] || a.prefix[strlen(a.prefix) - 1] == '/'))
        usage_error("-o '%s' is a prefix of file names (-o DIR/NAME writes DIR/NAME_train.bin), not a "
                    "directory", a.prefix);
    if (a.prefix && stat(a.prefix, &sb) == 0 && !S_ISREG(sb.st_mode))
        usage_error("-o '%s' is a %s: -o is a prefix of file names (-o DIR/NAME writes DIR/NAME_train.bin)",
                    a.prefix, S_ISDIR(sb.st_mode) ? "directory" : "device or other special file");
    if (bpe && !a.tokenizer) {  // the default, here or in the repository this program is in
        a.tokenizer = find_default_path("data/gpt2_tokenizer.bin", 1);
        require_file(a.tokenizer, "-tok", 1);
    }
    return a;
}

// the default output prefix: the input's path without its extension
static char* prefix_of(const char* input) {
    size_t n = strlen(input);
    char* prefix = mallocCheck(n + 1);
    memcpy(prefix, input, n + 1);
    char *dot = strrchr(prefix, '.'), *slash = strrchr(prefix, '/');
    if (dot && dot != prefix && (!slash || dot > slash + 1)) *dot = '\0';
    return prefix;
}

static unsigned char* read_text(const char* path, size_t* n) {
    struct stat st;  // a pipe is refused before it is opened: opening one with no writer waits for ever
    if (stat(path, &st) == 0 && S_ISFIFO(st.st_mode))
        die("'%s' is a pipe (FIFO), not a regular file: the text's size is read first; save it to a file", path);
    FILE* f = fopenCheck(path, "rb");
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) die("'%s' is not a regular file", path);
    long long size = file_size(f);
    if (size <= 0) die("'%s' is empty: there is no text to prepare", path);
    unsigned char* text = mallocCheck((size_t)size);
    fread_check(text, 1, (size_t)size, f, path, "text");
    fclose(f);
    *n = (size_t)size;
    return text;
}

// ----------------------------------------------------------------------------
// the character vocabulary

static int utf8_encode(uint32_t cp, unsigned char* out) {
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    int len = cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    out[0] = (unsigned char)(len == 2 ? 0xC0 | cp >> 6 : len == 3 ? 0xE0 | cp >> 12 : 0xF0 | cp >> 18);
    for (int i = 1; i < len; i++)
        out[i] = (unsigned char)(0x80 | ((cp >> (6 * (len - 1 - i))) & 0x3F));
    return len;
}

// The characters marked in seen, in order of code point, get the ids first_id, first_id + 1, ...:
// chars[k] is the code point of id first_id + k, id_of[cp] its id; returns their number.
static int number_chars(const unsigned char* seen, int first_id, const char* path, uint32_t* chars,
                        uint16_t* id_of) {
    int count = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        if (!seen[cp]) continue;
        if (first_id + count == MAX_CHARS)
            die("'%s' has more than %d distinct characters: too many for uint16 tokens", path,
                MAX_CHARS - first_id);
        id_of[cp] = (uint16_t)(first_id + count);
        chars[count++] = cp;
    }
    return count;
}

// The characters of the text in order of code point: chars[id] is a code point, id_of[cp]
// its id; returns their number. Stops at the first byte that is not well-formed UTF-8.
static int char_vocabulary(const unsigned char* text, size_t n, const char* path, uint32_t* chars,
                           uint16_t* id_of) {
    unsigned char* seen = callocCheck(0x110000, 1);
    for (size_t p = 0; p < n;) {
        uint32_t cp;
        int len = utf8_decode(text + p, n - p, &cp);
        if (cp == UTF8_INVALID)
            die("'%s' is not valid UTF-8: byte %zu (0x%02X); -m bpe encodes any bytes", path, p, text[p]);
        seen[cp] = 1;
        p += (size_t)len;
    }
    int count = number_chars(seen, 0, path, chars, id_of);
    free(seen);
    return count;
}

// ----------------------------------------------------------------------------
// chunks: the units of parallel encoding

typedef struct {
    size_t start, end;  // text[start..end)
    int eot;            // the end-of-text token goes before it (the first chunk of a document)
    size_t out;         // where its tokens go in the output: room for eot + end - start
    size_t count;       // how many tokens it has, once encoded
} Chunk;

typedef struct { Chunk* items; size_t count, capacity; } Chunks;

static void add_chunk(Chunks* c, size_t start, size_t end, int eot) {
    if (c->count == c->capacity) {
        c->capacity = c->capacity ? 2 * c->capacity : 64;
        Chunk* grown = realloc(c->items, c->capacity * sizeof(Chunk));
        if (!grown) die("out of memory for %zu chunks", c->capacity);
        c->items = grown;
    }
    size_t out = c->count ? c->items[c->count - 1].out + (size_t)c->items[c->count - 1].eot
                                + (c->items[c->count - 1].end - c->items[c->count - 1].start) : 0;
    c->items[c->count++] = (Chunk){start, end, eot, out, 0};
}

// one document, text[start..end), in chunks of about chunk_bytes, cut only where the
// pieces of the pre-tokenizer cannot change (bpe_next_cut; at a '\n', so also between
// characters); nothing for an empty document
static void add_document(Chunks* c, const unsigned char* text, size_t start, size_t end, int eot,
                         size_t chunk_bytes) {
    const unsigned char* doc = text + start;
    for (size_t a = start; a < end;) {
        size_t b = end;
        if (end - a > chunk_bytes) b = start + bpe_next_cut(doc, end - start, a - start + chunk_bytes);
        add_chunk(c, a, b, eot && a == start);
        a = b;
    }
}

// the chunks of the whole text: with -eot 1, document by document (the text between
// separator lines), else the text as one document
static Chunks make_chunks(const unsigned char* text, size_t n, const Args* a) {
    Chunks c = {NULL, 0, 0};
    size_t chunk_bytes = (size_t)a->chunk_bytes, sep_len = strlen(a->separator), doc = 0;
    for (size_t line = 0; a->eot && line < n;) {
        const unsigned char* nl = memchr(text + line, '\n', n - line);
        size_t line_end = nl ? (size_t)(nl - text) : n, next = nl ? line_end + 1 : n;
        if (line_end - line == sep_len && memcmp(text + line, a->separator, sep_len) == 0) {
            add_document(&c, text, doc, line, 1, chunk_bytes);
            doc = next;
        }
        line = next;
    }
    add_document(&c, text, doc, n, a->eot, chunk_bytes);
    return c;
}

// ----------------------------------------------------------------------------
// encoding

typedef struct {
    const BPE* bpe;          // -m bpe; NULL: characters
    int eot_token;           // -m bpe
    const uint16_t* id_of;   // -m char: the id of each code point
} Encoder;

// the tokens of text[0..n) into out (room for n); returns their number
static size_t encode_chunk(const Encoder* e, const unsigned char* text, size_t n, uint16_t* out) {
    size_t count = 0;
    if (!e->bpe) {
        for (size_t p = 0; p < n; count++) {
            uint32_t cp;
            p += (size_t)utf8_decode(text + p, n - p, &cp);  // well-formed: char_vocabulary checked
            out[count] = e->id_of[cp];
        }
        return count;
    }
    int* ids = mallocCheck(n * sizeof(int));
    count = bpe_encode(e->bpe, text, n, ids);
    for (size_t i = 0; i < count; i++)
        out[i] = (uint16_t)ids[i];
    free(ids);
    return count;
}

// Encodes every chunk, in parallel, each into its own place in tokens, then closes the gaps
// between them; returns the number of tokens. The result does not depend on the order in
// which the chunks finish.
static size_t encode_chunks(Chunks* c, const unsigned char* text, size_t n, const Encoder* e,
                            uint16_t* tokens) {
    size_t done = 0, next_report = PROGRESS_BYTES;
    double t0 = now_seconds();
    #pragma omp parallel for schedule(dynamic, 1)
    for (size_t i = 0; i < c->count; i++) {
        Chunk* ch = &c->items[i];
        if (ch->eot) tokens[ch->out] = (uint16_t)e->eot_token;
        uint16_t* out = tokens + ch->out + ch->eot;
        ch->count = (size_t)ch->eot + encode_chunk(e, text + ch->start, ch->end - ch->start, out);
        #pragma omp critical(progress)
        {
            done += ch->end - ch->start;
            if (done >= next_report) {
                fprintf(stderr, "prepare: %.0f of %.0f MB (%.0f%%), %.1f MB/s\n", done / 1e6, n / 1e6,
                        100.0 * done / n, done / 1e6 / (now_seconds() - t0));
                next_report = (done / PROGRESS_BYTES + 1) * PROGRESS_BYTES;
            }
        }
    }
    size_t total = 0;
    for (size_t i = 0; i < c->count; i++) {
        memmove(tokens + total, tokens + c->items[i].out, c->items[i].count * sizeof(uint16_t));
        total += c->items[i].count;
    }
    return total;
}

// ----------------------------------------------------------------------------
// output: every file as PATH.tmp, renamed only when all are written

typedef struct {
    char path[4096], tmp[4112];
    FILE* f;
    int done;  // renamed to path
} Output;

static Output outputs[3];
static int num_outputs;

// at exit: the temporaries of an unfinished run go, so no half output is left behind
static void remove_temporaries(void) {
    for (int i = 0; i < num_outputs; i++)
        if (!outputs[i].done) remove(outputs[i].tmp);
}

// -o out/book: creates the directory out if it does not exist yet (one level, as train_gpt2's -o)
static void make_parent_directory(const char* prefix) {
    const char* slash = strrchr(prefix, '/');
    if (!slash || slash == prefix) return;
    char dir[4096];
    if ((size_t)(slash - prefix) >= sizeof dir) die("-o '%s' is too long", prefix);
    memcpy(dir, prefix, (size_t)(slash - prefix));
    dir[slash - prefix] = '\0';
    if (compat_mkdir(dir) != 0 && errno != EEXIST)
        die("-o: cannot create directory '%s' (%s)", dir, strerror(errno));
}

static Output* open_output(const char* prefix, const char* suffix) {
    Output* o = &outputs[num_outputs];
    char path[sizeof o->path];
    if (snprintf(path, sizeof path, "%s%s", prefix, suffix) >= (int)sizeof path)
        die("-o '%s' is too long", prefix);
    o->f = atomic_open(path, o->tmp, sizeof o->tmp);
    memcpy(o->path, path, sizeof path);
    num_outputs++;
    return o;
}

static void write_tokens(Output* o, const uint16_t* tokens, size_t count) {
    if (count > INT32_MAX)
        die("'%s' would hold %zu tokens: more than a token file's 2^31 - 1", o->path, count);
    int32_t header[256] = {20240520, 1, (int32_t)count};
    fwrite_check(header, sizeof(int32_t), 256, o->f, o->tmp);
    fwrite_check(tokens, sizeof(uint16_t), count, o->f, o->tmp);
}

// llm.c tokenizer, version 2: per token a uint8 length and its UTF-8 bytes; the names of the
// special tokens (-m pairs) come first, then the characters
static void write_char_tokenizer(Output* o, const char* const* specials, int num_specials,
                                 const uint32_t* chars, int num_chars, int eot) {
    int32_t header[256] = {20240328, 2, num_specials + num_chars, eot};
    fwrite_check(header, sizeof(int32_t), 256, o->f, o->tmp);
    for (int i = 0; i < num_specials; i++) {
        unsigned char len = (unsigned char)strlen(specials[i]);
        fwrite_check(&len, 1, 1, o->f, o->tmp);
        fwrite_check(specials[i], 1, len, o->f, o->tmp);
    }
    for (int i = 0; i < num_chars; i++) {
        unsigned char bytes[5];
        bytes[0] = (unsigned char)utf8_encode(chars[i], bytes + 1);
        fwrite_check(bytes, 1, 1 + (size_t)bytes[0], o->f, o->tmp);
    }
}

// ----------------------------------------------------------------------------
// -m pairs: one source/target pair per line, for the encoder-decoder (util/pairs.h)

typedef struct {
    size_t src, src_bytes, tgt, tgt_bytes;  // where the source and the target are in the text
    int src_chars, tgt_chars;               // their lengths in characters (= tokens)
    int line;                               // the line of the text, from 1
} PairText;

// the separator as errors name it
static const char* separator_name(const char* sep) { return strcmp(sep, "\t") == 0 ? "a tab" : sep; }

// where sep first occurs in s[0..n), or n
static size_t find_separator(const unsigned char* s, size_t n, const char* sep) {
    size_t k = strlen(sep);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(s + i, sep, k) == 0) return i;
    return n;
}

// the characters of s[0..n) (well-formed UTF-8), marked in seen; returns their number
static size_t mark_chars(const unsigned char* s, size_t n, unsigned char* seen) {
    size_t count = 0;
    for (size_t p = 0; p < n; count++) {
        uint32_t cp;
        p += (size_t)utf8_decode(s + p, n - p, &cp);
        seen[cp] = 1;
    }
    return count;
}

// line number `line`, text[start..end) without its line break: checked and cut at the separator
static PairText split_pair(const unsigned char* text, size_t start, size_t end, int line, const Args* a,
                           unsigned char* seen) {
    const unsigned char* s = text + start;
    size_t n = end - start, k = strlen(a->separator);
    const char *in = a->input, *sep = separator_name(a->separator);
    for (size_t p = 0; p < n;) {  // UTF-8 first: then a byte match of the separator is a character match
        uint32_t cp;
        int len = utf8_decode(s + p, n - p, &cp);
        if (cp == UTF8_INVALID)
            die("'%s' line %d is not valid UTF-8: byte %zu of the line (0x%02X)", in, line, p + 1, s[p]);
        p += (size_t)len;
    }
    size_t cut = find_separator(s, n, a->separator);
    if (cut == n) die("'%s' line %d has no separator (%s) between a source and a target", in, line, sep);
    if (find_separator(s + cut + k, n - cut - k, a->separator) < n - cut - k)
        die("'%s' line %d has more than one separator (%s)", in, line, sep);
    if (cut == 0 || cut + k == n)
        die("'%s' line %d has an empty %s", in, line, cut == 0 ? "source" : "target");
    PairText p = {start, cut, start + cut + k, n - cut - k, 0, 0, line};
    size_t src_chars = mark_chars(s, cut, seen), tgt_chars = mark_chars(s + cut + k, n - cut - k, seen);
    int most = PAIR_MAX_LEN;  // the pair file's uint16 lengths, or -mt
    if (a->max_len && a->max_len < most) most = a->max_len;
    if (src_chars > (size_t)most || tgt_chars + (a->max_len ? 1 : 0) > (size_t)most)
        die("'%s' line %d: its %s of %zu characters is longer than %s allows", in, line,
            src_chars > (size_t)most ? "source" : "target", src_chars > (size_t)most ? src_chars : tgt_chars,
            a->max_len ? "-mt (a target needs one position more, for BOS)" : "a pair file");
    p.src_chars = (int)src_chars;
    p.tgt_chars = (int)tgt_chars;
    return p;
}

// every line of the text as a pair; returns their number
static int split_pairs(const unsigned char* text, size_t n, const Args* a, unsigned char* seen,
                       PairText** pairs) {
    int count = 0, capacity = 1024;
    *pairs = mallocCheck((size_t)capacity * sizeof(PairText));
    for (size_t start = 0; start < n; count++) {
        const unsigned char* nl = memchr(text + start, '\n', n - start);
        size_t end = nl ? (size_t)(nl - text) : n, next = nl ? end + 1 : n;
        if (end > start && text[end - 1] == '\r') end--;
        if (count == INT32_MAX - 1) die("'%s' has more than %d lines", a->input, INT32_MAX - 1);
        if (count == capacity) {
            capacity = capacity > INT32_MAX / 2 ? INT32_MAX : 2 * capacity;
            PairText* grown = realloc(*pairs, (size_t)capacity * sizeof(PairText));
            if (!grown) die("out of memory for %d pairs", capacity);
            *pairs = grown;
        }
        (*pairs)[count] = split_pair(text, start, end, count + 1, a, seen);
        start = next;
    }
    return count;
}

// the characters of text[0..n) as tokens, into out
static uint16_t* encode_chars_to(const unsigned char* text, size_t n, const uint16_t* id_of, uint16_t* out) {
    for (size_t p = 0; p < n;) {
        uint32_t cp;
        p += (size_t)utf8_decode(text + p, n - p, &cp);
        *out++ = id_of[cp];
    }
    return out;
}

// a pair token file: the header, then per pair its two lengths, the source, the target
static void write_pairs(Output* o, const unsigned char* text, const PairText* pairs, int n, int V,
                        const uint16_t* id_of) {
    int max_src = 0, max_tgt = 0;
    for (int i = 0; i < n; i++) {
        if (pairs[i].src_chars > max_src) max_src = pairs[i].src_chars;
        if (pairs[i].tgt_chars > max_tgt) max_tgt = pairs[i].tgt_chars;
    }
    int32_t header[256] = {PAIRS_MAGIC, 1, n, V, max_src, max_tgt, pairs[0].line};
    fwrite_check(header, sizeof(int32_t), 256, o->f, o->tmp);
    uint16_t* pair = mallocCheck((2 + (size_t)max_src + (size_t)max_tgt) * sizeof(uint16_t));
    for (int i = 0; i < n; i++) {
        const PairText* p = &pairs[i];
        pair[0] = (uint16_t)p->src_chars;
        pair[1] = (uint16_t)p->tgt_chars;
        uint16_t* end = encode_chars_to(text + p->src, p->src_bytes, id_of, pair + 2);
        end = encode_chars_to(text + p->tgt, p->tgt_bytes, id_of, end);
        fwrite_check(pair, sizeof(uint16_t), (size_t)(end - pair), o->f, o->tmp);
    }
    free(pair);
}

// -m pairs: the whole of it, from the text to the three files
static void prepare_pairs(const Args* a, const unsigned char* text, size_t n) {
    unsigned char* seen = callocCheck(0x110000, 1);
    PairText* pairs;
    int count = split_pairs(text, n, a, seen, &pairs);
    uint32_t* chars = mallocCheck(MAX_CHARS * sizeof(uint32_t));
    uint16_t* id_of = callocCheck(0x110000, sizeof(uint16_t));
    int num_chars = number_chars(seen, PAIR_FIRST_CHAR, a->input, chars, id_of);
    int V = PAIR_FIRST_CHAR + num_chars;
    int n_val = (int)(count * a->val_fraction + 0.5), n_train = count - n_val;  // rounded
    if (n_train < 1 || (a->val_fraction > 0 && n_val < 1))
        die("'%s' has %d pair%s: too few for a training and a validation part (-v %g; -v 0 for none)",
            a->input, count, count == 1 ? "" : "s", a->val_fraction);

    make_parent_directory(a->prefix);
    Output* train = open_output(a->prefix, "_train.bin");
    Output* val = n_val ? open_output(a->prefix, "_val.bin") : NULL;
    Output* tokenizer = open_output(a->prefix, "_tokenizer.bin");
    write_pairs(train, text, pairs, n_train, V, id_of);
    if (val) write_pairs(val, text, pairs + n_train, n_val, V, id_of);
    write_char_tokenizer(tokenizer, PAIR_SPECIAL_NAMES, PAIR_FIRST_CHAR, chars, num_chars, PAIR_EOS);
    atomic_begin();  // all the outputs land, or none (an old set of files stays whole)
    for (int i = 0; i < num_outputs; i++)
        atomic_commit(outputs[i].f, outputs[i].tmp, outputs[i].path);
    atomic_keep();
    for (int i = 0; i < num_outputs; i++)
        outputs[i].done = 1;
    int max_src = 0, max_tgt = 0;
    for (int i = 0; i < count; i++) {
        if (pairs[i].src_chars > max_src) max_src = pairs[i].src_chars;
        if (pairs[i].tgt_chars > max_tgt) max_tgt = pairs[i].tgt_chars;
    }
    printf("prepare: %s: %d pairs (longest source %d, target %d characters), vocabulary %d (3 specials + "
           "%d characters), %d train and %d val -> %s_{train,%stokenizer}.bin\n", a->input, count, max_src,
           max_tgt, V, num_chars, n_train, n_val, a->prefix, n_val ? "val," : "");
    free(seen); free(pairs); free(chars); free(id_of);
}

// -v 0: every token went to training. A PREFIX_val.bin of an earlier run would hold text
// that is now trained on, so it is removed, and the note says how to train without one.
static void no_validation_note(const char* prefix) {
    char path[4096];
    snprintf(path, sizeof path, "%s_val.bin", prefix);
    int removed = remove(path) == 0;
    printf("prepare: -v 0: no validation file%s; train with -j \"\" (no validation)\n",
           removed ? " (the older one, whose text is now in training, was removed)" : "");
}

// ----------------------------------------------------------------------------

int main(int argc, char** argv) {
    error_program = "prepare";
    Args a = parse_args(argc, argv);
    char* prefix = a.prefix ? NULL : prefix_of(a.input);
    if (!a.prefix) a.prefix = prefix;
    atexit(remove_temporaries);
    size_t n;
    double t0 = now_seconds();
    unsigned char* text = read_text(a.input, &n);
    if (strcmp(a.mode, "pairs") == 0) {
        prepare_pairs(&a, text, n);
        printf("prepare: %.2f s in all\n", now_seconds() - t0);
        free(text); free(prefix);
        return 0;
    }

    // the vocabulary: GPT-2's from -tok, or the text's characters
    Encoder enc = {NULL, 0, NULL};
    Tokenizer tk = {0};  // (read only with -tok; zeroed, so that no compiler sees it unset)
    BPE bpe;
    uint32_t* chars = NULL;
    uint16_t* id_of = NULL;
    int vocab_size;
    if (strcmp(a.mode, "bpe") == 0) {
        tokenizer_init(&tk, a.tokenizer);
        if (tk.char_level)
            die("-tok '%s' is a character-level tokenizer; -m bpe needs a BPE one such as "
                "data/gpt2_tokenizer.bin", a.tokenizer);
        bpe_init(&bpe, tk.vocab_size, tk.token_table, tk.token_length);
        enc.bpe = &bpe;
        enc.eot_token = tk.eot_token;
        vocab_size = tk.vocab_size;
    } else {
        chars = mallocCheck(MAX_CHARS * sizeof(uint32_t));
        id_of = callocCheck(0x110000, sizeof(uint16_t));
        vocab_size = char_vocabulary(text, n, a.input, chars, id_of);
        enc.id_of = id_of;
    }

    // all outputs open before the long part, so an unwritable one fails at once
    make_parent_directory(a.prefix);
    Output* train = open_output(a.prefix, "_train.bin");
    Output* val = a.val_fraction > 0 ? open_output(a.prefix, "_val.bin") : NULL;  // -v 0: none
    Output* tokenizer = enc.bpe ? NULL : open_output(a.prefix, "_tokenizer.bin");

    double t_encode = now_seconds();
    Chunks chunks = make_chunks(text, n, &a);
    uint16_t* tokens = mallocCheck((n + chunks.count) * sizeof(uint16_t));  // a token per byte at most, + eot
    size_t total = encode_chunks(&chunks, text, n, &enc, tokens);
    double encode_seconds = now_seconds() - t_encode;

    size_t n_train = (size_t)((double)total * (1.0 - a.val_fraction)), n_val = total - n_train;
    if (n_train == 0 || (val && n_val == 0))
        die("'%s' gives %zu token%s: too few for a training and a validation part (-v %g)", a.input, total,
            total == 1 ? "" : "s", a.val_fraction);
    write_tokens(train, tokens, n_train);
    if (val) write_tokens(val, tokens + n_train, n_val);
    if (tokenizer) {  // slot 3: the id of '\n', or 0 (id_of is 0 for characters not in the text)
        int newline = chars[id_of['\n']] == '\n' ? id_of['\n'] : 0;
        write_char_tokenizer(tokenizer, NULL, 0, chars, vocab_size, newline);
    }
    atomic_begin();  // all the outputs land, or none (an old set of files stays whole)
    for (int i = 0; i < num_outputs; i++)
        atomic_commit(outputs[i].f, outputs[i].tmp, outputs[i].path);
    atomic_keep();
    for (int i = 0; i < num_outputs; i++)
        outputs[i].done = 1;

    printf("prepare: %s: %zu bytes, %zu tokens (vocabulary %d), %zu train and %zu val -> "
           "%s_{train%s%s}.bin\n", a.input, n, total, vocab_size, n_train, n_val, a.prefix, val ? ",val" : "",
           tokenizer ? ",tokenizer" : "");
    if (!val) no_validation_note(a.prefix);
    int threads = max_threads();
    printf("prepare: encoded at %.1f MB/s (%zu chunks, %d thread%s); %.2f s in all\n",
           n / 1e6 / encode_seconds, chunks.count, threads, threads == 1 ? "" : "s", now_seconds() - t0);
    if (enc.bpe) {
        bpe_free(&bpe);
        tokenizer_free(&tk);
    }
    free(chars); free(id_of); free(tokens); free(chunks.items); free(text); free(prefix);
    return 0;
}
