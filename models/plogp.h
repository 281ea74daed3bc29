// The pLogP parameters of a pair of processes (Kielmann, Bal, Verstoep, "Fast Measurement of
// LogP Parameters for Message Passing Platforms", 2000): L, the end-to-end latency; g(m), the
// gap, the least time between consecutive sends of m bytes (its inverse a message rate);
// o_s(m) and o_r(m), the time a send of m bytes occupies its sender and a receive its
// receiver. The size-dependent ones are measured at a few sizes and interpolated linearly
// between them, extrapolated from the last two beyond (as the reference implementation
// does). Pure: models/*_models.h compute costs from it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gridrt::models {

// A quantity measured at increasing sizes (a time: never negative); linear between them,
// and beyond the last two where it grows there. Where it falls between the last two (a
// model written by hand, or one whose smaller size was held up while measured), the line
// through them would reach below zero at some larger size, and a message's time with it:
// beyond the last size it is held at the last value instead.
struct BySize {
  std::vector<std::pair<double, double>> points;  // (bytes, seconds), sizes increasing

  double at(double m) const {
    if (points.empty()) return 0;
    if (points.size() == 1) return std::max(0.0, points.front().second);
    auto hi = std::upper_bound(points.begin(), points.end(), m, [](double x, const auto& p) { return x < p.first; });
    if (hi == points.begin()) hi = points.begin() + 1;
    const bool beyond = hi == points.end();
    if (beyond) hi = points.end() - 1;
    const auto& [x1, y1] = *(hi - 1);
    const auto& [x2, y2] = *hi;
    if (beyond && y2 < y1) return std::max(0.0, y2);
    return std::max(0.0, x2 == x1 ? y1 : y1 + (y2 - y1) * (m - x1) / (x2 - x1));
  }
};

// A gap measured at increasing sizes, each size's taken no larger than any larger size's: a
// larger message never leaves sooner than a smaller one, so where a smaller size reads
// above a larger, its trains were held up (noise only adds time) and it takes the larger's.
inline BySize never_falling(BySize g) {
  for (std::size_t k = g.points.size(); k-- > 1;) g.points[k - 1].second = std::min(g.points[k - 1].second, g.points[k].second);
  return g;
}

struct PLogP {
  double L = 0;      // s
  BySize g;          // the gap
  BySize os, orecv;  // sender and receiver overheads
  // gridrt's own addition: how much later a message is taken by a receiver that has been
  // waiting long enough to sleep between its tests (the wait policy's back-off,
  // progress.h) than by one that is polling. Measured inside clusters, where it is a large
  // part of a message's time; across the WAN every receiver has waited, and L includes it.
  double wake = 0;  // s

  double gap(double m) const { return g.at(m); }
  // One message of m bytes from start to delivery: the sender's gap, then the latency.
  double one_message(double m) const { return g.at(m) + L; }
  // Hockney's view of the same pair (alpha + beta m), from its gap at 0 and at m.
  double alpha() const { return L + g.at(0); }
};

// The gap of each direction of a pair at one size m, from what a pair's calibration times
// at the first process a: `rtt`, a round trip of m bytes to b and none back; `forth` (and
// `back`, timed at b), n messages of m bytes sent back to back from a to b (b to a), then
// one of none answering them. With gaps g_f, g_b and latencies L_f, L_b (overheads in
// them): rtt = g_f + L_f + L_b, forth = n g_f + L_f + L_b, back = n g_b + L_b + L_f. The
// round trip carries m one way only, so where the directions differ (an access line on one
// side) the back direction must add g_f back, not take (back - rtt) / (n - 1).
struct Gaps {
  double forth = 0, back = 0;
};
inline Gaps gaps_from_streams(double rtt, double forth, double back, int n) {
  Gaps g;
  g.forth = std::max(0.0, (forth - rtt) / (n - 1));
  g.back = std::max(0.0, (back - rtt + g.forth) / n);
  return g;
}

}  // namespace gridrt::models
