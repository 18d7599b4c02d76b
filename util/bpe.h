/*
util/bpe.h: GPT-2's byte-pair encoding, text to token ids, exactly as OpenAI's tiktoken
encodes with its "gpt2" encoding (encode_ordinary). Plumbing.

Two stages. The pre-tokenizer cuts the text into pieces with GPT-2's pattern

    's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+

written out by hand (bpe_piece_end), with the classes of util/unicode_tables.h. Then each
piece is encoded on its own: a piece that is a token is that token; otherwise start from
one token per byte and merge, again and again, the adjacent pair whose concatenated bytes
form the token with the lowest id (the leftmost such pair on a tie), until no adjacent pair
forms a token. That is tiktoken's byte_pair_merge; in GPT-2's vocabulary a token's id is its
merge rank, so the lowest id is the earliest merge.

Any byte string encodes: a byte that is not part of well-formed UTF-8 is a character of
its own with no class (it goes with [^\s\p{L}\p{N}]), and every byte has a token, so the
tokens' bytes, concatenated, give the text back exactly. (tiktoken takes only valid UTF-8;
on valid UTF-8 the ids are its ids, which test_gpt2, tests/tiktoken_check.sh and the
differential fuzzing of tests/tiktoken_fuzz.sh check. The classes are Unicode 16.0's, the
version of tiktoken's regex engine: util/unicode_tables.h says why.)
Speed: about 60 MB/s on one core for English; data/prepare runs it on chunks in parallel
(bpe_next_cut says where a text can be cut without changing the ids).
*/
#ifndef UTIL_BPE_H
#define UTIL_BPE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "io.h"
#include "unicode_tables.h"

// ----------------------------------------------------------------------------
// UTF-8 and the character classes of the pattern

#define UTF8_INVALID 0xFFFFFFFFu  // the code point we give a byte that is not well-formed UTF-8

// the character at s[0] (n >= 1 bytes left): its code point in *cp, its length in bytes
// returned. Well-formed UTF-8 only (Unicode's table 3-7: no overlong forms, no surrogates,
// nothing above U+10FFFF); any other byte is a character of one byte, UTF8_INVALID.
static int utf8_decode(const unsigned char* s, size_t n, uint32_t* cp) {
    unsigned char b = s[0];
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    *cp = UTF8_INVALID;
    if (b < 0xC2 || b > 0xF4) return 1;  // a continuation byte, or a lead byte that is never well-formed
    int len = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t c = b & (0x7F >> len);
    // the second byte's range excludes overlong forms (E0, F0), surrogates (ED) and > U+10FFFF (F4)
    unsigned char lo = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80;
    unsigned char hi = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
    if ((size_t)len > n || s[1] < lo || s[1] > hi) return 1;
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 1;
        c = (c << 6) | (s[i] & 0x3F);
    }
    *cp = c;
    return len;
}

enum { CHAR_OTHER, CHAR_LETTER, CHAR_NUMBER, CHAR_SPACE };

// binary search in sorted, disjoint [first, last] ranges
static int in_ranges(const uint32_t (*ranges)[2], int count, uint32_t cp) {
    int lo = 0, hi = count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < ranges[mid][0]) hi = mid - 1;
        else if (cp > ranges[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

// \p{L}, \p{N}, \s (White_Space) or none of them; ASCII without the tables (test_gpt2
// checks the two ways agree)
static int char_class(uint32_t cp) {
    if (cp < 0x80) {
        if ((cp | 0x20) - 'a' < 26) return CHAR_LETTER;
        if (cp - '0' < 10) return CHAR_NUMBER;
        return (cp == ' ' || cp - '\t' < 5) ? CHAR_SPACE : CHAR_OTHER;  // \t \n \v \f \r
    }
    if (cp == UTF8_INVALID) return CHAR_OTHER;
    if (in_ranges(UNICODE_LETTER, UNICODE_LETTER_RANGES, cp)) return CHAR_LETTER;
    if (in_ranges(UNICODE_NUMBER, UNICODE_NUMBER_RANGES, cp)) return CHAR_NUMBER;
    if (in_ranges(UNICODE_SPACE, UNICODE_SPACE_RANGES, cp)) return CHAR_SPACE;
    return CHAR_OTHER;
}

// the class of the character at s[p] (p < n); its length in bytes in *len
static int class_at(const unsigned char* s, size_t n, size_t p, int* len) {
    uint32_t cp;
    *len = utf8_decode(s + p, n - p, &cp);
    return char_class(cp);
}

// ----------------------------------------------------------------------------
// the pre-tokenizer

// the end of the piece that starts at s[p] (p < n): the pattern's alternatives are tried in
// order and the first that matches wins, as in a backtracking regex
static inline size_t bpe_piece_end(const unsigned char* s, size_t n, size_t p) {
    if (s[p] == '\'' && p + 1 < n) {  // 's 't 're 've 'm 'll 'd: lowercase only
        unsigned char a = s[p + 1], b = p + 2 < n ? s[p + 2] : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return p + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return p + 3;
    }
    // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a run of one class
    size_t q = (s[p] == ' ' && p + 1 < n) ? p + 1 : p;
    int len, cls = class_at(s, n, q, &len);
    if (cls != CHAR_SPACE) {
        q += len;
        while (q < n && class_at(s, n, q, &len) == cls)
            q += len;
        return q;
    }
    // a run of whitespace. `\s+(?!\S)` takes it all at the end of the text; before a
    // non-space it gives back the run's last character, which then starts the next piece
    // (a space joins the word after it). A single character before a non-space is `\s+`.
    size_t last = p;  // where the run's last character starts
    for (q = p; q < n && class_at(s, n, q, &len) == CHAR_SPACE; q += len)
        last = q;
    return (q == n || last == p) ? q : last;
}

// Where the text can be cut so that the pieces of the two parts are those of the whole:
// just before a '\n' that is followed by a non-space character. Encoding the parts on their
// own (in parallel) then gives exactly the ids of the whole. Why: only whitespace pieces hold a
// '\n' (the other alternatives are runs of one non-space class, with at most a leading ' ').
// In the whole text the whitespace run ending in this '\n' (followed by a non-space) is
// `\s+(?!\S)` without its last character (if it has more than one), then the '\n' alone
// (`\s+`). The run starts a piece: the piece before it holds no whitespace. Cut here, the run
// without the '\n' ends the left part, where `\s+(?!\S)` takes all of it, the same piece;
// the '\n' starts the right part, alone before a non-space, the same piece. Every piece
// before the run ends where whitespace or the end of the text stops it, alike. The pattern
// never looks back, so from the '\n' on both scans agree. (Cutting after the '\n', before the
// non-space, is not safe: "a\n\nb" is "a" "\n" "\n" "b", but "a\n\n" alone is "a" "\n\n".)
// Returns the first such cut at or after `from`, or n if there is none.
static inline size_t bpe_next_cut(const unsigned char* text, size_t n, size_t from) {
    for (size_t i = from; i < n; i++) {
        const unsigned char* nl = memchr(text + i, '\n', n - i);
        if (!nl) return n;
        i = (size_t)(nl - text);
        int len;
        if (i + 1 < n && class_at(text, n, i + 1, &len) != CHAR_SPACE) return i;
    }
    return n;
}

// ----------------------------------------------------------------------------
// the merges

#define BPE_NONE INT_MAX  // the rank of bytes that are no token
#define BPE_SCAN_MAX 64   // pieces up to this long merge by tiktoken's scan; longer ones with a heap

typedef struct {
    int vocab_size;
    char* const* token_bytes;   // borrowed from the tokenizer: each token's bytes
    const int* token_length;    // and their number
    int byte_token[256];        // the token of each single byte
    int32_t* slot_token;        // hash table of the tokens' bytes: a token id, or -1 (empty slot)
    uint32_t* slot_hash;        // the hash of that token's bytes
    size_t mask;                // the number of slots - 1 (a power of two)
    size_t heap_from;           // pieces this long or longer merge with the heap (tests change it)
} BPE;

static uint32_t bytes_hash(const unsigned char* s, size_t n) {
    uint32_t h = 2166136261u;  // FNV-1a
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 16777619u;
    return h;
}

// the id of the token whose bytes are s[0..n), or BPE_NONE
static int bpe_rank(const BPE* bpe, const unsigned char* s, size_t n) {
    if (n > 255) return BPE_NONE;  // a token's length is a uint8
    uint32_t h = bytes_hash(s, n);
    for (size_t i = h & bpe->mask;; i = (i + 1) & bpe->mask) {
        int id = bpe->slot_token[i];
        if (id < 0) return BPE_NONE;
        if (bpe->slot_hash[i] == h && (size_t)bpe->token_length[id] == n
            && memcmp(bpe->token_bytes[id], s, n) == 0)
            return id;
    }
}

// The token table (vocab_size tokens of token_length[i] bytes, which may include 0 bytes)
// stays owned by the caller and must outlive the BPE. Stops with an error if a byte has no
// token of its own: then some texts could not be encoded. GPT-2's <|endoftext|> is in the
// table like any token, but no piece is ever its bytes (they mix classes), so it never comes
// out of bpe_encode, as in tiktoken's encode_ordinary.
static inline void bpe_init(BPE* bpe, int vocab_size, char* const* token_bytes, const int* token_length) {
    bpe->vocab_size = vocab_size;
    bpe->token_bytes = token_bytes;
    bpe->token_length = token_length;
    bpe->heap_from = BPE_SCAN_MAX + 1;
    size_t slots = 16;
    while (slots < 2 * (size_t)vocab_size)
        slots *= 2;
    bpe->mask = slots - 1;
    bpe->slot_token = mallocCheck(slots * sizeof(int32_t));
    bpe->slot_hash = mallocCheck(slots * sizeof(uint32_t));
    memset(bpe->slot_token, 0xFF, slots * sizeof(int32_t));  // all -1
    for (int b = 0; b < 256; b++)
        bpe->byte_token[b] = -1;
    for (int id = 0; id < vocab_size; id++) {
        const unsigned char* s = (const unsigned char*)token_bytes[id];
        size_t n = (size_t)token_length[id];
        if (bpe_rank(bpe, s, n) != BPE_NONE) continue;  // the same bytes twice: the lower id wins
        uint32_t h = bytes_hash(s, n);
        size_t i = h & bpe->mask;
        while (bpe->slot_token[i] >= 0)
            i = (i + 1) & bpe->mask;
        bpe->slot_token[i] = id;
        bpe->slot_hash[i] = h;
        if (n == 1) bpe->byte_token[s[0]] = id;
    }
    for (int b = 0; b < 256; b++)
        if (bpe->byte_token[b] < 0)
            die("the tokenizer has no token for the byte 0x%02X: it is not a byte-level BPE vocabulary "
                "(as GPT-2's is)", b);
}

static inline void bpe_free(BPE* bpe) {
    free(bpe->slot_token);
    free(bpe->slot_hash);
}

// tiktoken's byte_pair_merge, for a piece of n <= BPE_SCAN_MAX bytes. parts[0..m-1] are the
// current tokens, from byte start to the next part's start (parts[m-1] marks the end);
// pair_rank is the rank of a part and the next one together.
typedef struct { int start, token, pair_rank; } BPEPart;

// the rank of parts i and i+1 together once parts i+1 and i+2 have merged
static int rank_after_merge(const BPE* bpe, const unsigned char* s, const BPEPart* parts, int m, int i) {
    if (i + 3 >= m) return BPE_NONE;
    return bpe_rank(bpe, s + parts[i].start, (size_t)(parts[i + 3].start - parts[i].start));
}

static size_t merge_scan(const BPE* bpe, const unsigned char* s, int n, int* out) {
    BPEPart parts[BPE_SCAN_MAX + 1];
    int m = n + 1;
    for (int i = 0; i < m; i++) {
        parts[i].start = i;
        parts[i].token = i < n ? bpe->byte_token[s[i]] : -1;
        parts[i].pair_rank = i + 2 <= n ? bpe_rank(bpe, s + i, 2) : BPE_NONE;
    }
    for (;;) {
        int best = 0;  // the lowest rank, the leftmost on a tie
        for (int i = 1; i < m - 1; i++)
            if (parts[i].pair_rank < parts[best].pair_rank) best = i;
        if (parts[best].pair_rank == BPE_NONE) break;
        // part best absorbs part best+1: the pairs that start at best-1 and at best change
        if (best > 0) parts[best - 1].pair_rank = rank_after_merge(bpe, s, parts, m, best - 1);
        parts[best].token = parts[best].pair_rank;
        parts[best].pair_rank = rank_after_merge(bpe, s, parts, m, best);
        memmove(parts + best + 1, parts + best + 2, (size_t)(m - best - 2) * sizeof(BPEPart));
        m--;
    }
    for (int i = 0; i < m - 1; i++)
        out[i] = parts[i].token;
    return (size_t)(m - 1);
}

// The same merges for a long piece, without the scan's cost of n^2: the candidate pairs in
// a min-heap ordered by (rank, position), which is the scan's order (the lowest rank, the
// leftmost on a tie). The parts are a linked list over byte positions; a heap entry whose
// pair has changed since (a part merged with another) is skipped when it comes up.
typedef struct { int rank; uint32_t left, end; } BPEPair;  // merge the part at left with the next, up to end

static int pair_before(BPEPair a, BPEPair b) {
    return a.rank < b.rank || (a.rank == b.rank && a.left < b.left);
}

static void heap_push(BPEPair* heap, size_t* size, BPEPair e) {
    size_t i = (*size)++;
    for (; i > 0 && pair_before(e, heap[(i - 1) / 2]); i = (i - 1) / 2)
        heap[i] = heap[(i - 1) / 2];
    heap[i] = e;
}

static BPEPair heap_pop(BPEPair* heap, size_t* size) {
    BPEPair top = heap[0], e = heap[--(*size)];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= *size) break;
        if (child + 1 < *size && pair_before(heap[child + 1], heap[child])) child++;
        if (!pair_before(heap[child], e)) break;
        heap[i] = heap[child];
        i = child;
    }
    heap[i] = e;
    return top;
}

// pushes the pair of the part at left and the next one, if the two together are a token
static void push_pair(const BPE* bpe, const unsigned char* s, const uint32_t* next, uint32_t n,
                      uint32_t left, BPEPair* heap, size_t* size) {
    if (next[left] >= n) return;
    uint32_t end = next[next[left]];
    int rank = bpe_rank(bpe, s + left, end - left);
    if (rank != BPE_NONE) heap_push(heap, size, (BPEPair){rank, left, end});
}

static size_t merge_heap(const BPE* bpe, const unsigned char* s, size_t n64, int* out) {
    if (n64 >= UINT32_MAX) die("a piece of %zu bytes is too long to encode", n64);
    uint32_t n = (uint32_t)n64, none = UINT32_MAX;
    uint32_t* next = mallocCheck((size_t)(n + 1) * sizeof(uint32_t));  // the start of the next part
    uint32_t* prev = mallocCheck((size_t)n * sizeof(uint32_t));         // the start of the previous part
    int* token = mallocCheck((size_t)n * sizeof(int));                   // -1: absorbed by the part before
    BPEPair* heap = mallocCheck(3 * (size_t)n * sizeof(BPEPair));       // n-1 pairs, then 2 per merge
    size_t size = 0;
    for (uint32_t i = 0; i < n; i++) {
        next[i] = i + 1;
        prev[i] = i > 0 ? i - 1 : none;
        token[i] = bpe->byte_token[s[i]];
    }
    next[n] = n;
    for (uint32_t i = 0; i + 1 < n; i++)
        push_pair(bpe, s, next, n, i, heap, &size);
    while (size > 0) {
        BPEPair e = heap_pop(heap, &size);
        uint32_t a = e.left, b = next[a];
        if (token[a] < 0 || b >= n || next[b] != e.end) continue;  // no longer this pair
        token[a] = e.rank;
        token[b] = -1;
        next[a] = next[b];
        if (next[a] < n) prev[next[a]] = a;
        if (prev[a] != none) push_pair(bpe, s, next, n, prev[a], heap, &size);
        push_pair(bpe, s, next, n, a, heap, &size);
    }
    size_t count = 0;
    for (uint32_t i = 0; i < n; i = next[i])
        out[count++] = token[i];
    free(next); free(prev); free(token); free(heap);
    return count;
}

// the ids of one piece s[0..n) into out; returns their number (at most n)
static size_t bpe_encode_piece(const BPE* bpe, const unsigned char* s, size_t n, int* out) {
    int whole = bpe_rank(bpe, s, n);  // tiktoken: a piece that is a token is that token
    if (whole != BPE_NONE) {
        out[0] = whole;
        return 1;
    }
    if (n < bpe->heap_from && n <= BPE_SCAN_MAX) return merge_scan(bpe, s, (int)n, out);
    return merge_heap(bpe, s, n, out);
}

// the ids of text[0..n) into out, which has room for n (never more ids than bytes);
// returns their number. Thread-safe: the BPE is only read.
static inline size_t bpe_encode(const BPE* bpe, const unsigned char* text, size_t n, int* out) {
    size_t count = 0;
    for (size_t p = 0; p < n;) {
        size_t end = bpe_piece_end(text, n, p);
        count += bpe_encode_piece(bpe, text + p, end - p, out + count);
        p = end;
    }
    return count;
}

#endif
