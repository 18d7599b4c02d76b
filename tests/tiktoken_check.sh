#!/usr/bin/env bash
# Our GPT-2 encoder (data/prepare -m bpe) against tiktoken's, token for token, on Tiny
# Shakespeare, the stress text tests/bpe_stress.txt and any files given as arguments.
# tiktoken is the oracle: the npm package, installed here into a scratch folder (or taken
# from TIKTOKEN_NODE_MODULES; tests/tiktoken_npm.sh pins its version), never part of the
# project. Needs node and npm; .ci/run installs them. Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
source tests/tiktoken_npm.sh  # $scratch, and $modules holding tiktoken
make -s data/prepare > /dev/null || { echo "FAIL data/prepare does not build"; echo "0 passed, 1 failed"; exit 1; }
pass=0; fail=0
for text in data/tiny_shakespeare.txt tests/bpe_stress.txt "$@"; do
    if ! ./data/prepare -i "$text" -o "$scratch/out" -m bpe > "$scratch/prepare.log" 2>&1; then
        echo "FAIL data/prepare -m bpe on $text: $(tail -n 1 "$scratch/prepare.log")"; fail=$((fail + 1)); continue
    fi
    if NODE_PATH="$modules" node tests/tiktoken_compare.js "$text" "$scratch/out_train.bin" "$scratch/out_val.bin" \
          data/gpt2_tokenizer.bin; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
    fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
