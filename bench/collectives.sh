#!/usr/bin/env bash
# Issue 4's measurements: gridbench on the embedded grid, 3 clusters x 2 processes, relay
# links over an emulated WAN (10 ms one way, 100 Mbit/s), every collective, hierarchical and
# flat, at 8 B and 64 KiB; RUNS whole runs (fresh grid each), medians printed.
#
#   bench/collectives.sh [RUNS] [ITERS] [OPS] [ROOT]
#       RUNS   runs to take medians over (default 5)
#       ITERS  calls timed per size and run (default 20)
#       OPS    gridbench --op list (default all)
#       ROOT   root of the rooted collectives (default 0)
# Prints one line per (op, algo, bytes): median max_us (the call complete on every process),
# wan_msgs, bound_us, max/bound, and
# for hier the flat/hier ratio of the medians. Raw JSON lines go to RESULTS (a temp file,
# named at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}; iters=${2:-20}; ops=${3:-all}; root=${4:-0}
[ -x build/bin/gridbench ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
results=$(mktemp /tmp/gridbench-results.XXXXXX)
for ((i = 1; i <= runs; i++)); do
  echo "run $i of $runs ..." >&2
  build/bin/gridbench --clusters 3 --ranks-per-cluster 2 --emulate-wan 10ms,100mbit --op "$ops" --algo hier,flat \
    --sizes 8,65536 --iters "$iters" --root "$root" --json >> "$results"
done
# Medians per (op, algo, bytes) of max_us (complete everywhere); wan_msgs and bound_us are
# the same in every run.
awk -F'[,:{}"]+' '
  { for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
    k = v["op"] " " v["algo"] " " v["bytes"]; n[k]++; t[k, n[k]] = v["max_us"]
    msgs[k] = v["wan_msgs"]; bound[k] = v["bound_us"]; if (!(k in seen)) { order[++m] = k; seen[k] = 1 } }
  function median(k,   i, j, x, c) { c = n[k]; for (i = 1; i <= c; i++) a[i] = t[k, i]
    for (i = 2; i <= c; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
  END {
    printf "%-10s %-4s %7s %12s %9s %10s %9s %10s\n", "op", "algo", "bytes", "median_max_us", "wan_msgs", "bound_us", "x bound", "flat/hier"
    for (i = 1; i <= m; i++) { k = order[i]; med[k] = median(k) }
    for (i = 1; i <= m; i++) { k = order[i]; split(k, f, " ")
      ratio = ""; if (f[2] == "hier") { fk = f[1] " flat " f[3]; if (fk in med && med[k] > 0) ratio = sprintf("%.2f", med[fk] / med[k]) }
      printf "%-10s %-4s %7s %12.1f %9s %10s %9.2f %10s\n", f[1], f[2], f[3], med[k], msgs[k], bound[k], (bound[k] > 0 ? med[k] / bound[k] : 0), ratio }
  }' "$results"
echo "raw results: $results" >&2
