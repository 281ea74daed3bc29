// Timing one collective call across a job, as gridbench and gridrun calibrate do: when every
// process runs on one machine (one kernel, so one monotonic clock), rank 0 names a moment far
// enough ahead for the news to reach everyone, all start then, and a call's time on a
// process is from that moment to its return (the largest over the processes is when the
// operation was complete everywhere). Otherwise, as the OSU benchmarks do, each call starts
// after an untimed barrier.
#pragma once

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gridrt/gridrt.hpp"

namespace gridrt::timing {

// The v-forms timed (every block alike, but passed as counts, so that not every member
// knows the sizes), and the operation whose blocks one moves (`op` for the others).
inline const std::vector<std::string> kVForms = {"scatterv", "gatherv", "alltoallv"};
inline std::string blocks_of(const std::string& op) {
  return std::find(kVForms.begin(), kVForms.end(), op) != kVForms.end() ? op.substr(0, op.size() - 1) : op;
}

// The buffers one call of collective `op` with `n` bytes (per member's block for gather,
// scatter, allgather, reduce_scatter and the v-forms; per pair for alltoall) needs on P
// processes: what is sent, what comes; and the v-forms' counts and displacements.
struct Buffers {
  std::vector<char> send, recv;
  std::vector<int> counts, displs;
  Buffers(const std::string& op, std::size_t n, int P) {
    const std::string blocks = blocks_of(op);
    send.assign(blocks == "scatter" || blocks == "alltoall" || blocks == "reduce_scatter" ? n * P : n, 1);
    recv.assign(blocks == "gather" || blocks == "scatter" || blocks == "allgather" || blocks == "alltoall" ? n * P : n, 0);
    counts.assign(P, static_cast<int>(n));
    for (int i = 0; i < P; ++i) displs.push_back(i * static_cast<int>(n));
  }
};

// One call of gridrt's collective `op` (barrier, bcast, reduce, allreduce, gather, scatter,
// allgather, alltoall, reduce_scatter, scatterv, gatherv, alltoallv) on `world` with `n` bytes, by `algo`, rooted at `root`.
inline void call_collective(const Comm& world, const std::string& op, Algo algo, std::size_t n, int root, Buffers& b) {
  const int count = static_cast<int>(n);
  if (op == "barrier") world.barrier(algo);
  else if (op == "bcast") world.bcast(b.send.data(), count, MPI_BYTE, root, algo);
  else if (op == "reduce") world.reduce(b.send.data(), b.recv.data(), count, MPI_BYTE, MPI_BOR, root, algo);
  else if (op == "allreduce") world.allreduce(b.send.data(), b.recv.data(), count, MPI_BYTE, MPI_BOR, algo);
  else if (op == "gather") world.gather(b.send.data(), b.recv.data(), count, MPI_BYTE, root, algo);
  else if (op == "scatter") world.scatter(b.send.data(), b.recv.data(), count, MPI_BYTE, root, algo);
  else if (op == "allgather") world.allgather(b.send.data(), b.recv.data(), count, MPI_BYTE, algo);
  else if (op == "alltoall") world.alltoall(b.send.data(), b.recv.data(), count, MPI_BYTE, algo);
  else if (op == "reduce_scatter") world.reduce_scatter_block(b.send.data(), b.recv.data(), count, MPI_BYTE, MPI_BOR, algo);
  else if (op == "scatterv") world.scatterv(b.send.data(), b.counts.data(), b.displs.data(), b.recv.data(), count, MPI_BYTE, root, algo);
  else if (op == "gatherv") world.gatherv(b.send.data(), count, b.recv.data(), b.counts.data(), b.displs.data(), MPI_BYTE, root, algo);
  else if (op == "alltoallv")
    world.alltoallv(b.send.data(), b.counts.data(), b.displs.data(), b.recv.data(), b.counts.data(), b.displs.data(), MPI_BYTE, algo);
}

// Whether every process runs under the same kernel (the same boot id).
inline bool one_machine(const Comm& world) {
  char id[40] = {0};
  std::ifstream("/proc/sys/kernel/random/boot_id").read(id, 36);
  std::vector<char> all(sizeof id * world.size());
  world.allgather(id, all.data(), sizeof id, MPI_CHAR);
  for (int r = 0; r < world.size(); ++r)
    if (std::memcmp(all.data() + r * sizeof id, id, sizeof id) != 0 || id[0] == 0) return false;
  return true;
}

class CallTimer {
 public:
  // `lead`: how far ahead the common start is named (the broadcast announcing it must reach
  // every process first: a few WAN delays). Collective over `world`.
  CallTimer(const Comm& world, std::chrono::steady_clock::duration lead) : world_(world), lead_(lead), one_clock_(one_machine(world)) {
    // Wake at the common start itself, not up to 50 µs later (the kernel's default timer slack).
    if (one_clock_) ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  }
  // Runs `call` once on every member, timed: this member's seconds from the start to its
  // return. `before` runs first, untimed.
  template <typename Call, typename Before = void (*)()>
  double time(
      Call&& call, Before&& before = [] {}) {
    world_.barrier();
    auto start = std::chrono::steady_clock::now();
    if (one_clock_) {
      long long at = std::chrono::duration_cast<std::chrono::nanoseconds>((start + lead_).time_since_epoch()).count();
      world_.bcast(&at, 1, MPI_LONG_LONG, 0);
      start = std::chrono::steady_clock::time_point(
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::nanoseconds(at)));
      if (std::chrono::steady_clock::now() > start) ++late_;
    }
    before();
    if (one_clock_) std::this_thread::sleep_until(start);
    else start = std::chrono::steady_clock::now();
    call();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  bool one_clock() const { return one_clock_; }
  int late() const { return late_; }  // starts named too late to be kept (should stay 0)

 private:
  const Comm& world_;
  const std::chrono::steady_clock::duration lead_;
  const bool one_clock_;
  int late_ = 0;
};

}  // namespace gridrt::timing
