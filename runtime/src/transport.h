// The process side of the cross-site transport: one TCP connection to this cluster's relay,
// served by one I/O thread running Asio (the application thread never touches the socket and
// blocks on a condition variable, never spinning, while it waits for the relay).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/link.h"
#include "common/messages.h"
#include "matching.h"

namespace gridrt::detail {

// Completion of one remote receive, filled by the I/O thread.
struct RemoteRecv {
  Envelope pattern;
  void* buf = nullptr;
  std::size_t capacity = 0;
  bool done = false;
  std::string error;  // set instead of done data when it failed
  Envelope got;
  std::size_t bytes = 0;
};

class RelayTransport {
 public:
  // Connects to `relay`, says hello for (job, secret, local_rank), returns once connected.
  RelayTransport(const std::string& relay, std::uint64_t job, const std::string& secret, std::uint32_t local_rank,
                 const std::string& hostname);
  ~RelayTransport();

  // Blocks until the broker's topology arrives; throws if the connection fails or the
  // timeout passes (a process elsewhere that never joins must not hang this one forever).
  Topology wait_topology(std::chrono::seconds timeout);

  // Eager send: the payload is copied; the call returns at once. Payloads larger than a frame
  // go as several frames (flag kMore on all but the last), reassembled by the receiver.
  void send(std::int32_t src, std::int32_t dst, std::uint32_t context, std::int32_t tag, const void* buf, std::size_t bytes);
  void post_recv(const std::shared_ptr<RemoteRecv>& r);
  // Blocks (condition variable) until r completes; throws on failure.
  void wait(const std::shared_ptr<RemoteRecv>& r);
  bool test(const std::shared_ptr<RemoteRecv>& r);

  static constexpr std::uint32_t kMore = 1;

 private:
  void on_frame(wire::Frame& f);
  void on_closed(const std::string& why);
  void complete(const std::shared_ptr<RemoteRecv>& r, Arrival& a);  // with mu_ held

  asio::io_context io_;
  std::shared_ptr<TcpLink> link_;
  std::thread thread_;
  std::uint64_t job_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Topology> topology_;
  std::string failure_;
  MatchQueue<RemoteRecv> queue_;
  std::map<std::pair<std::int32_t, std::uint32_t>, Arrival> partial_;  // (source, context) -> fragments so far
  std::uint64_t seq_ = 0;
};

}  // namespace gridrt::detail
