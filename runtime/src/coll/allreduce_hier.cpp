// Hierarchical all-reduce, pipelined: 1. each cluster reduces every slice to its leader
// (MPICH); 2. a site's clusters hand their partial result to the site's head; 3. between
// the S heads, by one of two routes:
//   heads: each sends its site's to every other head (one WAN hop) and each folds all of
//     them in site order: the same operands in the same order everywhere, so the same bits
//     everywhere, floating point included. Every pair of sites carries m each way.
//   reduce-scatter: the slice is cut into S pieces of whole elements; each head sends piece
//     t to site t's head, which folds it in site order and sends the folded piece to every
//     other head (a reduce-scatter, then an all-gather: Rabenseifner, "Optimization of
//     Collective Reduction Operations", 2004; Thakur, Rabenseifner, Gropp, "Optimization of
//     Collective Communication Operations in MPICH", 2005, over the heads). Two WAN hops,
//     but every pair of sites carries 2m/S each way instead of m, and a site's access line
//     2m(S-1)/S instead of (S-1)m: the large messages' route from three sites on. Each
//     piece is folded once, in site order, so all members get the same bits here too.
// then each head hands the result back to its site's clusters; 4. each leader hands it to
// its cluster (MPICH). Slices flow through the stages one after the other, each leaving as
// soon as it is ready. Cost: allreduce_hier_cost below.
#include <optional>

#include "algorithms.h"
#include "costs.h"
#include "cluster_steps.h"
#include "pipeline.h"

namespace gridrt::detail {

namespace {
// Piece t of n elements cut among S heads: elements [first(t), first(t + 1)).
struct Pieces {
  int n, S;
  int first(int t) const { return static_cast<int>(static_cast<long long>(n) * t / S); }
  int count(int t) const { return first(t + 1) - first(t); }
  Layout layout(const Layout& slice, int t) const { return Layout(slice, count(t)); }
  char* at(const Layout& slice, void* base, int t) const {
    return static_cast<char*>(base) + static_cast<MPI_Aint>(first(t)) * slice.extent;
  }
};

// Stages 2 and 3 and the start of 4, at a cluster's leader: through the site's head and
// between the heads, slice by slice (`local`: stage 1's reduction of each slice here).
Async<> through_the_heads(CommImpl& c, int tag, const Slices& sl, MPI_Op op, void* recvbuf, std::vector<Step>& local, bool many,
                          Route between) {
  enum Stage { kFromSite, kFromHeads, kFolded, kBack, kStages };
  const int p = c.my_part(), site = c.site_of_part[p], head = c.site_head(site), S = static_cast<int>(c.sites.size());
  const bool is_head = p == head, split = between == Route::kReduceScatter;
  const std::vector<int> in_site = c.site_mates(p), sites_away = c.other_sites(p);
  std::vector<int> heads, head_leaders, site_leaders;  // (heads: of the other sites, used at this site's head)
  for (int t : sites_away) heads.push_back(c.site_head(t));
  for (int q : heads) head_leaders.push_back(c.leader(q));
  for (int q : in_site) site_leaders.push_back(c.leader(q));
  Pipeline pipe(c, tag, sl.n, kStages);
  for (int k = 0; k < sl.n; ++k) {
    const std::size_t bytes = sl.layout(k).packed;
    if (!is_head) {
      pipe.expect(kBack, k, head, c.leader(head), bytes);
      continue;
    }
    for (int q : in_site) pipe.expect(kFromSite, k, q, c.leader(q), bytes);
    // From each other head: its site's partial result (heads), or the piece this site folds
    // (reduce-scatter).
    const std::size_t in_bytes = split ? Pieces{sl.count(k), S}.layout(sl.layout(k), site).packed : bytes;
    for (int q : heads) pipe.expect(kFromHeads, k, q, c.leader(q), in_bytes);
  }
  // The folded pieces come after every slice's pieces (each head sends them in that order).
  if (split && is_head)
    for (int k = 0; k < sl.n; ++k)
      for (std::size_t i = 0; i < heads.size(); ++i)
        pipe.expect(kFolded, k, heads[i], head_leaders[i], Pieces{sl.count(k), S}.layout(sl.layout(k), sites_away[i]).packed);
  // Going out: each slice's partial result leaves as soon as it is ready, without waiting
  // for the previous slice's answers (so the slices cross the WAN together).
  for (int k = 0; k < sl.n; ++k) {
    const Layout lk = sl.layout(k);
    void* slice = sl.at(recvbuf, k);
    co_await pipe.arrived(kFromSite, k, &local[k]);
    if (!is_head) {
      pipe.send(c.leader(head), packed_copy(lk, slice));
      continue;
    }
    fold_parts(lk, op, with_part(in_site, p), p, pipe.received(kFromSite, k), slice);
    if (!split) {
      pipe.send(head_leaders, packed_copy(lk, slice));
      continue;
    }
    const Pieces pc{lk.count, S};
    for (std::size_t i = 0; i < heads.size(); ++i)
      pipe.send(head_leaders[i], packed_copy(pc.layout(lk, sites_away[i]), pc.at(lk, slice, sites_away[i])));
  }
  // In pieces: each slice's piece of this site, folded in site order as soon as every other
  // head's is here, goes to every other head, without waiting for their folded pieces of the
  // earlier slices (waiting would cost a WAN latency per slice).
  if (split && is_head)
    for (int k = 0; k < sl.n; ++k) {
      const Layout lk = sl.layout(k);
      const Pieces pc{lk.count, S};
      const Layout own = pc.layout(lk, site);
      char* piece = pc.at(lk, sl.at(recvbuf, k), site);
      co_await pipe.arrived(kFromHeads, k);
      fold_parts(own, op, with_part(heads, p), p, pipe.received(kFromHeads, k), piece);
      pipe.send(head_leaders, packed_copy(own, piece));
    }
  // Coming back: each slice as soon as its answers are here, then into the cluster.
  for (int k = 0; k < sl.n; ++k) {
    const Layout lk = sl.layout(k);
    void* slice = sl.at(recvbuf, k);
    if (!is_head) {
      co_await pipe.arrived(kBack, k);
      unpack(lk, pipe.received(kBack, k, head).data(), slice);
    } else if (!split) {
      co_await pipe.arrived(kFromHeads, k);
      fold_parts(lk, op, with_part(heads, p), p, pipe.received(kFromHeads, k), slice);
    } else {  // the other heads' folded pieces into place
      const Pieces pc{lk.count, S};
      co_await pipe.arrived(kFolded, k);
      for (std::size_t i = 0; i < heads.size(); ++i)
        unpack(pc.layout(lk, sites_away[i]), pipe.received(kFolded, k, heads[i]).data(), pc.at(lk, slice, sites_away[i]));
    }
    if (is_head) pipe.send(site_leaders, packed_copy(lk, slice));
    if (many) pipe.start(cluster_bcast(c, slice, sl.count(k), sl.whole.type, 0));
  }
  co_await pipe.finish();
}

}  // namespace

Async<> allreduce_hier(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, std::size_t slice, Route between) {
  const int tag = c.next_tag();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (c.parts.size() == 1) {
    co_await one(cluster_allreduce(c, sendbuf, recvbuf, l, op));
    co_return;
  }
  const Slices sl(l, slice);
  const bool many = local_size(c) > 1;
  // In place, a member's contribution is in recvbuf, which the result will overwrite while
  // later slices are still being reduced: it is put aside first.
  std::optional<Scratch> aside;
  const void* input = sendbuf;
  if (in_place && !c.is_leader()) {
    aside.emplace(l);
    copy_elements(l, recvbuf, aside->get());
    input = aside->get();
  }
  // 1. Each cluster reduces every slice to its leader, all slices at once.
  std::vector<Step> local(sl.n);
  for (int k = 0; k < sl.n; ++k) {
    if (!many) {
      local[k].done = true;
      continue;
    }
    local[k] = cluster_reduce(c, in_place && c.is_leader() ? MPI_IN_PLACE : sl.at(input, k), c.is_leader() ? sl.at(recvbuf, k) : nullptr,
                              sl.layout(k), op, 0);
  }
  if (!many && !in_place) copy_elements(l, sendbuf, recvbuf);
  if (c.is_leader()) {
    co_await through_the_heads(c, tag, sl, op, recvbuf, local, many, between);
    co_return;
  }
  // 4. The others take every slice from their leader's broadcast.
  std::vector<Step> steps = std::move(local);
  for (int k = 0; k < sl.n; ++k) steps.push_back(cluster_bcast(c, sl.at(recvbuf, k), sl.count(k), l.type, 0));
  co_await all(steps);
}

// Cost, slice by slice: MPICH's reduce to every leader (posted at once, done one slice after
// the other), through the heads (each site's partial result to every other head, or its
// pieces and then the folded ones, the lines busy with the earlier slices), back to the
// leaders, MPICH's bcast once the slice is back and the previous one broadcast (its
// receivers asleep only if they waited long). In pieces, every slice's pieces go out
// before any folded piece (a head sends them in that order, so one line carries them in
// it). On S sites of one line per pair, whole messages of m bytes: heads about L + g(m),
// reduce-scatter about 2 (L + g(m / S)).
double allreduce_hier_cost(const CostShape& s, double m, double slice, Route between) {
  if (s.parts() == 1) return s.local(Coll::kAllreduce, 0, m);
  const SliceSizes sl{m, slice};
  const bool split = between == Route::kReduceScatter;
  const double pieces = split ? static_cast<double>(s.sites.size()) : 1;
  Timeline tl(s);
  std::vector<double> reduced(s.parts(), 0), done(s.parts(), 0);
  std::vector<std::vector<double>> folded(sl.count());  // by slice: when each head has folded its piece
  auto to_sites = [&](double b) { return std::vector<double>(s.sites.size(), b / pieces); };
  for (int k = 0; k < sl.count(); ++k) {
    const double b = sl.bytes(k);
    for (int p = 0; p < s.parts(); ++p) reduced[p] += s.local(Coll::kReduce, p, b);
    folded[k] = between_heads(tl, s, to_heads(tl, s, reduced, std::vector<double>(s.parts(), b)), to_sites(b));
  }
  for (int k = 0; k < sl.count(); ++k) {
    const double b = sl.bytes(k);
    const std::vector<double> everything = split ? between_heads(tl, s, folded[k], to_sites(b)) : folded[k];
    const std::vector<double> back = from_heads(tl, s, everything, std::vector<double>(s.parts(), b));
    for (int p = 0; p < s.parts(); ++p) {
      const double from = std::max(done[p], back[p]);
      done[p] = from + s.local(Coll::kBcast, p, b, from - done[p]);
    }
  }
  return *std::max_element(done.begin(), done.end());
}

}  // namespace gridrt::detail
