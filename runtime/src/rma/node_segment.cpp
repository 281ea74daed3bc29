#include "node_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

namespace gridrt::rma {

NodeSegment NodeSegment::make(std::uint64_t bytes) {
  NodeSegment s;
  s.length_ = kHeader + static_cast<std::size_t>(bytes);
  s.fd_ = memfd_create("gridrt-window", MFD_CLOEXEC);
  if (s.fd_ < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
  if (ftruncate(s.fd_, static_cast<off_t>(s.length_)) != 0)
    throw std::runtime_error("cannot size the window's shared memory to " + std::to_string(s.length_) + " bytes: " + std::strerror(errno));
  void* map = mmap(nullptr, s.length_, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd_, 0);
  if (map == MAP_FAILED) throw std::runtime_error(std::string("cannot map the window's shared memory: ") + std::strerror(errno));
  s.map_ = map;
  new (map) SharedLock();  // (a fresh memfd reads as zeros; the lock starts with no holder)
  return s;
}

NodeSegment NodeSegment::open(pid_t pid, int fd, std::uint64_t bytes) {
  NodeSegment s;
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int mine = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (mine < 0) return s;
  struct stat st {};
  const std::size_t length = kHeader + static_cast<std::size_t>(bytes);
  // (the descriptor must still be the window's: sized as announced)
  if (fstat(mine, &st) == 0 && static_cast<std::size_t>(st.st_size) == length) {
    void* map = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, mine, 0);
    if (map != MAP_FAILED) {
      s.map_ = map;
      s.length_ = length;
    }
  }
  ::close(mine);
  return s;
}

NodeSegment::NodeSegment(NodeSegment&& o) noexcept
    : map_(std::exchange(o.map_, nullptr)), length_(std::exchange(o.length_, 0)), fd_(std::exchange(o.fd_, -1)) {}

NodeSegment& NodeSegment::operator=(NodeSegment&& o) noexcept {
  if (this != &o) {
    this->~NodeSegment();
    map_ = std::exchange(o.map_, nullptr);
    length_ = std::exchange(o.length_, 0);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void NodeSegment::close_descriptor() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

NodeSegment::~NodeSegment() {
  if (map_) munmap(map_, length_);
  if (fd_ >= 0) ::close(fd_);
  map_ = nullptr;
  fd_ = -1;
}

}  // namespace gridrt::rma
