// Hierarchical all-gather(v): 1. inside each cluster every member gets its cluster's blocks
// (MPICH's allgatherv; every size is known to everyone); 2. a site's clusters hand their
// blocks to the site's head, heads send their site's blocks to every other head (one WAN
// hop: every block enters every site once) and hand everything back to their site's
// clusters, clusters in order; 3. each leader hands the other clusters' blocks to its
// cluster (MPICH's broadcast). On one cluster, step 1 alone: MPICH's allgather.
// (Gathering at the leader and broadcasting all P blocks, as this once did, cost 5 to 13
// times MPICH's own allgather inside a cluster, which the cluster's members then paid again.)
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
  const auto& part = c.parts[p];
  // 1. Inside each cluster, every member gets its cluster's blocks.
  std::vector<std::vector<char>> from(c.parts.size());  // each cluster's blocks
  // On one cluster, MPICH's allgather straight into recvbuf where the blocks lie there
  // packed in order (1 MiB blocks on two processes: 0.94 ms through a buffer of our own).
  if (char* in_recvbuf = c.parts.size() == 1 && part.size() > 1 ? out.packed_in_place(part) : nullptr) {
    const std::vector<std::size_t> sizes = packed_sizes(out, part);
    const std::vector<char> none = co_await cluster_allgatherv(c, mine, sizes, in_recvbuf);  // (named: GCC 12)
    co_return;
  }
  // (co_await inside ?: is miscompiled by GCC 12: a plain if.)
  if (part.size() > 1) {
    const std::vector<std::size_t> sizes = packed_sizes(out, part);
    from[p] = co_await cluster_allgatherv(c, mine, sizes);
  } else {
    from[p] = std::move(mine);
  }
  out.unpack_all(part, from[p].data());
  if (c.parts.size() == 1) co_return;
  std::size_t total = 0;
  for (const auto& q : c.parts) total += out.packed(q);
  const std::size_t others_total = total - from[p].size();
  // 2. Leaders: a site's clusters hand their blocks to the site's head; heads send their
  //    site's blocks to every other head (one WAN hop: every block enters every site once)
  //    and hand everything back to their site's clusters, clusters in order.
  std::vector<char> others;  // every other cluster's blocks, clusters in order
  if (c.is_leader()) {
    const int site = c.site_of_part[p], head = c.site_head(site);
    // Cut a run of clusters' blocks, laid one after the other, into those clusters' `from`.
    auto split = [&](const std::vector<char>& blob, const std::vector<int>& clusters) {
      std::size_t at = 0;
      for (int q : clusters) {
        const std::size_t n = out.packed(c.parts[q]);
        if (q != p) from[q].assign(blob.begin() + static_cast<std::ptrdiff_t>(at), blob.begin() + static_cast<std::ptrdiff_t>(at + n));
        at += n;
      }
    };
    std::vector<int> all_parts(c.parts.size());
    for (std::size_t q = 0; q < all_parts.size(); ++q) all_parts[q] = static_cast<int>(q);
    if (p != head) {
      co_await one(send_to(c, c.leader(head), tag, from[p].data(), from[p].size()));
      std::vector<char> everything(total);
      co_await one(receive_from(c, c.leader(head), tag, everything.data(), everything.size()));
      split(everything, all_parts);
    } else {
      const std::vector<int> mates = c.site_mates(p), other_sites = c.other_sites(p);
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
      for (int t : other_sites) {
        const int other = c.leader(c.site_head(t));
        site_from[t].resize(out.packed(c.members_of(c.sites[t])));
        steps.push_back(receive_from(c, other, tag, site_from[t].data(), site_from[t].size()));
        steps.push_back(send_to(c, other, tag, site_blocks.data(), site_blocks.size()));
      }
      co_await all(steps);
      for (int t : other_sites) split(site_from[t], c.sites[t]);
      if (!mates.empty()) {
        std::vector<char> everything;
        for (const auto& f : from) everything.insert(everything.end(), f.begin(), f.end());
        steps.clear();
        for (int q : mates) steps.push_back(send_to(c, c.leader(q), tag, everything.data(), everything.size()));
        co_await all(steps);
      }
    }
    for (std::size_t q = 0; q < from.size(); ++q)
      if (static_cast<int>(q) != p) others.insert(others.end(), from[q].begin(), from[q].end());
  }
  // 3. Each leader hands the other clusters' blocks to its cluster.
  others.resize(others_total);
  if (part.size() > 1 && others_total > 0) {
    if (others_total > static_cast<std::size_t>(INT32_MAX)) throw Error("gridrt: a collective's data inside a cluster is limited to 2 GiB");
    co_await one(cluster_bcast(c, others.data(), static_cast<int>(others_total), MPI_BYTE, 0));
  }
  const char* at = others.data();
  for (int q = 0; q < static_cast<int>(c.parts.size()); ++q) {
    if (q == p) continue;
    out.unpack_all(c.parts[q], at);
    at += out.packed(c.parts[q]);
  }
}

// Cost: MPICH's allgather in every part, through the heads (each site's blocks to every
// other head; everything back to the site's other parts), MPICH's bcast of the other parts'
// blocks.
double allgather_hier_cost(const CostShape& s, double b) {
  const double all = s.size() * b;
  if (s.parts() == 1) return s.local(Coll::kAllgather, 0, b);
  std::vector<double> ready(s.parts()), up(s.parts()), down(s.parts()), across(s.sites.size(), 0);
  for (int p = 0; p < s.parts(); ++p) {
    ready[p] = s.local(Coll::kAllgather, p, b);
    up[p] = s.part_size[p] * b;
    down[p] = all;
    across[s.site_of_part[p]] += up[p];
  }
  const std::vector<double> done = through_heads(s, ready, up, across, down);
  double t = 0;
  for (int p = 0; p < s.parts(); ++p) t = std::max(t, done[p] + s.local(Coll::kBcast, p, all - up[p], done[p]));
  return t;
}

}  // namespace gridrt::detail
