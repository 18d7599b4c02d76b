#!/usr/bin/env bash
# Differential fuzzing of our GPT-2 encoder against npm tiktoken (the reference; pinned in
# tests/tiktoken_npm.sh): first every code point whose class in util/unicode_tables.h
# (Unicode 16.0, tiktoken's) differs from node's newer Unicode tables, in contexts where the
# class decides the pieces (tests/tiktoken_unicode.js); then $FUZZ_TEXTS (default 50,000)
# random texts of every script, whitespace kind, contraction, emoji and plane
# (tests/tiktoken_fuzz.js), any mismatch minimised and printed with both id sequences; then
# those texts as one file through data/prepare -m bpe (tests/tiktoken_compare.js).
# The seed is printed; FUZZ_SEED=... reproduces a run. Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
source tests/tiktoken_npm.sh  # $scratch, and $modules holding tiktoken
if ! make -s tests/bpe_ids > /dev/null; then
    echo "FAIL tests/bpe_ids does not build"; echo "0 passed, 1 failed"; exit 1
fi
pass=0; fail=0
run() {  # a script's output, its final counts added to ours
    local log=$scratch/log
    NODE_PATH="$modules" node "$@" ./tests/bpe_ids data/gpt2_tokenizer.bin ${FUZZ_ARGS:-} > "$log" 2>&1
    grep -v -E '^[0-9]+ passed, [0-9]+ failed$' "$log"
    local last; last=$(tail -n 1 "$log")
    if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        pass=$((pass + BASH_REMATCH[1])); fail=$((fail + BASH_REMATCH[2]))
    else
        echo "FAIL node $1 did not finish"; fail=$((fail + 1))
    fi
}
run tests/tiktoken_unicode.js
FUZZ_CORPUS=$scratch/fuzz.txt FUZZ_ARGS="${FUZZ_TEXTS:-50000} ${FUZZ_SEED:-}" run tests/tiktoken_fuzz.js
# the same texts as one file through data/prepare (its chunks on every thread) against tiktoken
out=$scratch/out
if ! make -s data/prepare > /dev/null \
        || ! ./data/prepare -i "$scratch/fuzz.txt" -o "$out" -m bpe > "$out.log" 2>&1; then
    echo "FAIL data/prepare -m bpe on the fuzz texts as one file: $(tail -n 1 "$out.log" 2> /dev/null)"
    fail=$((fail + 1))
elif NODE_PATH="$modules" node tests/tiktoken_compare.js "$scratch/fuzz.txt" "${out}_train.bin" \
        "${out}_val.bin" data/gpt2_tokenizer.bin; then  # prints its PASS or FAIL line
    pass=$((pass + 1))
else
    fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
