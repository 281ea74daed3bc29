// Hierarchical barrier: every cluster's members meet (MPICH's barrier, in two halves), their
// leaders meet at their site's head, and the heads of all sites tell each other they
// arrived: one WAN hop, all-to-all among heads, rather than gathering at one head and
// answering, which would cross the WAN twice in a row. Then each half is undone in reverse.
// Cost: two cluster barriers, two LAN hops inside a site, one WAN latency.
#include "algorithms.h"
#include "costs.h"
#include "cluster_steps.h"

namespace gridrt::detail {

Async<> barrier_hier(CommImpl& c) {
  const int tag = c.next_tag();
  if (c.parts.size() == 1) {
    co_await cluster_barrier(c);
    co_return;
  }
  co_await one(cluster_arrive(c));
  if (c.is_leader()) {
    const int p = c.my_part(), site = c.site_of_part[p];
    char token = 0;
    std::vector<char> in(c.parts.size());
    if (!c.is_site_head(p)) {
      const int head = c.leader(c.site_head(site));
      co_await one(send_to(c, head, tag, &token, 1));
      co_await one(receive_from(c, head, tag, &token, 1));
    } else {
      const std::vector<int> mates = c.site_mates(p);
      std::vector<Step> steps;
      for (int q : mates) steps.push_back(receive_from(c, c.leader(q), tag, &in[q], 1));
      co_await all(steps);
      steps.clear();
      for (int t : c.other_sites(p)) {
        const int head = c.site_head(t);
        steps.push_back(receive_from(c, c.leader(head), tag, &in[head], 1));
        steps.push_back(send_to(c, c.leader(head), tag, &token, 1));
      }
      co_await all(steps);
      steps.clear();
      for (int q : mates) steps.push_back(send_to(c, c.leader(q), tag, &token, 1));
      co_await all(steps);
    }
  }
  co_await one(cluster_release(c));
}

// Cost: MPICH's barrier arrive in every cluster, the leaders to their site's head, one byte
// between every two heads, back to the leaders, the release. One cluster: its one barrier.
double barrier_hier_cost(const CostShape& s) {
  if (s.parts() == 1) return s.local(Coll::kBarrier, 0, 0);
  std::vector<double> ready(s.parts());
  for (int p = 0; p < s.parts(); ++p) ready[p] = s.local(Coll::kBarrier, p, 0);
  const std::vector<double> one_byte(s.parts(), 1.0), site_byte(s.sites.size(), 1.0);
  const std::vector<double> done = through_heads(s, ready, one_byte, site_byte, one_byte);
  double t = 0;
  for (int p = 0; p < s.parts(); ++p) t = std::max(t, done[p] + s.local(Coll::kBarrier, p, 0, done[p]));
  return t;
}

}  // namespace gridrt::detail
