#!/usr/bin/env bash
# make test: the reference and unit tests (test_gpt2), then the command line: a short
# training whose loss must fall, resume after a kill, and every kind of bad input.
# The last line is "N passed, M failed"; the exit status is non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
TMP=tests/tmp
rm -rf "$TMP"; mkdir -p "$TMP"
pass=0; fail=0
ok()  { echo "PASS $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# ---- 1. test_gpt2: references, finite differences, fast vs plain, KV cache, determinism
./test_gpt2 > "$TMP/test_gpt2.log" 2>&1
rc=$?
cat "$TMP/test_gpt2.log"
counts=$(tail -n 1 "$TMP/test_gpt2.log")
if [[ "$counts" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    pass=$((pass + BASH_REMATCH[1])); fail=$((fail + BASH_REMATCH[2]))
    [ $rc -eq 0 ] || [ "${BASH_REMATCH[2]}" -gt 0 ] || bad "test_gpt2 exited with status $rc"
else
    bad "test_gpt2 did not finish (exit status $rc)"
fi

# ---- 1b. the reference check can fail: corrupted copies of a reference state must be rejected
# (ref_a_state.bin: B=3 T=11 V=65, so the loss float sits at byte 1024 + 4*(2*33 + 33*65) = 9868 and
# the gradients start at 9872; qkvw's gradient starts at float 4736 of them and has 6144 floats)
corrupt() {  # corrupt FILE loss FACTOR | corrupt FILE grad INDEX FRACTION_OF_TENSOR_MAX
    perl -e '
        my ($file, $what, $a, $b) = @ARGV;
        open(my $f, "+<", $file) or die; binmode $f;
        if ($what eq "loss") {
            seek($f, 9868, 0); read($f, my $buf, 4); seek($f, 9868, 0); print $f pack("f<", unpack("f<", $buf) * $a);
        } else {
            my $start = 9872 + 4 * 4736; seek($f, $start, 0); read($f, my $buf, 4 * 6144);
            my @g = unpack("f<*", $buf); my $max = 0; for (@g) { $max = abs($_) if abs($_) > $max }
            $g[$a] += $b * $max; seek($f, $start, 0); print $f pack("f<*", @g);
        }' "$@"
}
for case in "loss 1.01" "loss 1.001" "grad 100 0.01" "grad 5000 0.01"; do
    cp data/ref/ref_a_state.bin "$TMP/corrupt.bin"; corrupt "$TMP/corrupt.bin" $case
    if ./test_gpt2 -e data/ref/ref_a_model.bin -s "$TMP/corrupt.bin" > "$TMP/corrupt.log" 2>&1; then
        bad "a reference state corrupted by '$case' was accepted"
    else
        ok "a reference state corrupted by '$case' is rejected: $(grep -m1 FAIL "$TMP/corrupt.log")"
    fi
done
if ./test_gpt2 -e data/ref/ref_a_model.bin -s data/ref/ref_a_state.bin > "$TMP/pair.log" 2>&1; then
    ok "./test_gpt2 -e MODEL -s STATE accepts the uncorrupted pair"
else
    bad "./test_gpt2 -e MODEL -s STATE rejects the uncorrupted pair"
fi

echo "-- command line"
# a small, fast model for the command-line checks
SMALL=(-nl 2 -nh 2 -nc 32 -b 4 -t 32 -v 0 -g 0)

# ---- 2. a short training run: the loss must fall
./train_gpt2 "${SMALL[@]}" -x 80 -l 3e-3 -u 10 -o "" > "$TMP/train.log" 2>&1
first=$(grep -m1 -oP 'step +1/80 \| loss \K[0-9.]+' "$TMP/train.log")
last=$(grep -oP 'step +80/80 \| loss \K[0-9.]+' "$TMP/train.log")
if [ -n "$first" ] && [ -n "$last" ] && awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.5) }'; then
    ok "short training: loss falls from $first to $last in 80 steps"
else
    bad "short training: loss did not fall (first '$first', last '$last')"; tail -n 5 "$TMP/train.log"
fi

# ---- 3. llm.c files of another shape (V=101 padded to 128, L=3, C=48, 6 heads)
if ./train_gpt2 -e data/ref/ref_b_model.bin -i data/tiny_shakespeare_train.bin -j data/tiny_shakespeare_val.bin \
      -b 3 -t 29 -x 3 -o "$TMP/other" -g 20 > "$TMP/other.log" 2>&1 && grep -q 'step     3/3' "$TMP/other.log" \
      && [ -f "$TMP/other/model_00000003.bin" ]; then
    ok "trains an llm.c checkpoint of another shape (-e ref_b_model.bin -b 3 -t 29 -x 3)"
else
    bad "training from ref_b_model.bin"; tail -n 5 "$TMP/other.log"
fi

# ---- 4. -x 0 -g N only generates
out=$(./train_gpt2 -e data/ref/ref_a_model.bin -x 0 -g 40 -pr "ROMEO:" 2>&1)
if [ $? -eq 0 ] && [[ "$out" == *"ROMEO:"* ]] && [[ "$out" != *"step"* ]]; then
    ok "-x 0 -g 40 generates from a prompt and trains nothing"
else
    bad "-x 0 -g 40: $out"
fi

# ---- 5. resume: a run killed after a checkpoint and resumed with -y 1 gives the same losses
RES=(-nl 1 -nh 2 -nc 16 -b 2 -t 16 -v 0 -g 0 -x 600 -n 50 -sh 1 -dr 0.1)
./train_gpt2 "${RES[@]}" -o "$TMP/full" > "$TMP/full.log" 2>&1
./train_gpt2 "${RES[@]}" -o "$TMP/part" > "$TMP/part.log" 2>&1 &
pid=$!
for _ in $(seq 1 4000); do
    [ -f "$TMP/part/state_00000100.bin" ] && break
    sleep 0.002
done
kill -9 $pid 2> /dev/null; wait $pid 2> /dev/null
# if the run outran the kill, drop what it wrote after step 100, as if it had died there
for f in "$TMP"/part/*_00000[1-6][0-9][0-9].bin; do
    step=$(basename "$f" .bin); step=$((10#${step##*_}))
    [ $step -gt 100 ] && rm -f "$f"
done
./train_gpt2 "${RES[@]}" -o "$TMP/part" -y 1 > "$TMP/resumed.log" 2>&1
from=$(grep -oP 'resuming from .* at step \K[0-9]+' "$TMP/resumed.log")
losses() { grep -oP 'step +\K[0-9]+/600 \| loss [0-9.]+' "$1" | awk -F/ -v s="$2" '$1 > s'; }
if [ -n "$from" ] && [ "$from" -ge 50 ] && [ "$(losses "$TMP/resumed.log" "$from")" == "$(losses "$TMP/full.log" "$from")" ] \
      && [ "$(losses "$TMP/resumed.log" "$from" | wc -l)" -eq $((600 - from)) ]; then
    ok "killed after the checkpoint at step $from and resumed with -y 1: the $((600 - from)) remaining losses equal the uninterrupted run's, bit for bit"
else
    bad "resume from step '$from' does not reproduce the uninterrupted losses"
fi

# ---- 6. bad input: one error line naming the file or flag, non-zero exit, no crash
# expect_error NAME EXPECTED_TEXT COMMAND...
expect_error() {
    local name="$1" want="$2"; shift 2
    "$@" > "$TMP/out" 2> "$TMP/err"
    local rc=$?
    local line; line=$(head -n 1 "$TMP/err")
    if [ $rc -ne 0 ] && [ $rc -lt 128 ] && [[ "$line" == *"$want"* ]] && [[ "$line" == train_gpt2:* ]] \
          && ! grep -qiE 'sanitizer|runtime error|segmentation|core dumped' "$TMP/err"; then
        ok "bad input: $name -> exit $rc: $line"
    else
        bad "bad input: $name -> exit $rc, expected '$want' in: $line"
    fi
}
# crafted files: patch int32 slot N of a copy (little-endian)
patch_int() { printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($3 & 255)) $((($3 >> 8) & 255)) $((($3 >> 16) & 255)) $((($3 >> 24) & 255)))" \
                | dd of="$1" bs=1 seek=$((4 * $2)) conv=notrunc status=none; }
cp data/ref/ref_a_model.bin "$TMP/v4.bin"; patch_int "$TMP/v4.bin" 1 4
head -c 50000 data/ref/ref_a_model.bin > "$TMP/trunc_model.bin"
head -c 3000 data/tiny_shakespeare_val.bin > "$TMP/trunc_tokens.bin"
cp data/tiny_shakespeare_val.bin "$TMP/bad_token.bin"; printf '\xc8\x00' | dd of="$TMP/bad_token.bin" bs=1 seek=1044 conv=notrunc status=none
head -c 1224 data/tiny_shakespeare_val.bin > "$TMP/short.bin"; patch_int "$TMP/short.bin" 2 100
cp data/tiny_shakespeare_tokenizer.bin "$TMP/tok_magic.bin"; patch_int "$TMP/tok_magic.bin" 0 12345

expect_error "missing checkpoint" "nope.bin" ./train_gpt2 -e "$TMP/nope.bin"
expect_error "missing training data" "nope_train.bin" ./train_gpt2 -i "$TMP/nope_train.bin"
expect_error "missing validation data" "nope_val.bin" ./train_gpt2 "${SMALL[@]}" -j "$TMP/nope_val.bin"
expect_error "missing tokenizer" "nope_tok.bin" ./train_gpt2 -tok "$TMP/nope_tok.bin"
expect_error "wrong magic (token file as checkpoint)" "not a llm.c model checkpoint" ./train_gpt2 -e data/tiny_shakespeare_val.bin
expect_error "wrong magic (tokenizer)" "not a llm.c tokenizer" ./train_gpt2 -tok "$TMP/tok_magic.bin"
expect_error "wrong checkpoint version" "version 4" ./train_gpt2 -e "$TMP/v4.bin"
expect_error "truncated checkpoint" "truncated" ./train_gpt2 -e "$TMP/trunc_model.bin"
expect_error "truncated token file" "truncated" ./train_gpt2 "${SMALL[@]}" -i "$TMP/trunc_tokens.bin"
expect_error "token outside the vocabulary" "outside the model's vocabulary" ./train_gpt2 "${SMALL[@]}" -i "$TMP/bad_token.bin"
expect_error "data shorter than one batch" "fewer than one batch" ./train_gpt2 "${SMALL[@]}" -i "$TMP/short.bin"
expect_error "-t larger than maxT" "maxT" ./train_gpt2 -e data/ref/ref_a_model.bin -t 17
expect_error "-b 0" "-b" ./train_gpt2 -b 0
expect_error "-t -5" "-t" ./train_gpt2 -t -5
expect_error "-l -1" "-l" ./train_gpt2 -l -1
expect_error "-b abc (not a number)" "-b expects an integer" ./train_gpt2 -b abc
expect_error "-l 1e-3x (not a number)" "-l expects a number" ./train_gpt2 -l 1e-3x
expect_error "-dr 1" "-dr" ./train_gpt2 -dr 1
expect_error "unknown flag" "unknown flag '-zz'" ./train_gpt2 -zz 3
expect_error "flag without value" "needs a value" ./train_gpt2 -b
expect_error "heads do not divide channels" "not divisible" ./train_gpt2 -nc 30 -nh 4
expect_error "unwritable output directory" "cannot" ./train_gpt2 "${SMALL[@]}" -x 1 -o /proc/no/such/dir
for f in "-b abc" "-zz 3"; do
    ./train_gpt2 $f > /dev/null 2> "$TMP/err"; rc=$?
    if [ $rc -eq 2 ] && grep -q '^usage:' "$TMP/err"; then ok "'$f' prints usage and exits 2"; else bad "'$f' exit $rc"; fi
done

# a loss that becomes NaN/inf: stop, name the step, keep the last good checkpoint intact.
# Three good steps with a checkpoint each, then resume with an absurd learning rate.
./train_gpt2 "${SMALL[@]}" -x 3 -n 1 -o "$TMP/nan" > /dev/null 2>&1
expect_error "loss becomes nan/inf" "at step" ./train_gpt2 "${SMALL[@]}" -x 50 -n 1 -y 1 -l 1e30 -gc 0 -u 0 -o "$TMP/nan"
good=$(ls "$TMP/nan"/model_*.bin 2> /dev/null | tail -n 1)
if [ "$good" == "$TMP/nan/model_00000003.bin" ] && ./train_gpt2 -e "$good" -x 0 -g 0 -m 2 -b 4 -t 32 > "$TMP/nan_eval.log" 2>&1 \
      && grep -qP 'val loss [0-9]' "$TMP/nan_eval.log" && ! ls "$TMP/nan"/*.tmp > /dev/null 2>&1; then
    ok "after the nan the newest checkpoint is the last good one ($good): it loads and evaluates to a finite loss"
else
    bad "last good checkpoint after nan: '$good'"; tail -n 3 "$TMP/nan_eval.log" 2> /dev/null
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
