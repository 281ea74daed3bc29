// Grid communicators: making them (world, split, dup) and the point-to-point steps of their
// collectives. The algorithms are in collectives.cpp.
#include "comm.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "cluster_steps.h"

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
template <typename Key>
Grouping group_by(const std::vector<Key>& keys) {
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

NodeLevel::~NodeLevel() {
  free_comm(node);
  free_comm(leaders);
}

void NodeLevel::work_out(MPI_Comm local) {
  // Only when it is to be used: it costs two communicator splits and an exchange per
  // communicator, the world's among them at start-up.
  if (!state().node_level) return;
  int n = 0, me = 0;
  MPI_Comm_size(local, &n);
  MPI_Comm_rank(local, &me);
  // Communicators are made rarely, so the blocking MPI calls here (MPI has no non-blocking
  // split) cost little; the exchange is waited on under the wait policy.
  check_mpi(MPI_Comm_split_type(local, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node), kMpiInCluster);
  MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
  int in_node = 0;
  MPI_Comm_rank(node, &in_node);
  check_mpi(MPI_Comm_split(local, in_node == 0 ? 0 : MPI_UNDEFINED, me, &leaders), kMpiInCluster);
  if (leaders != MPI_COMM_NULL) MPI_Comm_set_errhandler(leaders, MPI_ERRORS_RETURN);
  // Every member learns every member's node: the local rank of its node's leader.
  int my_leader = me;
  MPI_Request r;
  check_mpi(MPI_Ibcast(&my_leader, 1, MPI_INT, 0, node, &r), kMpiInCluster);
  wait_mpi(&r, MPI_STATUS_IGNORE);
  std::vector<int> leader_of(n);
  check_mpi(MPI_Iallgather(&my_leader, 1, MPI_INT, leader_of.data(), 1, MPI_INT, local, &r), kMpiInCluster);
  wait_mpi(&r, MPI_STATUS_IGNORE);
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
}

std::shared_ptr<CommImpl> CommImpl::make_world() {
  State& s = state();
  auto c = std::make_shared<CommImpl>();
  c->members.resize(s.topo.size());
  std::iota(c->members.begin(), c->members.end(), 0);
  c->me = s.rank;
  c->context = s.next_context++;  // the same in every process: the first context after init
  MPI_Comm_dup(MPI_COMM_WORLD, &c->local);
  // An MPI error inside a cluster (e.g. members passing different counts) is returned and
  // thrown as gridrt::Error naming it, not an abort of the process.
  MPI_Comm_set_errhandler(c->local, MPI_ERRORS_RETURN);
  c->work_out_topology();
  return c;
}

namespace {
int mpi_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT32_MAX)) throw Error("gridrt: a message inside a cluster is limited to 2 GiB");
  return static_cast<int>(bytes);
}
}  // namespace

Step send_to(CommImpl& c, int dst, int tag, const void* data, std::size_t bytes) {
  Step s;
  if (c.part_of[dst] == c.my_part()) {
    check_mpi(MPI_Isend(data, mpi_count(bytes), MPI_BYTE, c.index_in_part[dst], tag, c.local, &s.mpi), kMpiInCluster);
  } else {
    s.remote = remote_send(c.members[dst], c.context, tag, data, bytes);
  }
  return s;
}

Step receive_from(CommImpl& c, int src, int tag, void* data, std::size_t bytes) {
  Step s;
  s.expect = bytes;
  s.from = c.members[src];
  if (c.part_of[src] == c.my_part()) {
    check_mpi(MPI_Irecv(data, mpi_count(bytes), MPI_BYTE, c.index_in_part[src], tag, c.local, &s.mpi), kMpiInCluster);
  } else {
    s.remote = remote_recv(data, bytes, c.members[src], c.context, tag);
  }
  return s;
}

namespace {
void check_size(const Step& s, std::size_t got) {
  if (s.expect != Step::kNoExpectation && got != s.expect)
    throw Error("gridrt: a collective's message from rank " + std::to_string(s.from) + " has " + std::to_string(got) + " bytes where " +
                std::to_string(s.expect) + " were expected: every member must pass the same counts, datatype and root");
}
void finish_remote(Step& s) {
  s.done = true;
  check_size(s, s.remote->bytes);
}

// Tests what is not done yet; says whether MPI steps are pending and which remote one is.
struct Pending {
  bool mpi = false;
  Step* remote = nullptr;
};
Pending test_steps(Step* begin, Step* end) {
  static std::uint64_t passes = 0;
  const std::uint64_t pass = ++passes;
  Pending p;
  for (Step* it = begin; it != end; ++it) {
    Step& s = *it;
    if (s.done) continue;
    if (s.remote) {
      if (remote_test(s.remote)) finish_remote(s);
      else p.remote = &s;
    } else if (s.chain) {
      s.done = advance(*s.chain, pass);
      p.mpi |= !s.done;
    } else {
      int flag = 0;
      MPI_Status st;
      check_mpi(MPI_Test(&s.mpi, &flag, &st), kMpiInCluster);
      if (!flag) {
        p.mpi = true;
        continue;
      }
      s.done = true;
      if (s.expect != Step::kNoExpectation) {
        int got = 0;
        MPI_Get_count(&st, MPI_BYTE, &got);
        check_size(s, static_cast<std::size_t>(got));
      }
    }
  }
  return p;
}
}  // namespace

void wait_steps(std::vector<Step>& steps) {
  Pause pause;
  for (;;) {
    const Pending p = test_steps(steps.data(), steps.data() + steps.size());
    if (p.mpi) {
      pause();
    } else if (p.remote) {
      // Only the transport can finish what is left: sleep on it, not on the CPU.
      remote_wait(p.remote->remote);
      finish_remote(*p.remote);
    } else {
      return;
    }
  }
}

void wait_step(Step s) {
  std::vector<Step> one{std::move(s)};
  wait_steps(one);
}

void wait_step_amid(Step& s, std::vector<Step>& background) {
  Pause pause;
  for (;;) {
    const Pending mine = test_steps(&s, &s + 1);
    if (s.done) return;
    const Pending others = test_steps(background.data(), background.data() + background.size());
    if (!mine.mpi && !others.mpi) {  // nothing for MPI to do: sleep on the transport
      remote_wait(s.remote);
      finish_remote(s);
      return;
    }
    pause();
  }
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
  if (r < 0 || r >= c.size()) throw ArgumentError("gridrt: " + std::to_string(r) + " is not a rank of this communicator (size " + std::to_string(c.size()) + ")");
  return c.members[r];
}
int Comm::num_clusters() const { return static_cast<int>(impl().parts.size()); }
int Comm::cluster_of(int r) const {
  global_rank(r);  // checks r
  return impl().part_of[r];
}

int Comm::nodes_in_cluster() const { return std::max<int>(1, static_cast<int>(impl().nodes.nodes.size())); }

namespace {
// A context above every one that any member is in (each process's next_context is), agreed
// by all members: no two communicators sharing a process ever share a context.
std::uint32_t agree_on_context(const Comm& parent) {
  unsigned mine = detail::state().next_context, agreed = 0;
  parent.allreduce(&mine, &agreed, 1, MPI_UNSIGNED, MPI_MAX, Algo::kHier);
  detail::state().next_context = agreed + 1;
  return agreed;
}
}  // namespace

Comm Comm::split(int color, int key) const {
  CommImpl& parent = impl();
  if (color < 0 && color != MPI_UNDEFINED) throw ArgumentError("gridrt: split: color " + std::to_string(color) + " is negative");
  std::vector<int> all(2 * parent.size());
  const int mine[2] = {color, key};
  allgather(mine, all.data(), 2, MPI_INT, Algo::kHier);
  const std::uint32_t context = agree_on_context(*this);
  // The new members: same color, by key, then by rank here.
  std::vector<int> chosen;
  for (int r = 0; r < parent.size(); ++r)
    if (color != MPI_UNDEFINED && all[2 * r] == color) chosen.push_back(r);
  std::stable_sort(chosen.begin(), chosen.end(), [&](int a, int b) { return all[2 * a + 1] < all[2 * b + 1]; });
  auto c = std::make_shared<CommImpl>();
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    c->members.push_back(parent.members[chosen[i]]);
    if (chosen[i] == parent.me) c->me = static_cast<int>(i);
  }
  // Every member of the parent in this cluster takes part, as MPI_Comm_split requires.
  MPI_Comm_split(parent.local, color, c->me, &c->local);
  if (color == MPI_UNDEFINED) return Comm();
  c->context = context;
  c->work_out_topology();
  return Comm(c);
}

Comm Comm::dup() const {
  CommImpl& parent = impl();
  auto c = std::make_shared<CommImpl>();
  c->members = parent.members;
  c->me = parent.me;
  c->context = agree_on_context(*this);
  MPI_Request req;
  MPI_Comm_idup(parent.local, &c->local, &req);
  detail::wait_mpi(&req, MPI_STATUS_IGNORE);
  c->work_out_topology();
  return Comm(c);
}

namespace detail {
// finalize's barrier: nobody leaves while others may still send to it. In a job that goes
// on without lost clusters, a cluster may be lost while the others wait here, and those
// waiting cannot agree among themselves who took part; so the broker, which decides what is
// lost, ends this barrier: each cluster's processes meet (MPI), its leader tells the broker
// (Finalizing), and every process leaves when the broker says that every cluster not lost
// did the same (docs/protocol.md, "Losing a cluster").
void finalize_barrier() {
  RelayTransport& t = *state().transport;
  t.finalizing();
  if (!t.survives_cluster_loss()) return Comm::world().barrier();
  CommImpl& world = Comm::world().impl();
  wait_step(cluster_arrive(world));
  if (world.is_leader()) t.part_in_finalize();
  t.wait_finalize_release();
}
}  // namespace detail

}  // namespace gridrt
