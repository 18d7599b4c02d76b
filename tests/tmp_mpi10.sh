#!/usr/bin/env bash
# Data-parallel training over MPI (util/dist.h), run by CI where Open MPI is installed:
# 2 processes of batch B against one process of batch 2B, identical weights across the
# processes (and a build whose processes diverge is caught), determinism, a killed
# process, a stop signal and resume, resume with another number of processes, bad input
# under mpirun, the buckets overlapped with the backward pass against the blocking sum, and
# ZeRO-1 (-z 1, the default under mpirun: AdamW sharded) against -z 0, bit for bit, with
# resume across process counts, mutants that must be caught, and its bad input; tensor
# parallelism (-tpar 2) against one process: losses, checkpoints and resume, generation,
# mutants, bad input.
# The last line is "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
source tests/posix.sh  # capture, now_ms, with_timeout: GNU's and BSD's tools alike
TMP=tests/tmp/mpi
rm -rf "$TMP"; mkdir -p "$TMP"
pass=0; fail=0
ok()  { echo "PASS $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

if ! command -v mpirun > /dev/null || ! command -v mpicc > /dev/null; then
    echo "Open MPI is not installed (openmpi-bin, libopenmpi-dev)"; echo "0 passed, 1 failed"; exit 1
fi
make -s train_gpt2 MPI=1 || { echo "0 passed, 1 failed"; exit 1; }
# as root (CI), Open MPI wants these two; -q: no banners of its own, only our error lines
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpi() { local n=$1; shift; with_timeout 120 mpirun -q --oversubscribe -np "$n" "$@"; }
SMALL=(-nl 2 -nh 4 -nc 64 -t 32 -g 0 -v 10 -u 5 -dr 0.1)
losses() { capture '^step +([0-9]+/[0-9]+ [|] loss [0-9.]+)' "$1"; }
# the largest relative difference between the losses (training and validation) of two logs
max_rel() {
    paste <(capture 'loss ([0-9.]+)' "$1") <(capture 'loss ([0-9.]+)' "$2") |
        awk 'NF != 2 { bad = 1 } { d = ($1 - $2) / $2; d = d < 0 ? -d : d; if (d > m) m = d }
             END { if (bad || NR == 0) print "mismatch"; else printf "%.2e\n", m }'
}

RUN=("${SMALL[@]}" -b 4 -x 120 -n 20)
mpi 2 ./train_gpt2 "${RUN[@]}" -o "$TMP/full" > "$TMP/full.log" 2>&1
after() { losses "$1" | awk -F/ -v s="$2" '$1 > s'; }
expect_mpi_error() {  # name, expected text, then the mpirun arguments
    local name="$1" want="$2"; shift 2
    with_timeout 120 mpirun -q --oversubscribe "$@" > "$TMP/bad.log" 2> "$TMP/bad.err"; local rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(grep -c 'error' "$TMP/bad.err")" -eq 1 ] && grep -qF -- "$want" "$TMP/bad.err"; then
        ok "mpirun, $name: exit $rc, one line: $(head -n 1 "$TMP/bad.err")"
    else
        bad "mpirun, $name: exit $rc, $(cat "$TMP/bad.err")"
    fi
}
# a sharded resume given the state file of another model: refused by every process before
# training, one line naming the file, and the directory is left as it was
./train_gpt2 "${SMALL[@]}" -nc 32 -b 8 -x 1 -o "$TMP/other_shape" > /dev/null 2>&1
cp -r "$TMP/full" "$TMP/shape"; cp "$TMP/other_shape/state_00000001.bin" "$TMP/shape/state_00000120.bin"
before=$(cksum "$TMP"/shape/*)
expect_mpi_error "-z 1 resuming the state file of another model" "'$TMP/shape/state_00000120.bin' belongs to a model with" \
    -np 2 ./train_gpt2 "${RUN[@]}" -x 140 -z 1 -o "$TMP/shape" -y 1
[ "$before" == "$(cksum "$TMP"/shape/*)" ] && ok "  ... and wrote nothing: $TMP/shape is as it was" \
    || bad "  ... the refused resume changed $TMP/shape"

# ---- 10. tensor parallelism (-tpar 2, util/dist.h, doc/mpi.md): the 2 processes split each
# block's heads and MLP units and compute one model on the same rows, so their losses are one
# process's (B=4 both), to rounding: each branch's projection is a sum of two halves there
within() {  # label, log A, log B, tolerance: the losses of two runs agree to it
    local rel; rel=$(max_rel "$2" "$3")
    if [ "$rel" != mismatch ] && awk -v r="$rel" -v t="$4" 'BEGIN { exit !(r <= t) }'; then
        ok "$1: $(grep -c 'loss' "$2") losses agree to $rel relative (tolerance $4)"
    else
        bad "$1: largest relative difference $rel (tolerance $4)"
    fi
}
# the default model's shape, 20 steps with dropout (its masks follow the whole model's heads),
# and a GQA/RoPE variant; validation on 10 batches at steps 0, 10, 20
DEF=(-g 0 -v 10 -m 10 -u 5 -dr 0.1 -b 4 -x 20)
./train_gpt2 "${DEF[@]}" -o "$TMP/tp_def1" > "$TMP/tp_def1.log" 2>&1
mpi 2 ./train_gpt2 "${DEF[@]}" -tpar 2 -o "$TMP/tp_def2" > "$TMP/tp_def2.log" 2>&1; rc=$?
[ $rc -eq 0 ] || bad "-tpar 2 on the default model: exit $rc, $(tail -n 2 "$TMP/tp_def2.log")"
within "-tpar 2 vs 1 process, default model (L=4 NH=4 C=128, T=64 B=4, 20 steps, dropout 0.1)" \
    "$TMP/tp_def2.log" "$TMP/tp_def1.log" 1e-6
GQA=("${SMALL[@]}" -kv 2 -pe rope -b 4 -x 20)
./train_gpt2 "${GQA[@]}" -o "$TMP/tp_gqa1" > "$TMP/tp_gqa1.log" 2>&1
mpi 2 ./train_gpt2 "${GQA[@]}" -tpar 2 -o "$TMP/tp_gqa2" > "$TMP/tp_gqa2.log" 2>&1
within "-tpar 2 vs 1 process, -kv 2 -pe rope (2 of 4 query heads and 1 of 2 K/V heads each)" \
    "$TMP/tp_gqa2.log" "$TMP/tp_gqa1.log" 1e-6
# the header: each process's share, and the split matrices' memory per process half of one
# process's; the summary line times the all-reduces
split=$(capture 'parameters per process: split matrices ([0-9.]+) MiB' "$TMP/tp_def2.log")
whole=$(capture 'parameters per process: split matrices [0-9.]+ MiB [(]([0-9.]+) MiB on one process' "$TMP/tp_def2.log")
if [ -n "$split" ] && [ -n "$whole" ] && awk -v a="$split" -v b="$whole" 'BEGIN { exit !(a > 0 && a * 2 - b < 0.02 && b - a * 2 < 0.02) }' \
      && grep -q 'tensor parallelism: -tpar 2, process 0 of 2 holds heads 0-1 of 4' "$TMP/tp_def2.log" \
      && grep -qE 'tensor-parallel all-reduces [0-9.]+ ms/step' "$TMP/tp_def2.log"; then
    ok "-tpar 2: the header says the share and the memory ($(grep '^parameters per process' "$TMP/tp_def2.log")); $(grep -oE 'tensor-parallel all-reduces [^,]+' "$TMP/tp_def2.log")"
else
    bad "-tpar 2: the header's memory ('$split' of '$whole' MiB) or the summary's all-reduce time is missing"
fi
# the checkpoints hold the whole model (process 0 puts the shares together): the -tpar run's
# file has the one-process file's size and weights to rounding; it resumes on 1 process, and a
# one-process checkpoint resumes with -tpar 2 (the losses of the uninterrupted run, to rounding)
TPR=("${SMALL[@]}" -b 4 -x 40 -n 20)
./train_gpt2 "${TPR[@]}" -o "$TMP/tp_full" > "$TMP/tp_full.log" 2>&1
mpi 2 ./train_gpt2 "${TPR[@]}" -tpar 2 -o "$TMP/tp_run" > "$TMP/tp_run.log" 2>&1
for way in "tp_to_one:tp_run:" "one_to_tp:tp_full:-tpar 2"; do
    name=${way%%:*}; from=${way#*:}; from=${from%%:*}; flag=${way##*:}
    cp -r "$TMP/$from" "$TMP/$name"; rm -f "$TMP/$name"/*_00000040.bin
    if [ -n "$flag" ]; then mpi 2 ./train_gpt2 "${TPR[@]}" $flag -o "$TMP/$name" -y 1 > "$TMP/$name.log" 2>&1
    else ./train_gpt2 "${TPR[@]}" -o "$TMP/$name" -y 1 > "$TMP/$name.log" 2>&1; fi
    if grep -q 'resuming from .* at step 20' "$TMP/$name.log" && [ "$(after "$TMP/$name.log" 20 | wc -l)" -eq 20 ]; then
        after "$TMP/$name.log" 20 > "$TMP/$name.after"; after "$TMP/tp_full.log" 20 > "$TMP/tp_full.after"
        within "resume ${name//_/ } at step 20 (-tpar 2's checkpoints hold the whole model)" \
            "$TMP/$name.after" "$TMP/tp_full.after" 1e-5
    else
        bad "resume ${name//_/ }: $(tail -n 2 "$TMP/$name.log")"
    fi
done
if [ "$(file_size "$TMP/tp_run/model_00000040.bin")" -eq "$(file_size "$TMP/tp_full/model_00000040.bin")" ] \
      && [ "$(file_size "$TMP/tp_run/state_00000040.bin")" -eq "$(file_size "$TMP/tp_full/state_00000040.bin")" ]; then
    ok "-tpar 2 writes the whole model and moments: the files of one process's size"
else
    bad "-tpar 2's checkpoint files differ in size from one process's"
fi
# generation: every process feeds each token through its heads (its KV cache holds only them)
# and the projections are summed; the same text as one process, greedy and sampled
GEN=(-nl 2 -nh 4 -nc 64 -t 32 -v 0 -u 20 -kv 2 -pe rope -g 0 -j "" -b 8 -l 3e-3 -x 400)
./train_gpt2 "${GEN[@]}" -o "$TMP/tp_gen" > /dev/null 2>&1
for temp in 0 1; do
    SAY=(-e "$TMP/tp_gen/model_00000400.bin" -x 0 -g 300 -tp $temp -pr "ROMEO:")
    ./train_gpt2 "${SAY[@]}" 2>&1 | sed -n '/^ROMEO:/,$p' > "$TMP/tp_say1_$temp.txt"
    mpi 2 ./train_gpt2 "${SAY[@]}" -tpar 2 2>&1 | sed -n '/^ROMEO:/,$p' > "$TMP/tp_say2_$temp.txt"
    if [ "$(wc -c < "$TMP/tp_say1_$temp.txt")" -gt 300 ] && cmp -s "$TMP/tp_say1_$temp.txt" "$TMP/tp_say2_$temp.txt"; then
        ok "-tpar 2 generates one process's 300 tokens (-tp $temp, GQA/RoPE, KV caches of 1 of 2 K/V heads): $(head -c 40 "$TMP/tp_say2_$temp.txt" | tr '\n' ' ')..."
    else
        bad "-tpar 2's generation (-tp $temp) differs from one process's: $(cmp "$TMP/tp_say1_$temp.txt" "$TMP/tp_say2_$temp.txt" 2>&1)"
    fi
done

# mutants: a build without the forward all-reduce of the attention's projection (each process
# goes on with its heads' share alone), and one without the backward all-reduce of the MLP's
# input gradient: the losses must leave the tolerance
tp_mutant() {  # name, sed expression on train_gpt2.c (the program, train_gpt2_main.c, includes it)
    local name=$1 dir="$TMP/tp_mutant"
    rm -rf "$dir"; mkdir -p "$dir/util"
    cp -r train_gpt2.c train_gpt2_main.c fast "$dir/"; cp util/*.h "$dir/util/"
    sed "$2" train_gpt2.c > "$dir/train_gpt2.c"
    if cmp -s train_gpt2.c "$dir/train_gpt2.c" || ! OMPI_CC=${CC:-cc} mpicc -DUSE_MPI -O2 -fopenmp \
          -o "$dir/train_gpt2" "$dir/train_gpt2_main.c" -lm 2> "$dir/build.log"; then
        bad "-tpar mutant ($name): no mutant built: $(head -3 "$dir/build.log" 2> /dev/null)"; return
    fi
    mpi 2 "$dir/train_gpt2" "${GQA[@]}" -tpar 2 -o "" > "$dir/run.log" 2>&1
    local rel; rel=$(max_rel "$dir/run.log" "$TMP/tp_gqa1.log")
    if [ "$rel" != mismatch ] && awk -v r="$rel" 'BEGIN { exit !(r <= 1e-6) }'; then
        bad "-tpar mutant ($name): not caught, its losses agree to $rel"
    else ok "-tpar mutant ($name): caught, its losses differ by $rel relative"; fi
}
tp_mutant "the attention projection's all-reduce left out" \
    's|^    dist_tp_sum(a.attproj, (size_t)BT \* C);.*||'
tp_mutant "the MLP's input gradient not summed" 's|^    dist_tp_sum(s->dln, BTC);.*||'

# bad input: -tpar 2 on one process (run directly, or mpirun -np 1), -tpar that is not the
# number of processes, that does not divide the heads or the key/value heads, with -z 1: one
# line naming -tpar, a non-zero exit from every process, and nothing written
TPB=("${SMALL[@]}" -x 5 -o "$TMP/tp_bad")
./train_gpt2 "${TPB[@]}" -tpar 2 > /dev/null 2> "$TMP/tp_one.err"; rc=$?
if [ $rc -eq 2 ] && [ "$(grep -c 'error' "$TMP/tp_one.err")" -eq 1 ] && grep -q 'error: -tpar N splits' "$TMP/tp_one.err"; then
    ok "-tpar 2 without mpirun: exit 2, one line: $(head -n 1 "$TMP/tp_one.err")"
else
    bad "-tpar 2 without mpirun: exit $rc, $(cat "$TMP/tp_one.err")"
fi
expect_mpi_error "-tpar 2 on one process" "-tpar N splits each layer's heads" -np 1 ./train_gpt2 "${TPB[@]}" -tpar 2
expect_mpi_error "-tpar 3 on 2 processes" "-tpar 3 must be the number of processes (mpirun -np 2)" \
    -np 2 ./train_gpt2 "${TPB[@]}" -tpar 3
expect_mpi_error "-tpar 3 with 4 heads" "-tpar 3 must divide the heads (4)" -np 3 ./train_gpt2 "${TPB[@]}" -tpar 3
expect_mpi_error "-tpar 2 with 1 key/value head" "-tpar 2 must divide the heads (4), the key/value heads (1)" \
    -np 2 ./train_gpt2 "${TPB[@]}" -kv 1 -tpar 2
expect_mpi_error "-tpar 2 -z 1" "-z 1 with -tpar" -np 2 ./train_gpt2 "${TPB[@]}" -tpar 2 -z 1
expect_mpi_error "-tpar 0" "-tpar (tensor-parallel processes) must be >= 1" -np 2 ./train_gpt2 "${TPB[@]}" -tpar 0
[ ! -e "$TMP/tp_bad" ] && ok "  ... and none of them wrote anything ($TMP/tp_bad does not exist)" \
    || bad "  ... a refused -tpar run wrote $TMP/tp_bad"

echo "$pass passed, $fail failed"
