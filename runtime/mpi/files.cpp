// MPI-IO on grid communicators (MPI 4.0 chapter 14; docs/mpi.md, "Files").
//
// A file opened on a communicator that spans clusters lies either on a file system that
// every one of those clusters mounts (the grid description's <fileSystem>, handed to the
// processes as GRIDRT_FILE_SYSTEMS, "NAME=PATH;...") or in one cluster (any other file, or
// one the info key gridrt_file_cluster places): then only that cluster's processes open it
// and they serve the others (file_access.cpp; fileio/file_service.h). On a shared file
// system each cluster's processes open it with their own MPICH (ROMIO), on the grid
// communicator's handle — MPICH's communicator of its members in this cluster — and the
// handle ROMIO gives is the application's: reads and
// writes at explicit offsets and individual pointers, views of any datatype, collective
// buffering (among the cluster's members), non-blocking and split collectives, sizes, sync
// and atomic mode are ROMIO's, each cluster's on the one file they all see, so that every
// byte goes from its process to the file system without crossing the WAN. What spans
// clusters is the layer's:
//   - the open: with MPI_MODE_EXCL the cluster of rank 0 opens first (so that the file is
//     created once), the others then open what it made; all agree on the outcome;
//   - the file's group (MPI_File_get_group): the communicator's, not the cluster's part;
//   - the shared file pointer, one for all clusters: an MPI_Offset in a window at rank 0
//     (a grid window: rank 0's one-sided engine serves it while rank 0 computes), moved
//     by MPI_Fetch_and_op; ordered access takes each process's place from an allgather of
//     the counts in rank order;
//   - the close: MPI_MODE_DELETE_ON_CLOSE deletes the file once all clusters have closed it;
//   - collective buffering of writes is off (ROMIO's hint romio_cb_write=disable, whatever
//     the program asks): a cluster's two-phase aggregator writes back whole file domains,
//     holes included, that it read first, without a lock — over what another cluster wrote
//     meanwhile into those holes (MPICH's test io/i_noncontig_coll2 lost values so in 4
//     runs of 8, none of 6 with the hint). Each process then writes its own data, sieving
//     noncontiguous pieces under ROMIO's byte-range lock, which the other clusters'
//     processes respect too;
//   - MPI_MODE_SEQUENTIAL: ROMIO refuses its explicit-offset calls on such a file, which
//     the shared pointer here is made of, so ROMIO opens it without and the layer gives
//     the mode back (MPI_File_get_amode); MPI_DISPLACEMENT_CURRENT in a view is the byte
//     where the grid's shared pointer stands.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "files.h"
#include "mpi_error.h"
#include "common/settings.h"

namespace gridmpi {

std::map<MPI_File, GridFile> g_files;

GridFile* grid_file(MPI_File fh) {
  const auto it = g_files.find(fh);
  return it == g_files.end() ? nullptr : &it->second;
}

int worst_class(MPI_Comm comm, int rc) {
  const int mine = rc == MPI_SUCCESS ? MPI_SUCCESS : gridrt::detail::mpi_error_class(rc);
  int worst = MPI_SUCCESS;
  gridrt::detail::check_mpi(gridmpi_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, comm), "the agreement across clusters");
  return worst;
}

void set_shared_pointer(GridFile& f, MPI_Offset etypes) {
  gridrt::detail::check_mpi(gridmpi_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, f.pointer), "the shared file pointer");
  gridrt::detail::check_mpi(gridmpi_Put(&etypes, 1, MPI_OFFSET, 0, 0, 1, MPI_OFFSET, f.pointer), "the shared file pointer");
  gridrt::detail::check_mpi(gridmpi_Win_unlock(0, f.pointer), "the shared file pointer");
}

namespace {

// The prefixes ROMIO takes before a file name to choose its driver ("ufs:/path").
std::string without_driver(const std::string& name) {
  const auto colon = name.find(':');
  if (colon == std::string::npos || colon < 2) return name;
  for (const char* driver : {"ufs", "nfs", "lustre", "gpfs", "pvfs2", "xfs", "panfs", "testfs", "daos", "quobytefs"})
    if (name.compare(0, colon, driver) == 0) return name.substr(colon + 1);
  return name;
}

// The file a name means on this process: without ROMIO's driver prefix, and made absolute
// (a relative name is the working directory's, which differs between clusters).
std::filesystem::path absolute_name(const std::string& name) {
  std::filesystem::path p(without_driver(name));
  if (p.is_relative()) p = std::filesystem::current_path() / p;
  return p.lexically_normal();
}

// Where the file `p` (absolute) lies: "FILESYSTEM:path inside it" for the longest of this
// cluster's file systems that holds it, "" for none.
std::string place_of(const std::filesystem::path& p) {
  std::string best_name, best_inside;
  std::size_t best_length = 0;
  for (std::string rest = gridrt::settings::value("GRIDRT_FILE_SYSTEMS").value_or(""); !rest.empty();) {
    const auto semi = rest.find(';');
    const std::string entry = rest.substr(0, semi);
    rest = semi == std::string::npos ? "" : rest.substr(semi + 1);
    const auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    const std::filesystem::path mount(entry.substr(eq + 1));
    const std::filesystem::path inside = p.lexically_relative(mount);
    if (inside.empty() || *inside.begin() == "..") continue;
    if (mount.native().size() >= best_length) {
      best_length = mount.native().size();
      best_name = entry.substr(0, eq);
      best_inside = inside.native();
    }
  }
  return best_name.empty() ? "" : best_name + ":" + best_inside;
}

// FNV-1a: the places of all processes are compared as their hashes (0 for none).
std::uint64_t hash_of(const std::string& s) {
  if (s.empty()) return 0;
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h ? h : 1;
}

// ROMIO's error of the open, its handler run by ROMIO, said again naming the file: with its
// class's text, not its own, which may be another process's (ROMIO hands every process
// of the open the error code the process that opened first made; MPICH then finds no such
// code in this process's ring of messages and says "Invalid error code" on stderr).
int romio_open_error(int rc, const std::string& name) {
  const int error_class = gridrt::detail::mpi_error_class(rc);
  return error_code(error_class, "MPI_File_open: '" + name + "': " + gridrt::detail::mpi_error_text(error_class));
}

// The program's info (or none) with collective buffering of writes off, for ROMIO: a new
// info, the caller's to free.
MPI_Info without_write_buffering(MPI_Info info) {
  MPI_Info out = MPI_INFO_NULL;
  if (info == MPI_INFO_NULL) PMPI_Info_create(&out);
  else PMPI_Info_dup(info, &out);
  PMPI_Info_set(out, "romio_cb_write", "disable");
  return out;
}

// The info key that names the cluster to hold a file (MPI_File_open): the file then lives
// there, its other clusters' processes served by that cluster's, even where they could
// all reach it on a shared file system.
constexpr const char* kFileClusterKey = "gridrt_file_cluster";
// What a process's info says of it, agreed between the processes as a number: no key, a
// name of no cluster of the communicator, or kFirstCluster + the cluster's index.
constexpr std::uint64_t kNoClusterNamed = 0, kNoSuchCluster = 1, kFirstCluster = 2;

std::uint64_t holder_named(MPI_Info info, const GridComm& g, std::string* named) {
  if (info == MPI_INFO_NULL) return kNoClusterNamed;
  char value[MPI_MAX_INFO_VAL + 1] = {};
  int flag = 0;
  PMPI_Info_get(info, kFileClusterKey, MPI_MAX_INFO_VAL, value, &flag);
  if (!flag) return kNoClusterNamed;
  *named = value;
  const auto& topo = gridrt::detail::state().topo;
  const auto index = topo.index_of(*named);
  if (!index) return kNoSuchCluster;
  for (int member : g.impl->members)
    if (topo.cluster_of(static_cast<std::uint32_t>(member)) == *index) return kFirstCluster + *index;
  return kNoSuchCluster;
}

// A served process's handle: ROMIO's, over a scratch file of its own that nothing is
// written to (removed at once: it goes with the handle, also if the process dies).
int open_scratch(MPI_File* fh) {
  static int made = 0;
  const std::string path =
      (std::filesystem::temp_directory_path() / ("gridrt-file-" + std::to_string(::getpid()) + "-" + std::to_string(++made))).string();
  const int rc = PMPI_File_open(MPI_COMM_SELF, path.c_str(), MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_EXCL, MPI_INFO_NULL, fh);
  if (rc == MPI_SUCCESS) ::unlink(path.c_str());
  return rc;
}

// The file's cluster: each of its processes serves the file from a descriptor of its own
// (opened once ROMIO made the file) to the other clusters' processes given to it.
int serve(const GridFile& f, const std::filesystem::path& file, std::string* error) {
  const int access = f.amode & MPI_MODE_RDONLY ? O_RDONLY : f.amode & MPI_MODE_WRONLY ? O_WRONLY : O_RDWR;
  const int fd = ::open(file.c_str(), access | O_CLOEXEC);
  if (fd < 0) {
    *error = std::string("opening it to serve the other clusters: ") + std::strerror(errno);
    return MPI_ERR_FILE;
  }
  file_service().serve(f.service, fd, f.name);
  return MPI_SUCCESS;
}

struct InfoFreed {
  MPI_Info info;
  ~InfoFreed() { PMPI_Info_free(&info); }
};

// The shared file pointer's window at rank 0 of the file's communicator.
void make_shared_pointer(GridFile& f) {
  const int rank = grid(f.comm)->rank();
  const MPI_Aint bytes = rank == 0 ? static_cast<MPI_Aint>(sizeof(MPI_Offset)) : 0;
  MPI_Offset* memory = nullptr;
  gridrt::detail::check_mpi(gridmpi_Win_allocate(bytes, sizeof(MPI_Offset), MPI_INFO_NULL, f.comm, &memory, &f.pointer),
                            "the shared file pointer's window");
  if (rank == 0) *memory = 0;  // (before anyone uses it: the open's agreement comes after)
}

// Moves the shared file pointer by `etypes` and returns where it was (MPI_NO_OP: reads it).
MPI_Offset fetch_and_add(GridFile& f, MPI_Offset etypes, MPI_Op op = MPI_SUM) {
  MPI_Offset before = 0;
  gridrt::detail::check_mpi(gridmpi_Win_lock(MPI_LOCK_SHARED, 0, 0, f.pointer), "the shared file pointer");
  gridrt::detail::check_mpi(gridmpi_Fetch_and_op(&etypes, &before, MPI_OFFSET, 0, 0, op, f.pointer), "the shared file pointer");
  gridrt::detail::check_mpi(gridmpi_Win_unlock(0, f.pointer), "the shared file pointer");
  return before;
}

// How many etypes of the file's view `count` elements of `type` make (MPI: a whole number).
template <typename Count> MPI_Offset etypes_of(const GridFile& f, Count count, MPI_Datatype type) {
  MPI_Count type_bytes = 0;
  PMPI_Type_size_x(type, &type_bytes);
  return f.etype_bytes > 0 ? static_cast<MPI_Offset>(static_cast<MPI_Count>(count) * type_bytes / f.etype_bytes) : 0;
}

// Every process's place in an ordered access: the etypes of the processes before it in
// rank order, and where the shared pointer stood before all of them (moved past them all).
std::pair<MPI_Offset, MPI_Offset> ordered_place(GridFile& f, MPI_Offset mine) {
  GridComm& g = *grid(f.comm);
  std::vector<MPI_Offset> all(static_cast<std::size_t>(g.size()));
  gridrt::detail::check_mpi(gridmpi_Allgather(&mine, 1, MPI_OFFSET, all.data(), 1, MPI_OFFSET, f.comm), "the ordered access's counts");
  MPI_Offset before = 0, total = 0;
  for (int r = 0; r < g.size(); ++r) {
    if (r < g.rank()) before += all[static_cast<std::size_t>(r)];
    total += all[static_cast<std::size_t>(r)];
  }
  MPI_Offset base = 0;
  if (g.rank() == 0) base = fetch_and_add(f, total);
  gridrt::detail::check_mpi(gridmpi_Bcast(&base, 1, MPI_OFFSET, 0, f.comm), "the ordered access's base");
  return {base, before};
}

}  // namespace

void forget_files() { g_files.clear(); }

}  // namespace gridmpi

using gridmpi::g_files;
using gridmpi::grid_file;
using gridmpi::GridFile;

int GRIDMPI(File_open)(MPI_Comm comm, const char* filename, int amode, MPI_Info info, MPI_File* fh) {
  gridmpi::GridComm* g = gridmpi::grid(comm);
  if (!g || g->inter()) return PMPI_File_open(comm, filename, amode, info, fh);
  const std::string name = filename ? filename : "";
  return gridmpi::on_file("MPI_File_open", MPI_FILE_NULL, [&]() -> int {
    *fh = MPI_FILE_NULL;
    // Where the file lies: on one file system that every process's cluster mounts, or in
    // the cluster the info key names, or else in rank 0's.
    const std::filesystem::path absolute = gridmpi::absolute_name(name);
    const std::string place = gridmpi::place_of(absolute);
    const std::uint64_t mine = gridmpi::hash_of(place);
    std::string named;
    const std::uint64_t holder = gridmpi::holder_named(info, *g, &named);
    std::uint64_t in[4] = {mine, ~mine, holder, ~holder}, out[4] = {0, 0, 0, 0};
    gridrt::detail::check_mpi(gridmpi_Allreduce(in, out, 4, MPI_UINT64_T, MPI_MAX, comm), "the open's agreement");
    if (out[2] != ~out[3])
      throw gridrt::ArgumentError("the processes name different clusters to hold '" + name + "' (info key " + gridmpi::kFileClusterKey +
                                      "; here: " + (named.empty() ? "none" : named) + ")",
                                  MPI_ERR_INFO_VALUE);
    if (holder == gridmpi::kNoSuchCluster)
      throw gridrt::ArgumentError(
          std::string("info key ") + gridmpi::kFileClusterKey + " names '" + named + "', which is no cluster of the communicator",
          MPI_ERR_INFO_VALUE);
    GridFile f;
    f.name = name;
    std::set<std::uint32_t> seen;
    for (int member : g->impl->members)
      if (seen.insert(gridrt::detail::state().topo.cluster_of(static_cast<std::uint32_t>(member))).second) f.clusters.push_back(member);
    f.amode = amode;
    f.sequential = (amode & MPI_MODE_SEQUENTIAL) != 0;
    f.in_one_cluster = holder != gridmpi::kNoClusterNamed || out[0] == 0 || out[0] != ~out[1];
    const std::uint32_t home = holder >= gridmpi::kFirstCluster
                                   ? static_cast<std::uint32_t>(holder - gridmpi::kFirstCluster)
                                   : gridrt::detail::state().topo.cluster_of(static_cast<std::uint32_t>(g->impl->members.front()));
    if (f.in_one_cluster) {
      f.first = gridrt::detail::state().cluster == home;
      f.served = !f.first;
    } else {
      f.first = gridmpi::in_this_cluster(g->impl->members.front());
    }
    // ROMIO is given the absolute name, with the driver prefix the program chose.
    const std::string path = name.substr(0, name.size() - gridmpi::without_driver(name).size()) + absolute.string();
    const int romio_amode = amode & ~MPI_MODE_SEQUENTIAL;
    const gridmpi::InfoFreed romio_info{gridmpi::without_write_buffering(info)};
    int rc = MPI_SUCCESS;
    if (f.served) {
      rc = gridmpi::open_scratch(fh);
    } else if (f.in_one_cluster) {
      rc = PMPI_File_open(comm, path.c_str(), romio_amode, romio_info.info, fh);
    } else {
      // MPI_MODE_EXCL alone needs the cluster of rank 0 to open (and create) the file
      // before the others, a wide-area round trip more; without it all open at once (each
      // cluster's O_CREAT finds or makes the one file).
      if (f.first) rc = PMPI_File_open(comm, path.c_str(), romio_amode, romio_info.info, fh);
      if (amode & MPI_MODE_EXCL)
        if (const int first_class = gridmpi::worst_class(comm, rc)) {
          if (f.first) return gridmpi::romio_open_error(rc, name);
          throw gridrt::ArgumentError("'" + name + "': " + gridrt::detail::mpi_error_text(first_class) + " (in the cluster of rank 0)",
                                      first_class);
        }
      if (!f.first) rc = PMPI_File_open(comm, path.c_str(), romio_amode & ~(MPI_MODE_EXCL | MPI_MODE_DELETE_ON_CLOSE), romio_info.info, fh);
    }
    // The file's own communicator and shared pointer are made before the outcome is known:
    // the agreement on it then also tells every process that rank 0's pointer is set (and
    // that a file in one cluster is served).
    gridrt::detail::check_mpi(gridmpi_Comm_dup(comm, &f.comm), "the file's communicator");
    gridmpi::make_shared_pointer(f);
    // (Their errors are the file's, said through its handler: a lost cluster must not
    // end the job from inside MPI_File_close.)
    PMPI_Comm_set_errhandler(f.comm, MPI_ERRORS_RETURN);
    PMPI_Win_set_errhandler(f.pointer, MPI_ERRORS_RETURN);
    std::string serving_error;
    if (f.in_one_cluster) {
      f.service = gridrt::detail::agree_on_context(g->impl) | gridrt::detail::kOneSidedContext | gridrt::fileio::kFileServiceContext;
      std::vector<int> holders;
      for (int member : g->impl->members)
        if (gridrt::detail::state().topo.cluster_of(static_cast<std::uint32_t>(member)) == home) holders.push_back(member);
      f.server = holders[static_cast<std::size_t>(g->rank()) % holders.size()];
      if (!f.served && rc == MPI_SUCCESS) rc = gridmpi::serve(f, absolute, &serving_error);
    }
    if (const int other_class = gridmpi::worst_class(comm, rc)) {
      if (f.in_one_cluster && !f.served) gridmpi::file_service().withdraw(f.service);
      if (*fh != MPI_FILE_NULL) PMPI_File_close(fh);
      gridmpi_Win_free(&f.pointer);
      gridmpi_Comm_free(&f.comm);
      if (!serving_error.empty()) throw gridrt::ArgumentError("'" + name + "': " + serving_error, other_class);
      if (rc != MPI_SUCCESS) return gridmpi::romio_open_error(rc, name);
      throw gridrt::ArgumentError("'" + name + "': " + gridrt::detail::mpi_error_text(other_class) + " (in another cluster)", other_class);
    }
    GridFile& opened = g_files.emplace(*fh, std::move(f)).first->second;
    if (amode & MPI_MODE_APPEND) gridmpi::start_at_the_end(opened, *fh);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(File_close)(MPI_File* fh) {
  GridFile* f = grid_file(*fh);
  if (!f) return PMPI_File_close(fh);
  const MPI_File file = *fh;
  // (An error of the layer's parts is raised once ROMIO's handle is closed: through
  // MPI_FILE_NULL's handler, the file's being gone.)
  return gridmpi::on_file("MPI_File_close", MPI_FILE_NULL, [&]() -> int {
    GridFile closing = std::move(*f);
    g_files.erase(file);
    // The other clusters close first: the file is deleted (MPI_MODE_DELETE_ON_CLOSE) by the
    // first cluster's ROMIO only once no cluster has it open. ROMIO's handle is closed
    // whatever becomes of the layer's parts: what this process wrote is in the file either
    // way. A served process's accesses were all answered before it came here, and the
    // window's free waits for it. Once a cluster of the file is lost the window is left
    // as it is (its free, a barrier with the lost ranks, would fail in some processes and
    // leave the others waiting for them), and the close's error says so.
    int rc = MPI_SUCCESS;
    if (!closing.first) rc = PMPI_File_close(fh);
    std::string lost;
    try {
      gridmpi::check_clusters(closing);
    } catch (const gridrt::Error& e) { lost = e.what(); }
    const int freed = lost.empty() ? gridmpi_Win_free(&closing.pointer) : MPI_SUCCESS;
    if (closing.in_one_cluster && !closing.served) gridmpi::file_service().withdraw(closing.service);
    if (closing.first) rc = PMPI_File_close(fh);
    gridmpi_Comm_free(&closing.comm);
    *fh = MPI_FILE_NULL;
    if (!lost.empty()) throw gridrt::Error(lost, MPI_ERR_OTHER);
    gridrt::detail::check_mpi(freed, "the shared file pointer's window");
    return rc;
  });
}

int GRIDMPI(File_get_group)(MPI_File fh, MPI_Group* group) {
  GridFile* f = grid_file(fh);
  if (!f) return PMPI_File_get_group(fh, group);
  return gridmpi_Comm_group(f->comm, group);
}

int GRIDMPI(File_set_info)(MPI_File fh, MPI_Info info) {
  if (!grid_file(fh)) return PMPI_File_set_info(fh, info);
  const gridmpi::InfoFreed romio_info{gridmpi::without_write_buffering(info)};
  return PMPI_File_set_info(fh, romio_info.info);
}

int GRIDMPI(File_get_amode)(MPI_File fh, int* amode) {
  GridFile* f = grid_file(fh);
  if (f && f->served) {  // (its handle's amode is the scratch file's)
    *amode = f->amode;
    return MPI_SUCCESS;
  }
  const int rc = PMPI_File_get_amode(fh, amode);
  if (f && f->sequential && rc == MPI_SUCCESS) *amode |= MPI_MODE_SEQUENTIAL;
  return rc;
}

// MPI_File_set_view sets both file pointers to zero (MPI 4.0 §14.3): the shared one too.
// MPI_DISPLACEMENT_CURRENT (a file opened MPI_MODE_SEQUENTIAL) is the byte where the shared
// pointer stands by the view before, as rank 0 reads it.
int GRIDMPI(File_set_view)(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char* datarep, MPI_Info info) {
  GridFile* f = grid_file(fh);
  if (!f) return PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
  return gridmpi::on_grid_file("MPI_File_set_view", fh, *f, [&]() -> int {
    const bool rank0 = gridmpi::grid(f->comm)->rank() == 0;
    if (disp == MPI_DISPLACEMENT_CURRENT) {
      if (!f->sequential) throw gridrt::ArgumentError("MPI_DISPLACEMENT_CURRENT needs a file opened with MPI_MODE_SEQUENTIAL", MPI_ERR_ARG);
      MPI_Offset byte = 0;
      if (rank0)
        gridrt::detail::check_mpi(PMPI_File_get_byte_offset(fh, gridmpi::fetch_and_add(*f, 0, MPI_NO_OP), &byte),
                                  "the shared file pointer's byte");
      gridrt::detail::check_mpi(gridmpi_Bcast(&byte, 1, MPI_OFFSET, 0, f->comm), "the shared file pointer's byte");
      disp = byte;
    }
    // A file in one cluster is written as the bytes it holds: its data representation is
    // this machine's (every process's, or every process fails alike).
    if (f->in_one_cluster && (!datarep || std::string(datarep) != "native"))
      throw gridrt::ArgumentError(
          std::string("data representation '") + (datarep ? datarep : "") + "' on a file that lives in one cluster (only \"native\")",
          MPI_ERR_UNSUPPORTED_DATAREP);
    const gridmpi::InfoFreed romio_info{gridmpi::without_write_buffering(info)};
    const gridmpi::FileView view = f->served && filetype != MPI_DATATYPE_NULL ? gridmpi::FileView::of(disp, filetype) : f->view;
    const int rc = PMPI_File_set_view(fh, disp, etype, filetype, datarep, romio_info.info);
    if (rc != MPI_SUCCESS) return rc;
    f->view = view;
    PMPI_Type_size_x(etype, &f->etype_bytes);
    if (rank0) gridmpi::set_shared_pointer(*f, 0);
    gridrt::detail::check_mpi(gridmpi_Barrier(f->comm), "the shared file pointer");
    return MPI_SUCCESS;
  });
}

// ---------------------------------------------------------------- the shared file pointer

// Each of these is ROMIO's explicit-offset form (`at`) at the place the shared pointer gives
// (ROMIO's own `native` form where the file is MPICH's alone): `shared` takes its place from
// the pointer as it is, `ordered` from the ranks before in rank order (collective).
namespace {

template <typename Buffer, typename Count, typename... Rest>
int shared(const char* function, int (*native)(MPI_File, Buffer, Count, MPI_Datatype, Rest...),
           int (*at)(MPI_File, MPI_Offset, Buffer, Count, MPI_Datatype, Rest...), MPI_File fh, Buffer buf, Count count, MPI_Datatype type,
           Rest... rest) {
  GridFile* f = grid_file(fh);
  if (!f) return native(fh, buf, count, type, rest...);
  return gridmpi::on_grid_file(function, fh, *f, [&]() -> int {
    return at(fh, gridmpi::fetch_and_add(*f, gridmpi::etypes_of(*f, count, type)), buf, count, type, rest...);
  });
}

template <typename Buffer, typename Count, typename... Rest>
int ordered(const char* function, int (*native)(MPI_File, Buffer, Count, MPI_Datatype, Rest...),
            int (*at_all)(MPI_File, MPI_Offset, Buffer, Count, MPI_Datatype, Rest...), MPI_File fh, Buffer buf, Count count,
            MPI_Datatype type, Rest... rest) {
  GridFile* f = grid_file(fh);
  if (!f) return native(fh, buf, count, type, rest...);
  return gridmpi::on_grid_file(function, fh, *f, [&]() -> int {
    const auto [base, before] = gridmpi::ordered_place(*f, gridmpi::etypes_of(*f, count, type));
    return at_all(fh, base + before, buf, count, type, rest...);
  });
}

}  // namespace

int GRIDMPI(File_read_shared)(MPI_File fh, void* buf, int count, MPI_Datatype type, MPI_Status* status) {
  return shared("MPI_File_read_shared", PMPI_File_read_shared, gridmpi_File_read_at, fh, buf, count, type, status);
}
int GRIDMPI(File_write_shared)(MPI_File fh, const void* buf, int count, MPI_Datatype type, MPI_Status* status) {
  return shared("MPI_File_write_shared", PMPI_File_write_shared, gridmpi_File_write_at, fh, buf, count, type, status);
}
int GRIDMPI(File_iread_shared)(MPI_File fh, void* buf, int count, MPI_Datatype type, MPI_Request* request) {
  return shared("MPI_File_iread_shared", PMPI_File_iread_shared, gridmpi_File_iread_at, fh, buf, count, type, request);
}
int GRIDMPI(File_iwrite_shared)(MPI_File fh, const void* buf, int count, MPI_Datatype type, MPI_Request* request) {
  return shared("MPI_File_iwrite_shared", PMPI_File_iwrite_shared, gridmpi_File_iwrite_at, fh, buf, count, type, request);
}
int GRIDMPI(File_read_shared_c)(MPI_File fh, void* buf, MPI_Count count, MPI_Datatype type, MPI_Status* status) {
  return shared("MPI_File_read_shared_c", PMPI_File_read_shared_c, gridmpi_File_read_at_c, fh, buf, count, type, status);
}
int GRIDMPI(File_write_shared_c)(MPI_File fh, const void* buf, MPI_Count count, MPI_Datatype type, MPI_Status* status) {
  return shared("MPI_File_write_shared_c", PMPI_File_write_shared_c, gridmpi_File_write_at_c, fh, buf, count, type, status);
}
int GRIDMPI(File_iread_shared_c)(MPI_File fh, void* buf, MPI_Count count, MPI_Datatype type, MPI_Request* request) {
  return shared("MPI_File_iread_shared_c", PMPI_File_iread_shared_c, gridmpi_File_iread_at_c, fh, buf, count, type, request);
}
int GRIDMPI(File_iwrite_shared_c)(MPI_File fh, const void* buf, MPI_Count count, MPI_Datatype type, MPI_Request* request) {
  return shared("MPI_File_iwrite_shared_c", PMPI_File_iwrite_shared_c, gridmpi_File_iwrite_at_c, fh, buf, count, type, request);
}
int GRIDMPI(File_read_ordered)(MPI_File fh, void* buf, int count, MPI_Datatype type, MPI_Status* status) {
  return ordered("MPI_File_read_ordered", PMPI_File_read_ordered, gridmpi_File_read_at_all, fh, buf, count, type, status);
}
int GRIDMPI(File_write_ordered)(MPI_File fh, const void* buf, int count, MPI_Datatype type, MPI_Status* status) {
  return ordered("MPI_File_write_ordered", PMPI_File_write_ordered, gridmpi_File_write_at_all, fh, buf, count, type, status);
}
int GRIDMPI(File_read_ordered_c)(MPI_File fh, void* buf, MPI_Count count, MPI_Datatype type, MPI_Status* status) {
  return ordered("MPI_File_read_ordered_c", PMPI_File_read_ordered_c, gridmpi_File_read_at_all_c, fh, buf, count, type, status);
}
int GRIDMPI(File_write_ordered_c)(MPI_File fh, const void* buf, MPI_Count count, MPI_Datatype type, MPI_Status* status) {
  return ordered("MPI_File_write_ordered_c", PMPI_File_write_ordered_c, gridmpi_File_write_at_all_c, fh, buf, count, type, status);
}
// Split ordered access: the place is taken at _begin; _end is the explicit-offset one's.
int GRIDMPI(File_read_ordered_begin)(MPI_File fh, void* buf, int count, MPI_Datatype type) {
  return ordered("MPI_File_read_ordered_begin", PMPI_File_read_ordered_begin, gridmpi_File_read_at_all_begin, fh, buf, count, type);
}
int GRIDMPI(File_write_ordered_begin)(MPI_File fh, const void* buf, int count, MPI_Datatype type) {
  return ordered("MPI_File_write_ordered_begin", PMPI_File_write_ordered_begin, gridmpi_File_write_at_all_begin, fh, buf, count, type);
}
int GRIDMPI(File_read_ordered_begin_c)(MPI_File fh, void* buf, MPI_Count count, MPI_Datatype type) {
  return ordered("MPI_File_read_ordered_begin_c", PMPI_File_read_ordered_begin_c, gridmpi_File_read_at_all_begin_c, fh, buf, count, type);
}
int GRIDMPI(File_write_ordered_begin_c)(MPI_File fh, const void* buf, MPI_Count count, MPI_Datatype type) {
  return ordered("MPI_File_write_ordered_begin_c", PMPI_File_write_ordered_begin_c, gridmpi_File_write_at_all_begin_c, fh, buf, count,
                 type);
}
int GRIDMPI(File_read_ordered_end)(MPI_File fh, void* buf, MPI_Status* status) {
  if (!grid_file(fh)) return PMPI_File_read_ordered_end(fh, buf, status);
  return gridmpi_File_read_at_all_end(fh, buf, status);
}
int GRIDMPI(File_write_ordered_end)(MPI_File fh, const void* buf, MPI_Status* status) {
  if (!grid_file(fh)) return PMPI_File_write_ordered_end(fh, buf, status);
  return gridmpi_File_write_at_all_end(fh, buf, status);
}

int GRIDMPI(File_get_position_shared)(MPI_File fh, MPI_Offset* offset) {
  GridFile* f = grid_file(fh);
  if (!f) return PMPI_File_get_position_shared(fh, offset);
  return gridmpi::on_grid_file("MPI_File_get_position_shared", fh, *f, [&]() -> int {
    *offset = gridmpi::fetch_and_add(*f, 0, MPI_NO_OP);
    return MPI_SUCCESS;
  });
}

// Collective: every process passes the same offset and whence (MPI 4.0 §14.4.4). Rank 0
// works out the new place — for MPI_SEEK_END in the view's etypes, as ROMIO's own seek of
// its individual pointer does, which it then puts back — and all wait until it is set.
int GRIDMPI(File_seek_shared)(MPI_File fh, MPI_Offset offset, int whence) {
  GridFile* f = grid_file(fh);
  if (!f) return PMPI_File_seek_shared(fh, offset, whence);
  return gridmpi::on_grid_file("MPI_File_seek_shared", fh, *f, [&]() -> int {
    int rc = MPI_SUCCESS;
    if (gridmpi::grid(f->comm)->rank() == 0) {
      MPI_Offset to = offset;
      if (whence == MPI_SEEK_CUR) {
        to = gridmpi::fetch_and_add(*f, 0, MPI_NO_OP) + offset;
      } else if (whence == MPI_SEEK_END) {
        MPI_Offset individual = 0;
        rc = PMPI_File_get_position(fh, &individual);
        if (rc == MPI_SUCCESS) rc = gridmpi_File_seek(fh, offset, MPI_SEEK_END);
        if (rc == MPI_SUCCESS) rc = PMPI_File_get_position(fh, &to);
        PMPI_File_seek(fh, individual, MPI_SEEK_SET);
      } else if (whence != MPI_SEEK_SET) {
        rc = MPI_ERR_ARG;
      }
      if (rc == MPI_SUCCESS && to < 0) rc = MPI_ERR_ARG;
      if (rc == MPI_SUCCESS) gridmpi::set_shared_pointer(*f, to);
    }
    const int worst = gridmpi::worst_class(f->comm, rc);
    if (worst != MPI_SUCCESS)
      throw gridrt::ArgumentError("offset " + std::to_string(offset) + " with whence " + std::to_string(whence) +
                                      " does not give a place in the file (rank 0's view)",
                                  worst);
    return MPI_SUCCESS;
  });
}
