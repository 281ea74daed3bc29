// MPI-IO on grid communicators (MPI 4.0 chapter 14; docs/mpi.md, "Files"): what the open,
// the shared file pointer (files.cpp) and the access to a file that lives in one cluster
// (file_access.cpp) share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fileio/file_service.h"
#include "layer.h"

namespace gridmpi {

// A file view (MPI_File_set_view) as byte extents: its filetype flattened once into the
// blocks of one tile, which repeats every `tile_extent` bytes from `disp`.
struct FileView {
  MPI_Offset disp = 0;
  std::vector<gridrt::fileio::Extent> blocks{{0, 1}};  // in type-map order, offsets from the tile's start
  std::vector<std::uint64_t> before{0};                // data bytes of the tile before each block
  std::uint64_t tile_extent = 1, tile_bytes = 1;

  // The view of `filetype` from `disp` (MPI_ERR_TYPE for a filetype MPI-IO does not allow).
  static FileView of(MPI_Offset disp, MPI_Datatype filetype);
  // The file's extents that hold the view's data bytes [from, from + bytes), in order.
  std::vector<gridrt::fileio::Extent> extents(std::uint64_t from, std::uint64_t bytes) const;
  // The view's data bytes that lie before byte `size` of the file.
  std::uint64_t data_below(std::uint64_t size) const;
};

// A file open across clusters.
struct GridFile {
  MPI_Comm comm = MPI_COMM_NULL;   // the layer's duplicate of the communicator it was opened on
  MPI_Win pointer = MPI_WIN_NULL;  // the shared file pointer: one MPI_Offset (etypes) at rank 0
  MPI_Count etype_bytes = 1;       // the view's etype (MPI_BYTE until MPI_File_set_view), which the pointers count
  bool first = false;              // this process's cluster closes last (rank 0's, or the one holding the file)
  bool sequential = false;         // MPI_MODE_SEQUENTIAL (which ROMIO was not given)
  std::string name;                // as the program named it
  std::vector<int> clusters;       // one member (global rank) of each cluster of the communicator

  // A file that lives in one cluster (on no file system that all the clusters mount, or
  // placed by the info key gridrt_file_cluster): its cluster's processes open it with ROMIO
  // and serve the others (fileio/file_service.h) on the transport's context `service`.
  bool in_one_cluster = false;
  std::uint32_t service = 0;
  // This process is not in that cluster: the handle the application holds is ROMIO's over
  // a scratch file of this process (which carries the view, the individual file pointer,
  // info and error handlers, as ROMIO keeps them), and every access goes to `server`.
  bool served = false;
  int server = -1;  // global rank
  int amode = 0;
  bool atomic = false;
  FileView view;
  MPI_Request split = MPI_REQUEST_NULL;  // a split collective's, from _begin to _end
};

// The grid file behind a handle, or null.
GridFile* grid_file(MPI_File fh);
// The service of files in one cluster of this process (made at the first such open).
gridrt::fileio::FileService& file_service();
// Runs `body` for a file, reporting what it throws through the file's error handler.
template <typename F> int on_file(const char* function, MPI_File fh, F&& body) {
  return reporting(
      function, [fh](int error_class, const std::string& what) { return fail_file(fh, error_class, what); }, std::forward<F>(body));
}
// Throws, naming it, once a cluster of the file's communicator was lost: every call on the
// file fails from then on (what was written before, and synced, stays in the file).
void check_clusters(const GridFile& f);
// The same as on_file for a call on an open grid file, which fails first once one of its
// clusters was lost (the layer's collectives and windows would wait on the lost ranks).
template <typename F> int on_grid_file(const char* function, MPI_File fh, const GridFile& f, F&& body) {
  return on_file(function, fh, [&]() -> int {
    check_clusters(f);
    return body();
  });
}
// Sets the shared file pointer (etypes) at rank 0's window.
void set_shared_pointer(GridFile& f, MPI_Offset etypes);
// The largest error class of the processes of `comm` (0: none failed).
int worst_class(MPI_Comm comm, int rc);
// MPI_MODE_APPEND: the file pointers start at the end of the file (MPI 4.0 §14.2.1), the
// shared one (rank 0's) and a served process's individual one, which its scratch handle
// cannot know (ROMIO puts the others'). Collective, after a successful open.
void start_at_the_end(GridFile& f, MPI_File fh);
// Where the view of a served file ends, in etypes (MPI_SEEK_END).
MPI_Offset end_of_served(GridFile& f);

}  // namespace gridmpi
