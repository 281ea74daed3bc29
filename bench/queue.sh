#!/usr/bin/env bash
# Issue 5's measurements of the task queue (docs/benchmarks.md, "Task queue"), medians of
# RUNS runs, each on a fresh embedded grid:
#   1. raytrace's makespan on 3 clusters x 2 processes across an emulated WAN (10 ms one
#      way, 100 Mbit/s), super-master in cluster 0, in its three modes (vanilla, grid, hier),
#      with Ray2mesh's roles (--workers-only: the master and bosses only hand out work) and
#      with everyone tracing rays; and the WAN messages the queue sent per task;
#   2. dispatch of empty tasks: through one boss to its 2 workers on one cluster; through an
#      idle super-master alone in its cluster to the bosses of 2 clusters of 2 across the
#      emulated WAN, with the single queue beside it.
#
#   bench/queue.sh [RUNS] [RAYTRACE ARGS...]     (RUNS default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}; shift || true
[ -x build/bin/raytrace ] && [ -x build/bin/queue_bench ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d /tmp/gridrt-queue-bench.XXXXXX)
wan=(--emulate-wan 10ms,100mbit)

# A JobProfile running build/bin/$1 with the other arguments on every slot.
profile() {
  local prog=$1 args="" a; shift
  for a in "$@"; do args+="<value>$a</value>"; done
  sed -e "s#/hello<#/$prog<#" -e "s#</executable>#</executable><arguments>$args</arguments>#" jobprofiles/helloworld.xml > "$work/job.xml"
  echo "$work/job.xml"
}
# The super-master alone in its cluster, two clusters of two: every boss is across the WAN.
cat > "$work/grid-1-2-2.xml" <<'GRID'
<grid>
  <cluster name="c0" site="s0" slots="1"><relay link="127.0.0.1:0" local="127.0.0.1:0"/><network nodes="private" inbound="no"/><launch>mpiexec -launcher fork -n {np}</launch></cluster>
  <cluster name="c1" site="s1" slots="2"><relay link="127.0.0.1:0" local="127.0.0.1:0"/><network nodes="private" inbound="no"/><launch>mpiexec -launcher fork -n {np}</launch></cluster>
  <cluster name="c2" site="s2" slots="2"><relay link="127.0.0.1:0" local="127.0.0.1:0"/><network nodes="private" inbound="no"/><launch>mpiexec -launcher fork -n {np}</launch></cluster>
</grid>
GRID

for ((i = 1; i <= runs; i++)); do
  echo "run $i of $runs ..." >&2
  for roles in --workers-only ""; do
    for mode in vanilla grid hier; do
      build/bin/gridrun --clusters 3 --ranks-per-cluster 2 "${wan[@]}" $(profile raytrace --mode $mode $roles --json "$@") |
        sed 's/^\[[^]]*\] //' >> "$work/raytrace.json"
    done
  done
  build/bin/gridrun --clusters 1 --ranks-per-cluster 3 $(profile queue_bench --tasks 100000 --bosses-idle --master-idle) |
    sed 's/^\[[^]]*\] //; s/"levels":"cluster"/"levels":"one-boss"/' >> "$work/dispatch.json"
  build/bin/gridrun --grid "$work/grid-1-2-2.xml" "${wan[@]}" $(profile queue_bench --tasks 20000 --master-idle) |
    sed 's/^\[[^]]*\] //' >> "$work/dispatch.json"
  build/bin/gridrun --grid "$work/grid-1-2-2.xml" "${wan[@]}" $(profile queue_bench --tasks 1000 --master-idle --levels single) |
    sed 's/^\[[^]]*\] //' >> "$work/dispatch.json"
done
echo "raytrace, 3 clusters x 2 across the emulated WAN:"
awk -v keys=mode,workers_only -v values=makespan_ms,phase1_ms,phase2_ms,phase3_ms,queue_wan_msgs_per_task -f bench/json_medians.awk "$work/raytrace.json"
echo "dispatch of empty tasks (one-boss: 1 cluster x 3; cluster, single: 1+2+2 across the emulated WAN):"
awk -v keys=levels,procs -v values=tasks,tasks_per_s,wan_msgs_per_task -f bench/json_medians.awk "$work/dispatch.json"
echo "raw results: $work" >&2
