// A window's memory that the processes of one node share: an anonymous shared-memory file
// (memfd) holding the target's SharedLock in its first page and, after it, the memory the
// window exposes (MPI_Win_allocate's and MPI_Alloc_mem's, which the layer allocates itself so
// that the node's origins can reach them). The target makes it; another process of its node maps it through
// /proc/PID/fd/FD, which Linux allows a process of the same user (the ptrace read check), so
// no name is left behind in /dev/shm if a process dies. Where that fails (another user, a
// container that forbids it), the origin goes through the target's engine instead.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "shared_lock.h"

namespace gridrt::rma {

class NodeSegment {
 public:
  NodeSegment() = default;
  // This process's segment exposing `bytes` (throws std::runtime_error saying why it failed).
  static NodeSegment make(std::uint64_t bytes);
  // Process `pid`'s segment, open there as descriptor `fd`, exposing `bytes`; an empty
  // segment (valid() false) when this process cannot map it.
  static NodeSegment open(pid_t pid, int fd, std::uint64_t bytes);
  NodeSegment(NodeSegment&& o) noexcept;
  NodeSegment& operator=(NodeSegment&& o) noexcept;
  ~NodeSegment();

  bool valid() const { return map_ != nullptr; }
  SharedLock* lock() const { return static_cast<SharedLock*>(map_); }
  char* memory() const { return static_cast<char*>(map_) + kHeader; }
  std::uint64_t bytes() const { return length_ - kHeader; }  // the memory's
  int fd() const { return fd_; }                             // this process's own segment's descriptor (-1 for another's, or closed)
  // Closes this process's descriptor, keeping the memory (once the node's processes mapped it:
  // a program that makes a thousand windows would otherwise hold a thousand descriptors).
  void close_descriptor();

 private:
  static constexpr std::size_t kHeader = 4096;  // the lock's page: the memory starts page-aligned
  void* map_ = nullptr;
  std::size_t length_ = 0;
  int fd_ = -1;
};

}  // namespace gridrt::rma
