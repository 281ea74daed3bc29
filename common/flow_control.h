// The transport's flow control (docs/protocol.md, "Flow control"): how a stream's messages
// are cut into frames, what a frame costs in credit, when a message goes as rendezvous, and
// the window per stream a job's processes keep. The sender (sender.h) and the receiver
// (receiver.h) work by these; the models play the same frames (models/flow_window.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <stdexcept>
#include <optional>
#include <string>

#include "common/settings.h"

namespace gridrt::flow {

inline constexpr std::size_t kFrameCost = 64;  // credit a frame costs beyond its body
inline constexpr std::size_t kMaxFragment = 64 * 1024;
// Where the least round trip to a destination is under kGrowFrom (a machine room's path, or
// one machine's), frames may be twice as large. Each frame costs both relays and both ends a
// read, a write and a Credit frame back, whatever its size; on a short path that per-frame
// work, not a line, is what a stream waits on (one stream through two relays on two cores, the
// window the same: more bandwidth and less CPU per byte with 128 KiB frames than with 64 KiB
// in each of eight alternations; docs/benchmarks.md). On a wide-area line a frame's time on the line is
// what a small message queued behind it waits (64 KiB at 100 Mbit/s is 5 ms), so there they
// stay at kMaxFragment, which is also what the models play (they predict wide-area lines).
inline constexpr std::size_t kMaxShortPathFragment = 128 * 1024;

// The flow-control window per stream (GRIDRT_WINDOW), and what it may be. The default holds
// 512 KiB of a stream's messages in whole frames with their cost: eight frames of 64 KiB, or
// four of 128 KiB on a short path. A window of 512 KiB even held seven and three: a message
// of 512 KiB waited a round trip for its eighth frame on a wide-area line, and on a short path
// the frames were cut 64 bytes short of 128 KiB, so that a message of 1 MiB went as nine frames,
// the last of 512 bytes, with three on their way at a time (one stream through two relays on
// two cores: more bandwidth in 16 of 19 alternations, median +9%; docs/benchmarks.md).
inline constexpr std::size_t kDefaultWindowBytes = 8 * (kMaxFragment + kFrameCost);
inline constexpr std::size_t kMinWindowBytes = 4096, kMaxWindowBytes = std::size_t{1} << 32;

// Where GRIDRT_WINDOW is unset, a stream's window starts at the default and grows where its
// line asks for more, up to kMaxGrownWindowBytes: a stream whose frames wait for credit
// while the credit of more than a window of them in a row comes back within kGrowWithin of the
// least round trip seen to that destination is held by its window, not by its line (no
// queue has formed anywhere on the way), and its window doubles. Past the line's
// bandwidth-delay product the frames queue at the line's bottleneck, the round trip grows
// and the window stays. The idea is the receive-window autotuning of TCP stacks (Semke,
// Mahdavi, Mathis, "Automatic TCP Buffer Tuning", SIGCOMM 1998) with a delay test of its
// own in place of a measured rate, as TCP Vegas judges a queue by its round trip (Brakmo,
// Peterson, "TCP Vegas: End to End Congestion Avoidance on a Global Internet", 1995). A
// destination keeps what its streams learned: a new stream to it starts at the largest
// window grown so far. A window GRIDRT_WINDOW sets stays as set.
// Only where the least round trip is at least kGrowFrom, a wide-area line's: a shorter one is
// mostly the machines' own (scheduling, the processes' queues), where a larger window buys
// nothing, and 512 KiB per 5 ms still carries 840 Mbit/s per stream. Delay alone cannot tell
// a long line from a path whose every round trip is a queue's from the first frame on (64
// streams through two relays on two busy cores saw least round trips of 60-70 ms); asking
// for more than a window in a row keeps most of those from growing. More than a window, not a
// whole one: with a window of whole frames, a window of frames is one round trip's, and the
// 64 streams grew to 75-95 MiB of relay memory on it, against 70-73 when a frame of the next
// round trip must come back unqueued too (docs/benchmarks.md).
inline constexpr std::size_t kMaxGrownWindowBytes = std::size_t{16} << 20;
inline constexpr double kGrowWithin = 1.25;
inline constexpr double kGrowFrom = 5e-3;  // seconds

struct Window {
  std::size_t bytes = kDefaultWindowBytes;  // a stream's window as it begins
  bool grows = true;                        // up to kMaxGrownWindowBytes, as above
};

// GRIDRT_WINDOW's (fixed), or the default where it is unset (growing); std::invalid_argument
// naming the variable, its value and what it may be otherwise. The runtime reads it so, and
// so do the tools that predict for jobs (gridbench --predict-only, gridrun calibrate).
inline Window window_from_env() {
  const std::optional<unsigned long long> n = settings::number("GRIDRT_WINDOW");  // (its range: kMinWindowBytes to kMaxWindowBytes)
  if (!n) return {};
  return {static_cast<std::size_t>(*n), false};
}

// The window a stream settles at on a line of `rate` bytes per second and `round_trip`
// seconds with no data: where that is at least kGrowFrom, doubled from its start while it
// holds at most kGrowWithin of the line's bandwidth-delay product (while it does, its frames find no queue and their credit
// comes back within kGrowWithin of the idle round trip), never past kMaxGrownWindowBytes.
inline std::size_t settled_window(const Window& w, double rate, double round_trip) {
  std::size_t bytes = w.bytes;
  if (!w.grows || round_trip < kGrowFrom) return bytes;
  while (bytes < kMaxGrownWindowBytes && static_cast<double>(bytes) <= kGrowWithin * rate * round_trip)
    bytes = std::min(2 * bytes, kMaxGrownWindowBytes);
  return bytes;
}

// A message above this goes as rendezvous: its first frame, then the rest once the receiver
// has matched it (its Matched back a round trip after the first frame left, the receive
// taken as posted).
inline constexpr std::size_t kRendezvousAbove = 4u << 20;
// The body of a message's frames: small enough that the relays, which store and forward
// whole frames, work on several at once, and that a window holds several (four or more),
// so that a stream flows while credit comes back.
inline std::size_t fragment_bytes(std::size_t window, bool short_path = false) {
  return std::min(short_path ? kMaxShortPathFragment : kMaxFragment, window / 4 - kFrameCost);
}

// May the credit of a message of one frame wait at its receiver (wire::kCreditMayWait)? When
// the frame leaves its sender `credit_left` of a `window`: yes if that is three quarters of
// the window or more. Small messages are mostly answered (a ping-pong, a collective's steps):
// their credit then rides with the answer, and each message crosses the relays as one frame
// instead of two (a Credit frame of its own wakes both relays and both processes' I/O threads,
// as the data does). It cannot stall the stream: the sender waits for credit only with less
// than a frame's cost left, a quarter of the window at most, so the frame that took it below
// three quarters did not carry the flag, and the receiver sends everything it held with that
// frame's credit. What it can cost is a quarter of the window while the credit waits.
inline bool credit_may_wait(std::size_t credit_left, std::size_t window) { return credit_left >= window - window / 4; }

}  // namespace gridrt::flow
