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

#include "comm.h"
#include "trees.h"

namespace gridrt {
namespace detail {
namespace {

// How `count` elements of `type` lie in memory and how many bytes they pack into.
struct Layout {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  int count = 0;
  MPI_Aint extent = 0, true_lb = 0, true_extent = 0;
  std::size_t packed = 0;   // bytes of all `count` elements, packed
  bool contiguous = false;  // the elements lie back to back from the buffer's start, no gaps

  Layout(MPI_Datatype t, int n) : type(t), count(n) {
    if (t == MPI_DATATYPE_NULL) throw Error("gridrt: collective on MPI_DATATYPE_NULL");
    if (n < 0) throw Error("gridrt: collective with a negative count (" + std::to_string(n) + ")");
    MPI_Aint lb = 0;
    MPI_Type_get_extent(t, &lb, &extent);
    MPI_Type_get_true_extent(t, &true_lb, &true_extent);
    int size = 0;
    MPI_Type_size(t, &size);
    int bytes = 0;
    MPI_Pack_size(n, t, MPI_COMM_SELF, &bytes);
    packed = static_cast<std::size_t>(bytes);
    contiguous = lb == 0 && true_lb == 0 && size == extent && true_extent == extent &&
                 packed == static_cast<std::size_t>(size) * static_cast<std::size_t>(n);
  }
  std::size_t span() const { return count == 0 ? 0 : static_cast<std::size_t>(true_extent + (count - 1) * extent); }
};

void pack(const Layout& l, const void* buf, char* out) {
  if (l.contiguous) {
    if (l.packed) std::memcpy(out, buf, l.packed);
    return;
  }
  int pos = 0;
  MPI_Pack(buf, l.count, l.type, out, static_cast<int>(l.packed), &pos, MPI_COMM_SELF);
}
void unpack(const Layout& l, const char* in, void* buf) {
  if (l.contiguous) {
    if (l.packed) std::memcpy(buf, in, l.packed);
    return;
  }
  int pos = 0;
  MPI_Unpack(in, static_cast<int>(l.packed), &pos, buf, l.count, l.type, MPI_COMM_SELF);
}
std::vector<char> packed_copy(const Layout& l, const void* buf) {
  std::vector<char> out(l.packed);
  pack(l, buf, out.data());
  return out;
}

// A buffer laid out as `count` elements of the datatype (for partial results).
class Scratch {
 public:
  explicit Scratch(const Layout& l) : mem_(l.span()), base_(mem_.data() - l.true_lb) {}
  void* get() { return base_; }

 private:
  std::vector<char> mem_;
  char* base_;
};

void copy_elements(const Layout& l, const void* from, void* to) {
  if (from == to) return;
  const std::vector<char> p = packed_copy(l, from);
  unpack(l, p.data(), to);
}

bool commutative(MPI_Op op) {
  int c = 0;
  MPI_Op_commutative(op, &c);
  return c != 0;
}

void wait_local(MPI_Request& r) { wait_mpi(&r, MPI_STATUS_IGNORE); }

int local_size(const CommImpl& c) { return static_cast<int>(c.parts[c.my_part()].size()); }

// result = earlier op later, in place of `later` (MPI_Reduce_local's inoutbuf is the right operand).
void combine(const Layout& l, MPI_Op op, const void* earlier, void* later) {
  if (l.count) MPI_Reduce_local(earlier, later, l.count, l.type, op);
}

// Folds the packed values of all parts in part order (= rank order when the parts are
// contiguous) into `result`, whose current content is part `mine`'s value.
void fold_parts(const Layout& l, MPI_Op op, int mine, std::vector<std::vector<char>>& packed, void* result) {
  Scratch acc(l), next(l);
  void* a = acc.get();
  void* b = next.get();
  for (std::size_t p = 0; p < packed.size(); ++p) {
    void* value = p == 0 ? a : b;
    if (static_cast<int>(p) == mine) copy_elements(l, result, value);
    else unpack(l, packed[p].data(), value);
    if (p > 0) {
      combine(l, op, a, b);  // b = a op b
      std::swap(a, b);
    }
  }
  copy_elements(l, a, result);
}

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

// ------------------------------------------------------------------ allgather

void allgather_hier(CommImpl& c, const void* sendbuf, void* recvbuf, const Layout& l) {
  const int tag = c.next_tag();
  const int n = c.size();
  const std::size_t block = l.packed;
  // This member's contribution, packed (in place: it is at its place in recvbuf).
  const void* contribution = sendbuf == MPI_IN_PLACE ? static_cast<char*>(recvbuf) + c.me * l.count * l.extent : sendbuf;
  const std::vector<char> mine = packed_copy(l, contribution);
  std::vector<char> all(block * n);
  // 1. Each cluster gathers its blocks at its leader (in the part's order).
  const auto& part = c.parts[c.my_part()];
  std::vector<char> part_blocks(block * part.size());
  if (local_size(c) > 1) {
    MPI_Request r;
    MPI_Igather(mine.data(), static_cast<int>(block), MPI_BYTE, part_blocks.data(), static_cast<int>(block), MPI_BYTE, 0, c.local, &r);
    wait_local(r);
  } else if (block) {
    std::memcpy(part_blocks.data(), mine.data(), block);
  }
  // 2. Leaders send their cluster's blocks to every other leader (one WAN hop) and put
  //    every block at its member's place.
  if (c.is_leader()) {
    std::vector<std::vector<char>> from(c.parts.size());
    std::vector<Step> steps;
    for (std::size_t p = 0; p < c.parts.size(); ++p) {
      if (static_cast<int>(p) == c.my_part()) continue;
      from[p].resize(block * c.parts[p].size());
      steps.push_back(receive_from(c, c.leader(static_cast<int>(p)), tag, from[p].data(), from[p].size()));
      steps.push_back(send_to(c, c.leader(static_cast<int>(p)), tag, part_blocks.data(), part_blocks.size()));
    }
    wait_steps(steps);
    from[c.my_part()] = std::move(part_blocks);
    for (std::size_t p = 0; p < c.parts.size(); ++p)
      for (std::size_t i = 0; i < c.parts[p].size() && block; ++i)
        std::memcpy(all.data() + block * c.parts[p][i], from[p].data() + block * i, block);
  }
  // 3. Each leader hands the whole to its cluster.
  if (local_size(c) > 1 && !all.empty()) {
    MPI_Request r;
    MPI_Ibcast(all.data(), static_cast<int>(all.size()), MPI_BYTE, 0, c.local, &r);
    wait_local(r);
  }
  const Layout whole(l.type, l.count * n);
  unpack(whole, all.data(), recvbuf);
}

void allgather_flat(CommImpl& c, const void* sendbuf, void* recvbuf, const Layout& l) {
  const int tag = c.next_tag();
  const int n = c.size();
  const std::size_t block = l.packed;
  std::vector<char> all(block * n);
  const void* contribution = sendbuf == MPI_IN_PLACE ? static_cast<char*>(recvbuf) + c.me * l.count * l.extent : sendbuf;
  pack(l, contribution, all.data() + block * c.me);
  // Ring: in step k, pass on the block received in step k - 1 (MPICH's long-message allgather).
  const int right = (c.me + 1) % n, left = (c.me - 1 + n) % n;
  for (int k = 0; k < n - 1; ++k) {
    const int send_block = (c.me - k + n) % n, recv_block = (c.me - k - 1 + n) % n;
    std::vector<Step> steps;
    steps.push_back(receive_from(c, left, tag, all.data() + block * recv_block, block));
    steps.push_back(send_to(c, right, tag, all.data() + block * send_block, block));
    wait_steps(steps);
  }
  const Layout whole(l.type, l.count * n);
  unpack(whole, all.data(), recvbuf);
}

// What an Algo means for one call. Hierarchical reductions need the clusters' members to
// be runs of consecutive ranks when the operation is not commutative (they fold clusters
// in order); otherwise the flat algorithm, which keeps rank order, is used.
Algo choose(Algo asked, const CommImpl& c, bool order_sensitive = false) {
  Algo a = asked == Algo::kDefault ? state().algo : asked;
  if (a == Algo::kAuto) a = Algo::kHier;  // until calibrated models choose (docs/algorithms.md)
  if (a == Algo::kHier && order_sensitive && !c.parts_contiguous) a = Algo::kFlat;
  return a;
}

void check_root(const CommImpl& c, int root) {
  if (root < 0 || root >= c.size())
    throw Error("gridrt: root " + std::to_string(root) + " is not a rank of the communicator (size " + std::to_string(c.size()) + ")");
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

void Comm::allgather(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, Algo algo) const {
  detail::CommImpl& c = impl();
  const Layout l(type, count);
  if (choose(algo, c) == Algo::kFlat) detail::allgather_flat(c, sendbuf, recvbuf, l);
  else detail::allgather_hier(c, sendbuf, recvbuf, l);
}

}  // namespace gridrt
