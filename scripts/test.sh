#!/usr/bin/env bash
# Quick start 2: install what is missing, build, run the whole test suite with ctest, and
# check that every source follows .clang-format (scripts/check-format.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test
scripts/build.sh
# The tests' files (GoogleTest's TempDir) go to a directory of this run's own, removed at the
# end: in /tmp itself their fixed names would meet another run's, and stayed behind (about
# 160 files a run). Mode 1777 as /tmp's: some steps run as the tests' local accounts.
TEST_TMPDIR=$(mktemp -d /tmp/gridrt-tests-XXXXXX)
export TEST_TMPDIR
trap 'rm -rf "$TEST_TMPDIR"' EXIT
chmod 1777 "$TEST_TMPDIR"
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
scripts/check-format.sh
