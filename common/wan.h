// WAN emulation, a test facility (docs/benchmarks.md): so that hierarchy can be
// measured on one machine, each relay can make what it sends on relay links cross an
// emulated wide-area line — a serial line of a given rate followed by a one-way delay.
// Every relay shapes its own outgoing link traffic, so each direction between two clusters
// sees the delay and the rate once, as on a symmetric WAN path.
//
// Why inside the relay and not a proxy process between relays: a relay link may be dialled
// by either side (reverse connections), and the relays learn each other's link address
// from the broker; a proxy would need its own addresses threaded through registration.
// Shaping at the sender gives the same timing with no extra hop or process.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace gridrt {

struct WanSpec {
  std::chrono::nanoseconds delay{0};  // one way
  double bytes_per_second = 0;        // 0: no rate limit
  bool active() const { return delay.count() > 0 || bytes_per_second > 0; }
};

// "DELAY[,RATE]": DELAY a number with us, ms or s ("10ms", "0.5ms"); RATE a number with
// kbit, mbit or gbit ("100mbit"). Throws std::invalid_argument naming what is wrong.
WanSpec parse_wan_spec(const std::string& text);
std::string describe(const WanSpec& spec);  // "10 ms one way, 100 Mbit/s"

// One direction of an emulated line: when does a message handed over at `now` arrive?
// Messages leave in order, each after the one before has been clocked out at the rate,
// then travel for the delay.
class WanLine {
 public:
  using Clock = std::chrono::steady_clock;
  explicit WanLine(WanSpec spec) : spec_(spec) {}
  Clock::time_point arrival(std::size_t bytes, Clock::time_point now);

 private:
  WanSpec spec_;
  Clock::time_point line_free_{};  // when the line has finished sending what it was given
};

}  // namespace gridrt
