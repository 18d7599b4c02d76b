#!/usr/bin/env bash
# CI: a fresh build prints no compiler warning, with gcc and with clang (README: "No
# compiler warnings"), and with MPI when mpicc is there. Each build runs in a fresh copy
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
        fi
    else
        bad "$name: the build fails:"; tail -n 30 "$dir/build.log"
    fi
    rm -rf "$dir"
}

build "gcc" CC=gcc MPI=0
if command -v clang > /dev/null; then build "clang" CC=clang MPI=0; else bad "clang is not installed"; fi
if command -v mpicc > /dev/null; then
    build "gcc with MPI" CC=gcc MPI=1
    command -v clang > /dev/null && build "clang with MPI" CC=clang MPI=1
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
