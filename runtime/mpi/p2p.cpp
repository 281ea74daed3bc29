// Point-to-point under the MPI layer (MPI 4.0 chapter 3): on a grid communicator every
// operation goes through its channel (MPI to the members in this cluster, the transport to
// the others, MPI's matching rules across both; channel/channel.h); on MPICH's own
// communicators it is MPICH's. A blocking call to a member of this cluster, when nothing of
// the layer is in flight, is MPICH's blocking call itself: MPICH's speed, MPICH's semantics.
#include <vector>

#include "layer.h"

using gridmpi::GridComm;
using gridmpi::Channel;
using gridmpi::ChannelStatus;
using gridmpi::OpPtr;
using gridrt::detail::SendMode;

namespace {

// A point-to-point operation of a grid communicator as a request of the layer.
std::unique_ptr<gridmpi::Request> as_request(const std::shared_ptr<GridComm>& g, OpPtr op, bool send) {
  auto r = std::make_unique<gridmpi::Request>();
  r->comm = g;
  r->op = std::move(op);
  r->send = send;
  return r;
}

// Waits for a point-to-point operation and reports its outcome.
int complete(const std::shared_ptr<GridComm>& g, OpPtr op, bool send, MPI_Status* st) {
  auto r = as_request(g, std::move(op), send);
  gridmpi::wait_until([&] { return gridmpi::test(*r); }, [&] { return gridmpi::needs_mpi(*r); });
  return gridmpi::finish(*r, st);
}

// Whether a blocking call with this peer may be MPICH's own on the communicator's handle.
bool direct(const GridComm& g, int peer) {
  return !g.inter() && peer >= 0 && peer < g.size() && g.p2p->reaches_locally(peer) && !g.p2p->holds_back() && !gridmpi::layer_busy();
}

// An MPICH status about the handle's ranks, about the communicator's.
void translate(const GridComm& g, MPI_Status* st) {
  if (st != MPI_STATUS_IGNORE && st->MPI_SOURCE >= 0) st->MPI_SOURCE = g.p2p->peer_of_local(st->MPI_SOURCE);
}

int send_any(const char* function, SendMode mode, const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  std::shared_ptr<GridComm> g = gridmpi::grid(comm) ? gridmpi::grid_shared(comm) : nullptr;
  if (!g) {
    auto start = [&](MPI_Request* r) {
      switch (mode) {
        case SendMode::kSynchronous: return PMPI_Issend(buf, count, type, dest, tag, comm, r);
        case SendMode::kBuffered: return PMPI_Ibsend(buf, count, type, dest, tag, comm, r);
        case SendMode::kReady: return PMPI_Irsend(buf, count, type, dest, tag, comm, r);
        default: return PMPI_Isend(buf, count, type, dest, tag, comm, r);
      }
    };
    if (gridmpi::layer_busy()) return gridmpi::wait_native(start);
    switch (mode) {
      case SendMode::kSynchronous: return PMPI_Ssend(buf, count, type, dest, tag, comm);
      case SendMode::kBuffered: return PMPI_Bsend(buf, count, type, dest, tag, comm);
      case SendMode::kReady: return PMPI_Rsend(buf, count, type, dest, tag, comm);
      default: return PMPI_Send(buf, count, type, dest, tag, comm);
    }
  }
  if (direct(*g, dest) && mode == SendMode::kStandard) return PMPI_Send(buf, count, type, g->p2p->local_rank_of(dest), tag, g->handle);
  return gridmpi::call(function, comm,
                       [&] { return complete(g, g->p2p->isend(buf, count, type, dest, tag, mode), true, MPI_STATUS_IGNORE); });
}

int isend_any(const char* function, SendMode mode, const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  std::shared_ptr<GridComm> g = gridmpi::grid_shared(comm);
  if (!g) {
    switch (mode) {
      case SendMode::kSynchronous: return PMPI_Issend(buf, count, type, dest, tag, comm, request);
      case SendMode::kBuffered: return PMPI_Ibsend(buf, count, type, dest, tag, comm, request);
      case SendMode::kReady: return PMPI_Irsend(buf, count, type, dest, tag, comm, request);
      default: return PMPI_Isend(buf, count, type, dest, tag, comm, request);
    }
  }
  return gridmpi::call(function, comm, [&] {
    *request = gridmpi::new_request(as_request(g, g->p2p->isend(buf, count, type, dest, tag, mode), true));
    return MPI_SUCCESS;
  });
}

// A persistent operation: MPI_Start begins `begin` anew.
int persistent(const char* function, MPI_Comm comm, bool send, MPI_Datatype type, std::function<OpPtr(Channel&)> begin,
               MPI_Request* request) {
  std::shared_ptr<GridComm> g = gridmpi::grid_shared(comm);
  return gridmpi::call(function, comm, [&] {
    auto r = std::make_unique<gridmpi::Request>();
    r->comm = g;
    r->send = send;
    r->persistent = true;
    r->active = false;
    r->leases = std::make_shared<gridmpi::Leases>(std::initializer_list<MPI_Datatype>{type});
    r->restart = [begin = std::move(begin)](gridmpi::Request& q) { q.op = begin(*q.comm->p2p); };
    *request = gridmpi::new_request(std::move(r));
    return MPI_SUCCESS;
  });
}

int send_init(const char* function, SendMode mode, const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request* request) {
  return persistent(
      function, comm, true, type, [=](Channel& ch) { return ch.isend(buf, count, type, dest, tag, mode); }, request);
}

}  // namespace

int GRIDMPI(Send)(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return send_any("MPI_Send", SendMode::kStandard, buf, count, type, dest, tag, comm);
}
int GRIDMPI(Ssend)(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return send_any("MPI_Ssend", SendMode::kSynchronous, buf, count, type, dest, tag, comm);
}
int GRIDMPI(Bsend)(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return send_any("MPI_Bsend", SendMode::kBuffered, buf, count, type, dest, tag, comm);
}
int GRIDMPI(Rsend)(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  return send_any("MPI_Rsend", SendMode::kReady, buf, count, type, dest, tag, comm);
}
int GRIDMPI(Isend)(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  return isend_any("MPI_Isend", SendMode::kStandard, buf, count, type, dest, tag, comm, request);
}
int GRIDMPI(Issend)(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  return isend_any("MPI_Issend", SendMode::kSynchronous, buf, count, type, dest, tag, comm, request);
}
int GRIDMPI(Ibsend)(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  return isend_any("MPI_Ibsend", SendMode::kBuffered, buf, count, type, dest, tag, comm, request);
}
int GRIDMPI(Irsend)(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  return isend_any("MPI_Irsend", SendMode::kReady, buf, count, type, dest, tag, comm, request);
}

int GRIDMPI(Recv)(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  std::shared_ptr<GridComm> g = gridmpi::grid(comm) ? gridmpi::grid_shared(comm) : nullptr;
  if (!g) {
    if (gridmpi::layer_busy())
      return gridmpi::wait_native([&](MPI_Request* r) { return PMPI_Irecv(buf, count, type, source, tag, comm, r); }, status);
    return PMPI_Recv(buf, count, type, source, tag, comm, status);
  }
  if (direct(*g, source)) {
    const int rc = PMPI_Recv(buf, count, type, g->p2p->local_rank_of(source), tag, g->handle, status);
    translate(*g, status);
    return rc;
  }
  return gridmpi::call("MPI_Recv", comm, [&] { return complete(g, g->p2p->irecv(buf, count, type, source, tag), false, status); });
}

int GRIDMPI(Irecv)(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request) {
  std::shared_ptr<GridComm> g = gridmpi::grid_shared(comm);
  if (!g) return PMPI_Irecv(buf, count, type, source, tag, comm, request);
  return gridmpi::call("MPI_Irecv", comm, [&] {
    auto r = as_request(g, g->p2p->irecv(buf, count, type, source, tag), false);
    r->leases = std::make_shared<gridmpi::Leases>(std::initializer_list<MPI_Datatype>{type});
    *request = gridmpi::new_request(std::move(r));
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Sendrecv)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf, int recvcount,
                      MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status* status) {
  std::shared_ptr<GridComm> g = gridmpi::grid_shared(comm);
  if (!g) {
    if (!gridmpi::layer_busy())
      return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, status);
    MPI_Request r[2];
    int rc = PMPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &r[0]);
    if (rc == MPI_SUCCESS) rc = PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &r[1]);
    if (rc != MPI_SUCCESS) return rc;
    MPI_Status st[2];
    rc = gridmpi_Waitall(2, r, st);
    if (status != MPI_STATUS_IGNORE) *status = st[0];
    return rc == MPI_ERR_IN_STATUS ? (st[0].MPI_ERROR != MPI_SUCCESS ? st[0].MPI_ERROR : st[1].MPI_ERROR) : rc;
  }
  return gridmpi::call("MPI_Sendrecv", comm, [&] {
    auto recv = as_request(g, g->p2p->irecv(recvbuf, recvcount, recvtype, source, recvtag), false);
    auto send = as_request(g, g->p2p->isend(sendbuf, sendcount, sendtype, dest, sendtag), true);
    gridmpi::wait_until([&] { return gridmpi::test(*recv) & gridmpi::test(*send); },
                        [&] { return gridmpi::needs_mpi(*recv) || gridmpi::needs_mpi(*send); });
    const int rc = gridmpi::finish(*send, MPI_STATUS_IGNORE);
    const int rrc = gridmpi::finish(*recv, status);
    return rrc != MPI_SUCCESS ? rrc : rc;
  });
}

int GRIDMPI(Sendrecv_replace)(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source, int recvtag, MPI_Comm comm,
                              MPI_Status* status) {
  if (!gridmpi::grid(comm) && !gridmpi::layer_busy())
    return PMPI_Sendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm, status);
  return gridmpi::call("MPI_Sendrecv_replace", comm, [&] {
    // What goes out is packed first; what comes in then takes its place.
    int size = 0, at = 0;
    gridrt::detail::check_mpi(PMPI_Pack_size(count, type, comm, &size), "MPI_Pack_size");
    std::vector<char> out(static_cast<std::size_t>(size));
    gridrt::detail::check_mpi(gridrt::detail::PackableBuffer(buf, count, type).pack(out.data(), size, &at, comm), "MPI_Pack");
    return gridmpi_Sendrecv(out.data(), at, MPI_PACKED, dest, sendtag, buf, count, type, source, recvtag, comm, status);
  });
}

int GRIDMPI(Isendrecv)(const void* sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void* recvbuf, int recvcount,
                       MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Request* request) {
  std::shared_ptr<GridComm> g = gridmpi::grid_shared(comm);
  if (!g) return PMPI_Isendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm, request);
  return gridmpi::call("MPI_Isendrecv", comm, [&] {
    // One request for both: the receive's, which completes once the send has too.
    OpPtr send = g->p2p->isend(sendbuf, sendcount, sendtype, dest, sendtag);
    auto r = as_request(g, g->p2p->irecv(recvbuf, recvcount, recvtype, source, recvtag), false);
    r->leases = std::make_shared<gridmpi::Leases>(std::initializer_list<MPI_Datatype>{recvtype});
    gridmpi::Request* q = r.get();
    r->custom = [q, send, g] {
      const OpPtr recv = q->op;
      bool sent = g->p2p->test(*send);
      if (!g->p2p->test(*recv, &q->status) || !sent) return false;
      if (q->status.truncated) {
        q->error_class = MPI_ERR_TRUNCATE;
        q->error = "MPI_Isendrecv: the message received is longer than the buffer";
      }
      return true;
    };
    *request = gridmpi::new_request(std::move(r));
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Isendrecv_replace)(void* buf, int count, MPI_Datatype type, int dest, int sendtag, int source, int recvtag, MPI_Comm comm,
                               MPI_Request* request) {
  if (!gridmpi::grid(comm)) return PMPI_Isendrecv_replace(buf, count, type, dest, sendtag, source, recvtag, comm, request);
  return gridmpi::call("MPI_Isendrecv_replace", comm, [&] {
    int size = 0, at = 0;
    gridrt::detail::check_mpi(PMPI_Pack_size(count, type, comm, &size), "MPI_Pack_size");
    auto out = std::make_shared<std::vector<char>>(static_cast<std::size_t>(size));
    gridrt::detail::check_mpi(gridrt::detail::PackableBuffer(buf, count, type).pack(out->data(), size, &at, comm), "MPI_Pack");
    const int rc = gridmpi_Isendrecv(out->data(), at, MPI_PACKED, dest, sendtag, buf, count, type, source, recvtag, comm, request);
    if (gridmpi::Request* q = gridmpi::request(*request)) {  // the packed copy lives as long as the request
      auto done = q->custom;
      q->custom = [done, out] { return done(); };
    }
    return rc;
  });
}

// ---------------------------------------------------------------- probes

int GRIDMPI(Iprobe)(int source, int tag, MPI_Comm comm, int* flag, MPI_Status* status) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Iprobe(source, tag, comm, flag, status);
  return gridmpi::call("MPI_Iprobe", comm, [&] {
    gridrt::detail::progress::poll_all();  // (a probe is where programs that poll let things move)
    ChannelStatus cs;
    *flag = g->p2p->iprobe(source, tag, &cs);
    if (*flag) gridmpi::fill_status(status, cs);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Probe)(int source, int tag, MPI_Comm comm, MPI_Status* status) {
  GridComm* g = gridmpi::grid(comm);
  if (!g && !gridmpi::layer_busy()) return PMPI_Probe(source, tag, comm, status);
  int flag = 0, rc = MPI_SUCCESS;
  gridmpi::wait_until([&] { return (rc = gridmpi_Iprobe(source, tag, comm, &flag, status)) != MPI_SUCCESS || flag; }, [] { return true; });
  return rc;
}

int GRIDMPI(Improbe)(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message, MPI_Status* status) {
  std::shared_ptr<GridComm> g = gridmpi::grid_shared(comm);
  if (!g) return PMPI_Improbe(source, tag, comm, flag, message, status);
  return gridmpi::call("MPI_Improbe", comm, [&] {
    gridrt::detail::progress::poll_all();
    gridrt::detail::MessagePtr m = g->p2p->improbe(source, tag);
    *flag = m != nullptr;
    if (!m) return MPI_SUCCESS;
    gridmpi::fill_status(status, m->status);
    *message = m->proc_null ? MPI_MESSAGE_NO_PROC : gridmpi::new_message(g, m);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Mprobe)(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  if (!gridmpi::grid(comm) && !gridmpi::layer_busy()) return PMPI_Mprobe(source, tag, comm, message, status);
  int flag = 0, rc = MPI_SUCCESS;
  gridmpi::wait_until([&] { return (rc = gridmpi_Improbe(source, tag, comm, &flag, message, status)) != MPI_SUCCESS || flag; },
                      [] { return true; });
  return rc;
}

int GRIDMPI(Imrecv)(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Request* request) {
  if (!gridmpi::is_layer_message(*message)) return PMPI_Imrecv(buf, count, type, message, request);
  return gridmpi::call("MPI_Imrecv", MPI_COMM_WORLD, [&] {
    auto [g, m] = gridmpi::take_message(message);
    auto r = as_request(g, g->p2p->imrecv(m, buf, count, type), false);
    r->leases = std::make_shared<gridmpi::Leases>(std::initializer_list<MPI_Datatype>{type});
    *request = gridmpi::new_request(std::move(r));
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Mrecv)(void* buf, int count, MPI_Datatype type, MPI_Message* message, MPI_Status* status) {
  if (!gridmpi::is_layer_message(*message)) return PMPI_Mrecv(buf, count, type, message, status);
  return gridmpi::call("MPI_Mrecv", MPI_COMM_WORLD, [&] {
    auto [g, m] = gridmpi::take_message(message);
    return complete(g, g->p2p->imrecv(m, buf, count, type), false, status);
  });
}

// ---------------------------------------------------------------- persistent requests

int GRIDMPI(Send_init)(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (!gridmpi::grid(comm)) return PMPI_Send_init(buf, count, type, dest, tag, comm, request);
  return send_init("MPI_Send_init", SendMode::kStandard, buf, count, type, dest, tag, comm, request);
}
int GRIDMPI(Ssend_init)(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (!gridmpi::grid(comm)) return PMPI_Ssend_init(buf, count, type, dest, tag, comm, request);
  return send_init("MPI_Ssend_init", SendMode::kSynchronous, buf, count, type, dest, tag, comm, request);
}
int GRIDMPI(Bsend_init)(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (!gridmpi::grid(comm)) return PMPI_Bsend_init(buf, count, type, dest, tag, comm, request);
  return send_init("MPI_Bsend_init", SendMode::kBuffered, buf, count, type, dest, tag, comm, request);
}
int GRIDMPI(Rsend_init)(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  if (!gridmpi::grid(comm)) return PMPI_Rsend_init(buf, count, type, dest, tag, comm, request);
  return send_init("MPI_Rsend_init", SendMode::kReady, buf, count, type, dest, tag, comm, request);
}
int GRIDMPI(Recv_init)(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request* request) {
  if (!gridmpi::grid(comm)) return PMPI_Recv_init(buf, count, type, source, tag, comm, request);
  return persistent(
      "MPI_Recv_init", comm, false, type, [=](Channel& ch) { return ch.irecv(buf, count, type, source, tag); }, request);
}
