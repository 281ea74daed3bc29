// Dissemination barrier (Hensgen, Finkel, Manber, "Two algorithms for barrier
// synchronization", 1988; MPICH's): in round k rank r signals (r + 2^k) mod n and waits for
// (r - 2^k) mod n; after ceil(log2 n) rounds everyone has heard from everyone. Flat: as
// many rounds cross the WAN as there are, each at the pace of its slowest pair.
#include "algorithms.h"
#include "costs.h"
#include "trees.h"

namespace gridrt::detail {

Async<> barrier_dissemination(CommImpl& c) {
  const int tag = c.next_tag();
  const int n = c.size();
  char out = 0, in = 0;
  for (int d : trees::dissemination_distances(n)) {
    std::vector<Step> steps;
    steps.push_back(receive_from(c, (c.me - d + n) % n, tag, &in, 1));
    steps.push_back(send_to(c, (c.me + d) % n, tag, &out, 1));
    co_await all(steps);
  }
}

// Cost: ceil(log2 P) rounds; in round k every member signals rank + 2^k, and goes on once
// it has heard from rank - 2^k.
double barrier_dissemination_cost(const CostShape& s) {
  const int P = s.size();
  return rounds_cost(
      s, ceil_log2(P), [P](int i, int k) { return (i + (1 << (k - 1))) % P; }, 1);
}

}  // namespace gridrt::detail
