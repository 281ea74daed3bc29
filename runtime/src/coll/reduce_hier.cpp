// Hierarchical reduction, pipelined: each cluster reduces every slice to its entry (the
// root in the root's cluster, the leader elsewhere) with MPICH's reduction, all slices at
// once; then up the route's tree over the clusters (the broadcast's, reversed: packed,
// binomial or chain, coll/part_trees.h), slice by slice: every entry folds its children's
// partial results with its own, in part order, and sends the slice up as soon as it is
// folded. A non-commutative operation takes the packed tree, whose folds in part order are
// rank order when parts and sites are runs of ranks (otherwise choose_with_route falls back to the
// flat algorithm): below any other tree a subtree's sites wrap around the root's.
// Cost on the packed route: one WAN latency + (S - 1) m / the root's receiving line, one
// partial result per site across; on the chain, (S - 1) latencies + m / the slowest line.
#include <algorithm>
#include <cmath>
#include <optional>

#include "algorithms.h"
#include "costs.h"
#include "cluster_steps.h"
#include "pipeline.h"

namespace gridrt::detail {

Async<> reduce_hier(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, int root, PartTree t, std::size_t slice) {
  const int tag = c.next_tag();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const int p = c.my_part();
  const bool is_entry = c.me == c.entry(p, root);
  const Slices sl(l, slice);
  std::optional<Scratch> partial;  // at the other clusters' entries
  if (is_entry && c.me != root) partial.emplace(l);
  void* target = c.me == root ? recvbuf : partial ? partial->get() : nullptr;
  // 1. Each cluster reduces every slice to its entry.
  std::vector<Step> local(sl.n);
  if (local_size(c) > 1) {
    const int local_root = c.index_in_part[c.entry(p, root)];
    for (int k = 0; k < sl.n; ++k)
      local[k] = cluster_reduce(c, in_place ? MPI_IN_PLACE : sl.at(sendbuf, k), is_entry ? sl.at(target, k) : nullptr, sl.layout(k), op,
                                local_root);
  } else {
    if (!in_place) copy_elements(l, sendbuf, target);
    for (auto& s : local) s.done = true;
  }
  if (!is_entry || c.parts.size() == 1) {
    co_await all(local);
    co_return;
  }
  // 2. Up the tree, slice by slice (one stage: the partial results from below).
  const std::vector<int>& below = t.children[p];
  Pipeline pipe(c, tag, sl.n, 1);
  for (int k = 0; k < sl.n; ++k)
    for (int q : below) pipe.expect(0, k, q, c.leader(q), sl.layout(k).packed);
  const std::vector<int> order = with_part(below, p);
  for (int k = 0; k < sl.n; ++k) {
    co_await pipe.arrived(0, k, &local[k]);
    const Layout lk = sl.layout(k);
    fold_parts(lk, op, order, p, pipe.received(0, k), sl.at(target, k));
    if (c.me != root) pipe.send(c.entry(t.parent[p], root), packed_copy(lk, sl.at(target, k)));
  }
  co_await pipe.finish();
}

// Cost: MPICH's reduce of each slice to every part's entry, one slice after the other; then
// each slice up the route's tree over the parts, from the leaves: an entry sends a slice up
// once it has its own and its children's.
double reduce_hier_cost(const CostShape& s, int root, double m, Route r, double slice) {
  const int C = s.parts(), rp = s.part_of[root];
  const SliceSizes sl{m, slice};
  const int slices = sl.count();
  Timeline tl(s);
  std::vector<std::vector<double>> ready(C, std::vector<double>(slices, 0));
  for (int q = 0; q < C; ++q)
    for (int k = 0; k < slices; ++k) ready[q][k] = (k ? ready[q][k - 1] : 0) + s.local(Coll::kReduce, q, sl.bytes(k));
  const PartTree t = part_tree(s.sites, s.site_of_part, rp, r);
  std::vector<int> order = t.top_down(rp);
  std::reverse(order.begin(), order.end());  // leaves first
  for (int q : order) {
    if (q == rp) continue;
    const int parent = t.parent[q];
    for (int k = 0; k < slices; ++k)
      ready[parent][k] = std::max(ready[parent][k], tl.send(s.leader(q), q, parent, sl.bytes(k), ready[q][k]));
  }
  return *std::max_element(ready[rp].begin(), ready[rp].end());
}

}  // namespace gridrt::detail
