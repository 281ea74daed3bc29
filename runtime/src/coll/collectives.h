// The collectives over grid communicators, as MPI defines them (MPI 4.0 chapter 6), for
// gridrt::Comm and for the MPI layer: each entry point checks its arguments at once
// (throwing ArgumentError of the MPI error class it is), chooses the algorithm for the call
// (choice.h; docs/algorithms.md) and returns that algorithm's coroutine (Async, ../async.h), which a CollectiveOp runs
// in its communicator's order (comm.h), to its end (a blocking call) or in the background
// (a non-blocking one). Arguments are as MPI's, with MPI_IN_PLACE where MPI allows it; a
// pointer argument is read or written only while it runs, as MPI allows for the
// buffers and arrays of a non-blocking collective.
#pragma once

#include "comm.h"

namespace gridrt::detail {

Async<> barrier(CommImpl& c, Algo algo);
Async<> bcast(CommImpl& c, void* buf, int count, MPI_Datatype type, int root, Algo algo);
Async<> reduce(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, Algo algo);
Async<> allreduce(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo);
Async<> gather(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
               int root, Algo algo);
Async<> gatherv(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                const int* displs, MPI_Datatype recvtype, int root, Algo algo);
Async<> scatter(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                int root, Algo algo);
Async<> scatterv(CommImpl& c, const void* sendbuf, const int* sendcounts, const int* displs, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, Algo algo);
Async<> allgather(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                  MPI_Datatype recvtype, Algo algo);
Async<> allgatherv(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int* recvcounts,
                   const int* displs, MPI_Datatype recvtype, Algo algo);
Async<> alltoall(CommImpl& c, const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                 MPI_Datatype recvtype, Algo algo);
Async<> alltoallv(CommImpl& c, const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Datatype sendtype, void* recvbuf,
                  const int* recvcounts, const int* rdispls, MPI_Datatype recvtype, Algo algo);
// Per-block datatypes, displacements in bytes.
Async<> alltoallw(CommImpl& c, const void* sendbuf, const int* sendcounts, const int* sdispls, const MPI_Datatype* sendtypes, void* recvbuf,
                  const int* recvcounts, const int* rdispls, const MPI_Datatype* recvtypes);
Async<> reduce_scatter(CommImpl& c, const void* sendbuf, void* recvbuf, const int* recvcounts, MPI_Datatype type, MPI_Op op, Algo algo);
Async<> reduce_scatter_block(CommImpl& c, const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype type, MPI_Op op, Algo algo);
Async<> scan(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo);
Async<> exscan(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo);

// The neighbourhood collectives (MPI 4.0 §8.6), as blocks to send to and receive from
// neighbours (neighbor_exchange.cpp): a send block and a receive block meet when one member
// sends to the other in the same slot (one of `slots`) as the other receives from it in;
// two blocks between the same members in one slot meet in order. A negative peer
// (MPI_PROC_NULL) moves nothing.
struct NeighborBlock {
  int peer = -1;
  int slot = 0;
  char* at = nullptr;
  Layout layout{MPI_BYTE, 0};
};
Async<> neighbor_exchange(CommImpl& c, int slots, std::vector<NeighborBlock> sends, std::vector<NeighborBlock> receives);

}  // namespace gridrt::detail
