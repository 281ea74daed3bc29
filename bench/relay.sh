#!/usr/bin/env bash
# Process -> relay -> relay -> process against raw TCP, in the same run (the relay path's targets).
#
#   bench/relay.sh [STREAMS] [SIZES] [BYTES_PER_SIZE] [ROUNDS] [PATH]
#       STREAMS          concurrent sender/receiver pairs across the two clusters (default 1)
#       SIZES            MIN:MAX message sizes, powers of two (default 1024:4194304)
#       BYTES_PER_SIZE   bytes each pair streams per size and round (default 33554432)
#       ROUNDS           rounds per figure; medians are printed (default 5)
#       PATH             relay (default: nodes declared private, so traffic goes through the
#                        relays) or direct (nodes public: processes connect to each other)
# Runs on a grid of two clusters of STREAMS slots on this machine; every cross-site
# connection is TLS 1.3 (relay links with certificates, direct ones with the job's key).
set -euo pipefail
cd "$(dirname "$0")/.."
streams=${1:-1}; sizes=${2:-1024:4194304}; bytes=${3:-33554432}; rounds=${4:-5}; path=${5:-relay}
case "$path" in
  relay) network='<network nodes="private" inbound="no"/>' ;;
  direct) network='<network nodes="public" inbound="yes"/>' ;;
  *) echo "PATH must be relay or direct" >&2; exit 2 ;;
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
build/bin/gridrun --grid "$grid" --var PAIRS="$streams" --var SIZES="$sizes" --var BYTES="$bytes" --var ROUNDS="$rounds" \
  bench/relay_bench.xml
