// Linear gather(v) (MPICH's gatherv): every member sends its block straight to the root.
// Flat: n - 1 messages into the root, each crossing the WAN if the root's site is not theirs.
#include "algorithms.h"
#include "costs.h"

namespace gridrt::detail {

Async<> gatherv_linear(CommImpl& c, std::vector<char> mine, bool in_place, Blocks out, int root) {
  const int tag = c.next_tag();
  if (c.me != root) {
    co_await one(send_to(c, root, tag, mine.data(), mine.size()));
    co_return;
  }
  std::vector<std::vector<char>> from(c.size());
  std::vector<Step> steps;
  for (int r = 0; r < c.size(); ++r) {
    if (r == root) continue;
    from[r].resize(out.packed(r));
    steps.push_back(receive_from(c, r, tag, from[r].data(), from[r].size()));
  }
  co_await all(steps);
  for (int r = 0; r < c.size(); ++r)
    if (r != root) out.unpack_all({r}, from[r].data());
  if (!in_place) out.unpack_all({root}, mine.data());
}

// Cost: every member sends its block straight to the root, all at once; those of the
// root's cluster at least as its many-to-one model says.
double gatherv_linear_cost(const CostShape& s, int root, double b) {
  const double sent = played(s, s.size() - 1, b, [&](auto& tl) {
    typename std::decay_t<decltype(tl)>::Time last{};
    for (int i = 0; i < s.size(); ++i)
      if (i != root) last = tl.latest(last, tl.send(i, s.part_of[i], s.part_of[root], b, {}, root));
    return last;
  });
  return std::max(sent, root_cluster_gather_cost(s, root, b));
}

}  // namespace gridrt::detail
