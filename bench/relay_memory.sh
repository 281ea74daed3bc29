#!/usr/bin/env bash
# Relay memory under sustained load on many streams (target: < 64 MiB with 64).
#
#   bench/relay_memory.sh [K] [SECONDS] [SIZE]
#       K         processes per cluster; K x K streams cross the relays (default 8: 64)
#       SECONDS   how long every sender keeps streaming (default 10)
#       SIZE      message size in bytes (default 1048576)
# Two clusters of K slots on this machine, nodes private (all traffic through the relays).
set -euo pipefail
cd "$(dirname "$0")/.."
k=${1:-8}; seconds=${2:-10}; size=${3:-1048576}
[ -x build/bin/relay_bench ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
grid=$(mktemp /tmp/relay-memory-grid.XXXXXX)
trap 'rm -f "$grid"' EXIT
cat > "$grid" <<XML
<grid>
  <cluster name="c0" site="site0" slots="$k"><relay link="127.0.0.1:0" local="127.0.0.1:0"/><network nodes="private" inbound="no"/><launch>mpiexec -launcher fork -n {np}</launch></cluster>
  <cluster name="c1" site="site1" slots="$k"><relay link="127.0.0.1:0" local="127.0.0.1:0"/><network nodes="private" inbound="no"/><launch>mpiexec -launcher fork -n {np}</launch></cluster>
</grid>
XML
build/bin/gridrun --grid "$grid" --var PAIRS="$k" --var SECONDS="$seconds" --var SIZES="$size:$size" bench/relay_all_to_all.xml
