// What the benchmarks that measure raw TCP beside gridrt share: blocking socket I/O on
// loopback and the median of a run's samples.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace bench {

[[noreturn]] inline void die(const char* what) {
  std::perror(what);
  std::exit(1);
}

inline void write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n) {
    const ssize_t k = ::write(fd, p, n);
    if (k <= 0) die("write");
    p += k;
    n -= static_cast<std::size_t>(k);
  }
}
// False when the peer closed before `n` bytes came.
inline bool read_all(int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  while (n) {
    const ssize_t k = ::read(fd, p, n);
    if (k <= 0) return false;
    p += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}
inline void read_exactly(int fd, void* data, std::size_t n) {
  if (!read_all(fd, data, n)) die("read");
}

// A listening socket on 127.0.0.1 and a port the kernel chose.
inline int listen_loopback(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), len) || ::listen(fd, 8) ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len))
    die("listen");
  port = ntohs(a.sin_port);
  return fd;
}

// A connection to 127.0.0.1:port, Nagle off (as gridrt's links are).
inline int connect_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a)) die("connect");
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace bench
