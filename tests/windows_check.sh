#!/usr/bin/env bash
# CI: the Windows build. A fresh copy of the tracked files is cross-built with MinGW-w64
# (make CC=x86_64-w64-mingw32-gcc: .exe programs, linked statically, OpenMP; the data is
# prepared by data/prepare.exe itself, under Wine), with no warning; then, under Wine,
# test_gpt2.exe and test_seq2seq.exe (their checks counted into ours), and a training run
# stopped and resumed: stopped at -x 4 and resumed to step 6 (loss.tsv and loss.svg are
# replaced at every checkpoint: Windows' rename() would refuse), and a run stopped by Ctrl-C
# (SIGINT) and resumed, each resumed run's losses equal to an uninterrupted run's bit for
# bit; -i as a glob over shards. Needs gcc-mingw-w64-x86-64 and wine; 10-16 minutes on a
# 2-core machine (Wine's first start, and every OpenMP parallel region costs a wineserver
# round trip). The last line is "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
source tests/posix.sh  # capture
pass=0; fail=0
ok()  { echo "PASS $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
finish() { echo "$pass passed, $fail failed"; [ $fail -eq 0 ]; exit; }

CC=x86_64-w64-mingw32-gcc
for tool in $CC wine; do
    command -v $tool > /dev/null || { bad "$tool is not installed (apt-get install gcc-mingw-w64-x86-64 wine)"; finish; }
done
W=$(mktemp -d)
export WINEPREFIX="$W/wine" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="  # no Mono/Gecko prompts
cleanup() { wineserver -k 2> /dev/null; rm -rf "$W"; }
trap cleanup EXIT
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$W"
cd "$W"
start=$SECONDS

# ---- 1. the build: every program, no warning, no DLL beyond Windows' own
# The prefix is made first, by one wine alone: make -j2 starts prepare.exe and make_pairs.exe
# at once, and two wines making a fresh prefix race ("wine: chdir to /tmp/wine-.../server-...:
# No such file or directory", and the data step fails)
wine wineboot --init > /dev/null 2>&1 || { bad "wine wineboot --init fails: no Wine prefix in $WINEPREFIX"; finish; }
# Then one wineserver for the whole check (cleanup ends it): by default a wineserver exits 3 s
# after its last program, and the next program starts another with Wine's services, racing
# with the old one's end (CI once saw the run stopped at -x 4 leave no checkpoint; 160 tries
# here did not). wineserver -w waits for wineboot's server to end (-p refuses to start beside
# it). Its services start here, their output to /dev/null: started by a program whose
# output is a pipe (train | tr), they would hold the pipe open until the server ends.
wineserver -w
wineserver -p && wine wineboot > /dev/null 2>&1 < /dev/null \
    || { bad "a persistent wineserver (wineserver -p, then wine wineboot) does not start"; finish; }
if make -j2 all CC=$CC RUN=wine > build.log 2>&1; then
    if grep -qi "warning" build.log; then
        bad "make CC=$CC prints warnings:"; grep -i -A3 "warning" build.log | head -n 40
    else
        ok "make CC=$CC: $(ls *.exe data/*.exe | wc -l) programs and the data (prepared by prepare.exe), no warning"
    fi
else
    bad "make CC=$CC fails:"; tail -n 30 build.log; finish
fi
dlls=$(for p in *.exe data/*.exe; do x86_64-w64-mingw32-objdump -p "$p" | capture 'DLL Name: ([^[:space:]]+)'; done | sort -u)
if [ -n "$dlls" ] && ! grep -qvixE 'kernel32\.dll|msvcrt\.dll|user32\.dll|advapi32\.dll' <<< "$dlls"; then
    ok "the programs need only Windows' DLLs: $(echo $dlls)"
else
    bad "the programs need DLLs to be shipped beside them: $(echo $dlls)"
fi
# the data prepare.exe wrote, against the host's own build of data/prepare.c
if cc -O2 -std=c11 -o prepare_host data/prepare.c > /dev/null 2>&1 \
      && ./prepare_host -i data/tiny_shakespeare.txt -o host/tiny_shakespeare > /dev/null 2>&1 \
      && cmp data/tiny_shakespeare_train.bin host/tiny_shakespeare_train.bin \
      && cmp data/tiny_shakespeare_val.bin host/tiny_shakespeare_val.bin \
      && cmp data/tiny_shakespeare_tokenizer.bin host/tiny_shakespeare_tokenizer.bin; then
    ok "prepare.exe's token files and tokenizer: the same bytes as the host's data/prepare"
else
    bad "prepare.exe's data differs from the host's data/prepare's (or the host build failed)"
fi

# ---- 2. the test programs, their checks counted into ours (Windows ends lines in \r\n). Both
# at once, on one thread each: under Wine every OpenMP parallel region of a team of two costs
# round trips to the wineserver (about 0.3 ms here, against 3 us natively), which left the
# cores waiting (the stage took 506 s, 180 s of CPU, on an Intel Xeon); a team of one makes
# none. The training runs below keep their two threads: OpenMP on Windows is checked there.
OMP_NUM_THREADS=1 wine ./test_gpt2.exe > test_gpt2.exe.log 2>&1 & gpt2_pid=$!
OMP_NUM_THREADS=1 wine ./test_seq2seq.exe > test_seq2seq.exe.log 2>&1 & seq2seq_pid=$!
wait $gpt2_pid; gpt2_rc=$?
wait $seq2seq_pid; seq2seq_rc=$?
count_test_program() {  # program, its exit status
    tr -d '\r' < "$1.log"
    local counts; counts=$(tr -d '\r' < "$1.log" | tail -n 1)
    if [[ "$counts" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        pass=$((pass + BASH_REMATCH[1])); fail=$((fail + BASH_REMATCH[2]))
        [ "$2" -eq 0 ] || [ "${BASH_REMATCH[2]}" -gt 0 ] || bad "$1 exited with status $2"
    else
        bad "$1 did not finish (exit status $2)"
    fi
}
count_test_program test_gpt2.exe $gpt2_rc
count_test_program test_seq2seq.exe $seq2seq_rc

# ---- 3. train, stop, resume. A tiny model, a constant learning rate (-k constant: the same
# schedule whatever -x), so a run stopped at any step and resumed gives the uninterrupted losses.
R=(-nl 1 -nh 2 -nc 16 -b 2 -t 16 -v 0 -m 4 -g 0 -k constant)
train() { wine ./train_gpt2.exe "${R[@]}" "$@" | tr -d '\r'; return "${PIPESTATUS[0]}"; }
losses() { capture '^step +([0-9]+/[0-9]+ [|] loss [0-9.]+)' "$1" | sed 's|/[0-9]*||' | awk -v s="$2" '$1 > s'; }
train -x 6 -n 2 -o full > full.log 2>&1
if [ "$(losses full.log 0 | wc -l)" -eq 6 ] && [ -f full/model_00000006.bin ]; then
    ok "train_gpt2.exe -x 6 -n 2: 6 losses, checkpoints at 2, 4, 6"
else
    bad "train_gpt2.exe -x 6 -n 2: $(tail -n 3 full.log)"
fi
train -x 4 -n 2 -o part > part.log 2>&1; part_rc=$?
train -x 6 -n 2 -o part -y 1 > resumed.log 2>&1; rc=$?
from=$(capture 'resuming from .* at step ([0-9]+)' resumed.log)
if [ $rc -eq 0 ] && [ "$from" == 4 ] && [ "$(losses resumed.log 4 | wc -l)" -eq 2 ] \
      && [ "$(losses resumed.log 4)" == "$(losses full.log 4)" ] && [ -f part/model_00000006.bin ] \
      && [ "$(grep -c '^[0-9]' part/loss.tsv)" -eq 6 ] && ! ls part/*.tmp > /dev/null 2>&1; then
    ok "stopped at -x 4, resumed with -y 1 -x 6: steps 5-6 equal the uninterrupted run's bit for bit," \
       "model_00000006.bin written, loss.tsv replaced at each checkpoint (6 steps in it), no .tmp left"
else
    # on one line (CI's summary keeps the lines that begin with FAIL): what -y 1 said, how the
    # run it resumes ended, and what that run left in part/
    bad "resume from step '$from' (exit $rc): $(grep -v '^step' resumed.log | tr '\n' ' ')" \
        "| the stopped run (-x 4, exit $part_rc): $(tail -n 3 part.log | tr '\n' ' ')| in part/: $(ls part | tr '\n' ' ')"
fi

# Ctrl-C: Wine delivers SIGINT as a console Ctrl-C event, which the C library hands to the
# handler of signal(): the step finishes, a checkpoint is saved, exit 1; resumed, the losses go on
wine ./train_gpt2.exe "${R[@]}" -x 3000 -n 0 -o sig > sig.log 2> sig.err &
pid=$!
for ((i = 0; i < 600; i++)); do  # -o is made before the first step (stdout, a file, is buffered)
    [ -d sig ] && break
    sleep 0.1
done
sleep 3
kill -INT $pid 2> /dev/null; wait $pid; rc=$?
at=$(tr -d '\r' < sig.err | capture 'stopped by signal 2 after ([0-9]+) steps; saved')
if [ $rc -eq 1 ] && [[ "$at" =~ ^[0-9]+$ ]] && [ -f "sig/model_$(printf %08d "$at").bin" ]; then
    train -x $((at + 3)) -n 0 -o sig_full > sig_full.log 2>&1
    train -x $((at + 3)) -n 0 -o sig -y 1 > sig_resumed.log 2>&1
    if [ "$(losses sig_resumed.log "$at" | wc -l)" -eq 3 ] && [ "$(losses sig_resumed.log "$at")" == "$(losses sig_full.log "$at")" ]; then
        ok "Ctrl-C (SIGINT) after step $at: saved, exit 1 ($(tr -d '\r' < sig.err | head -c 50)...); resumed," \
           "steps $((at + 1))-$((at + 3)) equal the uninterrupted run's bit for bit"
    else
        bad "Ctrl-C at step $at: the resumed losses differ: $(tail -n 3 sig_resumed.log)"
    fi
else
    bad "Ctrl-C: exit $rc, stopped at '$at': $(tr -d '\r' < sig.err)"
fi

# ---- 4. -i as a glob over shards (Windows has no glob(3): util/compat.h's)
mkdir -p shards && cp data/tiny_shakespeare_val.bin shards/shard_001.bin && cp data/tiny_shakespeare_val.bin shards/shard_000.bin
if train -x 2 -i 'shards/shard_*.bin' > shards.log 2>&1 && grep -q '(223080 tokens in 2 shards)' shards.log; then
    ok "-i 'shards/shard_*.bin': $(grep -o '^data: [^,]*' shards.log)"
else
    bad "-i 'shards/shard_*.bin': $(tail -n 3 shards.log)"
fi

echo "(the Windows stage took $((SECONDS - start)) s)"
finish
