#!/usr/bin/env bash
# CI (.ci/run): a new user's first hour, from a fresh clone. Clones this repository's HEAD
# into a temporary directory, runs the README's first command exactly as the README writes it
# (`make && ./train_gpt2`, read from the README's first code block so the two cannot drift),
# then the cases of tests/newcomer_tests.sh (usage errors, -h and the README's table, default
# paths from another directory, data/prepare -v 0, messages) and a Ctrl-C. Every exit code is
# checked; no message written (stdout or stderr of any command) may carry a source location
# (`file.c:123`), and every SVG written must be well-formed XML. Last line: "N passed, M failed".
# NEWCOMER_QUICK=1 appends `-x 20` to the training command (a quick local check, not CI's).
set -u
repo=$(cd "$(dirname "$0")/.." && git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0; fail=0
ok()  { echo "PASS $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
expect_usage() {  # expect_usage NAME EXPECTED_TEXT COMMAND...: exit 2, the first line names the flag
    local name="$1" want="$2"; shift 2
    "$@" > /dev/null 2> "$TMP/err"; local rc=$?
    local line; line=$(head -n 1 "$TMP/err")
    if [ $rc -eq 2 ] && [[ "$line" == "train_gpt2: error: "*"$want"* ]]; then ok "$name -> exit 2: $line"
    else bad "$name -> exit $rc: $line"; fi
}

# ---- a fresh clone, and the README's first command as written
if ! git clone -q "$repo" "$work/llm"; then echo "git clone failed"; echo "0 passed, 1 failed"; exit 1; fi
cd "$work/llm"
source tests/posix.sh  # capture, file_size: GNU's and BSD's tools alike
TMP="$work/logs"; mkdir -p "$TMP"
cmd=$(awk '/^```/ { n++; next } n == 1 { print; exit }' README.md | sed 's/ *#.*//')
[ "${NEWCOMER_QUICK:-0}" == 1 ] && cmd="$cmd -x 20"
echo "README's first command: $cmd"
start=$(date +%s)
bash -c "$cmd" > "$TMP/first.log" 2> "$TMP/first.err"; rc=$?
took=$(( $(date +%s) - start ))
if [ $rc -eq 0 ] && grep -qE '^done: [0-9]+ steps, .*final val loss [0-9.]+, checkpoint out/model_[0-9]+\.bin$' "$TMP/first.log"; then
    ok "'$cmd' in a fresh clone: exit 0 in $took s: $(grep '^done:' "$TMP/first.log" | cut -c1-100)"
else
    bad "'$cmd' in a fresh clone: exit $rc: $(tail -n 3 "$TMP/first.err" "$TMP/first.log")"
fi
if grep -qi 'warning' "$TMP/first.err" "$TMP/first.log"; then
    bad "the fresh build printed warnings: $(grep -i -m 2 'warning' "$TMP/first.err" "$TMP/first.log")"
else
    ok "the fresh build printed no warning"
fi
# issue 39: the first command builds what ./train_gpt2 needs and nothing else (the other
# programs cost the first run half a minute of compiling); they build when asked
left=$(for f in test_gpt2 train_seq2seq test_seq2seq data/make_pairs data/reverse_train.bin; do
           [ -e "$f" ] && printf '%s ' "$f"; done)
[ -z "$left" ] && [ -x train_gpt2 ] && [ -x data/prepare ] \
    && ok "the first make builds train_gpt2 and data/prepare and prepares Tiny Shakespeare, nothing more" \
    || bad "the first make built more than ./train_gpt2 needs: $left"
if make seq2seq test_gpt2 > "$TMP/more.log" 2>&1 && ! grep -qi 'warning' "$TMP/more.log" \
        && [ -x train_seq2seq ] && [ -x test_gpt2 ] && [ -s data/reverse_train.bin ]; then
    ok "make seq2seq test_gpt2 (the README's commands for the sequel and the tests): built, no warning"
else
    bad "make seq2seq test_gpt2: $(tail -n 3 "$TMP/more.log")"
fi
# item 5: the README's other compiler keeps the machine's instructions and OpenMP
if command -v clang > /dev/null; then
    line=$(unset MAKEFLAGS MFLAGS MAKELEVEL ARCH CFLAGS  # the Makefile's defaults, whatever called us
           make -n -B CC=clang CFLAGS=-O2 train_gpt2 2> /dev/null | grep -m 1 ' train_gpt2_main\.c')
    if [[ " $line " == *" -march=native "* && " $line " == *" -O2 "* && " $line " == *"-fopenmp"* ]]; then
        ok "make CC=clang CFLAGS=-O2 keeps -march=native and OpenMP"
    else bad "make CC=clang CFLAGS=-O2: $line"; fi
fi
# item 1: the pictures with GPT-2's BPE splitting Chinese and emoji, and a run directory
# with XML's special characters (checked as XML with every other SVG at the end)
./train_gpt2 -tok data/gpt2_tokenizer.bin -pr "世界 🎉" -am "$TMP/cjk.svg" > "$TMP/cjk.log" 2>&1
[ $? -eq 0 ] && [ -s "$TMP/cjk.svg" ] && ok "-am with a Chinese and emoji BPE prompt writes its map" \
    || bad "-am with a Chinese and emoji BPE prompt: $(tail -n 1 "$TMP/cjk.log")"
mkdir -p "$TMP/runs"
./train_gpt2 -nl 1 -nh 2 -nc 16 -b 2 -t 16 -v 0 -g 0 -x 2 -o "$TMP/runs/a&b<c" > "$TMP/odd.log" 2>&1
[ $? -eq 0 ] && [ -s "$TMP/runs/a&b<c/loss.svg" ] && ok "-o 'runs/a&b<c' writes its loss.svg" \
    || bad "-o 'runs/a&b<c': $(tail -n 1 "$TMP/odd.log")"

# ---- the cases of make test's section "a newcomer's first hour", here in the clone
source tests/newcomer_tests.sh

# ---- Ctrl-C during training: the stop the user asked for is said as such, not as an error
./train_gpt2 -nl 1 -nh 2 -nc 16 -b 2 -t 16 -v 0 -g 0 -x 100000 -o "$TMP/int" > "$TMP/int.log" 2> "$TMP/int.err" &
pid=$!
for ((try = 0; try < 600; try++)); do [ "$(grep -c '^step' "$TMP/int.log" 2> /dev/null)" -ge 3 ] && break; sleep 0.05; done
kill -INT $pid; wait $pid; rc=$?
if [ $rc -eq 1 ] && grep -qE '^train_gpt2: stopped by signal 2 after [0-9]+ steps; saved .* [(]resume with -y 1[)]$' "$TMP/int.err" \
      && ! grep -q 'error' "$TMP/int.err"; then
    ok "Ctrl-C: exit 1, one line without 'error': $(cat "$TMP/int.err")"
else
    bad "Ctrl-C: exit $rc: $(cat "$TMP/int.err")"
fi

# ---- every message: no source location; every SVG: well-formed XML
located=$(grep -rlE '\.[ch]:[0-9]' "$TMP" --exclude='*.bin' --exclude='*.svg' --exclude='*.tsv' --exclude='*.txt')
if [ -z "$located" ]; then ok "no message of any command above names a source file and line"
else bad "source locations in: $(echo "$located" | tr '\n' ' ') ($(grep -hE '\.[ch]:[0-9]' $located | head -n 1))"; fi
svgs=$(find "$work/llm/out" "$TMP" -name '*.svg' | sort)  # written by the commands above
if [ -z "$svgs" ]; then
    bad "no SVG was written (out/loss.svg and -am's are expected)"
elif [ -f tests/xml_wellformed.py ]; then
    if out=$(python3 tests/xml_wellformed.py $svgs 2>&1); then ok "$(echo "$svgs" | wc -l) SVG files are well-formed XML"
    else bad "an SVG is not well-formed XML: $out"; fi
else
    if out=$(python3 -c 'import sys, xml.dom.minidom
for f in sys.argv[1:]:
    try: xml.dom.minidom.parse(f)
    except Exception as e: print(f, e); sys.exit(1)' $svgs 2>&1); then
        ok "$(echo "$svgs" | wc -l) SVG files are well-formed XML: $(echo "$svgs" | sed "s|$work/llm/||" | tr '\n' ' ')"
    else bad "an SVG is not well-formed XML: $out"; fi
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
