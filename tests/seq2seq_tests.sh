# The encoder-decoder (train_seq2seq.c), sourced by tests/run_tests.sh (its ok, bad, expect_error,
# run_test_program, TMP and counters): test_seq2seq, then the command line: a short training whose
# loss falls, resume bit for bit, the cross-attention picture, and bad input.
echo "-- the encoder-decoder: test_seq2seq"
run_test_program test_seq2seq

echo "-- the encoder-decoder: command line"
S2S=(-nl 1 -nh 2 -nc 32 -b 16 -l 3e-3 -u 5 -ne 48 -g 2 -v 0)
# a short training with checkpoints every 10 steps; then the last checkpoint removed and the run
# resumed from step 20: the resumed steps' losses must be the first run's, bit for bit
./train_seq2seq "${S2S[@]}" -x 30 -n 10 -o "$TMP/s2s" > "$TMP/s2s.log" 2>&1
rm -f "$TMP/s2s/model_00000030.bin" "$TMP/s2s/state_00000030.bin"
./train_seq2seq "${S2S[@]}" -x 30 -n 10 -o "$TMP/s2s" -y 1 > "$TMP/s2s_resumed.log" 2>&1
first=$(capture 'step +1/30 [|] loss ([0-9.]+)' "$TMP/s2s.log" | head -n 1)
last=$(capture 'step +30/30 [|] loss ([0-9.]+)' "$TMP/s2s.log")
losses() { grep -oE 'step +(2[1-9]|30)/30 [|] loss [0-9.]+' "$1"; }
if [ -n "$first" ] && [ -n "$last" ] && awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.15) }'; then
    ok "train_seq2seq: the loss falls from $first to $last in 30 steps"
else
    bad "train_seq2seq: the loss did not fall (first '$first', last '$last')"; tail -n 5 "$TMP/s2s.log"
fi
if [ "$(losses "$TMP/s2s.log" | wc -l)" -eq 10 ] && cmp -s <(losses "$TMP/s2s.log") <(losses "$TMP/s2s_resumed.log") \
      && grep -q 'resuming from .*model_00000020.bin at step 20' "$TMP/s2s_resumed.log"; then
    ok "train_seq2seq -y 1: resumed at step 20, steps 21-30 give the same losses bit for bit"
else
    bad "train_seq2seq -y 1: the resumed losses differ"; diff <(losses "$TMP/s2s.log") <(losses "$TMP/s2s_resumed.log") | head -4
fi
# exact match printed beside teacher-forced sequence accuracy, its equal by construction
tf_seq=$(capture '^teacher-forced sequence accuracy ([0-9.]+)% = exact match' "$TMP/s2s.log")
exact_seq=$(capture '^teacher-forced sequence accuracy [0-9.]+% = exact match ([0-9.]+)%' "$TMP/s2s.log")
if grep -qE '^held-out: 48 pairs [|] exact match [0-9.]+% [(]greedy decoding[)] [|] teacher-forced token accuracy [0-9.]+%' \
        "$TMP/s2s.log" && [ "$(grep -cE '^ +(right|WRONG) ' "$TMP/s2s.log")" -eq 2 ] \
      && [ -n "$tf_seq" ] && [ "$tf_seq" == "$exact_seq" ] \
      && grep -qE '^  after the first wrong greedy token [(][0-9]+ pairs, [0-9]+ positions[)]: greedy [0-9.]+%, teacher forced [0-9.]+%' "$TMP/s2s.log" \
      && grep -qE '^  edit distance to the target [(]greedy[)]: [0-9]+ edits, [0-9.]+% of [0-9]+ characters; one edit away: [0-9]+ pairs' "$TMP/s2s.log" \
      && grep -q 'data-steps="30"' "$TMP/s2s/loss.svg"; then
    ok "train_seq2seq: exact match beside teacher-forced token and sequence accuracy, after the first wrong token, the edit distance, on 48 held-out pairs, 2 decoded examples, loss.svg"
else
    bad "train_seq2seq: no held-out report, examples or loss curve"; tail -n 4 "$TMP/s2s.log"
fi
# the cross-attention maps of a held-out pair: Ld x NH panels, one cell per (target, source) weight,
# each row summing to 1
ckpt="$TMP/s2s/model_00000020.bin"
./train_seq2seq -e "$ckpt" -x 0 -ne 8 -g 0 -am "$TMP/cross.svg" > "$TMP/cross.log" 2>&1
dims=$(capture 'pair 0 [(]([0-9]+ target [+] EOS rows, [0-9]+)' "$TMP/cross.log")
Tt=${dims%% *}; Ts=${dims##* }
# map_check FILE L NH ROWS COLUMNS CELLS: an attention picture of L x NH panels, one cell per
# drawn weight (CELLS of them), each row summing to 1
map_check() {
    perl -e '
        my ($file, $L, $NH, $T, $S, $want) = @ARGV; local $/; open(my $f, "<", $file) or die; my $svg = <$f>;
        my $panels = () = $svg =~ /<g class="panel"/g; my $ticks = () = $svg =~ /<text class="tick"/g;
        my (%row, $cells); while ($svg =~ /<path data-p="([0-9.]+)" fill="#[0-9a-f]{6}" d="([^"]*)"/g) {
            my ($p, $d) = ($1, $2); while ($d =~ /M(\d+) (\d+)h1v1h-1z/g) { $cells++; $row{$2} += $p; } }
        my $worst = 0; for (values %row) { my $e = abs($_ / ($L * $NH) - 1); $worst = $e if $e > $worst }
        print "$panels panels, $cells cells, $ticks ticks, rows within $worst of 1";
        exit !($panels == $L * $NH && $cells == $want && $ticks == $panels * ($T + $S) && $worst < 0.06);
    ' "$@"
}
if [ -n "$Tt" ] && res=$(map_check "$TMP/cross.svg" 1 2 "$Tt" "$Ts" $((2 * Tt * Ts))); then
    ok "train_seq2seq -am: the cross-attention of a held-out pair ($Tt target rows x $Ts source columns): $res"
else
    bad "train_seq2seq -am: ${res:-no picture}"; tail -n 3 "$TMP/cross.log"
fi
# the self-attention beside it: the encoder's over the source (every cell), the decoder's over its
# inputs (causal: the cells on and below the diagonal)
if [ -n "$Tt" ] && enc=$(map_check "$TMP/cross_encoder.svg" 1 2 "$Ts" "$Ts" $((2 * Ts * Ts))) \
      && dec=$(map_check "$TMP/cross_decoder.svg" 1 2 "$Tt" "$Tt" $((Tt * (Tt + 1)))); then
    ok "train_seq2seq -am: self-attention maps beside it, the encoder's ($enc) and the decoder's ($dec)"
else
    bad "train_seq2seq -am: self-attention maps: ${enc:-no encoder picture} / ${dec:-no decoder picture}"
fi

# article 002's worked example as a command: the article's numbers give PyTorch's outputs (E4),
# the causal mask the first row v1, and the reader's own numbers are read
make tests/article002 > /dev/null 2>&1
if ./tests/article002 > "$TMP/a002.log" 2>&1 && ./tests/article002 -causal 1 > "$TMP/a002c.log" 2>&1 \
      && grep -q '^attention_output = \[\[0.7184, 0.7893\], \[0.7284, 0.8002\], \[0.7383, 0.8111\]\]' "$TMP/a002.log" \
      && grep -q '^attention_output = \[\[0.3100, 0.3400\], \[0.5169, 0.5676\]' "$TMP/a002c.log" \
      && ./tests/article002 -x "1 0; 0 1" -wq "0 0; 0 0" | grep -q '^attention_weights = \[\[0.5000, 0.5000\]'; then
    ok "tests/article002: the article's example (outputs 0.7184 0.7893 ...; causal: v1 first), and the reader's numbers"
else
    bad "tests/article002: $(tail -n 1 "$TMP/a002.log")"
fi
./tests/article002 -wq "1 2 3" > /dev/null 2> "$TMP/a002e.log"; rc=$?
if [ $rc -eq 1 ] && [ "$(cat "$TMP/a002e.log")" == "article002: error: -wq is 1 x 3; X's width is 2, so it must be 2 x 2" ]; then
    ok "bad input: tests/article002 -wq of the wrong shape -> exit 1, one line naming the flag"
else
    bad "bad input: tests/article002 -wq \"1 2 3\" -> exit $rc: $(head -n 2 "$TMP/a002e.log")"
fi

# bad input: one line naming the file or flag, non-zero exit
printf 'abc\tcba\n' > "$TMP/one_pair.txt"
expect_error "a GPT-2 checkpoint given to train_seq2seq" "is a GPT-2 checkpoint (version 3)" \
    ./train_seq2seq -e data/ref/ref_a_model.bin -x 0
expect_error "an encoder-decoder checkpoint given to train_gpt2" "is an encoder-decoder checkpoint (version 201)" \
    ./train_gpt2 -e "$ckpt" -x 0 -g 0
head -c 3000 "$ckpt" > "$TMP/s2s_truncated.bin"
expect_error "a truncated encoder-decoder checkpoint" "s2s_truncated.bin' is truncated" \
    ./train_seq2seq -e "$TMP/s2s_truncated.bin" -x 0
perl -e 'open(my $f, "+<:raw", shift) or die; seek($f, 24, 0); print $f pack("l<", 31)' "$TMP/s2s_truncated.bin"
expect_error "an encoder-decoder checkpoint whose heads do not divide the channels" "channels 31 are not divisible by heads 2" \
    ./train_seq2seq -e "$TMP/s2s_truncated.bin" -x 0
expect_error "a pair longer than the model's maxT" "characters, more than the model's maxT 8" \
    ./train_seq2seq "${S2S[@]}" -mt 8 -x 1 -o ""
expect_error "a tokenizer of another vocabulary" "-tok 'data/tiny_shakespeare_tokenizer.bin' has 65 tokens, the model 29" \
    ./train_seq2seq -e "$ckpt" -x 0 -tok data/tiny_shakespeare_tokenizer.bin
./data/make_pairs -t add -n 40 -d 2 -sd 3 -o "$TMP/add.txt" > /dev/null 2>&1
./data/prepare -i "$TMP/add.txt" -o "$TMP/add" -m pairs -v 0.25 > /dev/null 2>&1
expect_error "pairs of another task (another vocabulary)" "add_val.bin' has a vocabulary of 14 tokens, the model 29" \
    ./train_seq2seq -e "$ckpt" -x 0 -j "$TMP/add_val.bin"
expect_error "-pe rope" "-pe rope: the encoder-decoder has learned or sinusoidal positions" ./train_seq2seq -pe rope
expect_error "-nle -1" "-nle must be >= 0" ./train_seq2seq -nle -1
expect_error "-causal 2" "-causal must be 1 or 0" ./train_seq2seq -causal 2
expect_error "-opt adam" "-opt must be adamw or sgd" ./train_seq2seq -opt adam
expect_error "-fe 2" "-fe must be 1 or 0" ./train_seq2seq -fe 2
expect_error "-es 2" "-es must be 1 or 0" ./train_seq2seq -es 2
expect_error "-es 1 on a loaded model built without it" \
    "-es: the model in '$ckpt' was built without the embedding scale" ./train_seq2seq -e "$ckpt" -x 0 -es 1
expect_error "-ln of a loaded model" "-ln: the model in '$ckpt' was built otherwise" ./train_seq2seq -e "$ckpt" -x 0 -ln post
for v in 0 -8 abc 300000; do
    expect_error "-ff $v" "-ff" ./train_seq2seq -ff $v
done
expect_error "-ff of a loaded model" "-ff 16: the model in '$ckpt' has d_ff=128; its shape is its own" \
    ./train_seq2seq -e "$ckpt" -x 0 -ff 16
# -ff 64 (article 003's 2C): d_ff in slot 15 of the checkpoint, which loads again
./train_seq2seq "${S2S[@]}" -ff 64 -x 2 -o "$TMP/s2s_ff" > "$TMP/s2s_ff.log" 2>&1
slots=" $(echo $(od -An -t d4 -j 52 -N 12 "$TMP/s2s_ff/model_00000002.bin" 2> /dev/null)) "
if grep -q '^MLP: hidden width d_ff = 64 (-ff), not 4C = 128' "$TMP/s2s_ff.log" \
      && [ "$slots" == " 1 0 64 " ] && ./train_seq2seq -e "$TMP/s2s_ff/model_00000002.bin" -x 0 -ne 8 -g 1 > /dev/null 2>&1; then
    ok "train_seq2seq -ff 64: slot 15 holds d_ff (slots 13..15: $slots), and the checkpoint loads again"
else
    bad "train_seq2seq -ff 64: slots 13..15 '$slots'"; tail -n 2 "$TMP/s2s_ff.log"
fi
