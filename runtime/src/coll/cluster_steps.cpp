// The steps inside a cluster: MPICH collectives on the part's `local` communicator, or
// composed over the node level when the part spans several nodes (cluster_steps.h).
#include "cluster_steps.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "algorithms.h"

namespace gridrt::detail {

namespace {

using Start = std::function<int(MPI_Request*)>;

// Moves one chain on as far as it can go now.
void move_on(CollState& level, Chain& ch) {
  for (;;) {
    if (ch.current != MPI_REQUEST_NULL) {
      int flag = 0;
      check_mpi(MPI_Test(&ch.current, &flag, MPI_STATUS_IGNORE), kMpiInCluster);
      if (!flag) return;
    }
    if (ch.next == ch.stages.size()) {
      ch.done = true;
      return;
    }
    const Chain::Stage& s = ch.stages[ch.next];
    if (level.started[s.on] != s.ticket) return;  // an earlier chain's stage there comes first
    check_mpi(s.start(&ch.current), kMpiInCluster);
    ++level.started[s.on];
    ++ch.next;
  }
}

// A chain being made: stages are added in order, then it becomes a step.
struct ChainBuilder {
  CollState& level;
  std::shared_ptr<Chain> chain = std::make_shared<Chain>();
  explicit ChainBuilder(CommImpl& c) : level(coll_state(c)) { chain->level = &level; }
  ChainBuilder& then(int on, Start start) {
    chain->stages.push_back({on, 0, std::move(start)});
    return *this;
  }
  void* scratch(const Layout& l) { return chain->scratch.emplace_back(l).get(); }
  // Every stage takes its ticket now, in the order chains are made; the first stage starts
  // at once if its turn has come.
  Step step() {
    for (auto& s : chain->stages) s.ticket = level.issued[s.on]++;
    level.live.push_back(chain);
    move_on(level, *chain);  // (earlier chains do not wait for it)
    Step st;
    st.chain = chain;
    st.done = chain->done;
    return st;
  }
};

struct Where {  // this member in its part's node level (only where the node level is used)
  const NodeLevel& level;
  int me;    // local rank
  int node;  // its node
  bool leads() const { return level.rank_in_node[me] == 0; }
  explicit Where(const CommImpl& c) : level(c.nodes), me(c.index_in_part[c.me]), node(c.nodes.node_of[me]) {}
};

// The cluster's level over its logical clusters, placed as its members are (every member
// knows where each is: the node level's groups); null where the model has none for it.
const LogicalLevel* placed_level(CommImpl& c) {
  CollState& lv = coll_state(c);
  if (!lv.placed_tried) {
    lv.placed_tried = true;
    const CostShape* s = costs_of(c);
    if (s && s->logical[c.my_part()]) {
      auto here = std::make_shared<LogicalLevel>(*s->logical[c.my_part()]);
      here->place(c.nodes.node_of);
      lv.placed = std::move(here);
    }
  }
  return lv.placed.get();
}

// Whether step `op` of `bytes` (as local_cost counts them; kSizeNotShared where members do
// not all know it) from local rank `root` goes through the node level. Over nodes
// (GRIDRT_NODE_LEVEL=on), always. Over the model's logical clusters, as GRIDRT_CLUSTER_STEPS
// says, by default where the model predicts composing no slower than MPICH's own steps over
// the whole cluster (costs.h, composes); where members do not all know the size, composed.
// Every member of the part decides alike: same model, same placement, same arguments.
bool through_nodes(CommImpl& c, Coll op, std::size_t bytes, int root) {
  if (!c.nodes.used) return false;
  if (!c.nodes.logical || bytes == kSizeNotShared) return true;
  const LogicalLevel* lv = placed_level(c);
  if (!lv) return true;
  const ClusterSteps steps = state().cluster_steps;
  // Kept: a prediction plays every member's tree or rounds, a lookup is cheaper (as auto's).
  const auto key = std::make_tuple(static_cast<int>(op), bytes, root);
  auto& made = coll_state(c).composes;
  if (const auto kept = made.find(key); kept != made.end()) return kept->second;
  const bool compose = composes(op, *lv, static_cast<double>(bytes), root, steps);
  if (made.size() < kChoicesKept) made.emplace(key, compose);
  if (state().explain && c.index_in_part[c.me] == 0)  // each choice made, by the part's first member (as auto's)
    std::fprintf(stderr,
                 "gridrt: cluster %s: %s of %zu B: %s (predicted %.1f us composed over its %d logical clusters, %.1f us MPICH's over "
                 "the cluster)%s\n",
                 cluster_name_of(c).c_str(), coll_name(op), bytes, compose ? "composed" : "MPICH's steps",
                 composed_cost(op, *lv, static_cast<double>(bytes), 0) * 1e6, lv->groups,
                 spread_cost(op, *lv, static_cast<double>(bytes), 0, root) * 1e6,
                 steps == ClusterSteps::kModel ? "" : " (GRIDRT_CLUSTER_STEPS)");
  return compose;
}

// A reduction may go through the node level when it keeps rank order: the operation
// commutes, or nodes are runs of consecutive ranks (then node order is rank order).
bool nodes_keep_order(const NodeLevel& level, MPI_Op op) { return level.used && (level.contiguous || commutative(op)); }

constexpr int kNodeTag = 0;  // point-to-point on a node's private communicator

// An MPICH collective over the whole part, just started (`rc` its code), as a step.
Step on_local(int rc, const MPI_Request& r) {
  check_mpi(rc, kMpiInCluster);
  return local_step(r);
}

int byte_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT32_MAX)) throw Error("gridrt: a collective's data inside a cluster is limited to 2 GiB");
  return static_cast<int>(bytes);
}

// The elements of `v` at `which`, in that order.
template <typename T> std::vector<T> pick(const std::vector<T>& v, const std::vector<int>& which) {
  std::vector<T> out;
  for (int i : which) out.push_back(v[i]);
  return out;
}

}  // namespace

bool advance(Chain& chain, std::uint64_t pass) {
  CollState& level = *chain.level;
  if (level.last_pass != pass) {  // once per pass over a wait's steps, however many are chains
    level.last_pass = pass;
    for (std::size_t i = 0; i < level.live.size(); ++i) move_on(level, *level.live[i]);
    level.live.erase(std::remove_if(level.live.begin(), level.live.end(), [](const auto& ch) { return ch->done; }), level.live.end());
  }
  return chain.done;
}

// Broadcast: the root's node first (from the root), then between leaders (from the root's
// node's leader), then inside every other node (from its leader).
Step cluster_bcast(CommImpl& c, void* buf, int count, MPI_Datatype type, int root) {
  int size = 0;
  MPI_Type_size(type, &size);
  if (!through_nodes(c, Coll::kBcast, static_cast<std::size_t>(count) * size, root)) {
    MPI_Request r;
    return on_local(MPI_Ibcast(buf, count, type, root, c.local, &r), r);
  }
  const Where w(c);
  const NodeLevel& lv = c.nodes;
  const int root_node = lv.node_of[root];
  auto in_node = [buf, count, type, node = lv.node](int from) {
    return [=](MPI_Request* r) { return MPI_Ibcast(buf, count, type, from, node, r); };
  };
  const Start between = [buf, count, type, root_node, leaders = lv.leaders](MPI_Request* r) {
    return MPI_Ibcast(buf, count, type, root_node, leaders, r);
  };
  ChainBuilder b(c);
  if (w.node == root_node) {
    b.then(NodeLevel::kNode, in_node(lv.rank_in_node[root]));
    if (w.leads()) b.then(NodeLevel::kLeaders, between);
  } else {
    if (w.leads()) b.then(NodeLevel::kLeaders, between);
    b.then(NodeLevel::kNode, in_node(0));
  }
  return b.step();
}

// Reduction: every node to its leader, leaders to the root's node's leader (in node order),
// which hands the result to the root when it is another member of its node.
Step cluster_reduce(CommImpl& c, const void* sendbuf, void* recvbuf, const Layout& l, MPI_Op op, int root) {
  if (!nodes_keep_order(c.nodes, op) || !through_nodes(c, Coll::kReduce, l.packed, root)) {
    MPI_Request r;
    return on_local(MPI_Ireduce(sendbuf, recvbuf, l.count, l.type, op, root, c.local, &r), r);
  }
  const Where w(c);
  const NodeLevel& lv = c.nodes;
  const int root_node = lv.node_of[root];
  const bool is_root = w.me == root, root_leads = lv.rank_in_node[root] == 0;
  const int count = l.count;
  const MPI_Datatype type = l.type;
  ChainBuilder b(c);
  // In place at the root, its contribution is in recvbuf: the node's reduction takes it
  // from there (MPI_IN_PLACE itself only where the root is that reduction's root).
  const void* mine = sendbuf == MPI_IN_PLACE && !w.leads() ? recvbuf : sendbuf;
  void* partial = !w.leads() ? nullptr : is_root ? recvbuf : b.scratch(l);
  b.then(NodeLevel::kNode, [=, node = lv.node](MPI_Request* r) { return MPI_Ireduce(mine, partial, count, type, op, 0, node, r); });
  if (w.leads()) {
    void* result = is_root ? recvbuf : w.node == root_node ? b.scratch(l) : nullptr;
    const void* in = is_root ? MPI_IN_PLACE : partial;
    b.then(NodeLevel::kLeaders,
           [=, leaders = lv.leaders](MPI_Request* r) { return MPI_Ireduce(in, result, count, type, op, root_node, leaders, r); });
    if (w.node == root_node && !root_leads)
      b.then(NodeLevel::kNode, [=, to = lv.rank_in_node[root], node = lv.node](MPI_Request* r) {
        return MPI_Isend(result, count, type, to, kNodeTag, node, r);
      });
  } else if (is_root) {
    b.then(NodeLevel::kNode, [=, node = lv.node](MPI_Request* r) { return MPI_Irecv(recvbuf, count, type, 0, kNodeTag, node, r); });
  }
  return b.step();
}

// Every node reduces to its leader, leaders allreduce, every leader hands the result to its node.
Step cluster_allreduce(CommImpl& c, const void* sendbuf, void* recvbuf, const Layout& l, MPI_Op op) {
  if (!nodes_keep_order(c.nodes, op) || !through_nodes(c, Coll::kAllreduce, l.packed, 0)) {
    MPI_Request r;
    return on_local(MPI_Iallreduce(sendbuf, recvbuf, l.count, l.type, op, c.local, &r), r);
  }
  const Where w(c);
  const int count = l.count;
  const MPI_Datatype type = l.type;
  const MPI_Comm node = c.nodes.node, leaders = c.nodes.leaders;
  const bool leads = w.leads();
  const void* mine = sendbuf == MPI_IN_PLACE && !leads ? recvbuf : sendbuf;
  ChainBuilder b(c);
  b.then(NodeLevel::kNode, [=](MPI_Request* r) { return MPI_Ireduce(mine, leads ? recvbuf : nullptr, count, type, op, 0, node, r); });
  if (leads)
    b.then(NodeLevel::kLeaders, [=](MPI_Request* r) { return MPI_Iallreduce(MPI_IN_PLACE, recvbuf, count, type, op, leaders, r); });
  b.then(NodeLevel::kNode, [=](MPI_Request* r) { return MPI_Ibcast(recvbuf, count, type, 0, node, r); });
  return b.step();
}

namespace {
// The barrier's stages over the node level: a node's members meet; the leaders meet (only
// the leaders take part in that stage).
void node_barrier(ChainBuilder& b, const CommImpl& c) {
  b.then(NodeLevel::kNode, [node = c.nodes.node](MPI_Request* r) { return MPI_Ibarrier(node, r); });
}
void leaders_barrier(ChainBuilder& b, const CommImpl& c) {
  if (Where(c).leads()) b.then(NodeLevel::kLeaders, [leaders = c.nodes.leaders](MPI_Request* r) { return MPI_Ibarrier(leaders, r); });
}
}  // namespace

Step cluster_arrive(CommImpl& c) {
  if (!through_nodes(c, Coll::kBarrier, 0, 0)) {
    MPI_Request r;
    return on_local(MPI_Ibarrier(c.local, &r), r);
  }
  ChainBuilder b(c);
  node_barrier(b, c);
  leaders_barrier(b, c);
  return b.step();
}

Step cluster_release(CommImpl& c) {
  if (!through_nodes(c, Coll::kBarrier, 0, 0)) return cluster_arrive(c);  // one barrier on `local` either way
  ChainBuilder b(c);
  leaders_barrier(b, c);
  node_barrier(b, c);
  return b.step();
}

// A whole barrier inside the part: over the node level, each node's members meet, the
// leaders meet once (then every member has arrived), and each leader releases its node:
// one crossing between nodes, where arriving and releasing apart take two (between them
// the grid barrier crosses the WAN).
Async<> cluster_barrier(CommImpl& c) {
  if (!through_nodes(c, Coll::kBarrier, 0, 0)) {
    co_await one(cluster_arrive(c));  // one barrier on `local`
    co_return;
  }
  ChainBuilder b(c);
  node_barrier(b, c);
  leaders_barrier(b, c);
  node_barrier(b, c);
  co_await one(b.step());
}

namespace {
// Bytes of every member at `root` of `comm`, one after the other, `sizes` (known at the root) each.
// `into`: where the root wants them (then the result is empty), or null.
Async<std::vector<char>> gather_bytes(const std::vector<char>& mine, const std::vector<std::size_t>& sizes, int root, bool at_root,
                                      MPI_Comm comm, char* into = nullptr) {
  const ByteCounts bc(sizes);
  std::vector<char> all(at_root && !into ? bc.total() : 0);
  char* to = into ? into : all.data();
  MPI_Request r;
  check_mpi(MPI_Igatherv(mine.data(), byte_count(mine.size()), MPI_BYTE, to, bc.counts.data(), bc.displs.data(), MPI_BYTE, root, comm, &r),
            kMpiInCluster);
  co_await one(local_step(r));
  co_return all;
}
// The reverse: member i gets sizes[i] bytes of `all` (at the root) into `got` (got_bytes).
Async<> scatter_bytes(const char* all, const std::vector<std::size_t>& sizes, int root, MPI_Comm comm, char* got, std::size_t got_bytes) {
  const ByteCounts bc(sizes);
  MPI_Request r;
  check_mpi(MPI_Iscatterv(all, bc.counts.data(), bc.displs.data(), MPI_BYTE, got, byte_count(got_bytes), MPI_BYTE, root, comm, &r),
            kMpiInCluster);
  co_await one(local_step(r));
}

// Sizes travel as bytes.
std::vector<char> as_bytes(const std::vector<std::size_t>& sizes) {
  std::vector<char> out(sizes.size() * sizeof(std::size_t));
  if (!out.empty()) std::memcpy(out.data(), sizes.data(), out.size());
  return out;
}
std::vector<std::size_t> as_sizes(const std::vector<char>& bytes) {
  std::vector<std::size_t> out(bytes.size() / sizeof(std::size_t));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}
// `groups` of members, `each` bytes per member: the byte counts of each group.
std::vector<std::size_t> per_group(const std::vector<std::vector<int>>& groups, std::size_t each) {
  std::vector<std::size_t> out;
  for (const auto& g : groups) out.push_back(g.size() * each);
  return out;
}
// Sizes of everyone's bytes at `root` of `comm` (each member gives its own).
Async<std::vector<std::size_t>> gather_sizes(std::size_t mine, int members, bool at_root, int root, MPI_Comm comm) {
  const std::vector<std::size_t> own(1, mine), each(members, sizeof(std::size_t));  // (named: GCC 12 mishandles braced lists in coroutines)
  co_return as_sizes(co_await gather_bytes(as_bytes(own), each, root, at_root, comm));
}

// Members' blocks, sizes[m] bytes for member m, laid one after the other in the order `from`
// lists the members, laid out again in the order `to` lists them.
std::vector<char> reorder(const char* blob, const std::vector<std::size_t>& sizes, const std::vector<int>& from,
                          const std::vector<int>& to) {
  std::vector<std::size_t> offset(sizes.size());
  std::size_t at = 0;
  for (int m : from) {
    offset[m] = at;
    at += sizes[m];
  }
  std::vector<char> out;
  out.reserve(at);
  for (int m : to) out.insert(out.end(), blob + offset[m], blob + offset[m] + sizes[m]);
  return out;
}
std::vector<int> rank_order(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}
// The local ranks node after node.
std::vector<int> node_order(const NodeLevel& lv) {
  std::vector<int> v;
  for (const auto& members : lv.nodes) v.insert(v.end(), members.begin(), members.end());
  return v;
}

// Point-to-point inside a node, waited on.
Async<> node_send(const char* data, std::size_t bytes, int to, MPI_Comm node) {
  MPI_Request r;
  check_mpi(MPI_Isend(data, byte_count(bytes), MPI_BYTE, to, kNodeTag, node, &r), kMpiInCluster);
  co_await one(local_step(r));
}
Async<> node_recv(std::vector<char>& data, int from, MPI_Comm node) {
  MPI_Request r;
  check_mpi(MPI_Irecv(data.data(), byte_count(data.size()), MPI_BYTE, from, kNodeTag, node, &r), kMpiInCluster);
  co_await one(local_step(r));
}
std::size_t sum(const std::vector<std::size_t>& v) { return std::accumulate(v.begin(), v.end(), std::size_t{0}); }
}  // namespace

// Gather: inside every node to its leader, then the nodes' blocks between leaders to the
// root's node's leader, which puts them in rank order and hands them to the root when it is
// another member of its node.
Async<std::vector<char>> cluster_gatherv(CommImpl& c, const std::vector<char>& mine, int root, const std::vector<std::size_t>* known,
                                         std::size_t block, char* into, std::size_t room) {
  const int n = local_size(c);
  const bool at_root = c.index_in_part[c.me] == root;
  if (!through_nodes(c, Coll::kGather, block, root)) {
    std::vector<std::size_t> sizes;
    if (known) sizes = *known;
    else sizes = co_await gather_sizes(mine.size(), n, at_root, root, c.local);
    if (at_root && sum(sizes) != room) into = nullptr;  // (counts that do not agree: returned, as they came)
    co_return co_await gather_bytes(mine, sizes, root, at_root, c.local, into);
  }
  const Where w(c);
  const NodeLevel& lv = c.nodes;
  const int root_node = lv.node_of[root];
  const bool here = w.node == root_node;  // in the root's node
  const auto& node = lv.nodes[w.node];
  std::vector<std::size_t> node_sizes;
  if (known) node_sizes = pick(*known, node);
  else node_sizes = co_await gather_sizes(mine.size(), static_cast<int>(node.size()), w.leads(), 0, lv.node);
  const std::vector<char> node_blob = co_await gather_bytes(mine, node_sizes, 0, w.leads(), lv.node);
  std::vector<std::size_t> all_sizes(n);
  std::vector<char> all;
  if (w.leads()) {
    // Every member's size (only the root's node's leader needs them) ...
    if (known) {
      all_sizes = *known;
    } else {
      const std::vector<std::size_t> by_node =
          as_sizes(co_await gather_bytes(as_bytes(node_sizes), per_group(lv.nodes, sizeof(std::size_t)), root_node, here, lv.leaders));
      if (here) {
        const std::vector<int> order = node_order(lv);
        for (std::size_t i = 0; i < order.size(); ++i) all_sizes[order[i]] = by_node[i];
      }
    }
    // ... and every node's blocks.
    std::vector<std::size_t> node_totals;
    for (const auto& members : lv.nodes) node_totals.push_back(sum(pick(all_sizes, members)));
    const std::vector<char> blob = co_await gather_bytes(node_blob, node_totals, root_node, here, lv.leaders);
    if (here) {
      all = reorder(blob.data(), all_sizes, node_order(lv), rank_order(n));
      if (!at_root) {
        const std::vector<char> raw = as_bytes(all_sizes);
        co_await node_send(raw.data(), raw.size(), lv.rank_in_node[root], lv.node);
        co_await node_send(all.data(), all.size(), lv.rank_in_node[root], lv.node);
      }
    }
  } else if (at_root) {
    std::vector<char> raw(n * sizeof(std::size_t));
    co_await node_recv(raw, 0, lv.node);
    all_sizes = as_sizes(raw);
    all.resize(sum(all_sizes));
    co_await node_recv(all, 0, lv.node);
  }
  if (into && at_root && all.size() == room) {
    if (!all.empty()) std::memcpy(into, all.data(), all.size());
    all.clear();
  }
  co_return all;
}

Async<std::vector<char>> cluster_allgatherv(CommImpl& c, const std::vector<char>& mine, const std::vector<std::size_t>& sizes, char* into) {
  const ByteCounts bc(sizes);
  std::vector<char> all(into ? 0 : bc.total());
  MPI_Request r;
  check_mpi(MPI_Iallgatherv(mine.data(), byte_count(mine.size()), MPI_BYTE, into ? into : all.data(), bc.counts.data(), bc.displs.data(),
                            MPI_BYTE, c.local, &r),
            kMpiInCluster);
  co_await one(local_step(r));
  co_return all;
}

// Scatter: the reverse of cluster_gatherv: the root hands everything to its node's leader
// when it is another member, that leader scatters each node's blocks (and their sizes) to
// the node's leader, and every leader scatters inside its node.
Async<> cluster_scatterv(CommImpl& c, const char* blob, const std::vector<std::size_t>& sizes, int root, char* got, std::size_t got_bytes,
                         std::size_t block) {
  if (!through_nodes(c, Coll::kScatter, block, root)) {
    co_await scatter_bytes(blob, sizes, root, c.local, got, got_bytes);
    co_return;
  }
  const int n = local_size(c);
  const Where w(c);
  const NodeLevel& lv = c.nodes;
  const int root_node = lv.node_of[root];
  const bool here = w.node == root_node, root_leads = lv.rank_in_node[root] == 0;
  std::vector<std::size_t> all_sizes = sizes;
  std::vector<char> received;
  const char* all = blob;
  if (w.me == root && !root_leads) {
    const std::vector<char> raw = as_bytes(sizes);
    co_await node_send(raw.data(), raw.size(), 0, lv.node);
    co_await node_send(blob, sum(sizes), 0, lv.node);  // (blob may go on with other clusters' blocks)
  } else if (w.leads() && here && !root_leads) {
    std::vector<char> raw(n * sizeof(std::size_t));
    co_await node_recv(raw, lv.rank_in_node[root], lv.node);
    all_sizes = as_sizes(raw);
    received.resize(sum(all_sizes));
    co_await node_recv(received, lv.rank_in_node[root], lv.node);
    all = received.data();
  }
  const auto& node = lv.nodes[w.node];
  std::vector<std::size_t> node_sizes(node.size());
  std::vector<char> node_blob;
  if (w.leads()) {
    std::vector<char> sizes_by_node, blocks_by_node;
    std::vector<std::size_t> block_totals;
    if (here) {
      const std::vector<int> order = node_order(lv);
      sizes_by_node = as_bytes(pick(all_sizes, order));
      blocks_by_node = reorder(all, all_sizes, rank_order(n), order);
      for (const auto& members : lv.nodes) block_totals.push_back(sum(pick(all_sizes, members)));
    }
    std::vector<char> raw(node.size() * sizeof(std::size_t));
    co_await scatter_bytes(sizes_by_node.data(), per_group(lv.nodes, sizeof(std::size_t)), root_node, lv.leaders, raw.data(), raw.size());
    node_sizes = as_sizes(raw);
    node_blob.resize(sum(node_sizes));
    co_await scatter_bytes(blocks_by_node.data(), block_totals, root_node, lv.leaders, node_blob.data(), node_blob.size());
  }
  co_await scatter_bytes(node_blob.data(), node_sizes, 0, lv.node, got, got_bytes);
}

Async<Parked> park_in_part(CommImpl& c, const Blocks& in, bool equal, const ParkedOn& parked) {
  const auto& part = c.parts[c.my_part()];
  const int m = static_cast<int>(part.size());
  const int ix = c.index_in_part[c.me];
  Parked p;
  std::vector<std::vector<int>> sent(m);          // what I park on a
  std::vector<std::vector<int>>& kept = p.ranks;  // what k parks on me
  kept.resize(m);
  for (int a = 0; a < m; ++a) {
    sent[a] = parked(ix, a);
    kept[a] = parked(a, ix);
  }
  std::vector<std::vector<std::size_t>> size(m);  // size[k][t]: of the t-th block k parks here
  for (int k = 0; k < m; ++k) size[k].assign(kept[k].size(), equal ? in.packed(0) : 0);
  if (m == 1) {
    for (std::size_t t = 0; t < kept[0].size(); ++t) size[0][t] = in.packed(kept[0][t]);
  } else if (!equal) {  // the sizes first
    std::vector<unsigned long long> size_out, size_in;
    std::vector<int> scount(m), sdispl(m), rcount(m), rdispl(m);
    for (int a = 0; a < m; ++a) {
      sdispl[a] = static_cast<int>(size_out.size());
      for (int j : sent[a]) size_out.push_back(in.packed(j));
      scount[a] = static_cast<int>(sent[a].size());
      rdispl[a] = static_cast<int>(size_in.size());
      rcount[a] = static_cast<int>(kept[a].size());
      size_in.resize(size_in.size() + kept[a].size());
    }
    MPI_Request r;
    check_mpi(MPI_Ialltoallv(size_out.data(), scount.data(), sdispl.data(), MPI_UNSIGNED_LONG_LONG, size_in.data(), rcount.data(),
                             rdispl.data(), MPI_UNSIGNED_LONG_LONG, c.local, &r),
              kMpiInCluster);
    co_await one(local_step(r));
    for (int k = 0; k < m; ++k)
      for (std::size_t t = 0; t < kept[k].size(); ++t) size[k][t] = size_in[rdispl[k] + t];
  }
  std::vector<std::size_t> recv_sizes(m);
  for (int k = 0; k < m; ++k) recv_sizes[k] = std::accumulate(size[k].begin(), size[k].end(), std::size_t{0});
  const ByteCounts rb(recv_sizes);
  if (m == 1) {
    p.data = in.pack_all(sent[0]);
  } else {
    std::vector<std::size_t> send_sizes(m);
    std::vector<char> send_data;
    for (int a = 0; a < m; ++a) {
      const std::vector<char> blocks = in.pack_all(sent[a]);
      send_data.insert(send_data.end(), blocks.begin(), blocks.end());
      send_sizes[a] = blocks.size();
    }
    const ByteCounts sb(send_sizes);
    p.data.resize(rb.total());
    MPI_Request r;
    check_mpi(MPI_Ialltoallv(send_data.data(), sb.counts.data(), sb.displs.data(), MPI_BYTE, p.data.data(), rb.counts.data(),
                             rb.displs.data(), MPI_BYTE, c.local, &r),
              kMpiInCluster);
    co_await one(local_step(r));
  }
  p.at.assign(m, {});
  for (int k = 0; k < m; ++k) {
    p.at[k].assign(kept[k].size() + 1, static_cast<std::size_t>(rb.displs[k]));
    for (std::size_t t = 0; t < kept[k].size(); ++t) p.at[k][t + 1] = p.at[k][t] + size[k][t];
  }
  co_return std::move(p);
}

}  // namespace gridrt::detail
