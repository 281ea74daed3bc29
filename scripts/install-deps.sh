#!/usr/bin/env bash
# Installs what gridrt needs from Debian's packages, and only what is missing (idempotent).
# Runs as root, or through sudo.
#   scripts/install-deps.sh run    what building gridrt and running jobs need (scripts/demo.sh)
#   scripts/install-deps.sh [test] that, and what the test suite, the sanitizer and fuzzing
#                                  builds and the Debian package need (scripts/test.sh, CI)
set -euo pipefail

mode=${1:-test}
case $mode in
  run | test) ;;
  *) echo "install-deps: unknown set '$mode' (run or test)" >&2; exit 2 ;;
esac

packages=(
  g++ gfortran make cmake    # toolchain (Fortran: the MPI layer's Fortran interface)
  python3                    # generates the MPI layer's wrappers from MPICH's headers
  libboost-dev               # Boost.Asio (headers)
  libssl-dev                 # OpenSSL: TLS 1.3, certificates
  libpugixml-dev             # JobProfile and grid description XML
  mpich libmpich-dev         # MPICH: mpiexec (hydra) and the MPI library
)
[ "$mode" = test ] && packages+=(
  libgtest-dev               # GoogleTest
  netpipe-mpich2             # NetPIPE (NPmpich2), an unmodified MPI program the tests run across clusters
  iproute2 iptables          # the three-site test network (network namespaces, firewalls, NAT)
  libnetfilter-queue-dev     # nfq_delay: delays between test nodes (iptables NFQUEUE; no netem here)
  passwd                     # useradd: the test of users' isolation makes two local accounts
  clang libclang-rt-dev      # libFuzzer and clang's sanitizers (scripts/check-hardened.sh)
  clang-format               # the tree's format (.clang-format, scripts/check-format.sh)
  pkgconf help2man dpkg-dev  # installing: gridrt.pc checked by the app template, manual pages, the Debian package
  openssh-server openssh-client   # the ssh launch of a cluster's part (tests start their own sshd)
  slurm-wlm munge            # the Slurm launch of a cluster's part (tests start their own slurmctld, slurmd, munged)
  libarmci-mpi-dev           # ARMCI-MPI (Global Arrays' one-sided layer on MPI): a program on it run across clusters by the tests
  libcoarrays-mpich-dev      # OpenCoarrays for MPICH (caf.mpich): Fortran coarray programs, built on one-sided MPI, run across clusters by the tests
  libhdf5-mpich-dev hdf5-tools  # parallel HDF5 for MPICH (h5pcc.mpich) and h5dump: an HDF5 program run across clusters by the tests
  yorick-mpy-mpich2          # Yorick's parallel interpreter (mpy.mpich2): an unmodified MPI program built on probes, run across clusters by the tests
  time                       # /usr/bin/time: a launch wrapper the MPI layer must reach through, in the tests
  iperf3                     # the baseline on a long, lossy line (bench/lossy_line.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: everything to $mode gridrt is installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
# The daemons these packages bring (sshd, slurmctld, slurmd, munged) are not to be started
# as services: the tests start their own. Where nothing says so already, a policy-rc.d
# says so for the time of the installation.
policy=/usr/sbin/policy-rc.d
if [ ! -e $policy ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee $policy >/dev/null
  $sudo chmod 755 $policy
  trap '$sudo rm -f $policy' EXIT
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
