// The control plane of a process's transport: what its relay tells it about the job (the
// broker's topology, the clusters the job goes on without, the release from finalize, the
// answer to a WAN count, a refusal), kept as the state that the transport's waiters read,
// and the control frames it sends back. Pure, as the sending and receiving sides are: frames
// in, state and frames out. The transport (relay_transport.h) holds its lock around every
// call and wakes its waiters on what changed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "common/messages.h"
#include "common/wire.h"

namespace gridrt::detail {

class ControlPlane {
 public:
  explicit ControlPlane(std::uint64_t job) : job_(job) {}

  // What one control frame changed.
  struct Heard {
    enum class What { kNothing, kTopology, kLoss, kReleased, kWanCount, kFailure } what = What::kNothing;
    std::uint32_t cluster = 0;  // kLoss: the cluster's topology index
    std::string why;            // kLoss: the relay's reason; kFailure: what is wrong
  };
  // Takes a Topology, ClusterLost, Finalizing, WanCount or Error frame from the relay. A loss
  // is only reported here: lose() records it (the task queue may report one too).
  Heard hear(const wire::Frame& f);
  static bool is_control(wire::Type t);

  const std::optional<Topology>& topology() const { return topology_; }
  std::int32_t rank() const { return rank_; }
  void set_rank(std::int32_t rank) { rank_ = rank; }
  // Whether pairs can be planned (common/ladder.h): the topology arrives on the I/O thread,
  // this process's rank is set by the application's thread after it, a moment later or, on
  // a loaded machine, much later.
  bool planned() const { return topology_ && rank_ >= 0; }

  // Records that the job goes on without `cluster`; false if it was known already, or if
  // the cluster is not one of the topology's.
  bool lose(std::uint32_t cluster, const std::string& why);
  // Why `rank`'s cluster was lost ("cluster NAME lost: why"), or null.
  const std::string* lost(std::int32_t rank) const;
  const std::map<std::uint32_t, std::string>& lost_clusters() const { return lost_; }
  // Whether a rank belongs to `cluster` (a copy of the topology: kept after this is gone).
  std::function<bool(std::int32_t)> in_cluster(std::uint32_t cluster) const;

  bool released() const { return released_; }  // the broker's Finalizing came

  struct WanCount {
    std::uint64_t messages = 0, bytes = 0;
  };
  // The question (its answer follows everything sent before on the relay's connection).
  std::string ask_wan_count();
  const std::optional<WanCount>& wan_count() const { return wan_answer_; }

  // Frames to the relay: this part's processes are all in finalize (its leader says so);
  // the direct connection with `rank` closed (in a job that goes on without lost clusters,
  // the broker decides which of the two clusters the job loses).
  std::string in_finalize() const;
  std::string direct_lost(std::int32_t rank, const std::string& why) const;

 private:
  wire::Frame frame(wire::Type t, std::string body = {}) const;

  const std::uint64_t job_;
  std::int32_t rank_ = -1;
  std::optional<Topology> topology_;
  std::map<std::uint32_t, std::string> lost_;  // cluster index -> "cluster NAME lost: why"
  std::optional<WanCount> wan_answer_;
  bool released_ = false;
};

}  // namespace gridrt::detail
