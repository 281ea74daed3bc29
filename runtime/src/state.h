// The runtime's process-wide state and the helpers every part of libgridrt shares:
// waiting on MPI under the wait policy, and remote operations through the relay transport.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gridrt/gridrt.hpp"
#include "transport.h"

namespace gridrt::detail {

// Contexts keep traffic classes apart on the relay path (design.md: the frame header's
// communicator context): user point-to-point, then one
// per grid communicator, from kFirstCommContext up (agreed by its members when made).
enum Context : std::uint32_t { kP2P = 0, kFirstCommContext = 16 };

enum class WaitPolicy { kSpin, kYield, kSleep };

struct RequestState {
  bool local = false;
  MPI_Request mpi = MPI_REQUEST_NULL;
  std::shared_ptr<RemoteOp> remote;    // a send or receive through the relay
  bool done = false;
  Status status;
};

struct CommImpl;

struct State {
  Topology topo;
  int rank = -1;
  std::uint32_t cluster = 0;  // index in topo.clusters
  int local_rank = -1;
  MPI_Comm p2p = MPI_COMM_NULL;   // user point-to-point inside the cluster
  MPI_Comm world = MPI_COMM_NULL; // a plain duplicate handed to the application
  int tag_ub = 32767;
  WaitPolicy policy = WaitPolicy::kYield;
  std::unique_ptr<RelayTransport> transport;
  std::vector<std::string> cluster_names;
  Algo algo = Algo::kAuto;           // GRIDRT_COLL: what Algo::kDefault means
  std::size_t slice = 64 * 1024;     // GRIDRT_SLICE: bytes per slice of pipelined collectives
  bool node_level = false;           // GRIDRT_NODE_LEVEL: collectives compose over nodes inside a cluster
  std::shared_ptr<CommImpl> world_comm;             // Comm::world()
  std::uint32_t next_context = kFirstCommContext;   // above every context this process is in
};
extern std::unique_ptr<State> g;

State& state();
void check_rank(int r, const char* what);
// Throws Error naming `what` and MPI's reason when rc is not MPI_SUCCESS (the communicators'
// cluster parts return MPI errors instead of aborting the process).
void check_mpi(int rc, const char* what);
inline constexpr const char* kMpiInCluster = "MPI inside the cluster";
// Why global rank `rank`'s cluster was lost (gridrt::lost_clusters), or nothing.
std::optional<std::string> cluster_lost(int rank);
// Takes a lost cluster as known here (the task queue's super-master passes on those it
// lost, so that every process ends knowing the same ones).
void mark_cluster_lost(std::uint32_t cluster, const std::string& why);
// Waits for an MPI request, testing and yielding the CPU as GRIDRT_WAIT says.
void wait_mpi(MPI_Request* req, MPI_Status* st);
// What the wait policy does between two tests of one wait. Under `yield`, a wait that has
// yielded for kYieldFor without its request completing backs off to short sleeps (20 µs
// doubling to 200 µs): a process waiting for data that must first cross the relays would
// otherwise keep taking the CPU from the relays and the processes that carry it (on this
// 2-core machine a grid barrier took 5.7 ms with pure yielding), while a wait inside a
// cluster mostly ends within it (docs/benchmarks.md, "Waiting").
//
// A wait whose end is not near (a task queue's server waiting for its workers' next
// requests, which come a task's duration apart) yields for less and sleeps longer: its
// yielding would take the CPU from the very processes it waits for.
class Pause {
 public:
  static constexpr std::chrono::microseconds kYieldFor{500};
  Pause() = default;
  Pause(std::chrono::microseconds yield_for, int max_sleep_us) : yield_for_(yield_for), max_sleep_us_(max_sleep_us) {}
  void operator()();

 private:
  const std::chrono::steady_clock::time_point since_ = std::chrono::steady_clock::now();  // the wait began
  const std::chrono::microseconds yield_for_ = kYieldFor;
  const int max_sleep_us_ = 200;
  int sleep_us_ = 20;
};
std::shared_ptr<RemoteOp> remote_send(int dst, std::uint32_t context, int tag, const void* buf, std::size_t bytes);
std::shared_ptr<RemoteOp> remote_recv(void* buf, std::size_t capacity, int src, std::uint32_t context, int tag);
void remote_wait(const std::shared_ptr<RemoteOp>& op);
bool remote_test(const std::shared_ptr<RemoteOp>& op);
bool remote_cancel(const std::shared_ptr<RemoteOp>& op);

}  // namespace gridrt::detail
