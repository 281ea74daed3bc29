// Intercommunicator collectives (intercomm.h), as MPICH builds its own: each is a collective
// of the local group (gridrt's, hierarchical when so chosen) plus one exchange between the
// groups' rank 0s, so that data crosses between the groups once. Cost: T_local + one
// message of the data between the two rank 0s (with the WAN's latency when the groups sit in
// different clusters). The v-forms, whose sizes only one side knows, and the all-to-alls send
// each block straight to the member it is for instead: with groups of nA and nB members,
// nA·nB messages at once, each paying the latency once.
#include "intercomm.h"

#include <numeric>
#include <optional>

#include "coll/coll_support.h"
#include "coll/collectives.h"

namespace gridrt::detail::inter {

namespace {

constexpr Algo kChoice = Algo::kDefault;  // the local group's collectives: GRIDRT_COLL's choice

// A tag for the next collective's messages between the groups, the same on both sides
// (both groups call an intercommunicator's collectives in the same order).
int next_tag(CommImpl& c) {
  return static_cast<int>(c.remote->calls++ % (static_cast<std::uint64_t>(std::min(state().tag_ub, kMaxTag)) + 1));
}

enum class Side { kRoot, kRootsGroup, kOtherGroup };

Side side_of(const CommImpl& c, int root) {
  if (root == MPI_ROOT) return Side::kRoot;
  if (root == MPI_PROC_NULL) return Side::kRootsGroup;
  if (root < 0 || root >= c.remote->size())
    throw ArgumentError("gridrt: root " + std::to_string(root) +
                            " is neither MPI_ROOT, MPI_PROC_NULL nor a rank of the remote group (size " + std::to_string(c.remote->size()) +
                            ")",
                        MPI_ERR_ROOT);
  return Side::kOtherGroup;
}

void no_in_place(const void* buf, const char* what) {
  if (buf == MPI_IN_PLACE)
    throw ArgumentError(std::string("gridrt: ") + what + ": MPI_IN_PLACE is not allowed on an intercommunicator", MPI_ERR_BUFFER);
}

void check_remote_counts(const CommImpl& c, const int* counts, const int* displs, const char* what) {
  if (!counts || !displs) throw ArgumentError(std::string("gridrt: ") + what + ": counts and displacements are needed", MPI_ERR_ARG);
  for (int i = 0; i < c.remote->size(); ++i)
    if (counts[i] < 0) throw ArgumentError(std::string("gridrt: ") + what + ": a negative count", MPI_ERR_COUNT);
}

int as_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT32_MAX)) throw Error("gridrt: an intercommunicator collective's data is limited to 2 GiB");
  return static_cast<int>(bytes);
}

// Rank 0 of each group sends `out` to the other's rank 0 and receives `in` from it.
Async<> leaders_exchange(CommImpl& c, int tag, const std::vector<char>& out, std::vector<char>& in) {
  std::vector<Step> steps;
  steps.push_back(receive_from_remote(c, 0, tag, in.data(), in.size()));
  steps.push_back(send_to_remote(c, 0, tag, out.data(), out.size()));
  co_await all(steps);
}

Async<> barrier_run(CommImpl& c) {
  const int tag = next_tag(c);
  CommImpl& g = *c.remote->group;
  // Everyone here has arrived; the leaders hear that everyone there has; everyone here hears it.
  co_await detail::barrier(g, kChoice);
  if (g.me == 0) {
    std::vector<char> none, got;
    co_await leaders_exchange(c, tag, none, got);
  }
  co_await detail::barrier(g, kChoice);
}

Async<> bcast_run(CommImpl& c, void* buf, Layout l, Side side, int root) {
  const int tag = next_tag(c);
  if (side == Side::kRootsGroup) co_return;
  std::vector<char> data(l.packed);
  if (side == Side::kRoot) {
    pack(l, buf, data.data());
    co_await one(send_to_remote(c, 0, tag, data.data(), data.size()));
    co_return;
  }
  CommImpl& g = *c.remote->group;
  if (g.me == 0) {
    co_await one(receive_from_remote(c, root, tag, data.data(), data.size()));
    unpack(l, data.data(), buf);
  }
  co_await detail::bcast(g, buf, l.count, l.type, 0, kChoice);
}

Async<> reduce_run(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, Side side, int root) {
  const int tag = next_tag(c);
  if (side == Side::kRootsGroup) co_return;
  std::vector<char> data(l.packed);
  if (side == Side::kRoot) {
    co_await one(receive_from_remote(c, 0, tag, data.data(), data.size()));
    unpack(l, data.data(), recvbuf);
    co_return;
  }
  CommImpl& g = *c.remote->group;
  std::optional<Scratch> result;
  if (g.me == 0) result.emplace(l);
  co_await detail::reduce(g, sendbuf, result ? result->get() : nullptr, l.count, l.type, op, 0, kChoice);
  if (g.me == 0) {
    pack(l, result->get(), data.data());
    co_await one(send_to_remote(c, root, tag, data.data(), data.size()));
  }
}

Async<> allreduce_run(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op) {
  const int tag = next_tag(c);
  CommImpl& g = *c.remote->group;
  std::optional<Scratch> ours;
  if (g.me == 0) ours.emplace(l);
  co_await detail::reduce(g, sendbuf, ours ? ours->get() : nullptr, l.count, l.type, op, 0, kChoice);
  if (g.me == 0) {
    std::vector<char> out(l.packed), in(l.packed);
    pack(l, ours->get(), out.data());
    co_await leaders_exchange(c, tag, out, in);
    unpack(l, in.data(), recvbuf);
  }
  co_await detail::bcast(g, recvbuf, l.count, l.type, 0, kChoice);
}

// Gather with equal blocks: the other group gathers its packed blocks at its rank 0, which
// sends them to the root in one message.
Async<> gather_run(CommImpl& c, std::vector<char> mine, void* recvbuf, Layout all, Side side, int root) {
  const int tag = next_tag(c);
  if (side == Side::kRootsGroup) co_return;
  if (side == Side::kRoot) {
    std::vector<char> data(all.packed);
    co_await one(receive_from_remote(c, 0, tag, data.data(), data.size()));
    unpack(all, data.data(), recvbuf);
    co_return;
  }
  CommImpl& g = *c.remote->group;
  const int block = as_count(mine.size());
  std::vector<char> blocks(g.me == 0 ? mine.size() * static_cast<std::size_t>(g.size()) : 0);
  co_await detail::gather(g, mine.data(), block, MPI_BYTE, blocks.data(), block, MPI_BYTE, 0, kChoice);
  if (g.me == 0) co_await one(send_to_remote(c, root, tag, blocks.data(), blocks.size()));
}

// Scatter with equal blocks: the root sends them all to the other group's rank 0, which
// scatters them there.
Async<> scatter_run(CommImpl& c, std::vector<char> all, void* recvbuf, Layout mine, Side side, int root) {
  const int tag = next_tag(c);
  if (side == Side::kRootsGroup) co_return;
  if (side == Side::kRoot) {
    co_await one(send_to_remote(c, 0, tag, all.data(), all.size()));
    co_return;
  }
  CommImpl& g = *c.remote->group;
  const int block = as_count(mine.packed);
  std::vector<char> blocks(g.me == 0 ? mine.packed * static_cast<std::size_t>(g.size()) : 0), got(mine.packed);
  if (g.me == 0) co_await one(receive_from_remote(c, root, tag, blocks.data(), blocks.size()));
  co_await detail::scatter(g, blocks.data(), block, MPI_BYTE, got.data(), block, MPI_BYTE, 0, kChoice);
  unpack(mine, got.data(), recvbuf);
}

// Every block straight to the member it is for (v-forms and all-to-alls).
Async<> direct_run(CommImpl& c, std::vector<Piece> send, std::vector<Piece> receive) {
  const int tag = next_tag(c);
  std::vector<std::vector<char>> out(send.size()), in(receive.size());
  std::vector<Step> steps;
  for (std::size_t i = 0; i < receive.size(); ++i) {
    if (!receive[i].used) continue;
    in[i].resize(receive[i].layout.packed);
    steps.push_back(receive_from_remote(c, static_cast<int>(i), tag, in[i].data(), in[i].size()));
  }
  for (std::size_t i = 0; i < send.size(); ++i) {
    if (!send[i].used) continue;
    out[i] = packed_copy(send[i].layout, send[i].at);
    steps.push_back(send_to_remote(c, static_cast<int>(i), tag, out[i].data(), out[i].size()));
  }
  co_await all(steps);
  for (std::size_t i = 0; i < receive.size(); ++i)
    if (receive[i].used) unpack(receive[i].layout, in[i].data(), receive[i].at);
}

Async<> allgather_run(CommImpl& c, std::vector<char> mine, void* recvbuf, Layout theirs) {
  const int tag = next_tag(c);
  CommImpl& g = *c.remote->group;
  const int block = as_count(mine.size());
  std::vector<char> ours(g.me == 0 ? mine.size() * static_cast<std::size_t>(g.size()) : 0), got(theirs.packed);
  co_await detail::gather(g, mine.data(), block, MPI_BYTE, ours.data(), block, MPI_BYTE, 0, kChoice);
  if (g.me == 0) co_await leaders_exchange(c, tag, ours, got);
  co_await detail::bcast(g, got.data(), as_count(got.size()), MPI_BYTE, 0, kChoice);
  unpack(theirs, got.data(), recvbuf);
}

Async<> reduce_scatter_run(CommImpl& c, const void* sendbuf, void* recvbuf, std::vector<int> counts, MPI_Datatype type, MPI_Op op) {
  const int tag = next_tag(c);
  CommImpl& g = *c.remote->group;
  std::vector<int> displs(counts.size(), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, displs.begin() + 1);
  const Layout whole(type, displs.back() + counts.back());
  std::optional<Scratch> ours, theirs;
  if (g.me == 0) {
    ours.emplace(whole);
    theirs.emplace(whole);
  }
  co_await detail::reduce(g, sendbuf, ours ? ours->get() : nullptr, whole.count, type, op, 0, kChoice);
  if (g.me == 0) {
    std::vector<char> out(whole.packed), in(whole.packed);
    pack(whole, ours->get(), out.data());
    co_await leaders_exchange(c, tag, out, in);
    unpack(whole, in.data(), theirs->get());
  }
  co_await detail::scatterv(g, theirs ? theirs->get() : nullptr, counts.data(), displs.data(), type, recvbuf, counts[g.me], type, 0,
                            kChoice);
}

}  // namespace

Async<> barrier(CommImpl& c) { return barrier_run(c); }

Async<> bcast(CommImpl& c, void* buf, int count, MPI_Datatype type, int root) {
  const Side side = side_of(c, root);
  return bcast_run(c, buf, Layout(type, side == Side::kRootsGroup ? 0 : count), side, root);
}

Async<> reduce(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root) {
  const Side side = side_of(c, root);
  no_in_place(sendbuf, "reduce");
  return reduce_run(c, sendbuf, recvbuf, Layout(type, side == Side::kRootsGroup ? 0 : count), op, side, root);
}

Async<> allreduce(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op) {
  no_in_place(sendbuf, "allreduce");
  return allreduce_run(c, sendbuf, recvbuf, Layout(type, count), op);
}

Async<> gather(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
               int root) {
  const Side side = side_of(c, root);
  no_in_place(sendbuf, "gather");
  std::vector<char> mine = side == Side::kOtherGroup ? packed_copy(Layout(sendtype, sendcount), sendbuf) : std::vector<char>();
  const Layout all = side == Side::kRoot ? Layout(recvtype, recvcount * c.remote->size()) : Layout(MPI_BYTE, 0);
  return gather_run(c, std::move(mine), recvbuf, all, side, root);
}

// The v forms (gatherv, scatterv): the root moves one block of `root_blocks` (its counts
// checked) with each member of the other group, each of them its one block with the root;
// `to_root`: the gather's direction.
Async<> rooted_v(CommImpl& c, int root, bool to_root, const Blocks& root_blocks, const void* other_buf, const Layout& other_block) {
  const Side side = side_of(c, root);
  std::vector<Piece> send(c.remote->size()), receive(c.remote->size());
  std::vector<Piece>& at_root = to_root ? receive : send;
  std::vector<Piece>& at_other = to_root ? send : receive;
  if (side == Side::kRoot) {
    for (int i = 0; i < c.remote->size(); ++i) at_root[i] = {root_blocks.at(i), root_blocks.layout(i), true};
  } else if (side == Side::kOtherGroup) {
    at_other[root] = {static_cast<char*>(const_cast<void*>(other_buf)), other_block, true};
  }
  return direct_run(c, std::move(send), std::move(receive));
}

Async<> gatherv(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                const int* displs, MPI_Datatype recvtype, int root) {
  no_in_place(sendbuf, "gatherv");
  const bool is_root = side_of(c, root) == Side::kRoot;
  if (is_root) check_remote_counts(c, recvcounts, displs, "gatherv");
  const Blocks out = is_root ? Blocks(recvbuf, recvcounts, displs, c.remote->size(), recvtype) : Blocks();
  return rooted_v(c, root, true, out, sendbuf, Layout(sendtype, sendcount));
}

Async<> scatter(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                int root) {
  const Side side = side_of(c, root);
  no_in_place(recvbuf, "scatter");
  std::vector<char> all = side == Side::kRoot ? packed_copy(Layout(sendtype, sendcount * c.remote->size()), sendbuf) : std::vector<char>();
  const Layout mine = side == Side::kOtherGroup ? Layout(recvtype, recvcount) : Layout(MPI_BYTE, 0);
  return scatter_run(c, std::move(all), recvbuf, mine, side, root);
}

Async<> scatterv(CommImpl& c, const void* sendbuf, const int* sendcounts, const int* displs, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root) {
  no_in_place(recvbuf, "scatterv");
  const bool is_root = side_of(c, root) == Side::kRoot;
  if (is_root) check_remote_counts(c, sendcounts, displs, "scatterv");
  const Blocks in = is_root ? Blocks(sendbuf, sendcounts, displs, c.remote->size(), sendtype) : Blocks();
  return rooted_v(c, root, false, in, recvbuf, Layout(recvtype, recvcount));
}

Async<> allgather(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype) {
  no_in_place(sendbuf, "allgather");
  return allgather_run(c, packed_copy(Layout(sendtype, sendcount), sendbuf), recvbuf, Layout(recvtype, recvcount * c.remote->size()));
}

Async<> allgatherv(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                   const int* displs, MPI_Datatype recvtype) {
  no_in_place(sendbuf, "allgatherv");
  check_remote_counts(c, recvcounts, displs, "allgatherv");
  const Blocks out(recvbuf, recvcounts, displs, c.remote->size(), recvtype);
  std::vector<Piece> send(c.remote->size()), receive(c.remote->size());
  for (int i = 0; i < c.remote->size(); ++i) {
    send[i] = {static_cast<char*>(const_cast<void*>(sendbuf)), Layout(sendtype, sendcount), true};
    receive[i] = {out.at(i), out.layout(i), true};
  }
  return direct_run(c, std::move(send), std::move(receive));
}

Async<> alltoall(CommImpl& c, std::vector<Piece> send, std::vector<Piece> receive) {
  return direct_run(c, std::move(send), std::move(receive));
}

Async<> reduce_scatter(CommImpl& c, const void* sendbuf, void* recvbuf, std::vector<int> counts, MPI_Datatype type, MPI_Op op) {
  no_in_place(sendbuf, "reduce_scatter");
  for (int n : counts)
    if (n < 0) throw ArgumentError("gridrt: reduce_scatter: a negative count", MPI_ERR_COUNT);
  return reduce_scatter_run(c, sendbuf, recvbuf, std::move(counts), type, op);
}

}  // namespace gridrt::detail::inter
