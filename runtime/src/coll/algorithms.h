// The collective algorithms, one per file, each an Async coroutine (../async.h) over a grid communicator
// (docs/algorithms.md gives their steps and what crosses the WAN):
//
//   *_hier  hierarchical: at most one WAN hop on any path, each piece of data enters a site
//           and a cluster once (MagPIe's rule: Kielmann, Hofman, Bal, Plaat, Bhoedjang,
//           "MagPIe: MPI's collective communication operations for clustered wide area
//           systems", 1999; Coti, Herault, Cappello, "MPI Applications on Grids: a
//           Topology-Aware Approach", 2009, §3.2); the steps inside a cluster are MPICH's
//           non-blocking collectives (cluster_steps.h);
//   the others are flat: what a plain MPI does over all processes, unaware of the topology
//           (binomial trees, recursive doubling, rings, pairwise exchange; Thakur,
//           Rabenseifner, Gropp, "Optimization of Collective Communication Operations in
//           MPICH", 2005), over the same channel: the baseline.
//
// Data crosses clusters packed, so any datatype works; reductions run on buffers laid out
// as the datatype (MPI_Reduce_local), folding partial results in rank order, so that a
// non-commutative operation gives the rank-order result. The entry points that check the
// arguments and choose are in collectives.cpp.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "coll_support.h"
#include "costs.h"
#include "event_timeline.h"

// The algorithms see channels and MPI only: how bytes cross clusters is the transport's.
#if defined(BOOST_ASIO_VERSION) || defined(OPENSSL_VERSION_NUMBER)
#error "the collective algorithms must not see Asio or OpenSSL (keep transport headers out of comm.h)"
#endif

namespace gridrt::detail {

Async<> barrier_hier(CommImpl& c);
Async<> barrier_dissemination(CommImpl& c);

// Down the tree of a route (part_trees.h: packed, binomial or chain).
// Pipelined in slices of about `slice` bytes (bcast, reduce, allreduce).
Async<> bcast_hier(CommImpl& c, void* buf, Layout l, int root, PartTree t, std::size_t slice);
Async<> bcast_binomial(CommImpl& c, void* buf, Layout l, int root);

// sendbuf may be MPI_IN_PLACE at the root (reduce) or anywhere (allreduce).
Async<> reduce_hier(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, int root, PartTree t, std::size_t slice);
Async<> reduce_binomial(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, int root);
// Through the sites' heads, `between` them by the heads route (each site's partial result to
// every other head) or the reduce-scatter one (pieces folded by one head each, then
// all-gathered); and the rooted route (reduce_hier to member 0, then bcast_hier, each as
// chosen for itself; commutative operations only).
Async<> allreduce_hier(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, std::size_t slice,
                       Route between = Route::kHeads);
Async<> allreduce_rooted(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op);
Async<> allreduce_doubling(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op);

// Gathers: `mine` is this member's block, packed (none for MPI_IN_PLACE at the root, whose
// block is then in place); `out`, the blocks at the root (empty elsewhere). `block`: every
// block's packed size when all are alike (gather), else kSizeNotShared (gatherv: only the
// root knows them).
// The hierarchical ones go up `tree` (part_trees.h), rooted at the root's part.
Async<> gatherv_hier(CommImpl& c, std::vector<char> mine, bool in_place, Blocks out, int root, std::size_t block, PartTree tree);
Async<> gather_binomial(CommImpl& c, std::vector<char> mine, bool in_place, Blocks out, int root, std::size_t block);
Async<> gatherv_linear(CommImpl& c, std::vector<char> mine, bool in_place, Blocks out, int root);
// The hierarchical gather's step inside a cluster where its gathers escalate: `block` bytes
// from every member (the root's own is `mine`, none when in place) in `pieces` gathers, each
// paced by the root (`root` a member of this part; `tag` the collective's). Returns the
// blocks in local rank order at the root, nothing elsewhere.
Async<std::vector<char>> cluster_gather_paced(CommImpl& c, const std::vector<char>& mine, int root, std::size_t block, int pieces, int tag);
// How many pieces this member's cluster gathers a block of `block` bytes in (1: MPICH's one
// gather): GRIDRT_GATHER_PIECES when set, else the cluster's many-to-one model (none: 1).
int gather_pieces(CommImpl& c, std::size_t block);
// The cluster's many-to-one model in the grid's model; null when it has none.
const models::ManyToOneModel* many_to_one_of(const CommImpl& c);
// The communicator's shape with the grid's model (costs.h), made once; null without a model
// or when the model lacks a pair the communicator needs (said once, by its first member).
const CostShape* costs_of(CommImpl& c);
// The name of this member's cluster.
const std::string& cluster_name_of(const CommImpl& c);
// Choices kept per communicator (auto's, the gather's pieces); beyond, made at each call.
constexpr std::size_t kChoicesKept = 1024;

// Scatters: `in`, the blocks at the root (empty elsewhere); this member's block goes to
// recvbuf as `mine` says (none for MPI_IN_PLACE at the root). `block`: every block's packed
// size when all are alike (scatter: nobody needs to be told the sizes), else kSizeNotShared.
// The hierarchical one goes down `tree` (part_trees.h), rooted at the root's part.
Async<> scatterv_hier(CommImpl& c, Blocks in, void* recvbuf, Layout mine, bool in_place, int root, std::size_t block, PartTree tree);
Async<> scatter_binomial(CommImpl& c, Blocks in, void* recvbuf, Layout mine, bool in_place, int root);
Async<> scatterv_linear(CommImpl& c, Blocks in, void* recvbuf, Layout mine, bool in_place, int root);

// All-gathers: `mine`, this member's block packed; `out` everyone's blocks (with
// MPI_IN_PLACE this member's is already there).
Async<> allgatherv_hier(CommImpl& c, std::vector<char> mine, Blocks out);
Async<> allgatherv_ring(CommImpl& c, std::vector<char> mine, Blocks out);

// All-to-alls: `in` this member's blocks for every member, `out` its blocks from them.
// `equal`: all blocks alike (alltoall), so nobody needs to be told the sizes.
Async<> alltoallv_local_group(CommImpl& c, Blocks in, Blocks out, bool equal);
// The paper's rule for a communicator of exactly two parts (the "groups" route).
Async<> alltoallv_local_group_two(CommImpl& c, Blocks in, Blocks out, bool equal);
Async<> alltoallv_pairwise(CommImpl& c, Blocks in, Blocks out);

// Reduce-scatter (MPI_Reduce_scatter): member i gets counts[i] elements of `element`'s
// datatype, the fold of everyone's i-th block of sendbuf (or, MPI_IN_PLACE, recvbuf)'s
// blocks laid end to end. Through the sites' heads (each site's share crossing once), the
// reduction inside the clusters in slices of about `slice` bytes; the rooted route (a
// reduction, then a scatter) is collectives.cpp's.
Async<> reduce_scatter_hier(CommImpl& c, const void* sendbuf, void* recvbuf, std::vector<int> counts, Layout element, MPI_Op op,
                            std::size_t slice);
// The rooted route (`family` kHier) and the flat reduce-scatter (kFlat): a reduction to member
// 0, then a scatter of its blocks.
Async<> reduce_scatter_rooted(CommImpl& c, const void* sendbuf, void* recvbuf, std::vector<int> counts, Layout element, MPI_Op op,
                              Algo family);

// Prefix reductions (MPI_Scan, MPI_Exscan): member r gets the fold of members 0..r (or
// 0..r-1) in rank order. Hierarchical: MPICH's scan inside each cluster, the clusters'
// totals across.
Async<> scan_hier(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, bool exclusive);
Async<> scan_doubling(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, bool exclusive);

// Each algorithm's cost function, beside it in its file: the predicted seconds of one call
// on a communicator of shape `s` (coll/costs.h), m bytes as choice.h counts them (the
// message; a member's block; a pair's block), for the root given.
double barrier_hier_cost(const CostShape& s);
double barrier_dissemination_cost(const CostShape& s);
// The pipelined ones' in slices of `slice` bytes.
double bcast_hier_cost(const CostShape& s, int root, double m, Route r = Route::kPacked, double slice = kDefaultSlice);
double bcast_binomial_cost(const CostShape& s, int root, double m);
double reduce_hier_cost(const CostShape& s, int root, double m, Route r = Route::kPacked, double slice = kDefaultSlice);
double reduce_binomial_cost(const CostShape& s, int root, double m);
double allreduce_hier_cost(const CostShape& s, double m, double slice = kDefaultSlice, Route between = Route::kHeads);
// With the reduction's and the broadcast's picks (route, slice) from member 0.
double allreduce_rooted_cost(const CostShape& s, double m, const Pick& reduce_by, const Pick& bcast_by);
double allreduce_doubling_cost(const CostShape& s, double m);
// The rooted hierarchical ones by route (kDirect: the linear algorithm's cost), and over a
// given tree; scatter_tree() is the tree of a route, kOrdered's served as the model says.
double gather_hier_cost(const CostShape& s, int root, double b, Route r = Route::kPacked);
double gather_tree_cost(const CostShape& s, double b, const PartTree& t);
double gather_binomial_cost(const CostShape& s, int root, double b);
double gatherv_linear_cost(const CostShape& s, int root, double b);
// A gather of b bytes per member among n members of a cluster with this model: the paced
// split one where it splits, else one gather's expected time.
double paced_gather_cost(const models::ManyToOneModel& m, int n, double b);
// What the members of the root's cluster sending it b bytes each at once cost by that
// cluster's many-to-one model (its escalations included), 0 where the model has none: a
// floor under the gathers that are not split (linear; binomial, which a switch turns into
// a flat tree, as the many-to-one paper observes).
double root_cluster_gather_cost(const CostShape& s, int root, double b);
double scatter_hier_cost(const CostShape& s, int root, double b, Route r = Route::kPacked);
double scatter_tree_cost(const CostShape& s, int root, double b, const PartTree& t);
PartTree scatter_tree(const CostShape& s, int root, double b, Route r);
double scatter_binomial_cost(const CostShape& s, int root, double b);
double scatterv_linear_cost(const CostShape& s, int root, double b);
double allgather_hier_cost(const CostShape& s, double b);
double allgather_ring_cost(const CostShape& s, double b);
double alltoall_local_group_cost(const CostShape& s, double b);
double alltoall_local_group_two_cost(const CostShape& s, double b);  // two parts only
// When each part has done phase one of both Local Group all-to-alls (parking its blocks).
std::vector<double> local_group_parked_at(const CostShape& s, double b);
double alltoall_pairwise_cost(const CostShape& s, double b);
double scan_hier_cost(const CostShape& s, double m);
double reduce_scatter_hier_cost(const CostShape& s, double b, double slice = kDefaultSlice);  // b: a member's block
double scan_doubling_cost(const CostShape& s, double m);

// The hierarchical and the flat algorithm's predictions for one call of `op` (what auto
// compares; gridbench prints them). For scatter and gather the hierarchical family has
// several routes (part_trees.h), and so has the all-to-all on two parts: `hier` is that of `route`, the one GRIDRT_ROUTE names or
// else the least predicted, and `routes` holds each one's.
// The pipelined ones (bcast, reduce, allreduce) are predicted in the slices that make each
// route least (pipelined_slice), `slice` those of `route`.
struct Prediction {
  double hier = 0, flat = 0;
  Route route = Route::kPacked;
  std::vector<std::pair<Route, double>> routes;
  std::size_t slice = kDefaultSlice;
};
// `forced`: the route GRIDRT_ROUTE names, or none; `slice`: GRIDRT_SLICE's, or none.
Prediction predict(const CostShape& s, Coll op, std::size_t bytes, int root, std::optional<Route> forced = std::nullopt,
                   std::optional<std::size_t> slice = std::nullopt);
// The slices a pipelined collective of m bytes is cut into where the model chooses: of
// powers of two from kSmallestSlice bytes (or the first that cuts it into no more than
// kMostSlices slices, costs.h) up to the first that holds the whole message,
// among those whose predicted time `cost(slice)` is within kSliceTolerance of the least,
// the one nearest kDefaultSlice (the larger of two as near). Below 8 KiB, and for
// messages of several MiB in one piece, each message's costs beyond its pLogP gap (MPICH's
// and the relays' per-message work, the flow-control window) show: measured on four sites
// in a chain, 2 KiB slices ran 12% above their prediction where 8 KiB ones were within 1%,
// and a 4 MiB reduction in one piece 6% above its prediction where 64 KiB slices were
// within 1%. So the model departs from the measured default only for a clear gain.
constexpr std::size_t kSmallestSlice = 8 * 1024;
constexpr double kSliceTolerance = 0.02;
struct SlicePick {
  double t;
  std::size_t slice;
};
SlicePick pipelined_slice(const std::function<double(double)>& cost, double m);
// What auto takes for a v-form whose block sizes not every member knows (a gatherv's and a
// scatterv's are the root's, an uneven alltoallv's each member's own): every member must
// choose alike without them, so each candidate (flat, or the hierarchical family on one of
// its routes; `forced`: only GRIDRT_ROUTE's; a scatterv's and gatherv's flat algorithm is
// the linear one, their direct route) is predicted at every block size of
// kSizesWeighed, and the one whose worst ratio to the least predicted at a size is least is
// taken, the first of equals (hierarchical routes in their order, then flat): Savage's
// minimax regret ("The Theory of Statistical Decision", 1951) with regret as a ratio, as
// the size may be any.
struct SizelessChoice {
  Algo algo = Algo::kHier;  // the one taken
  Route route = Route::kPacked;
  struct Candidate {
    Algo algo;
    Route route;
    double worst = 1;    // its worst ratio to the least predicted at a size
    std::size_t at = 0;  // at that size (0: never slower)
  };
  std::vector<Candidate> candidates;  // every one weighed, in order
};
// Powers of 8 from 8 B, and 4 MiB: the sizes the collectives are measured over.
inline constexpr std::size_t kSizesWeighed[] = {8, 64, 512, 4096, 32768, 262144, 2097152, 4194304};
SizelessChoice choose_without_sizes(const CostShape& s, Coll op, int root, std::optional<Route> forced = std::nullopt);

}  // namespace gridrt::detail
