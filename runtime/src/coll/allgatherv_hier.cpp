// Hierarchical all-gather(v): 1. each cluster gathers its blocks at its leader (MPICH;
// every size is known to everyone); 2. a site's clusters hand their blocks to the site's
// head, heads send their site's blocks to every other head (one WAN hop: every block enters
// every site once) and hand everything back to their site's clusters, clusters in order;
// 3. each leader hands everyone's blocks to its cluster (MPICH's broadcast).
#include "algorithms.h"
#include "costs.h"
#include "cluster_steps.h"

namespace gridrt::detail {

namespace {
std::vector<std::size_t> packed_sizes(const Blocks& b, const std::vector<int>& which) {
  std::vector<std::size_t> out;
  for (int i : which) out.push_back(b.packed(i));
  return out;
}
}  // namespace

Async<> allgatherv_hier(CommImpl& c, std::vector<char> mine, Blocks out) {
  const int tag = c.next_tag();
  const int p = c.my_part();
  // 1. Each cluster gathers its blocks at its leader (every size is known to everyone).
  const auto& part = c.parts[p];
  std::vector<std::vector<char>> from(c.parts.size());  // each cluster's blocks
  from[p] = mine;
  if (part.size() > 1) {
    const std::vector<std::size_t> known = packed_sizes(out, part);
    from[p] = co_await cluster_gatherv(c, mine, 0, &known);
  }
  std::size_t total = 0;
  for (const auto& q : c.parts) total += out.packed(q);
  std::vector<char> everything;
  // 2. Leaders: a site's clusters hand their blocks to the site's head; heads send their
  //    site's blocks to every other head (one WAN hop: every block enters every site once)
  //    and hand everything back to their site's clusters, clusters in order.
  if (c.is_leader() && c.parts.size() > 1) {
    const int site = c.site_of_part[p], head = c.site_head(site);
    if (p != head) {
      co_await one(send_to(c, c.leader(head), tag, from[p].data(), from[p].size()));
      everything.resize(total);
      co_await one(receive_from(c, c.leader(head), tag, everything.data(), everything.size()));
    } else {
      const std::vector<int> mates = c.site_mates(p), others = c.other_sites(p);
      std::vector<Step> steps;
      for (int q : mates) {
        from[q].resize(out.packed(c.parts[q]));
        steps.push_back(receive_from(c, c.leader(q), tag, from[q].data(), from[q].size()));
      }
      co_await all(steps);
      std::vector<char> site_blocks;
      for (int q : c.sites[site]) site_blocks.insert(site_blocks.end(), from[q].begin(), from[q].end());
      std::vector<std::vector<char>> site_from(c.sites.size());
      steps.clear();
      for (int t : others) {
        const int other = c.leader(c.site_head(t));
        site_from[t].resize(out.packed(c.members_of(c.sites[t])));
        steps.push_back(receive_from(c, other, tag, site_from[t].data(), site_from[t].size()));
        steps.push_back(send_to(c, other, tag, site_blocks.data(), site_blocks.size()));
      }
      co_await all(steps);
      for (int t : others) {  // split every other site's blocks by cluster
        std::size_t at = 0;
        for (int q : c.sites[t]) {
          const std::size_t n = out.packed(c.parts[q]);
          from[q].assign(site_from[t].begin() + static_cast<std::ptrdiff_t>(at), site_from[t].begin() + static_cast<std::ptrdiff_t>(at + n));
          at += n;
        }
      }
      for (const auto& f : from) everything.insert(everything.end(), f.begin(), f.end());
      steps.clear();
      for (int q : mates) steps.push_back(send_to(c, c.leader(q), tag, everything.data(), everything.size()));
      co_await all(steps);
    }
  } else if (c.is_leader()) {
    everything = from[p];
  }
  // 3. Each leader hands everyone's blocks to its cluster.
  everything.resize(total);
  if (part.size() > 1 && total > 0) {
    if (total > static_cast<std::size_t>(INT32_MAX)) throw Error("gridrt: a collective's data inside a cluster is limited to 2 GiB");
    co_await one(cluster_bcast(c, everything.data(), static_cast<int>(total), MPI_BYTE, 0));
  }
  const char* at = everything.data();
  for (const auto& q : c.parts) {
    out.unpack_all(q, at);
    at += out.packed(q);
  }
}

// Cost: MPICH's gather at every leader, through the heads (each site's blocks to every
// other head; everything back to the site's other parts), MPICH's bcast of all P blocks.
double allgather_hier_cost(const CostShape& s, double b) {
  const double all = s.size() * b;
  std::vector<double> ready(s.parts()), up(s.parts()), down(s.parts()), across(s.sites.size(), 0);
  for (int p = 0; p < s.parts(); ++p) {
    ready[p] = local_cost(Coll::kGather, s.part_size[p], s.link[p][p], b);
    up[p] = s.part_size[p] * b;
    down[p] = all;
    across[s.site_of_part[p]] += up[p];
  }
  const std::vector<double> done = through_heads(s, ready, up, across, down);
  double t = 0;
  for (int p = 0; p < s.parts(); ++p) t = std::max(t, done[p] + local_cost(Coll::kBcast, s.part_size[p], s.link[p][p], all));
  return t;
}

}  // namespace gridrt::detail
