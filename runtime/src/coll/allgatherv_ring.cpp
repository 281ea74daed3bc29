// Ring all-gather(v) (MPICH's for long messages): in step k, pass on the block received
// in step k - 1. Flat: n - 1 rounds, every one of them crossing the WAN somewhere.
#include "algorithms.h"
#include "costs.h"

namespace gridrt::detail {

Async<> allgatherv_ring(CommImpl& c, std::vector<char> mine, Blocks out) {
  const int tag = c.next_tag();
  const int n = c.size();
  std::vector<std::size_t> offset(n + 1, 0);
  for (int i = 0; i < n; ++i) offset[i + 1] = offset[i] + out.packed(i);
  std::vector<char> everything(offset[n]);
  std::copy(mine.begin(), mine.end(), everything.begin() + static_cast<std::ptrdiff_t>(offset[c.me]));
  const int right = (c.me + 1) % n, left = (c.me - 1 + n) % n;
  for (int k = 0; k < n - 1; ++k) {
    const int send_block = (c.me - k + n) % n, recv_block = (c.me - k - 1 + n) % n;
    std::vector<Step> steps;
    steps.push_back(receive_from(c, left, tag, everything.data() + offset[recv_block], out.packed(recv_block)));
    steps.push_back(send_to(c, right, tag, everything.data() + offset[send_block], out.packed(send_block)));
    co_await all(steps);
  }
  for (int i = 0; i < n; ++i) out.unpack_all({i}, everything.data() + offset[i]);
}

// Cost: P - 1 steps of the ring: in each, a member passes on to the right what it had from
// the left in the step before.
double allgather_ring_cost(const CostShape& s, double b) {
  const int P = s.size();
  return rounds_cost(
      s, P - 1, [P](int i, int) { return (i + 1) % P; }, b);
}

}  // namespace gridrt::detail
