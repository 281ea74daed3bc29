// The MPI layer's state: its grid communicators, groups, requests and messages, errors,
// and the runtime's hooks that make MPI_COMM_WORLD the job's (layer.h).
#include "layer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "transport/message_transport.h"
#include "windows.h"

namespace gridmpi {

namespace {
bool g_active = false;
std::unordered_map<MPI_Comm, std::shared_ptr<GridComm>> g_comms;
MPI_Group g_world_group = MPI_GROUP_NULL;  // MPICH's world: this cluster's processes

// Handles of the layer's objects: kind 0 (never one of MPICH's), the object type's bits
// (group 0x08000000, request 0x2c000000), and an index from 1 (0 is the type's null).
constexpr int kGroupBits = 0x08000000;
constexpr int kRequestBits = 0x2c000000;
constexpr int kMessageBits = 0x2e000000;
constexpr int kIndexMask = 0x01ffffff;

// A table of objects behind handles, reusing freed slots.
template <typename T> class Table {
 public:
  int add(T v) {
    if (!free_.empty()) {
      const int i = free_.back();
      free_.pop_back();
      slots_[i] = std::move(v);
      used_[i] = true;
      return i + 1;
    }
    slots_.push_back(std::move(v));
    used_.push_back(true);
    if (slots_.size() > static_cast<std::size_t>(kIndexMask)) throw gridrt::Error("gridrt: too many handles at once", MPI_ERR_NO_MEM);
    return static_cast<int>(slots_.size());
  }
  T* find(int index) {
    const int i = index - 1;
    return i >= 0 && i < static_cast<int>(slots_.size()) && used_[i] ? &slots_[i] : nullptr;
  }
  void remove(int index) {
    const int i = index - 1;
    if (i < 0 || i >= static_cast<int>(slots_.size()) || !used_[i]) return;
    slots_[i] = T();
    used_[i] = false;
    free_.push_back(i);
  }
  void clear() {
    slots_.clear();
    used_.clear();
    free_.clear();
  }

 private:
  std::vector<T> slots_;
  std::vector<bool> used_;
  std::vector<int> free_;
};

Table<std::vector<int>> g_groups;
Table<std::unique_ptr<Request>> g_requests;
struct Message {
  std::shared_ptr<GridComm> comm;
  gridrt::detail::MessagePtr m;
};
Table<Message> g_messages;

// Requests the application let go of while under way (MPI_Request_free): moved on until
// they end, by every wait (progress.h).
class Detached : public gridrt::detail::Pollable {
 public:
  void add(std::unique_ptr<Request> r) {
    requests_.push_back(std::move(r));
    gridrt::detail::progress::add(this);
  }
  bool poll() override {
    requests_.erase(std::remove_if(requests_.begin(), requests_.end(),
                                   [](const std::unique_ptr<Request>& r) {
                                     try {
                                       return test(*r);
                                     } catch (const std::exception&) {
                                       return true;  // (nobody is left to tell)
                                     }
                                   }),
                    requests_.end());
    return requests_.empty();
  }
  bool needs_mpi() const override {
    return std::any_of(requests_.begin(), requests_.end(), [](const auto& r) { return gridmpi::needs_mpi(*r); });
  }
  void clear() {
    gridrt::detail::progress::remove(this);
    requests_.clear();
  }

 private:
  std::vector<std::unique_ptr<Request>> requests_;
};
Detached g_detached;

// Error codes with their text: MPICH makes one per (class, text), within its limit. (MPICH
// 4.0.2's MPI_Error_string garbles the text of a code added to a predefined class, so the
// layer answers for its own codes: GRIDMPI(Error_string) below.)
std::map<std::pair<int, std::string>, int> g_codes;
std::map<int, std::string> g_texts;
int code_for(int error_class, const std::string& what) {
  const auto key = std::make_pair(error_class, what);
  if (auto it = g_codes.find(key); it != g_codes.end()) return it->second;
  if (g_codes.size() >= 4096) return error_class;
  int code = error_class;
  if (PMPI_Add_error_code(error_class, &code) != MPI_SUCCESS) return error_class;
  const std::string text = what.substr(0, MPI_MAX_ERROR_STRING - 1);
  PMPI_Add_error_string(code, text.c_str());
  g_codes.emplace(key, code);
  g_texts.emplace(code, text);
  return code;
}

bool predefined(MPI_Errhandler h) { return h == MPI_ERRORS_ARE_FATAL || h == MPI_ERRORS_RETURN || h == MPI_ERRORS_ABORT; }
}  // namespace

bool active() { return g_active; }

GridComm* grid(MPI_Comm comm) {
  if (g_comms.empty()) return nullptr;
  auto it = g_comms.find(comm);
  return it == g_comms.end() ? nullptr : it->second.get();
}

std::shared_ptr<GridComm> grid_shared(MPI_Comm comm) {
  auto it = g_comms.find(comm);
  return it == g_comms.end() ? nullptr : it->second;
}

int first_rank() { return gridrt::detail::state().topo.clusters[gridrt::detail::state().cluster].first_rank; }

bool in_this_cluster(int global) {
  const auto& s = gridrt::detail::state();
  return s.topo.cluster_of(static_cast<std::uint32_t>(global)) == s.cluster;
}

MPI_Comm adopt(std::vector<int> members, int me, std::uint32_t context, MPI_Comm handle, MPI_Comm local) {
  if (me < 0) {
    if (local != MPI_COMM_NULL) PMPI_Comm_free(&local);
    return MPI_COMM_NULL;
  }
  if (std::all_of(members.begin(), members.end(), in_this_cluster)) {  // MPICH's own
    if (local != MPI_COMM_NULL) PMPI_Comm_free(&local);
    return handle;
  }
  auto g = std::make_shared<GridComm>();
  g->handle = handle;
  g->impl = CommImpl::make(std::move(members), me, context, local);
  g->p2p = std::make_shared<Channel>(g->impl->members, g->impl->local_ranks(), handle, gridrt::detail::state().messages, context + 1,
                                     static_cast<int>(gridrt::detail::state().topo.size()));
  enroll(g);
  return handle;
}

void enroll(std::shared_ptr<GridComm> g) { g_comms[g->handle] = std::move(g); }

GridComm* grid_inter(MPI_Comm comm) {
  GridComm* g = grid(comm);
  return g && g->inter() ? g : nullptr;
}

void forget(MPI_Comm comm) { g_comms.erase(comm); }

MPI_Comm dup_in_cluster(MPI_Comm comm, MPI_Info info) {
  MPI_Comm out = MPI_COMM_NULL;
  MPI_Request r = MPI_REQUEST_NULL;
  if (info == MPI_INFO_NULL) gridrt::detail::check_mpi(PMPI_Comm_idup(comm, &out, &r), "MPI_Comm_idup in the cluster");
  else gridrt::detail::check_mpi(PMPI_Comm_idup_with_info(comm, info, &out, &r), "MPI_Comm_idup in the cluster");
  gridrt::detail::wait_mpi(&r, MPI_STATUS_IGNORE);
  return out;
}

std::vector<int> native_members(MPI_Comm comm) {
  MPI_Group g;
  PMPI_Comm_group(comm, &g);
  std::vector<int> out = group_members(g);
  PMPI_Group_free(&g);
  return out;
}

std::vector<int> members_of(MPI_Comm comm) {
  if (GridComm* g = grid(comm)) return g->impl->members;
  return native_members(comm);
}

// ---------------------------------------------------------------- errors

int bad_comm(const char* function) {
  return fail(MPI_COMM_WORLD, MPI_ERR_COMM, std::string(function) + ": not a communicator (MPI_COMM_NULL or freed)");
}

[[noreturn]] void abort_job(int status, const std::string& why) {
  std::fflush(nullptr);
  const int rank = gridrt::detail::g ? gridrt::detail::g->rank : -1;
  std::fprintf(stderr, "gridrt: rank %d ends the job: %s\n", rank, why.c_str());
  std::fflush(stderr);
  // The process monitor reports this status for this rank; the broker then stops the job
  // everywhere and names the rank. A status of 0 (MPI_Abort(comm, 0)) looks like a rank
  // that is done: the relay is told first, so that it stops the job as well.
  if ((status & 0xff) == 0) gridrt::detail::leave_unfinalized("after it called " + why, 0);
  ::_exit(status & 0xff);
}

namespace {
MPI_Comm errors_go_to(MPI_Comm comm) { return comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm; }

// Whether an error handler ends the job (get returns a reference, released here).
bool ends_job(MPI_Errhandler h) {
  const bool fatal = h == MPI_ERRORS_ARE_FATAL || h == MPI_ERRORS_ABORT;
  if (!predefined(h)) PMPI_Errhandler_free(&h);
  return fatal;
}

bool fatal_errors(MPI_Comm target) {
  MPI_Errhandler h = MPI_ERRORS_ARE_FATAL;
  PMPI_Comm_get_errhandler(target, &h);
  return ends_job(h);
}

// A call that fails because the layer does not cover it across clusters is said once per
// function on stderr, whatever the error handler: a program that sets MPI_ERRORS_RETURN and
// goes on regardless (ARMCI-MPI does at its first window) would otherwise show its user
// only what went wrong after. (A fatal handler says it as the job ends.)
int fail_uncovered(const char* function, MPI_Comm comm, int error_class, const std::string& what) {
  static std::set<std::string> said;
  if (!fatal_errors(errors_go_to(comm)) && said.insert(function).second) {
    std::fprintf(stderr, "gridrt: rank %d: %s\n", gridrt::detail::g ? gridrt::detail::g->rank : -1, what.c_str());
    std::fflush(stderr);
  }
  return fail(comm, error_class, what);
}
}  // namespace

int fail(MPI_Comm comm, int error_class, const std::string& what) {
  const MPI_Comm target = errors_go_to(comm);
  if (fatal_errors(target)) abort_job(error_class, what);
  const int code = code_for(error_class, what);
  PMPI_Comm_call_errhandler(target, code);
  return code;
}

int fail_window(MPI_Win win, int error_class, const std::string& what) {
  MPI_Errhandler h = MPI_ERRORS_ARE_FATAL;
  PMPI_Win_get_errhandler(win, &h);
  if (ends_job(h)) abort_job(error_class, what);
  const int code = code_for(error_class, what);
  PMPI_Win_call_errhandler(win, code);
  return code;
}

int error_code(int error_class, const std::string& what) { return code_for(error_class, what); }

int fail_file(MPI_File file, int error_class, const std::string& what) {
  MPI_Errhandler h = MPI_ERRORS_RETURN;  // (MPI_FILE_NULL's, unless the program set another)
  PMPI_File_get_errhandler(file, &h);
  if (ends_job(h)) abort_job(error_class, what);
  const int code = code_for(error_class, what);
  PMPI_File_call_errhandler(file, code);
  return code;
}

// MPI_ERROR is not touched: calls with one status return their error, and those with many
// set it themselves when they fail with MPI_ERR_IN_STATUS (MPI 4.0, section 3.2.5).
void fill_status(MPI_Status* st, const ChannelStatus& cs) {
  if (st == MPI_STATUS_IGNORE) return;
  st->MPI_SOURCE = cs.source;
  st->MPI_TAG = cs.tag;
  PMPI_Status_set_elements_x(st, MPI_BYTE, static_cast<MPI_Count>(cs.bytes));
  PMPI_Status_set_cancelled(st, cs.cancelled ? 1 : 0);
}

void empty_status(MPI_Status* st) {
  ChannelStatus none;  // MPI's empty status: any source, any tag, nothing
  fill_status(st, none);
}

// ---------------------------------------------------------------- groups

bool is_layer_group(MPI_Group group) { return (group & ~kIndexMask) == kGroupBits && (group & kIndexMask) != 0; }

std::vector<int> group_members(MPI_Group group) {
  if (is_layer_group(group)) {
    const std::vector<int>* v = g_groups.find(group & kIndexMask);
    if (!v) throw gridrt::ArgumentError("gridrt: not a group (freed?)", MPI_ERR_GROUP);
    return *v;
  }
  if (group == MPI_GROUP_EMPTY) return {};
  if (group == MPI_GROUP_NULL) throw gridrt::ArgumentError("gridrt: MPI_GROUP_NULL is not a group", MPI_ERR_GROUP);
  int n = 0;
  if (PMPI_Group_size(group, &n) != MPI_SUCCESS) throw gridrt::ArgumentError("gridrt: not a group", MPI_ERR_GROUP);
  std::vector<int> ranks(n), world(n);
  for (int i = 0; i < n; ++i) ranks[i] = i;
  PMPI_Group_translate_ranks(group, n, ranks.data(), g_world_group, world.data());
  const int first = active() ? first_rank() : 0;
  for (int& r : world) r += first;
  return world;
}

MPI_Group make_group(const std::vector<int>& members) {
  if (members.empty()) return MPI_GROUP_EMPTY;
  if (std::all_of(members.begin(), members.end(), in_this_cluster)) {
    std::vector<int> local(members);
    const int first = first_rank();
    for (int& r : local) r -= first;
    MPI_Group out;
    gridrt::detail::check_mpi(PMPI_Group_incl(g_world_group, static_cast<int>(local.size()), local.data(), &out), "making a group");
    return out;
  }
  return kGroupBits | g_groups.add(members);
}

void free_layer_group(MPI_Group* group) {
  g_groups.remove(*group & kIndexMask);
  *group = MPI_GROUP_NULL;
}

// ---------------------------------------------------------------- datatypes and ops in use

namespace {

struct Use {
  int leases = 0;
  bool freed = false;  // the application freed it meanwhile: MPICH's free waits for the last lease
};
std::map<MPI_Datatype, Use> g_types_in_use;
std::map<MPI_Op, Use> g_ops_in_use;

// MPICH 4.0.2's handles say their kind in their top two bits; 1 is a predefined object.
template <typename Handle> bool predefined_handle(Handle h) { return (static_cast<unsigned>(h) >> 30) == 1u; }

template <typename Handle> void take_lease(std::map<Handle, Use>& uses, std::vector<Handle>& held, Handle h, Handle null) {
  if (h == null || predefined_handle(h)) return;
  ++uses[h].leases;
  held.push_back(h);
}

template <typename Handle, typename Free> void end_lease(std::map<Handle, Use>& uses, Handle h, Free free) {
  auto it = uses.find(h);
  if (it == uses.end() || --it->second.leases > 0) return;
  const bool freed = it->second.freed;
  uses.erase(it);
  if (freed) free(&h);
}

// MPI_Type_free or MPI_Op_free: MPICH's now, or when the last lease ends.
template <typename Handle, typename Free> int free_or_defer(std::map<Handle, Use>& uses, Handle* h, Handle null, Free free) {
  auto it = uses.find(*h);
  if (it == uses.end()) return free(h);
  it->second.freed = true;
  *h = null;
  return MPI_SUCCESS;
}

}  // namespace

Leases::Leases(std::initializer_list<MPI_Datatype> types, MPI_Op o) {
  for (MPI_Datatype t : types) type(t);
  op(o);
}
Leases::~Leases() {
  for (MPI_Datatype t : types_) end_lease(g_types_in_use, t, PMPI_Type_free);
  for (MPI_Op o : ops_) end_lease(g_ops_in_use, o, PMPI_Op_free);
}
void Leases::type(MPI_Datatype t) { take_lease(g_types_in_use, types_, t, MPI_DATATYPE_NULL); }
void Leases::types(const MPI_Datatype* ts, int n) {
  for (int i = 0; ts && i < n; ++i) type(ts[i]);
}
void Leases::op(MPI_Op o) { take_lease(g_ops_in_use, ops_, o, MPI_OP_NULL); }

// ---------------------------------------------------------------- requests

bool is_layer_request(MPI_Request r) { return (r & ~kIndexMask) == kRequestBits && (r & kIndexMask) != 0; }

MPI_Request new_request(std::unique_ptr<Request> r) { return kRequestBits | g_requests.add(std::move(r)); }

Request* request(MPI_Request r) {
  auto* p = g_requests.find(r & kIndexMask);
  return p ? p->get() : nullptr;
}

std::unique_ptr<Request> release_request(MPI_Request* r) {
  std::unique_ptr<Request> out;
  if (auto* p = g_requests.find(*r & kIndexMask)) out = std::move(*p);
  free_request(r);
  return out;
}

void free_request(MPI_Request* r) {
  g_requests.remove(*r & kIndexMask);
  *r = MPI_REQUEST_NULL;
}

void detach(std::unique_ptr<Request> r) {
  if (!r->complete && (r->op || r->coll)) g_detached.add(std::move(r));
}

bool test(Request& r) {
  if (r.complete) return true;
  if (!r.active) return true;  // an inactive persistent request: nothing to wait for
  try {
    if (r.custom) {
      if (!r.custom()) return false;
    } else if (r.coll) {
      if (!r.coll->poll()) return false;
      r.coll->rethrow();
      r.status = ChannelStatus{};
    } else if (r.op) {
      if (!r.comm->p2p->test(*r.op, &r.status)) return false;
      if (r.status.truncated) {
        r.error_class = MPI_ERR_TRUNCATE;
        r.error = "message from rank " + std::to_string(r.status.source) + " (tag " + std::to_string(r.status.tag) +
                  ") truncated: longer than the receive buffer";
      }
    }
  } catch (const gridrt::Error& e) {
    r.error_class = e.error_class;
    r.error = e.what();
  }
  r.complete = true;
  return true;
}

bool needs_mpi(const Request& r) {
  if (r.complete || !r.active) return false;
  if (r.custom) return true;
  if (r.coll) return r.coll->needs_mpi();
  return r.op && r.op->needs_mpi();
}

int finish(Request& r, MPI_Status* st) {
  if (!r.active) {
    empty_status(st);
    return MPI_SUCCESS;
  }
  if (r.send) {  // a send's status says only whether it was cancelled
    ChannelStatus s;
    s.cancelled = r.status.cancelled;
    fill_status(st, s);
  } else {
    fill_status(st, r.status);
  }
  if (r.error_class == MPI_SUCCESS) return MPI_SUCCESS;
  const int code = r.win != MPI_WIN_NULL ? fail_window(r.win, r.error_class, r.error)
                                         : fail(r.comm ? r.comm->handle : MPI_COMM_WORLD, r.error_class, r.error);
  if (st != MPI_STATUS_IGNORE) st->MPI_ERROR = code;
  return code;
}

void wait_until(const std::function<bool()>& done, const std::function<bool()>& needs_mpi) {
  gridrt::detail::wait_until(gridrt::detail::state().messages, [&] { return gridrt::detail::Waited{done(), needs_mpi()}; });
}

bool layer_busy() { return !gridrt::detail::progress::idle(); }

int wait_native(const std::function<int(MPI_Request*)>& start, MPI_Status* st) {
  MPI_Request r = MPI_REQUEST_NULL;
  int rc = start(&r);
  if (rc != MPI_SUCCESS) return rc;
  int flag = 0;
  wait_until([&] { return (rc = PMPI_Test(&r, &flag, st)) != MPI_SUCCESS || flag; }, [] { return true; });
  return rc;
}

// ---------------------------------------------------------------- messages

MPI_Message new_message(std::shared_ptr<GridComm> comm, gridrt::detail::MessagePtr m) {
  return kMessageBits | g_messages.add(Message{std::move(comm), std::move(m)});
}

bool is_layer_message(MPI_Message m) { return (m & ~kIndexMask) == kMessageBits && (m & kIndexMask) != 0; }

std::pair<std::shared_ptr<GridComm>, gridrt::detail::MessagePtr> take_message(MPI_Message* m) {
  Message* found = g_messages.find(*m & kIndexMask);
  if (!found) throw gridrt::ArgumentError("gridrt: not a message (received already?)", MPI_ERR_REQUEST);
  auto out = std::make_pair(found->comm, found->m);
  g_messages.remove(*m & kIndexMask);
  *m = MPI_MESSAGE_NULL;
  return out;
}

// ---------------------------------------------------------------- the runtime's hooks

void on_initialized() {
  leave_ld_preload();  // (a program written against gridrt's API calls gridrt::init, not MPI_Init)
  g_active = true;
  PMPI_Comm_group(MPI_COMM_WORLD, &g_world_group);
  make_topology_keyvals();
  auto& s = gridrt::detail::state();
  std::shared_ptr<CommImpl> world = s.world_comm;
  // A job in one cluster: MPI_COMM_WORLD is MPICH's own, nothing of the layer in between.
  if (world->parts.size() == 1) return;
  auto g = std::make_shared<GridComm>();
  g->handle = MPI_COMM_WORLD;
  g->impl = world;
  g->p2p = std::make_shared<Channel>(world->members, world->local_ranks(), MPI_COMM_WORLD, s.messages, world->context + 1,
                                     static_cast<int>(s.topo.size()));
  g_comms[MPI_COMM_WORLD] = g;
}

void on_finalizing() {
  forget_windows();
  forget_files();
  g_detached.clear();
  g_requests.clear();
  g_messages.clear();
  g_groups.clear();
  g_comms.clear();
  if (g_world_group != MPI_GROUP_NULL) PMPI_Group_free(&g_world_group);
  forget_topology_keyvals();
  g_active = false;
}

}  // namespace gridmpi

int GRIDMPI(Error_string)(int errorcode, char* string, int* resultlen) {
  auto it = gridmpi::g_texts.find(errorcode);
  if (it == gridmpi::g_texts.end()) return PMPI_Error_string(errorcode, string, resultlen);
  std::memcpy(string, it->second.c_str(), it->second.size() + 1);
  *resultlen = static_cast<int>(it->second.size());
  return MPI_SUCCESS;
}

// ---------------------------------------------------------------- what the wrappers ask

bool gridmpi_active(void) { return gridmpi::active(); }
bool gridmpi_grid_comm(MPI_Comm comm) { return gridmpi::grid(comm) != nullptr; }
bool gridmpi_layer_group(MPI_Group group) { return gridmpi::is_layer_group(group); }
bool gridmpi_layer_request(MPI_Request request) { return gridmpi::is_layer_request(request); }
bool gridmpi_layer_message(MPI_Message message) { return gridmpi::is_layer_message(message); }

int gridmpi_unsupported(const char* function, MPI_Comm comm, const char* what) {
  const bool spans = gridmpi::grid(comm) != nullptr;
  return gridmpi::fail_uncovered(function, comm, MPI_ERR_UNSUPPORTED_OPERATION,
                                 std::string(function) + " is not supported " +
                                     (spans ? "on a communicator that spans clusters" : "in a grid job") + " (" + what + "; docs/mpi.md)");
}

int gridmpi_entries(MPI_Comm comm) {
  const gridmpi::GridComm* g = gridmpi::grid(comm);
  return g->inter() ? static_cast<int>(g->impl->remote->members.size()) : g->size();
}

int gridmpi_local_entries(MPI_Comm comm) { return gridmpi::grid(comm)->size(); }

int gridmpi_entries_at_root(MPI_Comm comm, int root) {
  const gridmpi::GridComm* g = gridmpi::grid(comm);
  const bool at_root = g->inter() ? root == MPI_ROOT : root == g->rank();
  return at_root ? gridmpi_entries(comm) : 0;
}

int gridmpi_neighbor_entries(MPI_Comm comm, int receiving) {
  const gridmpi::GridComm* g = gridmpi::grid(comm);
  if (g->inter() || !(g->cart || g->graph || g->dist_graph)) return 0;  // (the call itself then fails)
  const gridmpi::Neighborhood n = gridmpi::neighborhood(*g);
  return static_cast<int>(receiving ? n.sources.size() : n.destinations.size());
}

int gridmpi_count_too_large(const char* function, MPI_Comm comm) {
  return gridmpi::fail_uncovered(
      function, comm, MPI_ERR_COUNT,
      std::string(function) + ": a count or displacement above INT_MAX on a communicator that spans clusters (docs/mpi.md)");
}

int GRIDMPI(Type_free)(MPI_Datatype* type) {
  return gridmpi::free_or_defer(gridmpi::g_types_in_use, type, MPI_DATATYPE_NULL, PMPI_Type_free);
}
int GRIDMPI(Op_free)(MPI_Op* op) { return gridmpi::free_or_defer(gridmpi::g_ops_in_use, op, MPI_OP_NULL, PMPI_Op_free); }
