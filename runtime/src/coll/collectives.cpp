// The entry points of the collectives (collectives.h): arguments checked at once, the
// algorithm chosen (choice.h, predict.cpp), the call's arguments handed by value to the
// catalogue's row of the algorithm chosen, which runs it (catalogue.h). The algorithms are
// one per file (algorithms.h).
#include "collectives.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "catalogue.h"
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

// A reduction's arguments (reduce, all-reduce, scans, reduce-scatter's element).
CallArgs reduction(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root = 0) {
  CallArgs a;
  a.sendbuf = sendbuf;
  a.recvbuf = recvbuf;
  a.layout = Layout(type, count);
  a.op = op;
  a.root = root;
  return a;
}

// MPI_Scan and MPI_Exscan.
Async<> scan_any(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo, bool exclusive) {
  if (c.remote) throw ArgumentError("gridrt: scans are not defined on intercommunicators (MPI 4.0 §6.11)", MPI_ERR_COMM);
  CallArgs a = reduction(sendbuf, recvbuf, count, type, op);
  a.exclusive = exclusive;
  a.pick.algo = choose(algo, c, Coll::kScan, a.layout.packed);
  // Hierarchical only where clusters hold runs of ranks: cluster order is then rank order.
  if (!c.parts_contiguous) a.pick.algo = Algo::kFlat;
  return run_picked(c, Coll::kScan, std::move(a));
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
  CallArgs a;
  a.pick.algo = choose(algo, c, Coll::kBarrier, 0);
  return run_picked(c, Coll::kBarrier, std::move(a));
}

Async<> bcast(CommImpl& c, void* buf, int count, MPI_Datatype type, int root, Algo algo) {
  if (c.remote) return inter::bcast(c, buf, count, type, root);
  check_root(c, root);
  CallArgs a;
  a.recvbuf = buf;
  a.layout = Layout(type, count);
  a.root = root;
  a.pick = choose_with_route(algo, c, Coll::kBcast, a.layout.packed, root);
  return run_picked(c, Coll::kBcast, std::move(a));
}

Async<> reduce(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, Algo algo) {
  if (c.remote) return inter::reduce(c, sendbuf, recvbuf, count, type, op, root);
  check_rooted(c, root, sendbuf, "reduce");
  CallArgs a = reduction(sendbuf, recvbuf, count, type, op, root);
  a.pick = choose_with_route(algo, c, Coll::kReduce, a.layout.packed, root, !commutative(op));
  return run_picked(c, Coll::kReduce, std::move(a));
}

Async<> allreduce(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo) {
  if (c.remote) return inter::allreduce(c, sendbuf, recvbuf, count, type, op);
  CallArgs a = reduction(sendbuf, recvbuf, count, type, op);
  a.pick = choose_with_route(algo, c, Coll::kAllreduce, a.layout.packed, 0, !commutative(op));
  return run_picked(c, Coll::kAllreduce, std::move(a));
}

Async<> gather(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
               int root, Algo algo) {
  if (c.remote) return inter::gather(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root);
  check_rooted(c, root, sendbuf, "gather");
  CallArgs a;
  a.in_place = sendbuf == MPI_IN_PLACE;
  a.root = root;
  // The receive side matters at the root only (MPI 4.0 §6.5).
  if (c.me == root) a.out = Blocks::equal(recvbuf, recvcount, c.size(), recvtype);
  if (!a.in_place) a.mine = own_block(sendbuf, sendcount, sendtype, a.out, c.me);
  a.block = a.in_place ? a.out.packed(root) : a.mine.size();
  a.pick = choose_with_route(algo, c, Coll::kGather, a.block, root);
  return run_picked(c, Coll::kGather, std::move(a));
}

Async<> gatherv(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                const int* displs, MPI_Datatype recvtype, int root, Algo algo) {
  if (c.remote) return inter::gatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root);
  check_rooted(c, root, sendbuf, "gatherv");
  CallArgs a;
  a.in_place = sendbuf == MPI_IN_PLACE;
  a.root = root;
  if (c.me == root) {
    check_counts(c, recvcounts, displs, "gatherv");
    a.out = Blocks(recvbuf, recvcounts, displs, c.size(), recvtype);
  }
  if (!a.in_place) a.mine = packed_copy(Layout(sendtype, sendcount), sendbuf);
  a.pick = choose_with_route(algo, c, Coll::kGather, kSizeNotShared, root);  // (a.block: not shared)
  return run_picked(c, Coll::kGather, std::move(a));
}

Async<> scatter(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                int root, Algo algo) {
  if (c.remote) return inter::scatter(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root);
  check_rooted(c, root, recvbuf, "scatter");
  CallArgs a;
  a.in_place = recvbuf == MPI_IN_PLACE;
  a.root = root;
  a.recvbuf = recvbuf;
  // The send side matters at the root only.
  if (c.me == root) a.in = Blocks::equal(sendbuf, sendcount, c.size(), sendtype);
  a.layout = a.in_place ? Layout(sendtype, 0) : Layout(recvtype, recvcount);
  a.block = c.me == root ? a.in.packed(root) : a.layout.packed;
  a.pick = choose_with_route(algo, c, Coll::kScatter, a.block, root);
  return run_picked(c, Coll::kScatter, std::move(a));
}

Async<> scatterv(CommImpl& c, const void* sendbuf, const int* sendcounts, const int* displs, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, Algo algo) {
  if (c.remote) return inter::scatterv(c, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root);
  check_rooted(c, root, recvbuf, "scatterv");
  CallArgs a;
  a.in_place = recvbuf == MPI_IN_PLACE;
  a.root = root;
  a.recvbuf = recvbuf;
  if (c.me == root) {
    check_counts(c, sendcounts, displs, "scatterv");
    a.in = Blocks(sendbuf, sendcounts, displs, c.size(), sendtype);
  }
  a.layout = a.in_place ? Layout(sendtype, 0) : Layout(recvtype, recvcount);
  a.pick = choose_with_route(algo, c, Coll::kScatter, kSizeNotShared, root);  // (a.block: not shared)
  // Served in the order the model predicts for the mean of the blocks, which the root knows.
  if (a.pick.algo == Algo::kHier && a.pick.route == Route::kOrdered && c.me == root) {
    std::size_t total = 0;
    for (int i = 0; i < c.size(); ++i) total += a.in.packed(i);
    a.pick.tree = ordered_tree(c, root, static_cast<double>(total) / c.size());
  }
  return run_picked(c, Coll::kScatter, std::move(a));
}

Async<> allgatherv(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                   const int* displs, MPI_Datatype recvtype, Algo algo) {
  if (c.remote) return inter::allgatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype);
  check_counts(c, recvcounts, displs, "allgatherv");
  CallArgs a;
  a.out = Blocks(recvbuf, recvcounts, displs, c.size(), recvtype);
  a.mine = own_block(sendbuf, sendcount, sendtype, a.out, c.me);
  // Every member knows every block's size: auto goes by their mean (worked out only for it).
  std::size_t mean = 0;
  if (asked_for(algo) == Algo::kAuto) {
    for (int i = 0; i < c.size(); ++i) mean += a.out.packed(i);
    mean /= static_cast<std::size_t>(c.size());
  }
  a.pick.algo = choose(algo, c, Coll::kAllgather, mean);
  return run_picked(c, Coll::kAllgather, std::move(a));
}

Async<> allgather(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, Algo algo) {
  if (c.remote) return inter::allgather(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
  CallArgs a;
  a.out = Blocks::equal(recvbuf, recvcount, c.size(), recvtype);
  a.mine = own_block(sendbuf, sendcount, sendtype, a.out, c.me);
  a.pick.algo = choose(algo, c, Coll::kAllgather, a.out.packed(0));
  return run_picked(c, Coll::kAllgather, std::move(a));
}

namespace {
// All-to-all and its v form. In place, what recvbuf holds is what is sent, laid out as the
// receive (MPI's rule): it is copied aside, blocks where they are, and sent from there.
// The hierarchical one by the agents route (any number of clusters) or the groups route
// (the paper's rule for two).
Async<> alltoall_any(CommImpl& c, Blocks in, Blocks out, [[maybe_unused]] std::shared_ptr<Scratch> aside, bool equal, Algo algo) {
  CallArgs a;
  a.pick = choose_with_route(algo, c, Coll::kAlltoall, equal ? in.packed(0) : kSizeNotShared, 0);
  a.in = std::move(in);
  a.out = std::move(out);
  a.equal = equal;
  co_await run_picked(c, Coll::kAlltoall, std::move(a));
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

Async<> alltoall(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, Algo algo) {
  if (c.remote) return inter::alltoall(c, pieces(c, sendbuf, sendcount, sendtype), pieces(c, recvbuf, recvcount, recvtype));
  Blocks out = Blocks::equal(recvbuf, recvcount, c.size(), recvtype);
  Blocks in = sendbuf == MPI_IN_PLACE ? Blocks() : Blocks::equal(sendbuf, sendcount, c.size(), sendtype);
  return alltoall_blocks(c, sendbuf, std::move(in), std::move(out), true, algo);
}

Async<> alltoallv(CommImpl& c, const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype, void* recvbuf,
                  const int* recvcounts, const int* rdispls, MPI_Datatype recvtype, Algo algo) {
  if (c.remote)
    return inter::alltoall(c, pieces(c, sendbuf, sendcounts, sdispls, &sendtype, false),
                           pieces(c, recvbuf, recvcounts, rdispls, &recvtype, false));
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
// Either route: through the sites' heads (each block crossing the WAN once), or rooted.
// The size a choice goes by is the mean block, which every member knows (MPI gives every
// member all the counts).
Async<> reduce_scatter_counts(CommImpl& c, const void* sendbuf, void* recvbuf, std::vector<int> counts, MPI_Datatype type, MPI_Op op,
                              Algo algo) {
  CallArgs a = reduction(sendbuf, recvbuf, 1, type, op);  // the layout: one element
  const std::size_t total = a.layout.packed * static_cast<std::size_t>(std::accumulate(counts.begin(), counts.end(), 0LL));
  a.counts = std::move(counts);
  a.pick = choose_with_route(algo, c, Coll::kReduceScatter, total / static_cast<std::size_t>(c.size()), 0, !commutative(op));
  return run_picked(c, Coll::kReduceScatter, std::move(a));
}
}  // namespace

Async<> reduce_scatter(CommImpl& c, const void* sendbuf, void* recvbuf, const int* recvcounts, MPI_Datatype type, MPI_Op op, Algo algo) {
  if (c.remote && recvcounts)
    return inter::reduce_scatter(c, sendbuf, recvbuf, std::vector<int>(recvcounts, recvcounts + c.size()), type, op);
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
  return scan_any(c, sendbuf, recvbuf, count, type, op, algo, false);
}

Async<> exscan(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo) {
  return scan_any(c, sendbuf, recvbuf, count, type, op, algo, true);
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
  if (c.remote)
    return inter::alltoall(c, pieces(c, sendbuf, sendcounts, sdispls, sendtypes, true),
                           pieces(c, recvbuf, recvcounts, rdispls, recvtypes, true));
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
