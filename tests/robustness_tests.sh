# Nothing lost, nothing trusted (issue 38), sourced by tests/run_tests.sh (its ok, bad,
# expect_error, patch_int, TMP and counters): a damaged state file or checkpoint is refused
# in one line, a failed group of writes leaves every previous file as it was, a planted link
# is never written through, and the smaller defects of the issue each have their check.
echo "-- robustness: checksums, groups of writes, planted links"
R="$TMP/robust"; rm -rf "$R"; mkdir -p "$R/S"
slice data/tiny_shakespeare_val.bin 0 3000 "$R/S/shard_0.bin"
slice data/tiny_shakespeare_val.bin 5000 3000 "$R/S/shard_1.bin"
slice data/tiny_shakespeare_val.bin 10000 3000 "$R/S/shard_2.bin"
TINY=(-nl 1 -nh 2 -nc 16 -b 2 -t 16 -g 0 -v 0 -j "" -i "$R/S/shard_*.bin" -n 1)
./train_gpt2 "${TINY[@]}" -x 2 -o "$R/run" > /dev/null 2>&1
cp "$R/run/state_00000002.bin" "$R/state_good.bin"
at_byte() { printf "$2" | dd of="$1" bs=1 seek="$3" conv=notrunc 2> /dev/null; }  # at_byte FILE '\xNN' OFFSET

# 1. every field read back is checked: a version 2 state (no checksum) whose data pass is negative
# (byte 35 = 0x80: the issue's SIGSEGV in the data loader) is refused in one line
cp "$R/state_good.bin" "$R/run/state_00000002.bin"
patch_int "$R/run/state_00000002.bin" 1 2; patch_int "$R/run/state_00000002.bin" 255 0; patch_int "$R/run/state_00000002.bin" 19 0
at_byte "$R/run/state_00000002.bin" '\x80' 35
expect_error "a version 2 state with a negative data pass" "state_00000002.bin' is damaged: its data pass (slots 7-8) is out of range" \
    ./train_gpt2 "${TINY[@]}" -x 4 -o "$R/run" -y 1
cp "$R/state_good.bin" "$R/run/state_00000002.bin"
patch_int "$R/run/state_00000002.bin" 1 2; patch_int "$R/run/state_00000002.bin" 255 0; patch_int "$R/run/state_00000002.bin" 19 0
if ./train_gpt2 "${TINY[@]}" -x 3 -o "$R/run" -y 1 > "$R/v2.log" 2>&1 && grep -q 'resuming from .* at step 2' "$R/v2.log"; then
    ok "a version 2 state file (no checksum) is still resumed from"
else
    bad "a version 2 state file is not resumed from: $(tail -n 1 "$R/v2.log")"
fi
rm -f "$R/run/"*_00000003.bin

# 2. a checksum over header and payload: the same byte, and one of AdamW's moments, in a version 3 state;
# a byte of the parameters of our checkpoint versions (104: block variants, 201: the encoder-decoder)
for at in 35 2000; do
    cp "$R/state_good.bin" "$R/run/state_00000002.bin"; at_byte "$R/run/state_00000002.bin" '\x80' $at
    expect_error "a state file with byte $at changed" "state_00000002.bin' is damaged: its checksum (CRC-32C, header slot 255)" \
        ./train_gpt2 "${TINY[@]}" -x 4 -o "$R/run" -y 1
done
cp "$R/state_good.bin" "$R/run/state_00000002.bin"
./train_gpt2 -nl 1 -nh 2 -nc 16 -kv 1 -b 2 -t 16 -g 0 -v 0 -j "" -x 1 -o "$R/var" > /dev/null 2>&1
read -r -a vh <<< "$(header "$R/var/model_00000001.bin")"
at_byte "$R/var/model_00000001.bin" '\x01' 5000
expect_error "a version 104 checkpoint with a byte changed" "model_00000001.bin' is damaged: its checksum" \
    ./train_gpt2 -e "$R/var/model_00000001.bin" -t 16 -x 0 -g 0 -j ""
read -r -a gh <<< "$(header "$R/run/model_00000002.bin")"
last_slot=$(perl -e 'open(my $f, "<:raw", shift) or die; seek($f, 1020, 0); read($f, my $b, 4); print unpack("l<", $b)' "$R/run/model_00000002.bin")
if [ "${vh[1]}" == 104 ] && [ "${gh[1]}" == 3 ] && [ "$last_slot" == 0 ]; then
    ok "block variants are written as version 104 (checksummed); GPT-2 stays llm.c's version 3, slot 255 zero"
else
    bad "checkpoint versions: variants ${vh[1]}, GPT-2 ${gh[1]} with slot 255 = $last_slot"
fi
./train_seq2seq -nl 1 -nh 2 -nc 16 -b 4 -x 1 -ne 8 -g 0 -v 0 -o "$R/s2s" > /dev/null 2>&1
read -r -a sh2 <<< "$(header "$R/s2s/model_00000001.bin")"
cp "$R/s2s/state_00000001.bin" "$R/s2s_state.bin"
at_byte "$R/s2s/model_00000001.bin" '\x01' 3000
expect_error "a version ${sh2[1]} encoder-decoder checkpoint with a byte changed" "model_00000001.bin' is damaged: its checksum" \
    ./train_seq2seq -e "$R/s2s/model_00000001.bin" -x 0 -g 0
rm -rf "$R/s2s"; ./train_seq2seq -nl 1 -nh 2 -nc 16 -b 4 -x 1 -ne 8 -g 0 -v 0 -o "$R/s2s" > /dev/null 2>&1
at_byte "$R/s2s/state_00000001.bin" '\x40' 8
expect_error "an encoder-decoder state file with its step changed" "state_00000001.bin' is damaged: its checksum" \
    ./train_seq2seq -nl 1 -nh 2 -nc 16 -b 4 -x 2 -ne 8 -g 0 -v 0 -o "$R/s2s" -y 1

# 3. a group of writes lands whole or not at all: loss.svg that cannot be written (a directory by its
# name) fails the step-3 checkpoint, and the step-2 loss.tsv, model and state stay as they were; an -hf
# export whose config.json cannot be written leaves the earlier export's model.safetensors in place
cp "$R/run/loss.tsv" "$R/loss_before.tsv"
rm "$R/run/loss.svg"; mkdir "$R/run/loss.svg"
expect_error "loss.svg that cannot be written" "loss.svg' exists and is not a regular file (a directory)" \
    ./train_gpt2 "${TINY[@]}" -x 4 -o "$R/run" -y 1
left=$(cd "$R/run" && ls | tr '\n' ' ')
if cmp -s "$R/run/loss.tsv" "$R/loss_before.tsv" \
      && [ "$left" == "loss.svg loss.tsv model_00000001.bin model_00000002.bin state_00000001.bin state_00000002.bin " ]; then
    ok "a failed checkpoint at loss.svg leaves the previous loss.tsv, model and state as they were ($left)"
else
    bad "a failed checkpoint at loss.svg: loss.tsv $(cmp -s "$R/run/loss.tsv" "$R/loss_before.tsv" && echo kept || echo lost), left: $left"
fi
rmdir "$R/run/loss.svg"
./train_gpt2 -e data/ref/hf_gpt2_f32/model.safetensors -t 16 -x 0 -g 0 -j "" -hf "$R/hf" > /dev/null 2>&1
cp "$R/hf/model.safetensors" "$R/hf_before.safetensors"
rm "$R/hf/config.json"; mkdir "$R/hf/config.json"
expect_error "-hf whose config.json cannot be written" "config.json' exists and is not a regular file (a directory)" \
    ./train_gpt2 -e data/ref/hf_gpt2_f32/model.safetensors -t 16 -x 0 -g 0 -j "" -hf "$R/hf"
if cmp -s "$R/hf/model.safetensors" "$R/hf_before.safetensors" && [ ! -e "$R/hf/model.safetensors.tmp" ]; then
    ok "a failed -hf export leaves the earlier export's model.safetensors as it was, and no .tmp"
else
    bad "a failed -hf export removed or changed the earlier model.safetensors"
fi

# 4. temporary files are created new (O_CREAT|O_EXCL|O_NOFOLLOW): a link planted at a checkpoint's, an
# -am picture's or data/prepare's temporary name is refused, its target untouched; a killed run's
# stale .tmp files are removed on the next run into the folder
echo "precious" > "$R/victim.txt"
mkdir -p "$R/planted"; ln -s ../victim.txt "$R/planted/model_00000002.bin.tmp"
expect_error "a link planted at model_00000002.bin.tmp" "model_00000002.bin.tmp' is not a file a killed run left" \
    ./train_gpt2 "${TINY[@]}" -x 2 -o "$R/planted"
ln -s victim.txt "$R/pic.svg.tmp"
expect_error "a link planted at -am's temporary file" "pic.svg.tmp' exists and is not a file a killed run left" \
    ./train_gpt2 -nl 1 -nh 1 -nc 8 -x 0 -pr AB -am "$R/pic.svg" -o ""
ln -s victim.txt "$R/prep_train.bin.tmp"
expect_error "a link planted at data/prepare's temporary file" "prep_train.bin.tmp' exists and is not a file a killed run left" \
    ./data/prepare -i data/tiny_shakespeare.txt -o "$R/prep" -m char
if [ "$(cat "$R/victim.txt")" == precious ] && [ -L "$R/planted/model_00000002.bin.tmp" ]; then
    ok "the planted links' target is untouched"
else
    bad "a planted link was written through: $(head -c 40 "$R/victim.txt" | od -c | head -n 1)"
fi
mkdir -p "$R/stale"; echo half > "$R/stale/model_00000007.bin.tmp"; echo half > "$R/stale/loss.tsv.tmp"
echo mine > "$R/stale/notes.tmp"
if ./train_gpt2 "${TINY[@]}" -x 1 -o "$R/stale" > "$R/stale.log" 2>&1 \
      && grep -q "^-o: removed 2 temporary files that a killed run left in '$R/stale'" "$R/stale.log" \
      && [ ! -e "$R/stale/model_00000007.bin.tmp" ] && [ ! -e "$R/stale/loss.tsv.tmp" ] && [ -f "$R/stale/notes.tmp" ]; then
    ok "a killed run's stale .tmp files are removed, with a line, and no other file"
else
    bad "stale .tmp files: $(cd "$R/stale" && ls | tr '\n' ' ')"
fi

# 5. a path too long for the names that go in it is refused before any work, not cut short: -o of
# 4,079 characters (main wrote model_00000001. without .bin), -hf of the same (main wrote both files
# into one, config.json.tm)
long="$R/long"; seg=$(printf '%0250d' 0 | tr 0 d)
while [ ${#long} -lt 3800 ]; do long="$long/$seg"; done
long="$long/$(printf "%0*d" $((4079 - ${#long} - 1)) 0 | tr 0 e)"
mkdir -p "$long"
expect_error "-o of ${#long} characters" "-o: the directory's path is ${#long} characters; at most 4047 fit" \
    ./train_gpt2 "${TINY[@]}" -x 1 -o "$long"
expect_error "-hf of ${#long} characters" "-hf: the directory's path is ${#long} characters; at most 4047 fit" \
    ./train_gpt2 -e data/ref/hf_gpt2_f32/model.safetensors -t 16 -x 0 -g 0 -j "" -hf "$long"
if [ -z "$(ls "$long")" ]; then ok "nothing was written into the too-long directories"; else bad "written into the too-long -o: $(ls "$long")"; fi

# 6. weights that are nan or inf are refused on load (main: exit 0, "val loss -nan", garbage samples)
cp data/ref/ref_a_model.bin "$R/nan_model.bin"; at_byte "$R/nan_model.bin" '\x00\x00\xc0\x7f' 1028
expect_error "an llm.c checkpoint with a nan weight" "nan_model.bin': weight 1 of " \
    ./train_gpt2 -e "$R/nan_model.bin" -t 16 -x 0 -g 0
mkdir -p "$R/nan_hf"; cp data/ref/hf_gpt2_f32/config.json "$R/nan_hf/"
perl -e 'open(my $f, "<:raw", shift) or die; local $/; my $b = <$f>; my $n = unpack("Q<", substr($b, 0, 8));
         substr($b, 0, 8 + $n) =~ /"wte.weight":\{[^}]*"data_offsets":\[(\d+),/ or die;
         substr($b, 8 + $n + $1 + 8, 4) = pack("f<", 9**9**9); open(my $o, ">:raw", shift) or die; print $o $b' \
    data/ref/hf_gpt2_f32/model.safetensors "$R/nan_hf/model.safetensors"
expect_error "a safetensors file with an inf in wte" "model.safetensors': weight 2 of " \
    ./train_gpt2 -e "$R/nan_hf/model.safetensors" -t 16 -x 0 -g 0

# 9. the batch is checked against the pairs before anything of its size is allocated (main: an int
# overflow in the decode cache's size, UBSan, then a request for 36 TB)
expect_error "train_seq2seq -b 1000000000" "has 19000 pairs, fewer than one batch (-b 1000000000)" \
    ./train_seq2seq -b 1000000000 -x 2 -o ""

# 7. the safetensors reader's checks are n log n: 200,000 empty tensors (11.7 MB) are refused within
# 20 s (main: a pairwise duplicate-name check, 105 s)
perl -e 'my $h = "{" . join(",", map { "\"t$_\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}" } 0 .. 199999) . "}";
         $h .= " " x ((8 - length($h) % 8) % 8); open(my $o, ">:raw", shift) or die; print $o pack("Q<", length $h), $h' \
    "$R/many.safetensors"
expect_error "200,000 empty tensors, within 20 s" "many.safetensors': without config.json the shape is read from wte.weight" \
    with_timeout 20 ./train_gpt2 -e "$R/many.safetensors" -x 0 -g 0
rm -f "$R/many.safetensors"

# 8. a key twice in config.json is refused (Python's json keeps the last value, main the first);
# tie_word_embeddings false without lm_head.weight gets a one-line note
mkdir -p "$R/dup" "$R/untied_note"; cp data/ref/hf_gpt2_f32/model.safetensors "$R/dup/"
cp data/ref/hf_gpt2_f32/model.safetensors "$R/untied_note/"
perl -pe 's/^\{/{ "n_layer": 1,/' data/ref/hf_gpt2_f32/config.json > "$R/dup/config.json"
expect_error "config.json with n_layer twice" "config.json': the key \"n_layer\" appears twice" \
    ./train_gpt2 -e "$R/dup/model.safetensors" -t 16 -x 0 -g 0
perl -pe 's/^\{/{ "tie_word_embeddings": false,/' data/ref/hf_gpt2_f32/config.json > "$R/untied_note/config.json"
if ./train_gpt2 -e "$R/untied_note/model.safetensors" -t 16 -x 0 -g 0 -j "" > "$R/untied.log" 2>&1 \
      && grep -q "^note: .*says tie_word_embeddings false, but .* has no lm_head.weight" "$R/untied.log"; then
    ok "tie_word_embeddings false without lm_head.weight: $(grep -m1 '^note: .*tie_word' "$R/untied.log" | cut -c1-90)..."
else
    bad "tie_word_embeddings false without lm_head.weight: no note ($(grep -c tie_word "$R/untied_note/config.json") in config.json)"
fi

# 10. messages that come at once and say what is wrong
expect_error "train_seq2seq -am without -j refused before training" "-am needs held-out pairs (-j)" \
    with_timeout 20 ./train_seq2seq -nl 1 -nh 2 -nc 16 -b 4 -x 100000 -j "" -o "" -am "$R/x.svg"
expect_error "-x 0 -g 0 -hf of a maxT-16 model with -t 64" "-t 64 is larger than the model's maxT 16" \
    ./train_gpt2 -e data/ref/hf_gpt2_f32/model.safetensors -x 0 -g 0 -hf "$R/hf_not_made"
if [ ! -e "$R/hf_not_made" ]; then ok "... and -hf's directory was not created"; else bad "-hf's directory was created before the refusal"; fi
expect_error "a checkpoint read from a pipe" "has no size (a pipe?): it must be a regular file" \
    bash -c "cat data/ref/ref_a_model.bin | ./train_gpt2 -e /dev/stdin -x 0 -g 0"
cp data/reverse_val.bin "$R/pairs_n.bin"; patch_int "$R/pairs_n.bin" 2 2147483647
expect_error "a pair file claiming 2^31-1 pairs" "pairs_n.bin' is truncated: 2147483647 pairs need at least" \
    ./train_seq2seq -e "$R/s2s/model_00000001.bin" -j "$R/pairs_n.bin" -x 0
big_prompt=$(perl -e 'print "ROMEO:\nBut soft, what light\n" x 4000')  # 112,000 bytes (less the last \n)
./train_gpt2 -nl 1 -nh 1 -nc 8 -x 0 -g 4 -pr "$big_prompt" > /dev/null 2> "$R/big_prompt.err"
if [ "$(wc -l < "$R/big_prompt.err")" -eq 1 ] && [ "$(wc -c < "$R/big_prompt.err")" -lt 300 ] \
      && grep -qF "error: 'ROMEO:\nBut soft, what light\nROMEO:\nBut s... (111999 bytes)' is 111999 tokens" \
         "$R/big_prompt.err"; then
    ok "a 112 KB -pr is quoted by its first 40 bytes in one line: $(cut -c1-100 "$R/big_prompt.err")..."
else
    bad "a 112 KB -pr: $(wc -l < "$R/big_prompt.err") lines, $(wc -c < "$R/big_prompt.err") bytes: $(cut -c1-150 "$R/big_prompt.err")"
fi
cp "$R/S/shard_0.bin" "$R/run[1].bin"
if ./train_gpt2 -nl 1 -nh 2 -nc 16 -b 2 -t 16 -g 0 -v 0 -j "" -x 1 -o "" -i "$R/run[1].bin" > "$R/bracket.log" 2>&1; then
    ok "-i 'run[1].bin' (a name with a wildcard character, matching nothing but itself) is read as that file"
else
    bad "-i 'run[1].bin': $(head -n 1 "$R/bracket.log")"
fi
expect_error "a missing -i names its flag" "-i '$R/no_such.bin': No such file" ./train_gpt2 -i "$R/no_such.bin" -x 1 -o ""
expect_error "a missing -j names its flag" "-j '$R/no_such.bin': No such file" ./train_gpt2 -j "$R/no_such.bin" -x 1 -o ""
expect_error "a missing -e names its flag" "-e '$R/no_such.bin': No such file" ./train_gpt2 -e "$R/no_such.bin" -x 0
expect_error "a fresh model's shape out of range names its flags" "the fresh model (-nl, -nh, -nc, -mt, -kv, -ff): model shape out of range" \
    ./train_gpt2 -nc 100000 -x 1 -o ""
expect_error "data/prepare -o DIR/" "-o '$R/' is a prefix of file names" ./data/prepare -i data/tiny_shakespeare.txt -o "$R/"
mkfifo "$R/a_fifo"  # (main wrote a_fifo_train.bin, and for -o /dev/full three files into /dev)
expect_error "data/prepare -o naming a pipe" "-o '$R/a_fifo' is a device or other special file" \
    ./data/prepare -i data/tiny_shakespeare.txt -o "$R/a_fifo"
