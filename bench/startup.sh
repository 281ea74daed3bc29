#!/usr/bin/env bash
# Start-up cost of a whole gridrun job against plain mpiexec, in the same run.
#
#   bench/startup.sh [RUNS]     (default 7 runs of each; needs a build in build/)
#
# A: build/bin/gridrun -n 4 jobprofiles/helloworld.xml   (embedded grid: broker, 2 relays,
#    fresh certificates, 2 MPICH jobs, topology published, ping-pong, barrier, teardown)
# B: mpiexec -n 4 build/bin/mpi_hello                    (an MPI hello world without gridrt)
# Runs alternate A, B, A, B... so both see the same machine load. Prints the medians and
# their ratio; the targets are A <= 1.0 s and A <= 5 x B.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
[ -x build/bin/gridrun ] && [ -x build/bin/mpi_hello ] || { echo "build first: scripts/build.sh" >&2; exit 1; }

now() { date +%s%N; }
a=(); b=()
for ((i = 0; i < runs; i++)); do
  t0=$(now); build/bin/gridrun -n 4 jobprofiles/helloworld.xml >/dev/null; t1=$(now)
  a+=($(( (t1 - t0) / 1000 )))
  t0=$(now); mpiexec.mpich -n 4 build/bin/mpi_hello >/dev/null; t1=$(now)
  b+=($(( (t1 - t0) / 1000 )))
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : int((v[NR/2]+v[NR/2+1])/2)}'; }
ma=$(median "${a[@]}"); mb=$(median "${b[@]}")
echo "runs per command:               $runs"
echo "gridrun -n 4 helloworld.xml:    median $((ma / 1000)) ms   (all: ${a[*]} us)"
echo "mpiexec.mpich -n 4 mpi_hello:   median $((mb / 1000)) ms   (all: ${b[*]} us)"
awk -v a="$ma" -v b="$mb" 'BEGIN { printf "ratio gridrun / mpiexec:        %.2f\n", a / b }'
