// Hierarchical reduction, pipelined: each cluster reduces every slice to its entry (the
// root in the root's cluster, the leader elsewhere) with MPICH's reduction, all slices at
// once; then up the tree that enters every site once (the broadcast's, reversed), slice by
// slice: a site's head folds its site's partial results, the root the rest, each in part
// order (rank order when parts and sites are runs of ranks: choice.h falls back to the
// flat algorithm otherwise for a non-commutative operation). A slice goes up as soon as it
// is folded. Cost: one WAN latency + m / WAN bandwidth, one partial result per site across.
#include <optional>

#include "algorithms.h"
#include "costs.h"
#include "cluster_steps.h"

namespace gridrt::detail {

Async<> reduce_hier(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, int root) {
  const int tag = c.next_tag();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const int root_part = c.part_of[root], p = c.my_part();
  const bool is_entry = c.me == c.entry(p, root);
  const Slices sl(l);
  std::optional<Scratch> partial;  // at the other clusters' entries
  if (is_entry && c.me != root) partial.emplace(l);
  void* target = c.me == root ? recvbuf : partial ? partial->get() : nullptr;
  // 1. Each cluster reduces every slice to its entry.
  std::vector<Step> local(sl.n);
  if (local_size(c) > 1) {
    const int local_root = c.index_in_part[c.entry(p, root)];
    for (int k = 0; k < sl.n; ++k)
      local[k] = cluster_reduce(c, in_place ? MPI_IN_PLACE : sl.at(sendbuf, k), is_entry ? sl.at(target, k) : nullptr, sl.layout(k), op, local_root);
  } else {
    if (!in_place) copy_elements(l, sendbuf, target);
    for (auto& s : local) s.done = true;
  }
  if (!is_entry || c.parts.size() == 1) {
    co_await all(local);
    co_return;
  }
  // 2. Up the tree, slice by slice.
  const std::vector<int> below = c.downstream(p, root_part);
  std::vector<std::vector<std::vector<char>>> from(sl.n, std::vector<std::vector<char>>(c.parts.size()));
  std::vector<std::vector<Step>> arrivals(sl.n);
  for (int k = 0; k < sl.n; ++k)
    for (int q : below) {
      from[k][q].resize(sl.layout(k).packed);
      arrivals[k].push_back(receive_from(c, c.leader(q), tag, from[k][q].data(), from[k][q].size()));
    }
  std::vector<std::vector<char>> up(sl.n);
  std::vector<Step> sends;
  const std::vector<int> order = with_part(below, p);
  for (int k = 0; k < sl.n; ++k) {
    arrivals[k].push_back(local[k]);
    co_await all(arrivals[k]);
    const Layout lk = sl.layout(k);
    fold_parts(lk, op, order, p, from[k], sl.at(target, k));
    if (c.me == root) continue;
    up[k] = packed_copy(lk, sl.at(target, k));
    sends.push_back(send_to(c, c.entry(c.upstream(p, root_part), root), tag, up[k].data(), up[k].size()));
  }
  co_await all(sends);
}

// Cost: MPICH's reduce to every part's entry, then up the tree over the parts: a site's
// other parts to its head, which folds them, the heads and the root's site to the root.
double reduce_hier_cost(const CostShape& s, int root, double m) {
  const int C = s.parts(), rp = s.part_of[root];
  Timeline tl(s);
  std::vector<double> ready(C);
  for (int q = 0; q < C; ++q) ready[q] = local_cost(Coll::kReduce, s.part_size[q], s.link[q][q], m);
  for (int q = 0; q < C; ++q)  // a site's other parts to its head
    if (!s.same_site(q, rp) && !s.is_head(q)) {
      const int h = s.head(s.site_of_part[q]);
      ready[h] = std::max(ready[h], tl.send(s.first_member[q], q, h, m, ready[q]));
    }
  double done = ready[rp];
  for (int q = 0; q < C; ++q)
    if (q != rp && s.upstream(q, rp) == rp) done = std::max(done, tl.send(s.first_member[q], q, rp, m, ready[q]));
  return done;
}

}  // namespace gridrt::detail
