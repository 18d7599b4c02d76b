#!/usr/bin/env bash
# CI: Linux on 64-bit ARM (issue 34), under qemu-user. In a fresh copy of the tracked files (the
# checkout's x86 binaries stay), the Makefile cross-builds test_gpt2, test_seq2seq and train_gpt2
# with $CROSS_CC for $ARM_ARCH (baseline ARMv8-A: AdvSIMD and FMA), with no warning; both test
# programs run under qemu-aarch64 (test_seq2seq without its whole-model finite differences,
# -k '!whole model': the same arithmetic on any CPU, and 15 minutes under qemu, while its
# layers' kernels are test_gpt2's, which runs whole, on the two cores), and train_gpt2
# trains $STEPS steps of the default run, whose losses (loss.tsv) and model file must be the
# host's build's within 1e-6 (below). Left out, for time (about 15 s per step under qemu): the default
# run's 2000 steps and its full validation (-m 1: one batch). Needs gcc-aarch64-linux-gnu,
# libgomp1-arm64-cross, qemu-user. The last line is "N passed, M failed": the checks here plus
# every check of both test programs.
set -u
cd "$(dirname "$0")/.."
source tests/posix.sh  # with_timeout
CROSS_CC=${CROSS_CC:-aarch64-linux-gnu-gcc}
ARM_ARCH=${ARM_ARCH:--march=armv8-a}
STEPS=${STEPS:-10}  # (15 s a step under qemu; 20 gave the bounds' measured errors)
export QEMU_LD_PREFIX=${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}  # the target's loader, libc, libgomp
export TEST_EMULATOR=qemu-aarch64  # test_gpt2 starts itself through it (test_attention_shape_errors)
pass=0; fail=0
ok()  { echo "PASS $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
finish() { rm -rf "$dir"; echo "($SECONDS s)"; echo "$pass passed, $fail failed"; [ $fail -eq 0 ]; exit; }
dir=$(mktemp -d)

for tool in "$CROSS_CC" qemu-aarch64; do
    command -v "$tool" > /dev/null || { bad "$tool is missing (gcc-aarch64-linux-gnu, qemu-user)"; finish; }
done
# the host's data files (the same bytes on any machine) and its train_gpt2, the reference
if ! make data train_gpt2 > "$dir/host.log" 2>&1; then
    bad "the host's make data train_gpt2 fails:"; tail -n 20 "$dir/host.log"; finish
fi

# the cross build: the Makefile's flags, ARCH naming the target (-march=native is the host's)
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$dir"
cp data/*.bin "$dir/data/"
if (cd "$dir" && make -j2 CC="$CROSS_CC" ARCH="$ARM_ARCH" test_gpt2 test_seq2seq train_gpt2) \
    > "$dir/build.log" 2>&1; then
    if grep -qiE "warning|notice" "$dir/build.log"; then  # notice: no OpenMP
        bad "the aarch64 build prints warnings or notices:"
        grep -iE -A3 "warning|notice" "$dir/build.log" | head -n 40
    else
        ok "make CC=$CROSS_CC ARCH=$ARM_ARCH: test_gpt2 test_seq2seq train_gpt2, no warning"
    fi
    # a cross compiler cannot link the host's MPI library: the Makefile's probe says MPI=0
    if grep -q -- '-DUSE_MPI' "$dir/.build-flags"; then bad "the cross build has MPI"
    else ok "the cross build is without MPI"; fi
else
    bad "the aarch64 build fails:"; grep -iE -m 5 "error" "$dir/build.log"; tail -n 10 "$dir/build.log"
    finish
fi

# both test programs, one after the other on both cores; their counts join this script's
run() {
    (cd "$dir" && OMP_NUM_THREADS=2 with_timeout 1800 qemu-aarch64 "./$1" "${@:2}" > "$1.log" 2>&1; echo $? > "$1.rc")
}
run test_seq2seq -k '!whole model'
run test_gpt2
for prog in test_gpt2 test_seq2seq; do
    counts=$(tail -n 1 "$dir/$prog.log")
    if [[ "$counts" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        pass=$((pass + BASH_REMATCH[1])); fail=$((fail + BASH_REMATCH[2]))
        grep '^FAIL' "$dir/$prog.log"
        rc=$(cat "$dir/$prog.rc")
        [ "$rc" = 0 ] || [ "${BASH_REMATCH[2]}" -gt 0 ] || bad "$prog reports no failure but exits $rc"
        echo "$prog under qemu-aarch64: $counts"
    else
        bad "$prog under qemu-aarch64 ends without its counts (exit $(cat "$dir/$prog.rc")):"
        tail -n 5 "$dir/$prog.log"
    fi
done

# the default run's first STEPS steps, on each machine (x86 on its threads, aarch64 on the
# two cores). Every product is the same chain of FMAs on both (fast/gemm.h), but the sums
# the compiler vectorises (omp simd reductions: layernorm's statistics, the gradient norm)
# add in as many partial sums as a vector has lanes, 16 with AVX-512, 8 AVX2, 4 NEON, so
# the weights differ in their last bits (measured, 20 steps: 30% of them, at most 3.1e-7
# apart; AVX2 against AVX-512 alike), and so, a little, do the losses that follow them
# (measured on an Intel Xeon, 20 steps: step 19's 3.59813499 against 3.59813523, 6.7e-8
# relative; on AMD Zen 5 they were equal). Both must agree within 1e-6 (doc/tests.md).
train=(-x "$STEPS" -m 1 -g 0 -o)
./train_gpt2 "${train[@]}" "$dir/x86" > "$dir/x86.log" 2>&1 || bad "the host's train_gpt2 fails"
(cd "$dir" && OMP_NUM_THREADS=2 with_timeout 1800 qemu-aarch64 ./train_gpt2 "${train[@]}" arm > arm.log 2>&1) \
    || { bad "train_gpt2 under qemu-aarch64 fails:"; tail -n 5 "$dir/arm.log"; }
# loss.tsv's rows: step, loss, learning rate; the largest relative difference of the losses
if [ -s "$dir/x86/loss.tsv" ] && [ -s "$dir/arm/loss.tsv" ] \
   && worst=$(paste "$dir/x86/loss.tsv" "$dir/arm/loss.tsv" | awk -v n="$STEPS" '$1 ~ /^[0-9]+$/ {
           if ($1 != $4 || $3 != $6) bad = 1; d = ($2 - $5) / $2; if (d < 0) d = -d; if (d > w) w = d; k++ }
           END { printf "%d steps, the losses at most %.2g apart (relative)", k, w; exit bad || k != n || w > 1e-6 }')
then
    ok "$STEPS steps of the default run: aarch64's losses (loss.tsv) are x86's within 1e-6: $worst"
    grep -E "^step +$STEPS" "$dir/arm.log"
else
    bad "$STEPS steps of the default run: aarch64's losses differ from x86's by more than 1e-6 (${worst:-no loss.tsv}):"
    paste "$dir/x86/loss.tsv" "$dir/arm/loss.tsv" | awk '$2 != $5' | head -n 5
fi
model=$(printf 'model_%08d.bin' "$STEPS")
weights() { od -An -v -f -j 1024 "$1" | tr -s ' ' '\n' | grep -v '^$'; }  # (after the header)
if [ -s "$dir/arm/$model" ] && worst=$(paste <(weights "$dir/x86/$model") <(weights "$dir/arm/$model") \
    | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > w) w = d; n++; if (d > 0) k++ }
           END { if (n == 0) exit 1; printf "%d of %d weights differ, at most %.3g apart", k, n, w; exit w > 1e-6 }')
then ok "$STEPS steps: aarch64's $model within 1e-6 of x86's ($worst)"
else bad "$STEPS steps: aarch64's $model is not within 1e-6 of x86's (${worst:-no model})"; fi
finish
