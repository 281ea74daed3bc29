#include "control_plane.h"

namespace gridrt::detail {

using wire::Frame;
using wire::Type;

bool ControlPlane::is_control(Type t) {
  return t == Type::kTopology || t == Type::kClusterLost || t == Type::kFinalizing || t == Type::kWanCount || t == Type::kError;
}

ControlPlane::Heard ControlPlane::hear(const Frame& f) {
  using What = Heard::What;
  switch (f.header.type) {
    case Type::kTopology:
      try {
        wire::Reader r(f.body);
        topology_ = Topology::decode(r);
        return {What::kTopology, 0, {}};
      } catch (const wire::BadBody& e) { return {What::kFailure, 0, std::string("bad topology from the relay: ") + e.what()}; }
    case Type::kClusterLost: return {What::kLoss, static_cast<std::uint32_t>(f.header.tag), f.body};
    case Type::kFinalizing: released_ = true; return {What::kReleased, 0, {}};
    case Type::kWanCount:
      try {
        wire::Reader r(f.body);
        WanCount c;
        c.messages = r.u64();
        c.bytes = r.u64();
        r.end();
        wan_answer_ = c;
        return {What::kWanCount, 0, {}};
      } catch (const wire::BadBody& e) { return {What::kFailure, 0, std::string("bad WanCount from the relay: ") + e.what()}; }
    case Type::kError: return {What::kFailure, 0, "the relay refused this process: " + f.body};
    default: return {};
  }
}

bool ControlPlane::lose(std::uint32_t cluster, const std::string& why) {
  if (!topology_ || cluster >= topology_->clusters.size() || lost_.count(cluster)) return false;
  lost_[cluster] = "cluster " + topology_->clusters[cluster].name + " lost: " + why;
  return true;
}

const std::string* ControlPlane::lost(std::int32_t rank) const {
  if (lost_.empty() || !topology_ || rank < 0) return nullptr;
  const auto it = lost_.find(topology_->cluster_of(static_cast<std::uint32_t>(rank)));
  return it == lost_.end() ? nullptr : &it->second;
}

std::function<bool(std::int32_t)> ControlPlane::in_cluster(std::uint32_t cluster) const {
  if (!topology_) return [](std::int32_t) { return false; };
  return [topology = *topology_, cluster](std::int32_t r) {
    return r >= 0 && static_cast<std::uint32_t>(r) < topology.size() && topology.cluster_of(static_cast<std::uint32_t>(r)) == cluster;
  };
}

Frame ControlPlane::frame(Type t, std::string body) const {
  Frame f = wire::make_frame(t, std::move(body), job_);
  f.header.src = rank_;
  return f;
}

std::string ControlPlane::ask_wan_count() {
  wan_answer_.reset();
  return wire::encode(frame(Type::kWanCount));
}

std::string ControlPlane::in_finalize() const { return wire::encode(frame(Type::kFinalizing)); }

std::string ControlPlane::direct_lost(std::int32_t rank, const std::string& why) const {
  Frame f = frame(Type::kClusterLost, "direct connection with rank " + std::to_string(rank) + " (" + why + ")");
  f.header.tag = static_cast<std::int32_t>(topology_ ? topology_->cluster_of(static_cast<std::uint32_t>(rank)) : 0);
  return wire::encode(f);
}

}  // namespace gridrt::detail
