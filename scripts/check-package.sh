#!/usr/bin/env bash
# The Debian package as a user gets it: builds gridrt_<version>_<arch>.deb from build/
# (cpack), installs it with apt-get (which brings its dependencies from Debian), runs the
# demo job with /usr/bin/gridrun and an application built against /usr, prints the
# package's size and the time its installation took, then removes the package again
# (`--keep` leaves it installed). Needs root; run after scripts/build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
[ "$(id -u)" -eq 0 ] || { echo "check-package: needs root (apt-get install)"; exit 1; }
keep=${1:-}
(cd build && cpack -G DEB >cpack.log 2>&1) || { cat build/cpack.log; exit 1; }
deb=$(ls build/gridrt_*.deb)
echo "check-package: $deb, $(stat -c %s "$deb") bytes"
if dpkg-query -W -f='${Status}' gridrt 2>/dev/null | grep -q "install ok installed"; then
  echo "check-package: gridrt is installed already; remove it first (apt-get remove gridrt)" >&2
  exit 1
fi
start=$(date +%s.%N)
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "./$deb" >build/apt-install.log 2>&1 || { cat build/apt-install.log; exit 1; }
echo "check-package: apt-get install took $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $start }") s"
cleanup() { [ "$keep" = "--keep" ] || DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq gridrt >/dev/null 2>&1 || true; }
trap cleanup EXIT
work=$(mktemp -d /tmp/gridrt-package-XXXXXX)
trap 'rm -rf "$work"; cleanup' EXIT
cd "$work"
[ "$(command -v gridrun)" = /usr/bin/gridrun ] || { echo "check-package: gridrun is not /usr/bin/gridrun"; exit 1; }
out=$(gridrun -n 4 /usr/share/gridrt/jobprofiles/helloworld.xml 2>&1) || { echo "$out"; echo "check-package: the demo failed"; exit 1; }
grep -q 'barrier passed by 4 processes' <<<"$out" || { echo "$out"; echo "check-package: the demo's output is wrong"; exit 1; }
cp -r /usr/share/doc/gridrt/examples/app-template app && cd app
(cmake -S . -B build >/dev/null && cmake --build build >/dev/null && make >/dev/null) || { echo "check-package: the template does not build against /usr"; exit 1; }
for app in build/app ./app; do
  out=$(gridrun -n 4 "$app" 2>&1) && grep -q 'sum of 1..4 over the grid: 10' <<<"$out" || { echo "$out"; echo "check-package: $app failed"; exit 1; }
done
man -w gridrun >/dev/null 2>&1 || [ -f /usr/share/man/man1/gridrun.1.gz ] || { echo "check-package: no manual page for gridrun"; exit 1; }
# The demo's wall time from the package and from the build tree, alternated (medians of 5).
seconds() { local t=$(date +%s.%N); "$@" >/dev/null 2>&1; awk "BEGIN { print $(date +%s.%N) - $t }"; }
installed=() built=()
for i in 1 2 3 4 5; do
  installed+=("$(seconds gridrun -n 4 /usr/share/gridrt/jobprofiles/helloworld.xml)")
  built+=("$(seconds "$src/build/bin/gridrun" -n 4 "$src/jobprofiles/helloworld.xml")")
done
median() { printf '%s\n' "$@" | sort -g | sed -n 3p; }
echo "check-package: the demo (gridrun -n 4 helloworld.xml), median of 5: $(median "${installed[@]}") s installed, $(median "${built[@]}") s from the build tree"
echo "check-package: $(gridrun --version) from the package ran the demo and the template (CMake and make)"
