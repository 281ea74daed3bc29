// One-sided communication on grid communicators: the origin's side (windows.h).
#include "windows.h"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <unordered_map>

#include "datatype.h"
#include "files.h"
#include "transport/message_transport.h"

namespace gridmpi {

namespace rma = gridrt::rma;
using gridrt::detail::Layout;
using rma::Location;
using rma::Message;

static_assert(rma::ErrorClass::kRange == MPI_ERR_RMA_RANGE && rma::ErrorClass::kOp == MPI_ERR_OP && rma::ErrorClass::kWin == MPI_ERR_WIN &&
                  rma::ErrorClass::kIntern == MPI_ERR_INTERN,
              "the engine's error classes are MPICH's");

namespace {

std::unordered_map<MPI_Win, std::unique_ptr<GridWin>> g_windows;

// (MPI_Type_size: MPI_Pack_size, which Layout::packed may hold, is only a bound.)
std::size_t data_bytes(const Layout& l) { return static_cast<std::size_t>(l.size) * static_cast<std::size_t>(l.count); }

// The process's one-sided engine, made with its first grid window, before any other process
// can send to it (a window's making ends with an exchange that needs every member), and kept
// to the end of the process: the transport's I/O thread may deliver to it until then.
rma::Engine& engine() {
  static rma::Engine* const made = [] {
    auto& s = gridrt::detail::state();
    gridrt::detail::MessageTransport* transport = s.messages;
    auto* e = new rma::Engine(s.rank, [transport](std::int32_t dst, std::uint32_t window, std::string body) {
      try {
        transport->send(dst, window, 0, body.data(), body.size());
      } catch (const std::exception&) {
        // The transport has failed: every wait on an answer hears why (wait_for).
      }
    });
    transport->set_one_sided_sink(
        [e](std::int32_t src, std::uint32_t window, const gridrt::detail::OneSidedPart& part) {
          if (window & gridrt::fileio::kFileServiceContext)  // (a file in one cluster: files.h)
            return file_service().deliver_part(src, window, part.bytes, part.total, part.first, part.last);
          e->deliver_part(src, window, part.bytes, part.total, part.first, part.last);
        },
        [e](const std::function<bool(std::int32_t)>& gone) {
          e->forget(gone);
          file_service().forget(gone);
        });
    return e;
  }();
  return *made;
}

// Runs a window call's body; a gridrt error it throws goes through the window's error
// handler as "FUNCTION: what".
template <typename F> int on_window(const char* function, MPI_Win win, F&& body) {
  return reporting(
      function, [win](int error_class, const std::string& what) { return fail_window(win, error_class, what); }, std::forward<F>(body));
}

// Waits, as the runtime waits, until done() holds; a lost cluster holding one of `targets`
// (window ranks) ends the wait with its reason.
void wait_for(const GridWin& w, const std::vector<int>& targets, const std::function<bool()>& done) {
  wait_until(
      [&] {
        if (done()) return true;
        for (int t : targets)
          if (auto why = gridrt::detail::cluster_lost(w.global(t))) throw gridrt::Error(*why, MPI_ERR_OTHER);
        return false;
      },
      [] { return false; });
}

// A put's or an accumulate's message, sent as the others are, but paced: one that finds more
// than kLeavingAtMost of the window's data still in this process (waiting for the targets'
// credit) waits until the oldest has left, as MPI_Send waits for its message to leave. A
// program that puts faster than the line carries would otherwise hold all it put in memory
// at once, and fresh memory each time: 16 puts of 1 MiB then a flush reached 0.67-0.81x the
// two-sided stream with everything queued, 0.86-0.89x with 4 MiB let out at a time and
// 0.93-1.13x with 1 MiB (docs/benchmarks.md). (An operation whose target was lost counts as
// gone: the target's next synchronisation says so.)
constexpr std::size_t kLeavingAtMost = std::size_t{1} << 20;

// `head` followed by the origin's `bytes` at `data` (copied once, into the frames).
void send_paced(GridWin& w, int target, const std::string& head, const char* data, std::size_t bytes) {
  const int dst = w.global(target);
  if (dst == w.global(w.me)) return engine().send(dst, w.id, head + std::string(data, bytes));
  gridrt::detail::MessageTransport* transport = gridrt::detail::state().messages;
  auto left = [transport](const std::shared_ptr<gridrt::detail::RemoteOp>& op) {
    try {
      return transport->test(op);
    } catch (const std::runtime_error&) { return true; }
  };
  w.leaving.emplace_back(transport->send_with_head(dst, w.id, head, data, bytes), head.size() + bytes);
  w.leaving_bytes += head.size() + bytes;
  auto drained = [&] {
    while (!w.leaving.empty() && left(w.leaving.front().first)) {
      w.leaving_bytes -= w.leaving.front().second;
      w.leaving.pop_front();
    }
    return w.leaving_bytes <= kLeavingAtMost;
  };
  if (!drained()) wait_for(w, {target}, drained);
}

// Whether a get-like operation's answer came (it is then in the origin's buffer).
bool settle(PendingResult& p) {
  if (p.done) return true;
  rma::Reply r;
  if (!engine().take_reply(p.id, &r)) return false;
  p.done = true;
  if (r.error_class != 0) {
    p.error_class = static_cast<int>(r.error_class);
    p.error = r.error;
    return true;
  }
  const Layout l(p.type, p.count);
  if (r.data.size() != data_bytes(l)) {
    p.error_class = MPI_ERR_INTERN;
    p.error = "an answer of " + std::to_string(r.data.size()) + " bytes for " + std::to_string(data_bytes(l));
    return true;
  }
  r.data.resize(std::max(r.data.size(), l.packed));  // (unpack reads as much as MPI_Pack_size says)
  gridrt::detail::unpack(l, r.data.data(), p.buf);
  return true;
}

void raise(const PendingResult& p) {
  if (p.error_class != MPI_SUCCESS) throw gridrt::Error(p.error, p.error_class);
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Takes a target's lock in place (one this process reaches in memory): at once when it is
// free and no request of an origin elsewhere waits for it at the target's engine.
void lock_near(GridWin& w, int target, bool exclusive) {
  rma::SharedLock& lock = *w.near_target(target)->lock;
  const int me = w.global(w.me);
  wait_for(w, {}, [&] { return rma::try_lock_here(lock, exclusive, me); });
}

// Releases it; the target's engine is woken when requests wait for it there.
void unlock_near(GridWin& w, int target) {
  rma::SharedLock& lock = *w.near_target(target)->lock;
  bool wake = false;
  {
    rma::SpinGuard guard(lock);
    wake = rma::release_lock(lock, w.global(w.me));
  }
  if (wake) engine().send(w.global(target), w.id, rma::signal_message(Message::kWake));
}

// Where a location of a target reached in memory lies (its range checked by the caller).
char* near_memory(const GridWin& w, int target, MPI_Aint disp) {
  return w.near_target(target)->base + disp * static_cast<MPI_Aint>(w.disp_units[static_cast<std::size_t>(target)]);
}

// An operation may go to `target` only inside an access epoch to it (MPI 4.0 §12.5). Inside
// lock_all, the target's shared lock is asked for with the first operation to it (taken,
// for a target reached in memory).
void start_access(GridWin& w, int target) {
  if (target < 0 || target >= static_cast<int>(w.members.size()))
    throw gridrt::ArgumentError("rank " + std::to_string(target) + " is not in the window (of " + std::to_string(w.members.size()) + ")",
                                MPI_ERR_RANK);
  if (!(w.fence_open || w.lock_all || w.locks.count(target) || (w.accessing && contains(w.access, target))))
    throw gridrt::Error("no access epoch to rank " + std::to_string(target) +
                            " is open (MPI_Win_fence, MPI_Win_start, MPI_Win_lock or MPI_Win_lock_all first)",
                        MPI_ERR_RMA_SYNC);
  if (w.lock_all && !w.lock_all_nocheck && !w.locks.count(target) && w.lock_all_asked.insert(target).second) {
    if (w.near_target(target)) lock_near(w, target, false);
    else engine().send(w.global(target), w.id, rma::lock_message(false));
  }
  if (w.fence_open) w.touched.insert(target);
}

// The target's bytes a location touches must lie in what it exposes (a dynamic window's
// target checks its attached memory itself: the answer to the next synchronisation says).
void check_range(const GridWin& w, int target, MPI_Aint disp, const rma::TypeMap& map) {
  if (w.dynamic || map.elements() == 0) return;
  const __int128 offset = static_cast<__int128>(disp) * w.disp_units[static_cast<std::size_t>(target)];
  const __int128 lo = offset + map.lo(), hi = offset + map.hi();
  const auto size = w.sizes[static_cast<std::size_t>(target)];
  if (lo < 0 || hi > static_cast<__int128>(size))
    throw gridrt::Error("target displacement " + std::to_string(disp) + " reaches bytes " + std::to_string(static_cast<long long>(lo)) +
                            " to " + std::to_string(static_cast<long long>(hi)) + " of rank " + std::to_string(target) +
                            "'s window, which has " + std::to_string(size),
                        MPI_ERR_RMA_RANGE);
}

// `what` (the origin's data, or a result buffer) must hold what the target's datatype takes.
void check_sizes(const char* what, std::size_t bytes, const rma::TypeMap& map) {
  if (bytes != map.packed())
    throw gridrt::Error(std::string(what) + " (" + std::to_string(bytes) + " bytes) and the target's datatype (" +
                            std::to_string(map.packed()) + " bytes) differ",
                        MPI_ERR_TYPE);
}

// The origin's data, checked against the target's datatype: where its bytes lie packed (the
// buffer itself when contiguous, else `scratch`, packed into).
std::string_view origin_bytes(const void* buf, int count, MPI_Datatype type, const rma::TypeMap& map, std::vector<char>& scratch) {
  const Layout l(type, count);
  const std::size_t n = data_bytes(l);
  check_sizes("the origin's data", n, map);
  if (l.contiguous) return {static_cast<const char*>(buf), n};
  scratch = gridrt::detail::packed_copy(l, buf);
  return {scratch.data(), n};
}

// The same, packed onto the end of `out`.
void append_origin(std::string& out, const void* buf, int count, MPI_Datatype type, const rma::TypeMap& map) {
  std::vector<char> scratch;
  out.append(origin_bytes(buf, count, type, map, scratch));
}

rma::Op op_of(MPI_Op op) {
  static const std::pair<MPI_Op, rma::Op> ops[] = {
      {MPI_SUM, rma::Op::kSum},         {MPI_PROD, rma::Op::kProd}, {MPI_MAX, rma::Op::kMax},       {MPI_MIN, rma::Op::kMin},
      {MPI_LAND, rma::Op::kLand},       {MPI_LOR, rma::Op::kLor},   {MPI_LXOR, rma::Op::kLxor},     {MPI_BAND, rma::Op::kBand},
      {MPI_BOR, rma::Op::kBor},         {MPI_BXOR, rma::Op::kBxor}, {MPI_MAXLOC, rma::Op::kMaxloc}, {MPI_MINLOC, rma::Op::kMinloc},
      {MPI_REPLACE, rma::Op::kReplace}, {MPI_NO_OP, rma::Op::kNoOp}};
  for (const auto& [mpi, ours] : ops)
    if (mpi == op) return ours;
  throw gridrt::Error("one-sided operations take predefined operations only (MPI 4.0 §12.3.4)", MPI_ERR_OP);
}

void check_op(rma::Op op, const rma::TypeMap& map) {
  for (const rma::Run& run : map.runs())
    if (std::string why = rma::check(op, run.kind); !why.empty()) throw gridrt::Error(why, MPI_ERR_OP);
}

// Answers that came are unpacked as the origin goes on, not kept to the epoch's end: a
// program that issues a hundred thousand gets in one epoch holds the memory of those on
// their way only, at most kMaxPendingResults of them (the next one waits for the oldest).
constexpr std::size_t kMaxPendingResults = 4096;

void pace(GridWin& w) {
  auto settled = [](const std::shared_ptr<PendingResult>& p) { return settle(*p) && p->error_class == MPI_SUCCESS; };
  std::size_t n = 0;
  while (n < w.pending.size() && settled(w.pending[n])) ++n;
  w.pending.erase(w.pending.begin(), w.pending.begin() + static_cast<std::ptrdiff_t>(n));
  if (w.pending.size() < kMaxPendingResults) return;
  const std::shared_ptr<PendingResult> oldest = w.pending.front();
  wait_for(w, {oldest->target}, [&] { return settle(*oldest); });
  if (oldest->error_class == MPI_SUCCESS) w.pending.erase(w.pending.begin());
}

// A get-like operation's answer, awaited by the window's synchronisation (or its request).
std::shared_ptr<PendingResult> expect_result(GridWin& w, int target, void* buf, int count, MPI_Datatype type) {
  pace(w);
  auto p = std::make_shared<PendingResult>();
  p->id = engine().next_id();
  p->target = target;
  p->buf = buf;
  p->count = count;
  p->type = type;
  p->leases = std::make_shared<Leases>(std::initializer_list<MPI_Datatype>{type});
  w.pending.push_back(p);
  return p;
}

// Completes what this origin did at `targets`: `kind` (kFlush, or kUnlock, which is always
// sent) goes to each that was written to since its last flush, then every answer from
// them is awaited, results unpacked; the first error any of them reports is thrown.
void complete_at(GridWin& w, const std::vector<int>& targets, Message kind) {
  std::vector<std::pair<std::uint64_t, int>> asked;
  for (int t : targets) {
    if (kind != Message::kUnlock && !w.unflushed.count(t)) continue;
    const std::uint64_t id = engine().next_id();
    engine().send(w.global(t), w.id, rma::sync_message(kind, id));
    asked.emplace_back(id, t);
  }
  std::vector<rma::Reply> answers(asked.size());
  std::vector<std::shared_ptr<PendingResult>> results;
  for (const auto& p : w.pending)
    if (contains(targets, p->target)) results.push_back(p);
  wait_for(w, targets, [&] {
    bool all = true;
    for (std::size_t i = 0; i < asked.size(); ++i)
      if (!answers[i].arrived && !engine().take_reply(asked[i].first, &answers[i])) all = false;
    for (const auto& p : results)
      if (!settle(*p)) all = false;
    return all;
  });
  for (int t : targets) w.unflushed.erase(t);
  w.pending.erase(std::remove_if(w.pending.begin(), w.pending.end(), [](const auto& p) { return p->done; }), w.pending.end());
  for (std::size_t i = 0; i < asked.size(); ++i)
    if (answers[i].error_class != 0)
      throw gridrt::Error("at rank " + std::to_string(asked[i].second) + ": " + answers[i].error, static_cast<int>(answers[i].error_class));
  for (const auto& p : results) raise(*p);
}

// A lock on this process's own window, asked for and waited for: the application may touch
// its memory once the call returns (a lock on another's goes with the operations behind it).
void lock_own(GridWin& w, bool exclusive) {
  engine().send(w.global(w.me), w.id, rma::lock_message(exclusive));
  const int me = w.global(w.me);
  wait_for(w, {}, [&] { return engine().holds_lock(w.id, me); });
}

// A barrier of the window's members (its own communicator's, hierarchical).
void barrier(GridWin& w) { gridrt::detail::run_collective(w.comm, gridrt::detail::barrier(*w.comm, gridrt::Algo::kDefault)); }

// Every target with something outstanding.
std::vector<int> outstanding(const GridWin& w) {
  std::set<int> t(w.unflushed.begin(), w.unflushed.end());
  for (const auto& p : w.pending) t.insert(p->target);
  return {t.begin(), t.end()};
}

std::vector<int> window_ranks(const GridWin& w, MPI_Group group) {
  std::vector<int> out;
  for (int global : group_members(group)) {
    auto it = std::find(w.members.begin(), w.members.end(), global);
    if (it == w.members.end())
      throw gridrt::ArgumentError("the group holds rank " + std::to_string(global) + " of MPI_COMM_WORLD, which is not in the window",
                                  MPI_ERR_GROUP);
    out.push_back(static_cast<int>(it - w.members.begin()));
  }
  return out;
}

// This process's node and cluster, as a number equal for the processes that can share a
// window's memory and differing (almost surely) for any others: its host name and boot,
// and its cluster (a grid window's operations between clusters go through the engines
// even where two clusters share a machine, as on a test bed).
std::uint64_t this_node() {
  static const std::uint64_t key = [] {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::string boot;
    std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
    return std::hash<std::string>{}(std::string(host) + '/' + boot + '/' + std::to_string(gridrt::detail::state().cluster));
  }();
  return key;
}

// Memory of MPI_Alloc_mem's (the layer's, shared with the node), by where it starts.
std::map<const char*, rma::NodeSegment> g_allocated;

// The MPI_Alloc_mem memory that holds [base, base + size), or null.
const rma::NodeSegment* allocated_around(const char* base, MPI_Aint size) {
  auto it = g_allocated.upper_bound(base);
  if (it == g_allocated.begin()) return nullptr;
  --it;
  const rma::NodeSegment& s = it->second;
  return base + size <= s.memory() + s.bytes() ? &s : nullptr;
}

// Maps another process's lock and memory (one segment, or two), or says it cannot (null).
GridWin::Near map_near(pid_t pid, int lock_fd, int memory_fd, std::uint64_t offset, std::uint64_t bytes,
                       std::vector<rma::NodeSegment>& mapped) {
  rma::NodeSegment memory = rma::NodeSegment::open(pid, memory_fd, bytes);
  if (!memory.valid()) return {};
  rma::NodeSegment lock = lock_fd == memory_fd ? rma::NodeSegment() : rma::NodeSegment::open(pid, lock_fd, 0);
  if (lock_fd != memory_fd && !lock.valid()) return {};
  GridWin::Near near{lock.valid() ? lock.lock() : memory.lock(), memory.memory() + offset};
  mapped.push_back(std::move(memory));
  if (lock.valid()) mapped.push_back(std::move(lock));
  return near;
}

int make_window(const char* function, MPI_Comm comm, MPI_Info info, int flavor, MPI_Aint size, int disp_unit, void* base, void* baseptr,
                MPI_Win* win) {
  return call(function, comm, [&] {
    if (grid(comm)->inter()) throw gridrt::ArgumentError("a window is made on an intracommunicator", MPI_ERR_COMM);
    if (size < 0) throw gridrt::ArgumentError("a negative size (" + std::to_string(size) + ")", MPI_ERR_SIZE);
    if (disp_unit <= 0) throw gridrt::ArgumentError("a displacement unit of " + std::to_string(disp_unit), MPI_ERR_DISP);
    auto w = std::make_unique<GridWin>();
    std::shared_ptr<GridComm> parent = grid_shared(comm);
    const std::uint32_t context = gridrt::detail::agree_on_context(parent->impl);
    w->comm = CommImpl::make(parent->impl->members, parent->impl->me, context, dup_in_cluster(parent->impl->local));
    w->errors = parent;
    w->id = context | gridrt::detail::kOneSidedContext;
    w->members = w->comm->members;
    w->me = w->comm->me;
    w->dynamic = flavor == MPI_WIN_FLAVOR_DYNAMIC;
    // Where the node's processes can reach this process's part: MPI_Win_allocate's memory is
    // the layer's own (rma/node_segment.h), MPICH's window made over it (MPI_Win_get_attr
    // still says MPI_WIN_FLAVOR_ALLOCATE); MPI_Win_create's is where it lies in memory of
    // MPI_Alloc_mem's, which is the layer's too, with a segment of its own for the lock; other
    // memory (and a dynamic window's) only this process reaches, and so does any where the
    // layer cannot make its segment (out of descriptors, say): MPICH's memory then.
    const rma::NodeSegment* memory = nullptr;
    std::uint64_t offset = 0;
    auto make_segment = [&](std::uint64_t bytes) {
      try {
        w->own = rma::NodeSegment::make(bytes);
        return true;
      } catch (const std::runtime_error&) { return false; }
    };
    int rc = MPI_SUCCESS;
    switch (flavor) {  // (on the application's communicator: MPICH makes its own of it)
      case MPI_WIN_FLAVOR_CREATE:
        if ((memory = allocated_around(static_cast<char*>(base), size)) && make_segment(0))
          offset = static_cast<std::uint64_t>(static_cast<char*>(base) - memory->memory());
        else memory = nullptr;
        rc = PMPI_Win_create(base, size, disp_unit, info, comm, &w->handle);
        break;
      case MPI_WIN_FLAVOR_ALLOCATE:
        if (make_segment(static_cast<std::uint64_t>(size))) {
          w->allocated = true;
          memory = &w->own;
          base = w->own.memory();
          rc = PMPI_Win_create(base, size, disp_unit, info, comm, &w->handle);
        } else {
          rc = PMPI_Win_allocate(size, disp_unit, info, comm, &base, &w->handle);
        }
        if (rc == MPI_SUCCESS) *static_cast<void**>(baseptr) = base;
        break;
      default: rc = PMPI_Win_create_dynamic(info, comm, &w->handle);
    }
    if (rc != MPI_SUCCESS) return rc;
    engine().expose(w->id, static_cast<char*>(base), static_cast<std::uint64_t>(size), static_cast<std::uint32_t>(disp_unit), w->dynamic,
                    w->own.valid() ? w->own.lock() : nullptr);
    // Every member's size and unit, for the origin's range checks, and where its lock and
    // memory can be mapped from (node, process, descriptors, the window's offset in its
    // memory, that memory's size); once this exchange is over, every member's engine knows
    // the window.
    constexpr int kEach = 8;
    const auto none = static_cast<std::uint64_t>(-1);
    const std::uint64_t mine[kEach] = {static_cast<std::uint64_t>(size),
                                       static_cast<std::uint64_t>(disp_unit),
                                       this_node(),
                                       static_cast<std::uint64_t>(getpid()),
                                       w->own.valid() ? static_cast<std::uint64_t>(w->own.fd()) : none,
                                       memory ? static_cast<std::uint64_t>(memory->fd()) : none,
                                       offset,
                                       memory ? memory->bytes() : 0};
    std::vector<std::uint64_t> all(kEach * w->members.size());
    gridrt::detail::run_collective(
        w->comm, gridrt::detail::allgather(*w->comm, mine, kEach, MPI_UINT64_T, all.data(), kEach, MPI_UINT64_T, gridrt::Algo::kDefault));
    w->near.resize(w->members.size());
    for (std::size_t i = 0; i < w->members.size(); ++i) {
      const std::uint64_t* theirs = &all[kEach * i];
      w->sizes.push_back(theirs[0]);
      w->disp_units.push_back(static_cast<std::uint32_t>(theirs[1]));
      if (static_cast<int>(i) == w->me) {
        if (!w->dynamic) w->near[i] = {engine().lock_of(w->id), static_cast<char*>(base)};
      } else if (theirs[2] == mine[2] && theirs[4] != none && theirs[5] != none) {
        w->near[i] = map_near(static_cast<pid_t>(theirs[3]), static_cast<int>(theirs[4]), static_cast<int>(theirs[5]), theirs[6], theirs[7],
                              w->mapped);
      }
    }
    // Once the node's processes mapped them, the descriptors are closed, after a barrier of
    // this cluster's members (the only ones to map them), which every member enters where any
    // has a descriptor open (all decide alike, from what all of them know).
    bool shared = false;
    for (std::size_t i = 0; i < w->members.size(); ++i) shared = shared || all[kEach * i + 4] != none;
    if (shared) {
      gridrt::detail::check_mpi(wait_native([&](MPI_Request* r) { return PMPI_Ibarrier(w->comm->local, r); }),
                                "MPI_Ibarrier of the window's members in this cluster");
      if (w->own.valid()) w->own.close_descriptor();
    }
    *win = w->handle;
    g_windows[w->handle] = std::move(w);
    return MPI_SUCCESS;
  });
}

}  // namespace

GridWin* grid_window(MPI_Win win) {
  if (g_windows.empty()) return nullptr;
  auto it = g_windows.find(win);
  return it == g_windows.end() ? nullptr : it->second.get();
}

void forget_windows() { g_windows.clear(); }

}  // namespace gridmpi

using gridmpi::GridWin;
using gridmpi::on_window;
using gridmpi::engine;
namespace rma = gridrt::rma;

bool gridmpi_grid_win(MPI_Win win) { return gridmpi::grid_window(win) != nullptr; }

// ---------------------------------------------------------------- making and freeing

int GRIDMPI(Win_create)(void* base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win* win) {
  if (!gridmpi::grid(comm)) return PMPI_Win_create(base, size, disp_unit, info, comm, win);
  return gridmpi::make_window("MPI_Win_create", comm, info, MPI_WIN_FLAVOR_CREATE, size, disp_unit, base, nullptr, win);
}

int GRIDMPI(Win_allocate)(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr, MPI_Win* win) {
  if (!gridmpi::grid(comm)) return PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win);
  return gridmpi::make_window("MPI_Win_allocate", comm, info, MPI_WIN_FLAVOR_ALLOCATE, size, disp_unit, nullptr, baseptr, win);
}

int GRIDMPI(Win_create_dynamic)(MPI_Info info, MPI_Comm comm, MPI_Win* win) {
  if (!gridmpi::grid(comm)) return PMPI_Win_create_dynamic(info, comm, win);
  return gridmpi::make_window("MPI_Win_create_dynamic", comm, info, MPI_WIN_FLAVOR_DYNAMIC, 0, 1, nullptr, nullptr, win);
}

// MPI_Alloc_mem's memory is the layer's, which the processes of this node can map: a window
// made over it later is reached in memory by the origins of its node (rma/node_segment.h),
// as MPI means memory of MPI_Alloc_mem to serve one-sided communication best. (MPICH's where
// the layer cannot make it.)
int GRIDMPI(Alloc_mem)(MPI_Aint size, MPI_Info info, void* baseptr) {
  if (size <= 0) return PMPI_Alloc_mem(size, info, baseptr);
  rma::NodeSegment s;
  try {
    s = rma::NodeSegment::make(static_cast<std::uint64_t>(size));
  } catch (const std::runtime_error&) { return PMPI_Alloc_mem(size, info, baseptr); }
  char* memory = s.memory();
  gridmpi::g_allocated.emplace(memory, std::move(s));
  *static_cast<void**>(baseptr) = memory;
  return MPI_SUCCESS;
}

int GRIDMPI(Free_mem)(void* base) {
  auto it = gridmpi::g_allocated.find(static_cast<const char*>(base));
  if (it == gridmpi::g_allocated.end()) return PMPI_Free_mem(base);
  gridmpi::g_allocated.erase(it);
  return MPI_SUCCESS;
}

int GRIDMPI(Win_allocate_shared)(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr, MPI_Win* win) {
  if (!gridmpi::grid(comm)) return PMPI_Win_allocate_shared(size, disp_unit, info, comm, baseptr, win);
  return gridmpi::fail(comm, MPI_ERR_COMM,
                       "MPI_Win_allocate_shared: the communicator spans clusters, whose processes share no memory (a "
                       "shared-memory window needs processes of one node: MPI_Comm_split_type with MPI_COMM_TYPE_SHARED)");
}

namespace {
constexpr const char* kNotShared = ": not a shared-memory window (it spans clusters)";
}

int GRIDMPI(Win_shared_query)(MPI_Win win, int rank, MPI_Aint* size, int* disp_unit, void* baseptr) {
  if (!gridmpi::grid_window(win)) return PMPI_Win_shared_query(win, rank, size, disp_unit, baseptr);
  return gridmpi::fail_window(win, MPI_ERR_RMA_FLAVOR, std::string("MPI_Win_shared_query") + kNotShared);
}

int GRIDMPI(Win_shared_query_c)(MPI_Win win, int rank, MPI_Aint* size, MPI_Aint* disp_unit, void* baseptr) {
  if (!gridmpi::grid_window(win)) return PMPI_Win_shared_query_c(win, rank, size, disp_unit, baseptr);
  return gridmpi::fail_window(win, MPI_ERR_RMA_FLAVOR, std::string("MPI_Win_shared_query_c") + kNotShared);
}

int GRIDMPI(Win_free)(MPI_Win* win) {
  GridWin* w = gridmpi::grid_window(*win);
  if (!w) return PMPI_Win_free(win);
  return on_window("MPI_Win_free", *win, [&] {
    if (!w->locks.empty() || w->lock_all || w->accessing || w->exposing)
      throw gridrt::Error("an epoch is still open on the window", MPI_ERR_RMA_SYNC);
    gridmpi::complete_at(*w, gridmpi::outstanding(*w), rma::Message::kFlush);
    // Every member's operations are over (MPI has them synchronised before the free) and
    // answered; after this barrier nothing more comes for the window.
    gridmpi::barrier(*w);
    engine().withdraw(w->id);
    MPI_Win handle = w->handle;
    auto it = gridmpi::g_windows.find(handle);
    std::unique_ptr<GridWin> gone = std::move(it->second);  // (its memory and communicator go with it, after MPICH's window)
    gridmpi::g_windows.erase(it);
    *win = MPI_WIN_NULL;
    return PMPI_Win_free(&handle);
  });
}

int GRIDMPI(Win_attach)(MPI_Win win, void* base, MPI_Aint size) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_attach(win, base, size);
  return on_window("MPI_Win_attach", win, [&] {
    if (!w->dynamic) throw gridrt::Error("the window is not a dynamic one (MPI_Win_create_dynamic)", MPI_ERR_RMA_FLAVOR);
    if (size < 0) throw gridrt::ArgumentError("a negative size", MPI_ERR_SIZE);
    engine().attach(w->id, static_cast<char*>(base), static_cast<std::uint64_t>(size));
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_detach)(MPI_Win win, const void* base) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_detach(win, base);
  return on_window("MPI_Win_detach", win, [&] {
    if (!w->dynamic) throw gridrt::Error("the window is not a dynamic one (MPI_Win_create_dynamic)", MPI_ERR_RMA_FLAVOR);
    if (!engine().detach(w->id, static_cast<const char*>(base)))
      throw gridrt::ArgumentError("no memory is attached at that address", MPI_ERR_ARG);
    return MPI_SUCCESS;
  });
}

// A window the layer allocated is MPICH's window over the layer's memory: its flavour is
// said here; every other attribute is MPICH's (the base, size and unit are the same).
int GRIDMPI(Win_get_attr)(MPI_Win win, int keyval, void* value, int* flag) {
  GridWin* w = gridmpi::grid_window(win);
  if (w && w->allocated && keyval == MPI_WIN_CREATE_FLAVOR) {
    static int allocate_flavor = MPI_WIN_FLAVOR_ALLOCATE;
    *static_cast<int**>(value) = &allocate_flavor;
    *flag = 1;
    return MPI_SUCCESS;
  }
  return PMPI_Win_get_attr(win, keyval, value, flag);
}

int GRIDMPI(Win_get_group)(MPI_Win win, MPI_Group* group) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_get_group(win, group);
  return on_window("MPI_Win_get_group", win, [&] {
    *group = gridmpi::make_group(w->members);
    return MPI_SUCCESS;
  });
}

// ---------------------------------------------------------------- communication

namespace gridmpi {
namespace {

// Put and accumulate: the data packed now (the origin's buffer is free again at once).
int write_op(const char* function, MPI_Win win, GridWin& w, const void* origin, int origin_count, MPI_Datatype origin_type, int target,
             MPI_Aint disp, int target_count, MPI_Datatype target_type, const rma::Op* op) {
  return on_window(function, win, [&] {
    if (target == MPI_PROC_NULL) return MPI_SUCCESS;
    start_access(w, target);
    Location at{static_cast<std::uint64_t>(disp), type_map(target_type, target_count)};
    if (op) check_op(*op, at.map);
    check_range(w, target, disp, at.map);
    const std::size_t n = at.map.packed();
    std::vector<char> scratch;
    const std::string_view data = origin_bytes(origin, origin_count, origin_type, at.map, scratch);
    if (const GridWin::Near* near = w.near_target(target)) {  // applied in place, as its engine would
      char* mem = near_memory(w, target, disp);
      rma::SpinGuard guard(*near->lock);
      if (!op || *op == rma::Op::kReplace) at.map.scatter(data.data(), mem);
      else at.map.accumulate(*op, data.data(), mem);
      return MPI_SUCCESS;
    }
    send_paced(w, target, op ? rma::accumulate_head(*op, at, n) : rma::put_head(at, n), data.data(), data.size());
    w.unflushed.insert(target);
    return MPI_SUCCESS;
  });
}

// Get, get-accumulate and fetch-and-op: the answer is unpacked into the result buffer when
// it comes (at the epoch's synchronisation, or the request's completion).
std::shared_ptr<PendingResult> read_op(GridWin& w, const void* origin, int origin_count, MPI_Datatype origin_type, void* result,
                                       int result_count, MPI_Datatype result_type, int target, MPI_Aint disp, int target_count,
                                       MPI_Datatype target_type, rma::Op op, bool plain_get) {
  if (target == MPI_PROC_NULL) return nullptr;
  start_access(w, target);
  Location at{static_cast<std::uint64_t>(disp), type_map(target_type, target_count)};
  check_op(op, at.map);
  check_sizes("the result buffer", data_bytes(Layout(result_type, result_count)), at.map);
  std::string data;
  if (op != rma::Op::kNoOp) append_origin(data, origin, origin_count, origin_type, at.map);
  check_range(w, target, disp, at.map);
  if (const GridWin::Near* near = w.near_target(target)) {  // applied in place: complete at once
    const Layout l(result_type, result_count);
    std::string before(std::max<std::size_t>(at.map.packed(), l.packed), '\0');
    char* mem = near_memory(w, target, disp);
    {
      rma::SpinGuard guard(*near->lock);
      at.map.gather(mem, before.data());
      if (op == rma::Op::kReplace) at.map.scatter(data.data(), mem);
      else if (op != rma::Op::kNoOp) at.map.accumulate(op, data.data(), mem);
    }
    gridrt::detail::unpack(l, before.data(), result);
    return nullptr;
  }
  auto p = expect_result(w, target, result, result_count, result_type);
  engine().send(w.global(target), w.id, plain_get ? rma::get_message(p->id, at) : rma::get_accumulate_message(p->id, op, at, data));
  if (!plain_get && op != rma::Op::kNoOp) w.unflushed.insert(target);
  return p;
}

// A request of MPI_Rput and friends: complete when the answer (if any) is in; its error
// goes through the window's handler.
int result_request(GridWin& w, std::shared_ptr<PendingResult> p, MPI_Request* request) {
  auto r = std::make_unique<Request>();
  r->comm = w.errors;
  r->win = w.handle;
  r->custom = [p] {
    if (!p) return true;
    if (!settle(*p)) return false;
    raise(*p);
    return true;
  };
  *request = new_request(std::move(r));
  return MPI_SUCCESS;
}

}  // namespace
}  // namespace gridmpi

int GRIDMPI(Put)(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                 int target_count, MPI_Datatype target_datatype, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win);
  return gridmpi::write_op("MPI_Put", win, *w, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                           target_datatype, nullptr);
}

int GRIDMPI(Accumulate)(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                        int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w)
    return PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op, win);
  return on_window("MPI_Accumulate", win, [&] {
    const rma::Op o = gridmpi::op_of(op);
    if (o == rma::Op::kNoOp) return MPI_SUCCESS;  // (MPI_NO_OP changes nothing)
    return gridmpi::write_op("MPI_Accumulate", win, *w, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                             target_datatype, &o);
  });
}

int GRIDMPI(Get)(void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp, int target_count,
                 MPI_Datatype target_datatype, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win);
  return on_window("MPI_Get", win, [&] {
    gridmpi::read_op(*w, nullptr, 0, MPI_BYTE, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                     target_datatype, rma::Op::kNoOp, true);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Get_accumulate)(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, void* result_addr, int result_count,
                            MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, int target_count,
                            MPI_Datatype target_datatype, MPI_Op op, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w)
    return PMPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, target_rank,
                               target_disp, target_count, target_datatype, op, win);
  return on_window("MPI_Get_accumulate", win, [&] {
    gridmpi::read_op(*w, origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, target_rank, target_disp,
                     target_count, target_datatype, gridmpi::op_of(op), false);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Fetch_and_op)(const void* origin_addr, void* result_addr, MPI_Datatype datatype, int target_rank, MPI_Aint target_disp,
                          MPI_Op op, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Fetch_and_op(origin_addr, result_addr, datatype, target_rank, target_disp, op, win);
  return on_window("MPI_Fetch_and_op", win, [&] {
    gridmpi::read_op(*w, origin_addr, 1, datatype, result_addr, 1, datatype, target_rank, target_disp, 1, datatype, gridmpi::op_of(op),
                     false);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Compare_and_swap)(const void* origin_addr, const void* compare_addr, void* result_addr, MPI_Datatype datatype, int target_rank,
                              MPI_Aint target_disp, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Compare_and_swap(origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp, win);
  return on_window("MPI_Compare_and_swap", win, [&] {
    if (target_rank == MPI_PROC_NULL) return MPI_SUCCESS;
    gridmpi::start_access(*w, target_rank);
    rma::Location at{static_cast<std::uint64_t>(target_disp), gridmpi::type_map(datatype, 1)};
    const rma::Kind* kind = at.map.only_kind();
    if (!kind || kind->category == rma::Category::kFloat || kind->category == rma::Category::kComplex ||
        kind->category == rma::Category::kPair)
      throw gridrt::Error("MPI_Compare_and_swap takes a predefined integer, logical or byte datatype", MPI_ERR_TYPE);
    gridmpi::check_range(*w, target_rank, target_disp, at.map);
    const std::size_t n = at.map.packed();
    if (const GridWin::Near* near = w->near_target(target_rank)) {  // in place, as the target's engine would
      char* mem = gridmpi::near_memory(*w, target_rank, target_disp);
      std::string before(n, '\0');
      rma::SpinGuard guard(*near->lock);
      at.map.gather(mem, before.data());
      std::memcpy(result_addr, before.data(), n);
      if (std::memcmp(before.data(), compare_addr, n) == 0) at.map.scatter(static_cast<const char*>(origin_addr), mem);
      return MPI_SUCCESS;
    }
    auto p = gridmpi::expect_result(*w, target_rank, result_addr, 1, datatype);
    engine().send(
        w->global(target_rank), w->id,
        rma::compare_swap_message(p->id, at, {static_cast<const char*>(compare_addr), n}, {static_cast<const char*>(origin_addr), n}));
    w->unflushed.insert(target_rank);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Rput)(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                  int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request* request) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w)
    return PMPI_Rput(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win, request);
  const int rc = gridmpi_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win);
  if (rc != MPI_SUCCESS) return rc;
  return gridmpi::result_request(*w, nullptr, request);  // (complete at once: the data left the origin's buffer)
}

int GRIDMPI(Raccumulate)(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                         int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request* request) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w)
    return PMPI_Raccumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op, win,
                            request);
  const int rc =
      gridmpi_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, op, win);
  if (rc != MPI_SUCCESS) return rc;
  return gridmpi::result_request(*w, nullptr, request);
}

int GRIDMPI(Rget)(void* origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                  int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request* request) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w)
    return PMPI_Rget(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count, target_datatype, win, request);
  return on_window("MPI_Rget", win, [&] {
    auto p = gridmpi::read_op(*w, nullptr, 0, MPI_BYTE, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                              target_datatype, rma::Op::kNoOp, true);
    return gridmpi::result_request(*w, p, request);
  });
}

int GRIDMPI(Rget_accumulate)(const void* origin_addr, int origin_count, MPI_Datatype origin_datatype, void* result_addr, int result_count,
                             MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp, int target_count,
                             MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request* request) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w)
    return PMPI_Rget_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, target_rank,
                                target_disp, target_count, target_datatype, op, win, request);
  return on_window("MPI_Rget_accumulate", win, [&] {
    auto p = gridmpi::read_op(*w, origin_addr, origin_count, origin_datatype, result_addr, result_count, result_datatype, target_rank,
                              target_disp, target_count, target_datatype, gridmpi::op_of(op), false);
    return gridmpi::result_request(*w, p, request);
  });
}

// ---------------------------------------------------------------- synchronisation

namespace gridmpi {
namespace {
// Flushes need a passive-target epoch to the target (MPI 4.0 §12.5.4).
void check_passive(const GridWin& w, int rank) {
  if (!w.lock_all && !w.locks.count(rank))
    throw gridrt::Error("no passive-target epoch to rank " + std::to_string(rank) + " is open (MPI_Win_lock or MPI_Win_lock_all first)",
                        MPI_ERR_RMA_SYNC);
}
// Local completion: the answers of get-like operations to these targets are in (puts and
// accumulates leave the origin's buffer when they are called).
void complete_locally(GridWin& w, const std::vector<int>& targets) {
  std::vector<std::shared_ptr<PendingResult>> results;
  for (const auto& p : w.pending)
    if (contains(targets, p->target)) results.push_back(p);
  wait_for(w, targets, [&] {
    bool all = true;
    for (const auto& p : results) all = settle(*p) && all;
    return all;
  });
  w.pending.erase(std::remove_if(w.pending.begin(), w.pending.end(), [](const auto& p) { return p->done; }), w.pending.end());
  for (const auto& p : results) raise(*p);
}
}  // namespace
}  // namespace gridmpi

int GRIDMPI(Win_fence)(int assert, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_fence(assert, win);
  return on_window("MPI_Win_fence", win, [&] {
    if (!w->locks.empty() || w->lock_all) throw gridrt::Error("a passive-target epoch is open (MPI_Win_unlock first)", MPI_ERR_RMA_SYNC);
    // Thakur, Gropp and Toonen's fence (2005): each origin marks the end of its epoch on the
    // stream to every target it used (the mark arrives after its operations), and one
    // reduce-scatter tells each target how many marks to wait for. No flush's round trip
    // comes before the collective, which is itself what every member waits on: the fence
    // costs about a barrier with operations or without. (An error a dynamic window's target
    // finds in a fence epoch comes with the origin's next flush or unlock.)
    const std::uint64_t fence = ++w->fences;
    std::vector<int> marked(w->members.size(), 0);
    for (int t : w->touched) {
      marked[static_cast<std::size_t>(t)] = 1;
      engine().send(w->global(t), w->id, rma::fence_mark_message(fence));
    }
    w->touched.clear();
    int expected = 0;
    gridrt::detail::run_collective(
        w->comm, gridrt::detail::reduce_scatter_block(*w->comm, marked.data(), &expected, 1, MPI_INT, MPI_SUM, gridrt::Algo::kDefault));
    std::vector<int> everyone(w->members.size());
    for (std::size_t i = 0; i < everyone.size(); ++i) everyone[i] = static_cast<int>(i);
    gridmpi::wait_for(*w, everyone, [&] { return engine().take_marks(w->id, fence, expected); });
    gridmpi::complete_locally(*w, gridmpi::outstanding(*w));  // (this origin's gets: their answers)
    w->unflushed.clear();
    w->fence_open = !(assert& MPI_MODE_NOSUCCEED);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_lock)(int lock_type, int rank, int assert, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_lock(lock_type, rank, assert, win);
  return on_window("MPI_Win_lock", win, [&] {
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    if (rank < 0 || rank >= static_cast<int>(w->members.size()))
      throw gridrt::ArgumentError("rank " + std::to_string(rank) + " is not in the window", MPI_ERR_RANK);
    if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED)
      throw gridrt::ArgumentError("the lock type is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED", MPI_ERR_LOCKTYPE);
    if (w->locks.count(rank) || w->lock_all)
      throw gridrt::Error("rank " + std::to_string(rank) + "'s window is locked already by this process", MPI_ERR_RMA_SYNC);
    GridWin::Held held{lock_type == MPI_LOCK_EXCLUSIVE, (assert& MPI_MODE_NOCHECK) != 0};
    w->locks[rank] = held;
    if (held.nocheck) return MPI_SUCCESS;
    if (w->near_target(rank)) gridmpi::lock_near(*w, rank, held.exclusive);
    else if (rank == w->me) gridmpi::lock_own(*w, held.exclusive);
    else engine().send(w->global(rank), w->id, rma::lock_message(held.exclusive));
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_unlock)(int rank, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_unlock(rank, win);
  return on_window("MPI_Win_unlock", win, [&] {
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    auto it = w->locks.find(rank);
    if (it == w->locks.end())
      throw gridrt::Error("rank " + std::to_string(rank) + "'s window is not locked by this process", MPI_ERR_RMA_SYNC);
    const bool nocheck = it->second.nocheck;
    w->locks.erase(it);
    if (w->near_target(rank)) {  // (its operations are complete: applied in place)
      if (!nocheck) gridmpi::unlock_near(*w, rank);
      return MPI_SUCCESS;
    }
    gridmpi::complete_at(*w, {rank}, nocheck ? rma::Message::kFlush : rma::Message::kUnlock);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_lock_all)(int assert, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_lock_all(assert, win);
  return on_window("MPI_Win_lock_all", win, [&] {
    if (w->lock_all || !w->locks.empty()) throw gridrt::Error("a passive-target epoch is open already", MPI_ERR_RMA_SYNC);
    w->lock_all = true;
    w->lock_all_nocheck = (assert& MPI_MODE_NOCHECK) != 0;
    w->lock_all_asked.clear();
    if (w->lock_all_nocheck) return MPI_SUCCESS;
    // Each target's shared lock is asked for with the first operation to it; this process's
    // own now, since the application may touch its memory once we return.
    w->lock_all_asked.insert(w->me);
    if (w->near_target(w->me)) gridmpi::lock_near(*w, w->me, false);
    else gridmpi::lock_own(*w, false);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_unlock_all)(MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_unlock_all(win);
  return on_window("MPI_Win_unlock_all", win, [&] {
    if (!w->lock_all) throw gridrt::Error("no MPI_Win_lock_all epoch is open", MPI_ERR_RMA_SYNC);
    w->lock_all = false;
    std::vector<int> locked, others;
    for (int t : w->lock_all_asked) {
      if (w->near_target(t)) gridmpi::unlock_near(*w, t);
      else locked.push_back(t);
    }
    for (int t : gridmpi::outstanding(*w))
      if (!w->lock_all_asked.count(t)) others.push_back(t);
    w->lock_all_asked.clear();
    gridmpi::complete_at(*w, others, rma::Message::kFlush);
    gridmpi::complete_at(*w, locked, rma::Message::kUnlock);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_flush)(int rank, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_flush(rank, win);
  return on_window("MPI_Win_flush", win, [&] {
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    gridmpi::check_passive(*w, rank);
    gridmpi::complete_at(*w, {rank}, rma::Message::kFlush);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_flush_all)(MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_flush_all(win);
  return on_window("MPI_Win_flush_all", win, [&] {
    if (!w->lock_all && w->locks.empty()) throw gridrt::Error("no passive-target epoch is open", MPI_ERR_RMA_SYNC);
    gridmpi::complete_at(*w, gridmpi::outstanding(*w), rma::Message::kFlush);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_flush_local)(int rank, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_flush_local(rank, win);
  return on_window("MPI_Win_flush_local", win, [&] {
    if (rank == MPI_PROC_NULL) return MPI_SUCCESS;
    gridmpi::check_passive(*w, rank);
    gridmpi::complete_locally(*w, {rank});
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_flush_local_all)(MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_flush_local_all(win);
  return on_window("MPI_Win_flush_local_all", win, [&] {
    if (!w->lock_all && w->locks.empty()) throw gridrt::Error("no passive-target epoch is open", MPI_ERR_RMA_SYNC);
    gridmpi::complete_locally(*w, gridmpi::outstanding(*w));
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_sync)(MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_sync(win);
  // What the engine wrote into this process's memory is visible to it, and its own stores
  // to the engine (the engine's lock orders both).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  engine().synchronize();
  return MPI_SUCCESS;
}

int GRIDMPI(Win_post)(MPI_Group group, int assert, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_post(group, assert, win);
  return on_window("MPI_Win_post", win, [&] {
    if (w->exposing) throw gridrt::Error("an exposure epoch is open already (MPI_Win_wait first)", MPI_ERR_RMA_SYNC);
    w->exposure = gridmpi::window_ranks(*w, group);
    w->exposing = true;
    w->completed.assign(w->exposure.size(), false);
    for (int o : w->exposure) engine().send(w->global(o), w->id, rma::signal_message(rma::Message::kPost));
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_start)(MPI_Group group, int assert, MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_start(group, assert, win);
  return on_window("MPI_Win_start", win, [&] {
    if (w->accessing) throw gridrt::Error("an access epoch is open already (MPI_Win_complete first)", MPI_ERR_RMA_SYNC);
    std::vector<int> targets = gridmpi::window_ranks(*w, group);
    std::vector<bool> posted(targets.size(), false);
    gridmpi::wait_for(*w, targets, [&] {
      bool all = true;
      for (std::size_t i = 0; i < targets.size(); ++i)
        if (!posted[i] && !(posted[i] = engine().take_post(w->id, w->global(targets[i])))) all = false;
      return all;
    });
    w->access = std::move(targets);
    w->accessing = true;
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_complete)(MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_complete(win);
  return on_window("MPI_Win_complete", win, [&] {
    if (!w->accessing) throw gridrt::Error("no access epoch is open (MPI_Win_start first)", MPI_ERR_RMA_SYNC);
    const std::vector<int> targets = std::move(w->access);
    w->access.clear();
    w->accessing = false;
    // Each target's completion follows this origin's operations on their stream: when the
    // target has it, it has applied them.
    for (int t : targets) engine().send(w->global(t), w->id, rma::signal_message(rma::Message::kComplete));
    for (int t : targets) w->unflushed.erase(t);
    gridmpi::complete_locally(*w, targets);
    return MPI_SUCCESS;
  });
}

namespace gridmpi {
namespace {
// PSCW's wait and test: whether every origin of the exposure epoch has completed.
bool exposure_over(GridWin& w) {
  bool all = true;
  for (std::size_t i = 0; i < w.exposure.size(); ++i)
    if (!w.completed[i] && !(w.completed[i] = engine().take_complete(w.id, w.global(w.exposure[i])))) all = false;
  return all;
}
}  // namespace
}  // namespace gridmpi

int GRIDMPI(Win_wait)(MPI_Win win) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_wait(win);
  return on_window("MPI_Win_wait", win, [&] {
    if (!w->exposing) throw gridrt::Error("no exposure epoch is open (MPI_Win_post first)", MPI_ERR_RMA_SYNC);
    gridmpi::wait_for(*w, w->exposure, [&] { return gridmpi::exposure_over(*w); });
    w->exposure.clear();
    w->completed.clear();
    w->exposing = false;
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Win_test)(MPI_Win win, int* flag) {
  GridWin* w = gridmpi::grid_window(win);
  if (!w) return PMPI_Win_test(win, flag);
  return on_window("MPI_Win_test", win, [&] {
    if (!w->exposing) throw gridrt::Error("no exposure epoch is open (MPI_Win_post first)", MPI_ERR_RMA_SYNC);
    *flag = gridmpi::exposure_over(*w) ? 1 : 0;
    if (*flag) {
      w->exposure.clear();
      w->completed.clear();
      w->exposing = false;
    }
    return MPI_SUCCESS;
  });
}
