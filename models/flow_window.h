// A stream's flow-control window through the relays, as a cost (docs/protocol.md, "Flow
// control"): a message goes as frames of a fragment each, and a sender has frames of at
// most W bytes of credit (a frame costs its body and kFrameCost) of a stream on their way;
// the receiver grants a frame's credit back as it arrives, so that credit returns a round
// trip R after the frame left. A stream therefore carries at most W per R, while a message
// that fits in the credit left goes at its line's rate. Where W < rate x R (a long fat
// line, or a small window), a single message of 256 KiB crosses at the line's rate and a
// stream of them at the window's pace: pLogP's one gap per size (Kielmann, Bal, Verstoep,
// "Fast Measurement of LogP Parameters for Message Passing Platforms", 2000) cannot be
// both. So the model keeps the line's own gap g(m) (calibration measures it with a window
// that does not limit) and plays each stream's window over it, frame by frame: the bound a
// window puts on any sliding-window protocol over a line whose bandwidth-delay product
// exceeds it (Jacobson, Braden, Borman, "TCP Extensions for High Performance", RFC 1323,
// 1992, on "long fat pipes").
//
// Frame by frame, not as a fluid rate: credit comes back whole frames at a time, so a
// message one frame beyond what the credit holds waits a whole round trip for it. A window
// of 512 KiB holds seven frames of 64 KiB (each costs 64 KiB and 64 bytes): over 10 ms, 1
// Gbit/s, a message of 384 KiB crossed in 13.8 ms and one of 512 KiB in 32.6. (The default
// window is 512 KiB and the cost of eight frames, so that it holds eight.)
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <deque>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/flow_control.h"

namespace gridrt::models {

// How the transport frames a stream and what its window may be are the transport's own
// (common/flow_control.h); the model plays the same frames.
using flow::fragment_bytes;
using flow::kDefaultWindowBytes;
using flow::kFrameCost;
using flow::kMaxFragment;
using flow::kMaxWindowBytes;
using flow::kMinWindowBytes;
using flow::settled_window;
using flow::kRendezvousAbove;
using flow::window_from_env;
inline bool goes_as_rendezvous(double m) { return m > static_cast<double>(kRendezvousAbove); }
// How many frames a message of m bytes goes as in a stream of window W (at least one).
inline double frames_in(double m, double window) {
  return std::max(1.0, std::ceil(m / static_cast<double>(fragment_bytes(static_cast<std::size_t>(window)))));
}

class FlowWindow {
 public:
  // `window`: W, bytes; `round_trip`: R, seconds from a frame's leaving to its credit's return.
  FlowWindow(double window, double round_trip)
      : round_trip_(round_trip),
        window_(window),
        fragment_(static_cast<double>(fragment_bytes(static_cast<std::size_t>(window)))),
        credit_(window) {}

  // Whether a line that clocks a frame out in `frame_time` outpaces the window: sends a
  // window's frames before the first one's credit is back. Where it does not, credit is
  // back before it is needed, and a stream's every message leaves as fresh() says.
  static bool outpaced(double window, double round_trip, double frame_time) { return frames_per_window(window) * frame_time < round_trip; }

  // A message of a fresh stream (all its credit there), without keeping the stream: as
  // send() on a new FlowWindow where its frames are whole (a smaller last frame may fit in
  // the credit left where a whole one would not). Frame j of n leaves at
  // (j / n_w) (R + tau) + (j % n_w + 1) tau, n_w frames to a window, tau each on the line,
  // where R exceeds n_w tau; at (j + 1) tau where it does not.
  static double fresh(double window, double round_trip, double m, double begin, double line_time) {
    const double frames = frames_in(m, window);
    const double per_frame = line_time / frames, per_window = frames_per_window(window);
    auto last_leaves = [&](double n) {  // the last of n frames, from full credit
      if (round_trip <= per_window * per_frame) return n * per_frame;
      const double rounds = std::floor((n - 1) / per_window);
      return rounds * (round_trip + per_frame) + (n - rounds * per_window) * per_frame;
    };
    // A rendezvous's rest leaves a round trip after its first frame, with all credit back.
    if (goes_as_rendezvous(m) && frames > 1) return begin + per_frame + round_trip + last_leaves(frames - 1);
    return begin + last_leaves(frames);
  }

  // A message of m bytes that may begin at `begin` and whose line alone would clock it out
  // in `line_time` (its gap), the time spread evenly over its frames: when its last frame
  // leaves. A stream's messages leave in order: one begins no earlier than the one before
  // it has left.
  double send(double m, double begin, double line_time) {
    const double frames = frames_in(m, window_);
    const double per_frame = line_time / frames;
    double t = std::max(begin, last_), first_left = 0;
    for (double sent = 0, k = 0; k < frames; ++k) {
      const double body = std::min(fragment_, m - sent), cost = body + static_cast<double>(kFrameCost);
      sent += body;
      if (k == 1 && goes_as_rendezvous(m)) t = std::max(t, first_left + round_trip_);
      // Credit back by now, then (where that is not enough) as it comes back, in order.
      while (!in_flight_.empty() && (in_flight_.front().first <= t || credit_ < cost)) {
        t = std::max(t, in_flight_.front().first);
        credit_ += in_flight_.front().second;
        in_flight_.pop_front();
      }
      credit_ -= cost;
      t += per_frame;
      if (k == 0) first_left = t;
      in_flight_.emplace_back(t + round_trip_, cost);
    }
    return last_ = t;
  }

 private:
  static double frames_per_window(double window) {
    return std::max(1.0, std::floor(window / static_cast<double>(fragment_bytes(static_cast<std::size_t>(window)) + kFrameCost)));
  }
  double round_trip_, window_, fragment_;
  double credit_;                                    // not spent, nor yet back in in_flight_
  std::deque<std::pair<double, double>> in_flight_;  // (its credit back at, cost) by frame, in order
  double last_ = 0;                                  // when the stream's last frame left
};

// Whether the jobs' flow-control window (as it settles on the line: flow::settled_window)
// holds a stream below its line's rate: a stream carries at most W per round trip (above),
// the line m / g(m) at m bytes (its gap measured by a stream whose window does not limit:
// calibration's). From the line's gap at m (the largest size measured) and its round trip
// of no data. Said where the line's rate times its round trip (`needed`, the window that
// keeps up) exceeds W by kStreamSlower: large messages there go at the window's pace, which
// the model predicts, and a larger window would let them go at the line's.
struct WindowCheck {
  bool limits = false;
  double line_rate = 0, stream_rate = 0, needed = 0, settled = 0;  // bytes/s, bytes/s, bytes, bytes
};
inline constexpr double kStreamSlower = 1.5;
inline WindowCheck check_window(double m, double g_m, double rtt_0, const flow::Window& window) {
  WindowCheck c;
  if (m <= 0 || g_m <= 0 || rtt_0 <= 0) return c;
  c.line_rate = m / g_m;
  c.settled = static_cast<double>(flow::settled_window(window, c.line_rate, rtt_0));
  c.stream_rate = std::min(c.line_rate, c.settled / rtt_0);
  c.needed = c.line_rate * rtt_0;
  c.limits = c.needed > kStreamSlower * c.settled;
  return c;
}

}  // namespace gridrt::models
