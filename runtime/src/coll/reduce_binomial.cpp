// Binomial-tree reduction (MPICH's for short messages): rooted at the root (relative ranks)
// for a commutative operation; for a non-commutative one rooted at rank 0, not rotated, so
// that every subtree is a run of consecutive ranks and folding children in order keeps rank
// order, rank 0 then handing the result to the root. Flat: log2 n rounds, each may cross
// the WAN.
#include "algorithms.h"
#include "costs.h"
#include "trees.h"

namespace gridrt::detail {

Async<> reduce_binomial(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, int root) {
  const int tag = c.next_tag();
  const int n = c.size();
  const int top = commutative(op) ? root : 0;
  const int rel = (c.me - top + n) % n;
  auto real = [&](int r) { return (r + top) % n; };
  Scratch acc(l), in(l);
  void* a = acc.get();
  void* b = in.get();
  copy_elements(l, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, a);
  std::vector<char> wire(l.packed);
  for (int child : trees::binomial_children(rel, n)) {
    co_await one(receive_from(c, real(child), tag, wire.data(), wire.size()));
    unpack(l, wire.data(), b);
    combine(l, op, a, b);  // b = a op b: a holds the lower (relative) ranks
    std::swap(a, b);
  }
  if (rel != 0) {
    pack(l, a, wire.data());
    co_await one(send_to(c, real(trees::binomial_parent(rel)), tag, wire.data(), wire.size()));
  } else if (top != root) {
    pack(l, a, wire.data());
    co_await one(send_to(c, root, tag, wire.data(), wire.size()));
  } else {
    copy_elements(l, a, recvbuf);
  }
  if (c.me == root && top != root) {
    co_await one(receive_from(c, top, tag, wire.data(), wire.size()));
    unpack(l, wire.data(), recvbuf);
  }
}

// Cost: MPICH's binomial tree towards the root (relative ranks): a member sends to its
// parent once its children's partial results are in, and receives them one after the
// other (a rendezvous's rest waits for its receive).
double reduce_binomial_cost(const CostShape& s, int root, double m) {
  return binomial_up_cost(
      s, root, [m](int) { return m; }, true);
}

}  // namespace gridrt::detail
