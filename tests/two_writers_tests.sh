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
