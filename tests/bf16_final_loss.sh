#!/usr/bin/env bash
# CI: the default bf16 run (./train_gpt2 -prec bf16: 2,000 steps of the default model) ends at
# the final validation loss that doc/precision.md's table "The default bf16 run on each CPU"
# records for this CPU's maker and the kernel the run chose. The kernels' sums differ in their
# bits between CPU makers (denormals) and between the FMA kernels and AMX's tiles (the order of
# the sums), so the table has a row for each; a CPU and kernel with no row fails, naming what
# to add. About a minute and a half on 2 cores. Last line: "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
source tests/posix.sh  # capture
make -s train_gpt2 data > /dev/null || { echo "FAIL make"; echo "0 passed, 1 failed"; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
./train_gpt2 -prec bf16 -o "" > "$log" 2>&1
rc=$?
# the CPU's maker: x86 Linux's /proc/cpuinfo (elsewhere none, and no row matches)
vendor=$(awk -F': *' '$1 ~ /^vendor_id/ { print $2; exit }' /proc/cpuinfo 2> /dev/null)  # posix-check: allow
# the kernel's BF16_KERNEL name, which the header gives first (fast/bf16.h, bf16_kernel_describe)
kernel=$(capture 'bf16 products: ([a-z0-9]+),' "$log" | head -n 1)
final=$(grep -oE 'final val loss [0-9.]+' "$log" | tail -n 1 | awk '{ print $4 }')
# the table's rows: | maker (words) | `kernel`, `kernel` ... | loss | where measured |
want=$(awk -F'|' -v vendor="$vendor" -v kernel="\`$kernel\`" '
    /^## The default bf16 run on each CPU/ { on = 1; next }
    on && /^## / { on = 0 }
    on && /^\| (GenuineIntel|AuthenticAMD)/ {
        split($2, w, " ")
        if (w[1] == vendor && index($3, kernel)) { gsub(/[ *]/, "", $4); print $4; exit }
    }' doc/precision.md)
echo "this CPU: ${vendor:-unknown maker}; the run chose: ${kernel:-(none named)}; final val loss: ${final:-none}"
if [ $rc -ne 0 ] || [ -z "$final" ] || [ -z "$kernel" ]; then
    echo "FAIL ./train_gpt2 -prec bf16: exit $rc, kernel '$kernel', final '$final'"; tail -n 3 "$log"
    echo "0 passed, 1 failed"; exit 1
fi
if [ -z "$want" ]; then
    echo "FAIL doc/precision.md records no final loss for $vendor with \`$kernel\`: add its row ($final)"
    echo "0 passed, 1 failed"; exit 1
fi
if [ "$final" = "$want" ]; then
    echo "PASS the default bf16 run ends at $final, doc/precision.md's value for $vendor with \`$kernel\`"
    echo "1 passed, 0 failed"
else
    echo "FAIL the default bf16 run ends at $final; doc/precision.md says $want for $vendor with \`$kernel\`"
    echo "0 passed, 1 failed"; exit 1
fi
