// libgridmpi, the MPI layer: the MPI C API over MPICH's PMPI entry points, so that an
// unmodified MPI program run by gridrun has an MPI_COMM_WORLD that spans every cluster of
// its job (docs/mpi.md). Loaded in front of MPICH by the process monitor (LD_PRELOAD); every
// MPI function is defined in the generated wrappers (mpi_api.py), which call the functions
// defined here as GRIDMPI(Name) or guard handles and pass the call to MPICH.
//
// Handles. A communicator whose members span clusters (a "grid communicator") is, to the
// application, an MPICH communicator of its members in this cluster, in rank order: names,
// attributes, info and error handlers live on it, and its point-to-point inside the cluster
// travels on it; the layer keeps the rest (members, topology, collectives, the channel to
// other clusters) in a GridComm under that handle. A communicator inside one cluster is
// MPICH's own and never touches the layer's state. Groups that hold processes of other
// clusters, the layer's requests and matched-probe messages have handles MPICH never made
// (kind 0, "invalid" to MPICH, so that one leaking into MPICH fails loudly there).
//
// Every source here is compiled with the PMPI renaming header: the layer calls MPICH alone,
// and its own functions by their gridmpi_ names.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gridmpi_api.h"
#include "coll/collectives.h"
#include "comm.h"

namespace gridmpi {

using gridrt::detail::Channel;
using gridrt::detail::ChannelStatus;
using gridrt::detail::CollectiveOp;
using gridrt::detail::CommImpl;
using gridrt::detail::OpPtr;

// A grid communicator.
struct GridComm {
  MPI_Comm handle = MPI_COMM_NULL;  // the application's: MPICH's communicator of this cluster's members
  std::shared_ptr<CommImpl> impl;   // the members (global ranks), the topology below, the collectives
  std::shared_ptr<Channel> p2p;     // the members' own point-to-point, on `handle` and context + 1
  // A Cartesian or graph topology given to it (MPI_Cart_create, MPI_Graph_create).
  struct Cart {
    std::vector<int> dims, periods;
  };
  struct Graph {
    std::vector<int> index, edges;
  };
  // A distributed graph topology (MPI_Dist_graph_create(_adjacent)): this member's own edges.
  struct DistGraph {
    std::vector<int> sources, sourceweights, destinations, destweights;
    bool weighted = false;
  };
  std::optional<Cart> cart;
  std::optional<Graph> graph;
  std::optional<DistGraph> dist_graph;
  // An intercommunicator (impl->remote set; impl is then its local group, and p2p's ranks
  // are the remote group's): whether its local group comes first where the two groups are
  // put in one order (`handle` holds both groups' members in this cluster in that order).
  bool local_first = false;
  std::uint64_t lanes = 0;  // persistent collectives made on it so far (each has its lane)

  int size() const { return impl->size(); }
  int rank() const { return impl->me; }
  bool inter() const { return impl->remote != nullptr; }
};

// The neighbours of this member of a grid communicator with a virtual topology (MPI 4.0
// §8.6: a Cartesian one's, dimension by dimension, the one below then the one above; a
// graph's neighbours; a distributed graph's sources and destinations), MPI_PROC_NULL as -1,
// and the slot of neighbor_exchange (coll/collectives.h) each block travels in: along a
// Cartesian dimension, a block sent to the neighbour below is received by it as the block
// from its neighbour above, in the slot of that direction. ArgumentError (MPI_ERR_TOPOLOGY)
// without a topology.
struct Neighborhood {
  std::vector<int> sources, destinations;
  std::vector<int> source_slots, destination_slots;
  int slots = 1;
};
Neighborhood neighborhood(const GridComm& g);

// Whether this process is in a grid job (MPI_Init found gridrun's environment) and not yet
// finalised.
bool active();
// The grid communicator behind a handle, or null (MPICH's own communicator, or not one).
GridComm* grid(MPI_Comm comm);
std::shared_ptr<GridComm> grid_shared(MPI_Comm comm);

// A new communicator of these members (global ranks in rank order; this process is member
// `me`, or -1 when it is not a member) made collectively over a parent: `handle` is the
// MPICH communicator of the members in this cluster (MPI_COMM_NULL where me is -1), made
// by the caller from the parent's, and `local` another for the collectives' own messages.
// When every member sits in this cluster it is `handle` alone, MPICH's own; otherwise a
// grid communicator is registered under it. Returns what the application gets.
MPI_Comm adopt(std::vector<int> members, int me, std::uint32_t context, MPI_Comm handle, MPI_Comm local);
// Registers a grid communicator under its handle (adopt does for intracommunicators).
void enroll(std::shared_ptr<GridComm> g);
// The layer's intercommunicator behind a handle, or null (intercomm.cpp).
GridComm* grid_inter(MPI_Comm comm);
// A tag for the string tag of MPI 4's constructors from groups, the same everywhere (comms.cpp).
int tag_of(const char* stringtag);
// MPI_Comm_dup and MPI_Comm_split of a grid intercommunicator (intercomm.cpp).
int dup_inter(GridComm& g, MPI_Info info, MPI_Comm* newcomm);
int split_inter(GridComm& g, int color, int key, MPI_Comm* newcomm);
// The parts of a non-blocking duplicate of a grid intercommunicator: contexts agreed by both
// groups (an offer of each member, the agreed one written to `agreed`), and the duplicate
// made on them from MPICH's duplicates of the handle and of the local group's communicator.
gridrt::detail::Async<> agree_on_inter_context(CommImpl& c, unsigned offer, unsigned* agreed);
MPI_Comm adopt_inter_dup(const GridComm& g, std::uint32_t context, MPI_Comm handle, MPI_Comm part);
// Forgets a grid communicator (MPI_Comm_free); its MPICH handle is the caller's to free.
void forget(MPI_Comm comm);
// A duplicate of an MPICH communicator of this cluster (with `info`, if given), waited for
// as the runtime waits: a blocking MPICH call would busy-poll while the cluster's other
// members are still on their way from a WAN exchange.
MPI_Comm dup_in_cluster(MPI_Comm comm, MPI_Info info = MPI_INFO_NULL);
// Global ranks of the members of an MPICH communicator of this cluster, in rank order.
std::vector<int> native_members(MPI_Comm comm);
// Global ranks of a communicator's members, whatever it is.
std::vector<int> members_of(MPI_Comm comm);
int first_rank();                  // this cluster's first global rank
bool in_this_cluster(int global);  // whether a global rank is in this process's cluster

// ---------------------------------------------------------------- errors

// Reports an error of `comm` (or MPI_COMM_WORLD) as MPI does: a code of `error_class`
// whose MPI_Error_string is `what`, through the communicator's error handler. With
// MPI_ERRORS_ARE_FATAL (the default) or MPI_ERRORS_ABORT the job ends here, `what` on
// stderr; otherwise the handler runs and the code is returned.
int fail(MPI_Comm comm, int error_class, const std::string& what);
// Ends the whole job with `status`, saying why on stderr, naming this process's rank.
[[noreturn]] void abort_job(int status, const std::string& why);
// Runs `body`; a gridrt error it throws is reported by report(error class, text) as
// "FUNCTION: what" with the error's MPI class (anything else as MPI_ERR_INTERN).
template <typename Report, typename F> int reporting(const char* function, Report&& report, F&& body) {
  try {
    return body();
  } catch (const gridrt::Error& e) {
    return report(e.error_class, std::string(function) + ": " + e.what());
  } catch (const std::exception& e) { return report(MPI_ERR_INTERN, std::string(function) + ": " + e.what()); }
}
// The same through comm's error handler.
template <typename F> int call(const char* function, MPI_Comm comm, F&& body) {
  return reporting(
      function, [comm](int error_class, const std::string& what) { return fail(comm, error_class, what); }, std::forward<F>(body));
}
// An error code of `error_class` whose MPI_Error_string is `what`, no handler run (for an
// error whose handler has run already).
int error_code(int error_class, const std::string& what);
// The same as fail() for a file, through its error handler (MPI_FILE_NULL's for MPI_File_open).
int fail_file(MPI_File file, int error_class, const std::string& what);
// MPI_ERR_COMM for a handle that is no communicator.
int bad_comm(const char* function);

// Fills an MPI status from a channel's (count in bytes: MPI_Get_count divides).
void fill_status(MPI_Status* st, const ChannelStatus& cs);
void empty_status(MPI_Status* st);

// ---------------------------------------------------------------- groups

// A group as global ranks; made an MPICH group when all sit in this cluster (then MPICH
// can take it anywhere), else one of the layer's.
std::vector<int> group_members(MPI_Group group);
MPI_Group make_group(const std::vector<int>& members);
bool is_layer_group(MPI_Group group);
void free_layer_group(MPI_Group* group);

// ---------------------------------------------------------------- datatypes and ops in use

// MPI lets a program free a datatype or an op while an operation that uses it is pending;
// the operation still completes normally (MPI 4.0, sections 5.1.9 and 6.9.5). MPICH counts
// the uses of its own operations, but the layer's start MPICH's work later (a receive from
// another cluster unpacks when its data is in; a collective's steps inside the cluster start
// as earlier steps end), so each of its requests holds Leases on what it uses: MPI_Type_free
// and MPI_Op_free of a leased handle return at once and MPICH frees it when the last lease
// ends. Predefined handles need none.
class Leases {
 public:
  Leases() = default;
  Leases(std::initializer_list<MPI_Datatype> types, MPI_Op op = MPI_OP_NULL);
  Leases(const Leases&) = delete;
  Leases& operator=(const Leases&) = delete;
  ~Leases();
  void type(MPI_Datatype t);
  void types(const MPI_Datatype* ts, int n);  // (an array of them; none if ts is null)
  void op(MPI_Op o);

 private:
  std::vector<MPI_Datatype> types_;
  std::vector<MPI_Op> ops_;
};

// ---------------------------------------------------------------- requests

// One of the layer's requests: a point-to-point operation on a grid communicator, a
// collective in flight, or a persistent one of either (started anew by each MPI_Start).
struct Request {
  std::shared_ptr<GridComm> comm;  // (errors go through its handler)
  MPI_Win win = MPI_WIN_NULL;      // a one-sided operation's window: its errors go through the window's handler
  OpPtr op;                        // a point-to-point operation, on comm->p2p
  std::shared_ptr<CollectiveOp> coll;
  bool send = false;
  std::shared_ptr<Leases> leases;  // the user's datatypes and op it uses
  // Anything else the layer waits on (MPI_Comm_idup's agreement): true once over; may throw.
  std::function<bool()> custom;
  // Persistent: what MPI_Start does, and whether it is under way.
  std::function<void(Request&)> restart;
  bool persistent = false, active = true;
  // Whether it is over, and with what (tested by test(): set once).
  bool complete = false;
  ChannelStatus status;
  int error_class = MPI_SUCCESS;
  std::string error;
};
bool is_layer_request(MPI_Request r);
MPI_Request new_request(std::unique_ptr<Request> r);
Request* request(MPI_Request r);
void free_request(MPI_Request* r);
// Takes a request out of the table (its handle becomes MPI_REQUEST_NULL).
std::unique_ptr<Request> release_request(MPI_Request* r);
// Tests one of the layer's requests (moving it on); true once it is over.
bool test(Request& r);
// Whether waiting for it needs MPI to be polled.
bool needs_mpi(const Request& r);
// A request's outcome for the application: the status filled, the error (reported through
// its communicator's handler) returned as a code.
int finish(Request& r, MPI_Status* st);
// Lets an unfinished operation go on by itself (MPI_Request_free of an active request).
void detach(std::unique_ptr<Request> r);

// Waits, as the runtime waits (progress.h), until done() holds; needs_mpi() says whether MPI
// must be polled meanwhile.
void wait_until(const std::function<bool()>& done, const std::function<bool()>& needs_mpi);

// Whether the layer has work in flight that only waits move on (non-blocking collectives,
// held-back receives): MPICH's blocking calls must then be made non-blocking and waited for
// as the runtime waits, so that it moves meanwhile (MPI's progress rule).
bool layer_busy();
// An MPICH operation started by start(&request), waited for so.
int wait_native(const std::function<int(MPI_Request*)>& start, MPI_Status* st = MPI_STATUS_IGNORE);

// Matched-probe messages of grid communicators.
MPI_Message new_message(std::shared_ptr<GridComm> comm, gridrt::detail::MessagePtr m);
bool is_layer_message(MPI_Message m);
std::pair<std::shared_ptr<GridComm>, gridrt::detail::MessagePtr> take_message(MPI_Message* m);

// ---------------------------------------------------------------- the runtime's hooks

void on_initialized();         // gridrt::init is done: MPI_COMM_WORLD becomes the job's
void leave_ld_preload();       // this process initialised MPI: what it starts does not load the layer
void make_topology_keyvals();  // (topology.cpp)
void forget_topology_keyvals();
void forget_files();   // (files.cpp: the grid files still open are forgotten, as windows are)
void on_finalizing();  // gridrt::finalize begins: the layer's state goes

}  // namespace gridmpi
