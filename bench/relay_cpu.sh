#!/usr/bin/env bash
# Where a stream through the relays spends CPU: CPU-seconds per GB of each relay and each end
# process, and the share of the time both cores were idle, over a window in the middle of one
# long stream (bench/relay.sh with 1 MiB messages).
#
#   bench/relay_cpu.sh [BYTES] [SECONDS] [PLACEMENT]
#       BYTES     the stream's length (default 8589934592: long enough for the window)
#       SECONDS   the window measured, from the 5th second on (default 6)
#       PLACEMENT shared (default), apart or together: the relays' placement, as bench/relay.sh
#                 takes it
# Thread times from /proc (utime + stime of this stream's own gridrelay and relay_bench
# processes, not of others on the machine), idle from /proc/stat. The stream's rate is
# relay_bench's own figure for the whole stream, so the window must lie within it.
# GRIDRT_WINDOW and the like pass through to the job.
set -euo pipefail
case "${1:-}" in -h | --help) sed -n '2,14p' "$0" | cut -c3-; exit 0 ;; esac
cd "$(dirname "$0")/.."
bytes=${1:-8589934592}; seconds=${2:-6}; placement=${3:-shared}
[ -x build/bin/relay_bench ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
log=$(mktemp /tmp/relay-cpu.XXXXXX)
trap 'rm -f "$log"' EXIT
tick=$(getconf CLK_TCK)
cpus=$(nproc)
# The processes started by `run` (the stream), and their descendants.
descendants() { local c; for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
# "PID COMM TICKS" of each of the stream's relays and end processes, relays first.
times() {
  local p comm
  for p in $(descendants "$run"); do
    comm=$(cat "/proc/$p/comm" 2>/dev/null) || continue
    case "$comm" in gridrelay | relay_bench) echo "$p $comm $(awk '{print $14 + $15}' "/proc/$p/stat")" ;; esac
  done | sort -s -k2,2
}
bash bench/relay.sh 1 1048576:1048576 "$bytes" 1 relay "$placement" > "$log" 2>&1 &
run=$!
sleep 5
before=$(times); idle_before=$(awk '/^cpu /{print $5}' /proc/stat)
sleep "$seconds"
after=$(times); idle_after=$(awk '/^cpu /{print $5}' /proc/stat)
wait
rate=$(awk '/bandwidth/{print $6}' "$log")
[ -n "$rate" ] || { cat "$log" >&2; echo "relay_cpu: the stream gave no figure" >&2; exit 1; }
[ -n "$before" ] || { echo "relay_cpu: none of the stream's relays and end processes ran at the window's start" >&2; exit 1; }
# Each process's ticks over the window, matched by PID. The window must lie within the stream:
# a process that ended or began within it would leave the figures short, so none are given.
awk -v t="$tick" -v s="$seconds" -v rate="$rate" -v cpus="$cpus" -v idle=$((idle_after - idle_before)) '
  NF == 0 { next }
  NR == FNR { start[$1] = $3; next }
  !($1 in start) { printf "relay_cpu: %s %s began within the window\n", $2, $1 > "/dev/stderr"; short = 1; next }
  { used = ($3 - start[$1]) / t; total += used; line = line sprintf("  %s %.2f", $2, used / s / (rate / 1000)); delete start[$1] }
  END {
    for (p in start) { printf "relay_cpu: process %s ended within the window\n", p > "/dev/stderr"; short = 1 }
    if (short) { print "relay_cpu: the window does not lie within the stream: a longer BYTES or fewer SECONDS" > "/dev/stderr"; exit 1 }
    printf "stream %s MB/s; CPU-s per GB:%s; in all %.2f; cores idle %.0f%%\n", rate, line, total / s / (rate / 1000), idle / t / (s * cpus) * 100
  }' <(echo "$before") <(echo "$after")
