#!/usr/bin/env bash
# Configures and builds gridrt into build/ (binaries in build/bin), with its test suite, or
# without it given --no-tests (what scripts/demo.sh needs: no GoogleTest).
set -euo pipefail
cd "$(dirname "$0")/.."
testing=ON
[ "${1:-}" = --no-tests ] && testing=OFF
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=$testing >/dev/null
cmake --build build -j "$(nproc)"
