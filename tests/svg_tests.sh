# sourced by tests/run_tests.sh (ok, bad, TMP, SMALL): every SVG the programs write is well-formed XML
# whatever the text in it, and says what it shows (units, scale, final values)

# GPT-2's byte-level BPE splits Chinese characters and emoji between tokens: their bytes are shown
# as \xNN, never written raw (which made the file invalid UTF-8); long labels read upwards
cjk=$'世界, 你好 😀🎉 a&b<c>"d\'e'
./train_gpt2 -tok data/gpt2_tokenizer.bin -pr "$cjk" -am "$TMP/bpe_cjk.svg" > "$TMP/bpe_cjk.log" 2>&1
if res=$(python3 tests/xml_wellformed.py "$TMP/bpe_cjk.svg") && grep -q '>\\xE4\\xB8<' "$TMP/bpe_cjk.svg" \
      && grep -q '>&lt;<' "$TMP/bpe_cjk.svg" && grep -q 'class="tick"[^>]*rotate(-90' "$TMP/bpe_cjk.svg"; then
    ok "-am with a Chinese and emoji BPE prompt: well-formed XML, split characters' bytes as \\xNN, the keys' labels rotated"
else
    bad "-am with a Chinese and emoji BPE prompt: ${res:-no \\xE4\\xB8 label, no &lt; or no rotated labels}"
fi

# a run directory and a model path with & < " ' in them: the titles of loss.svg and of the maps
odd="$TMP/a&b<c\"d'e"
./train_gpt2 "${SMALL[@]}" -x 2 -o "$odd" > /dev/null 2>&1
./train_gpt2 -e "$odd/model_00000002.bin" -x 0 -g 0 -pr "a&b'c" -am "$odd/att.svg" > /dev/null 2>&1
if res=$(python3 tests/xml_wellformed.py "$odd/loss.svg" "$odd/att.svg") \
      && grep -q 'a&amp;b&lt;c&quot;d&apos;e' "$odd/loss.svg" && grep -q 'a&amp;b&lt;c&quot;d&apos;e' "$odd/att.svg"; then
    ok "a run directory named a&b<c\"d'e: loss.svg and the attention maps are well-formed, the name escaped in their titles"
else
    bad "a run directory named a&b<c\"d'e: ${res:-the titles are not escaped}"
fi

# the pictures say what they show: the loss's unit and final values, the colour bar's scale, a width
# that fits a README (doc/README.md's prompt of 57 characters: two panels side by side, 960 px)
curve="$TMP/curve/loss.svg"
finals=$(grep -c '<text class="final"' "$curve" 2> /dev/null)
if grep -q '>loss (nats/token)<' "$curve" && [ "$finals" -eq 2 ] && grep -q 'class="final"[^>]*>val [0-9.]*<' "$curve" \
      && grep -q 'attention weight: a probability, 0 to 1, coloured by its square root' "$TMP/doc_att.svg" \
      && grep -q '<svg [^>]*width="960" [^>]*viewBox="0 0 960 ' "$TMP/doc_att.svg"; then
    ok "loss.svg: the axis in nats/token, the final train and validation losses written; the maps' colour bar says its scale; 960 px wide"
else
    bad "pictures' labels: $finals final values; unit, colour scale or width missing"
fi

# every SVG that make test wrote, those of train_seq2seq included
svgs=()  # (bash 3.2, macOS's, has no mapfile)
while IFS= read -r file; do svgs+=("$file"); done < <(find "$TMP" -name '*.svg' | sort)
if res=$(python3 tests/xml_wellformed.py "${svgs[@]}"); then ok "all ${#svgs[@]} SVGs written by make test are well-formed XML"
else bad "SVGs not well-formed: $res"; fi
