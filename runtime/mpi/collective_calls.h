// The three ways the MPI layer calls a collective on a communicator: blocking, non-blocking
// (a request that every later wait or test moves on) and persistent (a request each
// MPI_Start runs anew, on a lane of its own); on MPICH's own communicators, MPICH's call
// (`native`). Shared by the collectives (collectives.cpp) and the neighbourhood
// collectives (neighbors.cpp).
#pragma once

#include "layer.h"

namespace gridmpi {

using Make = std::function<gridrt::detail::Async<>(CommImpl&)>;
inline constexpr gridrt::Algo kAlgo = gridrt::Algo::kDefault;  // GRIDRT_COLL's choice

// (A template, not std::function: cluster-local calls pass straight to MPICH, and building
// three std::functions per call cost them 15%.)
template <typename MakeF, typename NativeF, typename StartF>
int blocking(const char* function, MPI_Comm comm, const MakeF& make, const NativeF& native, const StartF& native_start) {
  if (!grid(comm)) return layer_busy() ? wait_native(native_start) : native();
  std::shared_ptr<GridComm> g = grid_shared(comm);
  return call(function, comm, [&] {
    gridrt::detail::run_collective(g->impl, make(*g->impl));
    return MPI_SUCCESS;
  });
}

// The user's datatypes and op a non-blocking or persistent collective uses (leased while
// it lives: the program may free them before it completes); alltoallw's type arrays, one
// per member (of the remote group, on an intercommunicator) unless their lengths are given
// (the neighbourhood all-to-all's, one per neighbour).
struct Uses {
  MPI_Datatype send = MPI_DATATYPE_NULL, recv = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  const MPI_Datatype *sendtypes = nullptr, *recvtypes = nullptr;
  int sendtypes_length = -1, recvtypes_length = -1;

  std::shared_ptr<Leases> lease(const GridComm& g) const {
    auto l = std::make_shared<Leases>(std::initializer_list<MPI_Datatype>{send, recv}, op);
    const int entries = g.inter() ? static_cast<int>(g.impl->remote->members.size()) : g.size();
    l->types(sendtypes, sendtypes_length < 0 ? entries : sendtypes_length);
    l->types(recvtypes, recvtypes_length < 0 ? entries : recvtypes_length);
    return l;
  }
};

int nonblocking(const char* function, MPI_Comm comm, MPI_Request* request, const Uses& uses, const Make& make,
                const std::function<int(MPI_Request*)>& native);
int persistent(const char* function, MPI_Comm comm, MPI_Request* request, const Uses& uses, Make make, const std::function<int()>& native);

}  // namespace gridmpi
