// Linear scatter(v) (MPICH's scatterv): the root sends every block straight to its member.
// Flat: n - 1 messages out of the root, each crossing the WAN if their site is not the root's.
#include "algorithms.h"
#include "costs.h"

namespace gridrt::detail {

Async<> scatterv_linear(CommImpl& c, Blocks in, void* recvbuf, Layout recv, bool in_place, int root) {
  const int tag = c.next_tag();
  if (c.me != root) {
    std::vector<char> got(recv.packed);
    co_await one(receive_from(c, root, tag, got.data(), got.size()));
    unpack(recv, got.data(), recvbuf);
    co_return;
  }
  std::vector<std::vector<char>> to(c.size());
  std::vector<Step> steps;
  for (int r = 0; r < c.size(); ++r) {
    if (r == root) continue;
    to[r] = in.pack_all({r});
    steps.push_back(send_to(c, r, tag, to[r].data(), to[r].size()));
  }
  if (!in_place) unpack(recv, in.pack_all({root}).data(), recvbuf);
  co_await all(steps);
}

// Cost: the root sends every member its block, one after the other.
double scatterv_linear_cost(const CostShape& s, int root, double b) {
  return played(s, s.size() - 1, b, [&](auto& tl) {
    typename std::decay_t<decltype(tl)>::Time last{};
    for (int i = 0; i < s.size(); ++i)
      if (i != root) last = tl.latest(last, tl.send(root, s.part_of[root], s.part_of[i], b, {}, i));
    return last;
  });
}

}  // namespace gridrt::detail
