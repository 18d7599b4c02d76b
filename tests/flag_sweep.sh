#!/usr/bin/env bash
# CI: every flag of train_gpt2, train_seq2seq and data/prepare (as their -h lists them, and
# llm.c's flags that train_gpt2 accepts or refuses) with an empty, a negative, a huge (10^9: in
# an int's range, so it reaches the code rather than the parser) and a nan value, on a tiny model,
# built with AddressSanitizer and UBSan. Each run must end with exit status 0, 1 or 2 and no
# sanitizer report, no crash, and on a refusal one line first ("PROGRAM: error: ..."). A run still
# going after 5 s (-x 10^9 asks for a long run) is sent SIGTERM, and must stop as Ctrl-C stops
# it. An allocation too large for the machine returns NULL (allocator_may_return_null=1, as
# malloc does without ASan), which the program must refuse in one line. About 420 runs, the
# programs' sweeps side by side; OMP_NUM_THREADS=1.
# The last line is "N passed, M failed" (one check per program).
set -u
cd "$(dirname "$0")/.."
source tests/posix.sh  # with_timeout, now_ms
export OMP_NUM_THREADS=1 UBSAN_OPTIONS=print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1
make data/tiny_shakespeare_train.bin data/reverse_train.bin > /dev/null 2>&1
T=$(mktemp -d "${TMPDIR:-/tmp}/flag_sweep.XXXXXX")
trap 'rm -rf "$T"' EXIT
CC=${CC:-cc}
SAN=(-O1 -g -std=c11 -fopenmp -fsanitize=address,undefined -fno-omit-frame-pointer
     -fno-sanitize-recover=undefined)
t0=$(now_ms)
"$CC" "${SAN[@]}" -o "$T/train_gpt2" train_gpt2_main.c -lm & b1=$!
"$CC" "${SAN[@]}" -o "$T/train_seq2seq" train_seq2seq_main.c -lm
"$CC" "${SAN[@]}" -o "$T/prepare" data/prepare.c -lm
wait $b1
if [ ! -x "$T/train_gpt2" ] || [ ! -x "$T/train_seq2seq" ] || [ ! -x "$T/prepare" ]; then
    echo "the sanitizer builds failed"; echo "0 passed, 1 failed"; exit 1
fi
echo "built with -fsanitize=address,undefined in $(( ($(now_ms) - t0) / 1000 )) s"
perl -e 'open(my $f, "<:raw", shift) or die; read($f, my $h, 1024); seek($f, 1024, 0); read($f, my $d, 4000);
         open(my $g, ">:raw", shift) or die; print $g pack("l<l<l<", 20240520, 1, 2000), "\0" x 1012, $d' \
    data/tiny_shakespeare_val.bin "$T/tokens.bin"
head -n 200 data/tiny_shakespeare.txt > "$T/text.txt"
VALUES=("" -1 1000000000 nan)

# sweep PROGRAM BASE_ARGS FLAGS: every flag of FLAGS with every value, the other flags from BASE_ARGS
# (a flag under test is left out of them), in its own folder $T/PROGRAM.d; a run that breaks the
# rules is printed, and the last line is PASS or FAIL
sweep() {
    local prog=$1 base=$2 flags=$3 runs=0 bad=0 stopped=0 t1 W="$T/$1.d"; t1=$(now_ms)
    mkdir -p "$W" && cp "$T/tokens.bin" "$T/text.txt" "$W/"
    for flag in $flags; do
        local args=() skip=0 a
        eval "set -- $base"
        for a in "$@"; do  # the base arguments without the flag under test and its value
            if [ $skip -eq 1 ]; then skip=0; continue; fi
            if [ "$a" == "$flag" ]; then skip=1; continue; fi
            args+=("$a")
        done
        for value in "${VALUES[@]}"; do
            rm -rf "$W/o" "$W/out"*
            (cd "$W" && with_timeout 5 "../$prog" "${args[@]}" "$flag" "$value" \
                 > "$W/stdout" 2> "$W/stderr" < /dev/null)
            local rc=$? first; first=$(head -n 1 "$W/stderr")
            runs=$((runs + 1))
            if [ $rc -eq 124 ] && { [ -z "$first" ] || [[ "$first" == *"stopped by signal 15"* ]]; }; then
                stopped=$((stopped + 1))
            elif [ $rc -gt 2 ] || grep -qE 'runtime error|Sanitizer|ERROR: ' "$W/stderr" \
                  || { [ $rc -ne 0 ] && [[ "$first" != "${prog##*/}: "* ]]; }; then
                bad=$((bad + 1))
                local why; why=$(grep -m1 -E 'runtime error|Sanitizer|ERROR' "$W/stderr" || echo "$first")
                echo "  $prog $flag '$value': exit $rc: $why"
            fi
        done
    done
    echo "$prog: $runs runs in $(( ($(now_ms) - t1) / 1000 )) s, $stopped stopped by SIGTERM at 5 s," \
         "$bad broke the rules"
    if [ $bad -eq 0 ]; then echo "PASS $prog: every flag with '' -1 1e9 nan"
    else echo "FAIL $prog: $bad of $runs runs"; fi
}
flags_of() { "$T/$1" -h 2>&1 | sed -nE 's/^  (-[a-z0-9]+) .*/\1/p' | tr '\n' ' '; }
GPT_BASE="-nl 1 -nh 2 -nc 16 -b 2 -t 16 -x 1 -v 0 -m 1 -g 4 -n 0 -i tokens.bin -j tokens.bin -o o \
          -tok $PWD/data/tiny_shakespeare_tokenizer.bin"
S2S_BASE="-nl 1 -nh 2 -nc 16 -b 4 -x 1 -v 0 -ne 8 -g 1 -n 0 -i $PWD/data/reverse_train.bin \
          -j $PWD/data/reverse_val.bin -tok $PWD/data/reverse_tokenizer.bin -o o"
# the programs side by side (one thread each): train_gpt2's runs, and the others'
# llm.c's flags, accepted at llm.c's values or refused
LLMC_FLAGS="-sl -sg -f -w -ge -z -r -lg -pn -pg -pi -pm -ps -pf -pp"
sweep train_gpt2 "$GPT_BASE" "$(flags_of train_gpt2) $LLMC_FLAGS" > "$T/gpt2.log" 2>&1 &
gpt2=$!
{ sweep train_seq2seq "$S2S_BASE" "$(flags_of train_seq2seq)"
  sweep prepare "-i text.txt -o out/p" "$(flags_of prepare)"; } > "$T/others.log" 2>&1
wait $gpt2
cat "$T/gpt2.log" "$T/others.log"
pass=$(grep -c '^PASS' "$T/gpt2.log" "$T/others.log" | awk -F: '{ n += $2 } END { print n }')
fail=$(grep -c '^FAIL' "$T/gpt2.log" "$T/others.log" | awk -F: '{ n += $2 } END { print n }')
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
