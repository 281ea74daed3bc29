#!/usr/bin/env bash
# Quick start 2: install what is missing, build, and run the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test
scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
