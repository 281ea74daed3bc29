// Fetching a job's file from an http:// or https:// URL into a file of the cluster (the
// relay's part of "files that travel with the job", docs/jobprofile.md): HTTP/1.1 GET with
// Boost.Beast, redirects followed (at most kMaxRedirects), https checked against the system's
// certificate authorities and the URL's host name, every step bounded in time, the body
// bounded in size.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include <boost/asio.hpp>

namespace gridrt {

inline constexpr int kMaxRedirects = 5;

struct FetchLimits {
  std::uint64_t max_bytes = 4ull << 30;
  std::chrono::seconds step_timeout{60};  // each of: resolve, connect, handshake, a read's progress
};

// Writes the body of `url` to `path` (created, 0600). Throws std::runtime_error saying what
// went wrong with which URL (no such host, refused, HTTP 404, too large, timed out...); the
// caller removes `path`. Returns the bytes written.
boost::asio::awaitable<std::uint64_t> fetch_url(std::string url, std::string path, FetchLimits limits);

}  // namespace gridrt
