#include "relay/emulated_path.h"

#include <algorithm>

namespace gridrt {

void EmulatedPath::send(wire::Frame& f) {
  // Credits (flow control, 64 bytes) go ahead of the data queued on the line, as a router
  // that puts small control packets first (acknowledgement prioritisation) would: queued
  // behind a window of the other direction's data they would stall every stream across
  // the line by that data's clocking time, which no real WAN path's short queue does.
  // Nothing else overtakes: frames of one stream stay in order.
  const bool ahead = f.header.type == wire::Type::kCredit;
  const auto now = WanLine::Clock::now();
  const auto arrival = (ahead ? now : line_.clocked_out(wire::kHeaderSize + f.body.size(), now)) + delay_;
  auto at = on_the_line_.end();
  if (ahead)
    at = std::upper_bound(on_the_line_.begin(), on_the_line_.end(), arrival, [](const auto& t, const auto& e) { return t < e.first; });
  const bool first = at == on_the_line_.begin();
  on_the_line_.emplace(at, arrival, std::move(f));
  if (first) wait_for_the_line();
}

void EmulatedPath::wait_for_the_line() {
  timer_.expires_at(on_the_line_.front().first);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // stopping, or a credit went ahead: the wait for it is under way
    const auto now = WanLine::Clock::now();
    while (!on_the_line_.empty() && on_the_line_.front().first <= now) {
      deliver_(on_the_line_.front().second);
      on_the_line_.pop_front();
    }
    if (!on_the_line_.empty()) wait_for_the_line();
  });
}

}  // namespace gridrt
