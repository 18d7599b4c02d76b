#!/usr/bin/env bash
# CI: every flag of train_gpt2, train_seq2seq and data/prepare (as their -h lists them, and
# llm.c's flags that train_gpt2 accepts or refuses) with an empty, a negative, a huge (10^9: in
# an int's range, so it reaches the code rather than the parser) and a nan value, on a tiny model,
# built with AddressSanitizer and UBSan. Each run must end with exit status 0, 1 or 2 and no
# sanitizer report, no crash, and on a refusal one line first ("PROGRAM: error: ..."). A run still
# going after 5 s (-x 10^9 asks for a long run) is sent SIGTERM, and must stop as Ctrl-C stops
# it. An allocation too large for the machine returns NULL (allocator_may_return_null=1, as
# malloc does without ASan), which the program must refuse in one line. About 420 runs;
# OMP_NUM_THREADS=1.
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
"$CC" "${SAN[@]}" -o "$T/train_gpt2" train_gpt2.c -lm & b1=$!
"$CC" "${SAN[@]}" -o "$T/train_seq2seq" train_seq2seq.c -lm
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
pass=0; fail=0

# sweep PROGRAM BASE_ARGS FLAGS: every flag of FLAGS with every value, the other flags from BASE_ARGS
# (a flag under test is left out of them); a run that breaks the rules is printed
sweep() {
    local prog=$1 base=$2 flags=$3 runs=0 bad=0 stopped=0 t1; t1=$(now_ms)
    for flag in $flags; do
        local args=() skip=0 a
        eval "set -- $base"
        for a in "$@"; do  # the base arguments without the flag under test and its value
            if [ $skip -eq 1 ]; then skip=0; continue; fi
            if [ "$a" == "$flag" ]; then skip=1; continue; fi
            args+=("$a")
        done
        for value in "${VALUES[@]}"; do
            rm -rf "$T/o" "$T/hf" "$T/out"*
            (cd "$T" && with_timeout 5 "./$prog" "${args[@]}" "$flag" "$value" > "$T/stdout" 2> "$T/stderr" < /dev/null)
            local rc=$? first; first=$(head -n 1 "$T/stderr")
            runs=$((runs + 1))
            if [ $rc -eq 124 ] && { [ -z "$first" ] || [[ "$first" == *"stopped by signal 15"* ]]; }; then
                stopped=$((stopped + 1))
            elif [ $rc -gt 2 ] || grep -qE 'runtime error|Sanitizer|ERROR: ' "$T/stderr" \
                  || { [ $rc -ne 0 ] && [[ "$first" != "${prog##*/}: "* ]]; }; then
                bad=$((bad + 1))
                echo "  $prog $flag '$value': exit $rc: $(grep -m1 -E 'runtime error|Sanitizer|ERROR' "$T/stderr" || echo "$first")"
            fi
        done
    done
    echo "$prog: $runs runs in $(( ($(now_ms) - t1) / 1000 )) s, $stopped stopped by SIGTERM at 5 s, $bad broke the rules"
    if [ $bad -eq 0 ]; then pass=$((pass + 1)); echo "PASS $prog: every flag with '' -1 1e9 nan"
    else fail=$((fail + 1)); echo "FAIL $prog: $bad of $runs runs"; fi
}
flags_of() { "$T/$1" -h 2>&1 | sed -nE 's/^  (-[a-z0-9]+) .*/\1/p' | tr '\n' ' '; }
GPT_BASE="-nl 1 -nh 2 -nc 16 -b 2 -t 16 -x 1 -v 0 -m 1 -g 4 -n 0 -i tokens.bin -j tokens.bin -o o \
          -tok $PWD/data/tiny_shakespeare_tokenizer.bin"
sweep train_gpt2 "$GPT_BASE" "$(flags_of train_gpt2) -sl -sg -f -w -ge -z -r -lg -pn -pg -pi -pm -ps -pf -pp"
S2S_BASE="-nl 1 -nh 2 -nc 16 -b 4 -x 1 -v 0 -ne 8 -g 1 -n 0 -i $PWD/data/reverse_train.bin \
          -j $PWD/data/reverse_val.bin -tok $PWD/data/reverse_tokenizer.bin -o o"
sweep train_seq2seq "$S2S_BASE" "$(flags_of train_seq2seq)"
sweep prepare "-i text.txt -o out/p" "$(flags_of prepare)"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
