#!/usr/bin/env bash
# MPI-IO across clusters against MPICH alone (docs/benchmarks.md, "MPI-IO across clusters"):
# io_bench's collective write and read of one file of MIB MiB by 4 ranks, each rank a
# contiguous part and again an interleaved subarray view, run
#   alone      by MPICH alone (mpiexec.mpich -n 4), ROMIO's default hints;
#   alone-ind  the same with ROMIO_HINTS giving romio_cb_write=disable, which is what the
#              MPI layer gives ROMIO for a file opened across clusters (docs/mpi.md, "Files");
#   grid       through gridrun on 2 clusters x 2 over the emulated WAN (10 ms, 100 Mbit/s),
#              the file on the file system both clusters declare (the embedded grid's /);
#   one-cluster the same grid declaring no shared file system (gridrun --unshared-files):
#              the file lives in c0, whose two ranks serve c1's two;
#   alone-c0   MPICH alone writing (reading) the whole file from 2 ranks, c0's share of
#              one-cluster's bound (the other: c1's half of the file over the WAN's rate);
# alternated RUNS times, each printing the medians of its own 7 rounds; io_overlap on
# one-cluster (4 MiB per rank written blocking and non-blocking, with 700 ms of computing
# before the wait); and the contiguous
# layout through parallel HDF5 (hdf5_bench, built here with h5pcc.mpich where Debian's HDF5
# for MPICH is installed), alone and grid.
#
#   bench/io.sh [RUNS] [MIB]      (defaults 3 and 64)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}; mib=${2:-64}
[ -x build/bin/io_bench ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d /tmp/io-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "romio_cb_write disable" > "$work/hints"
hdf5=""
if command -v h5pcc.mpich >/dev/null; then
  (cd "$work" && h5pcc.mpich -O2 -o hdf5_bench "$OLDPWD/bench/hdf5_bench.c") && hdf5=$work/hdf5_bench
else
  echo "io.sh: h5pcc.mpich is missing (libhdf5-mpich-dev): no HDF5 figures" >&2
fi
for r in $(seq "$runs"); do
  echo "# run $r"
  timeout 600 mpiexec.mpich -n 4 build/bin/io_bench "$work/file" "$mib" 7 | sed 's/^/alone      /'
  ROMIO_HINTS="$work/hints" timeout 600 mpiexec.mpich -n 4 build/bin/io_bench "$work/file" "$mib" 7 | sed 's/^/alone-ind  /'
  timeout 600 build/bin/gridrun --clusters 2 --ranks-per-cluster 2 --emulate-wan 10ms,100mbit -n 4 \
    build/bin/io_bench "$work/file" "$mib" 7 | sed 's/^\[c0:0\] /grid       /'
  ROMIO_HINTS="$work/hints" timeout 600 mpiexec.mpich -n 2 build/bin/io_bench "$work/file" "$mib" 7 | sed 's/^/alone-c0   /'
  timeout 1200 build/bin/gridrun --clusters 2 --ranks-per-cluster 2 --unshared-files --emulate-wan 10ms,100mbit -n 4 \
    build/bin/io_bench "$work/file" "$mib" 7 | sed 's/^\[c0:0\] /one-cluster /'
  timeout 600 build/bin/gridrun --clusters 2 --ranks-per-cluster 2 --unshared-files --emulate-wan 10ms,100mbit -n 4 \
    build/bin/io_overlap "$work/overlap" 4 5 700 | sort | sed 's/^\[c.:.\] /overlap    /'
  if [ -n "$hdf5" ]; then
    timeout 600 mpiexec.mpich -n 4 "$hdf5" "$work/file.h5" "$mib" 7 | sed 's/^/alone      /'
    timeout 600 build/bin/gridrun --clusters 2 --ranks-per-cluster 2 --emulate-wan 10ms,100mbit -n 4 \
      "$hdf5" "$work/file.h5" "$mib" 7 | sed 's/^\[c0:0\] /grid       /'
    timeout 1200 build/bin/gridrun --clusters 2 --ranks-per-cluster 2 --unshared-files --emulate-wan 10ms,100mbit -n 4 \
      "$hdf5" "$work/file.h5" "$mib" 7 | sed 's/^\[c0:0\] /one-cluster /'
  fi
done
