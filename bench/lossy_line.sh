#!/usr/bin/env bash
# Real TCP on a long, lossy line between two sites, and on the same line in the same run:
# iperf3 (Debian's) with 1 and with 4 streams, and a gridrt job's stream from a process of
# one cluster to a process of the other through the two relays (relay_bench --all-to-all,
# 1 x 1, 1 MiB messages; the relay link is one TLS connection).
#
#   bench/lossy_line.sh [RTT_MS] [RATE_MBIT] [LOSS_PERCENT] [SECONDS]   (default 50 200 0.1 15)
#
# The line: two network namespaces joined by a veth pair; each side's way out is rate-limited
# by `tc tbf` and passes through tests/nfq_delay (iptables NFQUEUE), which holds every
# segment for half the round trip and drops LOSS_PERCENT of them at random (this kernel has
# no netem). The broker and c0's relay sit on one side, c1's relay on the other. Root only;
# everything made is removed at the end, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
rtt=${1:-50}; rate=${2:-200}; loss=${3:-0.1}; secs=${4:-15}
[ "$(id -u)" -eq 0 ] || { echo "lossy_line: needs root (network namespaces, tc, iptables)" >&2; exit 2; }
for t in iperf3 tc iptables python3; do
  command -v $t >/dev/null || { echo "lossy_line: $t is missing (scripts/install-deps.sh test installs it)" >&2; exit 2; }
done
for f in build/tests/bin/nfq_delay build/bin/relay_bench build/bin/gridrun; do
  [ -x $f ] || { echo "lossy_line: $f is missing: build first (scripts/build.sh)" >&2; exit 1; }
done

p=ll$$; a=${p}a; b=${p}b
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
  <cluster name="c0" site="s0" slots="1"><relay link="10.241.0.1:7400" local="10.241.0.1:7450"/><network nodes="private" inbound="no"/><launch>mpiexec -launcher fork -n {np}</launch></cluster>
  <cluster name="c1" site="s1" slots="1"><relay link="10.241.0.2:7400" local="10.241.0.2:7450"/><network nodes="private" inbound="no"/><launch>mpiexec -launcher fork -n {np}</launch></cluster>
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
# The job's stream with the default flow-control window per stream (512 KiB: at most a
# window per round trip, 84 Mbit/s on 50 ms) and with one of 4 MiB (GRIDRT_WINDOW).
sed 's|</arguments>|</arguments><environment><variable name="GRIDRT_WINDOW">$WINDOW</variable></environment>|' \
  bench/relay_all_to_all.xml >"$dir/stream.xml"
declare -A grid
for window in 524288 4194304; do
  out=$(in_a build/bin/gridrun --broker 10.241.0.1:7000 --cert "$ca/user-bench.pem" --key "$ca/user-bench.key" --ca "$ca/ca.pem" \
    --var PAIRS=1 --var SECONDS="$secs" --var SIZES=1048576:1048576 --var WINDOW=$window "$dir/stream.xml" 2>&1) || {
    echo "$out"; echo "relay c0:"; cat "$dir/relay-c0.log"; echo "relay c1:"; cat "$dir/relay-c1.log"; exit 1; }
  mbs=$(echo "$out" | sed -n 's/.*: \([0-9.]*\) MB\/s aggregate.*/\1/p')
  [ -n "$mbs" ] || { echo "$out"; exit 1; }
  grid[$window]=$(python3 -c "print('%.1f' % ($mbs * 8))")
  echo "gridrt 1 stream through the relays, window $((window / 1024)) KiB: ${grid[$window]} Mbit/s" \
    "($(python3 -c "print('%.2f' % (${grid[$window]} / $one))") of iperf3's 1 stream, $(python3 -c "print('%.2f' % (${grid[$window]} / $four))") of its 4)"
done
# What the line did: nfq_delay says how many segments it held and dropped when it stops.
kill "${pids[0]}" "${pids[1]}" 2>/dev/null || true
wait "${pids[0]}" "${pids[1]}" 2>/dev/null || true
echo "line b->a: $(tail -1 "$dir/nfq-a.log"); a->b: $(tail -1 "$dir/nfq-b.log")"
