// Collectives over grid communicators, two algorithms each (docs/algorithms.md):
//
// hierarchical (seed 001 §3.2 and Figure 3; MagPIe's rule): at most one WAN hop on any path
//   and each piece of data enters a cluster once; the steps inside a cluster are MPICH
//   non-blocking collectives on the communicator's cluster part, waited on under the wait
//   policy (design.md, "Waiting and progress"); large broadcasts are cut into slices that
//   are pipelined across the two levels (seed 001 §4.2: slices for messages >= 64 kB).
// flat: what a plain MPI does over all processes, unaware of the topology (binomial tree,
//   recursive doubling, ring, dissemination), over the same transport: the baseline.
//
// Data crosses clusters packed (MPI_Pack), so any datatype works; reductions run on buffers
// laid out as the datatype (MPI_Reduce_local), folding partial results in rank order, so a
// non-commutative operation gives the rank-order result.
#include <cstring>

#include "coll_support.h"
#include "trees.h"

namespace gridrt {
namespace detail {
namespace {

// ------------------------------------------------------------------ barrier

void barrier_hier(CommImpl& c) {
  const int tag = c.next_tag();
  MPI_Request r;
  MPI_Ibarrier(c.local, &r);
  wait_local(r);
  if (c.parts.size() == 1) return;
  // Leaders tell each other they arrived (one WAN hop: all-to-all among leaders, rather than
  // gathering at one leader and answering, which would cross the WAN twice in a row).
  if (c.is_leader()) {
    char out = 0;
    std::vector<char> in(c.parts.size());
    std::vector<Step> steps;
    for (std::size_t p = 0; p < c.parts.size(); ++p) {
      if (static_cast<int>(p) == c.my_part()) continue;
      steps.push_back(receive_from(c, c.leader(static_cast<int>(p)), tag, &in[p], 1));
      steps.push_back(send_to(c, c.leader(static_cast<int>(p)), tag, &out, 1));
    }
    wait_steps(steps);
  }
  MPI_Ibarrier(c.local, &r);
  wait_local(r);
}

void barrier_flat(CommImpl& c) {
  const int tag = c.next_tag();
  const int n = c.size();
  char out = 0, in = 0;
  for (int d : trees::dissemination_distances(n)) {
    std::vector<Step> steps;
    steps.push_back(receive_from(c, (c.me - d + n) % n, tag, &in, 1));
    steps.push_back(send_to(c, (c.me + d) % n, tag, &out, 1));
    wait_steps(steps);
  }
}

// ------------------------------------------------------------------ bcast

void bcast_hier(CommImpl& c, void* buf, const Layout& l, int root) {
  const int tag = c.next_tag();
  std::vector<char> packed;
  char* data = static_cast<char*>(buf);
  if (!l.contiguous) {
    packed.resize(l.packed);
    data = packed.data();
    if (c.me == root) pack(l, buf, data);
  }
  const std::size_t total = l.packed, slice = state().slice;
  const std::size_t slices = (total + slice - 1) / slice;
  auto slice_at = [&](std::size_t k) { return std::make_pair(data + k * slice, std::min(slice, total - k * slice)); };
  const int root_part = c.part_of[root];
  std::vector<Step> steps;
  // The root sends every slice straight to the leader of every other cluster: one WAN hop.
  if (c.me == root)
    for (std::size_t p = 0; p < c.parts.size(); ++p)
      if (static_cast<int>(p) != root_part)
        for (std::size_t k = 0; k < slices; ++k) {
          auto [at, n] = slice_at(k);
          steps.push_back(send_to(c, c.leader(static_cast<int>(p)), tag, at, n));
        }
  const bool from_wan = c.my_part() != root_part && c.is_leader();
  std::vector<Step> arrivals;
  if (from_wan)
    for (std::size_t k = 0; k < slices; ++k) {
      auto [at, n] = slice_at(k);
      arrivals.push_back(receive_from(c, root, tag, at, n));
    }
  // Each slice goes on inside the cluster as soon as it is here, while the next crosses.
  if (local_size(c) > 1) {
    const int local_root = c.my_part() == root_part ? c.index_in_part[root] : 0;
    for (std::size_t k = 0; k < slices; ++k) {
      if (from_wan) wait_step_amid(arrivals[k], steps);
      auto [at, n] = slice_at(k);
      MPI_Request r;
      MPI_Ibcast(at, static_cast<int>(n), MPI_BYTE, local_root, c.local, &r);
      steps.push_back(local_step(r));
    }
  } else {
    wait_steps(arrivals);
  }
  wait_steps(steps);
  if (!l.contiguous && c.me != root) unpack(l, data, buf);
}

void bcast_flat(CommImpl& c, void* buf, const Layout& l, int root) {
  const int tag = c.next_tag();
  const int n = c.size();
  std::vector<char> data(l.packed);
  if (c.me == root) pack(l, buf, data.data());
  const int rel = (c.me - root + n) % n;
  auto real = [&](int r) { return (r + root) % n; };
  if (rel != 0) wait_step(receive_from(c, real(trees::binomial_parent(rel)), tag, data.data(), data.size()));
  std::vector<Step> steps;
  for (int child : trees::binomial_children(rel, n)) steps.push_back(send_to(c, real(child), tag, data.data(), data.size()));
  wait_steps(steps);
  if (c.me != root) unpack(l, data.data(), buf);
}

// ------------------------------------------------------------------ reduce

void reduce_hier(CommImpl& c, const void* sendbuf, void* recvbuf, const Layout& l, MPI_Op op, int root) {
  const int tag = c.next_tag();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const int root_part = c.part_of[root];
  // 1. Each cluster reduces to its entry: the root in the root's cluster, the leader elsewhere.
  const bool entry = c.me == root || (c.my_part() != root_part && c.is_leader());
  Scratch partial(l);
  void* target = c.me == root ? recvbuf : partial.get();
  if (local_size(c) > 1) {
    const int local_root = c.my_part() == root_part ? c.index_in_part[root] : 0;
    MPI_Request r;
    MPI_Ireduce(in_place ? MPI_IN_PLACE : sendbuf, entry ? target : nullptr, l.count, l.type, op, local_root, c.local, &r);
    wait_local(r);
  } else if (!in_place) {
    copy_elements(l, sendbuf, target);
  }
  if (c.parts.size() == 1) return;
  // 2. Every other cluster's entry sends its partial result to the root: one WAN hop.
  if (entry && c.me != root) {
    const std::vector<char> p = packed_copy(l, partial.get());
    wait_step(send_to(c, root, tag, p.data(), p.size()));
    return;
  }
  if (c.me != root) return;
  // 3. The root folds the clusters' partial results in cluster (= rank) order.
  std::vector<std::vector<char>> packed(c.parts.size());
  std::vector<Step> steps;
  for (std::size_t p = 0; p < c.parts.size(); ++p) {
    if (static_cast<int>(p) == root_part) continue;
    packed[p].resize(l.packed);
    steps.push_back(receive_from(c, c.leader(static_cast<int>(p)), tag, packed[p].data(), l.packed));
  }
  wait_steps(steps);
  fold_parts(l, op, root_part, packed, recvbuf);
}

void reduce_flat(CommImpl& c, const void* sendbuf, void* recvbuf, const Layout& l, MPI_Op op, int root) {
  const int tag = c.next_tag();
  const int n = c.size();
  // A binomial tree to rank 0, not rotated to the root: every subtree is a run of
  // consecutive ranks, so folding children in order keeps rank order; rank 0 then hands
  // the result to the root (as MPICH does for non-commutative operations).
  Scratch acc(l), in(l);
  void* a = acc.get();
  void* b = in.get();
  copy_elements(l, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, a);
  std::vector<char> wire(l.packed);
  for (int child : trees::binomial_children(c.me, n)) {
    wait_step(receive_from(c, child, tag, wire.data(), wire.size()));
    unpack(l, wire.data(), b);
    combine(l, op, a, b);  // b = a op b: a holds the lower ranks
    std::swap(a, b);
  }
  if (c.me != 0) {
    pack(l, a, wire.data());
    wait_step(send_to(c, trees::binomial_parent(c.me), tag, wire.data(), wire.size()));
  } else if (root != 0) {
    pack(l, a, wire.data());
    wait_step(send_to(c, root, tag, wire.data(), wire.size()));
  } else {
    copy_elements(l, a, recvbuf);
  }
  if (c.me == root && root != 0) {
    wait_step(receive_from(c, 0, tag, wire.data(), wire.size()));
    unpack(l, wire.data(), recvbuf);
  }
}

// ------------------------------------------------------------------ allreduce

void allreduce_hier(CommImpl& c, const void* sendbuf, void* recvbuf, const Layout& l, MPI_Op op) {
  const int tag = c.next_tag();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (c.parts.size() == 1) {
    MPI_Request r;
    MPI_Iallreduce(in_place ? MPI_IN_PLACE : sendbuf, recvbuf, l.count, l.type, op, c.local, &r);
    return wait_local(r);
  }
  // 1. Each cluster reduces to its leader.
  if (local_size(c) > 1) {
    MPI_Request r;
    const void* input = in_place ? (c.is_leader() ? MPI_IN_PLACE : recvbuf) : sendbuf;
    MPI_Ireduce(input, c.is_leader() ? recvbuf : nullptr, l.count, l.type, op, 0, c.local, &r);
    wait_local(r);
  } else if (!in_place) {
    copy_elements(l, sendbuf, recvbuf);
  }
  // 2. Leaders send their partial result to every other leader (one WAN hop) and each folds
  //    all of them in cluster order: the same operands in the same order, the same result.
  if (c.is_leader()) {
    const std::vector<char> mine = packed_copy(l, recvbuf);
    std::vector<std::vector<char>> packed(c.parts.size());
    std::vector<Step> steps;
    for (std::size_t p = 0; p < c.parts.size(); ++p) {
      if (static_cast<int>(p) == c.my_part()) continue;
      packed[p].resize(l.packed);
      steps.push_back(receive_from(c, c.leader(static_cast<int>(p)), tag, packed[p].data(), l.packed));
      steps.push_back(send_to(c, c.leader(static_cast<int>(p)), tag, mine.data(), mine.size()));
    }
    wait_steps(steps);
    fold_parts(l, op, c.my_part(), packed, recvbuf);
  }
  // 3. Each leader hands the result to its cluster.
  if (local_size(c) > 1) {
    MPI_Request r;
    MPI_Ibcast(recvbuf, l.count, l.type, 0, c.local, &r);
    wait_local(r);
  }
}

void allreduce_flat(CommImpl& c, const void* sendbuf, void* recvbuf, const Layout& l, MPI_Op op) {
  const int tag = c.next_tag();
  const trees::Doubling d(c.size());
  const int me = c.me;
  Scratch acc(l), in(l);
  void* a = acc.get();
  void* b = in.get();
  copy_elements(l, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, a);
  std::vector<char> out(l.packed), wire(l.packed);
  auto exchange = [&](int peer) {
    pack(l, a, out.data());
    std::vector<Step> steps;
    steps.push_back(receive_from(c, peer, tag, wire.data(), wire.size()));
    steps.push_back(send_to(c, peer, tag, out.data(), out.size()));
    wait_steps(steps);
    unpack(l, wire.data(), b);
  };
  // Ranks beyond the largest power of two fold into a neighbour first (even -> odd).
  if (me < 2 * d.rem) {
    if (me % 2 == 0) {
      pack(l, a, out.data());
      wait_step(send_to(c, me + 1, tag, out.data(), out.size()));
    } else {
      wait_step(receive_from(c, me - 1, tag, wire.data(), wire.size()));
      unpack(l, wire.data(), b);
      combine(l, op, b, a);  // a = (me - 1) op me
    }
  }
  const int v = d.inner(me);
  if (v >= 0) {
    for (int mask = 1; mask < d.p2; mask <<= 1) {
      const int pv = v ^ mask;
      exchange(d.outer(pv));
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
      wait_step(send_to(c, me - 1, tag, out.data(), out.size()));
    } else {
      wait_step(receive_from(c, me + 1, tag, wire.data(), wire.size()));
      unpack(l, wire.data(), a);
    }
  }
  copy_elements(l, a, recvbuf);
}

}  // namespace
}  // namespace detail

using detail::choose;
using detail::Layout;

void Comm::barrier(Algo algo) const {
  detail::CommImpl& c = impl();
  if (choose(algo, c) == Algo::kFlat) detail::barrier_flat(c);
  else detail::barrier_hier(c);
}

void Comm::bcast(void* buf, int count, MPI_Datatype type, int root, Algo algo) const {
  detail::CommImpl& c = impl();
  detail::check_root(c, root);
  const Layout l(type, count);
  if (choose(algo, c) == Algo::kFlat) detail::bcast_flat(c, buf, l, root);
  else detail::bcast_hier(c, buf, l, root);
}

void Comm::reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, Algo algo) const {
  detail::CommImpl& c = impl();
  detail::check_root(c, root);
  if (sendbuf == MPI_IN_PLACE && c.me != root) throw Error("gridrt: reduce: MPI_IN_PLACE is for the root only");
  const Layout l(type, count);
  if (choose(algo, c, !detail::commutative(op)) == Algo::kFlat) detail::reduce_flat(c, sendbuf, recvbuf, l, op, root);
  else detail::reduce_hier(c, sendbuf, recvbuf, l, op, root);
}

void Comm::allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo) const {
  detail::CommImpl& c = impl();
  const Layout l(type, count);
  if (choose(algo, c, !detail::commutative(op)) == Algo::kFlat) detail::allreduce_flat(c, sendbuf, recvbuf, l, op);
  else detail::allreduce_hier(c, sendbuf, recvbuf, l, op);
}

}  // namespace gridrt
