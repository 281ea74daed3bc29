// What the cost functions of the collective algorithms share (each algorithm's own is in its
// file, declared in algorithms.h): the shape of a communicator with the calibrated pLogP
// parameters of every pair of its parts (models/grid_model.h), the cost of MPICH's steps
// inside a cluster, and a timeline that plays an algorithm's messages over the grid's lines.
//
// The model: pLogP (Kielmann, Bal, Verstoep, "Fast Measurement of LogP Parameters for
// Message Passing Platforms", 2000): a message of m bytes occupies its line for the gap
// g(m) and arrives L after it has been clocked out. The messages one site sends to another
// in the same step share one line (or, with an access line, all it sends to any site),
// one after the other: the adaptation of Steffenel, Martinasso and Trystram's Local Group
// model ("Assessing Contention Effects on MPI_Alltoall Communications", 2007/2008, Eq. 7)
// to lines shared by the pairs of a step, as on a real site's WAN link. Lines between
// clusters of one site (the LAN) and the paths inside a cluster are not shared.
//
// Times in seconds. Every member computes the same predictions from the same shape and
// model, so choices made from them agree.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "choice.h"
#include "part_trees.h"
#include "models/flow_window.h"
#include "models/grid_model.h"

namespace gridrt::detail {

// A cluster part over the logical clusters of its cluster (models/logical_clusters.h): which
// one each member is in, and the slowest pair measured inside one and between two (the
// collectives wait for it). Every member of a communicator knows each one's host (the
// topology's node), so where the model's logical clusters name hosts, all place the
// members alike and as they are; where they name nodes the topology does not know (several
// shared-memory domains of one host), only the cluster's own members know (the node level's
// groups), and the others take them as placed in runs, the nodes in the model's order, as
// mpiexec places ranks by host.
struct LogicalLevel {
  std::vector<int> group_of;      // of each member, by index in the part
  int groups = 1, per_group = 1;  // logical clusters with members; members of the largest
  models::PLogP between, inside;
  // Sets group_of and counts the groups and the largest.
  void place(std::vector<int> group_of);
};

// MPICH's step `op` over the whole part from `root` (an index in the part), each pair
// inside a logical cluster or across two as the members are placed: the rooted operations
// edge by edge down or up MPICH's binomial tree (edges across, each on its own connection,
// at once), the others round by round as their exchange goes, each round as long as its
// slowest pair. m and `at` as local_cost's.
double spread_cost(Coll op, const LogicalLevel& lv, double m, double at, int root = 0);
// The same step composed over the logical clusters (cluster_steps.cpp): a broadcast
// between the leaders, then inside each; a reduction the other way; an all-reduce reduces
// inside, all-reduces between, broadcasts inside; a gather gathers inside, then the
// leaders' blocks; a scatter the other way; a barrier meets inside, across, inside. The
// all-gather, the all-to-all and the scan have no composed form: MPICH's over the part.
double composed_cost(Coll op, const LogicalLevel& lv, double m, double at);
// Whether `op` of m bytes composes over the logical clusters: as asked, or where the model
// predicts it no slower than MPICH's steps. Every member of the part decides alike (same
// model, same placement, same arguments).
bool composes(Coll op, const LogicalLevel& lv, double m, int root, ClusterSteps steps);

struct CostShape {
  std::vector<int> part_size;                             // members of each part (cluster), parts numbered as in CommImpl
  std::vector<int> site_of_part;                          // and the site of each, sites numbered by their first part
  std::vector<std::vector<int>> sites;                    // each site's parts, in order
  std::vector<int> part_of;                               // of every member
  std::vector<std::vector<int>> members;                  // of every part, in order
  std::vector<bool> site_access;                          // the site's outgoing WAN traffic shares one line
  std::vector<std::vector<models::PLogP>> link;           // [a][b] between members of parts a and b ([a][a]: inside a)
  std::map<std::string, models::Correction> corrections;  // the model's, by "op/algo"
  std::map<std::string, double> slice_costs;              // the model's (models::GridModel::slice_costs)
  // Each part's cluster's gathers (models/many_to_one.h), where the model has them.
  std::vector<std::shared_ptr<const models::ManyToOneModel>> gathers;
  // Where a part's cluster makes several logical clusters whose pairs the model measured:
  // its members placed in runs (LogicalLevel), its steps run as `steps` says.
  std::vector<std::optional<LogicalLevel>> logical;
  ClusterSteps steps = ClusterSteps::kModel;
  // The job's flow-control window per stream between clusters as streams begin
  // (GRIDRT_WINDOW, or the default), bytes: it cuts their messages into frames; and for
  // each pair of parts a != b the window its streams settle at on its line (grown where
  // the line asks for more: flow::settled_window), their credit round trip, that of no
  // data (2 (L + g(0))), and whether the line outpaces that window
  // (models::FlowWindow::outpaced): only then does a timeline keep its streams.
  // set_window() sets them (the constructor, the default window). The predictions are
  // those of streams whose windows have settled (a destination's streams keep what the
  // first learned, within a few round trips of its first large messages).
  struct PairWindow {
    double window = 0, round_trip = 0;
    bool outpaced = false;
  };
  double window = 0;
  std::vector<PairWindow> pair_window;  // by a * parts() + b
  void set_window(flow::Window w);

  // From the members' parts (part_of, parts numbered by first member), the parts' sites,
  // and the clusters' and sites' names in the model; `member_node`, each member's host where
  // every member knows them (else empty). Throws models::ModelError when the model lacks a
  // pair that the communicator needs.
  CostShape(const models::GridModel& model, std::vector<int> part_of, std::vector<int> site_of_part,
            const std::vector<std::string>& part_cluster, const std::vector<std::string>& site_name,
            const std::vector<std::string>& member_node = {});

  // What MPICH's step `op` of m bytes (as local_cost counts them) takes inside part q,
  // `at` seconds after its receivers last worked: over its logical clusters where it has
  // several (composed or not, as `steps` and composes() say), else local_cost's.
  double local(Coll op, int q, double m, double at = 0) const;
  int parts() const { return static_cast<int>(part_size.size()); }
  int size() const { return static_cast<int>(part_of.size()); }
  int member(int part, int index) const { return members[part][index]; }
  int leader(int part) const { return members[part].front(); }
  bool same_site(int a, int b) const { return site_of_part[a] == site_of_part[b]; }
  int head(int site) const { return sites[site].front(); }
  // The line a message from part a to part b occupies, numbered 0 .. lines() - 1, or -1
  // where it occupies none: inside a cluster (MPICH's paths); between clusters of one site
  // their own; between sites the pair of sites' (or the sending site's access line).
  int line_of(int a, int b) const;
  int lines() const;
  // The pair a message between members of parts a and b is timed by. Between two members
  // of a cluster of several logical clusters it is taken as crossing between them, on the
  // slowest pair: which logical cluster a member is in only its own cluster's processes
  // know, and every member must predict alike (a point-to-point algorithm's critical path
  // crosses anyway: a linear gather waits for the farthest member, a tree over both crosses
  // at least once).
  const models::PLogP& pair(int a, int b) const { return a == b && logical[a] ? logical[a]->between : link[a][b]; }
  // How long the sender of m bytes from part a to b is busy: its own gap, handing the
  // message over inside its cluster (to the peer, or to its relay).
  double handover(int a, int b, double m) const { return (a == b ? pair(a, a) : link[a][a]).gap(m); }
  double members_in(const std::vector<int>& which) const {
    double n = 0;
    for (int p : which) n += part_size[p];
    return n;
  }
};

// Times as numbers: a clock for schedules worked out as they are added (Timeline's, and
// the trees' inside a cluster).
struct Times {
  using Time = double;
  static double latest(double x, double y) { return std::max(x, y); }
};

// The latest of a schedule's points `all` (the clock's start where there are none).
template <typename Clock> typename Clock::Time latest_of(Clock& clock, const std::vector<typename Clock::Time>& all) {
  typename Clock::Time last{};
  for (const auto& t : all) last = clock.latest(last, t);
  return last;
}

// A schedule played over the lines first come, first served, in the order its messages
// are added (the hierarchical algorithms', and the flat ones' where they are too large for
// the event timeline, event_timeline.h): each message waits for its sender and its line to
// be free, occupies both for its gap, and arrives L after. Senders are members (or -1 where
// the sender's own gap does not matter: a message handed on as soon as it is there).
// Between clusters (through the relays) each stream, a pair of members, also keeps the
// job's flow-control window (models/flow_window.h): where the window's pace is below the
// line's, a stream's message leaves no faster than its credit comes back, while the line
// stays free for the other streams' messages.
class Timeline : public Times {
 public:
  explicit Timeline(const CostShape& s);
  // A message of m bytes from member `from` of part a to member `to` of part b (-1: b's
  // leader), ready at t: when it arrives. `handed`, where given: when its sender has handed
  // it over (taken as at once: its gap after it began). A receive is taken as posted
  // (`posted`, EventTimeline's, is not looked at).
  double send(int from, int a, int b, double m, double t, int to = -1, double* handed = nullptr, double posted = 0);

 private:
  const CostShape& s_;
  std::vector<double> sender_free_;                            // by member
  std::vector<double> line_free_;                              // by line (line_of)
  std::map<std::pair<int, int>, models::FlowWindow> streams_;  // by (from, to) member
  static constexpr std::size_t kMaxStreams = 1 << 16;
};

// MPICH's binomial tree over P members, in ranks relative to its root (rel's parent is rel
// without its lowest set bit, its subtree the next `low` ranks), over a clock's times
// (Times, Timeline, EventTimeline: its Time and latest()). Down (bcast, scatter): a member
// sends to its children once it has received, largest subtree first; edge(parent, child,
// subtree, ready) returns when the child has it, `ready` when the parent had it. Returns
// when the last has it.
template <typename Clock, typename Edge> typename Clock::Time binomial_down(int P, Clock& clock, Edge&& edge) {
  using Time = typename Clock::Time;
  std::vector<Time> got(P, Time{});
  for (int rel = 0; rel < P; ++rel) {  // a member's parent comes first
    int mask = 1;
    while (mask < P && !(rel & mask)) mask <<= 1;  // rel's lowest set bit (above P for the root)
    for (mask >>= 1; mask > 0; mask >>= 1)
      if (rel + mask < P) got[rel + mask] = edge(rel, rel + mask, std::min(mask, P - rel - mask), got[rel]);
  }
  return latest_of(clock, got);
}
// Up (reduce, gather): a member sends to its parent once its children's have arrived;
// the parent takes its children in order, smallest subtree first, each child's receive
// posted when the one before it has arrived (`posted`, the clock's start for the first):
// edge(child, parent, subtree, ready, posted) says when it arrives. Returns when the root
// has everything.
template <typename Clock, typename Edge> typename Clock::Time binomial_up(int P, Clock& clock, Edge&& edge) {
  using Time = typename Clock::Time;
  std::vector<Time> ready(P, Time{});
  for (int parent = P - 1; parent >= 0; --parent) {  // a member's children come first
    Time posted{};
    for (int mask = 1; mask < P && !(parent & mask) && parent + mask < P; mask <<= 1) {
      const int child = parent + mask;
      posted = edge(child, parent, std::min(mask, P - child), ready[child], posted);
      ready[parent] = clock.latest(ready[parent], posted);
    }
  }
  return P > 0 ? ready[0] : Time{};
}

// The symmetric hierarchical pattern (barrier, allreduce, allgather): every part's leader
// hands up[p] bytes to its site's head once ready[p]; each head, once it has its site's,
// sends across[site] bytes to every other head; once it has every site's, it hands down[p]
// bytes to each of its site's other parts. Returns when each part's leader has it all.
// Over `tl` where one of several slices (its lines busy with the earlier ones).
std::vector<double> through_heads(const CostShape& s, const std::vector<double>& ready, const std::vector<double>& up,
                                  const std::vector<double>& across, const std::vector<double>& down);
std::vector<double> through_heads(Timeline& tl, const CostShape& s, const std::vector<double>& ready, const std::vector<double>& up,
                                  const std::vector<double>& across, const std::vector<double>& down);
// Its three stages, for patterns that exchange between the heads more than once: when each
// site's head has its site's (by site), when each head has every other head's, and when
// each part's leader has it back (by part).
std::vector<double> to_heads(Timeline& tl, const CostShape& s, const std::vector<double>& ready, const std::vector<double>& up);
std::vector<double> between_heads(Timeline& tl, const CostShape& s, const std::vector<double>& at_head, const std::vector<double>& across);
std::vector<double> from_heads(Timeline& tl, const CostShape& s, const std::vector<double>& everything, const std::vector<double>& down);

// A prediction plays at most this many slices: each is played over the whole shape, and
// a message of 256 MiB in 8 KiB slices on 100 clusters took 47 s to predict. The model
// chooses no smaller slices than that leaves (pipelined_slice); a slice asked for that is
// smaller (GRIDRT_SLICE on a message of more than kMostSlices of them) is predicted as
// this many larger ones, the per-slice costs of the rest unseen.
constexpr double kMostSlices = 1024;
// The slices of m bytes cut `slice` bytes each (the pipelined collectives' Slices), at most
// kMostSlices of them: how many (at least one), and the k-th's bytes.
struct SliceSizes {
  double m, slice;
  SliceSizes(double bytes, double asked) : m(bytes), slice(std::max(asked, std::ceil(bytes / kMostSlices))) {}
  int count() const { return std::max(1, static_cast<int>(std::ceil(m / slice))); }
  double bytes(int k) const { return std::max(0.0, std::min(slice, m - k * slice)); }
};

// A receiver that has waited this long sleeps between its tests (the wait policy's yielding
// phase, progress.h's Pause::kYieldFor): a message inside a cluster then takes the pair's
// `wake` longer (models/plogp.h). A collective's members start together, so a message or
// step inside a cluster that starts later than this after the call (or, for the slices of a
// pipelined one, after the cluster's previous step) finds its receivers asleep.
constexpr double kYieldPhase = 500e-6;
// A pair's latency for a message whose receiver last worked `at` seconds before it.
inline double latency_after(const models::PLogP& p, double at) { return p.L + (at > kYieldPhase ? p.wake : 0); }

// MPICH's collective `op` over n processes of one cluster (pLogP p), m bytes as choice.h
// counts them (gather, scatter, allgather, alltoall: per block), starting `at` seconds after
// its receivers last worked (the call's start, or their previous step). Binomial trees for
// the rooted operations and barrier, recursive doubling for allreduce and scan, the linear
// gatherv and alltoall that MPICH posts at once (Thakur, Rabenseifner, Gropp 2005).
double local_cost(Coll op, int n, const models::PLogP& p, double m, double at = 0);

int ceil_log2(int n);

}  // namespace gridrt::detail
