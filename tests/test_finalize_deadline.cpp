// The deadline on MPI_Finalize (runtime/src/finalize_deadline.h), in a child process whose
// "MPI_Finalize" is stuck on purpose, against this test playing the process manager on
// the other end of a socket pair (PMI-1 lines, as MPICH's hydra speaks them).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "finalize_deadline.h"

namespace {

using gridrt::detail::FinalizeDeadline;

// One line from fd (without its newline), or "" after `seconds` or at end of file.
std::string read_line(int fd, int seconds) {
  std::string line;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  for (char c; std::chrono::steady_clock::now() < until;) {
    timeval tv{0, 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const ssize_t n = ::read(fd, &c, 1);
    if (n == 0) return "";
    if (n < 0) continue;
    if (c == '\n') return line;
    line += c;
  }
  return "";
}

void write_line(int fd, const std::string& line) {
  const std::string text = line + "\n";
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
}

int exit_status(pid_t child) {
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

constexpr int kReturned = 7;  // a child's status when its call returned and the deadline ended

// A child process whose "MPI_Finalize" is `call`, watched by a deadline of 1 s; `pm` is
// this test's end of the child's PMI socket (-1 without one). The child leaves with
// kReturned if the call returns.
struct Rank {
  pid_t pid = -1;
  int pm = -1;
};
Rank start_rank(bool with_process_manager, const std::function<void(int pmi_fd)>& call) {
  int fds[2] = {-1, -1};
  if (with_process_manager && ::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (fds[0] >= 0) ::close(fds[0]);
    {
      const FinalizeDeadline deadline(std::chrono::seconds(1), 3, fds[1]);
      call(fds[1]);
    }
    ::_exit(kReturned);
  }
  if (fds[1] >= 0) ::close(fds[1]);
  return {pid, fds[0]};
}

// Stuck anywhere but on the process manager.
void stuck(int) {
  for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// What MPICH's barrier does: barrier_in, then a blocking read of the answer (which, if it
// comes, must be barrier_out).
void in_the_barrier(int pmi_fd) {
  if (::write(pmi_fd, "cmd=barrier_in\n", 15) != 15) ::_exit(3);
  char reply[64];
  const ssize_t n = ::read(pmi_fd, reply, sizeof reply);
  if (n <= 0 || std::string(reply, n) != "cmd=barrier_out\n") ::_exit(4);
}

// A call stuck anywhere but on the process manager: past the limit the process enters the
// barrier the others wait in, finalizes with the process manager, and leaves with status 0.
TEST(FinalizeDeadline, AStuckCallEntersTheBarrierFinalizesAndLeaves) {
  const auto started = std::chrono::steady_clock::now();
  const Rank r = start_rank(true, stuck);
  ASSERT_GT(r.pid, 0);
  EXPECT_EQ(read_line(r.pm, 10), "cmd=barrier_in");
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(900));
  write_line(r.pm, "cmd=barrier_out");
  EXPECT_EQ(read_line(r.pm, 10), "cmd=finalize");
  write_line(r.pm, "cmd=finalize_ack");
  EXPECT_EQ(exit_status(r.pid), 0);
  ::close(r.pm);
}

// A call stuck after MPICH's last barrier (in UCX's worker teardown), the others finalized
// and gone: the barrier entered for it never ends, and the process finalizes and leaves
// two seconds later rather than waiting on.
TEST(FinalizeDeadline, AStuckCallWhoseBarrierNobodyElseEntersFinalizesSoonAfter) {
  const auto started = std::chrono::steady_clock::now();
  const Rank r = start_rank(true, stuck);
  ASSERT_GT(r.pid, 0);
  EXPECT_EQ(read_line(r.pm, 10), "cmd=barrier_in");
  EXPECT_EQ(read_line(r.pm, 10), "cmd=finalize");
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_GE(took, std::chrono::milliseconds(2900));
  EXPECT_LT(took, std::chrono::milliseconds(4500));
  write_line(r.pm, "cmd=finalize_ack");
  EXPECT_EQ(exit_status(r.pid), 0);
  ::close(r.pm);
}

// A call waiting on the process manager (blocked reading its socket: one of the others,
// waiting for the stuck one) is left alone past the limit and returns when the barrier
// ends; the deadline then ends with it and the process goes on.
TEST(FinalizeDeadline, ACallWaitingOnTheProcessManagerIsLeftToFinish) {
  const Rank r = start_rank(true, in_the_barrier);
  ASSERT_GT(r.pid, 0);
  EXPECT_EQ(read_line(r.pm, 10), "cmd=barrier_in");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the limit: nothing more comes
  write_line(r.pm, "cmd=barrier_out");
  EXPECT_EQ(exit_status(r.pid), kReturned);
  EXPECT_EQ(read_line(r.pm, 1), "");  // the deadline wrote nothing of its own
  ::close(r.pm);
}

// A wait on the process manager that never ends (the others never come) is left at three
// times the limit, the deadline writing nothing on the socket, which is the call's.
TEST(FinalizeDeadline, AWaitOnTheProcessManagerThatNeverEndsIsLeftAtThreeTimesTheLimit) {
  const auto started = std::chrono::steady_clock::now();
  const Rank r = start_rank(true, in_the_barrier);
  ASSERT_GT(r.pid, 0);
  EXPECT_EQ(read_line(r.pm, 10), "cmd=barrier_in");
  EXPECT_EQ(exit_status(r.pid), 0);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_GE(took, std::chrono::milliseconds(2900));
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_EQ(read_line(r.pm, 1), "");
  ::close(r.pm);
}

// Without a process manager's socket (another launcher) the stuck process just leaves.
TEST(FinalizeDeadline, WithoutAProcessManagerTheStuckProcessLeaves) {
  const Rank r = start_rank(false, stuck);
  ASSERT_GT(r.pid, 0);
  EXPECT_EQ(exit_status(r.pid), 0);
}

}  // namespace
