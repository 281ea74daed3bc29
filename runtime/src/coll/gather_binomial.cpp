// Binomial-tree gather of equal blocks (MPICH's): towards the root (relative ranks), every
// subtree being a run of consecutive relative ranks, gathered in one buffer and sent up
// whole. Flat: log2 n rounds, a block may cross the WAN several times.
#include "algorithms.h"
#include "costs.h"
#include "trees.h"

namespace gridrt::detail {

Async<> gather_binomial(CommImpl& c, std::vector<char> mine, bool in_place, Blocks out, int root, std::size_t block) {
  const int tag = c.next_tag();
  const int n = c.size();
  const int rel = (c.me - root + n) % n;
  std::vector<char> sub(block * trees::binomial_subtree_size(rel, n));
  if (in_place) mine = out.pack_all({root});
  std::copy(mine.begin(), mine.end(), sub.begin());
  std::vector<Step> steps;
  for (int child : trees::binomial_children(rel, n))
    steps.push_back(
        receive_from(c, (child + root) % n, tag, sub.data() + block * (child - rel), block * trees::binomial_subtree_size(child, n)));
  co_await all(steps);
  if (rel != 0) {
    co_await one(send_to(c, (trees::binomial_parent(rel) + root) % n, tag, sub.data(), sub.size()));
    co_return;
  }
  for (int k = 0; k < n; ++k) {
    const int real = (k + root) % n;
    if (real == root && in_place) continue;
    out.unpack_all({real}, sub.data() + block * k);
  }
}

// Cost: MPICH's binomial gather towards the root: a member sends its subtree's blocks (up
// to its lowest set bit's worth) once its children's are in; at least what the root
// cluster's many-to-one model says of its members' blocks.
double gather_binomial_cost(const CostShape& s, int root, double b) {
  return std::max(binomial_up_cost(
                      s, root, [b](int subtree) { return subtree * b; }, false),
                  root_cluster_gather_cost(s, root, b));
}

}  // namespace gridrt::detail
