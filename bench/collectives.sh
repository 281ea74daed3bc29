#!/usr/bin/env bash
# Issue 4's measurements: gridbench on the embedded grid, 3 clusters x 2 processes, relay
# links over an emulated WAN (10 ms one way, 100 Mbit/s), every collective, hierarchical and
# flat, at 8 B and 64 KiB; RUNS whole runs (fresh grid each), medians printed.
#
#   bench/collectives.sh [RUNS] [ITERS] [OPS] [ROOT] [SIZES]
#       RUNS   runs to take medians over (default 5)
#       ITERS  calls timed per size and run (default 20)
#       OPS    gridbench --op list (default all)
#       ROOT   root of the rooted collectives (default 0)
#       SIZES  gridbench --sizes (default 8,65536)
#   GRID=FILE bench/collectives.sh ...: on the grid FILE describes instead (no emulated WAN),
#       e.g. bench/grids/one-site-3x2.xml
# Prints one line per (op, algo, bytes) (bench/medians.awk): median max_us (the call complete
# on every process), wan_msgs, bound_us, max/bound, and for hier the flat/hier ratio of the
# medians. Raw JSON lines go to RESULTS (a temp file,
# named at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}; iters=${2:-20}; ops=${3:-all}; root=${4:-0}; sizes=${5:-8,65536}
if [ -n "${GRID:-}" ]; then where=(--grid "$GRID"); else where=(--clusters 3 --ranks-per-cluster 2 --emulate-wan 10ms,100mbit); fi
[ -x build/bin/gridbench ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
results=$(mktemp /tmp/gridbench-results.XXXXXX)
for ((i = 1; i <= runs; i++)); do
  echo "run $i of $runs ..." >&2
  build/bin/gridbench "${where[@]}" --op "$ops" --algo hier,flat --sizes "$sizes" --iters "$iters" --root "$root" --json >> "$results"
done
awk -v base=flat -f bench/medians.awk "$results"
echo "raw results: $results" >&2
