#!/usr/bin/env bash
# Quick start 1: install what is missing, build, and run the demo job
# (jobprofiles/helloworld.xml) on the embedded default grid of this machine. Only what
# running needs is installed and built (no test suite, Slurm, sshd or clang).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh run
scripts/build.sh --no-tests
echo "+ build/bin/gridrun jobprofiles/helloworld.xml"
exec build/bin/gridrun jobprofiles/helloworld.xml
