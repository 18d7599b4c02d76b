#!/usr/bin/env bash
# Mutation check: the tests must catch every small error in the backward code, wherever it
# lives: every *_backward function of train_gpt2.c and fast/matmul.h, and the kernels the
# backward passes hand their sums to (add_weighted_rows and its register kernel in
# fast/rows.h, bias_grad_share in fast/matmul.h). One line at a time, it
#   - flips the sign of each accumulation (+= to -=),
#   - negates the value of each assignment to a gradient (a variable whose name starts
#     with d: "dinp[i] = e;" becomes "dinp[i] = -(e);"), except assignments of constants,
#   - in the vector kernels, turns a fused multiply-add into a multiply-subtract
#     (AVX-512's _mm512_fmadd_ps to _mm512_fnmadd_ps, AVX2's _mm256_, NEON's vfmaq_f32 to
#     vfmsq_f32) and an addition of a loaded vector into a subtraction,
#   - flips the accumulate flag of an sgemm_share call (written <-> added), and makes a
#     grouped-query head write its K/V gradient instead of adding it (matmul_AtB_add ->
#     matmul_AtB),
#   - loads Hugging Face's GPT-2 without the transpose of one Conv1D weight (util/hf_gpt2.h),
# and requires test_gpt2 to fail on every mutant (CHECK_STOP_AT_FAIL=1: it stops at its
# first failing check, which is printed). train_seq2seq.c's backward passes (the
# encoder-decoder) are mostly calls of the layers above; there each call statement is
# switched off instead ("if (0) " before it: a lost gradient term, such as one decoder
# layer's part of the memory's gradient, or a layernorm's backward), and test_seq2seq must
# fail on every mutant. MUTATE_FILES="FILE ..." picks files. Only the lines that the build
# compiles are mutated: the preprocessor says which, for ARCH (as the Makefile's: default
# -march=native; ARCH= for any CPU of the architecture), so the kernel of that build is
# tested (AVX-512, AVX2, NEON, or the plain C), not the branches beside it. Loop headers and
# comments are left alone. MUTATE_LIST=1 lists the mutants and builds nothing.
# Last line: "N passed, M failed" (passed = the tests caught it).
set -u
cd "$(dirname "$0")/.."
source tests/posix.sh  # with_timeout
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
files=(${MUTATE_FILES:-train_gpt2.c fast/matmul.h fast/rows.h train_seq2seq.c})
cp -r train_gpt2.c train_gpt2.h train_gpt2_parallel.c train_gpt2_main.c test_gpt2.c train_seq2seq.c test_seq2seq.c \
    fast util "$work/"
mkdir -p "$work/tests" && cp tests/*.h "$work/tests/"  # the headers test_gpt2.c and test_seq2seq.c include
CC=${CC:-cc}
ARCH=${ARCH--march=native}
CFLAGS="-O1 $ARCH -fopenmp -std=c11"

# prints "LINE<TAB>mutated line" for every mutation of the functions of interest in file $1
candidates() {
    DELETE_CALLS=$([ "$1" == train_seq2seq.c ] && echo 1 || echo 0) perl -ne '
        $inside = 1 if /^(static )?((inline|ALWAYS_INLINE|NOINLINE) )*(void|float) ([a-z0-9_]+_backward(_plain|_in)?|add_weighted_rows|weighted_rows_kernel|bias_grad_share)\(|^#define ADD_WEIGHTED_ROWS_BLOCK/;
        if ($inside) {
            my ($code, $comment) = split(m{//}, $_, 2);
            my ($head, $body) = $code =~ /^(\s*for\s*\(.*?\)\s*)(.*)$/s ? ($1, $2) : ("", $code);
            my $mutated = 1;
            if ($ENV{DELETE_CALLS}) {
                my $keyword = $body =~ /^\s*(if|for|while|return|die|sizeof)\b/;
                $mutated = !$keyword && $body =~ /^(\s*)([a-z][a-z0-9_]*\(.*)$/s;
                $body = "$1if (0) $2" if $mutated;
            } elsif ($body =~ /\+=/) {
                $body =~ s/(.*)\+=/$1-=/s;
            } elsif ($body =~ /^(\s*)(d\w*(?:\[[^\]]*\])?)\s*=\s*(.+);\s*$/s && $3 !~ /^[-+0-9.ef]+$/) {
                $body = "$1$2 = -($3);\n";
            } elsif ($body =~ /_mm(512|256)_fmadd_ps\(/) {
                $body =~ s/_mm(512|256)_fmadd_ps\(/_mm$1_fnmadd_ps(/;
            } elsif ($body =~ /_mm(512|256)_add_ps\(_mm(512|256)_loadu_ps\(/) {
                $body =~ s/_mm(512|256)_add_ps\(_mm(512|256)_loadu_ps\(/_mm$1_sub_ps(_mm$2_loadu_ps(/;
            } elsif ($body =~ /\bvfmaq_f32\(/) {
                $body =~ s/\bvfmaq_f32\(/vfmsq_f32(/;
            } elsif ($body =~ /\bvaddq_f32\(vld1q_f32\(/) {
                $body =~ s/\bvaddq_f32\(vld1q_f32\(/vsubq_f32(vld1q_f32(/;
            } elsif ($body =~ /matmul_AtB_add\(/) {
                $body =~ s/matmul_AtB_add\(/matmul_AtB(/;
            } elsif ($body =~ /sgemm_share\(.*, ([01]), NULL\);/) {
                my $flip = $1 eq "1" ? "0" : "1";
                $body =~ s/, [01], NULL\);/, $flip, NULL);/;
            } else {
                $mutated = 0;
            }
            if ($mutated) {
                my $line = $head . $body . (defined $comment ? "//" . $comment : "");
                chomp $line; print "$.\t$line\n";
            }
        }
        $inside = 0 if /^}/;' "$1"
}
# live FILE: the line numbers of FILE's mutants that the build compiles. Each candidate line is
# marked with a token (before a // comment or a macro's trailing backslash), the test program
# is preprocessed with the build's flags, and the tokens that come out name the live lines (a
# line of a macro, where the macro is expanded)
live() {
    local file="$1" test=test_gpt2
    [ "$file" == train_seq2seq.c ] && test=test_seq2seq
    candidates "$file" | cut -f1 | awk 'NR == FNR { want[$1] = 1; next }
        FNR in want { mark = " MUTANT_LIVE_" FNR " "
                      if (match($0, /\/\//)) $0 = substr($0, 1, RSTART - 1) mark substr($0, RSTART)
                      else if (/\\$/) $0 = substr($0, 1, length($0) - 1) mark "\\"
                      else $0 = $0 mark }
        { print }' - "$file" > "$work/$file"
    $CC $CFLAGS -E "$work/$test.c" 2> /dev/null | grep -oE 'MUTANT_LIVE_[0-9]+' | sort -u | cut -d_ -f3
    cp "$file" "$work/$file"
}
# try_mutant DIR FILE LINE MUTATED: the test program built in DIR (a copy of the sources) with
# that line replaced must fail; prints one PASS or FAIL line
try_mutant() {
    local dir="$1" file="$2" n="$3" mutated="$4" test=test_gpt2 what first
    [ "$file" == train_seq2seq.c ] && test=test_seq2seq
    awk -v n="$n" -v m="$mutated" 'NR == n { print m; next } { print }' "$file" > "$dir/$file"
    what="$file:$n: $(echo "$mutated" | sed 's/^ *//')"
    if ! $CC $CFLAGS -DFAST_GEMM_SEPARATE -o "$dir/$test" "$dir/$test.c" "$GEMM_OBJ" -lm 2> "$dir/cc.log"; then
        echo "FAIL $what does not compile when mutated"
    elif (cd "$root" && CHECK_STOP_AT_FAIL=1 with_timeout 120 "$dir/$test" > "$dir/out.log" 2>&1); then
        echo "FAIL $what: mutant not caught"
    else
        first=$(grep -m 1 '^FAIL' "$dir/out.log" | cut -c 1-100)
        echo "PASS $what caught (${first:-exit status not 0, no check failed})"
    fi
    cp "$file" "$dir/$file"
}
# every mutant as "FILE<TAB>LINE<TAB>mutated line"
list_mutants() {
    local file
    for file in "${files[@]}"; do
        live "$file" > "$work/live"
        [ -s "$work/live" ] || echo "FAIL $file: no line of it is compiled ($CC $CFLAGS -E)" >> "$work/dead"
        candidates "$file" | awk -F'\t' 'NR == FNR { live[$1] = 1; next } $1 in live' "$work/live" - |
            sed "s|^|$file	|"
    done
    # Hugging Face's GPT-2 loaded without one of its four Conv1D transposes (util/hf_gpt2.h's
    # HF_LAYER, the last flag; attn.c_proj is square, so its shapes still fit): caught too
    perl -ne 'if (s/^(\s*\{"[a-z_.]+\.weight", \d+, \d+, \d+, )1\}/${1}0}/) { chomp; print "util/hf_gpt2.h\t$.\t$_\n" }' \
        util/hf_gpt2.h
    # the memory's gradient written instead of added (train_seq2seq.c, branch_backward): the
    # decoder runs top down, so only the lowest layer's term survives (the "if (0)" mutant of
    # the same line loses every layer's term): caught too
    if [[ " ${files[*]} " == *" train_seq2seq.c "* ]]; then
        perl -ne 'if (s/^(\s*)residual_forward\((g->dmemory), g->dmemory, (g->dmemory_l), (.*)\);/${1}memcpy($2, $3, sizeof(float) * $4);/) { chomp; print "train_seq2seq.c\t$.\t$_\n" }' \
            train_seq2seq.c
    fi
}
: > "$work/dead"
list_mutants > "$work/mutants"
if [ "${MUTATE_LIST:-0}" == 1 ]; then cat "$work/dead" "$work/mutants"; exit 0; fi
# the matrix multiply (fast/gemm.c: no line of it is mutated) compiled once, as make does, and
# linked into every mutant (-DFAST_GEMM_SEPARATE: fast/gemm.h then declares it only; the object
# shares util/io.h's state with the mutant, -DUTIL_IO_EXTERN, as make's does)
GEMM_OBJ="$work/gemm.o"
$CC $CFLAGS -DUTIL_IO_EXTERN -c -o "$GEMM_OBJ" fast/gemm.c || { echo "FAIL fast/gemm.c does not compile"; echo "0 passed, 1 failed"; exit 1; }
# MUTATE_JOBS workers (default: one per CPU; compiling a mutant is most of its time), each in a
# copy of the sources of its own, worker j trying mutants j, j + J, ...; each line printed as
# its mutant is done
jobs=${MUTATE_JOBS:-$(cpu_count)}
for ((j = 0; j < jobs; j++)); do
    mkdir "$work/w$j" && cp -r "$work"/*.c "$work"/*.h "$work"/fast "$work"/util "$work"/tests "$work/w$j/"
    awk -v j=$j -v J=$jobs '(NR - 1) % J == j { print NR "\t" $0 }' "$work/mutants" |
        while IFS=$'\t' read -r k file n mutated; do
            try_mutant "$work/w$j" "$file" "$n" "$mutated" | tee "$work/result.$k"
        done &
done
wait
cat "$work/dead"
total=$(wc -l < "$work/mutants")
for ((k = 1; k <= total; k++)); do cat "$work/result.$k" 2> /dev/null || echo "FAIL mutant $k: no result"; done \
    > "$work/results"
grep '^FAIL mutant' "$work/results"
pass=$(grep -c '^PASS' "$work/results"); fail=$(($(grep -c '^FAIL' "$work/results") + $(wc -l < "$work/dead")))
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
