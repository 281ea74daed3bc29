// Connections that have not yet authenticated, on one listening port: at most `per_address`
// from one remote address and `total` in all. At a cap the oldest of them (of that address,
// or of all) is dropped to make room. A stranger who opens connections and says nothing —
// or stalls a TLS handshake — thus holds a bounded amount of memory, and cannot lock out a
// real peer, which authenticates within milliseconds of connecting and so is never the
// oldest for long. (Refusing the newest instead would let an attacker who fills the cap
// first keep everyone else out until its deadlines run out.)
//
// One Admission per listening port; used on the thread that serves that port.
#pragma once

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
  Admission(std::string port, Limits limits);

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
  std::size_t pending() const;
  std::size_t dropped() const;

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
// ... and on a relay's local port, where a part's processes all connect at start-up.
inline constexpr Admission::Limits kLocalPort{256, 1024};
}  // namespace limits

}  // namespace gridrt
