// Buffers of written frames, kept for the next frames to be encoded into.
//
// A process streaming large messages encodes each 64 KiB frame into a buffer of its own,
// which its connection frees once written. glibc gives the freed top of its heap back to the
// kernel as soon as more than 128 KiB of it is free (its trim threshold), so every frame's
// buffer was mapped and faulted in anew, and unmapped again, with the TLB flushes that go
// with it on every core: profiled on a process sending 1 MiB messages through the relays,
// page faults were 13% of its time and cross-core TLB flushes 4%. The relays keep their
// freed heap instead (common/heap.h); an application's process is not ours to set malloc's
// policy for, so the transport keeps its own buffers: a bounded number, handed back by the
// connection once written (Link::recycle_written) and taken by the encoder.
#pragma once

#include <mutex>
#include <string>
#include <vector>

namespace gridrt {

class FramePool {
 public:
  // An empty buffer that holds `capacity` bytes without allocating: a kept one if any is
  // large enough, else a new one.
  std::string take(std::size_t capacity) {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      if (!kept_.empty() && kept_.back().capacity() >= capacity) {
        std::string s = std::move(kept_.back());
        kept_.pop_back();
        s.clear();
        return s;
      }
    }
    std::string s;
    s.reserve(capacity);
    return s;
  }
  // A written frame's buffer: kept if it is a large one and fewer than kKept are.
  void give(std::string&& s) {
    if (s.capacity() < kWorthKeeping) return;
    const std::lock_guard<std::mutex> lock(mu_);
    if (kept_.size() < kKept) kept_.push_back(std::move(s));
  }

 private:
  static constexpr std::size_t kWorthKeeping = 16 * 1024;  // smaller ones come from malloc's bins, never trimmed
  static constexpr std::size_t kKept = 64;                 // 4 MiB of 64 KiB frames: a window's and more
  std::mutex mu_;
  std::vector<std::string> kept_;
};

}  // namespace gridrt
