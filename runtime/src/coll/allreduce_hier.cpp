// Hierarchical all-reduce, pipelined: 1. each cluster reduces every slice to its leader
// (MPICH); 2. a site's clusters hand their partial result to the site's head; 3. heads send
// their site's to every other head (one WAN hop) and each folds all of them in site order:
// the same operands in the same order everywhere, so the same bits everywhere, floating
// point included; then hands the result back to its site's clusters; 4. each leader hands
// it to its cluster (MPICH). Slices flow through the stages one after the other, each
// leaving as soon as it is ready. Cost: one WAN latency + m / WAN bandwidth per head pair.
#include <optional>

#include "algorithms.h"
#include "costs.h"
#include "cluster_steps.h"

namespace gridrt::detail {

Async<> allreduce_hier(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, std::size_t slice) {
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
  std::vector<Step> steps;  // sends and the broadcasts inside the cluster, waited at the end
  if (c.is_leader()) {
    const int p = c.my_part(), head = c.site_head(c.site_of_part[p]);
    const std::vector<int> in_site = c.site_mates(p);
    std::vector<int> heads;  // of the other sites (used at this site's head)
    for (int t : c.other_sites(p)) heads.push_back(c.site_head(t));
    std::vector<std::vector<std::vector<char>>> from(sl.n, std::vector<std::vector<char>>(c.parts.size()));
    std::vector<std::vector<char>> out(sl.n), result(sl.n);
    std::vector<std::vector<Step>> site_in(sl.n), heads_in(sl.n), back(sl.n);
    // Every receive is posted at once; slices then flow through the stages one after the other.
    for (int k = 0; k < sl.n; ++k) {
      const std::size_t bytes = sl.layout(k).packed;
      if (p != head) {
        result[k].resize(bytes);
        back[k].push_back(receive_from(c, c.leader(head), tag, result[k].data(), bytes));
        continue;
      }
      for (int q : in_site) {
        from[k][q].resize(bytes);
        site_in[k].push_back(receive_from(c, c.leader(q), tag, from[k][q].data(), bytes));
      }
      for (int q : heads) {
        from[k][q].resize(bytes);
        heads_in[k].push_back(receive_from(c, c.leader(q), tag, from[k][q].data(), bytes));
      }
    }
    // Going out: each slice's partial result leaves as soon as it is ready, without
    // waiting for the previous slice's answers (so the slices cross the WAN together).
    for (int k = 0; k < sl.n; ++k) {
      const Layout lk = sl.layout(k);
      void* slice = sl.at(recvbuf, k);
      co_await amid(local[k], steps);
      if (p == head) {
        for (auto& s : site_in[k]) co_await amid(s, steps);
        fold_parts(lk, op, with_part(in_site, p), p, from[k], slice);
      }
      out[k] = packed_copy(lk, slice);
      if (p != head) steps.push_back(send_to(c, c.leader(head), tag, out[k].data(), out[k].size()));
      else
        for (int q : heads) steps.push_back(send_to(c, c.leader(q), tag, out[k].data(), out[k].size()));
    }
    // Coming back: each slice as soon as its answers are here.
    for (int k = 0; k < sl.n; ++k) {
      const Layout lk = sl.layout(k);
      void* slice = sl.at(recvbuf, k);
      if (p != head) {
        for (auto& s : back[k]) co_await amid(s, steps);
        unpack(lk, result[k].data(), slice);
      } else {
        for (auto& s : heads_in[k]) co_await amid(s, steps);
        fold_parts(lk, op, with_part(heads, p), p, from[k], slice);
        result[k] = packed_copy(lk, slice);
        for (int q : in_site) steps.push_back(send_to(c, c.leader(q), tag, result[k].data(), result[k].size()));
      }
      if (many) steps.push_back(cluster_bcast(c, slice, sl.count(k), l.type, 0));
    }
    co_await all(steps);
    co_return;
  }
  for (int k = 0; k < sl.n; ++k) steps.push_back(cluster_bcast(c, sl.at(recvbuf, k), sl.count(k), l.type, 0));
  steps.insert(steps.end(), local.begin(), local.end());
  co_await all(steps);
}

// Cost, slice by slice: MPICH's reduce to every leader (posted at once, done one slice after
// the other), through the heads (each site's partial result to every other head, the lines
// busy with the earlier slices), back to the leaders, MPICH's bcast once the slice is back
// and the previous one broadcast (its receivers asleep only if they waited long).
double allreduce_hier_cost(const CostShape& s, double m, double slice) {
  if (s.parts() == 1) return s.local(Coll::kAllreduce, 0, m);
  const SliceSizes sl{m, slice};
  Timeline tl(s);
  std::vector<double> reduced(s.parts(), 0), done(s.parts(), 0);
  for (int k = 0; k < sl.count(); ++k) {
    const double b = sl.bytes(k);
    for (int p = 0; p < s.parts(); ++p) reduced[p] += s.local(Coll::kReduce, p, b);
    const std::vector<double> back = through_heads(tl, s, reduced, std::vector<double>(s.parts(), b), std::vector<double>(s.sites.size(), b),
                                                   std::vector<double>(s.parts(), b));
    for (int p = 0; p < s.parts(); ++p) {
      const double from = std::max(done[p], back[p]);
      done[p] = from + s.local(Coll::kBcast, p, b, from - done[p]);
    }
  }
  return *std::max_element(done.begin(), done.end());
}

}  // namespace gridrt::detail
