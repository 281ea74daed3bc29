// Hierarchical all-reduce by its rooted route: the hierarchical reduction to member 0, then
// the hierarchical broadcast from it, each on the route and in the slices the model
// predicts least for it (own_pick; GRIDRT_SLICE's slices where set): the composition MPICH and the
// collective literature use for large messages where an all-to-all exchange of partial
// results would cost more (Thakur, Rabenseifner, Gropp, "Optimization of Collective
// Communication Operations in MPICH", 2005). Against the heads route (allreduce_hier.cpp:
// every site's partial result to every other site's head) it crosses the WAN twice
// instead of once, but each site sends its partial result once instead of S - 1 times: where
// a site's traffic to all other sites shares one access line (the one-port setting), the
// heads route puts (S - 1) m on every line and this one about 2 m, and where each pair of
// sites has its own line the heads route wins. Commutative operations only: the reduction's
// other trees do not fold in rank order (choose_with_route gives a non-commutative one the
// heads route).
#include "algorithms.h"

namespace gridrt::detail {

Async<> allreduce_rooted(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op) {
  const bool in_place = sendbuf == MPI_IN_PLACE;
  // In place, every member's contribution is in recvbuf; the root's stays there.
  const void* input = in_place && c.me != 0 ? recvbuf : sendbuf;
  const Pick reduce_by = own_pick(c, Coll::kReduce, l.packed, 0);
  PartTree up = rooted_tree(c, Coll::kReduce, 0, reduce_by);
  co_await reduce_hier(c, input, recvbuf, l, op, 0, std::move(up), reduce_by.slice);
  const Pick bcast_by = own_pick(c, Coll::kBcast, l.packed, 0);
  PartTree down = rooted_tree(c, Coll::kBcast, 0, bcast_by);
  co_await bcast_hier(c, recvbuf, l, 0, std::move(down), bcast_by.slice);
}

// Cost: the reduction's on its route and slices, then the broadcast's (the broadcast starts
// at the root when the reduction is complete there).
double allreduce_rooted_cost(const CostShape& s, double m, const Pick& reduce_by, const Pick& bcast_by) {
  return reduce_hier_cost(s, 0, m, reduce_by.route, static_cast<double>(reduce_by.slice)) +
         bcast_hier_cost(s, 0, m, bcast_by.route, static_cast<double>(bcast_by.slice));
}

}  // namespace gridrt::detail
