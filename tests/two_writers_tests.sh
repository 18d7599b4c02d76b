# Two writers, one truth (issue 49), sourced by tests/run_tests.sh (its ok, bad, expect_error,
# patch_int, TMP and counters): a training state names the checkpoint written with it, one run
# per output folder, a loss curve never older than the checkpoints, and the issue's smaller
# messages. The MPI cases (flags that must agree, a process that stops) are in tests/mpi_tests.sh.
echo "-- two writers: a state names its checkpoint, one run per folder, the loss curve"
W="$TMP/writers"; rm -rf "$W"; mkdir -p "$W"
WT=(-nl 1 -nh 2 -nc 16 -b 2 -t 16 -g 0 -v 0 -j "" -n 2)

# 1. the state records the CRC-32C of its checkpoint (GPT-2's version 3 has no checksum of its own):
# another run's model of the same step beside it (it differs only in -l), or the model with one
# mantissa bit flipped, is refused in one line (main resumed both with exit 0); the pair resumes
./train_gpt2 "${WT[@]}" -x 4 -o "$W/a" > /dev/null 2>&1
./train_gpt2 "${WT[@]}" -x 4 -l 2e-3 -o "$W/b" > /dev/null 2>&1
cp "$W/a/model_00000004.bin" "$W/model_a4.bin"
cp "$W/b/model_00000004.bin" "$W/a/model_00000004.bin"
expect_error "another run's checkpoint beside the state" "model_00000004.bin' is not the checkpoint '$W/a/state_00000004.bin' was written with" \
    ./train_gpt2 "${WT[@]}" -x 6 -o "$W/a" -y 1
cp "$W/model_a4.bin" "$W/a/model_00000004.bin"
perl -e 'open(my $f, "+<:raw", shift) or die; seek($f, 2048, 0); read($f, my $b, 1); seek($f, 2048, 0);
         print $f chr(ord($b) ^ 1)' "$W/a/model_00000004.bin"
expect_error "the checkpoint with one mantissa bit flipped" "model_00000004.bin' is not the checkpoint" \
    ./train_gpt2 "${WT[@]}" -x 6 -o "$W/a" -y 1
cp "$W/model_a4.bin" "$W/a/model_00000004.bin"
if ./train_gpt2 "${WT[@]}" -x 6 -o "$W/a" -y 1 > "$W/a.log" 2>&1 && grep -q 'resuming from .* at step 4' "$W/a.log"; then
    ok "the checkpoint the state names resumes"
else
    bad "the matching pair does not resume: $(tail -n 1 "$W/a.log")"
fi

# 2. one run per output folder: a second run into the folder of a live one is refused in one line
# naming the holder's process id, and leaves the first run's files (its in-flight .tmp among them)
# alone; main let the two delete each other's .tmp and interleave their checkpoints. Once the first
# ends (here: killed), its lock is gone and the next run takes the folder and its leftovers.
./train_gpt2 "${WT[@]}" -n 1 -x 1000000 -o "$W/busy" > "$W/busy.log" 2>&1 &
busy=$!
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    [ -e "$W/busy/model_00000001.bin" ] && break; sleep 0.25
done
echo half > "$W/busy/model_99999999.bin.tmp"
expect_error "a second run into a live run's -o" "-o '$W/busy' is in use by another run (process $busy holds '$W/busy/.run.lock')" \
    ./train_gpt2 "${WT[@]}" -x 4 -o "$W/busy" -y 1
if [ -e "$W/busy/model_99999999.bin.tmp" ]; then
    ok "... and the live run's temporary file is left in place"
else
    bad "the refused run removed a temporary file of the live run"
fi
expect_error "an -hf export into a live run's -o" "-hf '$W/busy' is in use by another run (process $busy" \
    ./train_gpt2 -e data/ref/hf_gpt2_f32/model.safetensors -t 16 -x 0 -g 0 -j "" -hf "$W/busy"
kill -9 $busy; wait $busy 2> /dev/null
if ./train_gpt2 "${WT[@]}" -x 2 -o "$W/busy" -y 1 > "$W/after.log" 2>&1 \
      && grep -qE "removed [0-9]+ temporary files? that a killed run left" "$W/after.log" \
      && [ ! -e "$W/busy/model_99999999.bin.tmp" ]; then
    ok "the killed run's lock is gone: the next run takes the folder and removes its leftover .tmp"
else
    bad "after the holder was killed: $(tail -n 1 "$W/after.log")"
fi

# 3. the loss curve is never older than the checkpoint pair: a SIGKILL at each of the 8 renames of
# a run's two saves (strace injects it), then -y 1 to step 6: every resumed loss.tsv is the
# uninterrupted run's, byte for byte, and no resume reports a gap. Main renamed loss.tsv after
# the pair: a kill between them left loss.tsv a step behind, and the resume wrote `N-1 0 0`.
./train_gpt2 "${WT[@]}" -x 6 -o "$W/whole" > /dev/null 2>&1
if ! strace -f -qq -o /dev/null true 2> /dev/null; then
    echo "(strace cannot trace here: the kills at each rename are left to a machine where it can)"
else
    kills=""
    for k in 1 2 3 4 5 6 7 8; do
        rm -rf "$W/k$k"
        ( OMP_NUM_THREADS=1 strace -f -qq -o /dev/null -e trace=rename,renameat,renameat2 \
              -e inject=rename,renameat,renameat2:signal=KILL:when=$k ./train_gpt2 "${WT[@]}" -x 4 -o "$W/k$k" \
              > /dev/null 2>&1; true ) 2> /dev/null  # (true: the subshell, not bash, says "Killed")
        ./train_gpt2 "${WT[@]}" -x 6 -o "$W/k$k" -y 1 > "$W/k$k.log" 2>&1 || kills="$kills $k(exit $?)"
        cmp -s "$W/k$k/loss.tsv" "$W/whole/loss.tsv" || kills="$kills $k(loss.tsv differs)"
        ! grep -q "has no loss for" "$W/k$k.log" || kills="$kills $k(a gap)"
    done
    if [ -z "$kills" ]; then
        ok "a SIGKILL at each of the 8 renames of two saves, then -y 1: loss.tsv is the uninterrupted run's each time"
    else
        bad "a SIGKILL at a rename, then -y 1:$kills"
    fi
fi

# ... and a loss.tsv older than the checkpoint (a run of main's, or one restored by hand) is
# reported in one line, its missing steps a gap in loss.tsv, not rows of zeros (main: `2 0 0`)
head -n 2 "$W/whole/loss.tsv" > "$W/old_loss.tsv"
rm -rf "$W/gap"; ./train_gpt2 "${WT[@]}" -x 4 -o "$W/gap" > /dev/null 2>&1; cp "$W/old_loss.tsv" "$W/gap/loss.tsv"
if ./train_gpt2 "${WT[@]}" -x 6 -o "$W/gap" -y 1 > "$W/gap.log" 2>&1 \
      && grep -q "^-y 1: '$W/gap/loss.tsv' has no loss for steps 2-3 (2 of the 4 before the checkpoint): they stay a gap" "$W/gap.log" \
      && [ "$(cut -d' ' -f1 "$W/gap/loss.tsv" | tr '\n' ' ')" == "0 1 4 5 " ] && ! grep -q ' 0 0$' "$W/gap/loss.tsv" \
      && ! grep -q 'nan' "$W/gap/loss.svg"; then
    ok "a loss.tsv older than the checkpoint: $(grep 'has no loss' "$W/gap.log" | cut -c1-60)...; steps 2-3 stay a gap, no zero rows"
else
    bad "a loss.tsv older than the checkpoint: $(grep 'loss.tsv' "$W/gap.log"); rows $(cut -d' ' -f1 "$W/gap/loss.tsv" | tr '\n' ' ')"
fi

# 4. the issue's smaller messages, each its one line (main's answer in brackets)
expect_error "-l 1e-50" "flag -l: 1e-50 is below a float's range" ./train_gpt2 -l 1e-50 -x 1 -o ""  # ("expects a number")
mkdir -p "$W/vocab"; cp data/ref/hf_gpt2_f32/model.safetensors "$W/vocab/"
perl -pe 's/"vocab_size": 65/"vocab_size": 1099511627776/' data/ref/hf_gpt2_f32/config.json > "$W/vocab/config.json"
expect_error "config.json's vocab_size 2^40" "vocab_size is 1099511627776, larger than the 2^30" \
    ./train_gpt2 -e "$W/vocab/model.safetensors" -t 16 -x 0 -g 0  # ("must be a whole number >= 1")
mkfifo "$W/fifo"  # (main: blocked for ever, waiting for a writer)
expect_error "data/prepare -i a pipe with no writer" "fifo' is a pipe (FIFO), not a regular file" \
    with_timeout 20 ./data/prepare -i "$W/fifo"
rm -rf "$W/lone"; ./train_gpt2 "${WT[@]}" -x 4 -o "$W/lone" > /dev/null 2>&1; rm "$W/lone/state_00000004.bin"
if ./train_gpt2 "${WT[@]}" -x 6 -o "$W/lone" -y 1 > "$W/lone.log" 2>&1 \
      && grep -q "^-y 1: '$W/lone/model_00000004.bin' has no partner .*: resuming from the newest whole pair, step 2" "$W/lone.log" \
      && cmp -s "$W/lone/loss.tsv" "$W/whole/loss.tsv"; then
    ok "-y 1 where the newest model lacks its state: one line, the pair before it resumed, loss.tsv the uninterrupted run's"
else
    bad "-y 1 where the newest model lacks its state: $(grep -e '-y 1' "$W/lone.log")"  # (main: no line)
fi
limit_3gb="ulimit -v 3000000;"  # 3 GB of address space; none under AddressSanitizer, which reserves
[ -n "${ASAN_OPTIONS:-}" ] && limit_3gb=""  # terabytes of it (make asan: its memory checks instead)
(eval "$limit_3gb"; with_timeout 20 ./train_gpt2 -x 1000000000 -j "" -g 0 -o "" > "$W/x1e9.log" 2>&1)
if grep -q '^step     1/1000000000 | loss' "$W/x1e9.log"; then
    ok "-x 1000000000 ${limit_3gb:+under 3 GB of address space }trains (the loss curve grows with the steps)"
else
    bad "-x 1000000000 under 3 GB: $(grep -m1 error "$W/x1e9.log")"  # (main: out of memory allocating 4000000004 bytes)
fi
mkdir -p "$W/elsewhere"
if (cd "$W/elsewhere" && "$OLDPWD/train_seq2seq" -nl 1 -nh 2 -nc 16 -b 4 -x 1 -ne 8 -g 0 -o "" > ../s2s_elsewhere.log 2>&1) \
      && grep -q 'reverse_train.bin' "$W/s2s_elsewhere.log"; then
    ok "./train_seq2seq run from another directory finds its default data beside the program"
else
    bad "train_seq2seq from another directory: $(grep -m1 error "$W/s2s_elsewhere.log")"  # (main: cannot open)
fi
