// Recursive-doubling all-reduce (MPICH's for short messages; Thakur, Rabenseifner, Gropp
// 2005), for any number of ranks: the ranks beyond the largest power of two first fold into
// a neighbour, the others exchange and combine with partner rank ^ mask for mask = 1, 2,
// 4, ..., then hand the result back. Operands are combined lower rank first, so a
// non-commutative operation gives the rank-order result. Flat: log2 n rounds, each may
// cross the WAN.
#include "algorithms.h"
#include "costs.h"
#include "trees.h"

namespace gridrt::detail {

namespace {
// One exchange with `peer`: `a` goes out packed, what comes back is unpacked into `b`.
Async<> exchange(CommImpl& c, int peer, int tag, const Layout& l, void* a, void* b, std::vector<char>& out, std::vector<char>& wire) {
  pack(l, a, out.data());
  std::vector<Step> steps;
  steps.push_back(receive_from(c, peer, tag, wire.data(), wire.size()));
  steps.push_back(send_to(c, peer, tag, out.data(), out.size()));
  co_await all(steps);
  unpack(l, wire.data(), b);
}
}  // namespace

Async<> allreduce_doubling(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op) {
  const int tag = c.next_tag();
  const trees::Doubling d(c.size());
  const int me = c.me;
  Scratch acc(l), in(l);
  void* a = acc.get();
  void* b = in.get();
  copy_elements(l, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, a);
  std::vector<char> out(l.packed), wire(l.packed);
  // Ranks beyond the largest power of two fold into a neighbour first (even -> odd).
  if (me < 2 * d.rem) {
    if (me % 2 == 0) {
      pack(l, a, out.data());
      co_await one(send_to(c, me + 1, tag, out.data(), out.size()));
    } else {
      co_await one(receive_from(c, me - 1, tag, wire.data(), wire.size()));
      unpack(l, wire.data(), b);
      combine(l, op, b, a);  // a = (me - 1) op me
    }
  }
  const int v = d.inner(me);
  if (v >= 0) {
    for (int mask = 1; mask < d.p2; mask <<= 1) {
      const int pv = v ^ mask;
      co_await exchange(c, d.outer(pv), tag, l, a, b, out, wire);
      if (pv < v) {
        combine(l, op, b, a);  // a = theirs op mine
      } else {
        combine(l, op, a, b);  // b = mine op theirs
        std::swap(a, b);
      }
    }
  }
  if (me < 2 * d.rem) {
    if (me % 2 == 1) {
      pack(l, a, out.data());
      co_await one(send_to(c, me - 1, tag, out.data(), out.size()));
    } else {
      co_await one(receive_from(c, me + 1, tag, wire.data(), wire.size()));
      unpack(l, wire.data(), a);
    }
  }
  copy_elements(l, a, recvbuf);
}

// Cost: recursive doubling, with the members beyond the largest power of two folded in
// before and handed the result after.
double allreduce_doubling_cost(const CostShape& s, double m) {
  const int P = s.size();
  int p2 = 1;
  while (p2 * 2 <= P) p2 *= 2;
  const int rem = P - p2;
  const double messages = 2.0 * rem + static_cast<double>(p2) * ceil_log2(p2);
  return played(s, messages, m, [&](auto& tl) {
    using Time = typename std::decay_t<decltype(tl)>::Time;
    std::vector<Time> ready(P, Time{});
    auto send = [&](int from, int to, Time t) { return tl.send(from, s.part_of[from], s.part_of[to], m, t, to); };
    for (int r = 0; r < 2 * rem; r += 2) ready[r + 1] = tl.latest(ready[r + 1], send(r, r + 1, Time{}));
    auto real = [&](int v) { return v < rem ? 2 * v + 1 : v + rem; };
    for (int mask = 1; mask < p2; mask <<= 1) {
      std::vector<Time> next = ready;
      for (int v = 0; v < p2; ++v) {
        const int a = real(v), b = real(v ^ mask);
        next[b] = tl.latest(next[b], send(a, b, ready[a]));
      }
      ready = next;
    }
    for (int r = 0; r < 2 * rem; r += 2) ready[r] = send(r + 1, r, ready[r + 1]);
    return latest_of(tl, ready);
  });
}

}  // namespace gridrt::detail
