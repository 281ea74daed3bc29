// The entry points of the collectives (collectives.h): arguments checked at once, the
// algorithm chosen (choice.h), everything the algorithm keeps across its waits handed to it
// by value. The algorithms are one per file (algorithms.h).
#include "collectives.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "algorithms.h"
#include "intercomm.h"

namespace gridrt::detail {

namespace {
// The blocks of an intercommunicator's all-to-all, one per member of the remote group:
// `count` elements of `type` each, one after the other (alltoall), or as the v and w forms
// give them (`types` one for all unless `per_block`, which also puts displacements in bytes).
std::vector<inter::Piece> pieces(const CommImpl& c, const void* buf, const int* counts, const int* displs, const MPI_Datatype* types,
                                 bool per_block) {
  if (buf == MPI_IN_PLACE) throw ArgumentError("gridrt: alltoall: MPI_IN_PLACE is not allowed on an intercommunicator", MPI_ERR_BUFFER);
  const int n = c.remote->size();
  if (!counts || !displs || !types) throw ArgumentError("gridrt: alltoall: counts, displacements and datatypes are needed", MPI_ERR_ARG);
  std::vector<inter::Piece> out(n);
  for (int i = 0; i < n; ++i) {
    if (counts[i] < 0) throw ArgumentError("gridrt: alltoall: a negative count", MPI_ERR_COUNT);
    const Layout l(per_block ? types[i] : types[0], counts[i]);
    const MPI_Aint offset = per_block ? displs[i] : displs[i] * l.extent;
    out[i] = {static_cast<char*>(const_cast<void*>(buf)) + offset, l, true};
  }
  return out;
}
std::vector<inter::Piece> pieces(const CommImpl& c, const void* buf, int count, MPI_Datatype type) {
  std::vector<int> counts(c.remote->size(), count), displs(c.remote->size());
  for (int i = 0; i < c.remote->size(); ++i) displs[i] = i * count;
  return pieces(c, buf, counts.data(), displs.data(), &type, false);
}

// A scatterv as `pick` says: the linear algorithm (flat, or the direct route), else the
// hierarchical one along its route's tree.
// `block`: every block's packed size where all are alike and every member knows it (then
// nobody is told the sizes), else kSizeNotShared.
Async<> scatterv_by(const Pick& pick, CommImpl& c, Blocks in, void* recvbuf, Layout recv, bool in_place, int root,
                    std::size_t block = kSizeNotShared) {
  if (pick.algo == Algo::kFlat || pick.route == Route::kDirect) return scatterv_linear(c, std::move(in), recvbuf, recv, in_place, root);
  return scatterv_hier(c, std::move(in), recvbuf, recv, in_place, root, block, rooted_tree(c, Coll::kScatter, root, pick));
}

void no_scan_between_groups(const CommImpl& c) {
  if (c.remote) throw ArgumentError("gridrt: scans are not defined on intercommunicators (MPI 4.0 §6.11)", MPI_ERR_COMM);
}
// This member's block of a gather or all-gather, packed: what sendbuf holds, or, in place,
// what is at its own place of the receive blocks.
std::vector<char> own_block(const void* sendbuf, int sendcount, MPI_Datatype sendtype, const Blocks& out, int me) {
  if (sendbuf == MPI_IN_PLACE) return out.pack_all({me});
  return packed_copy(Layout(sendtype, sendcount), sendbuf);
}
}  // namespace

Async<> barrier(CommImpl& c, Algo algo) {
  if (c.remote) return inter::barrier(c);
  if (choose(algo, c, Coll::kBarrier, 0) == Algo::kFlat) return barrier_dissemination(c);
  return barrier_hier(c);
}

Async<> bcast(CommImpl& c, void* buf, int count, MPI_Datatype type, int root, Algo algo) {
  if (c.remote) return inter::bcast(c, buf, count, type, root);
  check_root(c, root);
  const Layout l(type, count);
  const Pick pick = choose_with_route(algo, c, Coll::kBcast, l.packed, root);
  if (pick.algo == Algo::kFlat) return bcast_binomial(c, buf, l, root);
  return bcast_hier(c, buf, l, root, rooted_tree(c, Coll::kBcast, root, pick), pick.slice);
}

Async<> reduce(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, Algo algo) {
  if (c.remote) return inter::reduce(c, sendbuf, recvbuf, count, type, op, root);
  check_rooted(c, root, sendbuf, "reduce");
  const Layout l(type, count);
  const Pick pick = choose_with_route(algo, c, Coll::kReduce, l.packed, root, !commutative(op));
  if (pick.algo == Algo::kFlat) return reduce_binomial(c, sendbuf, recvbuf, l, op, root);
  return reduce_hier(c, sendbuf, recvbuf, l, op, root, rooted_tree(c, Coll::kReduce, root, pick), pick.slice);
}

Async<> allreduce(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo) {
  if (c.remote) return inter::allreduce(c, sendbuf, recvbuf, count, type, op);
  const Layout l(type, count);
  const Pick pick = choose_with_route(algo, c, Coll::kAllreduce, l.packed, 0, !commutative(op));
  if (pick.algo == Algo::kFlat) return allreduce_doubling(c, sendbuf, recvbuf, l, op);
  if (pick.route == Route::kRooted) return allreduce_rooted(c, sendbuf, recvbuf, l, op);
  return allreduce_hier(c, sendbuf, recvbuf, l, op, pick.slice, pick.route);
}

Async<> gather(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
              int root, Algo algo) {
  if (c.remote) return inter::gather(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root);
  check_rooted(c, root, sendbuf, "gather");
  const bool in_place = sendbuf == MPI_IN_PLACE;
  // The receive side matters at the root only (MPI 4.0 §6.5).
  Blocks out = c.me == root ? Blocks::equal(recvbuf, recvcount, c.size(), recvtype) : Blocks();
  std::vector<char> mine = in_place ? std::vector<char>() : own_block(sendbuf, sendcount, sendtype, out, c.me);
  const std::size_t block = in_place ? out.packed(root) : mine.size();
  const Pick pick = choose_with_route(algo, c, Coll::kGather, block, root);
  if (pick.algo == Algo::kFlat) return gather_binomial(c, std::move(mine), in_place, std::move(out), root, block);
  if (pick.route == Route::kDirect) return gatherv_linear(c, std::move(mine), in_place, std::move(out), root);
  return gatherv_hier(c, std::move(mine), in_place, std::move(out), root, block, rooted_tree(c, Coll::kGather, root, pick));
}

Async<> gatherv(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
               const int* displs, MPI_Datatype recvtype, int root, Algo algo) {
  if (c.remote) return inter::gatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root);
  check_rooted(c, root, sendbuf, "gatherv");
  const bool in_place = sendbuf == MPI_IN_PLACE;
  Blocks out;
  if (c.me == root) {
    check_counts(c, recvcounts, displs, "gatherv");
    out = Blocks(recvbuf, recvcounts, displs, c.size(), recvtype);
  }
  std::vector<char> mine = in_place ? std::vector<char>() : packed_copy(Layout(sendtype, sendcount), sendbuf);
  const Pick pick = choose_with_route(algo, c, Coll::kGather, kSizeNotShared, root);
  if (pick.algo == Algo::kFlat || pick.route == Route::kDirect) return gatherv_linear(c, std::move(mine), in_place, std::move(out), root);
  return gatherv_hier(c, std::move(mine), in_place, std::move(out), root, kSizeNotShared,
                      rooted_tree(c, Coll::kGather, root, pick));
}

Async<> scatter(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
               int root, Algo algo) {
  if (c.remote) return inter::scatter(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root);
  check_rooted(c, root, recvbuf, "scatter");
  const bool in_place = recvbuf == MPI_IN_PLACE;
  // The send side matters at the root only.
  Blocks in = c.me == root ? Blocks::equal(sendbuf, sendcount, c.size(), sendtype) : Blocks();
  const Layout recv = in_place ? Layout(sendtype, 0) : Layout(recvtype, recvcount);
  const std::size_t block = c.me == root ? in.packed(root) : recv.packed;
  const Pick pick = choose_with_route(algo, c, Coll::kScatter, block, root);
  if (pick.algo == Algo::kFlat) return scatter_binomial(c, std::move(in), recvbuf, recv, in_place, root);
  if (pick.route == Route::kDirect) return scatterv_linear(c, std::move(in), recvbuf, recv, in_place, root);
  return scatterv_hier(c, std::move(in), recvbuf, recv, in_place, root, block, rooted_tree(c, Coll::kScatter, root, pick));
}

Async<> scatterv(CommImpl& c, const void* sendbuf, const int* sendcounts, const int* displs, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, Algo algo) {
  if (c.remote) return inter::scatterv(c, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root);
  check_rooted(c, root, recvbuf, "scatterv");
  const bool in_place = recvbuf == MPI_IN_PLACE;
  Blocks in;
  if (c.me == root) {
    check_counts(c, sendcounts, displs, "scatterv");
    in = Blocks(sendbuf, sendcounts, displs, c.size(), sendtype);
  }
  const Layout recv = in_place ? Layout(sendtype, 0) : Layout(recvtype, recvcount);
  Pick pick = choose_with_route(algo, c, Coll::kScatter, kSizeNotShared, root);
  // Served in the order the model predicts for the mean of the blocks, which the root knows.
  if (pick.algo == Algo::kHier && pick.route == Route::kOrdered && c.me == root) {
    std::size_t total = 0;
    for (int i = 0; i < c.size(); ++i) total += in.packed(i);
    pick.tree = ordered_tree(c, root, static_cast<double>(total) / c.size());
  }
  return scatterv_by(pick, c, std::move(in), recvbuf, recv, in_place, root);
}

Async<> allgatherv(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                  const int* displs, MPI_Datatype recvtype, Algo algo) {
  if (c.remote) return inter::allgatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype);
  check_counts(c, recvcounts, displs, "allgatherv");
  Blocks out(recvbuf, recvcounts, displs, c.size(), recvtype);
  std::vector<char> mine = own_block(sendbuf, sendcount, sendtype, out, c.me);
  // Every member knows every block's size: auto goes by their mean (worked out only for it).
  std::size_t mean = 0;
  if (asked_for(algo) == Algo::kAuto) {
    for (int i = 0; i < c.size(); ++i) mean += out.packed(i);
    mean /= static_cast<std::size_t>(c.size());
  }
  if (choose(algo, c, Coll::kAllgather, mean) == Algo::kFlat) return allgatherv_ring(c, std::move(mine), std::move(out));
  return allgatherv_hier(c, std::move(mine), std::move(out));
}

Async<> allgather(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, Algo algo) {
  if (c.remote) return inter::allgather(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
  Blocks out = Blocks::equal(recvbuf, recvcount, c.size(), recvtype);
  std::vector<char> mine = own_block(sendbuf, sendcount, sendtype, out, c.me);
  if (choose(algo, c, Coll::kAllgather, out.packed(0)) == Algo::kFlat) return allgatherv_ring(c, std::move(mine), std::move(out));
  return allgatherv_hier(c, std::move(mine), std::move(out));
}

namespace {
// All-to-all and its v form. In place, what recvbuf holds is what is sent, laid out as the
// receive (MPI's rule): it is copied aside, blocks where they are, and sent from there.
// The hierarchical one by the agents route (any number of clusters) or the groups route
// (the paper's rule for two).
Async<> alltoall_any(CommImpl& c, Blocks in, Blocks out, [[maybe_unused]] std::shared_ptr<Scratch> aside, bool equal, Algo algo) {
  const Pick pick = choose_with_route(algo, c, Coll::kAlltoall, equal ? in.packed(0) : kSizeNotShared, 0);
  if (pick.algo == Algo::kFlat) co_await alltoallv_pairwise(c, std::move(in), std::move(out));
  else if (pick.route == Route::kGroups) co_await alltoallv_local_group_two(c, std::move(in), std::move(out), equal);
  else co_await alltoallv_local_group(c, std::move(in), std::move(out), equal);
}

Async<> alltoall_blocks(CommImpl& c, const void* sendbuf, Blocks in, Blocks out, bool equal, Algo algo) {
  std::shared_ptr<Scratch> aside;
  if (sendbuf == MPI_IN_PLACE) {
    int span = 0;
    for (int i = 0; i < c.size(); ++i) span = std::max(span, out.displs[i] + out.counts[i]);
    const Layout whole(out.element, span);
    aside = std::make_shared<Scratch>(whole);
    copy_elements(whole, out.base, aside->get());
    in = out;
    in.base = static_cast<char*>(aside->get());
  }
  return alltoall_any(c, std::move(in), std::move(out), std::move(aside), equal, algo);
}
}  // namespace

Async<> alltoall(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                Algo algo) {
  if (c.remote) return inter::alltoall(c, pieces(c, sendbuf, sendcount, sendtype), pieces(c, recvbuf, recvcount, recvtype));
  Blocks out = Blocks::equal(recvbuf, recvcount, c.size(), recvtype);
  Blocks in = sendbuf == MPI_IN_PLACE ? Blocks() : Blocks::equal(sendbuf, sendcount, c.size(), sendtype);
  return alltoall_blocks(c, sendbuf, std::move(in), std::move(out), true, algo);
}

Async<> alltoallv(CommImpl& c, const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype, void* recvbuf,
                 const int* recvcounts, const int* rdispls, MPI_Datatype recvtype, Algo algo) {
  if (c.remote) return inter::alltoall(c, pieces(c, sendbuf, sendcounts, sdispls, &sendtype, false), pieces(c, recvbuf, recvcounts, rdispls, &recvtype, false));
  check_counts(c, recvcounts, rdispls, "alltoallv");
  Blocks out(recvbuf, recvcounts, rdispls, c.size(), recvtype);
  Blocks in;
  if (sendbuf != MPI_IN_PLACE) {
    check_counts(c, sendcounts, sdispls, "alltoallv");
    in = Blocks(sendbuf, sendcounts, sdispls, c.size(), sendtype);
  }
  return alltoall_blocks(c, sendbuf, std::move(in), std::move(out), false, algo);
}

// ---------------------------------------------------------------- composed collectives

namespace {
// MPI_Reduce_scatter by its rooted route: a reduction of everything to member 0, then a
// scatter of the result's blocks. kHier: each hierarchical on the route and slices the model
// picks for it (own_pick, GRIDRT_ROUTE aside: it names the reduce-scatter's route), as the
// rooted all-reduce does, and so as predicted; a non-commutative reduction on the packed
// tree, or flat where that does not keep rank order. kFlat: the flat forms.
Async<> reduce_then_scatter(CommImpl& c, const void* sendbuf, void* recvbuf, std::vector<int> counts, Layout element, MPI_Op op, Algo algo) {
  std::vector<int> displs(counts.size(), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, displs.begin() + 1);
  const int total = displs.back() + counts.back();
  const Layout whole(element, total);
  std::optional<Scratch> result;
  if (c.me == 0) result.emplace(whole);
  // In place, the input is recvbuf's `total` elements; this member's block then goes there.
  const void* input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  const bool own_routes = algo == Algo::kHier && commutative(op);
  const Pick reduce_by = own_routes ? own_pick(c, Coll::kReduce, whole.packed, 0) : choose_with_route(algo, c, Coll::kReduce, whole.packed, 0, !commutative(op));
  PartTree tree = rooted_tree(c, Coll::kReduce, 0, reduce_by);
  void* reduced = result ? result->get() : nullptr;
  if (reduce_by.algo == Algo::kFlat) co_await reduce_binomial(c, input, reduced, whole, op, 0);
  else co_await reduce_hier(c, input, reduced, whole, op, 0, std::move(tree), reduce_by.slice);
  Blocks in = c.me == 0 ? Blocks(reduced, counts.data(), displs.data(), c.size(), element.type) : Blocks();
  const Layout mine(element, counts[c.me]);
  // Every member knows the counts: where all are alike, the scatter's is a known size.
  const bool equal = std::all_of(counts.begin(), counts.end(), [&](int n) { return n == counts.front(); });
  const std::size_t block = equal ? mine.packed : kSizeNotShared;
  // (The pick held in a variable: no temporary with a destructor inside a co_await, which
  // GCC 12 may destroy twice.)
  const Pick pick = own_routes ? own_pick(c, Coll::kScatter, block, 0) : choose_with_route(algo, c, Coll::kScatter, block, 0);
  co_await scatterv_by(pick, c, std::move(in), recvbuf, mine, false, 0, block);
}

// Either route: through the sites' heads (each block crossing the WAN once), or rooted.
// The size a choice goes by is the mean block, which every member knows (MPI gives every
// member all the counts).
Async<> reduce_scatter_counts(CommImpl& c, const void* sendbuf, void* recvbuf, std::vector<int> counts, MPI_Datatype type, MPI_Op op,
                              Algo algo) {
  const Layout element(type, 1);
  const std::size_t total = element.packed * static_cast<std::size_t>(std::accumulate(counts.begin(), counts.end(), 0LL));
  const Pick pick = choose_with_route(algo, c, Coll::kReduceScatter, total / static_cast<std::size_t>(c.size()), 0, !commutative(op));
  if (pick.algo == Algo::kFlat) return reduce_then_scatter(c, sendbuf, recvbuf, std::move(counts), element, op, Algo::kFlat);
  if (pick.route == Route::kRooted) return reduce_then_scatter(c, sendbuf, recvbuf, std::move(counts), element, op, Algo::kHier);
  // Slices as its prediction plays them (no more than kMostSlices).
  const SliceSizes sl(static_cast<double>(total), static_cast<double>(state().slice.value_or(kDefaultSlice)));
  return reduce_scatter_hier(c, sendbuf, recvbuf, std::move(counts), element, op, static_cast<std::size_t>(sl.slice));
}
}  // namespace

Async<> reduce_scatter(CommImpl& c, const void* sendbuf, void* recvbuf, const int* recvcounts, MPI_Datatype type, MPI_Op op, Algo algo) {
  if (c.remote && recvcounts) return inter::reduce_scatter(c, sendbuf, recvbuf, std::vector<int>(recvcounts, recvcounts + c.size()), type, op);
  if (!recvcounts) throw ArgumentError("gridrt: reduce_scatter: counts are needed", MPI_ERR_ARG);
  for (int i = 0; i < c.size(); ++i)
    if (recvcounts[i] < 0) throw ArgumentError("gridrt: reduce_scatter: a negative count", MPI_ERR_COUNT);
  return reduce_scatter_counts(c, sendbuf, recvbuf, std::vector<int>(recvcounts, recvcounts + c.size()), type, op, algo);
}

Async<> reduce_scatter_block(CommImpl& c, const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op, Algo algo) {
  if (c.remote) return inter::reduce_scatter(c, sendbuf, recvbuf, std::vector<int>(c.size(), recvcount), type, op);
  if (recvcount < 0) throw ArgumentError("gridrt: reduce_scatter_block: a negative count", MPI_ERR_COUNT);
  return reduce_scatter_counts(c, sendbuf, recvbuf, std::vector<int>(c.size(), recvcount), type, op, algo);
}

Async<> scan(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo) {
  no_scan_between_groups(c);
  const Layout l(type, count);
  // Hierarchical only where clusters hold runs of ranks: cluster order is then rank order.
  if (choose(algo, c, Coll::kScan, l.packed) == Algo::kFlat || !c.parts_contiguous) return scan_doubling(c, sendbuf, recvbuf, l, op, false);
  return scan_hier(c, sendbuf, recvbuf, l, op, false);
}

Async<> exscan(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo) {
  no_scan_between_groups(c);
  const Layout l(type, count);
  if (choose(algo, c, Coll::kScan, l.packed) == Algo::kFlat || !c.parts_contiguous) return scan_doubling(c, sendbuf, recvbuf, l, op, true);
  return scan_hier(c, sendbuf, recvbuf, l, op, true);
}

// ---------------------------------------------------------------- alltoallw

namespace {
// MPI_Alltoallw by pairwise exchange: every block has its own datatype and a displacement
// in bytes. In place, every block sent is what recvbuf holds, packed before any arrives.
Async<> alltoallw_pairwise(CommImpl& c, std::vector<std::vector<char>> out_blocks, char* recvbuf, std::vector<int> recvcounts,
                          std::vector<int> rdispls, std::vector<MPI_Datatype> recvtypes) {
  const int tag = c.next_tag();
  const int n = c.size();
  auto receive_layout = [&](int i) { return Layout(recvtypes[i], recvcounts[i]); };
  unpack(receive_layout(c.me), out_blocks[c.me].data(), recvbuf + rdispls[c.me]);
  for (int k = 1; k < n; ++k) {
    const int dst = (c.me + k) % n, src = (c.me - k + n) % n;
    const Layout from = receive_layout(src);
    std::vector<char> got(from.packed);
    std::vector<Step> steps;
    steps.push_back(receive_from(c, src, tag, got.data(), got.size()));
    steps.push_back(send_to(c, dst, tag, out_blocks[dst].data(), out_blocks[dst].size()));
    co_await all(steps);
    unpack(from, got.data(), recvbuf + rdispls[src]);
  }
}
}  // namespace

Async<> alltoallw(CommImpl& c, const void* sendbuf, const int* sendcounts, const int* sdispls, const MPI_Datatype* sendtypes, void* recvbuf,
                 const int* recvcounts, const int* rdispls, const MPI_Datatype* recvtypes) {
  if (c.remote) return inter::alltoall(c, pieces(c, sendbuf, sendcounts, sdispls, sendtypes, true), pieces(c, recvbuf, recvcounts, rdispls, recvtypes, true));
  const int n = c.size();
  check_counts(c, recvcounts, rdispls, "alltoallw");
  if (!recvtypes) throw ArgumentError("gridrt: alltoallw: datatypes are needed", MPI_ERR_TYPE);
  const bool in_place = sendbuf == MPI_IN_PLACE;
  if (!in_place) {
    check_counts(c, sendcounts, sdispls, "alltoallw");
    if (!sendtypes) throw ArgumentError("gridrt: alltoallw: datatypes are needed", MPI_ERR_TYPE);
  }
  // Every block sent is packed now: MPI lets the send buffer be read at any time until the
  // end, and in place it must be read before anything arrives.
  std::vector<std::vector<char>> blocks(n);
  for (int j = 0; j < n; ++j) {
    const char* base = static_cast<const char*>(in_place ? recvbuf : sendbuf);
    const int count = in_place ? recvcounts[j] : sendcounts[j];
    const MPI_Datatype type = in_place ? recvtypes[j] : sendtypes[j];
    const int displ = in_place ? rdispls[j] : sdispls[j];
    blocks[j] = packed_copy(Layout(type, count), base + displ);
  }
  return alltoallw_pairwise(c, std::move(blocks), static_cast<char*>(recvbuf), std::vector<int>(recvcounts, recvcounts + n),
                            std::vector<int>(rdispls, rdispls + n), std::vector<MPI_Datatype>(recvtypes, recvtypes + n));
}

}  // namespace gridrt::detail
