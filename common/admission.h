// Connections that have not yet authenticated, on one listening port: at most `per_address`
// from one remote address and `total` in all. At a cap the oldest of them (of that address,
// or of all) is dropped to make room. A stranger who opens connections and says nothing —
// or stalls a TLS handshake — thus holds a bounded amount of memory, and cannot lock out a
// real peer, which authenticates within milliseconds of connecting and so is never the
// oldest for long. (Refusing the newest instead would let an attacker who fills the cap
// first keep everyone else out until its deadlines run out.)
//
// The memory such a crowd used is given back to the system once the port has been quiet a
// moment (see State::forget), in the daemons; not in an application's process, whose heap
// is the application's.
//
// One Admission per listening port; used on the thread that serves that port (the one
// running the executor it is given).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>

#include "common/log.h"

namespace gridrt {

class Admission {
  struct Entry;
  struct State;

 public:
  struct Limits {
    std::size_t per_address;
    std::size_t total;
  };
  // `ex`: the executor of the thread that serves the port.
  Admission(boost::asio::any_io_executor ex, std::string port, Limits limits, bool give_memory_back = true);

  // Held by a connection until it has authenticated (release()) or is gone (destruction).
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&&) noexcept = default;
    Ticket& operator=(Ticket&& o) noexcept {
      release();
      state_ = std::move(o.state_);
      entry_ = std::move(o.entry_);
      return *this;
    }
    ~Ticket() { release(); }
    void release();  // authenticated: no longer counted, never dropped by the admission

   private:
    friend class Admission;
    std::shared_ptr<State> state_;
    std::shared_ptr<Entry> entry_;
  };

  // Counts a new connection from `from`; `drop` closes it should the caps need its place
  // (the connection's pending handshake or read then fails as on any close).
  Ticket admit(const boost::asio::ip::address& from, std::function<void()> drop);
  // Drops the oldest unauthenticated connection, saying `why`: to free its file descriptor
  // when the process has none left. False when there is none.
  bool drop_oldest(const char* why);
  std::size_t pending() const;
  std::size_t dropped() const;
  std::size_t memory_given_back() const;  // times the allocator's free memory went back to the system

 private:
  std::shared_ptr<State> state_;
};

// What every daemon allows a peer before it has authenticated (docs/security.md).
namespace limits {
// A TLS handshake, or on a relay's local port the first frame with the job's secret.
inline constexpr std::chrono::seconds kAuthenticate{10};
// The largest frame a peer may send before it is authenticated (a hello is far smaller).
inline constexpr std::uint32_t kUntrustedBody = 64 * 1024;
// Unauthenticated connections on the broker's port and a relay's link port ...
inline constexpr Admission::Limits kDaemonPort{128, 512};
// ... and on a relay's local port, where a part's processes all connect at start-up, and a
// process's direct port, where the ranks of other clusters may all dial it at once.
inline constexpr Admission::Limits kLocalPort{256, 1024};
// Room kept beside those for authenticated connections and files, in the open files a
// daemon asks for (common/acceptor.h).
inline constexpr std::size_t kOtherConnections = 256;
}  // namespace limits

}  // namespace gridrt
