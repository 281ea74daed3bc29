#!/usr/bin/env bash
# The hardened checks, after the test suite (CI runs fuzz and asan; docs/security.md,
# "Fuzzing and sanitizers"):
#   1. the libFuzzer targets (fuzz/), built with clang: each replays its committed seed
#      corpus, then fuzzes for GRIDRT_FUZZ_SECONDS (default 30);
#   2. the whole test suite built with AddressSanitizer and UndefinedBehaviorSanitizer;
#   3. the tests that run threads (the runtime's I/O thread, the relays' link thread, the
#      daemons in one process) built with ThreadSanitizer.
# Any sanitizer report stops the program that made it, which fails its test.
#   scripts/check-hardened.sh [fuzz|asan|tsan]...   (all three by default)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/install-deps.sh
jobs=$(nproc)
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(fuzz asan tsan)
. scripts/test-tmpdir.sh  # (the sanitizer trees run the same tests)

# A configured tree in DIR with the given CMake options (and compilers), built whole or only
# the targets in $targets. Optimised less (-O1) and with line tables only (-g1), which is
# what a sanitizer's report needs (file and line of every frame): the build is most of these
# steps' time, and a file of the relay compiles in half the time with ASan this way
# (docs/benchmarks.md, "CI parts"). The sanitizer trees are unity builds (CMake's: a
# target's sources compiled a few at a time as one file, so that Asio's and the standard
# library's headers are compiled once per group instead of once per file): the ASan tree
# builds in about 630 s instead of 870-1160; the suite's own build (scripts/build.sh) is
# not one, so that every file still compiles alone. (-Wno-subobject-linkage: in one such
# file a type of another's anonymous namespace looks to GCC like one of a header.)
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_CXX_FLAGS=-Wno-subobject-linkage)
build() {
  local dir=$1
  shift
  local flags="-O1 -g1 -DNDEBUG"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags" "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
  # shellcheck disable=SC2086  # (a list of targets)
  cmake --build "$dir" -j "$jobs" ${targets:+--target $targets} >"$dir.build.log" 2>&1 || { tail -n 50 "$dir.build.log"; exit 1; }
}

for step in "${steps[@]}"; do
  start=$(date +%s)
  case $step in
    fuzz)
      echo "== libFuzzer targets (clang)"
      CC=clang CXX=clang++ build build-fuzz -DGRIDRT_FUZZ=ON -DGRIDRT_FUZZ_SECONDS="${GRIDRT_FUZZ_SECONDS:-30}"
      (cd build-fuzz && ctest --output-on-failure -V -j "$jobs" | grep -E "^[0-9]+: (==|stat::|FINDING)|Test +#|tests passed|Failed")
      ;;
    asan)
      echo "== the test suite with AddressSanitizer and UndefinedBehaviorSanitizer"
      build build-asan -DGRIDRT_SANITIZE=address,undefined "${unity[@]}"
      # The MPI layer is loaded (LD_PRELOAD) into unmodified MPI programs that were not
      # built with the sanitizer: its runtime then comes in with the layer, not first.
      # Memory errors and undefined behaviour fail a test (halt_on_error, UBSan's traps).
      # LeakSanitizer too (GRIDRT_DETECT_LEAKS=0 turns it off): MPICH and UCX keep memory
      # past MPI_Finalize, suppressed in scripts/lsan.supp; anything of gridrt's still held
      # at exit fails its test (docs/security.md, "Fuzzing and sanitizers").
      # The three longest calibrations (whole grids measured, tens of seconds each) are left
      # to the suite's own run: the other calibration tests take gridcalibrate through the
      # same code here in a fraction of the time; so are the two relay links cut for twenty
      # seconds, whose code the two-second cuts run (the rest is waiting). GRIDRT_ASAN_SKIP=''
      # runs them all.
      (cd build-asan && ASAN_OPTIONS=verify_asan_link_order=0:halt_on_error=1:detect_leaks=${GRIDRT_DETECT_LEAKS:-1} \
         LSAN_OPTIONS=suppressions=$root/scripts/lsan.supp UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
         ctest --output-on-failure -j "$jobs" -E "${GRIDRT_ASAN_SKIP-^(Calibration\.(MeasuresRepresentative|NodesOfACluster)|DelayedPairs\.CalibrationSplits|ThreeSitesPatient\.ALink(Dropped|Reset)ForTwentySeconds)}")
      ;;
    tsan)
      echo "== threaded tests with ThreadSanitizer"
      # UCX (under MPICH) hooks malloc and mmap by patching them, which ThreadSanitizer's own
      # interceptors do not survive (a crash as soon as a test program linked with MPICH
      # starts, even to list its tests): UCX's hooks are off here, during the build (which
      # lists the tests) and the run.
      export UCX_MEM_MALLOC_HOOKS=no UCX_MEM_EVENTS=no
      # Only the test programs that hold these tests are built (not the MPI layer, the tools
      # and the MPI programs, which no threaded test runs): the build is most of this step.
      targets="test_units test_daemons test_channel test_rma_engine test_file_service test_transport" build build-tsan -DGRIDRT_SANITIZE=thread "${unity[@]}"
      (cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j "$jobs" -R "${GRIDRT_TSAN_TESTS:-^(Transport|Channel|RmaEngine|FileService|Daemons|Links|TlsStreamTest|Watchdog|Admission)\.}")
      ;;
    *)
      echo "check-hardened: unknown step '$step' (fuzz, asan, tsan)" >&2
      exit 2
      ;;
  esac
  echo "== $step: $(( $(date +%s) - start )) s"
done
