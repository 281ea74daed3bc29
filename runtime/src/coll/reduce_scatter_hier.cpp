// Hierarchical reduce-scatter (MPI_Reduce_scatter, MPI_Reduce_scatter_block) through the
// sites' heads, every block crossing the WAN once:
//   1. each cluster reduces the whole vector to its leader (MPICH);
//   2. a site's clusters hand their partial result to the site's head, which folds them in
//      part order;
//   3. each head sends every other head the blocks of that site's members only, and folds
//      what it receives for its own site's members in site order (one WAN hop; site t's
//      line to site u carries u's share of the vector, not all of it);
//   4. each head hands its site's clusters their members' blocks, and each leader scatters
//      them in its cluster (MPICH).
// The composition it replaces (reduce_then_scatter in collectives.cpp, the "rooted" route:
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

namespace gridrt::detail {

Async<> reduce_scatter_hier(CommImpl& c, const void* sendbuf, void* recvbuf, std::vector<int> counts, Layout element, MPI_Op op) {
  const int tag = c.next_tag();
  std::vector<int> displs(counts.size(), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, displs.begin() + 1);
  const Layout whole(element, displs.back() + counts.back());
  // In place, the input is recvbuf's whole vector; this member's block then goes there.
  const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  const int p = c.my_part(), site = c.site_of_part[p], head = c.site_head(site);
  const bool many = local_size(c) > 1;
  // 1. The cluster's partial result, at its leader.
  std::optional<Scratch> partial;
  if (c.is_leader()) partial.emplace(whole);
  if (many) {
    Step reduce = cluster_reduce(c, input, partial ? partial->get() : nullptr, whole, op, 0);
    co_await one(reduce);
  } else {
    copy_elements(whole, input, partial->get());
  }
  std::vector<Step> sends;
  std::vector<char> mine_blob;  // this part's members' blocks, packed in rank order (at its leader)
  // What the sends carry, kept until they are done (at the end).
  std::vector<char> out;
  std::vector<std::vector<char>> shares, to_parts(c.parts.size());
  if (c.is_leader()) {
    const Blocks vector(partial->get(), counts.data(), displs.data(), c.size(), element.type);
    if (p != head) {
      // 2. To the site's head; 4. this cluster's blocks back from it.
      out = packed_copy(whole, partial->get());
      mine_blob.resize(vector.packed(c.parts[p]));
      Step back = receive_from(c, c.leader(head), tag, mine_blob.data(), mine_blob.size());
      sends.push_back(send_to(c, c.leader(head), tag, out.data(), out.size()));
      co_await amid(back, sends);
    } else {
      const std::vector<int> in_site = c.site_mates(p), sites_away = c.other_sites(p);
      std::vector<int> heads;  // of the other sites
      for (int t : sites_away) heads.push_back(c.site_head(t));
      const std::vector<int> my_site = c.members_of(c.sites[site]);
      std::vector<std::vector<char>> from(c.parts.size());
      std::vector<Step> site_in, heads_in;
      for (int q : in_site) {
        from[q].resize(whole.packed);
        site_in.push_back(receive_from(c, c.leader(q), tag, from[q].data(), from[q].size()));
      }
      for (int q : heads) {
        from[q].resize(vector.packed(my_site));
        heads_in.push_back(receive_from(c, c.leader(q), tag, from[q].data(), from[q].size()));
      }
      // 2. The site's partial result.
      for (auto& s : site_in) co_await amid(s, sends);
      fold_parts(whole, op, with_part(in_site, p), p, from, partial->get());
      // 3. Each other site's share to its head.
      shares.resize(sites_away.size());
      for (std::size_t i = 0; i < sites_away.size(); ++i) {
        shares[i] = vector.pack_all(c.members_of(c.sites[sites_away[i]]));
        sends.push_back(send_to(c, c.leader(heads[i]), tag, shares[i].data(), shares[i].size()));
      }
      // This site's share, folded with the other heads' in site order (as whole elements of
      // the datatype, one after the other: the blocks packed).
      const Layout share(element, std::accumulate(my_site.begin(), my_site.end(), 0, [&](int n, int m) { return n + counts[m]; }));
      Scratch folded(share);
      unpack(share, vector.pack_all(my_site).data(), folded.get());
      for (auto& s : heads_in) co_await amid(s, sends);
      fold_parts(share, op, with_part(heads, p), p, from, folded.get());
      out = packed_copy(share, folded.get());
      // 4. Each of the site's clusters its members' blocks (the site's members are its
      // parts' one after the other).
      std::size_t at = 0;
      for (int q : c.sites[site]) {
        const std::size_t bytes = vector.packed(c.parts[q]);
        to_parts[q].assign(out.begin() + static_cast<std::ptrdiff_t>(at), out.begin() + static_cast<std::ptrdiff_t>(at + bytes));
        at += bytes;
        if (q != p) sends.push_back(send_to(c, c.leader(q), tag, to_parts[q].data(), to_parts[q].size()));
      }
      mine_blob = std::move(to_parts[p]);
    }
  }
  // 4. The cluster's blocks scattered inside it.
  const Layout mine(element, counts[c.me]);
  std::vector<char> got(mine.packed);
  if (many) {
    std::vector<std::size_t> sizes;
    for (int m : c.parts[p]) sizes.push_back(Layout(element, counts[m]).packed);
    const bool equal = std::all_of(counts.begin(), counts.end(), [&](int n) { return n == counts.front(); });
    co_await cluster_scatterv(c, mine_blob, sizes, 0, got, equal ? mine.packed : kSizeNotShared);
  } else {
    got = std::move(mine_blob);
  }
  unpack(mine, got.data(), recvbuf);
  co_await all(sends);
}

// Cost: MPICH's reduction of the whole vector to every leader; the site's partial results to
// its head; each head's share of every other site to that site's head, on the lines (costs.h),
// with b bytes per member's block; each site's clusters' blocks back from its head; MPICH's
// scatter inside each cluster. On S sites of one cluster of P/S members with a line per
// pair: T_l(reduce, Pb) + L + g(Pb/S) + T_l(scatter, b).
double reduce_scatter_hier_cost(const CostShape& s, double b) {
  const double n = s.size() * b;
  Timeline tl(s);
  std::vector<double> reduced(s.parts());
  for (int p = 0; p < s.parts(); ++p) reduced[p] = s.local(Coll::kReduce, p, n);
  const std::vector<double> at_head = to_heads(tl, s, reduced, std::vector<double>(s.parts(), n));
  std::vector<double> share(s.sites.size());
  for (std::size_t t = 0; t < s.sites.size(); ++t) share[t] = s.members_in(s.sites[t]) * b;
  // What each head sends every other differs by the receiving site: played pair by pair.
  std::vector<double> everything = at_head;
  for (std::size_t t = 0; t < s.sites.size(); ++t)
    for (std::size_t u = 0; u < s.sites.size(); ++u)
      if (u != t) {
        const int ht = s.head(static_cast<int>(t)), hu = s.head(static_cast<int>(u));
        everything[u] = std::max(everything[u], tl.send(s.leader(ht), ht, hu, share[u], at_head[t]));
      }
  std::vector<double> down(s.parts());
  for (int p = 0; p < s.parts(); ++p) down[p] = s.part_size[p] * b;
  const std::vector<double> back = from_heads(tl, s, everything, down);
  double done = 0;
  for (int p = 0; p < s.parts(); ++p) done = std::max(done, back[p] + s.local(Coll::kScatter, p, b, back[p] - reduced[p]));
  return done;
}

}  // namespace gridrt::detail
