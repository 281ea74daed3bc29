#!/usr/bin/env bash
# install_check.sh BUILD_DIR SOURCE_DIR: installs the build under a fresh prefix, moves the
# prefix elsewhere (an installation must not depend on where it was made), and uses it as a
# user would: every tool's --version, the demo job and an unmodified MPI program run by the
# installed gridrun, and the application template built outside the project with CMake
# (find_package) and with make (pkg-config), each run across two clusters. Fails naming the
# first thing that is wrong.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/gridrt-install-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "install_check: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/made" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "cmake --install failed"; }
mv "$work/made" "$work/prefix"
p=$work/prefix

# What is installed, and nothing else in bin/: the user's tools (no tests, no benchmarks).
tools=$(cd "$p/bin" && ls | tr '\n' ' ')
[ "$tools" = "gridbench gridbroker gridproc gridrelay gridrun " ] || fail "bin/ holds '$tools'"
version=$(sed -n 's/^#define GRIDRT_VERSION "\(.*\)"/\1/p' "$p/include/gridrt/version.h")
[ -n "$version" ] || fail "include/gridrt/version.h has no GRIDRT_VERSION"
for tool in gridrun gridbroker gridrelay gridproc gridbench; do
  out=$("$p/bin/$tool" --version) || fail "$tool --version failed"
  [ "$out" = "$tool (gridrt) $version" ] || fail "$tool --version says '$out'"
done
for lib in libgridrt libgridmpi; do
  so=$(find "$p" -name "$lib.so.*.*.*" | head -n 1)
  [ -n "$so" ] || fail "no versioned $lib under $p"
  readelf -d "$so" | grep -q "SONAME.*\[$lib.so.${version%%.*}\]" || fail "$so has no SONAME $lib.so.${version%%.*}"
done
readelf -d "$p/bin/gridrun" | grep -q 'RUNPATH.*\[\$ORIGIN/' || fail "bin/gridrun's RUNPATH is not relative to it"
for f in "$p"/share/man/man1/gridrun.1 "$p"/lib/systemd/system/gridbroker.service "$p"/lib/systemd/system/gridrelay@.service \
         "$p"/share/gridrt/jobprofiles/helloworld.xml; do
  [ -f "$f" ] || fail "${f#$p/} is not installed"
done
grep -q "ExecStart=$work/made/bin/gridbroker " "$p/lib/systemd/system/gridbroker.service" ||
  fail "gridbroker.service does not start the installed gridbroker"

# The demo job and an unmodified MPI program from the installed example JobProfiles.
cd "$work"
# gridrun calibrate runs its job (libexec/gridrt/gridcalibrate) from the installed prefix.
"$p/bin/gridrun" calibrate --clusters 2 --ranks-per-cluster 2 --sizes 0,1024 --output "$work/model.json" >/dev/null 2>"$work/calibrate.err" ||
  fail "gridrun calibrate failed: $(cat "$work/calibrate.err")"
grep -q '"measurements": 3' "$work/model.json" || fail "the installed calibration wrote: $(cat "$work/model.json")"
out=$("$p/bin/gridrun" -n 4 "$p/share/gridrt/jobprofiles/helloworld.xml" 2>&1) || fail "the demo job failed: $out"
grep -q '^\[c1:3\] rank=3 size=4 group=g1 color=0 cluster=c1' <<<"$out" || fail "the demo job's output: $out"
out=$("$p/bin/gridrun" "$p/share/gridrt/jobprofiles/mpi-split.xml" 2>&1) || fail "the MPI example failed: $out"
grep -q '3 processes in MPI_COMM_WORLD, 2 clusters holding 3 of them' <<<"$out" || fail "the MPI example's output: $out"

# The application template, outside the project, against the installed prefix.
check_app() {  # how it was built, the program
  local how=$1 app=$2
  out=$("$p/bin/gridrun" -n 4 "$app" 2>&1) || fail "the template built with $how failed: $out"
  grep -q '^\[c0:0\] sum of 1..4 over the grid: 10$' <<<"$out" || fail "the template built with $how: $out"
  grep -q 'sum of the squares of 1..100, from the task queue: 338350$' <<<"$out" || fail "the template built with $how: $out"
  grep -q '^\[c1:3\] rank 3 of 4: group .*, cluster c1, site ' <<<"$out" || fail "the template built with $how: $out"
}
cp -r "$p/share/doc/gridrt/examples/app-template" "$work/cmake-app"
(cd "$work/cmake-app" && cmake -S . -B build -DCMAKE_PREFIX_PATH="$p" >"$work/app.log" 2>&1 && cmake --build build >>"$work/app.log" 2>&1) ||
  { cat "$work/app.log"; fail "the template does not build with CMake against the prefix"; }
check_app CMake "$work/cmake-app/build/app"
cp -r "$p/share/doc/gridrt/examples/app-template" "$work/make-app"
(cd "$work/make-app" && PKG_CONFIG_PATH=$p/lib/pkgconfig make >"$work/app.log" 2>&1) ||
  { cat "$work/app.log"; fail "the template does not build with make and pkg-config against the prefix"; }
check_app make "$work/make-app/app"
(cd "$work/make-app" && out=$("$p/bin/gridrun" -n 4 app.xml 2>&1) && grep -q 'sum of 1..4 over the grid: 10' <<<"$out") ||
  fail "the template's JobProfile did not run"
echo "install_check: prefix $version installed, moved, and used: tools, demo, MPI example, template with CMake and make"
