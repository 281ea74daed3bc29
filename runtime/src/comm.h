// Inside a grid communicator: who its members are, the topology below it, the channel its
// collectives' messages travel on, and the order its collectives run in (docs/algorithms.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "channel/channel.h"
#include "async.h"
#include "state.h"

namespace gridrt::detail {

struct Chain;
struct CollState;

// The node level inside this process's cluster part of a communicator (Coti, Herault, Cappello 2009 §3.1): the
// members of `local` on each node, as MPI sees them (MPI_Comm_split_type shared, so
// MPICH's cliques, MPIR_CVAR_NUM_CLIQUES, make several nodes of one machine for tests),
// worked out once. cluster_steps.h composes the steps inside a cluster over it. Where the
// grid's model splits the cluster into logical clusters (Barchet-Estefanel and Mounié 2004:
// groups of nodes alike, models/logical_clusters.h), those take the nodes' place: "node"
// below is then a logical cluster.
struct NodeLevel {
  enum { kNode = 0, kLeaders = 1 };
  MPI_Comm node = MPI_COMM_NULL;           // this node's members of `local`, in local order
  MPI_Comm leaders = MPI_COMM_NULL;        // each node's first member (its leader), in local order; null elsewhere
  std::vector<std::vector<int>> nodes;     // each node's local ranks; nodes numbered by their leaders' order
  std::vector<int> node_of, rank_in_node;  // of every local rank
  bool contiguous = true;                  // every node is a run of consecutive local ranks
  // Several nodes, not all of one process: the steps inside the cluster go through the node
  // level. Worked out only with GRIDRT_NODE_LEVEL=on (off by default: docs/algorithms.md,
  // "Node level") or logical clusters; otherwise nothing here is made and `used` stays false.
  bool used = false;
  // The nodes are the model's logical clusters (then each step composes over them or not as
  // the model predicts: coll/cluster_steps.cpp).
  bool logical = false;

  NodeLevel() = default;
  NodeLevel(const NodeLevel&) = delete;
  ~NodeLevel();
  void work_out(MPI_Comm local);
};

struct CommImpl;

// The other group of an intercommunicator (MPI 4.0 §7.6): its collectives are each a
// collective of the local group plus messages to and from the remote one (coll/intercomm.cpp).
struct RemoteGroup {
  std::vector<int> members;  // global rank of each, by rank in the remote group
  // The messages of the intercommunicator's collectives to and from it, on context + 2 and
  // on an MPI communicator of both groups' members in this cluster, which it owns.
  std::shared_ptr<Channel> channel;
  MPI_Comm mpi = MPI_COMM_NULL;
  // The local group as an intracommunicator of its own, on context + 3 (its collectives'
  // messages must not meet the intercommunicator's own).
  std::shared_ptr<CommImpl> group;
  std::uint64_t calls = 0;  // collectives so far: each one's tag, the same on both sides

  RemoteGroup() = default;
  RemoteGroup(const RemoteGroup&) = delete;
  ~RemoteGroup();
  int size() const { return static_cast<int>(members.size()); }
};

struct CommImpl {
  std::vector<int> members;  // global rank of each member, by rank here
  int me = -1;               // this process's rank here
  // Its contexts on the transport: `context` its collectives' messages, context + 1 its
  // members' own point-to-point (the MPI layer's user channel), context + 2 the making of
  // communicators over some of its members (MPI_Comm_create_group).
  std::uint32_t context = 0;
  MPI_Comm local = MPI_COMM_NULL;    // the members in this process's cluster, in rank order here
  NodeLevel nodes;                   // and on each node
  std::shared_ptr<Channel> channel;  // its collectives' point-to-point, on `local` and `context`
  // An intercommunicator's remote group (then `members` is the local group); null for an
  // intracommunicator.
  std::unique_ptr<RemoteGroup> remote;

  // The topology below it (Coti, Herault, Cappello 2009 §3.1), worked out once: the clusters holding members,
  // numbered by their first member ("parts"), the members of each in rank order, and each
  // member's part and rank in its part's `local`. A part's leader is its first member.
  std::vector<std::vector<int>> parts;
  std::vector<int> part_of;
  std::vector<int> index_in_part;
  bool parts_contiguous = true;  // every part is a run of consecutive ranks

  // The level above: sites, numbered by their first part, each with its parts in order. The
  // wide-area network lies between sites; clusters of one site reach each other over its
  // LAN (through their relays). A site's first part, its "head", speaks for it across the
  // WAN, so that data enters every site once (Coti, Herault, Cappello 2009 §3.1-3.2).
  std::vector<std::vector<int>> sites;
  std::vector<int> site_of_part;
  bool sites_contiguous = true;  // every site's parts are consecutive part numbers

  std::uint64_t calls = 0;  // collectives started so far: each one's messages carry its tag
  // The tags its collectives take, in turn: `tag_span` of them from `tag_base`; 0 for the
  // lower half of the tags (the upper half is for lanes(): slices of their own).
  int tag_base = 0, tag_span = 0;
  // Collectives called (CollectiveOp's tickets) and finished: each starts when all earlier
  // ones have finished.
  std::uint64_t collectives_called = 0, collectives_finished = 0;

  // What the collectives keep of it (their choices, the node level's chains in flight),
  // theirs alone: coll/coll_state.h.
  std::shared_ptr<CollState> coll;
  CommImpl() = default;
  CommImpl(const CommImpl&) = delete;
  ~CommImpl();

  int size() const { return static_cast<int>(members.size()); }
  int my_part() const { return part_of[me]; }
  int leader(int part) const { return parts[part].front(); }
  bool is_leader() const { return leader(my_part()) == me; }
  // In a rooted collective, the member through which data enters or leaves a part: the
  // root in its own part, the leader elsewhere.
  int entry(int part, int root) const { return part == part_of[root] ? root : leader(part); }
  int site_head(int site) const { return sites[site].front(); }
  bool is_site_head(int part) const { return site_head(site_of_part[part]) == part; }
  // The other parts of part p's site, in part order (they meet at the site's head).
  std::vector<int> site_mates(int p) const {
    std::vector<int> out;
    for (int q : sites[site_of_part[p]])
      if (q != p) out.push_back(q);
    return out;
  }
  // The sites other than part p's, in order (across the WAN, each one's head speaks for it).
  std::vector<int> other_sites(int p) const {
    std::vector<int> out;
    for (int t = 0; t < static_cast<int>(sites.size()); ++t)
      if (t != site_of_part[p]) out.push_back(t);
    return out;
  }
  // Every part's own members in rank order, for the parts in `which`, one after the other.
  std::vector<int> members_of(const std::vector<int>& which) const {
    std::vector<int> out;
    for (int p : which) out.insert(out.end(), parts[p].begin(), parts[p].end());
    return out;
  }
  // Channel arguments for these members: each one's rank in `local` (-1 in other clusters).
  std::vector<int> local_ranks() const;

  // A tag for the messages of the next collective, the same in every member (they start
  // collectives in the same order); within one collective, messages between two members
  // keep their order (MPI's non-overtaking rule, and the transport's per-stream order).
  int next_tag() {
    const std::uint64_t span = tag_span > 0 ? static_cast<std::uint64_t>(tag_span) : tags() / 2;
    return tag_base + static_cast<int>(calls++ % span);
  }
  static std::uint64_t tags() { return static_cast<std::uint64_t>(std::min(state().tag_ub, kMaxTag)) + 1; }
  // A lane: a sequence of collectives over the same members and contexts as this one but
  // ordered apart from its own (a persistent collective's starts match each other, whatever
  // else the members start meanwhile: MPI 4.0 §6.12). Lane `index` of this communicator
  // takes its own slice of the upper half of the tags; `local`, an MPI communicator of the
  // same members as this one's `local` (a duplicate), is its own, for its steps in the
  // cluster. Lanes whose indices differ by a multiple of kLanes share tags: at most that
  // many may be in use at once.
  static constexpr std::uint64_t kLanes = 1024;
  std::shared_ptr<CommImpl> lane(std::uint64_t index, MPI_Comm lane_local) const;

  // `members` in rank order, me, context and local set: the rest follows (collective over
  // `local`), the channel among it.
  void work_out_topology();
  // A communicator of these members (global ranks, in rank order; this process is member
  // `me`) on contexts `context` and context + 1, over `local` (the members in this cluster,
  // in rank order), which it owns from now on.
  static std::shared_ptr<CommImpl> make(std::vector<int> members, int me, std::uint32_t context, MPI_Comm local);
  static std::shared_ptr<CommImpl> make_world();
};

// Communicators are made collectively over a parent. Contexts above every one any member
// uses, agreed by all: no two communicators sharing a process share a context.
std::uint32_t agree_on_context(const std::shared_ptr<CommImpl>& parent);
// MPI_Comm_split's new members: those of the parent with the same color (not MPI_UNDEFINED),
// ordered by key, then by rank in the parent; `me` stays -1 where color is MPI_UNDEFINED.
// The contexts are agreed in the same collective.
struct SplitMembers {
  std::vector<int> members;
  int me = -1;
  std::uint32_t context = 0;
};
SplitMembers split_members(const std::shared_ptr<CommImpl>& parent, int color, int key);

// One point-to-point step of a collective between two members (over the communicator's
// channel: MPI inside the cluster, the transport across), an MPI collective already started
// on `local`, or a chain of MPI stages (cluster_steps.h).
struct Step {
  Channel* channel = nullptr;
  OpPtr op;
  MPI_Request mpi = MPI_REQUEST_NULL;
  std::shared_ptr<Chain> chain;
  bool done = false;
  // A receive: the bytes its collective expects, and from whom (global rank). A member that
  // passes other counts than the rest makes a message of another size: that is an error
  // named there, not data quietly cut short.
  std::size_t expect = kNoExpectation;
  int from = -1;
  static constexpr std::size_t kNoExpectation = static_cast<std::size_t>(-1);
};
Step send_to(CommImpl& c, int dst, int tag, const void* data, std::size_t bytes);
Step receive_from(CommImpl& c, int src, int tag, void* data, std::size_t bytes);
// The same between a member of an intercommunicator and a member of its remote group.
Step send_to_remote(CommImpl& c, int dst, int tag, const void* data, std::size_t bytes);
Step receive_from_remote(CommImpl& c, int src, int tag, void* data, std::size_t bytes);
// An MPI collective already started on `local`, as a step.
inline Step local_step(MPI_Request r) {
  Step s;
  s.mpi = r;
  return s;
}
inline Step done_step() {
  Step s;
  s.done = true;
  return s;
}

// One collective call on a communicator in flight. MPI has the collectives of one
// communicator called in the same order by every member; each here starts only when every
// earlier one on its communicator has finished, so that their messages and the MPI
// collectives they start on `local` come in that order everywhere, blocking and non-blocking
// ones alike. Until it ends it is moved on by every wait of the process (progress.h).
class CollectiveOp : public Pollable {
 public:
  CollectiveOp(std::shared_ptr<CommImpl> comm, Async<> task);
  ~CollectiveOp() override;
  CollectiveOp(const CollectiveOp&) = delete;
  bool poll() override;
  bool needs_mpi() const override { return flow_.needs_mpi(); }
  bool finished() const { return flow_.done; }
  // What it failed with, thrown (nothing when it succeeded).
  void rethrow() const;

 private:
  std::shared_ptr<CommImpl> comm_;
  Async<> task_;
  Flow flow_;
  std::uint64_t ticket_;
  bool started_ = false, counted_ = false;
};
// A non-blocking collective: started now if its turn has come.
std::shared_ptr<CollectiveOp> start_collective(std::shared_ptr<CommImpl> comm, Async<> task);
// A blocking one: returns when it has ended, throwing what it failed with.
void run_collective(std::shared_ptr<CommImpl> comm, Async<> task);
// Waits until op has finished (rethrowing its error).
void wait_collective(CollectiveOp& op);

}  // namespace gridrt::detail
