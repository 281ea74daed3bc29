// Grid communicators: their members and the topology below them (world, and the making of
// one from its members), their point-to-point steps. Made over a parent with collectives:
// comm_api.cpp; the collectives and the waiting on their steps: coll/.
#include "comm.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace gridrt {
namespace detail {

namespace {
void free_comm(MPI_Comm& comm) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm);
}

// Positions 0..n-1 grouped by their key, groups numbered in the order of their first
// position: a communicator's members by cluster (its parts), its parts by site, a cluster's
// members by node.
struct Grouping {
  std::vector<std::vector<int>> groups;       // each group's positions, in order
  std::vector<int> group_of, index_in_group;  // of every position
  bool contiguous = true;                     // every group is a run of consecutive positions
};
template <typename Key> Grouping group_by(const std::vector<Key>& keys) {
  Grouping g;
  std::map<Key, int> number;
  for (int i = 0; i < static_cast<int>(keys.size()); ++i) {
    const auto [it, fresh] = number.emplace(keys[i], static_cast<int>(g.groups.size()));
    if (fresh) g.groups.emplace_back();
    g.group_of.push_back(it->second);
    g.index_in_group.push_back(static_cast<int>(g.groups[it->second].size()));
    g.groups[it->second].push_back(i);
  }
  for (const auto& members : g.groups) g.contiguous &= members.back() - members.front() + 1 == static_cast<int>(members.size());
  return g;
}
}  // namespace

CommImpl::~CommImpl() { free_comm(local); }

RemoteGroup::~RemoteGroup() {
  channel.reset();
  free_comm(mpi);
}

NodeLevel::~NodeLevel() {
  free_comm(node);
  free_comm(leaders);
}

namespace {
// The model's logical clusters of this process's cluster, where it has several.
const models::LogicalClusters* logical_clusters_here() {
  const State& s = state();
  if (!s.model) return nullptr;
  const auto it = s.model->logical.find(s.cluster_names[s.cluster]);
  return it != s.model->logical.end() && it->second.groups() > 1 ? &it->second : nullptr;
}
}  // namespace

void name_this_node() {
  if (!logical_clusters_here()) return;
  State& s = state();
  const Topology& t = s.topo;
  const ClusterPart& cluster = t.clusters[s.cluster];
  int n = 0;
  MPI_Comm_size(s.world, &n);
  MPI_Comm domain;
  check_mpi(MPI_Comm_split_type(s.world, MPI_COMM_TYPE_SHARED, s.local_rank, MPI_INFO_NULL, &domain), kMpiInCluster);
  int first = s.local_rank;
  check_mpi(MPI_Bcast(&first, 1, MPI_INT, 0, domain), kMpiInCluster);
  free_comm(domain);
  std::vector<int> first_of(n);
  check_mpi(MPI_Allgather(&first, 1, MPI_INT, first_of.data(), 1, MPI_INT, s.world), kMpiInCluster);
  std::vector<std::string> host;
  for (int r = 0; r < n; ++r) host.push_back(t.nodes[t.rank_node[cluster.first_rank + r]]);
  s.node_name = models::node_names(host, first_of)[s.local_rank];
}

void NodeLevel::work_out(MPI_Comm local) {
  // The grid's model may split this cluster into logical clusters (nodes whose latencies
  // differ: models/logical_clusters.h); its steps then compose over those, whatever
  // GRIDRT_NODE_LEVEL says. Every member has the same model: all decide alike.
  const models::LogicalClusters* logical = logical_clusters_here();
  // Only when it is to be used: it costs two communicator splits and an exchange per
  // communicator, the world's among them at start-up.
  if (!state().node_level && !logical) return;
  int n = 0, me = 0;
  MPI_Comm_size(local, &n);
  MPI_Comm_rank(local, &me);
  // Communicators are made rarely, so the blocking MPI calls here (MPI has no non-blocking
  // split) cost little; the exchanges are waited on under the wait policy.
  MPI_Request r;
  // Every member learns every member's node (or logical cluster): the local rank of its first member.
  std::vector<int> leader_of(n);
  if (logical) {
    const int mine = logical->group_of(state().node_name);
    std::vector<int> group(n);
    check_mpi(MPI_Iallgather(&mine, 1, MPI_INT, group.data(), 1, MPI_INT, local, &r), kMpiInCluster);
    wait_mpi(&r, MPI_STATUS_IGNORE);
    if (std::find(group.begin(), group.end(), -1) != group.end()) {
      static bool warned = false;  // once, by the cluster's first process
      if (state().local_rank == 0 && !warned) {
        warned = true;
        std::fprintf(stderr,
                     "gridrt: cluster %s: the model's logical clusters do not name every node of this job's (this process's: '%s'): "
                     "its steps do not compose over them\n",
                     state().cluster_names[state().cluster].c_str(), state().node_name.c_str());
      }
      logical = nullptr;
      if (!state().node_level) return;
    } else {
      check_mpi(MPI_Comm_split(local, group[me], me, &node), kMpiInCluster);
      this->logical = true;
      for (int i = 0; i < n; ++i) leader_of[i] = static_cast<int>(std::find(group.begin(), group.end(), group[i]) - group.begin());
      static bool said = false;  // once per process, by the cluster's first
      if (state().explain && state().local_rank == 0 && !said) {
        said = true;
        std::fprintf(stderr,
                     "gridrt: cluster %s: its %zu nodes make %d logical clusters (the model's): its steps compose over them where the "
                     "model predicts it faster\n",
                     state().cluster_names[state().cluster].c_str(), logical->nodes.size(), logical->groups());
      }
    }
  }
  if (!logical) {
    check_mpi(MPI_Comm_split_type(local, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node), kMpiInCluster);
    int my_leader = me;
    check_mpi(MPI_Ibcast(&my_leader, 1, MPI_INT, 0, node, &r), kMpiInCluster);
    wait_mpi(&r, MPI_STATUS_IGNORE);
    check_mpi(MPI_Iallgather(&my_leader, 1, MPI_INT, leader_of.data(), 1, MPI_INT, local, &r), kMpiInCluster);
    wait_mpi(&r, MPI_STATUS_IGNORE);
  }
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
  int in_node = 0;
  MPI_Comm_rank(node, &in_node);
  check_mpi(MPI_Comm_split(local, in_node == 0 ? 0 : MPI_UNDEFINED, me, &leaders), kMpiInCluster);
  if (leaders != MPI_COMM_NULL) MPI_Comm_set_errhandler(leaders, MPI_ERRORS_RETURN);
  Grouping by_node = group_by(leader_of);  // a leader is its node's first member: nodes in leaders' order
  nodes = std::move(by_node.groups);
  node_of = std::move(by_node.group_of);
  rank_in_node = std::move(by_node.index_in_group);
  contiguous = by_node.contiguous;
  used = nodes.size() > 1 && static_cast<int>(nodes.size()) < n;
}

void CommImpl::work_out_topology() {
  const Topology& t = state().topo;
  std::vector<std::uint32_t> cluster_of(members.size());
  for (std::size_t r = 0; r < members.size(); ++r) cluster_of[r] = t.cluster_of(static_cast<std::uint32_t>(members[r]));
  Grouping by_cluster = group_by(cluster_of);
  parts = std::move(by_cluster.groups);
  part_of = std::move(by_cluster.group_of);
  index_in_part = std::move(by_cluster.index_in_group);
  parts_contiguous = by_cluster.contiguous;
  std::vector<std::uint32_t> site_of(parts.size());
  for (std::size_t p = 0; p < parts.size(); ++p) site_of[p] = t.clusters[cluster_of[parts[p].front()]].site;
  Grouping by_site = group_by(site_of);
  sites = std::move(by_site.groups);
  site_of_part = std::move(by_site.group_of);
  sites_contiguous = by_site.contiguous;
  nodes.work_out(local);
  channel = std::make_shared<Channel>(members, local_ranks(), local, state().messages, context, static_cast<int>(t.size()));
}

std::shared_ptr<CommImpl> CommImpl::lane(std::uint64_t index, MPI_Comm lane_local) const {
  std::shared_ptr<CommImpl> l = make(members, me, context, lane_local);
  const std::uint64_t half = tags() / 2, span = std::max<std::uint64_t>(1, half / kLanes);
  l->tag_span = static_cast<int>(span);
  l->tag_base = static_cast<int>(half + (index % kLanes) * span);
  return l;
}

std::vector<int> CommImpl::local_ranks() const {
  std::vector<int> out(members.size(), -1);
  for (std::size_t r = 0; r < members.size(); ++r)
    if (part_of[r] == my_part()) out[r] = index_in_part[r];
  return out;
}

std::shared_ptr<CommImpl> CommImpl::make_world() {
  State& s = state();
  std::vector<int> members(s.topo.size());
  std::iota(members.begin(), members.end(), 0);
  const std::uint32_t context = s.next_context;  // the same in every process: the first contexts after init
  s.next_context += kContextsPerComm;
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &local);
  return make(std::move(members), s.rank, context, local);
}

namespace {
int mpi_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT32_MAX)) throw Error("gridrt: a collective's message is limited to 2 GiB");
  return static_cast<int>(bytes);
}
}  // namespace

namespace {
Step send_on(Channel& channel, int dst, int tag, const void* data, std::size_t bytes) {
  Step s;
  s.channel = &channel;
  s.op = channel.isend(data, mpi_count(bytes), MPI_BYTE, dst, tag);
  return s;
}

Step receive_on(Channel& channel, int src, int global, int tag, void* data, std::size_t bytes) {
  Step s;
  s.channel = &channel;
  s.expect = bytes;
  s.from = global;
  s.op = channel.irecv(data, mpi_count(bytes), MPI_BYTE, src, tag);
  return s;
}
}  // namespace

Step send_to(CommImpl& c, int dst, int tag, const void* data, std::size_t bytes) { return send_on(*c.channel, dst, tag, data, bytes); }

Step receive_from(CommImpl& c, int src, int tag, void* data, std::size_t bytes) {
  return receive_on(*c.channel, src, c.members[src], tag, data, bytes);
}

Step send_to_remote(CommImpl& c, int dst, int tag, const void* data, std::size_t bytes) {
  return send_on(*c.remote->channel, dst, tag, data, bytes);
}

Step receive_from_remote(CommImpl& c, int src, int tag, void* data, std::size_t bytes) {
  return receive_on(*c.remote->channel, src, c.remote->members[src], tag, data, bytes);
}

std::shared_ptr<CommImpl> CommImpl::make(std::vector<int> members, int me, std::uint32_t context, MPI_Comm local) {
  auto c = std::make_shared<CommImpl>();
  c->members = std::move(members);
  c->me = me;
  c->context = context;
  c->local = local;
  // An MPI error inside a cluster (e.g. members passing different counts) is returned and
  // thrown as gridrt::Error naming it, not an abort of the process.
  MPI_Comm_set_errhandler(c->local, MPI_ERRORS_RETURN);
  c->work_out_topology();
  return c;
}
}  // namespace detail

using detail::CommImpl;

Comm Comm::world() { return Comm(detail::state().world_comm); }

detail::CommImpl& Comm::impl() const {
  if (!impl_) throw ArgumentError("gridrt: operation on the null communicator");
  return *impl_;
}

int Comm::rank() const { return impl().me; }
int Comm::size() const { return impl().size(); }
int Comm::global_rank(int r) const {
  CommImpl& c = impl();
  if (r < 0 || r >= c.size())
    throw ArgumentError("gridrt: " + std::to_string(r) + " is not a rank of this communicator (size " + std::to_string(c.size()) + ")");
  return c.members[r];
}
int Comm::num_clusters() const { return static_cast<int>(impl().parts.size()); }
int Comm::cluster_of(int r) const {
  global_rank(r);  // checks r
  return impl().part_of[r];
}

int Comm::nodes_in_cluster() const { return std::max<int>(1, static_cast<int>(impl().nodes.nodes.size())); }

}  // namespace gridrt
