#!/usr/bin/env bash
# Quick start 2: install what is missing, build, run the whole test suite with ctest, and
# check that every source follows .clang-format (scripts/check-format.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test
scripts/build.sh
. scripts/test-tmpdir.sh
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
scripts/check-format.sh
