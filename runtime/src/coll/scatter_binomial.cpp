// Binomial-tree scatter of equal blocks (MPICH's): from the root, each member receives its
// subtree's blocks and passes on its children's. Flat: log2 n rounds, a block may cross the
// WAN several times.
#include "algorithms.h"
#include "costs.h"
#include "trees.h"

namespace gridrt::detail {

Async<> scatter_binomial(CommImpl& c, Blocks in, void* recvbuf, Layout recv, bool in_place, int root) {
  const int tag = c.next_tag();
  const int n = c.size();
  const int rel = (c.me - root + n) % n;
  const std::size_t block = c.me == root ? in.packed(root) : recv.packed;
  std::vector<char> sub(block * trees::binomial_subtree_size(rel, n));
  if (rel == 0) {
    for (int k = 0; k < n; ++k) {
      const std::vector<char> b = in.pack_all({(k + root) % n});
      std::copy(b.begin(), b.end(), sub.begin() + static_cast<std::ptrdiff_t>(block * k));
    }
  } else {
    co_await one(receive_from(c, (trees::binomial_parent(rel) + root) % n, tag, sub.data(), sub.size()));
  }
  std::vector<Step> steps;
  for (int child : trees::binomial_children(rel, n))
    steps.push_back(
        send_to(c, (child + root) % n, tag, sub.data() + block * (child - rel), block * trees::binomial_subtree_size(child, n)));
  co_await all(steps);
  if (!(rel == 0 && in_place)) unpack(recv, sub.data(), recvbuf);
}

// Cost: MPICH's binomial scatter from the root: a member receives its subtree's blocks,
// then sends each child its subtree's, largest first.
double scatter_binomial_cost(const CostShape& s, int root, double b) {
  return binomial_down_cost(s, root, [b](int subtree) { return subtree * b; });
}

}  // namespace gridrt::detail
