#include "pmi_proxy.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "common/pmi_watch.h"
#include "common/process.h"

namespace gridrt {

std::unique_ptr<PmiProxy> PmiProxy::from_environment() {
  const char* text = std::getenv("PMI_FD");
  if (!text || !*text) return nullptr;
  char* end = nullptr;
  const long manager = std::strtol(text, &end, 10);
  if (*end || manager < 0 || ::fcntl(static_cast<int>(manager), F_GETFD) < 0) return nullptr;
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return nullptr;
  // Only the program's end crosses exec; the process manager's socket stays with us.
  ::fcntl(pair[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(static_cast<int>(manager), F_SETFD, FD_CLOEXEC);
  return std::unique_ptr<PmiProxy>(new PmiProxy(static_cast<int>(manager), pair[0], pair[1]));
}

PmiProxy::~PmiProxy() {
  close_program_end();
  close_ours();
  // (The process manager's socket stays open until this process ends, as it did when the
  // program held it: the process manager reads this process's end from its exit.)
}

void PmiProxy::close_program_end() {
  if (program_end_ >= 0) ::close(program_end_);
  program_end_ = -1;
}

void PmiProxy::close_ours() {
  if (ours_ >= 0) ::close(ours_);
  ours_ = -1;
}

void PmiProxy::fill(pollfd* two) const {
  two[0] = {seen_ == Seen::kPastGridrt || ours_ < 0 ? -1 : manager_, POLLIN, 0};
  // Past gridrt, the program's side is no longer read: it waits for an answer that never
  // comes, until it is stopped.
  two[1] = {seen_ == Seen::kPastGridrt ? -1 : ours_, POLLIN, 0};
}

PmiProxy::Seen PmiProxy::move(const pollfd* two) {
  char buf[16384];
  if (two[1].fd >= 0 && (two[1].revents & (POLLIN | POLLHUP | POLLERR))) {
    const ssize_t n = ::read(ours_, buf, sizeof buf);
    if (n > 0) from_program(buf, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR) close_ours();  // every process holding the program's end is gone
  }
  if (two[0].fd >= 0 && ours_ >= 0 && (two[0].revents & (POLLIN | POLLHUP | POLLERR))) {
    const ssize_t n = ::read(manager_, buf, sizeof buf);
    if (n > 0) {
      send_all(ours_, {buf, static_cast<std::size_t>(n)});
    } else if (n == 0 || errno != EINTR) {
      close_ours();  // the process manager hung up: so does the program's side
    }
  }
  return seen_;
}

void PmiProxy::from_program(const char* data, std::size_t n) {
  if (seen_ == Seen::kThroughGridrt) {
    send_all(manager_, {data, n});
    return;
  }
  first_.append(data, n);
  const std::string_view joining = pmi_watch::kJoining;
  const std::size_t compared = std::min(first_.size(), joining.size());
  if (first_.compare(0, compared, joining, 0, compared) != 0) {
    seen_ = Seen::kPastGridrt;  // nothing of it goes on
    first_.clear();
    return;
  }
  if (first_.size() < joining.size()) return;  // (the announcement in pieces: wait for the rest)
  seen_ = Seen::kThroughGridrt;
  if (first_.size() > joining.size()) send_all(manager_, std::string_view(first_).substr(joining.size()));
  first_.clear();
}

}  // namespace gridrt
