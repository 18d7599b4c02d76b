#!/usr/bin/env bash
# make bench: the speed benchmark of train_gpt2.c, one process per part, one report.
#   1. the machine: the CPU, the FMA peak measured, the bf16 kernels' rates and choice, the
#      cache blocking, best sgemm(), copy bandwidth
#   2. training steps of the GPT-2 124M shape (B=4, T=64): time, kernels, peak RSS, determinism
#   3. the same for the default run's shape (B=12, T=64)
#   4. generation with the KV cache vs recomputation (124M shape, 512 tokens)
#   5. PyTorch's training step of the same models, when /usr/bin/python3 imports torch
#   6. the summary: fractions of the peaks, ours/PyTorch, the targets as a checklist
#   7. our GPT-2 encoder (data/prepare) against tiktoken, MB/s
#   9. (when train_gpt2_mpi is built, with Open MPI) 1 process x all threads against N processes x
#      1 thread with ZeRO-1 (-z 1) and without (-z 0), the same global batch, default and 124M
#      shapes (B=4 per process): the ratio, the gradients' sum hidden behind the backward pass
#      and exposed after it, the optimizer's time and memory per process; tensor parallelism
#      (-tpar N: one model's heads and MLP split over the N processes, the same B rows) against
#      1 process x N threads: the ratio and the all-reduces' share of the step; and the sweep
#      of all-reduce piece sizes that chose util/dist.h's bucket size (bench/allreduce_sweep.c)
#  10. -prec bf16 against fp32, both shapes, in this build, the AVX2 build and the baseline
#      build (and this one with each bf16 kernel forced), alternating rounds in this run: ratios
#  11. an AVX2 build (-march=x86-64-v3: the avx2+fma 6x16 kernel) beside this one, alternating:
#      the training steps of both shapes, AVX2 / this; the AVX2 products against the AVX2 FMA
#      peak; and PyTorch restricted to AVX2 (ATEN_CPU_CAPABILITY=avx2, OpenBLAS Haswell)
# The report also goes to bench/out/report.txt. A benchmark does not fail the build: the
# exit status is non-zero only if a part crashed. Takes 4-5 minutes on 2 cores. bench/README.md
# describes each part, the machine and the results.
# A/B: with BASE=REV (make bench BASE=REV; a commit, branch or tag), part 8 builds the
# benchmark of REV from git beside this one and times the training steps of both, alternating
# (BASE, this, BASE, this, ...), in this same run: the ratios compare builds, not runs of a
# different day. AB_ROUNDS (default 3) rounds per shape.
# Settings: PYTHON (default /usr/bin/python3); OMP_NUM_THREADS as usual; BENCH_QUICK=1 runs
# every part with a few steps only (to check the script, not to measure); BENCH_PART=8 (with
# BASE), 9, 10 or 11 runs that part alone; BENCH_WAIT=S waits up to S seconds (default 60)
# for busy CPUs to become idle before starting.
set -u
cd "$(dirname "$0")/.."
source tests/posix.sh  # capture, cpu_count: GNU's and BSD's tools alike
OUT=bench/out
RES=$OUT/results.txt
REPORT=$OUT/report.txt
BIN=bench/bench_gpt2
PY=${PYTHON:-/usr/bin/python3}
mkdir -p "$OUT"
: > "$RES"
SHAPE_ARGS=() GEN_ARGS=() PT_ARGS=()
if [ "${BENCH_QUICK:-0}" = 1 ]; then
    SHAPE_ARGS=(--warmup 1 --steps 2 --kernel-ms 5) GEN_ARGS=(--gen-tokens 16) PT_ARGS=(--warmup 1 --steps 2)
fi

# PyTorch runs with the tuned settings of bench/README.md ("The PyTorch baseline's settings")
TUNED=(env -u OPENBLAS_CORETYPE OMP_WAIT_POLICY=PASSIVE MALLOC_MMAP_MAX_=0
       MALLOC_TRIM_THRESHOLD_=100000000000 MALLOC_TOP_PAD_=1073741824)

crashed=0
# reported KEY [FILE]: the value of bench_gpt2's "@ KEY value" line in FILE (none: standard input)
reported() { awk -v k="$1" '$1 == "@" && $2 == k { print $3 }' "${2:--}"; }

section() { printf '\n==== %s\n' "$*"; }

# runs a part; its "@ key value" lines go to $RES for the summary, the rest to the report
run() {
    "$@" 2>&1 | awk -v res="$RES" '/^@ /{ print substr($0, 3) >> res; fflush(res); next } { print; fflush() }'
    local rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then echo "!! '$*' failed (exit status $rc)"; crashed=1; fi
}

# percentage of all CPUs busy over one second, from Linux's /proc/stat (0 elsewhere: not known)
cpu_busy() {
    local a b
    [ -r /proc/stat ] || { echo 0; return; }  # posix-check: allow
    read -r -a a < /proc/stat; sleep 1; read -r -a b < /proc/stat  # posix-check: allow
    local tot=0 idle=$(( (b[4] + b[5]) - (a[4] + a[5]) ))
    for i in 1 2 3 4 5 6 7 8; do tot=$(( tot + b[i] - a[i] )); done
    echo $(( tot > 0 ? 100 * (tot - idle) / tot : 0 ))
}

bench() {
    echo "train_gpt2.c benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); train_gpt2.c cksum $(cksum < train_gpt2.c | cut -d' ' -f1)"
    echo "cpu: $(cpu_model), $(cpu_count) CPUs;" \
         "compiler: $(cc --version | head -n 1); OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}"
    [ -n "${LD_LIBRARY_PATH:-}" ] && echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    local busy waited=0
    busy=$(cpu_busy)
    while [ "$busy" -ge 10 ] && [ "$waited" -lt "${BENCH_WAIT:-60}" ]; do  # give a busy machine a chance
        [ "$waited" -eq 0 ] && echo "CPUs ${busy}% busy: waiting up to ${BENCH_WAIT:-60} s for them to be idle"
        sleep 4; waited=$((waited + 5)); busy=$(cpu_busy)
    done
    echo "CPUs busy before the start: ${busy}% (load average $(uptime | sed 's/.*load averages*: *//'))"
    if [ "$busy" -ge 10 ]; then
        echo "!! another process is using the CPUs: every time below is slowed. Busiest processes:"
        ps -eo pid,pcpu,args | sed 1d | sort -k2 -rn | sed -n '1,3p' | cut -c1-100 | sed 's/^/     /'
    fi

    section "1. machine: the CPU, the measured FMA peak, the bf16 kernels, best sgemm, memory bandwidth"
    run "$BIN" --machine

    section "2. training step, GPT-2 124M shape"
    run "$BIN" --shape 124m "${SHAPE_ARGS[@]}"

    section "3. training step, default shape"
    run "$BIN" --shape default "${SHAPE_ARGS[@]}"

    section "4. generation with the KV cache vs recomputation"
    run "$BIN" --gen "${GEN_ARGS[@]}"

    section "5. PyTorch (the same models; tuned settings of bench/README.md)"
    if "$PY" -c 'import torch' 2>/dev/null; then
        local blas
        blas=$("${TUNED[@]}" "$PY" bench/pytorch_step.py --blas 2>&1)
        echo "PyTorch's BLAS: $blas"
        case "$blas" in
            OpenBLAS*|MKL*|BLIS*)
                run "${TUNED[@]}" "$PY" bench/pytorch_step.py 124m "${PT_ARGS[@]}"
                run "${TUNED[@]}" "$PY" bench/pytorch_step.py default "${PT_ARGS[@]}" ;;
            *)
                echo "!! PyTorch loads an unoptimised BLAS (Debian's reference libblas3, about 6 GFLOP/s): it is"
                echo "!! no baseline, and a 124M step would take about 30 s. Install OpenBLAS (apt-get install"
                echo "!! libopenblas0-pthread) or put an OpenBLAS libblas.so.3 on LD_LIBRARY_PATH for the"
                echo "!! comparison. The 124M shape is skipped; the default shape, for information:"
                run "${TUNED[@]}" "$PY" bench/pytorch_step.py default --warmup 2 --steps 5 ;;
        esac
    else
        echo "PyTorch: $PY cannot import torch (Debian's python3-torch is not installed); skipped"
    fi

    section "6. summary"
    run "$BIN" --summary "$RES"
    section "7. preparing your own text: GPT-2 encoding, MB/s"
    encoding_speed
    [ -n "${BASE:-}" ] && ab_against_base
    mpi_scaling
    bf16_speed
    isa_compare
    [ "$crashed" -eq 0 ]
}

# part 11: the AVX2 build of the benchmark (CC, this CFLAGS, ARCH=-march=x86-64-v3) beside
# this one: --isa of each (the kernel, its FMA peak, the 124M products on one thread), the
# training steps alternating (this, AVX2, ...; ISA_ROUNDS rounds, default 3) and their
# medians; then PyTorch held to AVX2 on both shapes, for the AVX2 build to be compared with
isa_compare() {
    section "11. the AVX2 build (-march=x86-64-v3) beside this one, alternating in this run"
    if ! isa_build bench_avx2 x86-64-v3; then
        echo "!! the AVX2 build of the benchmark does not build"; crashed=1; return
    fi
    echo "-- this build:"; run "$BIN" --isa
    echo "-- the AVX2 build:"; "$OUT/bench_avx2" --isa 2>&1 | sed 's/^@ isa_/@ avx2.isa_/' \
        | awk -v res="$RES" '/^@ /{ print substr($0, 3) >> res; next } { print }'
    # the steps on ISA_THREADS threads (default 1, as issue 34 measured: a step on one thread
    # is not slowed by a second thread waiting for a core that another process holds)
    local rounds=${ISA_ROUNDS:-3} threads=${ISA_THREADS:-1} shape which i
    [ "${BENCH_QUICK:-0}" = 1 ] && rounds=1
    # one thread: a step's CPU time (its time with a core to itself); several: the wall clock
    local key=ms; [ "$threads" = 1 ] && key=cpu_ms
    echo "training steps on $threads thread(s), alternating this build and the AVX2 build ($key):"
    for shape in default 124m; do
        local steps=(--steps 10); [ $shape = 124m ] && steps=(--warmup 1 --steps 2)
        [ "${BENCH_QUICK:-0}" = 1 ] && steps=(--warmup 1 --steps 2)
        : > "$OUT/isa_$shape.txt"
        for ((i = 1; i <= rounds; i++)); do
            for which in this avx2; do
                local bin=$BIN; [ $which = avx2 ] && bin=$OUT/bench_avx2
                local ms; ms=$(OMP_NUM_THREADS=$threads "$bin" --shape $shape "${steps[@]}" --kernel-ms 1 2>&1 \
                              | reported "$shape.$key")
                [ -z "$ms" ] && { echo "!! $which $shape round $i did not report a time"; crashed=1; continue; }
                echo "$which $ms" >> "$OUT/isa_$shape.txt"
                printf '  %-7s round %d  %-4s %9.2f ms/step\n' "$shape" "$i" "$which" "$ms"
            done
        done
        sort -k2 -n "$OUT/isa_$shape.txt" | awk -v shape="$shape" '
            { v[$1, ++n[$1]] = $2 }
            function med(w) { return n[w] % 2 ? v[w, (n[w] + 1) / 2] : (v[w, n[w] / 2] + v[w, n[w] / 2 + 1]) / 2 }
            END { if (!n["this"] || !n["avx2"]) exit
                  r = med("avx2") / med("this")
                  printf "  %-7s this: median %.2f ms, min %.2f | AVX2: median %.2f ms, min %.2f | AVX2/this: median %.3f, min %.3f (target <= 2.2: %s)\n",
                         shape, med("this"), v["this", 1], med("avx2"), v["avx2", 1], r, v["avx2", 1] / v["this", 1],
                         r <= 2.2 ? "met" : "not met"
                  printf "@ avx2.%s.ms %s\n", shape, med("avx2") }' \
            | awk -v res="$RES" '/^@ /{ print substr($0, 3) >> res; next } { print }'
    done
    if "$PY" -c 'import torch' 2>/dev/null; then
        # the tuned settings, but with OpenBLAS's Haswell (AVX2) kernels and ATen's AVX2 code
        local avx2_pt=(env OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 OMP_WAIT_POLICY=PASSIVE MALLOC_MMAP_MAX_=0
                       MALLOC_TRIM_THRESHOLD_=100000000000 MALLOC_TOP_PAD_=1073741824)
        for shape in default 124m; do
            local out pt this_ms
            out=$("${avx2_pt[@]}" "$PY" bench/pytorch_step.py $shape --threads "$threads" "${PT_ARGS[@]}" 2>&1)
            echo "$out" | grep -v '^@ ' | sed 's/^/  PyTorch (AVX2): /'
            pt=$(reported "torch.$shape.$key" <<< "$out")
            this_ms=$(awk -v k="avx2.$shape.ms" '$1 == k { print $2 }' "$RES" | tail -n 1)
            [ -z "$pt" ] && { echo "!! PyTorch (AVX2) $shape did not report a time"; crashed=1; continue; }
            [ -n "$this_ms" ] && awk -v a="$this_ms" -v p="$pt" -v s="$shape" -v key="$key" 'BEGIN {
                printf "  %-7s AVX2 build %.2f ms/step, PyTorch on AVX2 %.2f ms/step (%s): PyTorch/ours %.2f (target > 1: %s)\n",
                       s, a, p, key, p / a, (p > a ? "met" : "not met") }'
        done
    else
        echo "PyTorch: $PY cannot import torch; the AVX2 comparison with PyTorch is skipped"
    fi
}

# part 7: our GPT-2 encoder (data/prepare -m bpe) on 1 and on all threads against tiktoken's
# (the npm package, single-threaded, when node can load it: TIKTOKEN_NODE_MODULES, or
# installed with npm into bench/out/npm), on the same text: Tiny Shakespeare 10 times
# (11 MB); best of 3 runs each
encoding_speed() {
    local text=$OUT/encode_text.txt reps=3 i threads mbs best
    for i in 1 2 3 4 5 6 7 8 9 10; do cat data/tiny_shakespeare.txt; done > "$text"
    [ "${BENCH_QUICK:-0}" = 1 ] && reps=1
    for threads in 1 "${OMP_NUM_THREADS:-$(cpu_count)}"; do
        best=0
        for ((i = 1; i <= reps; i++)); do
            mbs=$(OMP_NUM_THREADS=$threads ./data/prepare -i "$text" -o "$OUT/encode" -m bpe 2>&1 \
                  | capture 'encoded at ([0-9.]+)')
            [ -n "$mbs" ] && best=$(awk -v a="$best" -v b="$mbs" 'BEGIN { print (b > a ? b : a) }')
        done
        printf 'ours, %s thread(s): %s MB/s\n' "$threads" "$best"
    done
    local modules=${TIKTOKEN_NODE_MODULES:-$OUT/npm/node_modules}
    if [ ! -d "$modules/tiktoken" ] && command -v npm > /dev/null; then
        npm install --silent --no-audit --no-fund --prefix "$OUT/npm" tiktoken@1.0.22 > /dev/null 2>&1
    fi
    if [ -d "$modules/tiktoken" ] && command -v node > /dev/null; then
        NODE_PATH="$modules" node -e '
            const fs = require("fs"), { get_encoding } = require("tiktoken");
            const text = fs.readFileSync(process.argv[1], "utf8"), bytes = Buffer.byteLength(text);
            const enc = get_encoding("gpt2");
            let best = 0;
            for (let r = 0; r < Number(process.argv[2]); r++) {
                const t0 = process.hrtime.bigint();
                enc.encode_ordinary(text);
                best = Math.max(best, bytes / 1e6 / (Number(process.hrtime.bigint() - t0) / 1e9));
            }
            enc.free();
            console.log(`tiktoken (npm 1.0.22, one thread): ${best.toFixed(1)} MB/s`);
        ' "$text" "$reps"
    else
        echo "tiktoken: node or the npm package is not available here; skipped"
    fi
    rm -f "$text" "$OUT"/encode_*.bin
}

# running: the process $1 has not exited (a zombie, exited but not yet waited for, has)
running() {
    local state; state=$(ps -p "$1" -o stat= 2> /dev/null)
    [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}

# take_turns OUT_A OUT_B A_ARGS... -- B_ARGS...: runs the two commands at once, one stopped
# (SIGSTOP) while the other runs, in turns of AB_SLICE seconds (default 0.1) until both exit:
# both see the machine as it is in the same seconds, where runs one after the other, minutes
# apart, differed by up to 30% on a shared machine. Their CPU time is their own (a stopped
# process uses none); their wall clock is not.
take_turns() {
    local out_a=$1 out_b=$2; shift 2
    local a=() pa pb
    while [ $# -gt 0 ] && [ "$1" != -- ]; do a+=("$1"); shift; done
    shift
    "${a[@]}" > "$out_a" 2>&1 & pa=$!
    kill -STOP "$pa" 2> /dev/null
    "$@" > "$out_b" 2>&1 & pb=$!
    kill -STOP "$pb" 2> /dev/null
    while running "$pa" || running "$pb"; do
        local p
        for p in "$pa" "$pb"; do
            running "$p" || continue
            kill -CONT "$p" 2> /dev/null; sleep "${AB_SLICE:-0.1}"; kill -STOP "$p" 2> /dev/null
        done
    done
    kill -CONT "$pa" "$pb" 2> /dev/null
    wait "$pa" "$pb" 2> /dev/null
}

# part 8: this build against the benchmark of commit $BASE, built with the same compiler and
# flags, on both training-step shapes: each round runs the two at once, taking turns
# (take_turns), and compares the median CPU time of a step (all threads together) of each;
# the ratio this / BASE per round (< 1: this build is faster), then its median over the rounds
ab_against_base() {
    section "8. A/B: this build against $BASE, the same shapes, taking turns in this run"
    local src; src=$(mktemp -d)
    if ! git archive "$BASE" | tar -x -C "$src" || [ ! -f "$src/bench/bench_gpt2.c" ]; then
        echo "!! cannot take bench/bench_gpt2.c from '$BASE' (git archive failed)"; crashed=1; rm -rf "$src"; return
    fi
    if ! ${CC:-cc} ${BENCH_CFLAGS:--O3 -march=native -fopenmp} -o "$OUT/bench_base" "$src/bench/bench_gpt2.c" -lm; then
        echo "!! the benchmark of '$BASE' does not build"; crashed=1; rm -rf "$src"; return
    fi
    rm -rf "$src"
    echo "BASE $BASE = $(git rev-parse --short "$BASE"); this build: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench/out' || echo ' + uncommitted changes')"
    echo "  OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}; the CPU time of a step, all threads together; turns of ${AB_SLICE:-0.1} s"
    local rounds=${AB_ROUNDS:-3} steps=(--steps 20) run shape prec i
    [ "${BENCH_QUICK:-0}" = 1 ] && { rounds=1; steps=(--warmup 1 --steps 2); }
    # issue 28's targets for base/this (today/new), printed, not enforced (a case, not an
    # associative array: bash 3.2, macOS's, has none)
    local target
    for run in default 124m 124m-bf16; do
        shape=${run%-bf16} prec=fp32
        [ "$run" != "$shape" ] && prec=bf16
        [ "$shape" = 124m ] && [ "${BENCH_QUICK:-0}" != 1 ] && steps=(--steps 5)
        case $run in default) target=1.2;; 124m) target=1.12;; 124m-bf16) target=1.15;; esac
        : > "$OUT/ab_$run.txt"
        for ((i = 1; i <= rounds; i++)); do
            local args=(--shape "$shape" "${steps[@]}" --kernel-ms 1 --prec $prec)
            take_turns "$OUT/ab_base.log" "$OUT/ab_this.log" "$OUT/bench_base" "${args[@]}" -- "$BIN" "${args[@]}"
            local base_ms this_ms
            base_ms=$(reported "$shape.cpu_ms" "$OUT/ab_base.log")
            this_ms=$(reported "$shape.cpu_ms" "$OUT/ab_this.log")
            if [ -z "$base_ms" ] || [ -z "$this_ms" ]; then
                echo "!! $run round $i did not report both times"; crashed=1; continue
            fi
            echo "$base_ms $this_ms" >> "$OUT/ab_$run.txt"
            printf '  %-9s round %d  base %9.2f ms  this %9.2f ms  this/base %.3f\n' "$run" "$i" "$base_ms" \
                   "$this_ms" "$(awk -v b="$base_ms" -v t="$this_ms" 'BEGIN { print t / b }')"
        done
        awk '{ print $2 / $1, $1, $2 }' "$OUT/ab_$run.txt" | sort -g | awk -v shape="$run" -v target="$target" '
            { r[++n] = $1; base += $2; this += $3 }
            END {
                if (!n) exit
                m = n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
                printf "  %-9s this/base per round: median %.3f (rounds %.3f to %.3f); mean step base %.2f ms, this %.2f ms\n",
                       shape, m, r[1], r[n], base / n, this / n
                printf "  %-9s base/this (today/new) %.3f, target >= %s (issue 28; printed, not enforced): %s\n",
                       shape, 1 / m, target, (1 / m >= target ? "met" : "not met")
            }'
    done
}

# part 9: data parallelism (util/dist.h). The same global batch on 1 process with all the
# threads and on N processes (one per CPU) of one thread each, with ZeRO-1 (-z 1, the
# default) and without (-z 0), train_gpt2 against train_gpt2_mpi; their own step time (the
# mean after the first step), the ratio N x 1 / 1 x N, the gradients' sum per step, hidden
# behind the backward pass (buckets) and exposed after it, and the optimizer's time and state
# memory per process.
# The 124M shape (B=4 per process, as in issue 27) uses GPT-2's tokenizer (V = 50257), on
# Tiny Shakespeare encoded with it. Then the sweep of piece sizes for the 124M gradient
# (bench/allreduce_sweep.c, 3 rounds). Between them, tensor parallelism (-tpar N, doc/mpi.md):
# the N processes split each block's heads and MLP units and compute the same B rows, against
# the 1 x N run; its step time ratio and its all-reduces' share of the step (measured, not a
# target: on one machine it cannot be faster than the threads, which split the same products
# with no all-reduce).
mpi_scaling() {
    section "9. data parallelism over MPI: 1 process x $(cpu_count) threads vs $(cpu_count) processes x 1 thread"
    if ! command -v mpirun > /dev/null || ! [ -x ./train_gpt2_mpi ]; then
        echo "train_gpt2_mpi is not built here (Open MPI: openmpi-bin, libopenmpi-dev); skipped"; return
    fi
    local n; n=$(cpu_count)
    local mpirun=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
                  mpirun -q --oversubscribe -np "$n")
    ./data/prepare -i data/tiny_shakespeare.txt -o "$OUT/ts_gpt2" -m bpe -tok data/gpt2_tokenizer.bin > /dev/null 2>&1 \
        || { echo "!! could not encode Tiny Shakespeare with GPT-2's tokenizer"; crashed=1; return; }
    local quick=0 shape
    [ "${BENCH_QUICK:-0}" = 1 ] && quick=1
    for shape in default 124m; do
        local B=12 x=$((quick ? 3 : 40)) args=(-o "" -g 0 -j "" -t 64)
        if [ $shape = 124m ]; then
            B=$((4 * n)); x=$((quick ? 2 : 12))
            args+=(-e d12 -tok data/gpt2_tokenizer.bin -i "$OUT/ts_gpt2_train.bin")
        fi
        [ $((B % n)) -eq 0 ] || { echo "$shape: B=$B is not divisible by $n processes; skipped"; continue; }
        local one many z out
        one=$(OMP_NUM_THREADS=$n ./train_gpt2 "${args[@]}" -b $B -x $x 2>&1 | grep '^done:')
        echo "$shape, B=$B T=64, $x steps:"
        echo "  1 process x $n threads:   ${one:-!! no result}"
        for z in 1 0; do  # ZeRO-1 (-z 1, the default under mpirun: doc/mpi.md), then unsharded
            out=$("${mpirun[@]}" ./train_gpt2_mpi "${args[@]}" -b $((B / n)) -x $x -z $z 2>&1)
            many=$(echo "$out" | grep '^done:')
            echo "  $n processes x 1 thread, -z $z:  ${many:-!! no result}"
            local a b
            a=$(echo "$one" | capture '([0-9.]+) ms/step'); b=$(echo "$many" | capture '^done: [0-9]+ steps, ([0-9.]+)')
            [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" -v s="$shape" -v z=$z -v n=$n \
                'BEGIN { printf "  %s, -z %s: step time, %d x 1 / 1 x %d: %.3f\n", s, z, n, n, b / a }'
            local e h
            e=$(echo "$many" | capture 'exposed [(]([0-9.]+)%'); h=$(echo "$many" | capture '([0-9.]+) ms/step hidden')
            [ -n "$e" ] && echo "  $shape, -z $z: gradients' sum exposed $e% of the step, $h ms/step hidden behind the backward pass"
            echo "  $shape, -z $z: optimizer per process: $(echo "$many" | grep -oE 'AdamW [^,]+'); state:" \
                 "$(echo "$out" | capture "optimizer: AdamW's moments ([0-9.]+ MiB) per process")"
            [ -z "$many" ] && crashed=1
        done
        tensor_parallel "$shape" "$n" "$B" "$x" "$one" "${args[@]}"
        [ -z "$one" ] && crashed=1
    done
    rm -f "$OUT"/ts_gpt2_*.bin
    if mpicc -O2 -o bench/allreduce_sweep bench/allreduce_sweep.c 2> "$OUT/sweep_build.log"; then
        echo "all-reduce of the 124M gradient by piece size ($n processes; util/dist.h's buckets: $(capture \
              'define DIST_BUCKET_BYTES (.*)' util/dist.h) bytes):"
        env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -q --oversubscribe -np "$n" \
            bench/allreduce_sweep $((quick ? 1048576 : 124475904)) $((quick ? 1 : 3)) | sed 's/^/  /' || crashed=1
    else
        echo "!! could not build bench/allreduce_sweep: $(head -n 3 "$OUT/sweep_build.log")"; crashed=1
    fi
}

# part 9's tensor-parallel line: shape, processes N, B, steps, the 1 x N run's done line, then
# train_gpt2's flags. -tpar N needs N to divide the heads (4 and 12 here)
tensor_parallel() {
    local shape=$1 n=$2 B=$3 x=$4 one=$5 heads=4; shift 5
    [ "$shape" = 124m ] && heads=12
    [ $((heads % n)) -eq 0 ] || { echo "  $shape: -tpar $n does not divide the $heads heads; skipped"; return; }
    local out many a b share mem
    out=$(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 \
          mpirun -q --oversubscribe -np "$n" ./train_gpt2_mpi "$@" -b "$B" -x "$x" -tpar "$n" 2>&1)
    many=$(echo "$out" | grep '^done:')
    echo "  $n processes x 1 thread, -tpar $n (one model, B=$B each):  ${many:-!! no result}"
    a=$(echo "$one" | capture '([0-9.]+) ms/step'); b=$(echo "$many" | capture '^done: [0-9]+ steps, ([0-9.]+)')
    share=$(echo "$many" | capture 'tensor-parallel all-reduces ([^)]+[)])')
    mem=$(echo "$out" | capture 'parameters per process: (split matrices [0-9.]+ MiB [(][0-9.]+ MiB)')
    [ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" -v s="$shape" -v n=$n -v c="$share" -v m="$mem" \
        'BEGIN { printf "  %s, -tpar %d: step time, tp / 1 x %d threads: %.3f; all-reduces %s;", s, n, n, b / a, c
                 printf " per process %s on one process)\n", m }'
    [ -z "$many" ] && crashed=1
}

# builds the benchmark with this compiler and CFLAGS but -march=$2 ("" for the compiler's
# baseline: x86-64's SSE2) into $OUT/$1, once per run
isa_build() {
    case " ${ISA_BUILT:-} " in *" $1 "*) return 0;; esac
    local flags=${BENCH_CFLAGS:--O3 -march=native -fopenmp} march=
    flags=$(echo "$flags" | sed 's/-march=[^ ]*//g')
    [ -n "$2" ] && march=-march=$2
    ${CC:-cc} $flags $march -o "$OUT/$1" bench/bench_gpt2.c -lm || return 1
    ISA_BUILT="${ISA_BUILT:-} $1"
}

# part 10: the training step with bf16 matmul operands (-prec bf16, fast/bf16.h) against
# float32 in three builds: this one, the AVX2 build (-march=x86-64-v3) and the baseline
# (no -march: SSE2), and this one with each FMA bf16 kernel forced (BF16_KERNEL=dpbf16,
# widen, packed: what the other choices would do here; where this build runs AMX's tiles, its
# choice there, packed is what an Intel core before AMX runs). Each variant is one process of
# bench_gpt2 --pairs: a float32 model and a bf16 model from the same init take turns, step by
# step, on the same batches, so that the two times of a pair are milliseconds apart and see
# the same machine (separate processes, minutes apart, differed by up to 30% on a shared
# machine). fp32/bf16 per pair (> 1: bf16 is faster), the median over the pairs; the variants
# in turn, round after round (BF16_ROUNDS, default 3), on BF16_THREADS threads (default 1:
# CPU time, which another process on the machine inflates least; more: the wall clock)
bf16_speed() {
    section "10. -prec bf16 against fp32: pairs of training steps in one process, three builds"
    local rounds=${BF16_ROUNDS:-3} threads=${BF16_THREADS:-1} shape i v
    [ "${BENCH_QUICK:-0}" = 1 ] && rounds=1
    isa_build bench_avx2 x86-64-v3 || { echo "!! the AVX2 build of the benchmark does not build"; crashed=1; return; }
    isa_build bench_sse2 "" || { echo "!! the baseline build of the benchmark does not build"; crashed=1; return; }
    local variants=(this avx2 sse2 this:widen this:packed)
    BF16_KERNEL=dpbf16 "$BIN" --kernels > /dev/null 2>&1 && variants+=(this:dpbf16)  # (AVX512-BF16)
    local which
    for which in this avx2 sse2; do
        local bin=$BIN; [ $which != this ] && bin=$OUT/bench_$which
        printf '  %-4s %s\n' "$which" "$("$bin" --kernels 2>&1)"
    done
    echo "  pairs of steps (fp32, bf16) in one process per variant, on $threads thread(s), $rounds rounds:"
    for shape in default 124m; do
        local steps=(--warmup 3 --steps 20); [ $shape = 124m ] && steps=(--warmup 1 --steps 3)
        [ "${BENCH_QUICK:-0}" = 1 ] && steps=(--warmup 1 --steps 2)
        : > "$OUT/prec_$shape.txt"
        for ((i = 1; i <= rounds; i++)); do
            for v in "${variants[@]}"; do
                local build=${v%%:*} kernel=; [[ $v == *:* ]] && kernel=${v#*:}
                local bin=$BIN; [ "$build" != this ] && bin=$OUT/bench_$build
                local got; got=$(env ${kernel:+BF16_KERNEL=$kernel} OMP_NUM_THREADS=$threads \
                                 "$bin" --pairs $shape "${steps[@]}" 2>&1 | awk -v s="$shape" '
                                     $1 == "@" { x[$2] = $3 }
                                     END { if (x[s ".pair_ratio"] != "")
                                               print x[s ".pair_ratio"], x[s ".pair_fp32_ms"], x[s ".pair_bf16_ms"] }')
                [ -z "$got" ] && { echo "!! $v $shape round $i did not report"; crashed=1; continue; }
                echo "$v $got" >> "$OUT/prec_$shape.txt"
                set -- $got
                printf '  %-7s round %d  %-12s fp32 %9.2f ms  bf16 %9.2f ms  fp32/bf16 %.3f\n' \
                       "$shape" "$i" "$v" "$2" "$3" "$1"
            done
        done
        sort -k2 -g "$OUT/prec_$shape.txt" | awk -v shape="$shape" '
            { r[$1, ++n[$1]] = $2 }
            function row(v, title,   m) {
                if (!n[v]) return
                m = n[v] % 2 ? r[v, (n[v] + 1) / 2] : (r[v, n[v] / 2] + r[v, n[v] / 2 + 1]) / 2
                printf "  %-7s %-24s fp32/bf16 per pair, median of %d runs: %.3f (runs %.3f to %.3f; " \
                       "bf16 >= fp32: %s)\n",
                       shape, title, n[v], m, r[v, 1], r[v, n[v]], (m >= 1 ? "met" : "not met")
                printf "@ prec.%s.%s %s\n", shape, v, m }
            END { row("this", "this build")
                  row("this:widen", "this, BF16_KERNEL=widen")
                  row("this:packed", "this, BF16_KERNEL=packed")
                  row("this:dpbf16", "this, BF16_KERNEL=dpbf16")
                  row("avx2", "AVX2 build")
                  row("sse2", "baseline build") }' \
            | awk -v res="$RES" '/^@ /{ print substr($0, 3) >> res; next } { print }'
    done
}

if [ "${BENCH_PART:-}" = 10 ]; then  # part 10 alone
    { bf16_speed; exit $crashed; } 2>&1 | tee "$OUT/report_10.txt"; exit "${PIPESTATUS[0]}"
fi
if [ "${BENCH_PART:-}" = 11 ]; then  # part 11 alone
    isa_compare 2>&1 | tee "$OUT/report_11.txt"; exit "${PIPESTATUS[0]}"
fi
if [ "${BENCH_PART:-}" = 8 ]; then  # part 8 alone: BENCH_PART=8 make bench BASE=REV
    [ -n "${BASE:-}" ] || { echo "BENCH_PART=8 needs BASE=REV: the commit to time this build against"; exit 2; }
    { ab_against_base; exit $crashed; } 2>&1 | tee "$OUT/report_8.txt"; exit "${PIPESTATUS[0]}"
fi
if [ "${BENCH_PART:-}" = 9 ]; then  # part 9 alone
    { mpi_scaling; exit $crashed; } 2>&1 | tee "$OUT/report_9.txt"; exit "${PIPESTATUS[0]}"
fi
bench 2>&1 | tee "$REPORT"
status=${PIPESTATUS[0]}
echo "(report: $REPORT)"
exit "$status"
