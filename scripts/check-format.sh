#!/usr/bin/env bash
# The tree follows .clang-format: lists every C and C++ source that clang-format would change
# and fails if there is one. (To format: clang-format -i FILE..., or the whole tree with
# git ls-files '*.cpp' '*.h' '*.hpp' '*.c' | xargs clang-format -i.)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is not installed (scripts/install-deps.sh test installs clang)" >&2; exit 1; }
bad=0
while IFS= read -r f; do
  if ! clang-format --dry-run -Werror "$f" 2>/dev/null; then
    echo "check-format: $f does not follow .clang-format (clang-format -i $f)"
    bad=1
  fi
done < <(git ls-files '*.cpp' '*.h' '*.hpp' '*.c' | grep -v '^fuzz/corpus/')
[ "$bad" = 0 ] && echo "check-format: every source follows .clang-format"
exit "$bad"
