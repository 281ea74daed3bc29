// Hierarchical reduce-scatter (MPI_Reduce_scatter, MPI_Reduce_scatter_block) through the
// sites' heads, every block crossing the WAN once:
//   1. each cluster reduces the whole vector to its leader (MPICH), in slices;
//   2. a site's clusters hand their partial result to the site's head slice by slice, and
//      the head folds them in part order;
//   3. each head sends every other head the blocks of that site's members only, as soon as
//      the slices that hold them are folded, and folds what it receives for its own site's
//      members in site order (one WAN hop; site t's line to site u carries u's share of the
//      vector, not all of it);
//   4. each head hands its site's clusters their members' blocks, and each leader scatters
//      them in its cluster (MPICH).
// The composition it replaces (reduce_scatter_rooted.cpp, the "rooted" route:
// a reduction of the whole vector to member 0, then a scatter of its blocks) crosses the WAN
// twice and carries the whole vector into the root's site: on S sites of n bytes in all it
// puts n on every line into the root's site and then the blocks out again, where this one
// puts about n/S on each line once. It is the all-reduce's reduce-scatter between heads
// (allreduce_hier.cpp) with each site's share of the vector as its piece: Rabenseifner,
// "Optimization of Collective Reduction Operations", 2004; MagPIe's rule that data enters
// each site once (Kielmann et al., 1999). Folding parts, then sites, in order keeps rank
// order where parts and sites are runs of ranks (folds_keep_rank_order).
#include <algorithm>
#include <numeric>
#include <optional>

#include "algorithms.h"
#include "cluster_steps.h"
#include "costs.h"
#include "pipeline.h"

namespace gridrt::detail {

namespace {
// The last slice that holds an element of the blocks of `members` (0 when they have none):
// once it is folded, their share of the vector is complete.
int last_slice_of(const std::vector<int>& members, const std::vector<int>& counts, const std::vector<int>& displs, int per) {
  int last = 0;
  for (int m : members)
    if (counts[m] > 0) last = std::max(last, (displs[m] + counts[m] - 1) / per);
  return last;
}
}  // namespace

Async<> reduce_scatter_hier(CommImpl& c, const void* sendbuf, void* recvbuf, std::vector<int> counts, Layout element, MPI_Op op,
                            std::size_t slice) {
  const int tag = c.next_tag();
  std::vector<int> displs(counts.size(), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, displs.begin() + 1);
  const Layout whole(element, displs.back() + counts.back());
  const Slices sl(whole, slice);
  // In place, the input is recvbuf's whole vector; this member's block then goes there.
  const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  const int p = c.my_part(), site = c.site_of_part[p], head = c.site_head(site);
  const bool many = local_size(c) > 1;
  // 1. The cluster's partial result at its leader, slice by slice (all posted at once).
  std::optional<Scratch> partial;
  if (c.is_leader()) partial.emplace(whole);
  std::vector<Step> local(sl.n);
  for (int k = 0; k < sl.n; ++k) {
    if (many) local[k] = cluster_reduce(c, sl.at(input, k), partial ? sl.at(partial->get(), k) : nullptr, sl.layout(k), op, 0);
    else local[k].done = true;
  }
  if (!many) copy_elements(whole, input, partial->get());
  // The pipeline's stages: each slice of the site's clusters' partial results (at the head);
  // the other heads' shares of this site, and this cluster's blocks back from the head, each
  // one message (slice 0).
  enum Stage { kFromSite, kShares, kBack, kStages };
  Pipeline pipe(c, tag, sl.n, kStages);
  std::vector<char> mine_blob;  // this part's members' blocks, packed in rank order (at its leader)
  if (c.is_leader()) {
    const Blocks vector(partial->get(), counts.data(), displs.data(), c.size(), element.type);
    if (p != head) {
      // 2. Each slice to the site's head as soon as it is reduced; 4. this cluster's blocks
      // back from it.
      pipe.expect(kBack, 0, head, c.leader(head), vector.packed(c.parts[p]));
      for (int k = 0; k < sl.n; ++k) {
        co_await pipe.arrived(kFromSite, k, &local[k]);
        pipe.send(c.leader(head), packed_copy(sl.layout(k), sl.at(partial->get(), k)));
      }
      co_await pipe.arrived(kBack, 0);
      mine_blob = pipe.received(kBack, 0, head);
    } else {
      const std::vector<int> in_site = c.site_mates(p), sites_away = c.other_sites(p);
      std::vector<int> heads;  // of the other sites
      for (int t : sites_away) heads.push_back(c.site_head(t));
      const std::vector<int> my_site = c.members_of(c.sites[site]);
      for (int k = 0; k < sl.n; ++k)
        for (int q : in_site) pipe.expect(kFromSite, k, q, c.leader(q), sl.layout(k).packed);
      for (int q : heads) pipe.expect(kShares, 0, q, c.leader(q), vector.packed(my_site));
      // 2. The site's partial result slice by slice; 3. each other site's share to its head
      // as soon as the slices that hold it are folded.
      std::vector<std::vector<int>> members_away;
      for (int t : sites_away) members_away.push_back(c.members_of(c.sites[t]));
      for (int k = 0; k < sl.n; ++k) {
        co_await pipe.arrived(kFromSite, k, &local[k]);
        fold_parts(sl.layout(k), op, with_part(in_site, p), p, pipe.received(kFromSite, k), sl.at(partial->get(), k));
        for (std::size_t i = 0; i < sites_away.size(); ++i)
          if (last_slice_of(members_away[i], counts, displs, sl.per) == k) pipe.send(c.leader(heads[i]), vector.pack_all(members_away[i]));
      }
      // This site's share, folded with the other heads' in site order (as whole elements of
      // the datatype, one after the other: the blocks packed).
      const Layout share(element, std::accumulate(my_site.begin(), my_site.end(), 0, [&](int n, int m) { return n + counts[m]; }));
      Scratch folded(share);
      unpack(share, vector.pack_all(my_site).data(), folded.get());
      co_await pipe.arrived(kShares, 0);
      fold_parts(share, op, with_part(heads, p), p, pipe.received(kShares, 0), folded.get());
      const std::vector<char> site_blob = packed_copy(share, folded.get());
      // 4. Each of the site's clusters its members' blocks (the site's members are its
      // parts' one after the other).
      std::size_t at = 0;
      for (int q : c.sites[site]) {
        const std::size_t bytes = vector.packed(c.parts[q]);
        std::vector<char> blocks(site_blob.begin() + static_cast<std::ptrdiff_t>(at),
                                 site_blob.begin() + static_cast<std::ptrdiff_t>(at + bytes));
        at += bytes;
        if (q == p) mine_blob = std::move(blocks);
        else pipe.send(c.leader(q), std::move(blocks));
      }
    }
  } else {
    for (int k = 0; k < sl.n; ++k) co_await pipe.arrived(kFromSite, k, &local[k]);
  }
  // 4. The cluster's blocks scattered inside it.
  const Layout mine(element, counts[c.me]);
  if (many) {
    std::vector<std::size_t> sizes;
    for (int m : c.parts[p]) sizes.push_back(Layout(element, counts[m]).packed);
    const bool equal = std::all_of(counts.begin(), counts.end(), [&](int n) { return n == counts.front(); });
    PackedArrival got(mine, recvbuf);
    co_await cluster_scatterv(c, mine_blob.data(), sizes, 0, got.data(), mine.packed, equal ? mine.packed : kSizeNotShared);
    got.arrived();
  } else {
    unpack(mine, mine_blob.data(), recvbuf);
  }
  co_await pipe.finish();
}

// Cost, slice by slice: MPICH's reduction of each slice to every leader (posted at once,
// done one after the other); the site's partial results to its head; each head's share of
// every other site (b bytes per member's block) to that site's head once the slices holding
// it are there, on the lines (costs.h); each site's clusters' blocks back from its head once
// it has every share of its own; MPICH's scatter inside each cluster. On S sites of one
// cluster of P/S members with a line per pair, the vector whole: T_l(reduce, Pb) + L +
// g(Pb/S) + T_l(scatter, b); in slices the reduction overlaps the shares that leave early.
double reduce_scatter_hier_cost(const CostShape& s, double b, double slice) {
  const int S = static_cast<int>(s.sites.size());
  const SliceSizes sl{s.size() * b, slice};
  // The blocks lie in rank order: the sites whose members' blocks are complete with each
  // slice (the last that holds one of them).
  std::vector<std::vector<int>> complete(sl.count());
  std::vector<double> share(S, 0);
  for (int t = 0; t < S; ++t) {
    int last = 0;
    for (int p : s.sites[t])
      for (int m : s.members[p]) {
        share[t] += b;
        if (b > 0) last = std::max(last, std::min(sl.count() - 1, static_cast<int>(((m + 1) * b - 1) / sl.slice)));
      }
    complete[last].push_back(t);
  }
  Timeline tl(s);
  std::vector<double> reduced(s.parts(), 0), everything(S, 0);
  for (int k = 0; k < sl.count(); ++k) {
    const double bytes = sl.bytes(k);
    for (int p = 0; p < s.parts(); ++p) reduced[p] += s.local(Coll::kReduce, p, bytes);
    const std::vector<double> at_head = to_heads(tl, s, reduced, std::vector<double>(s.parts(), bytes));
    for (int t = 0; t < S; ++t) {
      everything[t] = std::max(everything[t], at_head[t]);  // its own share, whole at the last slice
      for (int u : complete[k])
        if (u != t) everything[u] = std::max(everything[u], tl.send(s.leader(s.head(t)), s.head(t), s.head(u), share[u], at_head[t]));
    }
  }
  std::vector<double> down(s.parts());
  for (int p = 0; p < s.parts(); ++p) down[p] = s.part_size[p] * b;
  const std::vector<double> back = from_heads(tl, s, everything, down);
  double done = 0;
  for (int p = 0; p < s.parts(); ++p) done = std::max(done, back[p] + s.local(Coll::kScatter, p, b, back[p] - reduced[p]));
  return done;
}

}  // namespace gridrt::detail
