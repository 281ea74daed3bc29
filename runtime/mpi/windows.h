// One-sided communication on grid communicators (MPI 4.0 chapter 12; docs/mpi.md,
// "One-sided communication"). A window made on a communicator that spans clusters is, to
// the application, an MPICH window of its members in this cluster over the same memory:
// names, attributes (MPI_WIN_BASE, _SIZE, _DISP_UNIT, _CREATE_FLAVOR, _MODEL), info and error
// handlers live on it. Its operations travel as messages of the window's own context to the
// target's one-sided engine (rma/engine.h), which applies them on that process's I/O thread;
// this file is the origin's side: epochs, the operations, their completion.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "layer.h"
#include "rma/engine.h"
#include "rma/node_segment.h"
#include "rma/typemap.h"

namespace gridmpi {

// How `count` elements of datatype `t` lie at a target (type_maps.cpp); ArgumentError
// (MPI_ERR_TYPE) for what cannot be a target type.
gridrt::rma::TypeMap type_map(MPI_Datatype t, int count);
// A predefined datatype's element kind.
gridrt::rma::Kind element_kind(MPI_Datatype t);

// A get-like operation's answer, to be unpacked into the origin's buffer when it comes.
struct PendingResult {
  std::uint64_t id = 0;
  int target = -1;  // rank in the window
  void* buf = nullptr;
  int count = 0;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  std::shared_ptr<Leases> leases;
  bool done = false;
  int error_class = MPI_SUCCESS;
  std::string error;
};

struct GridWin {
  MPI_Win handle = MPI_WIN_NULL;  // the application's: MPICH's window of this cluster's members
  // The window's own communicator inside the layer (its fences' barriers, its context on the
  // transport), over one MPICH communicator of its members in this cluster: with MPICH's
  // window's own, two of MPICH's context ids per window, as programs that make a thousand
  // windows need (MPICH has 2048).
  std::shared_ptr<CommImpl> comm;
  std::shared_ptr<GridComm> errors;  // whose error handler a request's error goes to (the window's communicator)
  std::uint32_t id = 0;              // its context on the transport (with kOneSidedContext)
  std::vector<int> members;          // global ranks, by rank in the window
  int me = -1;
  bool dynamic = false;
  std::vector<std::uint64_t> sizes;  // every member's exposed bytes (not a dynamic window's)
  std::vector<std::uint32_t> disp_units;

  // Targets this process reaches in memory, applying its operations in place under their spin
  // lock as the target's engine would (rma/shared_lock.h): its own part of the window (not a
  // dynamic window's), and that of every process of its node and cluster whose memory the
  // layer allocated (MPI_Win_allocate's, or MPI_Alloc_mem's under MPI_Win_create). By window
  // rank; `lock` null: through the target's engine.
  struct Near {
    gridrt::rma::SharedLock* lock = nullptr;
    char* base = nullptr;
  };
  std::vector<Near> near;
  bool allocated = false;                        // MPI_Win_allocate's: the memory is `own`'s
  gridrt::rma::NodeSegment own;                  // this process's lock (and MPI_Win_allocate's memory), shared with its node
  std::vector<gridrt::rma::NodeSegment> mapped;  // the node's other targets'

  // Epochs (MPI 4.0 §12.5): a fence's, passive-target locks (by target), lock_all, and
  // generalised active target's access (start) and exposure (post) groups.
  bool fence_open = false;
  std::uint64_t fences = 0;  // fences so far (each one's marks carry its number)
  std::set<int> touched;     // targets of this fence epoch's operations
  struct Held {
    bool exclusive = false, nocheck = false;
  };
  std::map<int, Held> locks;
  bool lock_all = false, lock_all_nocheck = false;
  std::set<int> lock_all_asked;  // targets lock_all's shared lock was asked of (lazily)
  bool accessing = false, exposing = false;
  std::vector<int> access, exposure;  // window ranks
  std::vector<bool> completed;        // of `exposure`: its completion has come (MPI_Win_test)

  // What is outstanding: targets written to since their last flush, and answers to come.
  std::set<int> unflushed;
  std::vector<std::shared_ptr<PendingResult>> pending;
  // Data-carrying messages not yet out of this process (waiting for their target's credit),
  // and their bytes.
  std::deque<std::pair<std::shared_ptr<gridrt::detail::RemoteOp>, std::size_t>> leaving;
  std::size_t leaving_bytes = 0;

  int global(int rank) const { return members[static_cast<std::size_t>(rank)]; }
  const Near* near_target(int rank) const {
    const Near& n = near[static_cast<std::size_t>(rank)];
    return n.lock ? &n : nullptr;
  }
};

// The grid window behind a handle, or null (MPICH's own window, or not one).
GridWin* grid_window(MPI_Win win);
// Reports an error of a window as MPI does, through its error handler (as fail() for communicators).
int fail_window(MPI_Win win, int error_class, const std::string& what);
// MPI_Finalize: the grid windows still made are forgotten (MPICH frees its own).
void forget_windows();

}  // namespace gridmpi
