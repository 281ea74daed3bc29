#!/usr/bin/env bash
# The node level inside a cluster (GRIDRT_NODE_LEVEL) against leaving the nodes to MPICH:
# gridbench on one cluster of 4 processes that MPICH's cliques (MPIR_CVAR_NUM_CLIQUES=2)
# place on two "nodes" of this machine, hierarchical collectives at 8 B and 64 KiB; RUNS
# runs of each, interleaved, medians printed (algo "nodes": GRIDRT_NODE_LEVEL=on, "mpich":
# off; the last column is mpich/nodes: below 1, the node level is slower).
#
#   bench/node_level.sh [RUNS] [ITERS]     (defaults 5 and 50)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}; iters=${2:-50}
[ -x build/bin/gridbench ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
results=$(mktemp /tmp/gridbench-nodes.XXXXXX)
for ((i = 1; i <= runs; i++)); do
  echo "run $i of $runs ..." >&2
  for level in on off; do
    label=$([ $level = on ] && echo nodes || echo mpich)
    MPIR_CVAR_NUM_CLIQUES=2 GRIDRT_NODE_LEVEL=$level build/bin/gridbench --clusters 1 --ranks-per-cluster 4 \
      --op barrier,bcast,reduce,allreduce,gather,scatter,allgather --algo hier --sizes 8,65536 --iters "$iters" --json |
      sed "s/\"algo\":\"hier\"/\"algo\":\"$label\"/" >> "$results"
  done
done
awk -v base=mpich -f bench/medians.awk "$results"
echo "raw results: $results" >&2
