// A file that lives in one cluster (files.h; fileio/file_service.h), from the processes of
// the other clusters: their view turned into the file's byte extents, their data packed and
// sent to the process of the file's cluster that serves them, in requests of up to
// kRequestBytes so that the server writes while the rest is on the way (a non-blocking
// call's requests moved on by MPICH's progress while the program computes). Collective calls
// are, for them, their independent ones (MPI's collective I/O promises no synchronisation;
// each process's data crosses the wide-area network once, to the cluster where the file
// is); the file's own processes make them with ROMIO among themselves. What changes the
// file as a whole (set_size, preallocate, sync, atomicity) is made by the file's cluster
// once everything the others wrote before is in, and agreed by all.
#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "files.h"
#include "mpi_error.h"
#include "transport/message_transport.h"
#include "windows.h"

namespace gridmpi {

using gridrt::fileio::Extent;
using gridrt::fileio::FileService;

static_assert(gridrt::fileio::ErrorClass::kFile == MPI_ERR_FILE && gridrt::fileio::ErrorClass::kIo == MPI_ERR_IO &&
                  gridrt::fileio::ErrorClass::kNoSpace == MPI_ERR_NO_SPACE && gridrt::fileio::ErrorClass::kIntern == MPI_ERR_INTERN,
              "the file service's error classes are MPICH's");

// ---------------------------------------------------------------- views as extents

FileView FileView::of(MPI_Offset disp, MPI_Datatype filetype) {
  FileView v;
  v.disp = disp;
  v.blocks.clear();
  v.before.clear();
  std::uint64_t bytes = 0;
  std::int64_t last_end = 0;
  const gridrt::rma::TypeMap map = type_map(filetype, 1);
  for (const gridrt::rma::Run& r : map.runs()) {
    const bool dense = r.kind.size == r.kind.extent;
    for (std::uint64_t i = 0; i < (dense ? 1 : r.count); ++i) {
      const std::int64_t at = r.disp + static_cast<std::int64_t>(i) * r.kind.extent;
      const std::uint64_t length = dense ? r.count * r.kind.size : r.kind.size;
      if (length == 0) continue;
      if (at < last_end)
        throw gridrt::ArgumentError("a filetype's displacements must be non-negative and not decrease (MPI 4.0 §14.3)", MPI_ERR_TYPE);
      if (!v.blocks.empty() && v.blocks.back().offset + v.blocks.back().length == static_cast<std::uint64_t>(at)) {
        v.blocks.back().length += length;
      } else {
        v.blocks.push_back({static_cast<std::uint64_t>(at), length});
        v.before.push_back(bytes);
      }
      bytes += length;
      last_end = at + static_cast<std::int64_t>(length);
    }
  }
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(filetype, &lb, &extent);
  v.tile_extent = static_cast<std::uint64_t>(std::max<MPI_Aint>(extent, 0));
  v.tile_bytes = bytes;
  return v;
}

std::vector<Extent> FileView::extents(std::uint64_t from, std::uint64_t bytes) const {
  std::vector<Extent> out;
  if (bytes == 0) return out;
  if (tile_bytes == 0) throw gridrt::ArgumentError("the view's filetype holds no data", MPI_ERR_ARG);
  if (blocks.size() == 1 && blocks.front().offset == 0 && tile_bytes == tile_extent)  // (a contiguous view)
    return {{static_cast<std::uint64_t>(disp) + from, bytes}};
  std::uint64_t tile = from / tile_bytes;
  const std::uint64_t in = from % tile_bytes;
  std::size_t i = static_cast<std::size_t>(std::upper_bound(before.begin(), before.end(), in) - before.begin()) - 1;
  std::uint64_t skip = in - before[i];
  while (bytes > 0) {
    const Extent& b = blocks[i];
    const std::uint64_t at = static_cast<std::uint64_t>(disp) + tile * tile_extent + b.offset + skip;
    const std::uint64_t length = std::min(b.length - skip, bytes);
    if (!out.empty() && out.back().offset + out.back().length == at) out.back().length += length;
    else out.push_back({at, length});
    bytes -= length;
    skip = 0;
    if (++i == blocks.size()) {
      i = 0;
      ++tile;
    }
  }
  return out;
}

std::uint64_t FileView::data_below(std::uint64_t size) const {
  if (size <= static_cast<std::uint64_t>(disp) || tile_extent == 0) return 0;
  const std::uint64_t past = size - static_cast<std::uint64_t>(disp);
  std::uint64_t data = past / tile_extent * tile_bytes;
  const std::uint64_t rest = past % tile_extent;
  for (const Extent& b : blocks)
    if (rest > b.offset) data += std::min(rest - b.offset, b.length);
  return data;
}

// ---------------------------------------------------------------- the service

FileService& file_service() {
  static FileService* const made =
      new FileService([](std::int32_t dst, std::uint32_t context, const std::string& head, std::string_view data) {
        try {
          gridrt::detail::state().messages->send_with_head(dst, context, head, data.data(), data.size());
        } catch (const std::exception&) {
          // The transport has failed: the requester hears of it from its own wait.
        }
      });
  return *made;
}

namespace {

// Bytes of data per request: the server writes one while the next is on the way; and the
// requests of one access unanswered at most, so that a large access's data leaves as the
// server takes it rather than all copied into the transport at once.
constexpr std::uint64_t kRequestBytes = std::uint64_t{4} << 20;
constexpr std::size_t kInFlight = 4;

// One request's part of an access: its extents, and a write's data.
struct Chunk {
  std::vector<Extent> extents;
  std::uint64_t bytes = 0;
  const char* data = nullptr;
};

// `extents` in chunks of kRequestBytes at most (their data from `data`, for a write).
std::vector<Chunk> chunks_of(const std::vector<Extent>& extents, const char* data) {
  std::vector<Chunk> out(1);
  out.back().data = data;
  for (Extent e : extents) {
    while (e.length > 0) {
      if (out.back().bytes == kRequestBytes) out.push_back({{}, 0, data ? out.back().data + kRequestBytes : nullptr});
      const std::uint64_t take = std::min(e.length, kRequestBytes - out.back().bytes);
      out.back().extents.push_back({e.offset, take});
      out.back().bytes += take;
      e.offset += take;
      e.length -= take;
    }
  }
  if (out.back().extents.empty()) out.pop_back();
  return out;
}

// The requests of one access to its server and their replies: sent kInFlight at most
// unanswered, the replies taken in order; the first error reply stops the sending, and
// the access is over once the requests in flight are answered. Moved on by step(), from a
// blocking call's wait or from MPICH's progress (a non-blocking call's request).
class Conversation {
 public:
  Conversation(const GridFile& f, bool write, std::vector<Chunk> chunks)
      : server_(f.server), service_(f.service), atomic_(f.atomic), write_(write), name_(f.name), chunks_(std::move(chunks)) {}

  // Sends what it may and takes the replies that came; true once it is over.
  bool step() {
    while (failed_.error_class == 0 && sent_ < chunks_.size() && waiting_.size() < kInFlight) {
      const std::uint64_t id = file_service().next_id();
      const Chunk& c = chunks_[sent_++];
      const std::string head = write_ ? FileService::write_head(id, c.extents) : FileService::read_head(id, atomic_, c.extents);
      gridrt::detail::state().messages->send_with_head(server_, service_, head, c.data, c.data ? c.bytes : 0);
      waiting_.push_back(id);
    }
    for (gridrt::fileio::Reply r; !waiting_.empty() && file_service().take_reply(waiting_.front(), &r);) {
      waiting_.pop_front();
      const Chunk& c = chunks_[answered_++];
      if (failed_.error_class != 0) continue;
      if (r.error_class != 0) {
        failed_ = std::move(r);
        failed_.error += " (in the cluster that holds the file)";
      } else if (!write_ && !ended_) {
        data_ += r.data;
        ended_ = r.data.size() < c.bytes;  // (the end of the file)
      }
    }
    if (!waiting_.empty() && failed_.error_class == 0)
      if (auto why = gridrt::detail::cluster_lost(server_)) {
        failed_.error_class = MPI_ERR_OTHER;
        failed_.error = "the cluster that holds '" + name_ + "' was lost: " + *why;
        waiting_.clear();  // (no answer comes)
      }
    return waiting_.empty() && (failed_.error_class != 0 || sent_ == chunks_.size());
  }
  // Steps until it is over, waiting as the runtime waits; throws its error.
  void run() {
    wait_until([&] { return step(); }, [] { return false; });
    if (failed_.error_class != 0) throw gridrt::Error(failed_.error, static_cast<int>(failed_.error_class));
  }
  const gridrt::fileio::Reply& failure() const { return failed_; }
  const std::string& data() const { return data_; }  // a read's bytes, up to the end of the file

 private:
  int server_;
  std::uint32_t service_;
  bool atomic_, write_;
  std::string name_;
  std::vector<Chunk> chunks_;
  std::deque<std::uint64_t> waiting_;
  std::size_t sent_ = 0, answered_ = 0;
  gridrt::fileio::Reply failed_;
  std::string data_;
  bool ended_ = false;
};

std::uint64_t served_size(const GridFile& f) {
  const std::uint64_t id = file_service().next_id();
  gridrt::detail::state().messages->send_with_head(f.server, f.service, FileService::size_head(id), nullptr, 0);
  gridrt::fileio::Reply r;
  wait_until(
      [&] {
        if (file_service().take_reply(id, &r)) return true;
        if (auto why = gridrt::detail::cluster_lost(f.server))
          throw gridrt::Error("the cluster that holds '" + f.name + "' was lost: " + *why, MPI_ERR_OTHER);
        return false;
      },
      [] { return false; });
  if (r.error_class != 0) throw gridrt::Error(r.error + " (in the cluster that holds the file)", static_cast<int>(r.error_class));
  return std::stoull(r.data);
}

// Whether `count` of `type` lie in memory as one run of bytes (from the type's true lower bound).
bool contiguous(MPI_Datatype type, MPI_Aint* first) {
  MPI_Count size = 0;
  MPI_Aint lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  PMPI_Type_size_x(type, &size);
  PMPI_Type_get_extent(type, &lb, &extent);
  PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
  *first = true_lb;
  return size == extent && size == true_extent && lb == true_lb;
}

void set_status(MPI_Status* status, std::uint64_t bytes) {
  if (status == MPI_STATUS_IGNORE) return;
  PMPI_Status_set_elements_x(status, MPI_BYTE, static_cast<MPI_Count>(bytes));
  PMPI_Status_set_cancelled(status, 0);
}

enum class Direction { kRead, kWrite };

// A served process's read or write of `count` of `type` at `buf`, checked and laid out: the
// file's extents at etype `position` of the view, the data (packed where the type is not
// one run of bytes), and, for a read, where it goes.
struct Access {
  MPI_Offset position = 0;
  std::uint64_t requested = 0;  // bytes
  bool write = false, dense = false;
  char* into = nullptr;  // a dense read's destination
  void* buf = nullptr;   // a packed read's buffer, `count` of `type` (a duplicate)
  MPI_Count count = 0, type_bytes = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  std::string packed;  // a non-dense write's data
  std::unique_ptr<Conversation> talk;

  ~Access() {
    if (type != MPI_DATATYPE_NULL) PMPI_Type_free(&type);
  }
  // The bytes done once the conversation is over (a read's unpacked into its buffer).
  std::uint64_t finish() {
    if (write) return requested;
    const std::string& got = talk->data();
    if (dense) {
      std::memcpy(into, got.data(), got.size());
    } else if (type_bytes > 0) {
      MPI_Count end = 0;
      gridrt::detail::check_mpi(PMPI_Unpack_c(got.data(), static_cast<MPI_Count>(got.size()), &end, buf,
                                              static_cast<MPI_Count>(got.size()) / type_bytes, type, MPI_COMM_SELF),
                                "unpacking the data");
    }
    return got.size();
  }
};

// At etype `*at` of the view, or (at null) at the individual file pointer.
template <Direction D, typename Count>
std::unique_ptr<Access> prepare(MPI_File fh, const GridFile& f, const MPI_Offset* at, const void* buf, Count count, MPI_Datatype type) {
  if (D == Direction::kWrite && (f.amode & MPI_MODE_RDONLY))
    throw gridrt::ArgumentError("'" + f.name + "' was opened MPI_MODE_RDONLY", MPI_ERR_READ_ONLY);
  if (D == Direction::kRead && (f.amode & MPI_MODE_WRONLY))
    throw gridrt::ArgumentError("'" + f.name + "' was opened MPI_MODE_WRONLY", MPI_ERR_ACCESS);
  if (count < 0) throw gridrt::ArgumentError("a negative count (" + std::to_string(count) + ")", MPI_ERR_COUNT);
  if (type == MPI_DATATYPE_NULL) throw gridrt::ArgumentError("MPI_DATATYPE_NULL is not a datatype", MPI_ERR_TYPE);
  auto a = std::make_unique<Access>();
  a->write = D == Direction::kWrite;
  PMPI_Type_size_x(type, &a->type_bytes);
  a->requested = static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(a->type_bytes);
  if (a->requested % static_cast<std::uint64_t>(f.etype_bytes) != 0)
    throw gridrt::ArgumentError("only a whole number of the view's etypes can be accessed (" + std::to_string(a->requested) +
                                    " bytes, etypes of " + std::to_string(f.etype_bytes) + ")",
                                MPI_ERR_IO);
  if (at) {
    if (*at < 0) throw gridrt::ArgumentError("a negative offset (" + std::to_string(*at) + ")", MPI_ERR_ARG);
    a->position = *at;
  } else {
    gridrt::detail::check_mpi(PMPI_File_get_position(fh, &a->position), "the individual file pointer");
  }
  const auto extents = f.view.extents(static_cast<std::uint64_t>(a->position) * static_cast<std::uint64_t>(f.etype_bytes), a->requested);
  MPI_Aint first = 0;
  a->dense = contiguous(type, &first);
  const char* data = nullptr;
  if (a->write && a->dense) {
    data = static_cast<const char*>(buf) + first;
  } else if (a->write) {
    a->packed.assign(a->requested, '\0');
    MPI_Count end = 0;
    gridrt::detail::check_mpi(PMPI_Pack_c(buf, count, type, a->packed.data(), static_cast<MPI_Count>(a->requested), &end, MPI_COMM_SELF),
                              "packing the data");
    data = a->packed.data();
  } else if (a->dense) {
    a->into = static_cast<char*>(const_cast<void*>(buf)) + first;
  } else {
    a->buf = const_cast<void*>(buf);
    a->count = count;
    gridrt::detail::check_mpi(PMPI_Type_dup(type, &a->type), "the datatype");  // (the program may free its own meanwhile)
  }
  a->talk = std::make_unique<Conversation>(f, a->write, chunks_of(extents, data));
  return a;
}

// The individual file pointer moved past `bytes` from where an access began.
void move_pointer(MPI_File fh, const GridFile& f, const Access& a, std::uint64_t bytes) {
  gridrt::detail::check_mpi(
      PMPI_File_seek(fh, a.position + static_cast<MPI_Offset>(bytes / static_cast<std::uint64_t>(f.etype_bytes)), MPI_SEEK_SET),
      "the individual file pointer");
}

// A blocking access: over when it returns; the individual pointer moved past what was done.
template <Direction D, typename Count>
void access(MPI_File fh, GridFile& f, const MPI_Offset* at, const void* buf, Count count, MPI_Datatype type, MPI_Status* status) {
  const auto a = prepare<D>(fh, f, at, buf, count, type);
  a->talk->run();
  const std::uint64_t done = a->finish();
  if (!at) move_pointer(fh, f, *a, done);
  set_status(status, done);
}

// A non-blocking access: its request is MPICH's extended generalized request, which MPICH's
// progress polls (MPI_Test, MPI_Wait and the others), so that the access goes on while the
// program computes, as ROMIO's own non-blocking accesses do; the individual pointer moves
// past all that was asked at once (MPI 4.0 §14.4.3).
struct InFlight {
  std::unique_ptr<Access> access;
  MPI_Request request = MPI_REQUEST_NULL;
  bool over = false;
  MPI_Status status{};
  int code = MPI_SUCCESS;
};

int poll_in_flight(void* state, MPI_Status*) {
  auto* s = static_cast<InFlight*>(state);
  if (s->over || !s->access->talk->step()) return MPI_SUCCESS;
  s->over = true;
  const gridrt::fileio::Reply& failed = s->access->talk->failure();
  std::uint64_t done = 0;
  if (failed.error_class != 0) s->code = error_code(static_cast<int>(failed.error_class), failed.error);
  else done = s->access->finish();
  set_status(&s->status, done);
  s->status.MPI_ERROR = s->code;
  return PMPI_Grequest_complete(s->request);
}
int wait_in_flight(int count, void** states, double, MPI_Status* status) {
  wait_until(
      [&] {
        bool all = true;
        for (int i = 0; i < count; ++i) {
          poll_in_flight(states[i], status);
          all = all && static_cast<InFlight*>(states[i])->over;
        }
        return all;
      },
      [] { return false; });
  return MPI_SUCCESS;
}
int query_in_flight(void* state, MPI_Status* status) {
  const auto* s = static_cast<InFlight*>(state);
  *status = s->status;
  return s->code;
}
int free_in_flight(void* state) {
  delete static_cast<InFlight*>(state);
  return MPI_SUCCESS;
}
int cancel_in_flight(void*, int) { return MPI_SUCCESS; }  // (it cannot be withdrawn: MPI lets a cancel fail)

template <Direction D, typename Count>
void start_access(MPI_File fh, GridFile& f, const MPI_Offset* at, const void* buf, Count count, MPI_Datatype type, MPI_Request* request) {
  auto state = std::make_unique<InFlight>();
  state->access = prepare<D>(fh, f, at, buf, count, type);
  if (!at) move_pointer(fh, f, *state->access, state->access->requested);
  gridrt::detail::check_mpi(
      PMPIX_Grequest_start(query_in_flight, free_in_flight, cancel_in_flight, poll_in_flight, wait_in_flight, state.get(), request),
      "the request");
  state->request = *request;
  InFlight* s = state.release();
  poll_in_flight(s, MPI_STATUS_IGNORE);  // (the first requests leave now)
}

// ROMIO's outcome of a call on a grid file, its error (its handler run by ROMIO) said again
// naming the function and the file.
int romio_outcome(const char* function, const GridFile& f, int rc) {
  if (rc == MPI_SUCCESS) return rc;
  return error_code(gridrt::detail::mpi_error_class(rc),
                    std::string(function) + ": '" + f.name + "': " + gridrt::detail::mpi_error_text(rc));
}

// What every form of a data access comes to: `native` where the file is ROMIO's here, else
// the served access (blocking; non-blocking, its request moved on by MPICH's progress; or
// a split collective's begin, its request kept for the end).
enum class Form { kBlocking, kNonBlocking, kBegin };

template <Direction D, Form F, typename Native, typename Count, typename Out>
int data_call(const char* function, Native native, MPI_File fh, const MPI_Offset* at, const void* buf, Count count, MPI_Datatype type,
              Out out) {
  GridFile* f = grid_file(fh);
  if (!f) return native();
  return on_grid_file(function, fh, *f, [&]() -> int {
    if (!f->served) return romio_outcome(function, *f, native());
    if constexpr (F == Form::kBegin) {
      if (f->split != MPI_REQUEST_NULL) throw gridrt::ArgumentError("a split collective is already open on the file", MPI_ERR_OTHER);
      start_access<D>(fh, *f, at, buf, count, type, &f->split);
    } else if constexpr (F == Form::kNonBlocking) {
      start_access<D>(fh, *f, at, buf, count, type, out);
    } else {
      access<D>(fh, *f, at, buf, count, type, out);
    }
    return MPI_SUCCESS;
  });
}

template <typename Buffer>
int split_end(const char* function, int (*native)(MPI_File, Buffer, MPI_Status*), MPI_File fh, Buffer buf, MPI_Status* status) {
  GridFile* f = grid_file(fh);
  if (!f || !f->served) return native(fh, buf, status);
  return on_grid_file(function, fh, *f, [&]() -> int {
    if (f->split == MPI_REQUEST_NULL) throw gridrt::ArgumentError("no split collective is open on the file", MPI_ERR_OTHER);
    return PMPI_Wait(&f->split, status);
  });
}

// A call that changes the file as a whole, collective: made by the file's cluster (ROMIO's
// `native`) once every process is in (what the others wrote before is then in the file),
// its outcome agreed by all.
template <typename Native> int whole_file(const char* function, MPI_File fh, Native native) {
  GridFile* f = grid_file(fh);
  if (!f) return native();
  return on_grid_file(function, fh, *f, [&]() -> int {
    if (!f->in_one_cluster) return romio_outcome(function, *f, native());
    worst_class(f->comm, MPI_SUCCESS);
    const int rc = f->served ? MPI_SUCCESS : romio_outcome(function, *f, native());
    if (const int worst = worst_class(f->comm, rc)) {
      if (rc != MPI_SUCCESS) return rc;
      throw gridrt::ArgumentError("'" + f->name + "': " + gridrt::detail::mpi_error_text(worst) + " (in the cluster that holds it)", worst);
    }
    return MPI_SUCCESS;
  });
}

}  // namespace

void check_clusters(const GridFile& f) {
  for (int member : f.clusters)
    if (auto why = gridrt::detail::cluster_lost(member))
      throw gridrt::Error("'" + f.name + "': a cluster of its communicator was lost while the file was open: " + *why, MPI_ERR_OTHER);
}

void start_at_the_end(GridFile& f, MPI_File fh) {
  MPI_Offset size = 0;
  if (f.served) size = static_cast<MPI_Offset>(served_size(f));
  else gridrt::detail::check_mpi(PMPI_File_get_size(fh, &size), "the file's size");
  if (f.served) gridrt::detail::check_mpi(PMPI_File_seek(fh, size, MPI_SEEK_SET), "the individual file pointer");
  if (grid(f.comm)->rank() == 0) set_shared_pointer(f, size);  // (the view is bytes from 0 at the open)
  gridrt::detail::check_mpi(gridmpi_Barrier(f.comm), "the shared file pointer");
}

MPI_Offset end_of_served(GridFile& f) {
  const std::uint64_t data = f.view.data_below(served_size(f));
  const auto etype = static_cast<std::uint64_t>(f.etype_bytes);
  return static_cast<MPI_Offset>((data + etype - 1) / etype);
}

}  // namespace gridmpi

using gridmpi::Direction;
using gridmpi::Form;
using gridmpi::GridFile;
using gridmpi::grid_file;

bool gridmpi_served_file(MPI_File fh) {
  const GridFile* f = grid_file(fh);
  return f && f->served;
}

// The data access calls: ROMIO's where the file is here, served otherwise (their large-count
// forms alike: the served access counts in MPI_Count).

int GRIDMPI(File_read)(MPI_File fh, void* buf, int count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kRead, Form::kBlocking>(
      "MPI_File_read", [&] { return PMPI_File_read(fh, buf, count, type, status); }, fh, nullptr, buf, count, type, status);
}
int GRIDMPI(File_read_c)(MPI_File fh, void* buf, MPI_Count count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kRead, Form::kBlocking>(
      "MPI_File_read_c", [&] { return PMPI_File_read_c(fh, buf, count, type, status); }, fh, nullptr, buf, count, type, status);
}
int GRIDMPI(File_iread)(MPI_File fh, void* buf, int count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kRead, Form::kNonBlocking>(
      "MPI_File_iread", [&] { return PMPI_File_iread(fh, buf, count, type, request); }, fh, nullptr, buf, count, type, request);
}
int GRIDMPI(File_iread_c)(MPI_File fh, void* buf, MPI_Count count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kRead, Form::kNonBlocking>(
      "MPI_File_iread_c", [&] { return PMPI_File_iread_c(fh, buf, count, type, request); }, fh, nullptr, buf, count, type, request);
}
int GRIDMPI(File_read_all)(MPI_File fh, void* buf, int count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kRead, Form::kBlocking>(
      "MPI_File_read_all", [&] { return PMPI_File_read_all(fh, buf, count, type, status); }, fh, nullptr, buf, count, type, status);
}
int GRIDMPI(File_read_all_c)(MPI_File fh, void* buf, MPI_Count count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kRead, Form::kBlocking>(
      "MPI_File_read_all_c", [&] { return PMPI_File_read_all_c(fh, buf, count, type, status); }, fh, nullptr, buf, count, type, status);
}
int GRIDMPI(File_iread_all)(MPI_File fh, void* buf, int count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kRead, Form::kNonBlocking>(
      "MPI_File_iread_all", [&] { return PMPI_File_iread_all(fh, buf, count, type, request); }, fh, nullptr, buf, count, type, request);
}
int GRIDMPI(File_iread_all_c)(MPI_File fh, void* buf, MPI_Count count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kRead, Form::kNonBlocking>(
      "MPI_File_iread_all_c", [&] { return PMPI_File_iread_all_c(fh, buf, count, type, request); }, fh, nullptr, buf, count, type, request);
}
int GRIDMPI(File_read_all_begin)(MPI_File fh, void* buf, int count, MPI_Datatype type) {
  return gridmpi::data_call<Direction::kRead, Form::kBegin>(
      "MPI_File_read_all_begin", [&] { return PMPI_File_read_all_begin(fh, buf, count, type); }, fh, nullptr, buf, count, type,
      MPI_STATUS_IGNORE);
}
int GRIDMPI(File_read_all_begin_c)(MPI_File fh, void* buf, MPI_Count count, MPI_Datatype type) {
  return gridmpi::data_call<Direction::kRead, Form::kBegin>(
      "MPI_File_read_all_begin_c", [&] { return PMPI_File_read_all_begin_c(fh, buf, count, type); }, fh, nullptr, buf, count, type,
      MPI_STATUS_IGNORE);
}
int GRIDMPI(File_read_all_end)(MPI_File fh, void* buf, MPI_Status* status) {
  return gridmpi::split_end("MPI_File_read_all_end", PMPI_File_read_all_end, fh, buf, status);
}
int GRIDMPI(File_read_at)(MPI_File fh, MPI_Offset offset, void* buf, int count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kRead, Form::kBlocking>(
      "MPI_File_read_at", [&] { return PMPI_File_read_at(fh, offset, buf, count, type, status); }, fh, &offset, buf, count, type, status);
}
int GRIDMPI(File_read_at_c)(MPI_File fh, MPI_Offset offset, void* buf, MPI_Count count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kRead, Form::kBlocking>(
      "MPI_File_read_at_c", [&] { return PMPI_File_read_at_c(fh, offset, buf, count, type, status); }, fh, &offset, buf, count, type,
      status);
}
int GRIDMPI(File_iread_at)(MPI_File fh, MPI_Offset offset, void* buf, int count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kRead, Form::kNonBlocking>(
      "MPI_File_iread_at", [&] { return PMPI_File_iread_at(fh, offset, buf, count, type, request); }, fh, &offset, buf, count, type,
      request);
}
int GRIDMPI(File_iread_at_c)(MPI_File fh, MPI_Offset offset, void* buf, MPI_Count count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kRead, Form::kNonBlocking>(
      "MPI_File_iread_at_c", [&] { return PMPI_File_iread_at_c(fh, offset, buf, count, type, request); }, fh, &offset, buf, count, type,
      request);
}
int GRIDMPI(File_read_at_all)(MPI_File fh, MPI_Offset offset, void* buf, int count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kRead, Form::kBlocking>(
      "MPI_File_read_at_all", [&] { return PMPI_File_read_at_all(fh, offset, buf, count, type, status); }, fh, &offset, buf, count, type,
      status);
}
int GRIDMPI(File_read_at_all_c)(MPI_File fh, MPI_Offset offset, void* buf, MPI_Count count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kRead, Form::kBlocking>(
      "MPI_File_read_at_all_c", [&] { return PMPI_File_read_at_all_c(fh, offset, buf, count, type, status); }, fh, &offset, buf, count,
      type, status);
}
int GRIDMPI(File_iread_at_all)(MPI_File fh, MPI_Offset offset, void* buf, int count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kRead, Form::kNonBlocking>(
      "MPI_File_iread_at_all", [&] { return PMPI_File_iread_at_all(fh, offset, buf, count, type, request); }, fh, &offset, buf, count, type,
      request);
}
int GRIDMPI(File_iread_at_all_c)(MPI_File fh, MPI_Offset offset, void* buf, MPI_Count count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kRead, Form::kNonBlocking>(
      "MPI_File_iread_at_all_c", [&] { return PMPI_File_iread_at_all_c(fh, offset, buf, count, type, request); }, fh, &offset, buf, count,
      type, request);
}
int GRIDMPI(File_read_at_all_begin)(MPI_File fh, MPI_Offset offset, void* buf, int count, MPI_Datatype type) {
  return gridmpi::data_call<Direction::kRead, Form::kBegin>(
      "MPI_File_read_at_all_begin", [&] { return PMPI_File_read_at_all_begin(fh, offset, buf, count, type); }, fh, &offset, buf, count,
      type, MPI_STATUS_IGNORE);
}
int GRIDMPI(File_read_at_all_begin_c)(MPI_File fh, MPI_Offset offset, void* buf, MPI_Count count, MPI_Datatype type) {
  return gridmpi::data_call<Direction::kRead, Form::kBegin>(
      "MPI_File_read_at_all_begin_c", [&] { return PMPI_File_read_at_all_begin_c(fh, offset, buf, count, type); }, fh, &offset, buf, count,
      type, MPI_STATUS_IGNORE);
}
int GRIDMPI(File_read_at_all_end)(MPI_File fh, void* buf, MPI_Status* status) {
  return gridmpi::split_end("MPI_File_read_at_all_end", PMPI_File_read_at_all_end, fh, buf, status);
}
int GRIDMPI(File_write)(MPI_File fh, const void* buf, int count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kWrite, Form::kBlocking>(
      "MPI_File_write", [&] { return PMPI_File_write(fh, buf, count, type, status); }, fh, nullptr, buf, count, type, status);
}
int GRIDMPI(File_write_c)(MPI_File fh, const void* buf, MPI_Count count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kWrite, Form::kBlocking>(
      "MPI_File_write_c", [&] { return PMPI_File_write_c(fh, buf, count, type, status); }, fh, nullptr, buf, count, type, status);
}
int GRIDMPI(File_iwrite)(MPI_File fh, const void* buf, int count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kWrite, Form::kNonBlocking>(
      "MPI_File_iwrite", [&] { return PMPI_File_iwrite(fh, buf, count, type, request); }, fh, nullptr, buf, count, type, request);
}
int GRIDMPI(File_iwrite_c)(MPI_File fh, const void* buf, MPI_Count count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kWrite, Form::kNonBlocking>(
      "MPI_File_iwrite_c", [&] { return PMPI_File_iwrite_c(fh, buf, count, type, request); }, fh, nullptr, buf, count, type, request);
}
int GRIDMPI(File_write_all)(MPI_File fh, const void* buf, int count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kWrite, Form::kBlocking>(
      "MPI_File_write_all", [&] { return PMPI_File_write_all(fh, buf, count, type, status); }, fh, nullptr, buf, count, type, status);
}
int GRIDMPI(File_write_all_c)(MPI_File fh, const void* buf, MPI_Count count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kWrite, Form::kBlocking>(
      "MPI_File_write_all_c", [&] { return PMPI_File_write_all_c(fh, buf, count, type, status); }, fh, nullptr, buf, count, type, status);
}
int GRIDMPI(File_iwrite_all)(MPI_File fh, const void* buf, int count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kWrite, Form::kNonBlocking>(
      "MPI_File_iwrite_all", [&] { return PMPI_File_iwrite_all(fh, buf, count, type, request); }, fh, nullptr, buf, count, type, request);
}
int GRIDMPI(File_iwrite_all_c)(MPI_File fh, const void* buf, MPI_Count count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kWrite, Form::kNonBlocking>(
      "MPI_File_iwrite_all_c", [&] { return PMPI_File_iwrite_all_c(fh, buf, count, type, request); }, fh, nullptr, buf, count, type,
      request);
}
int GRIDMPI(File_write_all_begin)(MPI_File fh, const void* buf, int count, MPI_Datatype type) {
  return gridmpi::data_call<Direction::kWrite, Form::kBegin>(
      "MPI_File_write_all_begin", [&] { return PMPI_File_write_all_begin(fh, buf, count, type); }, fh, nullptr, buf, count, type,
      MPI_STATUS_IGNORE);
}
int GRIDMPI(File_write_all_begin_c)(MPI_File fh, const void* buf, MPI_Count count, MPI_Datatype type) {
  return gridmpi::data_call<Direction::kWrite, Form::kBegin>(
      "MPI_File_write_all_begin_c", [&] { return PMPI_File_write_all_begin_c(fh, buf, count, type); }, fh, nullptr, buf, count, type,
      MPI_STATUS_IGNORE);
}
int GRIDMPI(File_write_all_end)(MPI_File fh, const void* buf, MPI_Status* status) {
  return gridmpi::split_end("MPI_File_write_all_end", PMPI_File_write_all_end, fh, buf, status);
}
int GRIDMPI(File_write_at)(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kWrite, Form::kBlocking>(
      "MPI_File_write_at", [&] { return PMPI_File_write_at(fh, offset, buf, count, type, status); }, fh, &offset, buf, count, type, status);
}
int GRIDMPI(File_write_at_c)(MPI_File fh, MPI_Offset offset, const void* buf, MPI_Count count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kWrite, Form::kBlocking>(
      "MPI_File_write_at_c", [&] { return PMPI_File_write_at_c(fh, offset, buf, count, type, status); }, fh, &offset, buf, count, type,
      status);
}
int GRIDMPI(File_iwrite_at)(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kWrite, Form::kNonBlocking>(
      "MPI_File_iwrite_at", [&] { return PMPI_File_iwrite_at(fh, offset, buf, count, type, request); }, fh, &offset, buf, count, type,
      request);
}
int GRIDMPI(File_iwrite_at_c)(MPI_File fh, MPI_Offset offset, const void* buf, MPI_Count count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kWrite, Form::kNonBlocking>(
      "MPI_File_iwrite_at_c", [&] { return PMPI_File_iwrite_at_c(fh, offset, buf, count, type, request); }, fh, &offset, buf, count, type,
      request);
}
int GRIDMPI(File_write_at_all)(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kWrite, Form::kBlocking>(
      "MPI_File_write_at_all", [&] { return PMPI_File_write_at_all(fh, offset, buf, count, type, status); }, fh, &offset, buf, count, type,
      status);
}
int GRIDMPI(File_write_at_all_c)(MPI_File fh, MPI_Offset offset, const void* buf, MPI_Count count, MPI_Datatype type, MPI_Status* status) {
  return gridmpi::data_call<Direction::kWrite, Form::kBlocking>(
      "MPI_File_write_at_all_c", [&] { return PMPI_File_write_at_all_c(fh, offset, buf, count, type, status); }, fh, &offset, buf, count,
      type, status);
}
int GRIDMPI(File_iwrite_at_all)(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype type, MPI_Request* request) {
  return gridmpi::data_call<Direction::kWrite, Form::kNonBlocking>(
      "MPI_File_iwrite_at_all", [&] { return PMPI_File_iwrite_at_all(fh, offset, buf, count, type, request); }, fh, &offset, buf, count,
      type, request);
}
int GRIDMPI(File_iwrite_at_all_c)(MPI_File fh, MPI_Offset offset, const void* buf, MPI_Count count, MPI_Datatype type,
                                  MPI_Request* request) {
  return gridmpi::data_call<Direction::kWrite, Form::kNonBlocking>(
      "MPI_File_iwrite_at_all_c", [&] { return PMPI_File_iwrite_at_all_c(fh, offset, buf, count, type, request); }, fh, &offset, buf, count,
      type, request);
}
int GRIDMPI(File_write_at_all_begin)(MPI_File fh, MPI_Offset offset, const void* buf, int count, MPI_Datatype type) {
  return gridmpi::data_call<Direction::kWrite, Form::kBegin>(
      "MPI_File_write_at_all_begin", [&] { return PMPI_File_write_at_all_begin(fh, offset, buf, count, type); }, fh, &offset, buf, count,
      type, MPI_STATUS_IGNORE);
}
int GRIDMPI(File_write_at_all_begin_c)(MPI_File fh, MPI_Offset offset, const void* buf, MPI_Count count, MPI_Datatype type) {
  return gridmpi::data_call<Direction::kWrite, Form::kBegin>(
      "MPI_File_write_at_all_begin_c", [&] { return PMPI_File_write_at_all_begin_c(fh, offset, buf, count, type); }, fh, &offset, buf,
      count, type, MPI_STATUS_IGNORE);
}
int GRIDMPI(File_write_at_all_end)(MPI_File fh, const void* buf, MPI_Status* status) {
  return gridmpi::split_end("MPI_File_write_at_all_end", PMPI_File_write_at_all_end, fh, buf, status);
}

// ---------------------------------------------------------------- the file as a whole

int GRIDMPI(File_get_size)(MPI_File fh, MPI_Offset* size) {
  GridFile* f = grid_file(fh);
  if (!f || !f->served) return PMPI_File_get_size(fh, size);
  return gridmpi::on_grid_file("MPI_File_get_size", fh, *f, [&]() -> int {
    *size = static_cast<MPI_Offset>(gridmpi::served_size(*f));
    return MPI_SUCCESS;
  });
}
int GRIDMPI(File_set_size)(MPI_File fh, MPI_Offset size) {
  return gridmpi::whole_file("MPI_File_set_size", fh, [&] { return PMPI_File_set_size(fh, size); });
}
int GRIDMPI(File_preallocate)(MPI_File fh, MPI_Offset size) {
  return gridmpi::whole_file("MPI_File_preallocate", fh, [&] { return PMPI_File_preallocate(fh, size); });
}
int GRIDMPI(File_sync)(MPI_File fh) {
  return gridmpi::whole_file("MPI_File_sync", fh, [&] { return PMPI_File_sync(fh); });
}
int GRIDMPI(File_set_atomicity)(MPI_File fh, int flag) {
  GridFile* f = grid_file(fh);
  if (f && f->served) f->atomic = flag != 0;
  return gridmpi::whole_file("MPI_File_set_atomicity", fh, [&] { return PMPI_File_set_atomicity(fh, flag); });
}
int GRIDMPI(File_get_atomicity)(MPI_File fh, int* flag) {
  GridFile* f = grid_file(fh);
  if (!f || !f->served) return PMPI_File_get_atomicity(fh, flag);
  *flag = f->atomic ? 1 : 0;
  return MPI_SUCCESS;
}
// MPI_SEEK_END of a served file: where the view reaches the end of the file it holds.
int GRIDMPI(File_seek)(MPI_File fh, MPI_Offset offset, int whence) {
  GridFile* f = grid_file(fh);
  if (!f || !f->served || whence != MPI_SEEK_END) return PMPI_File_seek(fh, offset, whence);
  return gridmpi::on_grid_file("MPI_File_seek", fh, *f, [&]() -> int {
    const MPI_Offset to = gridmpi::end_of_served(*f) + offset;
    if (to < 0) throw gridrt::ArgumentError("a place before the start of the view (" + std::to_string(to) + ")", MPI_ERR_ARG);
    return PMPI_File_seek(fh, to, MPI_SEEK_SET);
  });
}
