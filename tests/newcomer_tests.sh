# make test (sourced by tests/run_tests.sh): what a new user meets in the first hour (issue 26,
# items 2, 3, 4 and 6): a usage error's line stays on screen, -h fits 80 columns and is doc/usage.md's
# table, default paths are found from any directory, data/prepare -v 0, and messages that say
# the program's own name, no source locations, and singular or plural as the number asks.
echo "-- a newcomer's first hour"
ROOT=$(pwd)
NC="$TMP/newcomer"; rm -rf "$NC"; mkdir -p "$NC/elsewhere" "$NC/copy"

# ---- usage errors: the line, then one line saying where the flags are; exit 2
for prog in train_gpt2 train_seq2seq data/prepare; do
    ./$prog -zz 3 > /dev/null 2> "$NC/err"; rc=$?
    name=${prog#data/}
    if [ $rc -eq 2 ] && [ "$(wc -l < "$NC/err")" -eq 2 ] && [ "$(head -n 1 "$NC/err")" == "$name: error: unknown flag '-zz'" ] \
          && [ "$(tail -n 1 "$NC/err")" == "$name: run with -h for the flags" ]; then
        ok "$prog -zz 3: exit 2, its line and 'run with -h for the flags', nothing more (no usage to scroll it away)"
    else
        bad "$prog -zz 3: exit $rc, $(wc -l < "$NC/err") lines: $(head -n 3 "$NC/err")"
    fi
    ./$prog -h > "$NC/help" 2>&1; rc=$?
    widest=$(awk '{ if (length > m) m = length } END { print m + 0 }' "$NC/help")
    if [ $rc -eq 0 ] && [ "$widest" -le 80 ] && [ "$widest" -gt 40 ] && ! grep -qE 'default ""|default -1([^[:alnum:]_]|$)' "$NC/help"; then
        ok "$prog -h: $(wc -l < "$NC/help") lines, the widest $widest columns; no default shown as \"\" or -1"
    else
        bad "$prog -h: exit $rc, widest line $widest: $(grep -E 'default ""|default -1([^[:alnum:]_]|$)' "$NC/help" | head -n 2)"
    fi
done
# doc/usage.md's table of the flags is ./train_gpt2 -h md, the same table as -h
./train_gpt2 -h md > "$NC/flags.md"
perl -ne 'print if /^<!-- flags:/ .. /^<!-- end of flags -->/ and !/^<!--/' doc/usage.md > "$NC/readme_flags.md"
if [ -s "$NC/readme_flags.md" ] && diff "$NC/flags.md" "$NC/readme_flags.md" > "$NC/flags.diff"; then
    ok "doc/usage.md's table of flags is ./train_gpt2 -h md's output ($(grep -c '^| `-' "$NC/flags.md") flags, util/cli.h's FLAGS)"
else
    bad "doc/usage.md's table of flags differs from ./train_gpt2 -h md (make readme-flags rewrites it): $(head -n 4 "$NC/flags.diff")"
fi
flags_h=$(./train_gpt2 -h | capture '^  (-[a-z0-9]+)' | tr '\n' ' ')
flags_md=$(capture '^[|] `(-[a-z0-9]+)' "$NC/flags.md" | tr '\n' ' ')
if [ -n "$flags_h" ] && [ "$flags_h" == "$flags_md" ]; then ok "-h and -h md list the same flags in the same order"
else bad "-h lists '$flags_h', -h md '$flags_md'"; fi

# ---- default paths: found beside the program when not in the working directory
(cd "$NC/elsewhere" && "$ROOT/train_gpt2" -nl 1 -nh 2 -nc 16 -b 2 -t 16 -x 1 -v 0 -m 1 -g 0 -o "") > "$NC/elsewhere.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "^data: $ROOT/data/tiny_shakespeare_train.bin" "$NC/elsewhere.log"; then
    ok "train_gpt2 run from another directory finds its default data and tokenizer beside the program"
else
    bad "train_gpt2 from another directory: exit $rc: $(tail -n 2 "$NC/elsewhere.log")"
fi
cp train_gpt2 "$NC/copy/"  # a program with no data beside it, run where there is none either
(cd "$NC/copy" && ./train_gpt2 -x 1) > /dev/null 2> "$NC/err"; rc=$?
if [ $rc -eq 1 ] && grep -q "^train_gpt2: error: -tok: the default 'data/tiny_shakespeare_tokenizer.bin' is not here nor beside the program (run make, which prepares it, or set -tok)$" "$NC/err"; then
    ok "no default data anywhere: one line naming the flag to set: $(cat "$NC/err")"
else
    bad "no default data anywhere: exit $rc: $(cat "$NC/err")"
fi
(cd "$NC/copy" && ./train_gpt2 -e "$ROOT/data/ref/ref_a_model.bin" -x 0 -g 5) > "$NC/ids.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "^note: no tokenizer at 'data/tiny_shakespeare_tokenizer.bin' (here or beside the program): tokens are printed as ids; name one with -tok$" "$NC/ids.log"; then
    ok "-e MODEL -g 5 with no tokenizer found: a note says why token ids are printed, and names -tok"
else
    bad "-e MODEL -g 5 without a tokenizer: exit $rc: $(head -n 3 "$NC/ids.log")"
fi
printf 'Hello, world! Hello again.\n' > "$NC/elsewhere/hello.txt"
(cd "$NC/elsewhere" && "$ROOT/data/prepare" -i hello.txt -m bpe -v 0.2) > "$NC/bpe.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && [ -f "$NC/elsewhere/hello_train.bin" ]; then
    ok "data/prepare -m bpe run from another directory finds data/gpt2_tokenizer.bin in its repository"
else
    bad "data/prepare -m bpe from another directory: exit $rc: $(tail -n 2 "$NC/bpe.log")"
fi

# ---- data/prepare -v 0: every token for training, no validation file (an older one removed)
printf 'To be, or not to be: that is the question.\n' > "$NC/all.txt"
: > "$NC/all_val.bin"
./data/prepare -i "$NC/all.txt" -v 0 > "$NC/v0.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && [ ! -e "$NC/all_val.bin" ] && [ "$(file_size "$NC/all_train.bin")" -eq $((1024 + 2 * 43)) ] \
      && grep -q 'train with -j "" (no validation)' "$NC/v0.log" \
      && ./train_gpt2 -i "$NC/all_train.bin" -tok "$NC/all_tokenizer.bin" -j "" -nl 1 -nh 2 -nc 16 -b 2 -t 8 -x 2 -g 0 -o "" > /dev/null 2>&1; then
    ok "data/prepare -v 0: all 43 tokens in all_train.bin, the old all_val.bin removed, the note says -j \"\", and train_gpt2 -j \"\" trains on it"
else
    bad "data/prepare -v 0: exit $rc: $(cat "$NC/v0.log")"
fi

# ---- messages: the program's own name, no source locations, a stop is not an error
./test_gpt2 -e "$NC/nope.bin" -s "$NC/nope_state.bin" > /dev/null 2> "$NC/err"; rc=$?
if [ $rc -eq 1 ] && grep -q "^test_gpt2: error: cannot open '$NC/nope.bin'" "$NC/err"; then ok "test_gpt2's errors name test_gpt2: $(cat "$NC/err")"
else bad "test_gpt2's error: exit $rc: $(cat "$NC/err")"; fi
located=""
for args in "-e $NC/nope.bin" "-tok $NC/nope.bin" "-i $NC/nope.bin" "-e /tmp" "-o $NC/help/x -x 1" "-b 0" "-zz 1"; do
    ./train_gpt2 $args > "$NC/out" 2>&1
    grep -qE '\.[ch]:[0-9]' "$NC/out" && located="$located [$args: $(grep -E '\.[ch]:[0-9]' "$NC/out" | head -n 1)]"
done
if [ -z "$located" ]; then ok "no message about the user's files or flags carries a source location ([file.h:line])"
else bad "source locations in user-facing messages:$located"; fi

# ---- singular and plural
./train_gpt2 -nl 1 -nh 2 -nc 16 -b 2 -t 16 -kv 1 -x 1 -v 0 -m 1 -g 0 -o "" > "$NC/kv1.log" 2>&1
./train_gpt2 -e data/ref/ref_a_model.bin -x 0 -g 0 -pr "R" -am "$NC/one.svg" > "$NC/am1.log" 2>&1
if grep -q '^block: 1 key/value head, ' "$NC/kv1.log" && grep -q '^training: B=2 T=16, 1 step, ' "$NC/kv1.log" \
      && grep -q '^attention maps of 1 prompt token: ' "$NC/am1.log"; then
    ok "one of a thing is singular: '1 key/value head', '1 step', '1 prompt token'"
else
    bad "singular: $(grep -hE '^(block|training|attention maps)' "$NC/kv1.log" "$NC/am1.log")"
fi

# ---- flags that would be ignored are refused in one line
expect_usage "-am without -pr" "-am draws the attention maps of a prompt: give one with -pr" \
    ./train_gpt2 -e data/ref/ref_a_model.bin -x 0 -am "$NC/x.svg"
[ -e "$NC/x.svg" ] && bad "-am without -pr wrote $NC/x.svg"
for shape in "-nl 8:has L=2" "-nh 4:has NH=2" "-nc 64:has C=32" "-mt 32:has maxT=16"; do
    expect_usage "${shape%%:*} with -e (a model of another shape)" "${shape%%:*}: the model in 'data/ref/ref_a_model.bin' ${shape#*:}" \
        ./train_gpt2 -e data/ref/ref_a_model.bin ${shape%%:*} -t 16 -x 0 -g 0
done
if ./train_gpt2 -e data/ref/ref_a_model.bin -nl 2 -nh 2 -nc 32 -x 0 -g 0 -t 16 -m 1 > /dev/null 2>&1; then
    ok "-nl -nh -nc that agree with the checkpoint are accepted (the command that started a run resumes it)"
else
    bad "-nl 2 -nh 2 -nc 32 with the checkpoint of that shape was refused"
fi
# -x raised on resume: one line says how the schedule changes (an unchanged -x resumes bit for bit: 5a)
R=(-nl 1 -nh 2 -nc 16 -b 2 -t 16 -v 0 -g 0 -j "" -u 2 -o "$NC/rx")
./train_gpt2 "${R[@]}" -x 10 -n 5 > /dev/null 2>&1
rm -f "$NC"/rx/*_00000010.bin
./train_gpt2 "${R[@]}" -x 20 -y 1 > "$NC/rx.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -qE '^note: -x 20, the run was started with -x 10: the learning-rate schedule now ends at step 20 [(]at step 5 the learning rate is [0-9.e+-]+, not [0-9.e+-]+[)]$' "$NC/rx.log"; then
    ok "-y 1 with a larger -x says how the learning-rate schedule changes: $(grep '^note: -x' "$NC/rx.log" | cut -c1-90)..."
else
    bad "-y 1 with a larger -x: exit $rc, no note: $(head -n 3 "$NC/rx.log")"
fi
