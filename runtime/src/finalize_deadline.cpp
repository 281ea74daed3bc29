#include "finalize_deadline.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace gridrt::detail {
namespace {

// How long the process manager is given to answer finalize (it answers at once).
constexpr auto kPmiStepLimit = std::chrono::seconds(10);
// How long the barrier entered for a stuck call may take. Those who wait in it are there
// already (their calls wait on the process manager), and other stuck processes enter it
// within milliseconds of this one (their deadlines started with this one's, when the whole
// job passed gridrt's finalize barrier). When it does not end by then, MPICH's last
// barrier was behind the call (stuck in UCX's worker teardown, which follows it) and the
// others have finalized and left: nobody else comes.
constexpr auto kBarrierLimit = std::chrono::seconds(2);

// Sends `command` (one PMI-1 line) and reads lines until one starts with `reply`, for at
// most `limit`. False on a write error, a closed socket or the time running out.
bool pmi_exchange(int fd, const char* command, const char* reply, std::chrono::seconds limit) {
  const std::size_t length = std::strlen(command);
  for (std::size_t sent = 0; sent < length;) {
    // Not SIGPIPE if the process manager has gone: this process is leaving anyway.
    ssize_t n = ::send(fd, command + sent, length - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, command + sent, length - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  const auto until = std::chrono::steady_clock::now() + limit;
  std::string line;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char c;
    const ssize_t n = ::read(fd, &c, 1);  // byte by byte: nothing past the reply is taken
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (c != '\n') {
      line += c;
      continue;
    }
    if (line.rfind(reply, 0) == 0) return true;
    line.clear();
  }
}

}  // namespace

int pmi_fd_from_env() {
  const char* text = std::getenv("PMI_FD");
  if (!text || !*text) return -1;
  char* end = nullptr;
  const long fd = std::strtol(text, &end, 10);
  return *end || fd < 0 || fd > 1 << 20 ? -1 : static_cast<int>(fd);
}

FinalizeDeadline::FinalizeDeadline(std::chrono::seconds limit, int rank, int pmi_fd)
    : limit_(limit), rank_(rank), pmi_fd_(pmi_fd), caller_(::syscall(SYS_gettid)), thread_([this] { watch(); }) {}

FinalizeDeadline::~FinalizeDeadline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    returned_ = true;
  }
  returned_cv_.notify_one();
  thread_.join();
}

// The kernel's view of the calling thread (/proc/self/task/TID/syscall: the system call it
// is blocked in and its arguments), sampled a few times: a read of the PMI socket each time.
bool FinalizeDeadline::waiting_on_process_manager() const {
  if (pmi_fd_ < 0) return false;
  for (int sample = 0; sample < 5; ++sample) {
    std::ifstream in("/proc/self/task/" + std::to_string(caller_) + "/syscall");
    long number = -1;
    std::string fd;
    if (!(in >> number >> fd) || number != SYS_read || std::strtol(fd.c_str(), nullptr, 16) != pmi_fd_) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void FinalizeDeadline::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (returned_cv_.wait_for(lock, limit_, [this] { return returned_; })) return;
  bool waiting = waiting_on_process_manager();
  int waited = 1;  // limits
  for (; waited < 3 && waiting; ++waited, waiting = waiting_on_process_manager())
    if (returned_cv_.wait_for(lock, limit_, [this] { return returned_; })) return;
  lock.unlock();
  std::fprintf(stderr,
               "gridrt: rank %d: MPI_Finalize has not returned %lld s after the whole job reached finalize (MPICH's UCX tcp "
               "transport can wait there for ever on a peer that has stopped progressing); leaving without it, status 0 "
               "(GRIDRT_FINALIZE_TIMEOUT sets the limit)\n",
               rank_, static_cast<long long>(limit_.count() * waited));
  // The output first, while the calling thread runs: held inside stdio (UCX's progress
  // reads /proc files with it) it would keep a stream's lock for ever.
  std::fflush(stdout);
  std::fflush(stderr);
  // The stuck call has not entered the process manager's last barrier, which the others
  // wait in; entering it and finalizing lets them end, and the launcher count this process
  // as ended cleanly rather than as one that vanished. The calling thread is held first (a
  // signal whose handler never returns): were its call to come unstuck as the others
  // leave, it would speak on the same socket at the same time.
  // Still waiting on the process manager at three times the limit: the others never came;
  // nothing is left to do for them, and the socket is the call's.
  const bool finish_for_the_call = pmi_fd_ >= 0 && !waiting;
  if (finish_for_the_call) {
    struct sigaction hold {};
    hold.sa_handler = [](int) {
      for (;;) ::pause();
    };
    sigemptyset(&hold.sa_mask);
    const int signal = SIGRTMAX - 1;
    if (::sigaction(signal, &hold, nullptr) == 0 && ::syscall(SYS_tgkill, ::getpid(), caller_, signal) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!pmi_exchange(pmi_fd_, "cmd=barrier_in\n", "cmd=barrier_out", kBarrierLimit)) {
      // Not through stdio: the held thread may hold stderr's lock.
      char said[160];
      const int n =
          std::snprintf(said, sizeof said, "gridrt: rank %d: nobody else came to the barrier in %lld s: the others had finalized\n", rank_,
                        static_cast<long long>(kBarrierLimit.count()));
      if (n > 0) static_cast<void>(!::write(STDERR_FILENO, said, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof said - 1)));
    }
    pmi_exchange(pmi_fd_, "cmd=finalize\n", "cmd=finalize_ack", kPmiStepLimit);
  }
  ::_exit(0);
}

}  // namespace gridrt::detail
