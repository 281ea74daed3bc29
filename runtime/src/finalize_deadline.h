// MPI_Finalize bounded in time, once the whole job has reached finalize.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace gridrt::detail {

// Over UCX's tcp transport (Debian's MPICH 4.0 with UCX 1.13) MPI_Finalize can wait for
// ever. Each process closes its endpoints, and closing one that has sent since its last
// acknowledgement asks the peer for one: a small message that the peer answers only while
// it progresses UCX. A peer that has closed its own endpoints already waits in the process
// manager's barrier, reading nothing but that, or spins in the same close for answers of
// its own that UCX no longer progresses, so the requests stay in the sockets and each
// waits for the other (seen in 1 of 3 or 4 runs of a job over four nodes behind delayed
// lines, most often with every process spinning; UCX's own tracker knows it as the tcp
// transport hanging during cleanup).
//
// By then every rank of the job has passed finalize's barrier: the job's work is done. So a
// deadline watches the call. Past it, a process whose call is waiting on the process
// manager (reading its PMI socket) waits on: it is one of the others, and goes on once the
// stuck one has done its part, or leaves at three times the limit (touching nothing of the
// process manager's: the socket is the call's). A process whose call is
// anywhere else is the stuck one: it says so and, where the process manager speaks PMI-1
// over PMI_FD (MPICH's hydra), holds the calling thread (a real-time signal, SIGRTMAX - 1,
// whose handler never returns) and does for itself what the call had left to do with the
// process manager (enter the barrier the others wait in, then finalize), so that they go
// on and the launcher sees a clean end; then it leaves with status 0, its output flushed.
// A call can also be stuck after MPICH's last barrier: in UCX's worker teardown
// (ucp_worker_destroy going round the tcp interfaces' capabilities, seen in 5 of 24 jobs
// on four delayed nodes), the others finalized and gone. Then the barrier entered for it
// never ends: it is given two seconds, and the process finalizes alone.
class FinalizeDeadline {
 public:
  // pmi_fd: the process manager's PMI-1 socket (from PMI_FD at init), or -1.
  FinalizeDeadline(std::chrono::seconds limit, int rank, int pmi_fd);
  ~FinalizeDeadline();  // the call returned: the watch ends
  FinalizeDeadline(const FinalizeDeadline&) = delete;
  FinalizeDeadline& operator=(const FinalizeDeadline&) = delete;

 private:
  void watch();
  bool waiting_on_process_manager() const;  // the calling thread blocked reading PMI_FD

  const std::chrono::seconds limit_;
  const int rank_, pmi_fd_;
  const long caller_;  // the thread in MPI_Finalize
  std::mutex mutex_;
  std::condition_variable returned_cv_;
  bool returned_ = false;
  std::thread thread_;
};

// The PMI file descriptor the process manager gave this process, or -1.
int pmi_fd_from_env();

}  // namespace gridrt::detail
