// What is made of communicators with their collectives: the contexts agreed over a parent,
// MPI_Comm_split's members, gridrt::Comm's split and dup, and Comm's collective calls. Above
// the collectives (coll/), which run over the communicators of comm.h.
#include <algorithm>

#include "comm.h"
#include "coll/collectives.h"

namespace gridrt {

using detail::CommImpl;

namespace detail {
// Contexts above every one that any member is in (each process's next_context is),
// agreed by all members: no two communicators sharing a process ever share a context.
std::uint32_t agree_on_context(const std::shared_ptr<CommImpl>& parent) {
  unsigned mine = state().next_context, agreed = 0;
  run_collective(parent, allreduce(*parent, &mine, &agreed, 1, MPI_UNSIGNED, MPI_MAX, Algo::kHier));
  state().next_context = agreed + kContextsPerComm;
  return agreed;
}

SplitMembers split_members(const std::shared_ptr<CommImpl>& parent, int color, int key) {
  if (color < 0 && color != MPI_UNDEFINED)
    throw ArgumentError("gridrt: split: color " + std::to_string(color) + " is negative", MPI_ERR_ARG);
  // Every member's color and key, and the context each could take: one collective.
  std::vector<int> all(3 * parent->size());
  const int mine[3] = {color, key, static_cast<int>(state().next_context)};
  run_collective(parent, allgather(*parent, mine, 3, MPI_INT, all.data(), 3, MPI_INT, Algo::kHier));
  SplitMembers out;
  unsigned agreed = 0;
  for (int r = 0; r < parent->size(); ++r) agreed = std::max(agreed, static_cast<unsigned>(all[3 * r + 2]));
  state().next_context = agreed + kContextsPerComm;
  out.context = agreed;
  // The new members: same color, by key, then by rank here.
  std::vector<int> chosen;
  for (int r = 0; r < parent->size(); ++r)
    if (color != MPI_UNDEFINED && all[3 * r] == color) chosen.push_back(r);
  std::stable_sort(chosen.begin(), chosen.end(), [&](int a, int b) { return all[3 * a + 1] < all[3 * b + 1]; });
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    out.members.push_back(parent->members[chosen[i]]);
    if (chosen[i] == parent->me) out.me = static_cast<int>(i);
  }
  return out;
}

}  // namespace detail

Comm Comm::split(int color, int key) const {
  impl();  // (checks it is not the null communicator)
  const detail::SplitMembers m = detail::split_members(impl_, color, key);
  // Every member of the parent in this cluster takes part, as MPI_Comm_split requires.
  MPI_Comm local = MPI_COMM_NULL;
  detail::check_mpi(MPI_Comm_split(impl_->local, color, m.me, &local), detail::kMpiInCluster);
  if (color == MPI_UNDEFINED) return Comm();
  return Comm(CommImpl::make(m.members, m.me, m.context, local));
}

Comm Comm::dup() const {
  CommImpl& parent = impl();
  const std::uint32_t context = detail::agree_on_context(impl_);
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Request req;
  detail::check_mpi(MPI_Comm_idup(parent.local, &local, &req), detail::kMpiInCluster);
  detail::wait_mpi(&req, MPI_STATUS_IGNORE);
  return Comm(CommImpl::make(parent.members, parent.me, context, local));
}

// ---------------------------------------------------------------- Comm's collectives

namespace {
void run(const std::shared_ptr<CommImpl>& c, detail::Async<> t) { detail::run_collective(c, std::move(t)); }
}  // namespace

void Comm::barrier(Algo algo) const { run(impl_, detail::barrier(impl(), algo)); }

void Comm::bcast(void* buf, int count, MPI_Datatype type, int root, Algo algo) const {
  run(impl_, detail::bcast(impl(), buf, count, type, root, algo));
}

void Comm::reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, Algo algo) const {
  run(impl_, detail::reduce(impl(), sendbuf, recvbuf, count, type, op, root, algo));
}

void Comm::allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo) const {
  run(impl_, detail::allreduce(impl(), sendbuf, recvbuf, count, type, op, algo));
}

void Comm::reduce_scatter_block(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo) const {
  run(impl_, detail::reduce_scatter_block(impl(), sendbuf, recvbuf, count, type, op, algo));
}

void Comm::reduce_scatter(const void* sendbuf, void* recvbuf, const int* counts, MPI_Datatype type, MPI_Op op, Algo algo) const {
  run(impl_, detail::reduce_scatter(impl(), sendbuf, recvbuf, counts, type, op, algo));
}

void Comm::gather(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, int root, Algo algo) const {
  run(impl_, detail::gather(impl(), sendbuf, count, type, recvbuf, count, type, root, algo));
}

void Comm::gatherv(const void* sendbuf, int sendcount, void* recvbuf, const int* recvcounts, const int* displs, MPI_Datatype type, int root,
                   Algo algo) const {
  run(impl_, detail::gatherv(impl(), sendbuf, sendcount, type, recvbuf, recvcounts, displs, type, root, algo));
}

void Comm::scatter(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, int root, Algo algo) const {
  run(impl_, detail::scatter(impl(), sendbuf, count, type, recvbuf, count, type, root, algo));
}

void Comm::scatterv(const void* sendbuf, const int* sendcounts, const int* displs, void* recvbuf, int recvcount, MPI_Datatype type,
                    int root, Algo algo) const {
  run(impl_, detail::scatterv(impl(), sendbuf, sendcounts, displs, type, recvbuf, recvcount, type, root, algo));
}

void Comm::allgather(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, Algo algo) const {
  run(impl_, detail::allgather(impl(), sendbuf, count, type, recvbuf, count, type, algo));
}

void Comm::allgatherv(const void* sendbuf, int sendcount, void* recvbuf, const int* recvcounts, const int* displs, MPI_Datatype type,
                      Algo algo) const {
  run(impl_, detail::allgatherv(impl(), sendbuf, sendcount, type, recvbuf, recvcounts, displs, type, algo));
}

void Comm::alltoall(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, Algo algo) const {
  run(impl_, detail::alltoall(impl(), sendbuf, count, type, recvbuf, count, type, algo));
}

void Comm::alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, void* recvbuf, const int* recvcounts,
                     const int* rdispls, MPI_Datatype type, Algo algo) const {
  run(impl_, detail::alltoallv(impl(), sendbuf, sendcounts, sdispls, type, recvbuf, recvcounts, rdispls, type, algo));
}

}  // namespace gridrt
