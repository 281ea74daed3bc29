// How many tasks a boss asks the level above for, and when (docs/queues.md; Coti, Herault, Cappello 2009 §3.3:
// bosses fetch chunks from the level above so that the WAN carries few, large transfers),
// and how a parent shares what waits among the children that ask. Pure arithmetic on
// measured rates and round trips, with time passed in, so that tests drive it directly.
//
// A chunk lasts its boss `horizon` beyond the round trip it takes to refill: a boss whose
// cluster consumes faster (a bigger or faster cluster, or one that finished early) asks for
// more at once; a parent hands no child more than its share of what waits, so the last
// tasks are spread rather than queued behind one cluster.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace gridrt::queue {

struct ChunkLimits {
  std::size_t first = 8;  // tasks to ask for while the rate is not known yet
  std::size_t min = 1;
  std::size_t max = 4096;   // bounds what a boss keeps (its memory)
  double horizon_s = 0.25;  // how long a chunk should last beyond a round trip
};

// One boss's consumption rate and round trip to the level above, smoothed.
class ChunkSizer {
 public:
  explicit ChunkSizer(ChunkLimits l = {}) : limits_(l) {}

  // `n` tasks went to this boss's workers (or itself) at time `now` (seconds).
  void completed(std::size_t n, double now) {
    if (last_ >= 0 && now > last_) {
      const double r = static_cast<double>(n) / (now - last_);
      rate_ = rate_ > 0 ? kKeep * rate_ + (1 - kKeep) * r : r;
    }
    last_ = now;
  }
  // A request was answered `seconds` after it left.
  void round_trip(double seconds) { rtt_ = rtt_ > 0 ? kKeep * rtt_ + (1 - kKeep) * seconds : seconds; }
  double rate() const { return rate_; }
  double rtt() const { return rtt_; }

  // Tasks to ask for: what lasts a round trip and the horizon at the measured rate, bounded.
  std::size_t chunk() const {
    const std::size_t n = rate_ > 0 ? static_cast<std::size_t>(std::ceil(rate_ * (rtt_ + limits_.horizon_s))) : limits_.first;
    return std::clamp(n, limits_.min, limits_.max);
  }

  // Ask for the next chunk now, with `left` tasks not yet handed to a worker, consuming
  // `rate` tasks/s, a round trip of `rtt` s, and `workers` workers (each about to ask for
  // one): when what is left would not outlast the round trip.
  static bool should_prefetch(std::size_t left, double rate, double rtt, std::size_t workers) {
    return static_cast<double>(left) <= rate * rtt + static_cast<double>(workers);
  }

 private:
  static constexpr double kKeep = 0.7;  // weight of the past in the smoothed figures
  ChunkLimits limits_;
  double rate_ = 0, rtt_ = 0, last_ = -1;
};

// What a parent hands a child asking for `want` tasks while `waiting` wait and `takers`
// children may ask: at most its share, so that the last tasks are spread over the children
// (Coti, Herault, Cappello 2009 §3.3, load balancing across queues); at least one while any waits.
inline std::size_t fair_share(std::size_t want, std::size_t waiting, std::size_t takers) {
  const std::size_t share = (waiting + std::max<std::size_t>(takers, 1) - 1) / std::max<std::size_t>(takers, 1);
  return std::min(want, share);
}

}  // namespace gridrt::queue
