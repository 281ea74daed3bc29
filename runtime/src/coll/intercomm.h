// The collectives of an intercommunicator (MPI 4.0 §6.2.2): between its two groups, group A
// and group B. Rooted ones: the root passes MPI_ROOT, the rest of its group MPI_PROC_NULL,
// every member of the other group the root's rank. The others: each group gets what the
// other group gave (an all-reduce gives each group the reduction of the other's data).
// MPI_IN_PLACE is not for intercommunicators. Scans are not defined on them. The entry
// points of collectives.h call these when the communicator has a remote group.
#pragma once

#include <vector>

#include "comm.h"
#include "datatype.h"

namespace gridrt::detail::inter {

Async<> barrier(CommImpl& c);
Async<> bcast(CommImpl& c, void* buf, int count, MPI_Datatype type, int root);
Async<> reduce(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root);
Async<> allreduce(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op);
Async<> gather(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
               int root);
Async<> gatherv(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                const int* displs, MPI_Datatype recvtype, int root);
Async<> scatter(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                int root);
Async<> scatterv(CommImpl& c, const void* sendbuf, const int* sendcounts, const int* displs, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root);
Async<> allgather(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype);
Async<> allgatherv(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                   const int* displs, MPI_Datatype recvtype);
// All-to-alls, any of the three forms: for each member of the remote group, the block sent
// to it and the block received from it.
struct Piece {
  char* at = nullptr;
  Layout layout{MPI_BYTE, 0};
  bool used = false;  // (no message either way for this member)
};
Async<> alltoall(CommImpl& c, std::vector<Piece> send, std::vector<Piece> receive);
// Reduce-scatter: each group's input vectors hold as many elements as its own counts add
// up to; the reduction of group A's vectors is scattered over group B by B's counts, and
// the other way round, so the two groups' totals must match (MPI 4.0 §6.10.2).
Async<> reduce_scatter(CommImpl& c, const void* sendbuf, void* recvbuf, std::vector<int> counts, MPI_Datatype type, MPI_Op op);

}  // namespace gridrt::detail::inter
