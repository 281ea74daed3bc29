// A watchdog for a daemon's event loop. Every daemon serves all its peers from one loop: a
// handler that holds it (a bug, an input that costs more than it should) stops the whole
// service while each connection still looks open. Its peers notice through heartbeats
// (Liveness, link.h); the watchdog lets the daemon itself say so, from a thread of its own,
// with how long the loop has been held — and again once it runs.
#pragma once

#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace gridrt {

class Watchdog {
 public:
  using Report = std::function<void(std::chrono::milliseconds held)>;
  // The loop of `io` ticks every `period`; a tick late by more than `limit` is a stall:
  // `on_stall` runs (on the watchdog's thread) once per stall while it lasts, `on_recover`
  // (likewise) when the loop ticks again, with the whole time it was held.
  Watchdog(boost::asio::io_context& io, std::chrono::milliseconds period, std::chrono::milliseconds limit, Report on_stall,
           Report on_recover);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  void tick();
  void watch();

  boost::asio::steady_timer timer_;
  const std::chrono::milliseconds period_, limit_;
  Report on_stall_, on_recover_;
  std::atomic<Clock::rep> last_tick_;  // Clock::time_point's count, written by the loop
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

// The daemons' watchdog: a tick every beat/5 of the dead-peer setting (Liveness), a stall
// reported (an error in the log) once the loop is held for a beat — long before its peers,
// which wait 5 beats, give it up — and its end reported too.
std::unique_ptr<Watchdog> watch_daemon_loop(boost::asio::io_context& io);

}  // namespace gridrt
