#!/usr/bin/env bash
# CI: a fresh build prints no compiler warning, with gcc and with clang (doc/tests.md: "Every
# program compiles without a warning"), and with MPI when mpicc is there. Each build runs in a fresh copy
# of the tracked files (the checkout's own build is left alone): `make` there must print
# no line with "warning" (a compiler's, or make's own). The last line is
# "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
pass=0; fail=0
ok()  { echo "PASS $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

build() {  # build NAME MAKE-ARGUMENTS...: a fresh copy, `make all`, no warning
    local name="$1"; shift
    local dir; dir=$(mktemp -d)
    git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$dir"
    if (cd "$dir" && make -j2 all "$@") > "$dir/build.log" 2>&1; then
        if grep -qi "warning" "$dir/build.log"; then
            bad "$name: the build prints warnings:"; grep -i -A3 "warning" "$dir/build.log" | head -n 40
        else
            ok "$name: a fresh make all, no warning"
            if [[ " $* " == *" TRAIN_CHECK=1 "* ]]; then  # OpenMP found: the run header says 2 threads
                if (cd "$dir" && OMP_NUM_THREADS=2 ./train_gpt2 -x 2 -v 0 -m 1 -g 0 -o "") > "$dir/run.log" 2>&1 \
                    && grep -q ', 2 threads$' "$dir/run.log"; then ok "$name: trains on 2 threads"
                else bad "$name: no 2-thread training run:"; head -n 5 "$dir/run.log"; fi
            fi
        fi
    else
        bad "$name: the build fails:"; tail -n 30 "$dir/build.log"
    fi
    rm -rf "$dir"
}

build "gcc" CC=gcc MPI=0
if command -v clang > /dev/null; then build "clang" CC=clang MPI=0; else bad "clang is not installed"; fi
build "gcc without OpenMP (single-threaded)" CC=gcc MPI=0 OMP_FLAGS=
# macOS's Apple clang, as a stand-in built from Linux's clang (tests/macos_standin.sh): it
# refuses -march=native and -fopenmp, and OpenMP comes from a Homebrew-style libomp through
# -Xclang -fopenmp. The build must find it, print no warning, and train on 2 threads.
if command -v clang > /dev/null; then
    standin=$(mktemp -d)
    if bash tests/macos_standin.sh "$standin"; then
        build "Apple clang's stand-in with Homebrew's libomp" CC="$standin/cc" MPI=0 LIBOMP="$standin/libomp" \
            TRAIN_CHECK=1
    else bad "Apple clang's stand-in: tests/macos_standin.sh failed"; fi
    rm -rf "$standin"
fi
if command -v mpicc > /dev/null; then
    build "gcc with MPI" CC=gcc MPI=1
    command -v clang > /dev/null && build "clang with MPI" CC=clang MPI=1
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
