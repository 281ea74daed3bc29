// How many tasks a holder (a cluster's boss) gets per request, and when a boss asks for the
// next chunk (docs/queues.md; seed 001 §3.3: bosses fetch chunks from the level above so
// that the WAN carries few, large transfers). Pure arithmetic on measured rates and round
// trips, with time passed in, so that tests drive it directly.
//
// A chunk lasts its holder `horizon` beyond the round trip it takes to refill: a holder that
// consumes faster (a bigger or faster cluster, or one that finished early) gets more at
// once; near the end of the queue no holder gets more than its share of what is left, so
// the last tasks are spread rather than queued behind one cluster.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <unordered_map>

namespace gridrt::queue {

struct ChunkLimits {
  std::size_t first = 8;      // tasks for a holder whose rate is not known yet
  std::size_t min = 1;
  std::size_t max = 4096;     // bounds what a holder keeps (its memory)
  double horizon_s = 0.25;    // how long a chunk should last beyond a round trip
};

class ChunkSizer {
 public:
  explicit ChunkSizer(ChunkLimits l = {}) : limits_(l) {}

  // `n` results of `holder` arrived at time `now` (seconds): its consumption rate, smoothed.
  void completed(int holder, std::size_t n, double now) {
    Holder& h = holders_[holder];
    if (h.last >= 0 && now > h.last) {
      const double r = static_cast<double>(n) / (now - h.last);
      h.rate = h.rate > 0 ? kKeep * h.rate + (1 - kKeep) * r : r;
    }
    h.last = now;
  }
  // A request of `holder` was answered `seconds` after it left.
  void round_trip(int holder, double seconds) {
    Holder& h = holders_[holder];
    h.rtt = h.rtt > 0 ? kKeep * h.rtt + (1 - kKeep) * seconds : seconds;
  }
  double rate(int holder) const { return find(holder).rate; }
  double rtt(int holder) const { return find(holder).rtt; }

  // Tasks to hand `holder` now, with `waiting` tasks in the queue and `holders` holders
  // asking for work.
  std::size_t chunk(int holder, std::size_t waiting, std::size_t holders) const {
    const Holder& h = find(holder);
    std::size_t n = limits_.first;
    if (h.rate > 0) n = static_cast<std::size_t>(std::ceil(h.rate * (h.rtt + limits_.horizon_s)));
    n = std::clamp(n, limits_.min, limits_.max);
    const std::size_t share = (waiting + std::max<std::size_t>(holders, 1) - 1) / std::max<std::size_t>(holders, 1);
    return std::max<std::size_t>(std::min(n, share), waiting ? 1 : 0);
  }

  // At a boss: ask for the next chunk now, with `left` tasks not yet handed to a worker,
  // consuming `rate` tasks/s, a round trip of `rtt` s to the level above, and `workers`
  // workers (each about to ask for one): when what is left would not outlast the round trip.
  static bool should_prefetch(std::size_t left, double rate, double rtt, std::size_t workers) {
    return static_cast<double>(left) <= rate * rtt + static_cast<double>(workers);
  }

 private:
  static constexpr double kKeep = 0.7;  // weight of the past in the smoothed figures
  struct Holder {
    double rate = 0, rtt = 0, last = -1;
  };
  const Holder& find(int holder) const {
    static const Holder unknown;
    const auto it = holders_.find(holder);
    return it == holders_.end() ? unknown : it->second;
  }
  ChunkLimits limits_;
  std::unordered_map<int, Holder> holders_;
};

}  // namespace gridrt::queue
