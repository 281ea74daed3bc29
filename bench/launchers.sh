#!/usr/bin/env bash
# bench/launchers.sh [RUNS]: the start-up of `gridrun -n 4` when a cluster's part is launched
# by hydra over ssh and by Slurm (salloc, hydra inside), each against mpiexec's fork launcher
# on the same grid, alternated, medians of RUNS (default 5). It runs the launcher tests'
# disabled timing cases (tests/test_launchers.cpp), which build the nodes (network
# namespaces with sshd, or slurmctld and slurmd) as the tests do: needs root and a build.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
GRIDRT_STARTUP_RUNS=$runs build/tests/bin/test_launchers --gtest_also_run_disabled_tests --gtest_filter='*.DISABLED_StartupTimes' |
  grep -E '^startup:|FAILED|SKIPPED'
