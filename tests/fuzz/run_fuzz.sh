#!/usr/bin/env bash
# Fuzzes every reader of outside input (tests/fuzz/fuzz_readers.c) for FUZZ_SECONDS each
# (default 60), two at a time, with libFuzzer + AddressSanitizer + UBSan, from the seed
# corpora of make_seeds.py and the dictionary magic.dict. A harness passes when libFuzzer
# ran its time without a crash, a sanitizer report, a timeout or an oversized allocation;
# a finding leaves its input in $FUZZ_OUT (default a temporary folder) and the report in
# the log. Prints executions per reader and a final "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-60}
out=${FUZZ_OUT:-$(mktemp -d)}
all=(checkpoint tokens tokenizer state cli pairs safetensors config)  # READER=1..8 of fuzz_readers.c
read -r -a readers <<< "${FUZZ_READERS:-${all[*]}}"  # FUZZ_READERS="safetensors config": only those
command -v clang > /dev/null || { echo "clang is not installed"; echo "0 passed, 1 failed"; exit 1; }
python3 tests/fuzz/make_seeds.py "$out/seeds" || { echo "0 passed, 1 failed"; exit 1; }

fuzz_one() {  # $1 = reader number 1..8, $2 = its name
    local bin="$out/fuzz_$2" corpus="$out/corpus_$2"
    clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -DREADER="$1" -o "$bin" tests/fuzz/fuzz_readers.c -lm 2> "$out/build_$2.log" || return 1
    mkdir -p "$corpus" "$out/findings_$2"
    cp "$out/seeds/$2/"* "$corpus/"
    ASAN_OPTIONS=detect_leaks=0 "$bin" -close_fd_mask=3 -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=4096 -malloc_limit_mb=2048 -dict=tests/fuzz/magic.dict \
        -artifact_prefix="$out/findings_$2/" "$corpus" > "$out/fuzz_$2.log" 2>&1
}

pass=0; fail=0
for ((i = 0; i < ${#readers[@]}; i += 2)); do
    pids=()
    for j in $i $((i + 1)); do
        [ $j -lt ${#readers[@]} ] || continue
        number=0; for n in "${!all[@]}"; do [ "${all[$n]}" == "${readers[$j]}" ] && number=$((n + 1)); done
        fuzz_one "$number" "${readers[$j]}" & pids+=($!)
    done
    for k in "${!pids[@]}"; do
        name=${readers[$((i + k))]}
        if wait "${pids[$k]}"; then
            stats=$(grep -E '^Done [0-9]+ runs in [0-9]+ second' "$out/fuzz_$name.log" | tail -n 1)
            runs=$(echo "$stats" | awk '{print $2}'); secs=$(echo "$stats" | awk '{print $5}')
            echo "ok   $name: $runs inputs in $secs s ($((runs / (secs > 0 ? secs : 1))) per second), no finding"
            pass=$((pass + 1))
        else
            echo "FAIL $name: see $out/fuzz_$name.log (build log $out/build_$name.log); input in $out/findings_$name/"
            grep -E 'ERROR|SUMMARY|runtime error|error:' "$out/fuzz_$name.log" "$out/build_$name.log" | head -n 5
            fail=$((fail + 1))
        fi
    done
done
# the inputs too large to be seeds (make_seeds.py's safetensors_slow: 200,000 empty tensors), each
# run once by the safetensors harness, which must refuse or accept it within 5 s (-timeout)
if [ -x "$out/fuzz_safetensors" ]; then
    for input in "$out/seeds/safetensors_slow/"*; do
        start=$SECONDS
        if ASAN_OPTIONS=detect_leaks=0 "$out/fuzz_safetensors" -timeout=5 "$input" > "$out/slow.log" 2>&1; then
            echo "ok   safetensors: ${input##*/} read in $((SECONDS - start)) s (at most 5)"; pass=$((pass + 1))
        else
            echo "FAIL safetensors: ${input##*/}: $(grep -m1 -E 'ALARM|ERROR|SUMMARY' "$out/slow.log")"
            fail=$((fail + 1))
        fi
    done
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
