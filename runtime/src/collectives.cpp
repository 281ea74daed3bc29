// Collectives over grid communicators, two algorithms each (docs/algorithms.md):
//
// hierarchical (seed 001 §3.2 and Figure 3; MagPIe's rule): at most one WAN hop on any path
//   and each piece of data enters a site, and a cluster, once (levels: site, cluster, then
//   MPICH inside the cluster); the steps inside a cluster are MPICH non-blocking collectives
//   on the communicator's cluster part, waited on under the wait policy (design.md,
//   "Waiting and progress"); large broadcasts and reductions are cut into slices pipelined
//   across the levels (seed 001 §4.2: slices for messages >= 64 kB).
// This file: barrier, bcast, reduce, allreduce; exchange.cpp: the data-moving ones.
// flat: what a plain MPI does over all processes, unaware of the topology (binomial tree,
//   recursive doubling, ring, dissemination), over the same transport: the baseline.
//
// Data crosses clusters packed (MPI_Pack), so any datatype works; reductions run on buffers
// laid out as the datatype (MPI_Reduce_local), folding partial results in rank order, so a
// non-commutative operation gives the rank-order result.
#include <algorithm>
#include <cstring>
#include <optional>

#include "cluster_steps.h"
#include "trees.h"

namespace gridrt {
namespace detail {
namespace {

// ------------------------------------------------------------------ barrier

void barrier_hier(CommImpl& c) {
  const int tag = c.next_tag();
  if (c.parts.size() == 1) return cluster_barrier(c);
  wait_step(cluster_arrive(c));
  // Leaders meet: within each site at its head, then heads tell each other they arrived (one
  // WAN hop: all-to-all among heads, rather than gathering at one and answering, which would
  // cross the WAN twice in a row), then heads release their site.
  if (c.is_leader()) {
    const int p = c.my_part(), site = c.site_of_part[p];
    char token = 0;
    std::vector<char> in(c.parts.size());
    if (!c.is_site_head(p)) {
      const int head = c.leader(c.site_head(site));
      wait_step(send_to(c, head, tag, &token, 1));
      wait_step(receive_from(c, head, tag, &token, 1));
    } else {
      const std::vector<int> mates = c.site_mates(p);
      std::vector<Step> steps;
      for (int q : mates) steps.push_back(receive_from(c, c.leader(q), tag, &in[q], 1));
      wait_steps(steps);
      steps.clear();
      for (int t : c.other_sites(p)) {
        const int head = c.site_head(t);
        steps.push_back(receive_from(c, c.leader(head), tag, &in[head], 1));
        steps.push_back(send_to(c, c.leader(head), tag, &token, 1));
      }
      wait_steps(steps);
      steps.clear();
      for (int q : mates) steps.push_back(send_to(c, c.leader(q), tag, &token, 1));
      wait_steps(steps);
    }
  }
  wait_step(cluster_release(c));
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
  if (l.packed > static_cast<std::size_t>(INT32_MAX)) throw Error("gridrt: a broadcast is limited to 2 GiB");
  const Layout bytes(MPI_BYTE, static_cast<int>(l.packed));
  const Slices sl(bytes);
  const int slices = l.packed ? sl.n : 0;  // nothing to send for no data
  const int root_part = c.part_of[root], p = c.my_part();
  std::vector<Step> steps;
  // The data goes down a tree over the clusters that enters every site once: the root's
  // entry sends each slice to its site's other clusters and to the head of every other site
  // (one WAN hop), a head to its site's other clusters; each slice goes on as soon as it is
  // here, and into the cluster (MPI_Ibcast from its entry) while the next one crosses.
  const bool is_entry = c.me == c.entry(p, root);
  const bool from_relays = is_entry && p != root_part;
  const std::vector<int> onward = is_entry ? c.downstream(p, root_part) : std::vector<int>{};
  std::vector<Step> arrivals;
  if (from_relays)
    for (int k = 0; k < slices; ++k)
      arrivals.push_back(receive_from(c, c.entry(c.upstream(p, root_part), root), tag, sl.at(data, k), sl.count(k)));
  const int local_root = c.index_in_part[c.entry(p, root)];
  for (int k = 0; k < slices; ++k) {
    if (from_relays) wait_step_amid(arrivals[k], steps);
    for (int q : onward) steps.push_back(send_to(c, c.leader(q), tag, sl.at(data, k), sl.count(k)));
    if (local_size(c) > 1) steps.push_back(cluster_bcast(c, sl.at(data, k), sl.count(k), MPI_BYTE, local_root));
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
  const int root_part = c.part_of[root], p = c.my_part();
  const bool is_entry = c.me == c.entry(p, root);
  const Slices sl(l);
  std::optional<Scratch> partial;  // at the other clusters' entries
  if (is_entry && c.me != root) partial.emplace(l);
  void* target = c.me == root ? recvbuf : partial ? partial->get() : nullptr;
  // 1. Each cluster reduces every slice to its entry (the root in the root's cluster, the
  //    leader elsewhere), all slices at once.
  std::vector<Step> local(sl.n);
  if (local_size(c) > 1) {
    const int local_root = c.index_in_part[c.entry(p, root)];
    for (int k = 0; k < sl.n; ++k)
      local[k] = cluster_reduce(c, in_place ? MPI_IN_PLACE : sl.at(sendbuf, k), is_entry ? sl.at(target, k) : nullptr, sl.layout(k), op, local_root);
  } else {
    if (!in_place) copy_elements(l, sendbuf, target);
    for (auto& s : local) s.done = true;
  }
  if (!is_entry || c.parts.size() == 1) return wait_steps(local);
  // 2. Up the tree that enters every site once (bcast's, reversed), slice by slice: a site's
  //    head folds its site's partial results, the root the rest; a slice goes up as soon as
  //    it is folded, while the next is still being reduced or crossing.
  const std::vector<int> below = c.downstream(p, root_part);
  std::vector<std::vector<std::vector<char>>> from(sl.n, std::vector<std::vector<char>>(c.parts.size()));
  std::vector<std::vector<Step>> arrivals(sl.n);
  for (int k = 0; k < sl.n; ++k)
    for (int q : below) {
      from[k][q].resize(sl.layout(k).packed);
      arrivals[k].push_back(receive_from(c, c.leader(q), tag, from[k][q].data(), from[k][q].size()));
    }
  std::vector<std::vector<char>> up(sl.n);
  std::vector<Step> sends;
  const std::vector<int> order = with_part(below, p);
  for (int k = 0; k < sl.n; ++k) {
    arrivals[k].push_back(local[k]);
    wait_steps(arrivals[k]);
    const Layout lk = sl.layout(k);
    fold_parts(lk, op, order, p, from[k], sl.at(target, k));
    if (c.me == root) continue;
    up[k] = packed_copy(lk, sl.at(target, k));
    sends.push_back(send_to(c, c.entry(c.upstream(p, root_part), root), tag, up[k].data(), up[k].size()));
  }
  wait_steps(sends);
}

void reduce_flat(CommImpl& c, const void* sendbuf, void* recvbuf, const Layout& l, MPI_Op op, int root) {
  const int tag = c.next_tag();
  const int n = c.size();
  // A binomial tree, as MPICH's reduce: rooted at the root (relative ranks) for a
  // commutative operation; for a non-commutative one rooted at rank 0, not rotated, so that
  // every subtree is a run of consecutive ranks and folding children in order keeps rank
  // order, rank 0 then handing the result to the root.
  const int top = commutative(op) ? root : 0;
  const int rel = (c.me - top + n) % n;
  auto real = [&](int r) { return (r + top) % n; };
  Scratch acc(l), in(l);
  void* a = acc.get();
  void* b = in.get();
  copy_elements(l, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, a);
  std::vector<char> wire(l.packed);
  for (int child : trees::binomial_children(rel, n)) {
    wait_step(receive_from(c, real(child), tag, wire.data(), wire.size()));
    unpack(l, wire.data(), b);
    combine(l, op, a, b);  // b = a op b: a holds the lower (relative) ranks
    std::swap(a, b);
  }
  if (rel != 0) {
    pack(l, a, wire.data());
    wait_step(send_to(c, real(trees::binomial_parent(rel)), tag, wire.data(), wire.size()));
  } else if (top != root) {
    pack(l, a, wire.data());
    wait_step(send_to(c, root, tag, wire.data(), wire.size()));
  } else {
    copy_elements(l, a, recvbuf);
  }
  if (c.me == root && top != root) {
    wait_step(receive_from(c, top, tag, wire.data(), wire.size()));
    unpack(l, wire.data(), recvbuf);
  }
}

// ------------------------------------------------------------------ allreduce

void allreduce_hier(CommImpl& c, const void* sendbuf, void* recvbuf, const Layout& l, MPI_Op op) {
  const int tag = c.next_tag();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (c.parts.size() == 1) return wait_step(cluster_allreduce(c, sendbuf, recvbuf, l, op));
  const Slices sl(l);
  const bool many = local_size(c) > 1;
  // In place, a member's contribution is in recvbuf, which the result will overwrite while
  // later slices are still being reduced: it is put aside first.
  std::optional<Scratch> aside;
  const void* input = sendbuf;
  if (in_place && !c.is_leader()) {
    aside.emplace(l);
    copy_elements(l, recvbuf, aside->get());
    input = aside->get();
  }
  // 1. Each cluster reduces every slice to its leader, all slices at once.
  std::vector<Step> local(sl.n);
  for (int k = 0; k < sl.n; ++k) {
    if (!many) {
      local[k].done = true;
      continue;
    }
    local[k] = cluster_reduce(c, in_place && c.is_leader() ? MPI_IN_PLACE : sl.at(input, k), c.is_leader() ? sl.at(recvbuf, k) : nullptr,
                              sl.layout(k), op, 0);
  }
  if (!many && !in_place) copy_elements(l, sendbuf, recvbuf);
  std::vector<Step> steps;  // sends and the broadcasts inside the cluster, waited at the end
  if (c.is_leader()) {
    const int p = c.my_part(), head = c.site_head(c.site_of_part[p]);
    const std::vector<int> in_site = c.site_mates(p);
    std::vector<int> heads;  // of the other sites (used at this site's head)
    for (int t : c.other_sites(p)) heads.push_back(c.site_head(t));
    std::vector<std::vector<std::vector<char>>> from(sl.n, std::vector<std::vector<char>>(c.parts.size()));
    std::vector<std::vector<char>> out(sl.n), result(sl.n);
    std::vector<std::vector<Step>> site_in(sl.n), heads_in(sl.n), back(sl.n);
    // Every receive is posted at once; slices then flow through the stages one after the other.
    for (int k = 0; k < sl.n; ++k) {
      const std::size_t bytes = sl.layout(k).packed;
      if (p != head) {
        result[k].resize(bytes);
        back[k].push_back(receive_from(c, c.leader(head), tag, result[k].data(), bytes));
        continue;
      }
      for (int q : in_site) {
        from[k][q].resize(bytes);
        site_in[k].push_back(receive_from(c, c.leader(q), tag, from[k][q].data(), bytes));
      }
      for (int q : heads) {
        from[k][q].resize(bytes);
        heads_in[k].push_back(receive_from(c, c.leader(q), tag, from[k][q].data(), bytes));
      }
    }
    // Going out: each slice's partial result leaves as soon as it is ready, without
    // waiting for the previous slice's answers (so the slices cross the WAN together).
    for (int k = 0; k < sl.n; ++k) {
      const Layout lk = sl.layout(k);
      void* slice = sl.at(recvbuf, k);
      wait_step_amid(local[k], steps);
      if (p == head) {
        wait_steps_amid(site_in[k], steps);
        fold_parts(lk, op, with_part(in_site, p), p, from[k], slice);
      }
      // 2. A site's clusters hand their partial result to the site's head; 3. heads send
      //    their site's to every other head (one WAN hop) ...
      out[k] = packed_copy(lk, slice);
      if (p != head) steps.push_back(send_to(c, c.leader(head), tag, out[k].data(), out[k].size()));
      else
        for (int q : heads) steps.push_back(send_to(c, c.leader(q), tag, out[k].data(), out[k].size()));
    }
    // Coming back: each slice as soon as its answers are here.
    for (int k = 0; k < sl.n; ++k) {
      const Layout lk = sl.layout(k);
      void* slice = sl.at(recvbuf, k);
      if (p != head) {
        wait_steps_amid(back[k], steps);
        unpack(lk, result[k].data(), slice);
      } else {
        // ... and each folds all of them in order: the same operands in the same order
        // everywhere, the same bits, floating point included; then hands the result back
        // to its site's clusters.
        wait_steps_amid(heads_in[k], steps);
        fold_parts(lk, op, with_part(heads, p), p, from[k], slice);
        result[k] = packed_copy(lk, slice);
        for (int q : in_site) steps.push_back(send_to(c, c.leader(q), tag, result[k].data(), result[k].size()));
      }
      // 4. Each leader hands the slice to its cluster.
      if (many) steps.push_back(cluster_bcast(c, slice, sl.count(k), l.type, 0));
    }
    wait_steps(steps);
    return;
  }
  for (int k = 0; k < sl.n; ++k) steps.push_back(cluster_bcast(c, sl.at(recvbuf, k), sl.count(k), l.type, 0));
  steps.insert(steps.end(), local.begin(), local.end());
  wait_steps(steps);
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
  if (choose(algo, c, detail::Coll::kBarrier, 0) == Algo::kFlat) detail::barrier_flat(c);
  else detail::barrier_hier(c);
}

void Comm::bcast(void* buf, int count, MPI_Datatype type, int root, Algo algo) const {
  detail::CommImpl& c = impl();
  detail::check_root(c, root);
  const Layout l(type, count);
  if (choose(algo, c, detail::Coll::kBcast, l.packed) == Algo::kFlat) detail::bcast_flat(c, buf, l, root);
  else detail::bcast_hier(c, buf, l, root);
}

void Comm::reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, Algo algo) const {
  detail::CommImpl& c = impl();
  detail::check_rooted(c, root, sendbuf, "reduce");
  const Layout l(type, count);
  if (choose(algo, c, detail::Coll::kReduce, l.packed, !detail::commutative(op)) == Algo::kFlat) detail::reduce_flat(c, sendbuf, recvbuf, l, op, root);
  else detail::reduce_hier(c, sendbuf, recvbuf, l, op, root);
}

void Comm::allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo) const {
  detail::CommImpl& c = impl();
  const Layout l(type, count);
  if (choose(algo, c, detail::Coll::kAllreduce, l.packed, !detail::commutative(op)) == Algo::kFlat) detail::allreduce_flat(c, sendbuf, recvbuf, l, op);
  else detail::allreduce_hier(c, sendbuf, recvbuf, l, op);
}

}  // namespace gridrt
