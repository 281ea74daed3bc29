// Binomial-tree broadcast (MPICH's for short messages): ceil(log2 n) rounds, in each of
// which every process that has the data sends it to one more. Flat: a path may cross the
// WAN up to log2 n times, and a cluster may receive the same bytes several times.
#include "algorithms.h"
#include "costs.h"
#include "trees.h"

namespace gridrt::detail {

Async<> bcast_binomial(CommImpl& c, void* buf, Layout l, int root) {
  const int tag = c.next_tag();
  const int n = c.size();
  std::vector<char> data(l.packed);
  if (c.me == root) pack(l, buf, data.data());
  const int rel = (c.me - root + n) % n;
  auto real = [&](int r) { return (r + root) % n; };
  if (rel != 0) co_await one(receive_from(c, real(trees::binomial_parent(rel)), tag, data.data(), data.size()));
  std::vector<Step> steps;
  for (int child : trees::binomial_children(rel, n)) steps.push_back(send_to(c, real(child), tag, data.data(), data.size()));
  co_await all(steps);
  if (c.me != root) unpack(l, data.data(), buf);
}

// Cost: MPICH's binomial tree over all members from the root (relative ranks): a member
// receives from its parent, then sends to its children, largest subtree first.
double bcast_binomial_cost(const CostShape& s, int root, double m) {
  return binomial_down_cost(s, root, [m](int) { return m; });
}

}  // namespace gridrt::detail
