/*
tests/seq2seq_sin_scale.c: an experiment, not a test: train_seq2seq with its fixed sinusoid
table (-pe sin) multiplied by PE_SCALE (an environment variable; default 1). The program has
no flag for it: at amplitude 1 the table drowns GPT-2-sized token embeddings (N(0, 0.02);
doc/errata.md E15) and -pe sin does not learn reversal; at 0.02 it does. Used for the
measurement at twice the training length (doc/errata.md, "Remarks"). Build and run:
  make tests/seq2seq_sin_scale
  PE_SCALE=0.02 OMP_NUM_THREADS=1 ./tests/seq2seq_sin_scale -pe sin -mt 33 -o out_sin
Every flag is train_seq2seq's; the table is scaled after the model is built or loaded, so
-x 0 -e CHECKPOINT evaluates a checkpoint with the same scale.
*/
#define main train_seq2seq_main  // train_seq2seq_main.c's own main, unused
#include "train_seq2seq_main.c"
#undef main

int main(int argc, char** argv) {
    error_program = "seq2seq_sin_scale";
    const char* env = getenv("PE_SCALE");
    char* end = NULL;
    float scale = env ? strtof(env, &end) : 1.0f;
    if (env && (end == env || *end || !(scale > 0.0f))) die("PE_SCALE '%s' is not a positive number", env);
    Options o = parse_seq2seq_args(argc, argv);
    static S2SRun r;  // zeroed
    s2s_setup(&o, &r);
    if (!r.model.sinusoids) die("PE_SCALE scales the sinusoid table: give -pe sin");
    for (size_t i = 0; i < (size_t)r.model.config.max_seq_len * r.model.config.channels; i++)
        r.model.sinusoids[i] *= scale;
    printf("the sinusoid table scaled by %g\n", scale);
    if (o.max_steps > 0) s2s_train(&o, &r);
    if (r.have_val) s2s_report(&o, &r);
    s2s_run_free(&r);
    return 0;
}
