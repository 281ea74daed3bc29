// The runtime's process-wide state: where this process is in the job, its settings, the
// transport to other clusters (as the channels see it, without Asio), and the world.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coll/choice.h"
#include "coll/part_trees.h"
#include "common/messages.h"
#include "common/flow_control.h"
#include "gridrt/gridrt.hpp"
#include "models/grid_model.h"
#include "mpi_error.h"
#include "progress.h"

namespace gridrt::detail {

class RelayTransport;
class MessageTransport;
class Channel;
struct CommImpl;

// Contexts keep traffic classes apart on the transport (the frame header's communicator
// context): gridrt's own point-to-point between global ranks, then kContextsPerComm per grid
// communicator from kFirstCommContext up (its collectives', its members' point-to-point,
// and the making of communicators over some of its members), agreed by its members when it
// is made.
enum Context : std::uint32_t { kP2P = 0, kFirstCommContext = 16, kContextsPerComm = 3 };

struct State {
  Topology topo;
  int rank = -1;
  std::uint32_t cluster = 0;  // index in topo.clusters
  int local_rank = -1;
  MPI_Comm p2p = MPI_COMM_NULL;    // gridrt's point-to-point inside the cluster
  MPI_Comm world = MPI_COMM_NULL;  // a plain duplicate handed to the application (cluster_comm)
  int tag_ub = 32767;
  std::unique_ptr<RelayTransport> transport;
  MessageTransport* messages = nullptr;  // the same transport, as channels and waits see it
  std::vector<std::string> cluster_names;
  Algo algo = Algo::kAuto;  // GRIDRT_COLL: what Algo::kDefault means
  // GRIDRT_SLICE: bytes per slice of the pipelined collectives; unset, the model's choice
  // for each call (coll/predict.cpp), or kDefaultSlice without a model.
  std::optional<std::size_t> slice;
  flow::Window window;  // GRIDRT_WINDOW: the flow-control window per stream (common/flow_control.h)
  // GRIDRT_ROUTE: the route of every hierarchical scatter and gather (coll/part_trees.h);
  // none: the model's least predicted, or packed without a model.
  std::optional<Route> route;
  int gather_pieces = 0;    // GRIDRT_GATHER_PIECES: pieces of a gather inside a cluster; 0: as the model says
  bool node_level = false;  // GRIDRT_NODE_LEVEL: collectives compose over nodes inside a cluster
  // GRIDRT_CLUSTER_STEPS: inside a cluster of several logical clusters, each step composed
  // over them or MPICH's over the whole cluster, as the model predicts faster (model), or always one.
  ClusterSteps cluster_steps = ClusterSteps::kModel;
  // GRIDRT_MODEL: the grid's calibrated model (docs/models.md), from which auto chooses;
  // null without one (auto then follows its measured rules, choice.h).
  std::shared_ptr<const models::GridModel> model;
  bool explain = false;  // GRIDRT_EXPLAIN: log auto's choices with their predictions
  // GRIDRT_FINALIZE_TIMEOUT: how long MPI_Finalize may take once the whole job has reached
  // finalize, before the process leaves without it (finalize, runtime.cpp).
  std::chrono::seconds finalize_timeout{20};
  int pmi_fd = -1;  // the process manager's PMI-1 socket (PMI_FD), for the deadline's last steps
  // This process's node as the model's logical clusters name it (models::node_names), where
  // the model has some for this cluster; else empty (name_this_node).
  std::string node_name;
  std::shared_ptr<CommImpl> world_comm;            // Comm::world()
  std::shared_ptr<Channel> p2p_channel;            // gridrt::send and friends, between global ranks
  std::uint32_t next_context = kFirstCommContext;  // above every context this process is in

  State();
  ~State();  // (where RelayTransport is known)
};
extern std::unique_ptr<State> g;

State& state();
// Where the model has logical clusters for this process's cluster: its processes work out
// together which node each is on (host, and MPI's shared-memory domain) into node_name.
void name_this_node();
// The flow-control window of the streams between clusters begun from now on, and of
// the predictions of communicators made from now on (GRIDRT_WINDOW's until then): for
// calibration, which measures the lines with a window that does not limit them and then
// runs its sample calls with the jobs' window, on a communicator of their own.
void use_window(flow::Window window);
void check_rank(int r, const char* what);
// Why global rank `rank`'s cluster was lost (gridrt::lost_clusters), or nothing.
std::optional<std::string> cluster_lost(int rank);
// This process leaves the job now without gridrt::finalize, `why` ("without calling
// gridrt::finalize (MPI_Finalize)", "after it called MPI_Abort(...)"): its relay hears it and
// stops the job at this process's exit, naming it and why (an exit status of 0 would say
// nothing), the job to end with `job_status` (1: it failed; MPI_Abort(comm, 0): 0), and the
// transport's thread is stopped. For a process about to _exit or exit.
void leave_unfinalized(const std::string& why, int job_status = 1);
// The clusters lost so far, by topology index.
std::vector<std::uint32_t> lost_cluster_indices();
// Takes a lost cluster as known here (the task queue's super-master passes on those it
// lost, so that every process ends knowing the same ones).
void mark_cluster_lost(std::uint32_t cluster, const std::string& why);
// What an MPI layer loaded into the process (libgridmpi, runtime/mpi) asks to hear: that
// gridrt::init is done, and that gridrt::finalize begins (after its barrier).
struct LayerHooks {
  void (*initialized)() = nullptr;
  void (*finalizing)() = nullptr;
};
extern LayerHooks layer_hooks;

// Objects the application may still hold when it calls finalize (a task queue whose scope
// ends after it) and that hold MPI requests: finalize releases them while MPI is still up,
// after its barrier, so that MPI_Finalize finds no request pending and their destructors
// later find nothing left to do. release() must be idempotent.
class ReleasedAtFinalize {
 public:
  ReleasedAtFinalize();
  virtual ~ReleasedAtFinalize();
  ReleasedAtFinalize(const ReleasedAtFinalize&) = delete;
  ReleasedAtFinalize& operator=(const ReleasedAtFinalize&) = delete;
  virtual void release() = 0;
};
void release_all_at_finalize();

// Waits for an MPI request under the wait policy (progress.h), moving the rest meanwhile.
void wait_mpi(MPI_Request* req, MPI_Status* st);

}  // namespace gridrt::detail
