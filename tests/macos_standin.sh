#!/usr/bin/env bash
# tests/macos_standin.sh DIR: writes into DIR a stand-in for what the Makefile meets on a
# Mac, built from Linux's clang, so that tests/build_check.sh can build with it here (no
# macOS runs in CI): DIR/cc, a driver that refuses what Apple clang 14 refuses
# (-march=native and -mcpu=native on arm64, -fopenmp without -Xclang) and whose own
# headers have no omp.h, and DIR/libomp/{include,lib}, laid out as Homebrew's libomp
# (brew --prefix libomp). What it cannot show: Apple's linker, Accelerate, arm64 code.
set -eu
dir=$1
res=$(clang -print-resource-dir)  # (its include/, and the LLVM lib/ two levels up)
lib=$res/../..
[ -f "$res/include/omp.h" ] && [ -f "$lib/libomp.so" ] || {
    echo "no LLVM OpenMP runtime for the stand-in's libomp (Debian: libomp-dev)" >&2; exit 1; }
mkdir -p "$dir/include" "$dir/libomp/include" "$dir/libomp/lib"
cp -R "$res/include/." "$dir/include/"
mv "$dir/include/omp.h" "$dir/libomp/include/omp.h"
cp "$lib/libomp.so" "$dir/libomp/lib/libomp.so"  # (and its soname, as Homebrew has both)
cp "$lib/libomp.so" "$dir/libomp/lib/libomp.so.5"
cat > "$dir/cc" <<STANDIN
#!/bin/sh
prev=
for a in "\$@"; do
    case "\$a" in
    -march=native|-mcpu=native) echo "clang: error: unsupported option '\$a' (stand-in)" >&2; exit 1 ;;
    -fopenmp) [ "\$prev" = -Xclang ] || { echo "clang: error: unsupported option '-fopenmp'" >&2; exit 1; } ;;
    esac
    prev=\$a
done
# its own headers where it compiles (a C file, or stdin); a link alone takes no include flags
for a in "\$@"; do
    case "\$a" in
    *.c|-) exec clang -nostdinc -isystem "$dir/include" -isystem /usr/include/$(gcc -dumpmachine) -isystem /usr/include "\$@" ;;
    esac
done
exec clang "\$@"
STANDIN
chmod +x "$dir/cc"
