// The emulated wide-area path to one cluster of another site (a test facility: common/wan.h,
// docs/grid.md "An emulated WAN"), as a decorator in front of what sends to that cluster: a
// frame handed to it is clocked through the site pair's line (WanLine, shared by the site's
// relays), travels for the pair's delay, and is then handed on, in order, to `deliver` (the
// relay's transmit, which numbers it and puts it on the relay link). The router does not
// know whether a path is emulated; a relay without --emulate-wan has none.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <utility>  // (before Asio: its awaitable.hpp uses std::exchange without it)

#include <boost/asio.hpp>

#include "common/wan.h"
#include "common/wire.h"

namespace gridrt {

class EmulatedPath {
 public:
  using Deliver = std::function<void(wire::Frame&)>;
  // `line` outlives it (the relay keeps its lines); `deliver` runs on `io`'s thread.
  EmulatedPath(boost::asio::io_context& io, WanLine& line, std::chrono::nanoseconds delay, Deliver deliver)
      : line_(line), delay_(delay), deliver_(std::move(deliver)), timer_(io) {}

  // Takes `f` (left empty) onto the line.
  void send(wire::Frame& f);
  // The relay stops: what is still on the line is dropped with it.
  void stop() { timer_.cancel(); }

 private:
  void wait_for_the_line();

  WanLine& line_;
  const std::chrono::nanoseconds delay_;
  Deliver deliver_;
  // Frames on their way, by the time they arrive; in order (arrival times never decrease
  // but where a credit overtakes, below).
  std::deque<std::pair<WanLine::Clock::time_point, wire::Frame>> on_the_line_;
  boost::asio::steady_timer timer_;
};

}  // namespace gridrt
