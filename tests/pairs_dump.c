/*
tests/pairs_dump.c: prints a pair token file through util/pairs.h, for tests/run_tests.sh.

  pairs_dump PAIRS TOKENIZER                 every pair as "source\ttarget" (the text back)
  pairs_dump PAIRS TOKENIZER -b I J ...      pairs I, J, ... as one padded batch (pair_batch_fill)
  pairs_dump PAIRS TOKENIZER -mt N           pairs_check_max_len with maxT N, then "fits"
  pairs_dump PAIRS TOKENIZER -order SEED E   pairs_order's permutation for epoch E
*/
#define _POSIX_C_SOURCE 200809L
#include "../util/pairs.h"
#include "../util/tokenizer.h"

static void print_row(const Tokenizer* tk, const char* name, const int* row, int n) {
    printf("%s", name);
    for (int t = 0; t < n; t++) {
        fputc(' ', stdout);
        if (row[t] < 0) fputc('-', stdout);
        else print_token(tk, row[t], stdout);
    }
    fputc('\n', stdout);
}

static void print_batch(const PairSet* ps, const Tokenizer* tk, int argc, char** argv) {
    int B = argc, ids[64];
    if (B < 1 || B > 64) die("-b takes 1..64 pair indices");
    for (int b = 0; b < B; b++)
        ids[b] = atoi(argv[b]);
    PairBatch pb;
    pair_batch_alloc(&pb, B, ps->max_src, ps->max_tgt);
    pair_batch_fill(&pb, ps, ids, B);
    printf("B %d Ts %d Tt %d\n", pb.B, pb.Ts, pb.Tt);
    for (int b = 0; b < B; b++) {
        printf("row %d: src_len %d tgt_len %d\n", b, pb.src_len[b], pb.tgt_len[b]);
        print_row(tk, "src", pb.src + (size_t)b * pb.Ts, pb.Ts);
        print_row(tk, "dec_in", pb.dec_in + (size_t)b * pb.Tt, pb.Tt);
        print_row(tk, "dec_tgt", pb.dec_tgt + (size_t)b * pb.Tt, pb.Tt);
    }
    pair_batch_free(&pb);
}

int main(int argc, char** argv) {
    error_program = "pairs_dump";
    if (argc < 3) die("usage: pairs_dump PAIRS TOKENIZER [-b I J ... | -mt N | -order SEED EPOCH]");
    PairSet ps;
    pairs_load(&ps, argv[1]);
    Tokenizer tk;
    tokenizer_init(&tk, argv[2]);
    if (tk.vocab_size != ps.vocab_size)
        die("'%s' has %d tokens, '%s' %d", argv[2], tk.vocab_size, argv[1], ps.vocab_size);
    if (argc >= 4 && strcmp(argv[3], "-b") == 0) {
        print_batch(&ps, &tk, argc - 4, argv + 4);
    } else if (argc == 5 && strcmp(argv[3], "-mt") == 0) {
        pairs_check_max_len(&ps, argv[1], atoi(argv[4]));
        printf("fits\n");
    } else if (argc == 6 && strcmp(argv[3], "-order") == 0) {
        int* perm = mallocCheck((size_t)ps.num_pairs * sizeof(int));
        pairs_order(perm, ps.num_pairs, (uint64_t)atoll(argv[4]), atoi(argv[5]));
        for (int i = 0; i < ps.num_pairs; i++)
            printf("%d\n", perm[i]);
        free(perm);
    } else {
        for (int i = 0; i < ps.num_pairs; i++) {
            const uint16_t* src = ps.tokens + ps.offset[i];
            for (int t = 0; t < ps.src_len[i] + ps.tgt_len[i]; t++) {
                if (t == ps.src_len[i]) fputc('\t', stdout);
                print_token(&tk, src[t], stdout);
            }
            fputc('\n', stdout);
        }
    }
    tokenizer_free(&tk);
    pairs_free(&ps);
    return 0;
}
