// The transport's flow control (docs/protocol.md, "Flow control"): how a stream's messages
// are cut into frames, what a frame costs in credit, when a message goes as rendezvous, and
// the window per stream a job's processes keep. The sender (sender.h) and the receiver
// (receiver.h) work by these; the models play the same frames (models/flow_window.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace gridrt::flow {

// The flow-control window per stream (GRIDRT_WINDOW), and what it may be.
inline constexpr std::size_t kDefaultWindowBytes = 512 * 1024;
inline constexpr std::size_t kMinWindowBytes = 4096, kMaxWindowBytes = std::size_t{1} << 32;
// GRIDRT_WINDOW's, or the default where it is unset; std::invalid_argument naming the
// variable, its value and what it may be otherwise. The runtime reads it so, and so do
// the tools that predict for jobs (gridbench --predict-only, gridrun calibrate).
inline std::size_t window_from_env() {
  const char* v = std::getenv("GRIDRT_WINDOW");
  if (!v) return kDefaultWindowBytes;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (!*v || *end || *v == '-' || n < kMinWindowBytes || n > kMaxWindowBytes)
    throw std::invalid_argument(std::string("GRIDRT_WINDOW='") + v + "' must be a number of bytes from " + std::to_string(kMinWindowBytes) +
                                " to " + std::to_string(kMaxWindowBytes));
  return static_cast<std::size_t>(n);
}

inline constexpr std::size_t kFrameCost = 64;  // credit a frame costs beyond its body
inline constexpr std::size_t kMaxFragment = 64 * 1024;
// A message above this goes as rendezvous: its first frame, then the rest once the receiver
// has matched it (its Matched back a round trip after the first frame left, the receive
// taken as posted).
inline constexpr std::size_t kRendezvousAbove = 4u << 20;
// The body of a message's frames: small enough that the relays, which store and forward
// whole frames, work on several at once, and that a window holds several (four or more),
// so that a stream flows while credit comes back.
inline std::size_t fragment_bytes(std::size_t window) { return std::min(kMaxFragment, window / 4 - kFrameCost); }

}  // namespace gridrt::flow
