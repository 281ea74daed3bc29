// The deadline on MPI_Finalize (runtime/src/finalize_deadline.h), in a child process whose
// "MPI_Finalize" is stuck on purpose, against this test playing the process manager on
// the other end of a socket pair (PMI-1 lines, as MPICH's hydra speaks them).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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

// A call stuck anywhere but on the process manager: past the limit the process enters the
// barrier the others wait in, finalizes with the process manager, and leaves with status 0.
TEST(FinalizeDeadline, AStuckCallEntersTheBarrierFinalizesAndLeaves) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const auto started = std::chrono::steady_clock::now();
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    const FinalizeDeadline deadline(std::chrono::seconds(1), 3, fds[1]);
    for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // stuck, not reading PMI
  }
  ::close(fds[1]);
  EXPECT_EQ(read_line(fds[0], 10), "cmd=barrier_in");
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(900));
  write_line(fds[0], "cmd=barrier_out");
  EXPECT_EQ(read_line(fds[0], 10), "cmd=finalize");
  write_line(fds[0], "cmd=finalize_ack");
  EXPECT_EQ(exit_status(child), 0);
  ::close(fds[0]);
}

// A call waiting on the process manager (blocked reading its socket: one of the others,
// waiting for the stuck one) is left alone past the limit and returns when the barrier
// ends; the deadline then ends with it and the process goes on.
TEST(FinalizeDeadline, ACallWaitingOnTheProcessManagerIsLeftToFinish) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    {
      const FinalizeDeadline deadline(std::chrono::seconds(1), 2, fds[1]);
      if (::write(fds[1], "cmd=barrier_in\n", 15) != 15) ::_exit(3);
      char reply[64];
      const ssize_t n = ::read(fds[1], reply, sizeof reply);  // what MPICH's barrier does
      if (n <= 0 || std::string(reply, n) != "cmd=barrier_out\n") ::_exit(4);
    }
    ::_exit(7);  // returned from the call, past the deadline's end
  }
  ::close(fds[1]);
  EXPECT_EQ(read_line(fds[0], 10), "cmd=barrier_in");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the limit: nothing more comes
  write_line(fds[0], "cmd=barrier_out");
  EXPECT_EQ(exit_status(child), 7);
  EXPECT_EQ(read_line(fds[0], 1), "");  // the deadline wrote nothing of its own
  ::close(fds[0]);
}

// A wait on the process manager that never ends (the others never come) is left at three
// times the limit, the deadline writing nothing on the socket, which is the call's.
TEST(FinalizeDeadline, AWaitOnTheProcessManagerThatNeverEndsIsLeftAtThreeTimesTheLimit) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const auto started = std::chrono::steady_clock::now();
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    const FinalizeDeadline deadline(std::chrono::seconds(1), 1, fds[1]);
    if (::write(fds[1], "cmd=barrier_in\n", 15) != 15) ::_exit(3);
    char reply[64];
    (void)::read(fds[1], reply, sizeof reply);  // no answer ever comes
    ::_exit(4);
  }
  ::close(fds[1]);
  EXPECT_EQ(read_line(fds[0], 10), "cmd=barrier_in");
  EXPECT_EQ(exit_status(child), 0);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_GE(took, std::chrono::milliseconds(2900));
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_EQ(read_line(fds[0], 1), "");
  ::close(fds[0]);
}

// Without a process manager's socket (another launcher) the stuck process just leaves.
TEST(FinalizeDeadline, WithoutAProcessManagerTheStuckProcessLeaves) {
  const pid_t child = ::fork();
  if (child == 0) {
    const FinalizeDeadline deadline(std::chrono::seconds(1), 0, -1);
    for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(exit_status(child), 0);
}

}  // namespace
