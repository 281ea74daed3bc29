#!/usr/bin/env bash
# Runs OpenCoarrays' own test programs (shipped built by Debian's libcoarrays-mpich-dev:
# Fortran coarray programs on MPICH's one-sided communication), unmodified, across two
# clusters of the embedded grid, and each under MPICH alone for comparison (with MPICH's
# shared-memory path off, MPIR_CVAR_NOLOCAL=1, without which MPICH 4.0.2 gives coarray
# programs wrong values on this machine). A test passes when it exits 0 and says nothing of
# a failure. Not part of the test command: it runs for minutes.
#
#   scripts/opencoarrays-tests.sh [IMAGES] [TIMEOUT]
#     IMAGES   images (processes) per test, split over the two clusters (default 4)
#     TIMEOUT  seconds per run (default 60)
#
# Needs the build (scripts/build.sh) and libcoarrays-mpich-dev (scripts/install-deps.sh).
# Results: build/opencoarrays-tests/summary.txt, and each run's output beside it.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
images=${1:-4}
timeout=${2:-60}
tests=
for d in /usr/lib/x86_64-linux-gnu/open-coarrays/mpich/bin/OpenCoarrays-*-tests; do [ -d "$d" ] && tests=$d; done
[ -n "$tests" ] || { echo "opencoarrays-tests: OpenCoarrays' tests are missing (apt-get install libcoarrays-mpich-dev)" >&2; exit 1; }
[ -x build/bin/gridrun ] || { echo "opencoarrays-tests: build first (scripts/build.sh)" >&2; exit 1; }
out=build/opencoarrays-tests
mkdir -p "$out"
: >"$out/summary.txt"

# Whether a run's status and output say it passed.
passed() { [ "$1" -eq 0 ] && ! grep -qiE "test failed|error stop" "$2"; }

declare -A counts=()
for program in "$tests"/*; do
  [ -x "$program" ] || continue
  name=$(basename "$program")
  (cd "$out" && MPIR_CVAR_NOLOCAL=1 timeout "$timeout" mpiexec.mpich -n "$images" "$program" >"$name.alone" 2>&1)
  alone=$?
  (cd "$out" && timeout "$timeout" ../bin/gridrun --clusters 2 --ranks-per-cluster $(((images + 1) / 2)) -n "$images" "$program" \
     >"$name.grid" 2>&1)
  grid=$?
  passed "$alone" "$out/$name.alone" && a=pass || a=fail
  passed "$grid" "$out/$name.grid" && g=pass || g=fail
  case $g/$a in
    pass/pass) verdict="pass" ;;
    pass/fail) verdict="pass (fails under MPICH alone)" ;;
    fail/pass) verdict="FAIL across clusters only" ;;
    *) verdict="fails under MPICH alone too" ;;
  esac
  counts[$verdict]=$((${counts[$verdict]:-0} + 1))
  printf '%-32s %s  (grid: exit %d; MPICH alone: exit %d)\n' "$verdict" "$name" "$grid" "$alone" | tee -a "$out/summary.txt"
done
{
  echo
  for v in "${!counts[@]}"; do echo "${counts[$v]} $v"; done | sort -rn
} | tee -a "$out/summary.txt"
