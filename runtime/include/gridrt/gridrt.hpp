// libgridrt: the runtime an application links to run as one job across clusters.
//
//   gridrt::init(&argc, &argv);            // wraps MPI_Init_thread; MPI_COMM_WORLD = this cluster
//   gridrt::rank(), gridrt::size()         // global rank and size over every cluster
//   gridrt::group_name()                   // the JobProfile group this process belongs to
//   gridrt::group_color("workers")         // a group's color: same in every process, usable
//                                          // as the color of MPI_Comm_split
//   gridrt::send / recv / isend / irecv    // point-to-point between any two global ranks
//   gridrt::barrier()                      // grid-wide, crossing the WAN once per cluster
//   gridrt::finalize();
//
// Errors are thrown as gridrt::Error (docs/errors.md). Waiting never busy-spins on a socket,
// and yields the CPU while waiting on MPI (docs/architecture.md, "Threads and waiting").
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace gridrt {

// `error_class` is the MPI error class the failure is (what the MPI layer returns for it):
// MPI_ERR_OTHER unless the thrower says more.
struct Error : std::runtime_error {
  explicit Error(const std::string& what, int mpi_error_class = MPI_ERR_OTHER) : std::runtime_error(what), error_class(mpi_error_class) {}
  int error_class;
};
// A call that names what cannot be: a rank, root, count, datatype, color or algorithm out
// of range, MPI_IN_PLACE where MPI does not allow it, the null communicator.
struct ArgumentError : Error {
  explicit ArgumentError(const std::string& what, int mpi_error_class = MPI_ERR_ARG) : Error(what, mpi_error_class) {}
};

inline constexpr int kAnyTag = -1;
inline constexpr int kMaxTag = (1 << 30) - 1;

// Levels of the physical topology, outermost first (Coti, Herault, Cappello, "MPI
// Applications on Grids: a Topology-Aware Approach", 2009, §3.1).
enum class Level { kSite = 0, kCluster = 1, kNode = 2 };

struct Status {
  int source = -1;
  int tag = -1;
  std::size_t bytes = 0;
};

// The handles below keep their implementations private (the runtime reaches them through
// one internal door, detail::Access); nothing in this header hands out an internal type.
namespace detail {
struct Access;
struct RequestState;
struct CommImpl;
struct CostShape;
}  // namespace detail

// A point-to-point operation in flight (isend, irecv), completed by wait or test. Empty
// (valid() false) when made by its default constructor.
class Request {
 public:
  Request() = default;
  bool valid() const { return state_ != nullptr; }

 private:
  friend struct detail::Access;
  explicit Request(std::shared_ptr<detail::RequestState> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::RequestState> state_;
};

// Life cycle. init() calls MPI_Init_thread(required) and joins the job through the relay;
// outside gridrun it throws Error. finalize() calls MPI_Finalize.
void init(int* argc, char*** argv, int required_thread_level = MPI_THREAD_FUNNELED);
void finalize();
bool initialized();

// Global rank and size of the whole job.
int rank();
int size();

// Logical topology: the JobProfile's groups. Colors are the groups' indices in JobProfile
// order: a bijection, the same in every process of the job.
int num_groups();
const std::string& group_name();              // this process's group
int group_color();                            // this process's group's color
int group_of(int rank);                       // color of any rank's group
int group_color(const std::string& name);     // throws Error for an unknown group
const std::string& group_name_of(int color);  // throws Error for an unknown color

// Physical topology: site, cluster and node of any rank, as colors (indices) and names.
int level_color(Level level, int rank);
int level_color(Level level);
const std::string& level_name(Level level, int rank);
int num_colors(Level level);
// This process's cluster: MPI_COMM_WORLD's members, and a private duplicate of it.
MPI_Comm cluster_comm();
int cluster_first_rank();

// MPICH-G2-style topology attributes for porting code written for them: depth(r) levels for
// every rank r, and colors(r)[l] its color at level l; level 0 is the whole grid (color 0),
// then site, cluster, node. Two ranks share a color at level l iff they can talk at that level.
int depth(int rank);
std::vector<int> colors(int rank);

// Point-to-point between global ranks. Messages from one source are matched in order on
// (source, tag); tag may be kAnyTag when receiving. Inside a cluster these are MPI calls on
// a private communicator; across clusters they go through the relays.
void send(const void* buf, std::size_t bytes, int dst, int tag);
Status recv(void* buf, std::size_t capacity, int src, int tag);
Request isend(const void* buf, std::size_t bytes, int dst, int tag);  // buf reusable at return only
                                                                      // once the request completes
Request irecv(void* buf, std::size_t capacity, int src, int tag);
Status wait(Request& req);
bool test(Request& req, Status* status = nullptr);
void wait_all(std::vector<Request>& reqs);

// Grid-wide barrier over every process: Comm::world().barrier().
void barrier();

// Clusters the job goes on without, by name: their part failed in a job whose JobProfile
// says <onClusterLoss>continue</onClusterLoss> (docs/jobprofile.md). Whatever waits on their
// ranks fails with an Error naming the cluster; collectives over communicators that hold
// them cannot complete. A task queue hands their tasks to the others (gridrt/queue.hpp).
// finalize() then waits for the others only.
std::vector<std::string> lost_clusters();

// What this process has sent across the wide-area network (to clusters of other sites)
// through the relays so far, as its relay counted it: messages (a collective's or the
// application's, however many fragments each) and their payload bytes. Direct connections
// between processes are not counted.
// gridbench reports per-call differences of these, summed over every process.
struct WanTraffic {
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
};
WanTraffic wan_traffic();

// Which algorithm a collective uses (docs/algorithms.md):
//   kHier  hierarchical: at most one WAN hop on any path, each piece of data enters a cluster
//          once, the steps inside a cluster are MPICH collectives (Coti, Herault, Cappello 2009, §3.2; MagPIe);
//   kFlat  topology-unaware, as a plain MPI over all processes does it (binomial tree,
//          recursive doubling, dissemination), over the same transport: the baseline;
//   kAuto  chosen per operation and size;
//   kDefault  what GRIDRT_COLL says (hier, flat or auto; auto when unset).
enum class Algo { kDefault, kAuto, kHier, kFlat };

// The same predictions without a job, for a grid that may not exist yet (gridbench
// --predict-only, gridrun calibrate's sample run): `ranks[i]` processes in cluster
// `clusters[i]` at site `sites[i]`, ranks in cluster order. Clusters and sites the model
// does not name take its typical values (the first it has of each kind). The model is read
// and the grid's shape worked out once, when the predictor is made; constructors throw
// Error for a model that cannot be read or a shape that is not one.
struct GridShape {
  std::vector<std::string> clusters, sites;
  std::vector<int> ranks;
  // The jobs' flow-control window per stream (GRIDRT_WINDOW), bytes, fixed; 0: the default
  // (which grows where a line asks for more: docs/protocol.md, "Flow control").
  std::size_t window = 0;
};
class GridPredictor {
 public:
  static GridPredictor from_file(const std::string& model_file, const GridShape& grid);
  static GridPredictor from_json(const std::string& model_json, const GridShape& grid);
  // As Comm::predicted_us; kAuto (or kDefault): the lesser of the two. `route`, for the
  // hierarchical gather and scatter: packed, ordered, binomial, chain or direct; for bcast
  // and reduce: packed, binomial or chain; for alltoall: agents, or groups on two clusters;
  // for allreduce: heads, rooted or reduce-scatter; for reduce_scatter: heads or rooted
  // (docs/algorithms.md, "Routes of scatter and gather"); empty: the least predicted, as
  // auto takes it. A route the operation lacks means its first; the other operations have
  // one route and ignore it. `slice`: the bytes per slice of the pipelined bcast, reduce and
  // allreduce, and of the reduce_scatter's reduction inside the clusters (as GRIDRT_SLICE);
  // 0: the model's choice, as auto's (64 KiB for reduce_scatter).
  double predicted_us(const std::string& op, std::size_t bytes, Algo algo, int root = 0, const std::string& route = "",
                      std::size_t slice = 0) const;

 private:
  explicit GridPredictor(std::shared_ptr<const detail::CostShape> shape) : shape_(std::move(shape)) {}
  std::shared_ptr<const detail::CostShape> shape_;
};

// A grid communicator: an ordered set of the job's processes with its own traffic, and the
// topology below it (which cluster each member is in, and an MPI communicator of the members
// in this process's cluster for the steps inside it), worked out once when it is made. Copies share one
// communicator. Collectives must be called by every member, in the same order, as in MPI.
// Counts are in elements of `type`; any MPI datatype (derived ones included) and any MPI_Op
// (user-defined and non-commutative ones included: the result is always the rank-order one).
class Comm {
 public:
  Comm() = default;     // the null communicator (what split gives for MPI_UNDEFINED)
  static Comm world();  // every process of the job, in global rank order

  // Collective over this communicator. Members with the same color form a new one, ordered
  // by key, then by rank here; color MPI_UNDEFINED gives the null communicator.
  Comm split(int color, int key) const;
  Comm dup() const;

  bool valid() const { return impl_ != nullptr; }
  int rank() const;
  int size() const;
  int global_rank(int r) const;  // the job-wide rank of member r
  int num_clusters() const;      // clusters holding members
  int cluster_of(int r) const;   // in [0, num_clusters()), clusters numbered by first member
  // Nodes holding the members in this process's cluster as the collectives' node level sees
  // them (shared memory: MPI_Comm_split_type) with GRIDRT_NODE_LEVEL=on; with more than one,
  // collectives also enter every node once. 1 when the node level is off: the cluster is
  // then one unit and MPICH handles its nodes.
  int nodes_in_cluster() const;

  void barrier(Algo algo = Algo::kDefault) const;
  void bcast(void* buf, int count, MPI_Datatype type, int root, Algo algo = Algo::kDefault) const;
  // sendbuf may be MPI_IN_PLACE at the root (its recvbuf holds its contribution).
  void reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, Algo algo = Algo::kDefault) const;
  // sendbuf may be MPI_IN_PLACE (recvbuf holds the contribution).
  void allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo = Algo::kDefault) const;
  // recvbuf gets `count` elements from every member in rank order; sendbuf may be
  // MPI_IN_PLACE (the contribution is already at this member's place in recvbuf).
  void allgather(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, Algo algo = Algo::kDefault) const;
  // The v forms: member i's block is counts[i] elements at displs[i] extents of `type`.
  void allgatherv(const void* sendbuf, int sendcount, void* recvbuf, const int* recvcounts, const int* displs, MPI_Datatype type,
                  Algo algo = Algo::kDefault) const;
  // The root's recvbuf gets `count` elements from every member in rank order; sendbuf may be
  // MPI_IN_PLACE at the root (its block is already in place).
  void gather(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, int root, Algo algo = Algo::kDefault) const;
  void gatherv(const void* sendbuf, int sendcount, void* recvbuf, const int* recvcounts, const int* displs, MPI_Datatype type, int root,
               Algo algo = Algo::kDefault) const;
  // Member r gets the r-th `count` elements of the root's sendbuf; recvbuf may be
  // MPI_IN_PLACE at the root (its block stays where it is).
  void scatter(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, int root, Algo algo = Algo::kDefault) const;
  void scatterv(const void* sendbuf, const int* sendcounts, const int* displs, void* recvbuf, int recvcount, MPI_Datatype type, int root,
                Algo algo = Algo::kDefault) const;
  // Member i's j-th block goes to member j's i-th place; sendbuf may be MPI_IN_PLACE (the
  // data sent is what recvbuf holds, laid out as the receive).
  void alltoall(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, Algo algo = Algo::kDefault) const;
  void alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, void* recvbuf, const int* recvcounts, const int* rdispls,
                 MPI_Datatype type, Algo algo = Algo::kDefault) const;
  // Member r's recvbuf gets the r-th `count` elements of the fold of everyone's sendbuf
  // (size() * count elements); sendbuf may be MPI_IN_PLACE (recvbuf holds the contribution).
  void reduce_scatter_block(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, Algo algo = Algo::kDefault) const;
  // The v form: member r's block is counts[r] elements, the blocks laid end to end.
  void reduce_scatter(const void* sendbuf, void* recvbuf, const int* counts, MPI_Datatype type, MPI_Op op,
                      Algo algo = Algo::kDefault) const;

  // What the grid's calibrated model (GRIDRT_MODEL; docs/models.md) predicts one call of
  // collective `op` (barrier, bcast, reduce, allreduce, gather, scatter, allgather, alltoall,
  // scan, reduce_scatter) takes here, in microseconds: `bytes` the message (bcast, reduce,
  // allreduce, scan), a member's block (gather, scatter, allgather, reduce_scatter) or a
  // pair's block (alltoall);
  // kAuto (or kDefault) what auto would choose, the lesser of the two. -1 without a model,
  // or when it lacks a pair of this communicator's clusters. Throws Error for an unknown op.
  double predicted_us(const std::string& op, std::size_t bytes, Algo algo = Algo::kAuto, int root = 0) const;

 private:
  friend struct detail::Access;  // (the task queue talks over a Comm's members)
  explicit Comm(std::shared_ptr<detail::CommImpl> impl) : impl_(std::move(impl)) {}
  detail::CommImpl& impl() const;
  std::shared_ptr<detail::CommImpl> impl_;
};

}  // namespace gridrt
