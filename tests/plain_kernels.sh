#!/usr/bin/env bash
# -kernels plain runs what a reader reads (CI; about a minute): the default model trained for
# 20 steps with the story's plain loops gives the fast kernels' losses within 1e-5 relative, and
# a copy of train_gpt2.c whose matmul_forward_plain doubles its sums (a planted factor 2)
# changes the plain run's losses and leaves the fast run's bit for bit.
# Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
source tests/posix.sh  # capture
pass=0; fail=0
ok()  { echo "PASS $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
make -s train_gpt2 data/tiny_shakespeare_train.bin > /dev/null || { echo "0 passed, 1 failed"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# the 20 losses of the default model: program, kernels
losses() {
    "$1" -x 20 -v 0 -m 1 -g 0 -o "" -kernels "$2" 2>&1 | capture '^step +[0-9]+/20 [|] loss ([0-9.]+)'
}
losses ./train_gpt2 fast > "$TMP/fast.txt"
losses ./train_gpt2 plain > "$TMP/plain.txt"
worst=$(paste "$TMP/fast.txt" "$TMP/plain.txt" | awk '{ d = ($1 - $2) / $1; d = d < 0 ? -d : d; if (d > w) w = d }
    END { printf "%.1e", w }')
if [ "$(wc -l < "$TMP/plain.txt")" -eq 20 ] && awk -v w="$worst" 'BEGIN { exit !(w <= 1e-5) }'; then
    ok "-kernels plain: the default model's 20 losses equal -kernels fast's within 1e-5 (worst $worst relative)"
else
    bad "-kernels plain: the 20 losses differ from fast's by $worst: $(paste "$TMP/fast.txt" "$TMP/plain.txt" | tr '\n' ';')"
fi

# the planted factor 2: the plain run must see it, the fast run must not
mkdir -p "$TMP/mutant"
cp -r train_gpt2.c train_gpt2.h train_gpt2_parallel.c train_gpt2_main.c fast util "$TMP/mutant/"
sed 's|^            out\[(size_t)bt \* OC + o\] = sum;|            out[(size_t)bt * OC + o] = 2 * sum;|' train_gpt2.c > "$TMP/mutant/train_gpt2.c"
if cmp -s train_gpt2.c "$TMP/mutant/train_gpt2.c" || ! ${CC:-cc} -O2 ${ARCH--march=native} -fopenmp -std=c11 \
      -o "$TMP/mutant/train_gpt2" "$TMP/mutant/train_gpt2_main.c" -lm 2> "$TMP/build.log"; then
    bad "no mutant with a factor 2 in matmul_forward_plain was built: $(head -3 "$TMP/build.log")"
else
    losses "$TMP/mutant/train_gpt2" plain > "$TMP/m_plain.txt"
    losses "$TMP/mutant/train_gpt2" fast > "$TMP/m_fast.txt"
    if ! cmp -s "$TMP/m_plain.txt" "$TMP/plain.txt"; then
        ok "a factor 2 planted in matmul_forward_plain changes the plain run (step 1: loss $(head -n 1 "$TMP/m_plain.txt") against $(head -n 1 "$TMP/plain.txt"))"
    else
        bad "a factor 2 planted in matmul_forward_plain leaves the plain run's losses as they were"
    fi
    if cmp -s "$TMP/m_fast.txt" "$TMP/fast.txt"; then
        ok "... and leaves the fast run's 20 losses bit for bit (the fast kernels do not call it)"
    else
        bad "a factor 2 planted in matmul_forward_plain changes the fast run too"
    fi
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
