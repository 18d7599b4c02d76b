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
make -s train_gpt2 train_gpt2_mpi MPI=1 || { echo "0 passed, 1 failed"; exit 1; }
# as root (CI), Open MPI wants these two; -q: no banners of its own, only our error lines
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
mpi() { local n=$1; shift; with_timeout 120 mpirun -q --oversubscribe -np "$n" "$@"; }
SMALL=(-nl 2 -nh 4 -nc 64 -t 32 -g 0 -v 10 -u 5 -dr 0.1)
# the sources train_gpt2_main.c builds from, copied into the folder $1 (a mutant's)
copy_sources() {
    mkdir -p "$1/util"
    cp -r train_gpt2.c train_gpt2.h train_gpt2_parallel.c train_gpt2_main.c fast "$1/"; cp util/*.h "$1/util/"
}
losses() { capture '^step +([0-9]+/[0-9]+ [|] loss [0-9.]+)' "$1"; }
# the largest relative difference between the losses (training and validation) of two logs
max_rel() {
    paste <(capture 'loss ([0-9.]+)' "$1") <(capture 'loss ([0-9.]+)' "$2") |
        awk 'NF != 2 { bad = 1 } { d = ($1 - $2) / $2; d = d < 0 ? -d : d; if (d > m) m = d }
             END { if (bad || NR == 0) print "mismatch"; else printf "%.2e\n", m }'
}

# ---- 1. N = 2 processes of B = 4 against one process of B = 8: the same global batch,
# shuffled, with dropout (each process draws the masks of its own rows of the global batch)
mpi 2 ./train_gpt2_mpi "${SMALL[@]}" -b 4 -x 30 -o "$TMP/two" > "$TMP/two.log" 2>&1; rc2=$?
./train_gpt2 "${SMALL[@]}" -b 8 -x 30 -o "$TMP/one" > "$TMP/one.log" 2>&1; rc1=$?
rel=$(max_rel "$TMP/two.log" "$TMP/one.log")
n=$(grep -c 'loss' "$TMP/two.log")
if [ $rc2 -eq 0 ] && [ $rc1 -eq 0 ] && [ "$rel" != mismatch ] && awk -v r="$rel" 'BEGIN { exit !(r <= 1e-6) }'; then
    ok "2 processes x B=4 vs 1 process x B=8: $n losses (30 steps, 4 validations, dropout 0.1) agree to $rel relative (printed to 6 decimals; tolerance 1e-6)"
else
    bad "2 x B=4 vs 1 x B=8: exit $rc2/$rc1, largest relative difference $rel"
fi
wdiff=$(cmp -l "$TMP/two/model_00000030.bin" "$TMP/one/model_00000030.bin" 2> /dev/null | wc -l)
ok_files=$(ls "$TMP/two" | tr '\n' ' ')
if [ "$ok_files" == "loss.svg loss.tsv model_00000030.bin state_00000030.bin " ]; then
    ok "2 processes: process 0 alone wrote the checkpoint, state and loss curve ($ok_files); $wdiff of its bytes differ from the one-process run's (rounding of the averaged gradients)"
else
    bad "2 processes wrote: $ok_files"
fi
one_machine='each B=4: a global batch of 8 rows; on one machine: at most 2 MiB of gradients in flight'
if grep -q "$one_machine" "$TMP/two.log" \
      && grep -qE '(all-reduce|reduce-scatter) [0-9.]+ ms/step' "$TMP/two.log" \
      && [ "$(grep -c '^step' "$TMP/two.log")" -eq "$(grep -c '^step' "$TMP/one.log")" ]; then
    ok "2 processes: one process prints (one line per step), says the global batch and the gradients' sum's time: $(grep -oE '(all-reduce|reduce-scatter) [^,]+' "$TMP/two.log")"
else
    bad "2 processes: the output is not one process's"
fi

# ---- 2. determinism: the same N, flags and threads give the same losses, bit for bit
mpi 2 ./train_gpt2_mpi "${SMALL[@]}" -b 4 -x 30 -o "" > "$TMP/two_again.log" 2>&1
if [ -n "$(losses "$TMP/two.log")" ] && [ "$(losses "$TMP/two.log")" == "$(losses "$TMP/two_again.log")" ]; then
    ok "2 processes, run twice: the same losses bit for bit"
else
    bad "2 processes, run twice: the losses differ"
fi

# ---- 3. the weights stay identical across the processes: checked at every validation (-v 10);
# a build in which process 1 scales its averaged gradients by 1.001 must be stopped by that check
# (-z 0: with -z 1 each shard's new weights come from its owner, so they agree by construction)
copy_sources "$TMP/diverge"
sed 's|float scale = 1.0f / dist.size;|float scale = (dist.rank ? 1.001f : 1.0f) / dist.size;|' util/dist.h \
    > "$TMP/diverge/util/dist.h"
if grep -q '1.001f' "$TMP/diverge/util/dist.h" && OMPI_CC=${CC:-cc} mpicc -DUSE_MPI -O2 -fopenmp -o "$TMP/diverge/train_gpt2" \
      "$TMP/diverge/train_gpt2_main.c" -lm 2> "$TMP/diverge/build.log"; then
    mpi 2 "$TMP/diverge/train_gpt2" "${SMALL[@]}" -b 4 -x 30 -z 0 -o "" > "$TMP/diverge.log" 2> "$TMP/diverge.err"; rc=$?
    if [ $rc -ne 0 ] && grep -q 'the weights of the 2 processes differ at step 10' "$TMP/diverge.err" \
          && [ "$(wc -l < "$TMP/diverge.err")" -eq 1 ]; then
        ok "weights compared across processes at each validation: a diverging build stops at step 10 with one line ($(cut -c1-90 "$TMP/diverge.err")...)"
    else
        bad "a diverging build was not caught: exit $rc, $(cat "$TMP/diverge.err")"
    fi
else
    bad "could not build the diverging copy: $(head -3 "$TMP/diverge/build.log")"
fi

# ---- 4. a process killed mid-run ends the job (no hang), with an error, and leaves the last
# checkpoint whole; resuming from it on 2 processes reproduces the uninterrupted losses bit for bit
RUN=("${SMALL[@]}" -b 4 -x 120 -n 20)
mpi 2 ./train_gpt2_mpi "${RUN[@]}" -o "$TMP/full" > "$TMP/full.log" 2>&1
mpi 2 ./train_gpt2_mpi "${RUN[@]}" -o "$TMP/part" > "$TMP/part.log" 2>&1 &
job=$!
for ((try = 0; try < 2000; try++)); do [ -f "$TMP/part/state_00000040.bin" ] && break; sleep 0.01; done
victim=$(pgrep -f "^\./train_gpt2_mpi .*-o $TMP/part" | tail -n 1)  # a process, not mpirun
kill -KILL "$victim" 2> /dev/null
t0=$(now_ms); wait $job; rc=$?; secs=$(awk -v a="$t0" -v b="$(now_ms)" 'BEGIN { print (b - a) / 1000 }')
last=$(ls "$TMP/part"/model_*.bin 2> /dev/null | tail -n 1)
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ -n "$last" ] && ./train_gpt2 -e "$last" -x 0 -g 0 -b 4 -t 32 > /dev/null 2>&1; then
    ok "a process killed with SIGKILL: the job ended in $(printf %.1f "$secs") s with exit $rc, the last checkpoint $(basename "$last") loads"
else
    bad "killed process: exit $rc (124 = hung), last checkpoint '$last'"
fi
step=$(basename "$last" .bin); step=$((10#${step##*_}))
for f in "$TMP"/part/*.bin; do  # what the run wrote after the checkpoint kept, as if it had died there
    s=$(basename "$f" .bin); [ $((10#${s##*_})) -gt $step ] && rm -f "$f"
done
mpi 2 ./train_gpt2_mpi "${RUN[@]}" -o "$TMP/part" -y 1 > "$TMP/resumed.log" 2>&1
after() { losses "$1" | awk -F/ -v s="$2" '$1 > s'; }
if [ "$(after "$TMP/resumed.log" $step | wc -l)" -eq $((120 - step)) ] && [ "$(after "$TMP/resumed.log" $step)" == "$(after "$TMP/full.log" $step)" ]; then
    ok "resumed on 2 processes from step $step: the $((120 - step)) remaining losses equal the uninterrupted run's, bit for bit"
else
    bad "resume on 2 processes from step $step does not reproduce the losses"
fi

# ---- 5. SIGTERM to one process (or to mpirun, which passes it on): every process finishes the
# step, they agree to stop, process 0 writes the checkpoint, the job exits 1; resume continues
for target in process mpirun; do
    rm -rf "$TMP/sig"
    mpi 2 ./train_gpt2_mpi "${RUN[@]}" -n 0 -o "$TMP/sig" > "$TMP/sig.log" 2> "$TMP/sig.err" &
    job=$!
    for ((try = 0; try < 2000; try++)); do [ "$(grep -c '^step' "$TMP/sig.log" 2> /dev/null)" -ge 30 ] && break; sleep 0.01; done
    if [ $target == process ]; then pid=$(pgrep -f "^\./train_gpt2_mpi .*-o $TMP/sig" | tail -n 1)
    else pid=$(pgrep -f "^mpirun .*-o $TMP/sig"); fi
    kill -TERM $pid
    wait $job; rc=$?
    at=$(capture 'stopped by signal 15 after ([0-9]+) steps; saved' "$TMP/sig.err")
    mpi 2 ./train_gpt2_mpi "${RUN[@]}" -n 0 -o "$TMP/sig" -y 1 > "$TMP/sig_resumed.log" 2>&1
    # (the one line is ours; Open MPI's libevent may add "[warn] Epoll MOD(1) on fd N failed ..."
    # as mpirun passes the signal on, a known race of its shutdown: open-mpi/ompi#2004, #5520)
    if [ $rc -eq 1 ] && [[ "$at" =~ ^[0-9]+$ ]] && [ "$(grep -cv '^\[warn\] Epoll ' "$TMP/sig.err")" -eq 1 ] \
          && [ "$(after "$TMP/sig_resumed.log" "$at" | wc -l)" -eq $((120 - at)) ] \
          && [ "$(after "$TMP/sig_resumed.log" "$at")" == "$(after "$TMP/full.log" "$at")" ]; then
        ok "SIGTERM to $target: stopped together after step $at, one line ($(cut -c1-70 "$TMP/sig.err")...), exit 1; resumed, the losses equal the uninterrupted run's"
    else
        bad "SIGTERM to $target: exit $rc, stopped at '$at': $(cat "$TMP/sig.err")"
    fi
done

# ---- 6. resume with another number of processes: the state records the global batch, so
# 1 process of B=8 continues a run of 2 x B=4 (same data order; the losses agree to rounding);
# 1 process of B=4 (another global batch) is refused, naming -b
cp -r "$TMP/full" "$TMP/other_n"
rm -f "$TMP"/other_n/*_000001[0-2]0.bin
./train_gpt2 "${SMALL[@]}" -b 8 -x 120 -n 20 -o "$TMP/other_n" -y 1 > "$TMP/other_n.log" 2>&1; rc=$?
rel=$(max_rel <(after "$TMP/other_n.log" 80) <(after "$TMP/full.log" 80))
if [ $rc -eq 0 ] && grep -q 'resuming from .* at step 80' "$TMP/other_n.log" && [ "$rel" != mismatch ] \
      && awk -v r="$rel" 'BEGIN { exit !(r <= 1e-5) }'; then
    ok "a 2 x B=4 run resumed by 1 process of B=8 at step 80: the 40 losses agree to $rel relative"
else
    bad "resume of 2 x B=4 by 1 x B=8: exit $rc, difference $rel"
fi
./train_gpt2 "${SMALL[@]}" -b 4 -x 120 -n 20 -o "$TMP/other_n" -y 1 > /dev/null 2> "$TMP/other_b.err"; rc=$?
if [ $rc -eq 1 ] && grep -q 'belongs to another run (-b differs)' "$TMP/other_b.err"; then
    ok "the same run resumed with another global batch (1 x B=4) is refused: $(cut -c1-80 "$TMP/other_b.err")..."
else
    bad "another global batch on resume: exit $rc, $(cat "$TMP/other_b.err")"
fi

# ---- 7. bad input under mpirun: one line, from process 0, non-zero exit
expect_mpi_error() {  # name, expected text, then the mpirun arguments
    local name="$1" want="$2"; shift 2
    with_timeout 120 mpirun -q --oversubscribe "$@" > "$TMP/bad.log" 2> "$TMP/bad.err"; local rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(grep -c 'error' "$TMP/bad.err")" -eq 1 ] && grep -qF -- "$want" "$TMP/bad.err"; then
        ok "mpirun, $name: exit $rc, one line: $(head -n 1 "$TMP/bad.err")"
    else
        bad "mpirun, $name: exit $rc, $(cat "$TMP/bad.err")"
    fi
}
mkdir -p "$TMP/elsewhere"  # process 1 runs there, where the same relative -i is missing
expect_mpi_error "process 1 cannot open its training file" \
    "process 1 of 2: -i 'data/tiny_shakespeare_train.bin': No such file" \
    -np 1 ./train_gpt2_mpi "${SMALL[@]}" -x 5 -o "" -i data/tiny_shakespeare_train.bin \
    : -np 1 -wdir "$TMP/elsewhere" "$PWD/train_gpt2_mpi" "${SMALL[@]}" -x 5 -o "" -i data/tiny_shakespeare_train.bin
expect_mpi_error "a global batch larger than the data" "fewer than one batch of B*T+1 = 1280001 (-b times the processes, -t)" \
    -np 2 ./train_gpt2_mpi "${SMALL[@]}" -b 20000 -x 5 -o ""
head -c 3000 data/tiny_shakespeare_val.bin > "$TMP/short.bin"
expect_mpi_error "a truncated validation file" "'$TMP/short.bin' is truncated" \
    -np 2 ./train_gpt2_mpi "${SMALL[@]}" -b 4 -x 5 -o "" -j "$TMP/short.bin"
expect_mpi_error "a nonsense flag (-kv 3 with 4 heads)" "-kv 3 must divide" -np 2 ./train_gpt2_mpi "${SMALL[@]}" -kv 3
touch "$TMP/a_file"
expect_mpi_error "-o naming a file" "$TMP/a_file" -np 2 ./train_gpt2_mpi "${SMALL[@]}" -b 4 -x 5 -o "$TMP/a_file"
# the one-process program under mpirun would train a model per process into the same files
expect_mpi_error "train_gpt2 (no MPI) under mpirun" "run train_gpt2_mpi (make mpi) under mpirun" \
    -np 2 ./train_gpt2 "${SMALL[@]}" -b 4 -x 5 -o "$TMP/no_mpi"

# ---- 8. buckets (util/dist.h): the gradients summed in buckets while the backward pass runs
# give the same bits on 2 processes as the blocking sum after it (DIST_BLOCKING=1, the code
# before buckets), with and without accumulation (-d: only the last micro-batch reduces), and
# as the binary before buckets when BASE_BIN names one (e.g. /work/base/train_gpt2)
BK=("${SMALL[@]}" -b 4 -x 20 -n 20)
same_run() {  # name, dir A, dir B: the same losses and the same checkpoint, bit for bit
    if [ -n "$(losses "$2.log")" ] && [ "$(losses "$2.log")" == "$(losses "$3.log")" ] \
          && cmp -s "$2/model_00000020.bin" "$3/model_00000020.bin"; then
        ok "$1: the same $(losses "$2.log" | wc -l) losses and the same checkpoint, bit for bit"
    else
        bad "$1: the losses or the checkpoint differ ($(cmp "$2/model_00000020.bin" "$3/model_00000020.bin" 2>&1 | head -c 120))"
    fi
}
# buckets against the blocking sum, without and with -d (2 micro-batches): label, prefix of the
# runs' names in $TMP (<prefix>bk0, <prefix>bl512, ...), train_gpt2's flags
buckets_vs_blocking() {
    local label=$1 prefix=$2 accum; shift 2
    for accum in 0 512; do
        local extra=() name=$label bk="$TMP/${prefix}bk$accum" bl="$TMP/${prefix}bl$accum"
        [ $accum -gt 0 ] && { extra=(-d $accum); name="$label, -d $accum (2 micro-batches)"; }
        # (${extra[@]+...}: bash before 4.4 calls an empty array unset under set -u)
        mpi 2 ./train_gpt2_mpi "$@" ${extra[@]+"${extra[@]}"} -o "$bk" > "$bk.log" 2>&1
        mpi 2 -x DIST_BLOCKING=1 ./train_gpt2_mpi "$@" ${extra[@]+"${extra[@]}"} -o "$bl" > "$bl.log" 2>&1
        same_run "$name, buckets vs the blocking reduction" "$bk" "$bl"
    done
}
buckets_vs_blocking "2 processes" "" "${BK[@]}"
# GPT-2's vocabulary: of wte's 50,304 rows the 2 x 128 tokens read at most 256, the others
# are final after the output head and go early (util/dist.h, "wte's rows, early"); the batch's
# rows are put back before the embedding's backward and summed at the end. The same bits as
# the blocking sum (it fails if the rows are not put back: the head's sum would be added twice)
./data/prepare -i data/tiny_shakespeare.txt -o "$TMP/ts_bpe" -m bpe -tok data/gpt2_tokenizer.bin \
    > /dev/null 2>&1
BPE=(-nl 2 -nh 4 -nc 64 -t 32 -g 0 -j "" -u 5 -dr 0.1 -tok data/gpt2_tokenizer.bin -i "$TMP/ts_bpe_train.bin"
     -b 4 -x 20 -n 20)
buckets_vs_blocking "2 processes, GPT-2's vocabulary (wte early)" bpe_ "${BPE[@]}"
if [ -n "${BASE_BIN:-}" ]; then
    mpi 2 "$BASE_BIN" "${BK[@]}" -o "$TMP/base" > "$TMP/base.log" 2>&1
    same_run "2 processes, buckets vs $BASE_BIN" "$TMP/bk0" "$TMP/base"
fi
split='reduce-scatter [0-9.]+ ms/step exposed \([0-9.]+%\) \+ [0-9.]+ ms/step hidden behind the backward pass \(buckets of [0-9]+ KiB\)'
if grep -qE "$split" "$TMP/bk0.log" && grep -qE 'all-reduce [0-9.]+ ms/step exposed .*blocking [(]DIST_BLOCKING=1[)]' "$TMP/bl0.log"; then
    ok "the summary splits the gradients' sum (-z 1: a reduce-scatter): $(grep -oE "$split" "$TMP/bk0.log")"
else
    bad "the summary does not split the gradients' sum: $(grep '^done' "$TMP/bk0.log")"
fi
# 3 processes (oversubscribed): buckets against the blocking path; the weights stay the same
# on all three (checked at each validation); the sums of 3 numbers may round differently
# when Open MPI picks another algorithm for the buckets' smaller messages
mpi 3 ./train_gpt2_mpi "${BK[@]}" -o "$TMP/bk3" > "$TMP/bk3.log" 2>&1; rc3=$?
mpi 3 -x DIST_BLOCKING=1 ./train_gpt2_mpi "${BK[@]}" -o "$TMP/bl3" > "$TMP/bl3.log" 2>&1
rel=$(max_rel "$TMP/bk3.log" "$TMP/bl3.log")
if [ $rc3 -eq 0 ] && [ "$rel" != mismatch ] && awk -v r="$rel" 'BEGIN { exit !(r <= 1e-6) }'; then
    ok "3 processes: buckets vs blocking, losses agree to $rel relative, $(cmp -l "$TMP/bk3/model_00000020.bin" "$TMP/bl3/model_00000020.bin" 2> /dev/null | wc -l) checkpoint bytes differ"
else
    bad "3 processes: exit $rc3, largest relative difference $rel"
fi

# ---- 9. ZeRO-1 (-z 1, util/dist.h): each process reduces, updates and keeps the moments of
# its shard of the parameters, then the weights are gathered. On 2 processes the same bits as
# -z 0: the losses and norms of every step, the model and the state file (the whole moments,
# gathered to process 0). The -z 1 runs are those of section 8 (-z 1 is the default there).
steps() { capture '^step +([0-9]+/[0-9]+ [|] loss [0-9.]+ [|] lr [^|]+[|] norm [0-9.]+)' "$1"; }
same_bits() {  # dir A, dir B: the same step lines and checkpoint files, bit for bit
    [ -n "$(steps "$1.log")" ] && [ "$(steps "$1.log")" == "$(steps "$2.log")" ] \
        && cmp -s "$1/model_00000020.bin" "$2/model_00000020.bin" && cmp -s "$1/state_00000020.bin" "$2/state_00000020.bin"
}
zero_vs_unsharded() {  # label, the -z 1 run's dir, then train_gpt2's flags: a -z 0 run beside it
    local label=$1 z1=$2; shift 2
    mpi 2 ./train_gpt2_mpi "$@" -z 0 -o "${z1}_z0" > "${z1}_z0.log" 2>&1
    if grep -q 'optimizer: .* (-z 1' "$z1.log" && same_bits "$z1" "${z1}_z0"; then
        ok "ZeRO-1 vs -z 0, $label: the same $(steps "$z1.log" | wc -l) losses and norms, model and state files, bit for bit"
    else
        bad "ZeRO-1 vs -z 0, $label: the steps or files differ ($(cmp "$z1/state_00000020.bin" "${z1}_z0/state_00000020.bin" 2>&1 | head -c 120))"
    fi
}
zero_vs_unsharded "2 processes" "$TMP/bk0" "${BK[@]}"
zero_vs_unsharded "2 processes, -d 512 (2 micro-batches)" "$TMP/bk512" "${BK[@]}" -d 512
zero_vs_unsharded "2 processes, GPT-2's vocabulary (wte early)" "$TMP/bpe_bk0" "${BPE[@]}"
mpi 2 ./train_gpt2_mpi "${BK[@]}" -prec bf16 -o "$TMP/zbf16" > "$TMP/zbf16.log" 2>&1
zero_vs_unsharded "2 processes, -prec bf16 (the other shard's bf16 copy)" "$TMP/zbf16" "${BK[@]}" -prec bf16
# -zg 1: the gather overlapped with the next forward pass, layer by layer (the embedding's rows
# of wte first, packed): the same bits as -z 0, also where wte straddles the shards (GPT-2's
# vocabulary) and with the bf16 copy rounded piece by piece
zg_vs_unsharded() {  # label, the -z 0 run's dir (above), then train_gpt2's flags
    local label=$1 z0=$2 dir="$TMP/zg_$(basename "$2")"; shift 2
    mpi 2 ./train_gpt2_mpi "$@" -z 1 -zg 1 -o "$dir" > "$dir.log" 2>&1
    if grep -q 'all-gather .* exposed (waited for by the forward pass, -zg 1)' "$dir.log" && same_bits "$dir" "$z0"; then
        ok "ZeRO-1 -zg 1 vs -z 0, $label: the same $(steps "$dir.log" | wc -l) losses and norms, model and state files, bit for bit"
    else
        bad "ZeRO-1 -zg 1 vs -z 0, $label: the steps or files differ ($(tail -n 1 "$dir.log" | head -c 160))"
    fi
}
zg_vs_unsharded "2 processes" "$TMP/bk0_z0" "${BK[@]}"
zg_vs_unsharded "2 processes, -d 512" "$TMP/bk512_z0" "${BK[@]}" -d 512
zg_vs_unsharded "2 processes, GPT-2's vocabulary (wte's rows straddle the shards)" "$TMP/bpe_bk0_z0" "${BPE[@]}"
zg_vs_unsharded "2 processes, -prec bf16" "$TMP/zbf16_z0" "${BK[@]}" -prec bf16
# the header says the optimizer's memory per process: -z 1 about half of -z 0's on 2 processes
mib() { capture "optimizer: AdamW's moments ([0-9.]+) MiB per process" "$1"; }
z1=$(mib "$TMP/bpe_bk0.log"); z0=$(mib "$TMP/bpe_bk0_z0.log")
if [ -n "$z1" ] && [ -n "$z0" ] && awk -v a="$z1" -v b="$z0" 'BEGIN { exit !(a > 0 && a <= b / 2 + 0.1) }'; then
    ok "the header says AdamW's state per process: $z1 MiB with -z 1, $z0 MiB with -z 0 (2 processes)"
else
    bad "AdamW's state per process: '$z1' MiB with -z 1, '$z0' MiB with -z 0"
fi

# resume across process counts, from state files that hold the whole moments: 1 process of
# B=8 continues a -z 1 run of 2 x B=4 in section 6; here 2 processes (-z 1) continue a run of
# 1 x B=8 (the losses agree to rounding), and -z 0 continues -z 1 on 2 processes, bit for bit
./train_gpt2 "${SMALL[@]}" -b 8 -x 120 -n 20 -o "$TMP/one_full" > "$TMP/one_full.log" 2>&1
cp -r "$TMP/one_full" "$TMP/one_to_two"; rm -f "$TMP"/one_to_two/*_000001[0-2]0.bin
mpi 2 ./train_gpt2_mpi "${RUN[@]}" -z 1 -o "$TMP/one_to_two" -y 1 > "$TMP/one_to_two.log" 2>&1; rc=$?
rel=$(max_rel <(after "$TMP/one_to_two.log" 80) <(after "$TMP/one_full.log" 80))
if [ $rc -eq 0 ] && grep -q 'resuming from .* at step 80' "$TMP/one_to_two.log" && [ "$rel" != mismatch ] \
      && awk -v r="$rel" 'BEGIN { exit !(r <= 1e-5) }'; then
    ok "a 1 x B=8 run resumed by 2 processes of B=4 with -z 1 at step 80: the 40 losses agree to $rel relative"
else
    bad "resume of 1 x B=8 by 2 x B=4 -z 1: exit $rc, difference $rel"
fi
cp -r "$TMP/full" "$TMP/z1_to_z0"; rm -f "$TMP"/z1_to_z0/*_000001[0-2]0.bin
mpi 2 ./train_gpt2_mpi "${RUN[@]}" -z 0 -o "$TMP/z1_to_z0" -y 1 > "$TMP/z1_to_z0.log" 2>&1
if [ "$(after "$TMP/z1_to_z0.log" 80 | wc -l)" -eq 40 ] && [ "$(after "$TMP/z1_to_z0.log" 80)" == "$(after "$TMP/full.log" 80)" ]; then
    ok "a -z 1 run resumed with -z 0 on 2 processes at step 80: the 40 losses equal the uninterrupted run's, bit for bit"
else
    bad "a -z 1 run resumed with -z 0 does not reproduce the losses"
fi

# mutants: a build in which process 1 skips its shard's update, one in which each process
# clips by its own shard's norm (the chunk sums not gathered), and two of the gather overlapped
# with the forward pass (util/dist.h): the head's group (the final layernorm and all of wte)
# never sent, and the owner of wte's rows not copying its own into the embedding's packed
# copy. The bits check must fail on each
zero_mutant() {  # name, the file mutated (train_gpt2_parallel.c or util/dist.h), sed expression on it, flags
    local name=$1 file=$2 dir="$TMP/mutant"  # (the program, train_gpt2_main.c, includes both)
    rm -rf "$dir"; copy_sources "$dir"
    sed "$3" "$file" > "$dir/$file"
    if cmp -s "$file" "$dir/$file" || ! OMPI_CC=${CC:-cc} mpicc -DUSE_MPI -O2 -fopenmp \
          -o "$dir/train_gpt2" "$dir/train_gpt2_main.c" -lm 2> "$dir/build.log"; then
        bad "ZeRO-1 mutant ($name): no mutant built: $(head -3 "$dir/build.log" 2> /dev/null)"; return
    fi
    mpi 2 "$dir/train_gpt2" "${BK[@]}" -z 1 "${@:4}" -o "$dir/run" > "$dir/run.log" 2>&1
    if same_bits "$dir/run" "$TMP/bk0_z0"; then bad "ZeRO-1 mutant ($name): not caught, the same bits as -z 0"
    else ok "ZeRO-1 mutant ($name): caught, its steps or files differ from -z 0's"; fi
}
zero_mutant "process 1 skips its shard's AdamW" train_gpt2_parallel.c \
    's|^    adamw_update(model->params_memory + lo,|    if (dist.rank != 1) adamw_update(model->params_memory + lo,|'
zero_mutant "each process clips by its shard's norm" train_gpt2_parallel.c \
    's|^    double partial\[SQUARES_CHUNKS\], total|    double partial[SQUARES_CHUNKS] = {0}, total|;s|^    dist_gather_chunks(partial);||'
zero_mutant "the gather leaves out the head's group" util/dist.h \
    's|^        if (k >= q->layered\[1\] [|][|] (k == 0 \&\& rows)) dist_queue(|        if (0) dist_queue(|' -zg 1
zero_mutant "wte's owner does not copy its rows for the embedding" util/dist.h \
    's|^                memcpy(q->packed + to\[b\], q->params + at\[b\],|                if (0) memcpy(q->packed + to[b], q->params + at[b],|' -zg 1

# bad input: -z 1 on one process (train_gpt2, which names train_gpt2_mpi; or mpirun -np 1), a
# stage that is not 0 or 1, a value that is not a number: one line naming -z, exit 2, from
# every process one line
./train_gpt2 "${SMALL[@]}" -z 1 -x 5 -o "" > /dev/null 2> "$TMP/z_one.err"; rc=$?
if [ $rc -eq 2 ] && [ "$(grep -c 'error' "$TMP/z_one.err")" -eq 1 ] && grep -q 'error: -z 1 shards.*train_gpt2_mpi' "$TMP/z_one.err"; then
    ok "-z 1 in train_gpt2: exit 2, one line: $(head -n 1 "$TMP/z_one.err")"
else
    bad "-z 1 in train_gpt2: exit $rc, $(cat "$TMP/z_one.err")"
fi
expect_mpi_error "-z 1 on one process" "-z 1 shards AdamW's state over the processes" \
    -np 1 ./train_gpt2_mpi "${SMALL[@]}" -z 1 -x 5 -o ""
expect_mpi_error "-zg 1 with -z 0" "-zg 1 overlaps -z 1's gather" -np 2 ./train_gpt2_mpi "${SMALL[@]}" -z 0 -zg 1 -x 5 -o ""
expect_mpi_error "-zg 2" "-zg must be 0 or 1" -np 2 ./train_gpt2_mpi "${SMALL[@]}" -zg 2 -x 5 -o ""
expect_mpi_error "-z 2" "-z (ZeRO stage) must be 0 or 1" -np 2 ./train_gpt2_mpi "${SMALL[@]}" -z 2 -x 5 -o ""
expect_mpi_error "-z one" "flag -z expects an integer, got 'one'" -np 2 ./train_gpt2_mpi "${SMALL[@]}" -z one -x 5 -o ""
# a sharded resume given the state file of another model: refused by every process before
# training, one line naming the file, and the directory is left as it was
./train_gpt2 "${SMALL[@]}" -nc 32 -b 8 -x 1 -o "$TMP/other_shape" > /dev/null 2>&1
cp -r "$TMP/full" "$TMP/shape"; cp "$TMP/other_shape/state_00000001.bin" "$TMP/shape/state_00000120.bin"
before=$(cksum "$TMP"/shape/*)
expect_mpi_error "-z 1 resuming the state file of another model" "'$TMP/shape/state_00000120.bin' belongs to a model with" \
    -np 2 ./train_gpt2_mpi "${RUN[@]}" -x 140 -z 1 -o "$TMP/shape" -y 1
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
mpi 2 ./train_gpt2_mpi "${DEF[@]}" -tpar 2 -o "$TMP/tp_def2" > "$TMP/tp_def2.log" 2>&1; rc=$?
[ $rc -eq 0 ] || bad "-tpar 2 on the default model: exit $rc, $(tail -n 2 "$TMP/tp_def2.log")"
within "-tpar 2 vs 1 process, default model (L=4 NH=4 C=128, T=64 B=4, 20 steps, dropout 0.1)" \
    "$TMP/tp_def2.log" "$TMP/tp_def1.log" 1e-6
GQA=("${SMALL[@]}" -kv 2 -pe rope -b 4 -x 20)
./train_gpt2 "${GQA[@]}" -o "$TMP/tp_gqa1" > "$TMP/tp_gqa1.log" 2>&1
mpi 2 ./train_gpt2_mpi "${GQA[@]}" -tpar 2 -o "$TMP/tp_gqa2" > "$TMP/tp_gqa2.log" 2>&1
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
mpi 2 ./train_gpt2_mpi "${TPR[@]}" -tpar 2 -o "$TMP/tp_run" > "$TMP/tp_run.log" 2>&1
for way in "tp_to_one:tp_run:" "one_to_tp:tp_full:-tpar 2"; do
    name=${way%%:*}; from=${way#*:}; from=${from%%:*}; flag=${way##*:}
    cp -r "$TMP/$from" "$TMP/$name"; rm -f "$TMP/$name"/*_00000040.bin
    if [ -n "$flag" ]; then mpi 2 ./train_gpt2_mpi "${TPR[@]}" $flag -o "$TMP/$name" -y 1 > "$TMP/$name.log" 2>&1
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
    mpi 2 ./train_gpt2_mpi "${SAY[@]}" -tpar 2 2>&1 | sed -n '/^ROMEO:/,$p' > "$TMP/tp_say2_$temp.txt"
    if [ "$(wc -c < "$TMP/tp_say1_$temp.txt")" -gt 300 ] && cmp -s "$TMP/tp_say1_$temp.txt" "$TMP/tp_say2_$temp.txt"; then
        ok "-tpar 2 generates one process's 300 tokens (-tp $temp, GQA/RoPE, KV caches of 1 of 2 K/V heads): $(head -c 40 "$TMP/tp_say2_$temp.txt" | tr '\n' ' ')..."
    else
        bad "-tpar 2's generation (-tp $temp) differs from one process's: $(cmp "$TMP/tp_say1_$temp.txt" "$TMP/tp_say2_$temp.txt" 2>&1)"
    fi
done

# mutants: a build without the forward all-reduce of the attention's projection (each process
# goes on with its heads' share alone), and one without the backward all-reduce of the MLP's
# input gradient: the losses must leave the tolerance
tp_mutant() {  # name, sed expression on train_gpt2.c (whose branch_sum calls the hook of -tpar's sums)
    local name=$1 dir="$TMP/tp_mutant"
    rm -rf "$dir"; copy_sources "$dir"
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
    's|^    branch_sum(model, a.attproj, (size_t)BT \* C);.*||'
tp_mutant "the MLP's input gradient not summed" 's|^    branch_sum(model, s->dln, BTC);.*||'

# bad input: -tpar 2 on one process (train_gpt2, which names train_gpt2_mpi; or mpirun -np 1),
# -tpar that is not the number of processes, that does not divide the heads or the key/value
# heads, with -z 1: one line naming -tpar, a non-zero exit from every process, and nothing written
TPB=("${SMALL[@]}" -x 5 -o "$TMP/tp_bad")
./train_gpt2 "${TPB[@]}" -tpar 2 > /dev/null 2> "$TMP/tp_one.err"; rc=$?
if [ $rc -eq 2 ] && [ "$(grep -c 'error' "$TMP/tp_one.err")" -eq 1 ] && grep -q 'error: -tpar N splits.*train_gpt2_mpi' "$TMP/tp_one.err"; then
    ok "-tpar 2 in train_gpt2: exit 2, one line: $(head -n 1 "$TMP/tp_one.err")"
else
    bad "-tpar 2 in train_gpt2: exit $rc, $(cat "$TMP/tp_one.err")"
fi
expect_mpi_error "-tpar 2 on one process" "-tpar N splits each layer's heads" -np 1 ./train_gpt2_mpi "${TPB[@]}" -tpar 2
expect_mpi_error "-tpar 3 on 2 processes" "-tpar 3 must be the number of processes (mpirun -np 2)" \
    -np 2 ./train_gpt2_mpi "${TPB[@]}" -tpar 3
expect_mpi_error "-tpar 3 with 4 heads" "-tpar 3 must divide the heads (4)" -np 3 ./train_gpt2_mpi "${TPB[@]}" -tpar 3
expect_mpi_error "-tpar 2 with 1 key/value head" "-tpar 2 must divide the heads (4), the key/value heads (1)" \
    -np 2 ./train_gpt2_mpi "${TPB[@]}" -kv 1 -tpar 2
expect_mpi_error "-tpar 2 -z 1" "-z 1 with -tpar" -np 2 ./train_gpt2_mpi "${TPB[@]}" -tpar 2 -z 1
expect_mpi_error "-tpar 0" "-tpar (tensor-parallel processes) must be >= 1" -np 2 ./train_gpt2_mpi "${TPB[@]}" -tpar 0
[ ! -e "$TMP/tp_bad" ] && ok "  ... and none of them wrote anything ($TMP/tp_bad does not exist)" \
    || bad "  ... a refused -tpar run wrote $TMP/tp_bad"

# ---- the processes of one job must share their flags (util/cli.h's check_flags_agree): each
# pair below once hung for ever (-x, -o "" against -n, -zg), trained per-process
# hyperparameters with exit 0 (-l, -prec) or died inside Open MPI; now one line names the flag,
# before any step, and every process exits. Flags only process 0 acts on may differ.
FA=("${SMALL[@]}" -b 4 -x 4)
mpmd_error() {  # name, the expected flag, process 0's extra flags, ":", process 1's extra flags
    local name="$1" flag="$2" a=() b=(); shift 2
    while [ "$1" != ":" ]; do a+=("$1"); shift; done; shift
    b=("$@")
    expect_mpi_error "$name" "were given different $flag (process 0: $flag" \
        -np 1 ./train_gpt2_mpi "${FA[@]}" "${a[@]}" : -np 1 ./train_gpt2_mpi "${FA[@]}" "${b[@]}"
}
mpmd_error "-x 6 against -x 3 (hung)" -x -x 6 -o "" : -x 3 -o ""
mpmd_error "-l 1e-3 against -l 1e-2 (trained, exit 0)" -l -l 1e-3 -o "" : -l 1e-2 -o ""
mpmd_error "-zg 0 against -zg 1 (hung)" -zg -zg 0 -o "" : -zg 1 -o ""
mpmd_error "-prec fp32 against -prec bf16" -prec -prec fp32 -o "" : -prec bf16 -o ""
mpmd_error "-o '' against -o DIR -n 2 (hung)" -o -o "" -n 2 : -o "$TMP/agree_o" -n 2
# the rest of the issue's per-process hyperparameters, each once (one check compares them all)
mpmd_error "-u 0 against -u 2" -u -u 0 -o "" : -u 2 -o ""
mpmd_error "-k cosine against -k linear" -k -k cosine -o "" : -k linear -o ""
mpmd_error "-gc 1 against -gc 0" -gc -gc 1 -o "" : -gc 0 -o ""
mpmd_error "-dr 0 against -dr 0.1" -dr -dr 0 -o "" : -dr 0.1 -o ""
mpmd_error "-c 0 against -c 0.1" -c -c 0 -o "" : -c 0.1 -o ""
expect_mpi_error "DIST_BLOCKING=1 on process 1 alone" "differ in DIST_BLOCKING" \
    -np 1 ./train_gpt2_mpi "${FA[@]}" -o "" : -np 1 -x DIST_BLOCKING=1 ./train_gpt2_mpi "${FA[@]}" -o ""
mpi 1 ./train_gpt2_mpi "${FA[@]}" -o "$TMP/agree_0" -g 8 -pr "To be" -s 2 : -np 1 ./train_gpt2_mpi "${FA[@]}" -o "$TMP/agree_1" \
    > "$TMP/agree.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q '^step     4 | val loss' "$TMP/agree.log"; then
    ok "flags only process 0 acts on (-g -pr -s, the path of -o) may differ: exit 0, 4 steps"
else
    bad "differing -g -pr -s -o: exit $rc, $(tail -n 2 "$TMP/agree.log")"
fi

# ---- the deadline (-dt): a process stopped by SIGSTOP once made the other spin for ever; now,
# -dt 5 seconds after its last answer, one line names it (its process id) and the job ends,
# whether the other waits in the progress thread (the buckets) or in the main thread (DIST_BLOCKING=1)
stop_one() {  # name, then the environment's assignments (mpirun -x) for both processes
    local name="$1" env=(); shift
    for e in "$@"; do env+=(-x "$e"); done
    rm -f "$TMP/stopped.pid" "$TMP/stopped.log"
    DT=("${SMALL[@]}" -b 4 -v 0 -j "" -x 1000000 -o "" -dt 5)
    with_timeout 120 mpirun -q --oversubscribe "${env[@]}" -np 1 ./train_gpt2_mpi "${DT[@]}" \
        : "${env[@]}" -np 1 sh -c 'echo $$ > "$0"; exec "$@"' "$TMP/stopped.pid" ./train_gpt2_mpi "${DT[@]}" \
        > "$TMP/stopped.log" 2>&1 &
    local job=$! waited=0
    while ! grep -q '^step     3/' "$TMP/stopped.log" 2> /dev/null && [ $waited -lt 600 ]; do sleep 0.1; waited=$((waited + 1)); done
    local pid; pid=$(cat "$TMP/stopped.pid" 2> /dev/null); kill -STOP "$pid"
    local t0; t0=$(now_ms); wait $job; local rc=$? took=$(( ($(now_ms) - t0) / 1000 ))
    kill -CONT "$pid" 2> /dev/null; kill -9 "$pid" 2> /dev/null
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(grep -c 'error' "$TMP/stopped.log")" -eq 1 ] \
          && grep -q "error: process 1 of 2 (pid $pid on .*) has not answered for [0-9]* s (-dt 5)" "$TMP/stopped.log"; then
        ok "SIGSTOP of process 1 ($name): the job ended $took s later, exit $rc, one line: $(grep error "$TMP/stopped.log" | cut -c1-150)..."
    else
        bad "SIGSTOP of process 1 ($name): exit $rc after $took s: $(grep -v '^step' "$TMP/stopped.log" | tail -n 3)"
    fi
}
stop_one "buckets, the progress thread waits"
stop_one "DIST_BLOCKING=1, the main thread waits" DIST_BLOCKING=1

# ---- two SIGINTs to process 0 during the final checkpoint (strace injects them at its renames):
# every process agrees on the stop, exit 1 with the one "stopped" line (main: exit 0, no line)
if strace -f -qq -o /dev/null true 2> /dev/null; then
    rm -rf "$TMP/sigint_end"
    mpi 1 strace -f -qq -o /dev/null -e trace=rename -e inject=rename:signal=INT:when=5..6 ./train_gpt2_mpi "${FA[@]}" \
        -n 2 -o "$TMP/sigint_end" : -np 1 ./train_gpt2_mpi "${FA[@]}" -n 2 -o "$TMP/sigint_end" > "$TMP/sigint_end.log" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && [ "$(grep -c "stopped by signal 2 after the run's last write: its files are whole" "$TMP/sigint_end.log")" -eq 1 ]; then
        ok "two SIGINTs during the final checkpoint: exit 1, one line: the files are whole"
    else
        bad "two SIGINTs during the final checkpoint: exit $rc, $(tail -n 1 "$TMP/sigint_end.log")"
    fi
else
    echo "(strace cannot trace here: the SIGINTs during the final checkpoint are left to a machine where it can)"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
