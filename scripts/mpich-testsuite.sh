#!/usr/bin/env bash
# Runs MPICH's own test suite (test/mpi of Debian's MPICH source package), unmodified,
# across two clusters of the embedded grid, and the same tests under MPICH alone for
# comparison: what fails in both is MPICH's (or this machine's), what fails only across
# clusters is gridrt's. Not part of the test command: it fetches and builds a few hundred
# programs and runs for tens of minutes.
#
#   scripts/mpich-testsuite.sh [DIRS] [TIMEOUT] [--grid-only] [--unshared-files]
#     DIRS     test directories of test/mpi, comma-separated (pt2pt,coll,comm,group,attr,
#              errhan,init,topo,basic by default)
#     TIMEOUT  seconds per test (default 60)
#     --grid-only  each test across clusters only, not under MPICH alone too (half the time)
#     --unshared-files  the clusters share no file system: every file lives in the cluster
#              of rank 0 and the other cluster's processes are served from there (io)
#
# Needs the build (scripts/build.sh) and Debian's source packages: a deb-src entry is added
# under /etc/apt/sources.list.d when apt has none. Results: build/mpich-testsuite/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dirs=${1:-pt2pt,coll,comm,group,attr,errhan,init,topo,basic}
timeout=${2:-60}
work=$root/build/mpich-testsuite
[ -x build/bin/gridrun ] || { echo "mpich-testsuite: build first (scripts/build.sh)" >&2; exit 1; }
mkdir -p "$work"
cd "$work"

if ! ls mpich-*/test/mpi/configure >/dev/null 2>&1; then
  if ! apt-get source --print-uris mpich >/dev/null 2>&1; then
    echo "mpich-testsuite: adding Debian's source packages to apt (/etc/apt/sources.list.d/gridrt-deb-src.sources)"
    . /etc/os-release
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$VERSION_CODENAME" "$VERSION_CODENAME" >/etc/apt/sources.list.d/gridrt-deb-src.sources
    apt-get update -qq
  fi
  echo "mpich-testsuite: fetching MPICH's source package"
  apt-get source --download-only mpich >/dev/null
  tar xf mpich_*.orig.tar.* --wildcards 'mpich-*/test/mpi'
fi
suite=$(ls -d "$work"/mpich-*/test/mpi)
cd "$suite"
if [ ! -f util/libmtest.la ]; then
  echo "mpich-testsuite: configuring (log: $work/configure.log)"
  ./configure --with-mpi=/usr --disable-cxx --disable-fortran --disable-spawn >"$work/configure.log" 2>&1
  make -C util >"$work/make-util.log" 2>&1
  make -C dtpools >"$work/make-dtpools.log" 2>&1 || true
fi
for d in ${dirs//,/ }; do
  echo "mpich-testsuite: building $d"
  make -k -C "$d" >"$work/make-$d.log" 2>&1 || true  # (a test that does not build is reported as such)
done
exec python3 "$root/scripts/mpich_testsuite.py" --suite "$suite" --gridrun "$root/build/bin/gridrun" --dirs "$dirs" \
  --timeout "$timeout" --results "$work/results" "${@:3}"
