// Whether a program of the job initialised MPI through gridrt, seen where MPI_Init must
// speak first: the process manager's PMI socket.
//
// Under gridrun every MPI program must join the job through gridrt (its MPI layer, or
// gridrt::init). One that initialises MPI past it (a wrapper that cleared LD_PRELOAD, a
// statically linked MPICH) would run as one MPI job per cluster and say nothing. So the
// process monitor (gridproc) hands the program one end of a socket pair as its PMI_FD and
// passes what goes either way on to the process manager's socket (relay/pmi_proxy.h), and
// gridrt::init writes kJoining on it before MPI_Init speaks there: the first bytes the
// program's side sends say whether MPI was initialised through gridrt.
#pragma once

#include <cstdlib>
#include <string_view>

#include "common/process.h"

namespace gridrt::pmi_watch {

// Set by gridproc in the program's environment: the PMI_FD it watches.
inline constexpr const char* kVariable = "GRIDRT_PMI_WATCH";
// What a process joining through gridrt writes first. gridproc takes it out of the stream,
// so the process manager never sees it; no PMI-1 or PMI-2 command begins so.
inline constexpr std::string_view kJoining = "gridrt-joins\n";

// Called by gridrt::init just before it initialises MPI; does nothing where nobody watches.
inline void announce_joining() {
  const char* fd_text = std::getenv(kVariable);
  if (!fd_text) return;
  const int fd = std::atoi(fd_text);
  ::unsetenv(kVariable);   // (once: what this process starts is not a process of the job)
  send_all(fd, kJoining);  // (if the watch is gone, gridproc says why)
}

}  // namespace gridrt::pmi_watch
