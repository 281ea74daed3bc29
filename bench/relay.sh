#!/usr/bin/env bash
# Process -> relay -> relay -> process against raw TCP, in the same run (the relay path's targets).
#
#   bench/relay.sh [STREAMS] [SIZES] [BYTES_PER_SIZE] [ROUNDS] [PATH] [PLACEMENT]
#       STREAMS          concurrent sender/receiver pairs across the two clusters (default 1)
#       SIZES            MIN:MAX message sizes, powers of two (default 1024:4194304)
#       BYTES_PER_SIZE   bytes each pair streams per size and round (default 33554432)
#       ROUNDS           rounds per figure; medians are printed (default 5)
#       PATH             relay (default: nodes declared private, so traffic goes through the
#                        relays) or direct (nodes public: processes connect to each other)
#       PLACEMENT        shared (default: the scheduler places every process), apart (the
#                        two relays held on two different cores, as two clusters' front-ends
#                        are) or together (both held on one core); the processes stay free.
#                        On one machine the relays wake each other over loopback, and the
#                        kernel puts a task so woken on its waker's core: shared, they mostly
#                        take turns on one core. hop_bench takes the same words for its
#                        forwarders, so that both paths can be compared placed alike.
# Runs on a grid of two clusters of STREAMS slots on this machine; every cross-site
# connection is TLS 1.3 (relay links with certificates, direct ones with the job's key).
set -euo pipefail
cd "$(dirname "$0")/.."
streams=${1:-1}; sizes=${2:-1024:4194304}; bytes=${3:-33554432}; rounds=${4:-5}; path=${5:-relay}; placement=${6:-shared}
case "$path" in
  relay) network='<network nodes="private" inbound="no"/>' ;;
  direct) network='<network nodes="public" inbound="yes"/>' ;;
  *) echo "PATH must be relay or direct" >&2; exit 2 ;;
esac
# The first two cores this shell may run on (PLACEMENT apart or together).
cores=()
case "$placement" in
  shared) ;;
  apart | together)
    read -r -a cores <<<"$(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' |
      awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) printf "%d ", c }')"
    [ "${#cores[@]}" -ge 2 ] || { echo "PLACEMENT $placement needs two cores" >&2; exit 2; }
    [ "$placement" = apart ] || cores[1]=${cores[0]} ;;
  *) echo "PLACEMENT must be shared, apart or together" >&2; exit 2 ;;
esac
[ -x build/bin/relay_bench ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
grid=$(mktemp /tmp/relay-bench-grid.XXXXXX)
trap 'rm -f "$grid"' EXIT
cat > "$grid" <<XML
<grid>
  <cluster name="c0" site="site0" slots="$streams"><relay link="127.0.0.1:0" local="127.0.0.1:0"/>$network<launch>mpiexec -launcher fork -n {np}</launch></cluster>
  <cluster name="c1" site="site1" slots="$streams"><relay link="127.0.0.1:0" local="127.0.0.1:0"/>$network<launch>mpiexec -launcher fork -n {np}</launch></cluster>
</grid>
XML
job=(build/bin/gridrun --grid "$grid" --var PAIRS="$streams" --var SIZES="$sizes" --var BYTES="$bytes" --var ROUNDS="$rounds"
  bench/relay_bench.xml)
if [ "$placement" = shared ]; then
  "${job[@]}"
  exit
fi
"${job[@]}" &
run=$!
trap 'kill -INT "$run" 2>/dev/null' INT TERM  # (a job started with & ignores the terminal's Ctrl-C)
# The relays start long before the job's first message: each is held on a core of its own,
# with all its threads (and those it starts later, which inherit it).
relays=()
for _ in $(seq 200); do
  mapfile -t relays < <(pgrep -P "$run" -x gridrelay || true)
  [ "${#relays[@]}" -ge 2 ] && break
  sleep 0.05
done
if [ "${#relays[@]}" -lt 2 ]; then
  echo "relay.sh: the two relays did not start" >&2
  kill -INT "$run" 2>/dev/null
  wait "$run" || true
  exit 1
fi
taskset -a -pc "${cores[0]}" "${relays[0]}" >/dev/null
taskset -a -pc "${cores[1]}" "${relays[1]}" >/dev/null
echo "# relays held on cores ${cores[0]} and ${cores[1]}"
wait "$run"
