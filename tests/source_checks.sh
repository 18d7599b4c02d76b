# sourced by tests/run_tests.sh (ok, bad, TMP, capture): the checks that read the docs, the scripts
# and the sources, and compile the sources with flags of their own. None depends on how the
# checkout was built, so CI runs them once, in its first make test; its other builds of the same
# sources (make asan; the AVX2, baseline and BLAS=1 copies skip them with TEST_SCOPE=build) set
# SOURCE_CHECKS=0 (.ci/run).

# ---- 10. doc/*.md against the sources (tests/doc_check.py): every quoted line, name, step
# label, check name and "F calls G" must match the code it names; stale lines come as file:line
if doc_out=$(python3 tests/doc_check.py 2>&1); then
    ok "doc/*.md: $(tail -n 1 <<< "$doc_out")"
else
    bad "doc/*.md has stale quotes (python3 tests/doc_check.py):"; grep -v '^doc check:' <<< "$doc_out"
fi
# the checker can fail: tests/doc_check_stale.md plants 8 stale quotes of the kinds issue 26
# found (a mask, the dropout hash, a call moved to another function, a step label, a check
# renamed, an erratum's test, the first loss); each must come back as its file:line
stale_out=$(python3 tests/doc_check.py tests/doc_check_stale.md 2>&1); stale_rc=$?
stale_lines=$(grep -c "^tests/doc_check_stale.md:[0-9]*: " <<< "$stale_out")
if [ $stale_rc -ne 0 ] && [ "$stale_lines" -eq 8 ] && grep -q "stale.md:10: .splitmix64(m->key" <<< "$stale_out"; then
    ok "doc check catches the 8 stale quotes of a planted page, each as file:line"
else
    bad "doc check on a planted page: exit $stale_rc, $stale_lines of 8 stale lines:"; echo "$stale_out"
fi

# ---- 10c. the scripts stay portable to macOS (BSD tools, bash 3.2) and MSYS2: tests/posix_check.sh
# names each GNU-only or bash-4 spelling in the Makefile, tests/*.sh and bench/run_bench.sh as file:line
if posix_out=$(bash tests/posix_check.sh 2>&1); then
    ok "the scripts are portable: $(tail -n 1 <<< "$posix_out")"
else
    bad "GNU-only or bash-4 spellings in the scripts (bash tests/posix_check.sh):"; echo "$posix_out"
fi
# the checker can fail: tests/posix_check_planted.txt plants one line of each kind it knows (each
# ends in "# flagged") among portable lines; exactly the planted lines must come back as file:line
planted=$(grep -n '# flagged$' tests/posix_check_planted.txt | cut -d: -f1 | tr '\n' ' ')
planted_out=$(bash tests/posix_check.sh tests/posix_check_planted.txt 2>&1); planted_rc=$?
named=$(capture '^tests/posix_check_planted[.]txt:([0-9]+): ' <<< "$planted_out" | sort -un | tr '\n' ' ')
kinds=$(capture '([0-9]+) kinds of GNU-only' <<< "$planted_out")
if [ $planted_rc -ne 0 ] && [ -n "$planted" ] && [ "$named" == "$planted" ] \
      && grep -q "found ($kinds kinds)" <<< "$planted_out"; then
    ok "posix check names the $(wc -w <<< "$planted" | tr -d ' ') planted lines, each as file:line, all $kinds kinds, and no portable line"
else
    bad "posix check on tests/posix_check_planted.txt: exit $planted_rc, named lines '$named', planted '$planted':"
    echo "$planted_out"
fi

# ---- 10b. the build. Every program compiles without a warning under gcc (at -O0, where gcc
# still reports unused functions and a few uninitialised values) and clang (its front end),
# and train_gpt2_main.c with MPI; a few seconds. The -O3 builds from a fresh copy, with both
# compilers and MPI, are CI's (tests/build_check.sh).
compile_checks=("gcc -O0 -c -o /dev/null" "clang -fsyntax-only")
command -v mpicc > /dev/null && compile_checks+=("mpicc -DUSE_MPI -O0 -c -o /dev/null")
for cc in "${compile_checks[@]}"; do
    command -v ${cc%% *} > /dev/null || { bad "${cc%% *} is not installed"; continue; }
    warned=""
    # each as one file, and as make compiles the pieces of train_gpt2 and test_gpt2 (the story
    # apart: its programs against train_gpt2.h, the objects beside them sharing util/io.h's state)
    srcs=(fast/gemm.c train_gpt2.c train_gpt2_parallel.c train_gpt2_main.c test_gpt2.c train_seq2seq_main.c test_seq2seq.c
          data/prepare.c data/make_pairs.c "-DUTIL_IO_EXTERN -DFAST_GEMM_SEPARATE train_gpt2.c"
          "-DUTIL_IO_EXTERN fast/gemm.c" "-DTRAIN_GPT2_SEPARATE -DFAST_GEMM_SEPARATE train_gpt2_main.c"
          "-DTRAIN_GPT2_SEPARATE -DFAST_GEMM_SEPARATE test_gpt2.c")
    [[ $cc == mpicc* ]] && srcs=(train_gpt2_main.c "-DTRAIN_GPT2_SEPARATE -DFAST_GEMM_SEPARATE train_gpt2_main.c")
    for src in "${srcs[@]}"; do
        # shellcheck disable=SC2086  # $src: the flags, then the file
        $cc -Wall -Wextra -Werror -std=c11 -fopenmp $src > "$TMP/warn.log" 2>&1 \
            || warned+="$src: $(grep -m1 -E 'error|warning' "$TMP/warn.log"); "
    done
    if [ -z "$warned" ]; then ok "${cc%% -o*} -Wall -Wextra: no warning in ${srcs[*]}"; else bad "${cc%% -o*} warns: $warned"; fi
done
# every header of fast/ and util/ compiles alone, included first (with the feature macros the
# programs define): it includes what it uses at its top, so none is a fragment that compiles
# only at a line of another file. util/, the ground floor, includes nothing outside util/
# and names no type of a model in its code (llm.c's llmc/*.h never names GPT2)
alone=""
for h in fast/*.h util/*.h train_gpt2.h; do
    printf '#include "%s"\nint main(void) { return 0; }\n' "$h" > "$TMP/alone.c"
    gcc -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I. -Wall -Wextra -Werror -std=c11 -fopenmp \
        -fsyntax-only "$TMP/alone.c" > "$TMP/alone.log" 2>&1 \
        || alone+="$h: $(grep -m1 -E 'error|warning' "$TMP/alone.log" | sed 's/^[^ ]* //'); "
done
if [ -z "$alone" ]; then ok "each of the $(ls fast/*.h util/*.h | wc -l | tr -d ' ') headers of fast/ and util/, and train_gpt2.h, compiles alone"
else bad "a header does not compile alone: $alone"; fi
upward=$(grep -nE '^#include "\.\./' util/*.h)
model=$(perl -0777 -ne 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g; s{"(\\.|[^"\\\n])*"}{""}g; print "$ARGV: $1\n" while /\b(GPT2\w*|Seq2Seq\w*|S2S\w*|ParameterTensors|ActivationTensors)\b/g' util/*.h | sort -u)
if [ -z "$upward$model" ]; then ok "util/ includes nothing outside util/ and names no model type"
else bad "util/ is not the ground floor: ${upward:+includes $upward; }${model:+names $(echo "$model" | tr '\n' ' ')}"; fi
# make CC=clang CFLAGS=-O2 (README) replaces the optimisation only: every compile line keeps
# -march=native, OpenMP and C11, and has -O2 and no -O3. The Makefile's defaults are checked
# whatever this make test was given: `make test ARCH=...` passes its ARCH down to every make
# below it (MAKEFLAGS, and the environment), so the inner make runs without them
for cc in cc clang; do
    command -v $cc > /dev/null || continue
    omp=""; printf 'int main(void){return 0;}' | $cc -fopenmp -x c - -o /dev/null 2> /dev/null && omp=-fopenmp
    lines=$(unset MAKEFLAGS MFLAGS MAKELEVEL ARCH CFLAGS
            make -n -B CC=$cc CFLAGS=-O2 MPI=0 train_gpt2 test_gpt2 train_seq2seq data/prepare 2> /dev/null \
            | grep -E "^$cc .*\.c")
    missing=""
    while read -r line; do
        for flag in -O2 -march=native -std=c11 $omp; do
            [[ " $line " == *" $flag "* ]] || missing+="${line##* -o } lacks $flag; "
        done
        [[ " $line " == *" -O3 "* ]] && missing+="${line##* -o } has -O3; "
    done <<< "$lines"
    n=$(grep -c . <<< "$lines")
    if [ "$n" -eq 6 ] && [ -z "$missing" ]; then
        ok "make CC=$cc CFLAGS=-O2: the 6 compile lines (fast/gemm.c's and train_gpt2.c's too) keep -march=native${omp:+, $omp} and -std=c11, with -O2"
    else
        bad "make CC=$cc CFLAGS=-O2: $n compile lines; $missing"
    fi
done
