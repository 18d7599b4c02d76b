#!/usr/bin/env bash
# A simulated two-host cluster for data-parallel training (util/dist.h), built here and
# removed at the end: two network namespaces joined by a veth pair (10.77.0.1 and
# 10.77.0.2, the only addresses used), Open MPI over TCP between them (btl tcp, its
# out-of-band channel on that subnet only), mpirun in the first namespace starting the
# second process in the other one through `ip netns exec` as its launch agent (no ssh), and
# the link rate-limited with tc (tbf on both ends) to 10 Gbit/s and to 1 Gbit/s.
# Checks: the buckets (and -zg 1's gather overlapped with the forward pass) give the same bits
# as the blocking reduction and gather over TCP too. Measures: the GPT-2 124M step (T=64) at
# B=4 per process on both rates, its gradients' sum split into hidden behind the backward
# pass and exposed after it, and -z 1's gather of the weights (after AdamW, or with -zg 1
# waited for by the forward pass); at 10 Gbit/s also -z 0, -zg 1 and the blocking path; on
# 1 Gbit/s the batch per process at which the exposed share (both) falls under 10%
# (doubling B up to NETNS_MAX_B, default 32).
# Needs root (ip netns, tc). NETNS_STEPS (default 3) steps per run, the first not timed.
# The last line is "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
source tests/posix.sh  # capture, with_timeout
TMP=tests/tmp/netns
rm -rf "$TMP"; mkdir -p "$TMP"
pass=0; fail=0
ok()  { echo "PASS $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
give_up() { bad "$*"; echo "$pass passed, $fail failed"; exit 1; }

command -v mpirun > /dev/null && command -v ip > /dev/null && command -v tc > /dev/null \
    || give_up "needs mpirun (openmpi-bin), ip and tc (iproute2)"
make -s train_gpt2_mpi data/prepare MPI=1 || give_up "could not build train_gpt2_mpi and data/prepare"
NA=llmc_a_$$ NB=llmc_b_$$ A=10.77.0.1 B=10.77.0.2
cleanup() { ip netns del "$NA" 2> /dev/null; ip netns del "$NB" 2> /dev/null; }  # the veth pair goes with them
trap cleanup EXIT
trap 'exit 130' INT TERM
if ! ip netns add "$NA" || ! ip netns add "$NB"; then
    # a container without CAP_SYS_ADMIN: the simulation cannot be built here, and that is a
    # property of the machine, not of the program; the one-machine MPI stage still runs
    echo "SKIP this machine does not allow network namespaces (ip netns add; root?): no two-host simulation"
    echo "$pass passed, $fail failed"; exit 0
fi
ip link add va netns "$NA" type veth peer name vb netns "$NB" || give_up "cannot create a veth pair"
ip -n "$NA" addr add $A/24 dev va && ip -n "$NB" addr add $B/24 dev vb || give_up "cannot address the veth pair"
for ns in "$NA" "$NB"; do ip -n "$ns" link set lo up; done
ip -n "$NA" link set va up && ip -n "$NB" link set vb up || give_up "cannot bring the veth pair up"
# tbf on each end's egress: rate, a burst of 4 ms at that rate, a queue of 20 ms
limit() {  # rate in Gbit/s
    local burst=$(($1 * 500))kb
    tc -n "$NA" qdisc replace dev va root tbf rate "$1"gbit burst $burst latency 20ms &&
        tc -n "$NB" qdisc replace dev vb root tbf rate "$1"gbit burst $burst latency 20ms
}
limit 10 || give_up "tc refuses a tbf qdisc on the veth pair"
ok "two namespaces $NA ($A) and $NB ($B) joined by a veth pair, tbf on both ends"

# the launch agent: mpirun calls it like ssh ("agent HOST COMMAND..."); it runs COMMAND in
# the namespace that holds HOST's address
cat > "$TMP/agent" << EOF
#!/bin/sh
host=\$1; shift
case "\$host" in $A) ns=$NA ;; $B) ns=$NB ;; *) echo "agent: unknown host \$host" >&2; exit 1 ;; esac
exec ip netns exec "\$ns" sh -c "\$*"
EOF
chmod +x "$TMP/agent"
printf '%s slots=1\n%s slots=1\n' $A $B > "$TMP/hosts"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
two_hosts() {  # mpirun of 2 processes, one per namespace, over TCP on 10.77.0.0/24 only
    with_timeout "${NETNS_TIMEOUT:-900}" ip netns exec "$NA" mpirun -q --hostfile "$TMP/hosts" -np 2 -x OMP_NUM_THREADS=1 \
        --mca plm_rsh_agent "$PWD/$TMP/agent" --mca plm_rsh_no_tree_spawn 1 --mca btl tcp,self \
        --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 "$@"
}
where=$(two_hosts sh -c 'echo "$OMPI_COMM_WORLD_RANK $(ip -br -4 addr | grep -o "10\.77\.0\.[12]")"' 2>&1 | sort | tr '\n' ' ')
if [ "$where" == "0 $A 1 $B " ]; then
    ok "mpirun in $NA started process 1 in $NB through ip netns exec: $where"
else
    give_up "the two-host launch failed: $where"
fi

# the same bits over TCP: buckets against the blocking reduction (a small model, 20 steps)
SMALL=(-nl 2 -nh 4 -nc 64 -t 32 -g 0 -v 10 -u 5 -dr 0.1 -b 4 -x 20 -n 20)
two_hosts ./train_gpt2_mpi "${SMALL[@]}" -zg 1 -o "$TMP/bk" > "$TMP/bk.log" 2>&1  # (-zg 1: the gather too)
two_hosts -x DIST_BLOCKING=1 ./train_gpt2_mpi "${SMALL[@]}" -o "$TMP/bl" > "$TMP/bl.log" 2>&1
losses() { capture '^step +([0-9]+/[0-9]+ [|] loss [0-9.]+)' "$1"; }
if [ -n "$(losses "$TMP/bk.log")" ] && [ "$(losses "$TMP/bk.log")" == "$(losses "$TMP/bl.log")" ] \
      && cmp -s "$TMP/bk/model_00000020.bin" "$TMP/bl/model_00000020.bin"; then
    ok "over TCP between the namespaces, buckets vs blocking: the same losses and checkpoint, bit for bit"
else
    bad "over TCP, buckets vs blocking differ: $(tail -n 2 "$TMP/bk.log" "$TMP/bl.log")"
fi

# Open MPI sees two machines (a daemon in each namespace): 32 MiB in flight, not one
# machine's 2 (util/dist.h, "How many buckets fly at once")
if grep -q 'not all on one machine: at most 32 MiB of gradients in flight' "$TMP/bk.log"; then
    ok "the namespaces are two machines to Open MPI: 32 MiB of gradients in flight over TCP"
else
    bad "the namespaces' run does not say it spans two machines: $(grep '^processes' "$TMP/bk.log")"
fi

# the 124M measurements: GPT-2's tokenizer on Tiny Shakespeare encoded with it
./data/prepare -i data/tiny_shakespeare.txt -o "$TMP/ts_gpt2" -m bpe -tok data/gpt2_tokenizer.bin > /dev/null 2>&1 \
    || give_up "could not encode Tiny Shakespeare with GPT-2's tokenizer"
BIG=(-e d12 -tok data/gpt2_tokenizer.bin -i "$TMP/ts_gpt2_train.bin" -j "" -t 64 -g 0 -o "" -x "${NETNS_STEPS:-3}")
printf '%-9s %-7s %-10s %-8s %10s %16s %12s %16s %16s\n' link B/proc "MB/step" bucket "step ms" "exposed ms (%)" "hidden ms" \
    "gather exp. ms" "both exposed %"
exposed_share=""
measure() {  # rate, B per process[, blocking]: one row of the table; sets exposed_share
    local log="$TMP/124m_$1g_b$2${3:-}.log" how=() flags=() bucket
    [ "${3:-}" = blocking ] && how=(-x DIST_BLOCKING=1)
    [ "${3:-}" = z0 ] && flags=(-z 0)  # the optimizer not sharded: an all-reduce, no gather
    [ "${3:-}" = zg ] && flags=(-zg 1)  # -z 1's gather overlapped with the next forward pass
    two_hosts ${how[@]+"${how[@]}"} ./train_gpt2_mpi "${BIG[@]}" -b "$2" ${flags[@]+"${flags[@]}"} > "$log" 2>&1
    local done_line; done_line=$(grep '^done:' "$log")
    local sum_share; sum_share=$(echo "$done_line" | capture 'exposed [(]([0-9.]+)%[)]')
    if [ -z "$sum_share" ]; then bad "124M at $1 Gbit/s, B=$2: no result ($(tail -n 1 "$log"))"; exposed_share=""; return 1; fi
    # -z 1 (the default): the weights' all-gather (after AdamW; -zg 1: waited for by the forward pass)
    local gather step_ms; gather=$(echo "$done_line" | capture 'all-gather ([0-9.]+) ms/step')
    step_ms=$(echo "$done_line" | capture '([0-9.]+) ms/step [(]')
    exposed_share=$(awk -v s="$sum_share" -v g="${gather:-0}" -v t="$step_ms" 'BEGIN { printf "%.1f", s + 100 * g / t }')
    local params; params=$(capture '([0-9.]+)M parameters' "$log")
    bucket=$(echo "$done_line" | capture 'buckets of ([0-9]+)')
    local tag=${3:-}; tag=${tag/z0/-z 0}; tag=${tag/zg/-zg 1}
    [ -n "$bucket" ] && bucket="$bucket KiB${tag:+ $tag}" || bucket="${3:-?}"
    printf '%-9s %-7s %-10s %-8s %10s %16s %12s %16s %16s\n' "$1 Gbit/s" "$2" "$(awk -v p="$params" 'BEGIN { printf "%.0f", 4 * p }')" \
        "$bucket" "$step_ms" \
        "$(echo "$done_line" | capture '([0-9.]+) ms/step exposed') ($sum_share%)" \
        "$(echo "$done_line" | capture '([0-9.]+) ms/step hidden')" "${gather:--}" "$exposed_share"
}
measure 10 4 && ok "124M at 10 Gbit/s, B=4 per process: exposed $exposed_share% of the step (gradients' sum and weights' gather)"
# the same without ZeRO-1 (-z 0), with its gather overlapped (-zg 1), and without the overlaps
# (one blocking sum after the backward pass), for comparison
measure 10 4 z0 || true
measure 10 4 zg || true
measure 10 4 blocking || true
limit 1 || give_up "tc cannot change the rate to 1 Gbit/s"
measure 1 4 && ok "124M at 1 Gbit/s, B=4 per process: exposed $exposed_share% of the step"
b=4; found=""
while [ -n "$exposed_share" ] && awk -v s="$exposed_share" 'BEGIN { exit !(s >= 10) }' && [ $b -lt "${NETNS_MAX_B:-32}" ]; do
    b=$((b * 2))
    measure 1 $b || break
done
if [ -n "$exposed_share" ] && awk -v s="$exposed_share" 'BEGIN { exit !(s < 10) }'; then found=$b; fi
if [ -n "$found" ]; then
    ok "124M at 1 Gbit/s: the exposed communication falls under 10% of the step at B=$found per process ($exposed_share%)"
else
    echo "note: 124M at 1 Gbit/s: the exposed share is still ${exposed_share:-?}% at B=$b per process, the largest tried"
fi
rm -f "$TMP"/ts_gpt2_*.bin
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
