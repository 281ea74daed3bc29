// Hierarchical broadcast, pipelined (Coti et al. 2009 §3.2 and §4.2: large messages cut
// into slices). The data goes down a tree over the clusters that enters every site once
// (coll/part_trees.h): on the packed route the root's entry sends each slice to its site's
// other clusters and to the head of every other site (one WAN hop), a head to its site's
// other clusters; on the binomial route the sites' heads form a binomial tree, on the chain
// route a chain. Each slice goes on as soon as it is here, and into the cluster (MPICH's
// broadcast from its entry) while the next one crosses. Cost for m bytes in slices of s on
// the packed route: about one WAN latency + (S - 1) m / the root's sending rate; on the
// chain, (S - 1) latencies + m / the slowest line's rate: the pipelined chain broadcast
// (as in Kielmann et al., "MagPIe", 1999, and the scatter models' chain), which wins where
// the root's site sends on one line (its access link) and the message is large. Each byte
// enters each cluster once.
#include <cmath>

#include "algorithms.h"
#include "costs.h"
#include "cluster_steps.h"
#include "pipeline.h"

namespace gridrt::detail {

Async<> bcast_hier(CommImpl& c, void* buf, Layout l, int root, PartTree t, std::size_t slice) {
  const int tag = c.next_tag();
  std::vector<char> packed;
  char* data = static_cast<char*>(buf);
  if (!l.contiguous) {
    packed.resize(l.packed);
    data = packed.data();
    if (c.me == root) pack(l, buf, data);
  }
  if (l.packed > static_cast<std::size_t>(INT32_MAX)) throw Error("gridrt: a broadcast is limited to 2 GiB");
  const Layout bytes(MPI_BYTE, static_cast<int>(l.packed));
  const Slices sl(bytes, slice);
  const int slices = l.packed ? sl.n : 0;  // nothing to send for no data
  const int root_part = c.part_of[root], p = c.my_part();
  const bool is_entry = c.me == c.entry(p, root);
  const std::vector<int> onward = is_entry ? t.children[p] : std::vector<int>{};
  // One stage: each slice from the entry above, in place (the root's entry has it already).
  Pipeline pipe(c, tag, slices, 1);
  if (is_entry && p != root_part)
    for (int k = 0; k < slices; ++k) pipe.expect_into(0, k, c.entry(t.parent[p], root), sl.at(data, k), sl.count(k));
  const int local_root = c.index_in_part[c.entry(p, root)];
  for (int k = 0; k < slices; ++k) {
    co_await pipe.arrived(0, k);
    for (int q : onward) pipe.send(c.leader(q), sl.at(data, k), sl.count(k));
    if (local_size(c) > 1) pipe.start(cluster_bcast(c, sl.at(data, k), sl.count(k), MPI_BYTE, local_root));
  }
  co_await pipe.finish();
  if (!l.contiguous && c.me != root) unpack(l, data, buf);
}

// Cost: the slices down the route's tree over the parts (each entry hands every slice on as
// it arrives, after its earlier ones), and into every cluster one after the other as they
// come; a slice's receivers there have slept only if it came long after the one before
// (local_cost's `at`: how long they have waited).
double bcast_hier_cost(const CostShape& s, int root, double m, Route r, double slice) {
  const int C = s.parts(), rp = s.part_of[root];
  const SliceSizes sl{m, slice};
  const int slices = m > 0 ? sl.count() : 0;
  Timeline tl(s);
  std::vector<std::vector<double>> got(C, std::vector<double>(slices, 0));
  const PartTree t = part_tree(s.sites, s.site_of_part, rp, r);
  for (int q : t.top_down(rp)) {
    const int entry = q == rp ? root : s.leader(q);
    for (int k = 0; k < slices; ++k)
      for (int x : t.children[q]) got[x][k] = tl.send(entry, q, x, sl.bytes(k), got[q][k]);
  }
  double done = 0;
  for (int q = 0; q < C; ++q) {
    double t = 0, busy_until = 0;  // the cluster's previous slice done (the call's start for the first)
    for (int k = 0; k < slices; ++k) {
      t = std::max(t, got[q][k]);
      t += s.local(Coll::kBcast, q, sl.bytes(k), t - busy_until);
      busy_until = t;
    }
    done = std::max(done, t);
  }
  return done;
}

}  // namespace gridrt::detail
