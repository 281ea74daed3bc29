// MPI_Reduce_scatter by its rooted route: a reduction of everything to member 0, then a
// scatter of the result's blocks. kHier: each hierarchical, on the route and in the slices
// the model picks for it (own_pick, GRIDRT_ROUTE aside: it names the reduce-scatter's
// route), as the rooted all-reduce does, and so as predicted; a non-commutative reduction on
// the packed tree, or flat where that does not keep rank order. kFlat (the flat
// reduce-scatter): the binomial reduction, then the linear scatter. Its cost is the
// composition's: predict.cpp adds the reduction's and the scatter's predictions.
#include <algorithm>
#include <numeric>
#include <optional>

#include "catalogue.h"

namespace gridrt::detail {

Async<> reduce_scatter_rooted(CommImpl& c, const void* sendbuf, void* recvbuf, std::vector<int> counts, Layout element, MPI_Op op,
                              Algo family) {
  std::vector<int> displs(counts.size(), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, displs.begin() + 1);
  const int total = displs.back() + counts.back();
  const Layout whole(element, total);
  std::optional<Scratch> result;
  if (c.me == 0) result.emplace(whole);
  // In place, the input is recvbuf's `total` elements; this member's block then goes there.
  const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  const bool own_routes = family == Algo::kHier && commutative(op);
  CallArgs reduce;
  reduce.sendbuf = input;
  reduce.recvbuf = result ? result->get() : nullptr;
  reduce.layout = whole;
  reduce.op = op;
  reduce.pick = own_routes ? own_pick(c, Coll::kReduce, whole.packed, 0)
                           : choose_with_route(family, c, Coll::kReduce, whole.packed, 0, !commutative(op));
  co_await run_picked(c, Coll::kReduce, std::move(reduce));
  const Layout mine(element, counts[c.me]);
  // Every member knows the counts: where all are alike, the scatter's is a known size.
  const bool equal = std::all_of(counts.begin(), counts.end(), [&](int n) { return n == counts.front(); });
  CallArgs scatter;
  if (c.me == 0) scatter.in = Blocks(result->get(), counts.data(), displs.data(), c.size(), element.type);
  scatter.recvbuf = recvbuf;
  scatter.layout = mine;
  scatter.block = equal ? mine.packed : kSizeNotShared;
  scatter.pick =
      own_routes ? own_pick(c, Coll::kScatter, scatter.block, 0) : choose_with_route(family, c, Coll::kScatter, scatter.block, 0);
  // The flat one is the linear scatter whatever the sizes (as predicted), not the binomial
  // tree a scatter of known sizes takes.
  if (scatter.pick.algo == Algo::kFlat) scatter.pick = Pick{Algo::kHier, Route::kDirect, kDefaultSlice, nullptr};
  co_await run_picked(c, Coll::kScatter, std::move(scatter));
}

}  // namespace gridrt::detail
