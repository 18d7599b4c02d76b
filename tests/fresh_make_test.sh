#!/usr/bin/env bash
# CI: `make test MAKE-ARGUMENTS...` in a fresh copy of the tracked files, so that another
# build of the same checkout (make test ARCH=-march=x86-64-v3: an AVX2 laptop's kernels;
# ARCH=: any x86-64; BLAS=1) is tested whole without touching the checkout's own build.
# Its output ends with make test's "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$dir"
echo "make test $* (in a fresh copy: $dir)"
(cd "$dir" && make all "$@" > build.log 2>&1) || { tail -n 30 "$dir/build.log"; echo "0 passed, 1 failed"; rm -rf "$dir"; exit 1; }
grep -m 1 " -o train_gpt2 " "$dir/build.log" || true  # the flags it was built with
(cd "$dir" && make test "$@")
rc=$?
rm -rf "$dir"
exit $rc
