#!/usr/bin/env bash
# What gridrt's MPI layer costs, each comparison inside one run of this script, alternating
# the two sides RUNS times and printing medians (docs/benchmarks.md, "The MPI layer"):
#   1. inside one cluster, with the layer and without it (GRIDRT_MPI_LAYER=off): Debian's
#      NetPIPE (NPmpich2, unmodified) latency and peak bandwidth, and an 8-byte MPI_Allreduce
#      loop on the cluster's communicator;
#   2. between two clusters: MPI_Send/MPI_Recv through the layer against gridrt_send/recv,
#      the same two processes (mpi_layer_bench pingpong), on the relay path and on the
#      direct path; and NetPIPE, unmodified, across the two clusters;
#   3. on 3 clusters x 2 over the emulated WAN (10 ms, 100 Mbit/s): every collective through
#      MPI_ calls on MPI_COMM_WORLD against gridrt::Comm (gridbench --algo layer,auto), 8 B
#      and 64 KiB; MPI_Comm_split and MPI_Comm_dup of MPI_COMM_WORLD against the same
#      through gridrt::Comm.
#
#   bench/mpi_layer.sh [RUNS]      (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
[ -x build/bin/mpi_layer_bench ] && [ -x build/bin/gridbench ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
command -v NPmpich2 >/dev/null || { echo "NPmpich2 is missing: scripts/install-deps.sh installs netpipe-mpich2" >&2; exit 1; }
work=$(mktemp -d /tmp/mpi-layer-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]}'; }
grid() {  # grid FILE NETWORK: two one-slot clusters at two sites
  cat > "$1" <<XML
<grid>
  <cluster name="c0" site="site0" slots="1"><relay link="127.0.0.1:0" local="127.0.0.1:0"/>$2<launch>mpiexec -launcher fork -n {np}</launch></cluster>
  <cluster name="c1" site="site1" slots="1"><relay link="127.0.0.1:0" local="127.0.0.1:0"/>$2<launch>mpiexec -launcher fork -n {np}</launch></cluster>
</grid>
XML
}
grid "$work/relay.xml" '<network nodes="private" inbound="no"/>'
# Inside one cluster each process is bound to a core of its own: unbound, the two NetPIPE
# processes and the grid's daemons take turns on the 2 cores and the figures swing by 2x
# from one run to the next whatever the layer does.
cat > "$work/local.xml" <<XML
<grid>
  <cluster name="c0" site="site0" slots="2"><relay link="127.0.0.1:0" local="127.0.0.1:0"/><launch>mpiexec -launcher fork -bind-to core -n {np}</launch></cluster>
</grid>
XML
grid "$work/direct.xml" '<network nodes="public" inbound="yes"/>'
# NetPIPE's output: bytes, Mbit/s, seconds one way per line; latency = the time at the
# smallest size (1 byte), bandwidth = the best rate.
netpipe() {  # netpipe LABEL GRIDRUN-ARGS...
  local label=$1; shift
  (cd "$work" && "$OLDPWD/build/bin/gridrun" "$@" NPmpich2 -p 0 -u 4194304 -o "$work/np.out" >/dev/null 2>&1)
  awk -v l="$label" 'NR==1 {lat=$3 * 1e6} $2>bw {bw=$2} END {printf "%s %.2f %.1f\n", l, lat, bw}' "$work/np.out" >> "$work/netpipe"
  awk -v l="$label" '{print l, $1, $3}' "$work/np.out" >> "$work/curves"
}

# Which side runs first alternates from run to run: on this machine the second of two
# back-to-back shared-memory runs is often slower at large sizes (up to 20%), whichever it is.
echo "# 1. inside one cluster (2 processes), with and without the layer, $runs runs"
for ((i = 0; i < runs; ++i)); do
  if ((i % 2)); then order="off on"; else order="on off"; fi
  for layer in $order; do
    GRIDRT_MPI_LAYER=$layer netpipe "local-$layer" --grid "$work/local.xml" -n 2
    GRIDRT_MPI_LAYER=$layer build/bin/gridrun --grid "$work/local.xml" -n 2 build/bin/mpi_layer_bench allreduce --rounds 5 2>/dev/null |
      sed -n 's/.*: \([0-9.]*\) us per call.*/'"$layer"' \1/p' >> "$work/allreduce"
  done
done
for layer in on off; do
  printf '  layer %-3s NetPIPE latency %7s us, bandwidth %8s Mbit/s; allreduce 8 B %6s us\n' "$layer" \
    "$(awk -v l="local-$layer" '$1==l {print $2}' "$work/netpipe" | median)" \
    "$(awk -v l="local-$layer" '$1==l {print $3}' "$work/netpipe" | median)" \
    "$(awk -v l="$layer" '$1==l {print $2}' "$work/allreduce" | median)"
done
# NetPIPE's whole curve: for each size the median time with the layer over the median without.
for layer in on off; do
  awk -v l="local-$layer" '$1==l {print $2, $3}' "$work/curves" | sort -k1,1n -k2,2g |
    awk '{t[$1]=t[$1] " " $2} END {for (b in t) {n=split(t[b], v, " "); print b, v[int((n+1)/2)]}}' | sort -n > "$work/curve-$layer"
done
join "$work/curve-on" "$work/curve-off" | awk '{print $2 / $3}' | sort -g |
  awk '{v[NR]=$1} END {if (NR) printf "  NetPIPE time with / without the layer over %d sizes: median %.3f, from %.3f to %.3f\n", NR, v[int((NR+1)/2)], v[1], v[NR]}'

echo "# 2. between two clusters: MPI through the layer against gridrt's own (one-way us, MB/s; ratio = MPI/gridrt time)"
for path in relay direct; do
  for ((i = 0; i < runs; ++i)); do
    build/bin/gridrun --grid "$work/$path.xml" -n 2 build/bin/mpi_layer_bench pingpong 8 1024 65536 1048576 4194304 --rounds 5 2>/dev/null |
      sed -n 's/^\[[^]]*\] *\([0-9][0-9]*\) /\1 /p' >> "$work/pingpong-$path"
    netpipe "$path" --grid "$work/$path.xml" -n 2
  done
  echo "  $path path:"
  for bytes in $(awk '{print $1}' "$work/pingpong-$path" | sort -un); do
    printf '    %8s B  mpi %9s us  gridrt %9s us  ratio %s\n' "$bytes" \
      "$(awk -v b="$bytes" '$1==b {print $2}' "$work/pingpong-$path" | median)" \
      "$(awk -v b="$bytes" '$1==b {print $3}' "$work/pingpong-$path" | median)" \
      "$(awk -v b="$bytes" '$1==b {print $6}' "$work/pingpong-$path" | median)"
  done
  printf '    NetPIPE unmodified: latency %s us, bandwidth %s Mbit/s\n' \
    "$(awk -v l="$path" '$1==l {print $2}' "$work/netpipe" | median)" "$(awk -v l="$path" '$1==l {print $3}' "$work/netpipe" | median)"
done

echo "# 3. 3 clusters x 2, emulated WAN 10ms,100mbit: MPI_ calls (layer) against gridrt::Comm (auto), median avg_us of $runs runs"
for ((i = 0; i < runs; ++i)); do
  build/bin/gridbench --clusters 3 --ranks-per-cluster 2 --emulate-wan 10ms,100mbit --op all --algo auto,layer --sizes 8,65536 \
    --iters 10 --json 2>/dev/null >> "$work/coll"
  build/bin/gridbench --clusters 3 --ranks-per-cluster 2 --emulate-wan 10ms,100mbit --op split,dup --algo auto,layer --sizes 8 \
    --iters 10 --json 2>/dev/null >> "$work/coll"
done
field() { sed -n 's/.*"'"$1"'":"\{0,1\}\([^",}]*\).*/\1/p'; }
while read -r op bytes; do
  a=$(grep "\"op\":\"$op\"" "$work/coll" | grep '"algo":"auto"' | grep "\"bytes\":$bytes," | field avg_us | median)
  l=$(grep "\"op\":\"$op\"" "$work/coll" | grep '"algo":"layer"' | grep "\"bytes\":$bytes," | field avg_us | median)
  printf '  %-9s %6s B  gridrt::Comm %10s us  MPI_ %10s us  ratio %s\n' "$op" "$bytes" "$a" "$l" "$(awk -v a="$a" -v l="$l" 'BEGIN {printf "%.3f", l / a}')"
done < <(paste <(field op < "$work/coll") <(field bytes < "$work/coll") | sort -u -k1,1 -k2,2n)
