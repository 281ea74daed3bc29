// The catalogue's rows (catalogue.h): each algorithm's runner, which takes from the call's
// arguments what its coroutine needs, and its cost function, asked in one form.
#include "catalogue.h"

#include <stdexcept>
#include <string>

namespace gridrt::detail {

namespace {
// (Named, inside the anonymous namespace: a unity build puts other files' helpers beside these.)
namespace rows {

using A = CallArgs;
using C = CostArgs;
constexpr int kAny = 1 << 30;

// The tree of a rooted hierarchical call's route (part_trees.h).
PartTree tree_of(CommImpl& c, Coll op, const A& a) { return rooted_tree(c, op, a.root, a.pick); }

// ---------------------------------------------------------------- runners

Async<> run_barrier_hier(CommImpl& c, A) { return barrier_hier(c); }
Async<> run_barrier_dissemination(CommImpl& c, A) { return barrier_dissemination(c); }

Async<> run_bcast_hier(CommImpl& c, A a) { return bcast_hier(c, a.recvbuf, a.layout, a.root, tree_of(c, Coll::kBcast, a), a.pick.slice); }
Async<> run_bcast_binomial(CommImpl& c, A a) { return bcast_binomial(c, a.recvbuf, a.layout, a.root); }

Async<> run_reduce_hier(CommImpl& c, A a) {
  return reduce_hier(c, a.sendbuf, a.recvbuf, a.layout, a.op, a.root, tree_of(c, Coll::kReduce, a), a.pick.slice);
}
Async<> run_reduce_binomial(CommImpl& c, A a) { return reduce_binomial(c, a.sendbuf, a.recvbuf, a.layout, a.op, a.root); }

Async<> run_allreduce_hier(CommImpl& c, A a) { return allreduce_hier(c, a.sendbuf, a.recvbuf, a.layout, a.op, a.pick.slice, a.pick.route); }
Async<> run_allreduce_rooted(CommImpl& c, A a) { return allreduce_rooted(c, a.sendbuf, a.recvbuf, a.layout, a.op); }
Async<> run_allreduce_doubling(CommImpl& c, A a) { return allreduce_doubling(c, a.sendbuf, a.recvbuf, a.layout, a.op); }

Async<> run_gatherv_hier(CommImpl& c, A a) {
  PartTree t = tree_of(c, Coll::kGather, a);
  return gatherv_hier(c, std::move(a.mine), a.in_place, std::move(a.out), a.root, a.block, std::move(t));
}
Async<> run_gatherv_linear(CommImpl& c, A a) { return gatherv_linear(c, std::move(a.mine), a.in_place, std::move(a.out), a.root); }
// The flat gather: the binomial tree where every member knows the blocks' size, else (a
// gatherv) the linear one.
Async<> run_gather_flat(CommImpl& c, A a) {
  if (a.block == kSizeNotShared) return run_gatherv_linear(c, std::move(a));
  return gather_binomial(c, std::move(a.mine), a.in_place, std::move(a.out), a.root, a.block);
}

Async<> run_scatterv_hier(CommImpl& c, A a) {
  PartTree t = tree_of(c, Coll::kScatter, a);
  return scatterv_hier(c, std::move(a.in), a.recvbuf, a.layout, a.in_place, a.root, a.block, std::move(t));
}
Async<> run_scatterv_linear(CommImpl& c, A a) { return scatterv_linear(c, std::move(a.in), a.recvbuf, a.layout, a.in_place, a.root); }
Async<> run_scatter_flat(CommImpl& c, A a) {
  if (a.block == kSizeNotShared) return run_scatterv_linear(c, std::move(a));
  return scatter_binomial(c, std::move(a.in), a.recvbuf, a.layout, a.in_place, a.root);
}

Async<> run_allgatherv_hier(CommImpl& c, A a) { return allgatherv_hier(c, std::move(a.mine), std::move(a.out)); }
Async<> run_allgatherv_ring(CommImpl& c, A a) { return allgatherv_ring(c, std::move(a.mine), std::move(a.out)); }

Async<> run_alltoallv_local_group(CommImpl& c, A a) { return alltoallv_local_group(c, std::move(a.in), std::move(a.out), a.equal); }
Async<> run_alltoallv_local_group_two(CommImpl& c, A a) { return alltoallv_local_group_two(c, std::move(a.in), std::move(a.out), a.equal); }
Async<> run_alltoallv_pairwise(CommImpl& c, A a) { return alltoallv_pairwise(c, std::move(a.in), std::move(a.out)); }

Async<> run_scan_hier(CommImpl& c, A a) { return scan_hier(c, a.sendbuf, a.recvbuf, a.layout, a.op, a.exclusive); }
Async<> run_scan_doubling(CommImpl& c, A a) { return scan_doubling(c, a.sendbuf, a.recvbuf, a.layout, a.op, a.exclusive); }

// Slices as its prediction plays them (no more than kMostSlices).
Async<> run_reduce_scatter_hier(CommImpl& c, A a) {
  double total = 0;
  for (int n : a.counts) total += static_cast<double>(n) * static_cast<double>(a.layout.packed);
  const SliceSizes sl(total, static_cast<double>(state().slice.value_or(kDefaultSlice)));
  return reduce_scatter_hier(c, a.sendbuf, a.recvbuf, std::move(a.counts), a.layout, a.op, static_cast<std::size_t>(sl.slice));
}
Async<> run_reduce_scatter_rooted(CommImpl& c, A a) {
  return reduce_scatter_rooted(c, a.sendbuf, a.recvbuf, std::move(a.counts), a.layout, a.op, Algo::kHier);
}
Async<> run_reduce_scatter_flat(CommImpl& c, A a) {
  return reduce_scatter_rooted(c, a.sendbuf, a.recvbuf, std::move(a.counts), a.layout, a.op, Algo::kFlat);
}

// ---------------------------------------------------------------- costs

double cost_barrier_hier(const CostShape& s, const C&) { return barrier_hier_cost(s); }
double cost_barrier_dissemination(const CostShape& s, const C&) { return barrier_dissemination_cost(s); }
double cost_bcast_hier(const CostShape& s, const C& a) { return bcast_hier_cost(s, a.root, a.m, a.route, a.slice); }
double cost_bcast_binomial(const CostShape& s, const C& a) { return bcast_binomial_cost(s, a.root, a.m); }
double cost_reduce_hier(const CostShape& s, const C& a) { return reduce_hier_cost(s, a.root, a.m, a.route, a.slice); }
double cost_reduce_binomial(const CostShape& s, const C& a) { return reduce_binomial_cost(s, a.root, a.m); }
// On one cluster MPICH's own all-reduce, whole.
double cost_allreduce_one_cluster(const CostShape& s, const C& a) { return allreduce_hier_cost(s, a.m); }
double cost_allreduce_hier(const CostShape& s, const C& a) { return allreduce_hier_cost(s, a.m, a.slice, a.route); }
double cost_allreduce_doubling(const CostShape& s, const C& a) { return allreduce_doubling_cost(s, a.m); }
double cost_gather_hier(const CostShape& s, const C& a) { return gather_hier_cost(s, a.root, a.m, a.route); }
double cost_gather_binomial(const CostShape& s, const C& a) { return gather_binomial_cost(s, a.root, a.m); }
double cost_scatter_hier(const CostShape& s, const C& a) { return scatter_hier_cost(s, a.root, a.m, a.route); }
double cost_scatter_binomial(const CostShape& s, const C& a) { return scatter_binomial_cost(s, a.root, a.m); }
double cost_allgather_hier(const CostShape& s, const C& a) { return allgather_hier_cost(s, a.m); }
double cost_allgather_ring(const CostShape& s, const C& a) { return allgather_ring_cost(s, a.m); }
double cost_alltoall_local_group(const CostShape& s, const C& a) { return alltoall_local_group_cost(s, a.m); }
double cost_alltoall_local_group_two(const CostShape& s, const C& a) { return alltoall_local_group_two_cost(s, a.m); }
double cost_alltoall_pairwise(const CostShape& s, const C& a) { return alltoall_pairwise_cost(s, a.m); }
double cost_scan_hier(const CostShape& s, const C& a) { return scan_hier_cost(s, a.m); }
double cost_scan_doubling(const CostShape& s, const C& a) { return scan_doubling_cost(s, a.m); }
double cost_reduce_scatter_hier(const CostShape& s, const C& a) { return reduce_scatter_hier_cost(s, a.m, a.slice); }
// The binomial reduction of every member's blocks, then the linear scatter (m: a block).
double cost_reduce_scatter_flat(const CostShape& s, const C& a) {
  return reduce_binomial_cost(s, 0, s.size() * a.m) + scatterv_linear_cost(s, 0, a.m);
}

// ---------------------------------------------------------------- the rows

using R = Route;
constexpr Algo H = Algo::kHier, F = Algo::kFlat;
constexpr bool kPipelined = true, kOneShot = false, kRankOrder = true, kAnyOrder = false;

const std::vector<Algorithm> kRows = {
    // op, family, route, name, parts from, to, pipelined, keeps rank order, cost, run
    {Coll::kBarrier, H, std::nullopt, "barrier_hier", 1, kAny, kOneShot, kRankOrder, cost_barrier_hier, run_barrier_hier},
    {Coll::kBarrier, F, std::nullopt, "barrier_dissemination", 1, kAny, kOneShot, kRankOrder, cost_barrier_dissemination,
     run_barrier_dissemination},

    {Coll::kBcast, H, R::kPacked, "bcast_hier", 1, kAny, kPipelined, kRankOrder, cost_bcast_hier, run_bcast_hier},
    {Coll::kBcast, H, R::kBinomial, "bcast_hier", 1, kAny, kPipelined, kRankOrder, cost_bcast_hier, run_bcast_hier},
    {Coll::kBcast, H, R::kChain, "bcast_hier", 1, kAny, kPipelined, kRankOrder, cost_bcast_hier, run_bcast_hier},
    {Coll::kBcast, F, std::nullopt, "bcast_binomial", 1, kAny, kOneShot, kRankOrder, cost_bcast_binomial, run_bcast_binomial},

    {Coll::kReduce, H, R::kPacked, "reduce_hier", 1, kAny, kPipelined, kRankOrder, cost_reduce_hier, run_reduce_hier},
    {Coll::kReduce, H, R::kBinomial, "reduce_hier", 1, kAny, kPipelined, kAnyOrder, cost_reduce_hier, run_reduce_hier},
    {Coll::kReduce, H, R::kChain, "reduce_hier", 1, kAny, kPipelined, kAnyOrder, cost_reduce_hier, run_reduce_hier},
    {Coll::kReduce, F, std::nullopt, "reduce_binomial", 1, kAny, kOneShot, kRankOrder, cost_reduce_binomial, run_reduce_binomial},

    {Coll::kAllreduce, H, std::nullopt, "allreduce_hier", 1, 1, kOneShot, kRankOrder, cost_allreduce_one_cluster, run_allreduce_hier},
    {Coll::kAllreduce, H, R::kHeads, "allreduce_hier", 2, kAny, kPipelined, kRankOrder, cost_allreduce_hier, run_allreduce_hier},
    {Coll::kAllreduce, H, R::kRooted, "allreduce_rooted", 2, kAny, kOneShot, kAnyOrder, nullptr, run_allreduce_rooted},
    {Coll::kAllreduce, H, R::kReduceScatter, "allreduce_hier", 2, kAny, kPipelined, kRankOrder, cost_allreduce_hier, run_allreduce_hier},
    {Coll::kAllreduce, F, std::nullopt, "allreduce_doubling", 1, kAny, kOneShot, kRankOrder, cost_allreduce_doubling,
     run_allreduce_doubling},

    {Coll::kGather, H, R::kPacked, "gatherv_hier", 1, kAny, kOneShot, kRankOrder, cost_gather_hier, run_gatherv_hier},
    {Coll::kGather, H, R::kBinomial, "gatherv_hier", 1, kAny, kOneShot, kAnyOrder, cost_gather_hier, run_gatherv_hier},
    {Coll::kGather, H, R::kChain, "gatherv_hier", 1, kAny, kOneShot, kAnyOrder, cost_gather_hier, run_gatherv_hier},
    {Coll::kGather, H, R::kDirect, "gatherv_linear", 1, kAny, kOneShot, kAnyOrder, cost_gather_hier, run_gatherv_linear},
    {Coll::kGather, F, std::nullopt, "gather_binomial", 1, kAny, kOneShot, kRankOrder, cost_gather_binomial, run_gather_flat},

    {Coll::kScatter, H, R::kPacked, "scatterv_hier", 1, kAny, kOneShot, kRankOrder, cost_scatter_hier, run_scatterv_hier},
    {Coll::kScatter, H, R::kOrdered, "scatterv_hier", 1, kAny, kOneShot, kAnyOrder, cost_scatter_hier, run_scatterv_hier},
    {Coll::kScatter, H, R::kBinomial, "scatterv_hier", 1, kAny, kOneShot, kAnyOrder, cost_scatter_hier, run_scatterv_hier},
    {Coll::kScatter, H, R::kChain, "scatterv_hier", 1, kAny, kOneShot, kAnyOrder, cost_scatter_hier, run_scatterv_hier},
    {Coll::kScatter, H, R::kDirect, "scatterv_linear", 1, kAny, kOneShot, kAnyOrder, cost_scatter_hier, run_scatterv_linear},
    {Coll::kScatter, F, std::nullopt, "scatter_binomial", 1, kAny, kOneShot, kRankOrder, cost_scatter_binomial, run_scatter_flat},

    {Coll::kAllgather, H, std::nullopt, "allgatherv_hier", 1, kAny, kOneShot, kRankOrder, cost_allgather_hier, run_allgatherv_hier},
    {Coll::kAllgather, F, std::nullopt, "allgatherv_ring", 1, kAny, kOneShot, kRankOrder, cost_allgather_ring, run_allgatherv_ring},

    {Coll::kAlltoall, H, R::kAgents, "alltoallv_local_group", 1, kAny, kOneShot, kRankOrder, cost_alltoall_local_group,
     run_alltoallv_local_group},
    {Coll::kAlltoall, H, R::kGroups, "alltoallv_local_group_two", 2, 2, kOneShot, kRankOrder, cost_alltoall_local_group_two,
     run_alltoallv_local_group_two},
    {Coll::kAlltoall, F, std::nullopt, "alltoallv_pairwise", 1, kAny, kOneShot, kRankOrder, cost_alltoall_pairwise, run_alltoallv_pairwise},

    {Coll::kScan, H, std::nullopt, "scan_hier", 1, kAny, kOneShot, kRankOrder, cost_scan_hier, run_scan_hier},
    {Coll::kScan, F, std::nullopt, "scan_doubling", 1, kAny, kOneShot, kRankOrder, cost_scan_doubling, run_scan_doubling},

    {Coll::kReduceScatter, H, std::nullopt, "reduce_scatter_hier", 1, 1, kOneShot, kRankOrder, cost_reduce_scatter_hier,
     run_reduce_scatter_hier},
    {Coll::kReduceScatter, H, R::kHeads, "reduce_scatter_hier", 2, kAny, kOneShot, kRankOrder, cost_reduce_scatter_hier,
     run_reduce_scatter_hier},
    {Coll::kReduceScatter, H, R::kRooted, "reduce_scatter_rooted", 2, kAny, kOneShot, kAnyOrder, nullptr, run_reduce_scatter_rooted},
    {Coll::kReduceScatter, F, std::nullopt, "reduce_scatter_rooted", 1, kAny, kOneShot, kRankOrder, cost_reduce_scatter_flat,
     run_reduce_scatter_flat},
};

bool runs_on(const Algorithm& a, int parts) { return parts >= a.min_parts && parts <= a.max_parts; }

}  // namespace rows
}  // namespace

using rows::kRows;
using rows::runs_on;

const std::vector<Algorithm>& catalogue() { return kRows; }

std::vector<Route> routes_of(Coll op, int parts) {
  std::vector<Route> out;
  for (const Algorithm& a : kRows)
    if (a.op == op && a.family == Algo::kHier && a.route && runs_on(a, parts)) out.push_back(*a.route);
  return out;
}

const Algorithm& algorithm_of(Coll op, Algo family, Route route, int parts) {
  const Algorithm* first = nullptr;
  for (const Algorithm& a : kRows) {
    if (a.op != op || a.family != family || !runs_on(a, parts)) continue;
    if (!a.route || *a.route == route) return a;
    if (!first) first = &a;
  }
  if (!first)
    throw std::logic_error(std::string("gridrt: no ") + (family == Algo::kFlat ? "flat" : "hierarchical") + " " + coll_name(op) +
                           " algorithm for " + std::to_string(parts) + " clusters in the catalogue");
  return *first;
}

Async<> run_picked(CommImpl& c, Coll op, CallArgs args) {
  const Algorithm& a = algorithm_of(op, args.pick.algo, args.pick.route, static_cast<int>(c.parts.size()));
  return a.run(c, std::move(args));
}

}  // namespace gridrt::detail
