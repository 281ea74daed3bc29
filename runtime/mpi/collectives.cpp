// Collectives under the MPI layer (MPI 4.0 chapter 6): on a grid communicator, gridrt's
// (coll/collectives.h: hierarchical, crossing the WAN once, or flat, as GRIDRT_COLL says),
// blocking, non-blocking (moved on by every later call that waits or tests) and persistent
// (MPI 4: each MPI_Start runs the collective anew, on the request's own lane); on MPICH's own
// communicators, MPICH's.
#include "collective_calls.h"

using gridmpi::CommImpl;

namespace {

// A persistent collective's lane (CommImpl::lane): its own order of collectives, so that its
// starts match those of the same request in the other members, whatever other collectives
// they start meanwhile and in whatever order they start their persistent requests (MPI 4.0
// §6.12 matches persistent collectives by the order of their initialisation). Its MPI
// communicator in the cluster is MPICH's non-blocking duplicate of the application's
// handle, asked for at initialisation (which must not wait for the other members: MPI
// makes it a non-blocking call) and waited for at the first start. Intercommunicators keep
// to their own order: their persistent collectives must be started in initialisation order.
struct Lane {
  std::shared_ptr<CommImpl> parent;
  std::uint64_t index = 0;
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Request made = MPI_REQUEST_NULL;
  std::shared_ptr<CommImpl> impl;

  Lane(const gridmpi::GridComm& g) : parent(g.impl), index(g.lanes) {
    if (!g.inter())
      gridrt::detail::check_mpi(PMPI_Comm_idup(g.handle, &local, &made), "MPI_Comm_idup in the cluster (a persistent collective's own)");
  }
  ~Lane() {
    if (impl || made == MPI_REQUEST_NULL) return;  // (impl owns `local`)
    PMPI_Wait(&made, MPI_STATUS_IGNORE);
    PMPI_Comm_free(&local);
  }
  Lane(const Lane&) = delete;
  // The communicator its collectives run on, once there (null until MPICH's duplicate is).
  std::shared_ptr<CommImpl> ready() {
    if (!impl && made == MPI_REQUEST_NULL) return parent;  // an intercommunicator's
    if (!impl) {
      int done = 0;
      gridrt::detail::check_mpi(PMPI_Test(&made, &done, MPI_STATUS_IGNORE), "MPI_Comm_idup in the cluster (a persistent collective's own)");
      if (!done) return nullptr;
      impl = parent->lane(index, local);
    }
    return impl;
  }
};

}  // namespace

namespace gridmpi {

int nonblocking(const char* function, MPI_Comm comm, MPI_Request* request, const Uses& uses, const Make& make,
                const std::function<int(MPI_Request*)>& native) {
  std::shared_ptr<gridmpi::GridComm> g = gridmpi::grid_shared(comm);
  if (!g) return native(request);
  return gridmpi::call(function, comm, [&] {
    auto r = std::make_unique<gridmpi::Request>();
    r->comm = g;
    r->leases = uses.lease(*g);
    r->coll = gridrt::detail::start_collective(g->impl, make(*g->impl));
    *request = gridmpi::new_request(std::move(r));
    return MPI_SUCCESS;
  });
}

int persistent(const char* function, MPI_Comm comm, MPI_Request* request, const Uses& uses, Make make, const std::function<int()>& native) {
  std::shared_ptr<gridmpi::GridComm> g = gridmpi::grid_shared(comm);
  if (!g) return native();
  return gridmpi::call(function, comm, [&] {
    static_cast<void>(make(*g->impl));  // (checks the arguments now, as MPI would; this run is dropped unstarted)
    auto r = std::make_unique<gridmpi::Request>();
    r->comm = g;
    r->leases = uses.lease(*g);
    r->persistent = true;
    r->active = false;
    auto lane = std::make_shared<Lane>(*g);
    ++g->lanes;
    // Each start runs the collective anew on the lane: at once, or, at the first start, once
    // the lane is there (the request's test starts it then).
    r->restart = [make = std::move(make), lane](gridmpi::Request& q) {
      q.coll.reset();
      q.custom = [&q, make, lane] {
        if (!q.coll) {
          std::shared_ptr<CommImpl> on = lane->ready();
          if (!on) return false;
          q.coll = gridrt::detail::start_collective(on, make(*on));
        }
        if (!q.coll->poll()) return false;
        q.coll->rethrow();
        return true;
      };
      q.custom();
    };
    *request = gridmpi::new_request(std::move(r));
    return MPI_SUCCESS;
  });
}

}  // namespace gridmpi

using gridmpi::blocking;
using gridmpi::kAlgo;
using gridmpi::nonblocking;
using gridmpi::persistent;
using gridmpi::Uses;

int GRIDMPI(Barrier)(MPI_Comm comm) {
  return blocking(
      "MPI_Barrier", comm, [&](CommImpl& c) { return gridrt::detail::barrier(c, kAlgo); }, [&] { return PMPI_Barrier(comm); },
      [&](MPI_Request* r) { return PMPI_Ibarrier(comm, r); });
}
int GRIDMPI(Ibarrier)(MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Ibarrier", comm, request, Uses{}, [&](CommImpl& c) { return gridrt::detail::barrier(c, kAlgo); },
      [&](MPI_Request* r) { return PMPI_Ibarrier(comm, r); });
}
int GRIDMPI(Barrier_init)(MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Barrier_init", comm, request, Uses{}, [=](CommImpl& c) { return gridrt::detail::barrier(c, kAlgo); },
      [&] { return PMPI_Barrier_init(comm, info, request); });
}

int GRIDMPI(Bcast)(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return blocking(
      "MPI_Bcast", comm, [&](CommImpl& c) { return gridrt::detail::bcast(c, buffer, count, datatype, root, kAlgo); },
      [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); },
      [&](MPI_Request* r) { return PMPI_Ibcast(buffer, count, datatype, root, comm, r); });
}
int GRIDMPI(Ibcast)(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Ibcast", comm, request, Uses{.send = datatype},
      [&](CommImpl& c) { return gridrt::detail::bcast(c, buffer, count, datatype, root, kAlgo); },
      [&](MPI_Request* r) { return PMPI_Ibcast(buffer, count, datatype, root, comm, r); });
}
int GRIDMPI(Bcast_init)(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Bcast_init", comm, request, Uses{.send = datatype},
      [=](CommImpl& c) { return gridrt::detail::bcast(c, buffer, count, datatype, root, kAlgo); },
      [&] { return PMPI_Bcast_init(buffer, count, datatype, root, comm, info, request); });
}

int GRIDMPI(Reduce)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm) {
  return blocking(
      "MPI_Reduce", comm, [&](CommImpl& c) { return gridrt::detail::reduce(c, sendbuf, recvbuf, count, datatype, op, root, kAlgo); },
      [&] { return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm); },
      [&](MPI_Request* r) { return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, r); });
}
int GRIDMPI(Ireduce)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                     MPI_Request* request) {
  return nonblocking(
      "MPI_Ireduce", comm, request, Uses{.send = datatype, .op = op},
      [&](CommImpl& c) { return gridrt::detail::reduce(c, sendbuf, recvbuf, count, datatype, op, root, kAlgo); },
      [&](MPI_Request* r) { return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, r); });
}
int GRIDMPI(Reduce_init)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                         MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Reduce_init", comm, request, Uses{.send = datatype, .op = op},
      [=](CommImpl& c) { return gridrt::detail::reduce(c, sendbuf, recvbuf, count, datatype, op, root, kAlgo); },
      [&] { return PMPI_Reduce_init(sendbuf, recvbuf, count, datatype, op, root, comm, info, request); });
}

int GRIDMPI(Allreduce)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return blocking(
      "MPI_Allreduce", comm, [&](CommImpl& c) { return gridrt::detail::allreduce(c, sendbuf, recvbuf, count, datatype, op, kAlgo); },
      [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm); },
      [&](MPI_Request* r) { return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, r); });
}
int GRIDMPI(Iallreduce)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                        MPI_Request* request) {
  return nonblocking(
      "MPI_Iallreduce", comm, request, Uses{.send = datatype, .op = op},
      [&](CommImpl& c) { return gridrt::detail::allreduce(c, sendbuf, recvbuf, count, datatype, op, kAlgo); },
      [&](MPI_Request* r) { return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, r); });
}
int GRIDMPI(Allreduce_init)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                            MPI_Request* request) {
  return persistent(
      "MPI_Allreduce_init", comm, request, Uses{.send = datatype, .op = op},
      [=](CommImpl& c) { return gridrt::detail::allreduce(c, sendbuf, recvbuf, count, datatype, op, kAlgo); },
      [&] { return PMPI_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request); });
}

int GRIDMPI(Gather)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                    int root, MPI_Comm comm) {
  return blocking(
      "MPI_Gather", comm,
      [&](CommImpl& c) { return gridrt::detail::gather(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, kAlgo); },
      [&] { return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm); },
      [&](MPI_Request* r) { return PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, r); });
}
int GRIDMPI(Igather)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                     int root, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Igather", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [&](CommImpl& c) { return gridrt::detail::gather(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, kAlgo); },
      [&](MPI_Request* r) { return PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, r); });
}
int GRIDMPI(Gather_init)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                         int root, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Gather_init", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [=](CommImpl& c) { return gridrt::detail::gather(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, kAlgo); },
      [&] { return PMPI_Gather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, info, request); });
}

int GRIDMPI(Gatherv)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int displs[],
                     MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return blocking(
      "MPI_Gatherv", comm,
      [&](CommImpl& c) {
        return gridrt::detail::gatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, kAlgo);
      },
      [&] { return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm); },
      [&](MPI_Request* r) { return PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, r); });
}
int GRIDMPI(Igatherv)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int displs[],
                      MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Igatherv", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [&](CommImpl& c) {
        return gridrt::detail::gatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, kAlgo);
      },
      [&](MPI_Request* r) { return PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, r); });
}
int GRIDMPI(Gatherv_init)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                          const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Gatherv_init", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [=](CommImpl& c) {
        return gridrt::detail::gatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, kAlgo);
      },
      [&] { return PMPI_Gatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, info, request); });
}

int GRIDMPI(Scatter)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                     int root, MPI_Comm comm) {
  return blocking(
      "MPI_Scatter", comm,
      [&](CommImpl& c) { return gridrt::detail::scatter(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, kAlgo); },
      [&] { return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm); },
      [&](MPI_Request* r) { return PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, r); });
}
int GRIDMPI(Iscatter)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                      int root, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Iscatter", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [&](CommImpl& c) { return gridrt::detail::scatter(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, kAlgo); },
      [&](MPI_Request* r) { return PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, r); });
}
int GRIDMPI(Scatter_init)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                          int root, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Scatter_init", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [=](CommImpl& c) { return gridrt::detail::scatter(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, kAlgo); },
      [&] { return PMPI_Scatter_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, info, request); });
}

int GRIDMPI(Scatterv)(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void* recvbuf, int recvcount,
                      MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return blocking(
      "MPI_Scatterv", comm,
      [&](CommImpl& c) {
        return gridrt::detail::scatterv(c, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, kAlgo);
      },
      [&] { return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm); },
      [&](MPI_Request* r) { return PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, r); });
}
int GRIDMPI(Iscatterv)(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void* recvbuf, int recvcount,
                       MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Iscatterv", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [&](CommImpl& c) {
        return gridrt::detail::scatterv(c, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, kAlgo);
      },
      [&](MPI_Request* r) { return PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, r); });
}
int GRIDMPI(Scatterv_init)(const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void* recvbuf,
                           int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Scatterv_init", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [=](CommImpl& c) {
        return gridrt::detail::scatterv(c, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, kAlgo);
      },
      [&] { return PMPI_Scatterv_init(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, info, request); });
}

int GRIDMPI(Allgather)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                       MPI_Comm comm) {
  return blocking(
      "MPI_Allgather", comm,
      [&](CommImpl& c) { return gridrt::detail::allgather(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, kAlgo); },
      [&] { return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); },
      [&](MPI_Request* r) { return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r); });
}
int GRIDMPI(Iallgather)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                        MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Iallgather", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [&](CommImpl& c) { return gridrt::detail::allgather(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, kAlgo); },
      [&](MPI_Request* r) { return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r); });
}
int GRIDMPI(Allgather_init)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                            MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Allgather_init", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [=](CommImpl& c) { return gridrt::detail::allgather(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, kAlgo); },
      [&] { return PMPI_Allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request); });
}

int GRIDMPI(Allgatherv)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                        const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
  return blocking(
      "MPI_Allgatherv", comm,
      [&](CommImpl& c) {
        return gridrt::detail::allgatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, kAlgo);
      },
      [&] { return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm); },
      [&](MPI_Request* r) { return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, r); });
}
int GRIDMPI(Iallgatherv)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                         const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Iallgatherv", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [&](CommImpl& c) {
        return gridrt::detail::allgatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, kAlgo);
      },
      [&](MPI_Request* r) { return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, r); });
}
int GRIDMPI(Allgatherv_init)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                             const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Allgatherv_init", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [=](CommImpl& c) {
        return gridrt::detail::allgatherv(c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, kAlgo);
      },
      [&] { return PMPI_Allgatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, info, request); });
}

int GRIDMPI(Alltoall)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                      MPI_Comm comm) {
  return blocking(
      "MPI_Alltoall", comm,
      [&](CommImpl& c) { return gridrt::detail::alltoall(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, kAlgo); },
      [&] { return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); },
      [&](MPI_Request* r) { return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r); });
}
int GRIDMPI(Ialltoall)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                       MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Ialltoall", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [&](CommImpl& c) { return gridrt::detail::alltoall(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, kAlgo); },
      [&](MPI_Request* r) { return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, r); });
}
int GRIDMPI(Alltoall_init)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                           MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Alltoall_init", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [=](CommImpl& c) { return gridrt::detail::alltoall(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, kAlgo); },
      [&] { return PMPI_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request); });
}

int GRIDMPI(Alltoallv)(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                       const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return blocking(
      "MPI_Alltoallv", comm,
      [&](CommImpl& c) {
        return gridrt::detail::alltoallv(c, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, kAlgo);
      },
      [&] { return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm); },
      [&](MPI_Request* r) {
        return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, r);
      });
}
int GRIDMPI(Ialltoallv)(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                        const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Ialltoallv", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [&](CommImpl& c) {
        return gridrt::detail::alltoallv(c, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, kAlgo);
      },
      [&](MPI_Request* r) {
        return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, r);
      });
}
int GRIDMPI(Alltoallv_init)(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, void* recvbuf,
                            const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                            MPI_Request* request) {
  return persistent(
      "MPI_Alltoallv_init", comm, request, Uses{.send = sendtype, .recv = recvtype},
      [=](CommImpl& c) {
        return gridrt::detail::alltoallv(c, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, kAlgo);
      },
      [&] {
        return PMPI_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, info, request);
      });
}

int GRIDMPI(Alltoallw)(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void* recvbuf,
                       const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
  return blocking(
      "MPI_Alltoallw", comm,
      [&](CommImpl& c) {
        return gridrt::detail::alltoallw(c, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes);
      },
      [&] { return PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm); },
      [&](MPI_Request* r) {
        return PMPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, r);
      });
}
int GRIDMPI(Ialltoallw)(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void* recvbuf,
                        const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Ialltoallw", comm, request, Uses{.sendtypes = sendtypes, .recvtypes = recvtypes},
      [&](CommImpl& c) {
        return gridrt::detail::alltoallw(c, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes);
      },
      [&](MPI_Request* r) {
        return PMPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, r);
      });
}
int GRIDMPI(Alltoallw_init)(const void* sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[], void* recvbuf,
                            const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                            MPI_Request* request) {
  return persistent(
      "MPI_Alltoallw_init", comm, request, Uses{.sendtypes = sendtypes, .recvtypes = recvtypes},
      [=](CommImpl& c) {
        return gridrt::detail::alltoallw(c, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes);
      },
      [&] {
        return PMPI_Alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, info, request);
      });
}

int GRIDMPI(Reduce_scatter)(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return blocking(
      "MPI_Reduce_scatter", comm,
      [&](CommImpl& c) { return gridrt::detail::reduce_scatter(c, sendbuf, recvbuf, recvcounts, datatype, op, kAlgo); },
      [&] { return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm); },
      [&](MPI_Request* r) { return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, r); });
}
int GRIDMPI(Ireduce_scatter)(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                             MPI_Request* request) {
  return nonblocking(
      "MPI_Ireduce_scatter", comm, request, Uses{.send = datatype, .op = op},
      [&](CommImpl& c) { return gridrt::detail::reduce_scatter(c, sendbuf, recvbuf, recvcounts, datatype, op, kAlgo); },
      [&](MPI_Request* r) { return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, r); });
}
int GRIDMPI(Reduce_scatter_init)(const void* sendbuf, void* recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
                                 MPI_Comm comm, MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Reduce_scatter_init", comm, request, Uses{.send = datatype, .op = op},
      [=](CommImpl& c) { return gridrt::detail::reduce_scatter(c, sendbuf, recvbuf, recvcounts, datatype, op, kAlgo); },
      [&] { return PMPI_Reduce_scatter_init(sendbuf, recvbuf, recvcounts, datatype, op, comm, info, request); });
}

int GRIDMPI(Reduce_scatter_block)(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return blocking(
      "MPI_Reduce_scatter_block", comm,
      [&](CommImpl& c) { return gridrt::detail::reduce_scatter_block(c, sendbuf, recvbuf, recvcount, datatype, op, kAlgo); },
      [&] { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm); },
      [&](MPI_Request* r) { return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, r); });
}
int GRIDMPI(Ireduce_scatter_block)(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                   MPI_Request* request) {
  return nonblocking(
      "MPI_Ireduce_scatter_block", comm, request, Uses{.send = datatype, .op = op},
      [&](CommImpl& c) { return gridrt::detail::reduce_scatter_block(c, sendbuf, recvbuf, recvcount, datatype, op, kAlgo); },
      [&](MPI_Request* r) { return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, r); });
}
int GRIDMPI(Reduce_scatter_block_init)(const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                       MPI_Info info, MPI_Request* request) {
  return persistent(
      "MPI_Reduce_scatter_block_init", comm, request, Uses{.send = datatype, .op = op},
      [=](CommImpl& c) { return gridrt::detail::reduce_scatter_block(c, sendbuf, recvbuf, recvcount, datatype, op, kAlgo); },
      [&] { return PMPI_Reduce_scatter_block_init(sendbuf, recvbuf, recvcount, datatype, op, comm, info, request); });
}

int GRIDMPI(Scan)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return blocking(
      "MPI_Scan", comm, [&](CommImpl& c) { return gridrt::detail::scan(c, sendbuf, recvbuf, count, datatype, op, kAlgo); },
      [&] { return PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm); },
      [&](MPI_Request* r) { return PMPI_Iscan(sendbuf, recvbuf, count, datatype, op, comm, r); });
}
int GRIDMPI(Iscan)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Iscan", comm, request, Uses{.send = datatype, .op = op},
      [&](CommImpl& c) { return gridrt::detail::scan(c, sendbuf, recvbuf, count, datatype, op, kAlgo); },
      [&](MPI_Request* r) { return PMPI_Iscan(sendbuf, recvbuf, count, datatype, op, comm, r); });
}
int GRIDMPI(Scan_init)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                       MPI_Request* request) {
  return persistent(
      "MPI_Scan_init", comm, request, Uses{.send = datatype, .op = op},
      [=](CommImpl& c) { return gridrt::detail::scan(c, sendbuf, recvbuf, count, datatype, op, kAlgo); },
      [&] { return PMPI_Scan_init(sendbuf, recvbuf, count, datatype, op, comm, info, request); });
}

int GRIDMPI(Exscan)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return blocking(
      "MPI_Exscan", comm, [&](CommImpl& c) { return gridrt::detail::exscan(c, sendbuf, recvbuf, count, datatype, op, kAlgo); },
      [&] { return PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm); },
      [&](MPI_Request* r) { return PMPI_Iexscan(sendbuf, recvbuf, count, datatype, op, comm, r); });
}
int GRIDMPI(Iexscan)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  return nonblocking(
      "MPI_Iexscan", comm, request, Uses{.send = datatype, .op = op},
      [&](CommImpl& c) { return gridrt::detail::exscan(c, sendbuf, recvbuf, count, datatype, op, kAlgo); },
      [&](MPI_Request* r) { return PMPI_Iexscan(sendbuf, recvbuf, count, datatype, op, comm, r); });
}
int GRIDMPI(Exscan_init)(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                         MPI_Request* request) {
  return persistent(
      "MPI_Exscan_init", comm, request, Uses{.send = datatype, .op = op},
      [=](CommImpl& c) { return gridrt::detail::exscan(c, sendbuf, recvbuf, count, datatype, op, kAlgo); },
      [&] { return PMPI_Exscan_init(sendbuf, recvbuf, count, datatype, op, comm, info, request); });
}
