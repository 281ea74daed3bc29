// Recursive-doubling prefix reduction (MPICH's MPI_Scan and MPI_Exscan): in round k each
// rank exchanges the fold of its block of 2^k ranks with partner rank ^ 2^k, keeping the
// lower ranks' values on the left of every combination, so that a non-commutative operation
// gives the rank-order result. Flat: log2 n rounds, each may cross the WAN.
#include "algorithms.h"
#include "costs.h"

namespace gridrt::detail {

Async<> scan_doubling(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, bool exclusive) {
  const int tag = c.next_tag();
  const int n = c.size(), me = c.me;
  Scratch partial(l), incoming(l);
  copy_elements(l, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, partial.get());  // the fold of my block so far
  if (!exclusive) copy_elements(l, partial.get(), recvbuf);
  bool have = !exclusive;  // recvbuf holds a value (an exclusive scan's, once a lower block came)
  std::vector<char> out(l.packed), wire(l.packed);
  for (int mask = 1; mask < n; mask <<= 1) {
    const int peer = me ^ mask;
    if (peer >= n) continue;
    pack(l, partial.get(), out.data());
    std::vector<Step> steps;
    steps.push_back(receive_from(c, peer, tag, wire.data(), wire.size()));
    steps.push_back(send_to(c, peer, tag, out.data(), out.size()));
    co_await all(steps);
    unpack(l, wire.data(), incoming.get());
    if (peer < me) {  // a lower block: on the left
      if (have) combine(l, op, incoming.get(), recvbuf);
      else copy_elements(l, incoming.get(), recvbuf);
      have = true;
      combine(l, op, incoming.get(), partial.get());
    } else {  // a higher one: on the right of my block's fold
      combine(l, op, partial.get(), incoming.get());
      copy_elements(l, incoming.get(), partial.get());
    }
  }
}

// Cost: ceil(log2 P) rounds; in round k a member sends its partial result to rank + 2^k.
double scan_doubling_cost(const CostShape& s, double m) {
  const int P = s.size();
  return rounds_cost(
      s, ceil_log2(P), [P](int i, int k) { return i + (1 << (k - 1)) < P ? i + (1 << (k - 1)) : -1; }, m);
}

}  // namespace gridrt::detail
