#include "common/watchdog.h"

#include "common/link.h"
#include "common/log.h"

namespace gridrt {

Watchdog::Watchdog(boost::asio::io_context& io, std::chrono::milliseconds period, std::chrono::milliseconds limit, Report on_stall,
                   Report on_recover)
    : timer_(io),
      period_(period),
      limit_(limit),
      on_stall_(std::move(on_stall)),
      on_recover_(std::move(on_recover)),
      last_tick_(Clock::now().time_since_epoch().count()) {
  tick();
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  timer_.cancel();
}

void Watchdog::tick() {
  last_tick_ = Clock::now().time_since_epoch().count();
  timer_.expires_after(period_);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) tick();
  });
}

void Watchdog::watch() {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  bool stalled = false;
  Clock::rep stalled_since = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, period_, [this] { return stopping_; })) {
    const Clock::rep last = last_tick_;
    const Clock::time_point then{Clock::duration(last)};
    const auto late = Clock::now() - then - period_;
    if (!stalled && late > limit_) {
      stalled = true;
      stalled_since = last;
      on_stall_(duration_cast<milliseconds>(Clock::now() - then));
    } else if (stalled && last != stalled_since) {
      stalled = false;
      on_recover_(duration_cast<milliseconds>(Clock::duration(last - stalled_since)));
    }
  }
}

std::unique_ptr<Watchdog> watch_daemon_loop(boost::asio::io_context& io) {
  const auto beat = Liveness::from_dead_peer_setting().beat;
  return std::make_unique<Watchdog>(
      io, beat / 5, beat,
      [](std::chrono::milliseconds held) {
        log::error("the event loop has been held for ", held.count(), " ms: no peer is served meanwhile");
      },
      [](std::chrono::milliseconds held) { log::warn("the event loop runs again after ", held.count(), " ms held"); });
}

}  // namespace gridrt
