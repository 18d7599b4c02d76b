/*
tests/article003_layer.c: article 003's toy layer computed by train_seq2seq.c's own layers,
for tests/article_code.py. That script draws the layer's weights and input with PyTorch as the
article does (seed 42), writes them as a checkpoint of this model, runs this program, and
compares what it prints with the numbers the article prints and with what PyTorch computes.

  tests/article003_layer CHECKPOINT TS TT

CHECKPOINT (version 200) is a 1 + 1 layer model of the article's shape: C = d_model = 4,
NH = 2 heads, d_ff = 8 (-ff 2C), post-LN (-ln post), ReLU (-act relu), learned positions that
are all 0, so that the embedding of token 3 + t is row 3 + t of wte: rows 3 .. 3 + TS - 1 hold
the encoder's input (the article's encoder_input), the next TT rows the decoder's. Nothing
else is special: the encoder runs as in training (seq2seq_encode), the decoder with teacher
forcing (seq2seq_decode_teacher, causal). Printed, each row on a line, "%.9g":
  encoder_output     TS rows of C: encoder layer 0's output (sublayer 1), before the final
                     layernorm enc_lnf, which is nn.Transformer's and not the article's
                     (doc/seq2seq.md): the article's memory
  encoder_attention  NH * TS rows of TS: its self-attention's weights, head by head (the
                     article's attn_weights, (B*h, T, T) with B = 1)
  decoder_output     TT rows of C: decoder layer 0's output (sublayer 4), before lnf. The
                     decoder reads encoder_output as its memory (the article's decoder reads
                     the last encoder layer's output; enc_lnf is not in it): that output is
                     copied over acts.memory before the decoder runs. (Here enc_lnf's 1 and 0
                     on an output that norm2 has already normalised change it by less than
                     the 1e-6 the comparison allows; the copy makes it exact, not lucky.)
*/
#define main train_seq2seq_main  // train_seq2seq.c's own main, unused (its helpers stay used)
#include "train_seq2seq.c"
#undef main

static void print_rows(const char* name, const float* x, int rows, int cols) {
    printf("%s %d %d\n", name, rows, cols);
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < cols; i++)
            printf("%.9g%c", x[(size_t)r * cols + i], i + 1 < cols ? ' ' : '\n');
}

int main(int argc, char** argv) {
    error_program = "article003_layer";
    if (argc != 4) die("usage: tests/article003_layer CHECKPOINT TS TT");
    Seq2Seq m;
    seq2seq_build_from_checkpoint(&m, argv[1]);
    Seq2SeqConfig c = m.config;
    int Ts = atoi(argv[2]), Tt = atoi(argv[3]), C = c.channels;
    if (c.enc_layers != 1 || c.dec_layers != 1 || Ts < 1 || Tt < 1 || 3 + Ts + Tt > c.vocab_size)
        die("'%s': not one layer each with %d + %d input rows after the 3 specials (Le %d, Ld %d, V %d)",
            argv[1], Ts, Tt, c.enc_layers, c.dec_layers, c.vocab_size);
    int src[64], dec_in[64], src_len[1] = {Ts};
    if (Ts > 64 || Tt > 64) die("TS and TT: 64 at most");
    for (int t = 0; t < Ts; t++)
        src[t] = 3 + t;
    for (int t = 0; t < Tt; t++)
        dec_in[t] = 3 + Ts + t;
    seq2seq_encode(&m, src, src_len, 1, Ts, -1);
    const float* enc_out = sublayer_output(&m, 1);  // B = 1: its rows are the first Ts
    print_rows("encoder_output", enc_out, Ts, C);
    print_rows("encoder_attention", sublayer_acts(&m, sublayer(&m.params, c, 0), 0).att_probs,
               c.num_heads * Ts, Ts);
    memcpy(m.acts.memory, enc_out, (size_t)Ts * C * sizeof(float));
    seq2seq_decode_teacher(&m, dec_in, NULL, Tt);
    print_rows("decoder_output", sublayer_output(&m, 4), Tt, C);
    seq2seq_free(&m);
    return 0;
}
