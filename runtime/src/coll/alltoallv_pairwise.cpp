// Pairwise-exchange all-to-all(v) (MPICH's for long messages): in step k, send to rank + k
// and receive from rank - k. Flat: n - 1 rounds, each block crossing the WAN on its own.
#include "algorithms.h"
#include "costs.h"

namespace gridrt::detail {

Async<> alltoallv_pairwise(CommImpl& c, Blocks in, Blocks out) {
  const int tag = c.next_tag();
  const int n = c.size();
  out.unpack_all({c.me}, in.pack_all({c.me}).data());
  for (int k = 1; k < n; ++k) {
    const int dst = (c.me + k) % n, src = (c.me - k + n) % n;
    const std::vector<char> block = in.pack_all({dst});
    std::vector<char> got(out.packed(src));
    std::vector<Step> steps;
    steps.push_back(receive_from(c, src, tag, got.data(), got.size()));
    steps.push_back(send_to(c, dst, tag, block.data(), block.size()));
    co_await all(steps);
    out.unpack_all({src}, got.data());
  }
}

// Cost: P - 1 steps of the pairwise exchange; in step k a member sends to rank + k and goes
// on once it has what rank - k sent.
double alltoall_pairwise_cost(const CostShape& s, double b) {
  const int P = s.size();
  return rounds_cost(
      s, P - 1, [P](int i, int k) { return (i + k) % P; }, b);
}

}  // namespace gridrt::detail
