#!/usr/bin/env bash
# A block variant's new value must be handled at every dispatch site, or the build fails.
# train_gpt2.h's option enums (PosEncoding, LnPlace, Activation, Mask) are dispatched by
# switches that name every value, with no default, and the Makefile's WARN has
# -Wswitch-enum (CI fails on any warning). For each enum this script compiles a mutant
# with one value added and nothing else changed, with -Werror=switch-enum, and requires
# the build to fail naming the new value; the unchanged sources must compile cleanly.
# Both programs that include train_gpt2.c are compiled (train_gpt2, train_seq2seq), and
# both compilers when present (CC, and clang). Only the syntax is checked (-fsyntax-only:
# the warning comes from the front end), a few seconds. Then a checkpoint that would lose
# a setting (is_gpt2 without -act's term) must be refused when saved, naming the flag.
# Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0; fail=0
ok()  { echo "PASS $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

compilers=("${CC:-cc}")
command -v clang > /dev/null 2>&1 && [ "${CC:-cc}" != clang ] && compilers+=(clang)
FLAGS="-std=c11 -Wswitch-enum -Werror=switch-enum -Wno-unknown-pragmas -fsyntax-only"
mkdir -p "$work/src"
cp -r ./*.c ./*.h fast util "$work/src/"  # (every program at the top: what the two include)

# compile SRC_DIR: both programs with every compiler; the errors in $work/log
compile() {
    : > "$work/log"
    local rc=0 cc prog
    for cc in "${compilers[@]}"; do
        for prog in train_gpt2_main.c train_seq2seq_main.c; do
            (cd "$1" && $cc $FLAGS "$prog") >> "$work/log" 2>&1 || rc=1
        done
    done
    return $rc
}

if compile "$work/src"; then
    ok "the sources compile with -Werror=switch-enum (${compilers[*]})"
else
    bad "the sources do not compile with -Werror=switch-enum"; head -n 20 "$work/log"
fi

for enum in PosEncoding LnPlace Activation Mask; do
    rm -rf "$work/mutant"; cp -r "$work/src" "$work/mutant"
    # "typedef enum { A, B } Name;" -> "typedef enum { A, B, MUTANT_VALUE } Name;"
    sed -E "s/^(typedef enum \{[^}]*[^ }]) *\} $enum;/\1, MUTANT_VALUE } $enum;/" \
        train_gpt2.h > "$work/mutant/train_gpt2.h"
    if cmp -s train_gpt2.h "$work/mutant/train_gpt2.h"; then
        bad "$enum: no 'typedef enum { ... } $enum;' line in train_gpt2.h to add a value to"
        continue
    fi
    if compile "$work/mutant"; then
        bad "$enum with a value no switch handles: the build succeeded"
    elif grep -q "MUTANT_VALUE" "$work/log"; then
        sites=$(grep -c "MUTANT_VALUE.*not handled" "$work/log")
        ok "$enum with a value no switch handles: the build fails ($sites reports of the unhandled value," \
           "e.g. $(grep -m1 "MUTANT_VALUE.*not handled" "$work/log" | sed "s|$work/mutant/||"))"
    else
        bad "$enum: the mutant's build failed without naming the new value"; head -n 5 "$work/log"
    fi
done
# a setting that the checkpoint would lose is refused at save time, naming its flag: a mutant
# whose is_gpt2 forgets -act writes a ReLU model as GPT-2's version 3 (llm.c's, with no slot
# for it), and gpt2_write_checkpoint's check must refuse to, leaving no file
rm -rf "$work/lost"; cp -r "$work/src" "$work/lost"; mkdir -p "$work/lost/out"
sed 's/c\.activation == ACT_GELU && //' train_gpt2.c > "$work/lost/train_gpt2.c"
root=$(pwd)
if cmp -s train_gpt2.c "$work/lost/train_gpt2.c"; then
    bad "is_gpt2 has no 'c.activation == ACT_GELU && ' term to remove"
elif ! (cd "$work/lost" && ${CC:-cc} -std=c11 -O1 -fopenmp -o train_gpt2 train_gpt2_main.c -lm) > "$work/log" 2>&1; then
    bad "the mutant without -act in is_gpt2 did not build"; head -n 5 "$work/log"
elif (cd "$work/lost" && ./train_gpt2 -nl 1 -nh 2 -nc 16 -b 2 -t 16 -x 1 -v 0 -g 0 -act relu -o out \
        -i "$root/data/tiny_shakespeare_train.bin" -j "$root/data/tiny_shakespeare_val.bin" \
        -tok "$root/data/tiny_shakespeare_tokenizer.bin") > "$work/log" 2>&1; then
    bad "a ReLU model that is_gpt2 calls GPT-2 was saved"
elif grep -q "cannot hold -act 1" "$work/log" && [ ! -e "$work/lost/out/model_00000001.bin" ]; then
    ok "a setting the checkpoint would lose is refused at save time: $(grep -m1 'cannot hold' "$work/log" |
        sed "s|$work/lost/||")"
else
    bad "a setting the checkpoint would lose: no line naming -act, or a file left"; tail -n 3 "$work/log"
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
