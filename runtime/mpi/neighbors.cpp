// The neighbourhood collectives under the MPI layer (MPI 4.0 §8.6): on a grid communicator
// with a Cartesian, graph or distributed graph topology, each member's blocks go to and
// come from its neighbours (gridmpi::neighborhood) by coll/neighbor_exchange.cpp, blocking,
// non-blocking and persistent like the other collectives (collective_calls.h); on MPICH's
// own communicators, MPICH's. Their arrays (counts, displacements, datatypes) are read when
// the collective runs: MPI lets none of them change before it completes (or, persistent,
// before the request is freed).
#include "collective_calls.h"

using gridmpi::CommImpl;
using gridmpi::GridComm;
using gridmpi::Neighborhood;
using gridrt::detail::NeighborBlock;

namespace {

// How one side's blocks lie in the application's buffer: per neighbour, `count` elements of
// `type` one after the other (`same`: the one block at buf, for every neighbour), or the v
// form's counts and displacements in extents, or the w form's counts, byte displacements
// and datatypes.
struct Side {
  const void* buf = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  bool same = false;
  const int* counts = nullptr;
  const int* displs = nullptr;
  const MPI_Aint* byte_displs = nullptr;
  const MPI_Datatype* types = nullptr;

  std::vector<NeighborBlock> of(const std::vector<int>& peers, const std::vector<int>& slots) const {
    if (buf == MPI_IN_PLACE) throw gridrt::ArgumentError("MPI_IN_PLACE is not allowed in a neighbourhood collective", MPI_ERR_BUFFER);
    std::vector<NeighborBlock> out(peers.size());
    char* base = static_cast<char*>(const_cast<void*>(buf));
    for (std::size_t i = 0; i < peers.size(); ++i) {
      const int n = counts ? counts[i] : count;
      if (n < 0) throw gridrt::ArgumentError("a negative count", MPI_ERR_COUNT);
      const gridrt::detail::Layout l(types ? types[i] : type, n);
      const MPI_Aint at = byte_displs ? byte_displs[i]
                          : displs    ? static_cast<MPI_Aint>(displs[i]) * l.extent
                          : same      ? 0
                                      : static_cast<MPI_Aint>(i) * count * l.extent;
      out[i] = {peers[i], slots[i], base + at, l};  // MPI_PROC_NULL (negative): nothing moves
    }
    return out;
  }
};

// The collective: sends to the destinations, receives from the sources, as the
// communicator's neighbourhood is when it runs.
gridmpi::Make exchange(MPI_Comm comm, Side send, Side receive) {
  std::shared_ptr<GridComm> g = gridmpi::grid_shared(comm);
  return [g, send, receive](CommImpl& c) {
    if (g->inter()) throw gridrt::ArgumentError("neighbourhood collectives are not defined on an intercommunicator", MPI_ERR_COMM);
    const Neighborhood n = gridmpi::neighborhood(*g);
    return gridrt::detail::neighbor_exchange(c, n.slots, send.of(n.destinations, n.destination_slots),
                                             receive.of(n.sources, n.source_slots));
  };
}

// The datatypes of the w form, leased while it runs: as many as the neighbours.
gridmpi::Uses w_uses(MPI_Comm comm, const MPI_Datatype* sendtypes, const MPI_Datatype* recvtypes) {
  const bool grid = gridmpi::grid(comm) != nullptr;
  return gridmpi::Uses{.sendtypes = sendtypes,
                       .recvtypes = recvtypes,
                       .sendtypes_length = grid ? gridmpi_neighbor_entries(comm, 0) : 0,
                       .recvtypes_length = grid ? gridmpi_neighbor_entries(comm, 1) : 0};
}

Side equal(const void* buf, int count, MPI_Datatype type, bool same = false) {
  return Side{.buf = buf, .count = count, .type = type, .same = same};
}
Side v(const void* buf, const int* counts, const int* displs, MPI_Datatype type) {
  return Side{.buf = buf, .type = type, .counts = counts, .displs = displs};
}
Side w(const void* buf, const int* counts, const MPI_Aint* displs, const MPI_Datatype* types) {
  return Side{.buf = buf, .counts = counts, .byte_displs = displs, .types = types};
}

}  // namespace

using gridmpi::blocking;
using gridmpi::nonblocking;
using gridmpi::persistent;
using gridmpi::Uses;

int GRIDMPI(Neighbor_allgather)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                MPI_Datatype recvtype, MPI_Comm comm) {
  return blocking(
      "MPI_Neighbor_allgather", comm,
      [&](CommImpl& c) { return exchange(comm, equal(sendbuf, sendcount, sendtype, true), equal(recvbuf, recvcount, recvtype))(c); },
      [&] { return PMPI_Neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); },
      [&](MPI_Request* r) { return PMPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r); });
}
int GRIDMPI(Ineighbor_allgather)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                 MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Ineighbor_allgather", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [&](CommImpl& c) { return exchange(comm, equal(sendbuf, sendcount, sendtype, true), equal(recvbuf, recvcount, recvtype))(c); },
      [&](MPI_Request* r) { return PMPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r); });
}
int GRIDMPI(Neighbor_allgather_init)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Neighbor_allgather_init", comm, request, Uses{.send = sendtype, .recv = recvtype},
      gridmpi::grid(comm) ? exchange(comm, equal(sendbuf, sendcount, sendtype, true), equal(recvbuf, recvcount, recvtype))
                          : gridmpi::Make(),
      [&] { return PMPI_Neighbor_allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request); });
}

int GRIDMPI(Neighbor_allgatherv)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                 const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return blocking(
      "MPI_Neighbor_allgatherv", comm,
      [&](CommImpl& c) { return exchange(comm, equal(sendbuf, sendcount, sendtype, true), v(recvbuf, recvcounts, displs, recvtype))(c); },
      [&] { return PMPI_Neighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm); },
      [&](MPI_Request* r) {
        return PMPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, r);
      });
}
int GRIDMPI(Ineighbor_allgatherv)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                  const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Ineighbor_allgatherv", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [&](CommImpl& c) { return exchange(comm, equal(sendbuf, sendcount, sendtype, true), v(recvbuf, recvcounts, displs, recvtype))(c); },
      [&](MPI_Request* r) {
        return PMPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, r);
      });
}
int GRIDMPI(Neighbor_allgatherv_init)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                                      const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Neighbor_allgatherv_init", comm, request, Uses{.send = sendtype, .recv = recvtype},
      gridmpi::grid(comm) ? exchange(comm, equal(sendbuf, sendcount, sendtype, true), v(recvbuf, recvcounts, displs, recvtype))
                          : gridmpi::Make(),
      [&] {
        return PMPI_Neighbor_allgatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, info, request);
      });
}

int GRIDMPI(Neighbor_alltoall)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                               MPI_Datatype recvtype, MPI_Comm comm) {
  return blocking(
      "MPI_Neighbor_alltoall", comm,
      [&](CommImpl& c) { return exchange(comm, equal(sendbuf, sendcount, sendtype), equal(recvbuf, recvcount, recvtype))(c); },
      [&] { return PMPI_Neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); },
      [&](MPI_Request* r) { return PMPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r); });
}
int GRIDMPI(Ineighbor_alltoall)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Ineighbor_alltoall", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [&](CommImpl& c) { return exchange(comm, equal(sendbuf, sendcount, sendtype), equal(recvbuf, recvcount, recvtype))(c); },
      [&](MPI_Request* r) { return PMPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r); });
}
int GRIDMPI(Neighbor_alltoall_init)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Neighbor_alltoall_init", comm, request, Uses{.send = sendtype, .recv = recvtype},
      gridmpi::grid(comm) ? exchange(comm, equal(sendbuf, sendcount, sendtype), equal(recvbuf, recvcount, recvtype)) : gridmpi::Make(),
      [&] { return PMPI_Neighbor_alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request); });
}

int GRIDMPI(Neighbor_alltoallv)(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return blocking(
      "MPI_Neighbor_alltoallv", comm,
      [&](CommImpl& c) { return exchange(comm, v(sendbuf, sendcounts, sdispls, sendtype), v(recvbuf, recvcounts, rdispls, recvtype))(c); },
      [&] { return PMPI_Neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm); },
      [&](MPI_Request* r) {
        return PMPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, r);
      });
}
int GRIDMPI(Ineighbor_alltoallv)(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                 const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Ineighbor_alltoallv", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [&](CommImpl& c) { return exchange(comm, v(sendbuf, sendcounts, sdispls, sendtype), v(recvbuf, recvcounts, rdispls, recvtype))(c); },
      [&](MPI_Request* r) {
        return PMPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, r);
      });
}
int GRIDMPI(Neighbor_alltoallv_init)(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                                     const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                     MPI_Request* request) {
  return persistent("MPI_Neighbor_alltoallv_init", comm, request, Uses{.send = sendtype, .recv = recvtype},
                    gridmpi::grid(comm)
                        ? exchange(comm, v(sendbuf, sendcounts, sdispls, sendtype), v(recvbuf, recvcounts, rdispls, recvtype))
                        : gridmpi::Make(),
                    [&] {
                      return PMPI_Neighbor_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                                                          comm, info, request);
                    });
}

int GRIDMPI(Neighbor_alltoallw)(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                void* recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                MPI_Comm comm) {
  return blocking(
      "MPI_Neighbor_alltoallw", comm,
      [&](CommImpl& c) {
        return exchange(comm, w(sendbuf, sendcounts, sdispls, sendtypes), w(recvbuf, recvcounts, rdispls, recvtypes))(c);
      },
      [&] { return PMPI_Neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm); },
      [&](MPI_Request* r) {
        return PMPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, r);
      });
}
int GRIDMPI(Ineighbor_alltoallw)(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                 void* recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                 MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Ineighbor_alltoallw", comm, request, w_uses(comm, sendtypes, recvtypes),
      [&](CommImpl& c) {
        return exchange(comm, w(sendbuf, sendcounts, sdispls, sendtypes), w(recvbuf, recvcounts, rdispls, recvtypes))(c);
      },
      [&](MPI_Request* r) {
        return PMPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, r);
      });
}
int GRIDMPI(Neighbor_alltoallw_init)(const void* sendbuf, const int sendcounts[], const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                     void* recvbuf, const int recvcounts[], const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                     MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent("MPI_Neighbor_alltoallw_init", comm, request, w_uses(comm, sendtypes, recvtypes),
                    gridmpi::grid(comm)
                        ? exchange(comm, w(sendbuf, sendcounts, sdispls, sendtypes), w(recvbuf, recvcounts, rdispls, recvtypes))
                        : gridmpi::Make(),
                    [&] {
                      return PMPI_Neighbor_alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                                                          comm, info, request);
                    });
}
