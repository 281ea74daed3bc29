#!/usr/bin/env bash
# run_fuzzer.sh TARGET CORPUS SECONDS: replays every input of CORPUS (the committed seeds),
# then fuzzes for SECONDS from them, new inputs going to a scratch directory (the committed
# corpus is not changed). Exits non-zero on any finding; its input is kept and named.
set -euo pipefail
target=$1 corpus=$2 seconds=$3
work=$(mktemp -d /tmp/gridrt-fuzz-XXXXXX)
trap 'rm -rf "$work/new"' EXIT
mkdir -p "$work/new"
opts=(-max_len=65536 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$work/" -print_final_stats=1)
echo "== replaying $(ls "$corpus" | wc -l) seed(s) from $corpus"
"$target" "${opts[@]}" -runs=0 "$corpus" 2>"$work/replay.log" || { cat "$work/replay.log"; echo "FINDING while replaying; inputs in $work"; exit 1; }
echo "== fuzzing for ${seconds} s"
if ! "$target" "${opts[@]}" -max_total_time="$seconds" "$work/new" "$corpus" 2>"$work/fuzz.log"; then
  tail -n 60 "$work/fuzz.log"
  echo "FINDING: the input that made it is in $work (crash-*, leak-*, timeout-*, oom-*)"
  exit 1
fi
# libFuzzer's own figures: executions in all and per second, coverage reached.
grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|cov: " "$work/fuzz.log" | tail -n 3
rm -rf "$work"
