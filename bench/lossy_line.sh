#!/usr/bin/env bash
# Real TCP on a long, lossy line between two sites, and on the same line in the same run:
# iperf3 (Debian's) with 1 and with 4 streams, and a gridrt job's stream from a process of
# one cluster to a process of the other through the two relays (relay_bench --all-to-all,
# 1 MiB messages; the relay link is one TLS connection), with the default flow-control
# window (which grows on such a line) and with GRIDRT_WINDOW fixing it at the default's start.
# With COLLECTIVES set, then: `gridrun calibrate` across the line and gridbench's
# collectives (2 x 2 processes, hier and flat) against the model's predictions.
#
#   [COLLECTIVES=1] [IDLE_RESTART=0] bench/lossy_line.sh [RTT_MS] [RATE_MBIT] [LOSS_PERCENT] [SECONDS]
#                                                         (default 50 200 0.1 15)
# IDLE_RESTART=0 sets net.ipv4.tcp_slow_start_after_idle to 0 on both sides (Linux's default,
# 1, restarts a connection idle for a retransmission timeout from its initial window).
#
# The line: two network namespaces joined by a veth pair; each side's way out is rate-limited
# by `tc tbf` and passes through tests/nfq_delay (iptables NFQUEUE), which holds every
# segment for half the round trip and drops LOSS_PERCENT of them at random (this kernel has
# no netem). The broker and c0's relay sit on one side, c1's relay on the other. Root only;
# everything made is removed at the end, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
rtt=${1:-50}; rate=${2:-200}; loss=${3:-0.1}; secs=${4:-15}; collectives=${COLLECTIVES:-}
[ "$(id -u)" -eq 0 ] || { echo "lossy_line: needs root (network namespaces, tc, iptables)" >&2; exit 2; }
for t in iperf3 tc iptables python3; do
  command -v $t >/dev/null || { echo "lossy_line: $t is missing (scripts/install-deps.sh test installs it)" >&2; exit 2; }
done
for f in build/tests/bin/nfq_delay build/bin/relay_bench build/bin/gridrun build/bin/gridbench; do
  [ -x $f ] || { echo "lossy_line: $f is missing: build first (scripts/build.sh)" >&2; exit 1; }
done

p=ll$$; a=${p}a; b=${p}b
slots=1; [ -n "$collectives" ] && slots=2
dir=$(mktemp -d /tmp/lossy-line.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del $a 2>/dev/null || true
  ip netns del $b 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
in_a() { ip netns exec $a "$@"; }
in_b() { ip netns exec $b "$@"; }

ip netns add $a
ip netns add $b
ip link add ${p}va netns $a type veth peer name ${p}vb netns $b
in_a ip link set lo up; in_b ip link set lo up
if [ -n "${IDLE_RESTART:-}" ]; then
  in_a sysctl -qw net.ipv4.tcp_slow_start_after_idle="$IDLE_RESTART"; in_b sysctl -qw net.ipv4.tcp_slow_start_after_idle="$IDLE_RESTART"
fi
in_a ip addr add 10.241.0.1/24 dev ${p}va; in_b ip addr add 10.241.0.2/24 dev ${p}vb
in_a ip link set ${p}va up; in_b ip link set ${p}vb up
# Each direction: the rate on the way out (tbf, whose queue holds twice the line's
# bandwidth-delay product), delay and loss on the way in (nfq_delay). Not on the way out: a
# segment held there still counts against its socket (TCP small queues), so that the sender
# would see a short queue instead of a long line and send a few segments per round trip.
for side in a b; do
  ns=${p}$side; dev=${p}v$side
  ip netns exec $ns tc qdisc add dev $dev root tbf rate ${rate}mbit burst 256kb latency $((2 * rtt))ms
  ip netns exec $ns iptables -A INPUT -i $dev -j NFQUEUE --queue-num 0 --queue-bypass
  ip netns exec $ns build/tests/bin/nfq_delay --queue 0 --delay-us $((rtt * 500)) --loss "$loss" --seed 7 >"$dir/nfq-$side.log" 2>&1 &
  pids+=($!)
done
sleep 0.5

echo "line: ${rtt} ms round trip, ${rate} Mbit/s, ${loss}% loss each way"

# iperf3, 1 and 4 streams, c0's side sending.
ip netns exec $b iperf3 -s >"$dir/iperf3-server.log" 2>&1 &  # (not through in_b: $! must be the server)
pids+=($!)
sleep 0.5
iperf() {  # streams -> Mbit/s received
  in_a iperf3 -c 10.241.0.2 -t "$secs" -P "$1" -J >"$dir/iperf3-$1.json"
  python3 -c 'import json,sys; print("%.1f" % (json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e6))' "$dir/iperf3-$1.json"
}
one=$(iperf 1)
four=$(iperf 4)
echo "iperf3 1 stream:  $one Mbit/s"
echo "iperf3 4 streams: $four Mbit/s"

# A standing grid across the line: broker and c0's relay on side a, c1's relay on side b.
ca=$dir/ca
build/bin/gridrun ca init "$ca" "lossy line CA" >/dev/null
for who in broker "relay c0" "relay c1" "user bench"; do build/bin/gridrun ca issue "$ca" $who >/dev/null; done
cat >"$dir/grid.xml" <<XML
<grid>
  <cluster name="c0" site="s0" slots="$slots"><relay link="10.241.0.1:7400" local="10.241.0.1:7450"/><network nodes="private" inbound="no"/><launch>mpiexec -launcher fork -n {np}</launch></cluster>
  <cluster name="c1" site="s1" slots="$slots"><relay link="10.241.0.2:7400" local="10.241.0.2:7450"/><network nodes="private" inbound="no"/><launch>mpiexec -launcher fork -n {np}</launch></cluster>
</grid>
XML
ip netns exec $a build/bin/gridbroker --grid "$dir/grid.xml" --listen 10.241.0.1:7000 --cert "$ca/broker.pem" --key "$ca/broker.key" \
  --ca "$ca/ca.pem" >"$dir/broker.log" 2>&1 &
pids+=($!)
for side in a b; do
  c=c$([ $side = a ] && echo 0 || echo 1)
  ip netns exec ${p}$side build/bin/gridrelay --grid "$dir/grid.xml" --cluster $c --broker 10.241.0.1:7000 --cert "$ca/relay-$c.pem" \
    --key "$ca/relay-$c.key" --ca "$ca/ca.pem" --single-user >"$dir/relay-$c.log" 2>&1 &
  pids+=($!)
done
for _ in $(seq 100); do
  grep -q "registered" "$dir/relay-c0.log" && grep -q "registered" "$dir/relay-c1.log" && break
  sleep 0.1
done
# The job's stream with the default flow-control window per stream (524,800 bytes: 512 KiB of
# messages in whole frames; growing where the line asks for more) and with GRIDRT_WINDOW
# fixing it there (at most a window per round trip: 84 Mbit/s on 50 ms).
fixed_window=524800
sed 's|</arguments>|</arguments><environment><variable name="GRIDRT_WINDOW">$WINDOW</variable></environment>|' \
  bench/relay_all_to_all.xml >"$dir/stream-fixed.xml"
cp bench/relay_all_to_all.xml "$dir/stream-default.xml"
user=(--broker 10.241.0.1:7000 --cert "$ca/user-bench.pem" --key "$ca/user-bench.key" --ca "$ca/ca.pem")
for window in default fixed; do
  out=$(in_a build/bin/gridrun "${user[@]}" --var PAIRS=1 --var SECONDS="$secs" --var SIZES=1048576:1048576 --var WINDOW=$fixed_window \
    "$dir/stream-$window.xml" 2>&1) || {
    echo "$out"; echo "relay c0:"; cat "$dir/relay-c0.log"; echo "relay c1:"; cat "$dir/relay-c1.log"; exit 1; }
  mbs=$(echo "$out" | sed -n 's/.*: \([0-9.]*\) MB\/s aggregate.*/\1/p')
  [ -n "$mbs" ] || { echo "$out"; exit 1; }
  mbit=$(python3 -c "print('%.1f' % ($mbs * 8))")
  what="the default window (growing)"; [ $window = fixed ] && what="GRIDRT_WINDOW=$fixed_window (fixed)"
  echo "gridrt 1 stream through the relays, $what: $mbit Mbit/s" \
    "($(python3 -c "print('%.2f' % ($mbit / $one))") of iperf3's 1 stream, $(python3 -c "print('%.2f' % ($mbit / $four))") of its 4)"
done
if [ -n "$collectives" ]; then
  # Calibrated across the line as a user would, then the collectives of 64 KiB and 1 MiB
  # (hier and flat, 2 x 2) against the model's predictions.
  in_a build/bin/gridrun calibrate "${user[@]}" -n $((2 * slots)) --output "$dir/model.json" 2>&1 | grep -v '^#  ' | tail -20
  in_a build/bin/gridbench "${user[@]}" -n $((2 * slots)) --model "$dir/model.json" --op bcast,allreduce,allgather,alltoall \
    --sizes 65536,1048576 --algo hier,flat --iters 5 --json >"$dir/collectives.json"
  python3 - "$dir/collectives.json" <<'PY'
import json, sys
print("%-10s %-5s %8s %12s %12s %9s" % ("op", "algo", "bytes", "median_us", "predicted_us", "meas/pred"))
for l in open(sys.argv[1]):
    if not l.startswith("{"): continue
    r = json.loads(l)
    p = r.get("predicted_us")
    print("%-10s %-5s %8d %12.0f %12s %9s" % (r["op"], r["algo"], r["bytes"], r["median_us"], "%.0f" % p if p else "-", "%.2f" % (r["median_us"] / p) if p else "-"))
PY
fi
# What the line did: nfq_delay says how many segments it held and dropped when it stops.
kill "${pids[0]}" "${pids[1]}" 2>/dev/null || true
wait "${pids[0]}" "${pids[1]}" 2>/dev/null || true
echo "line b->a: $(tail -1 "$dir/nfq-a.log"); a->b: $(tail -1 "$dir/nfq-b.log")"
