// What a job's part has printed, kept by its relay so that nothing is lost when the broker
// is: every Output frame is numbered (header.seq, from 1, per part) and kept; the job's
// launcher prints each number once, and after the broker came back it asks for what
// follows the last one it printed (a replay). Kept up to a byte budget, oldest dropped first;
// a replay that needs dropped lines says how many.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "common/wire.h"

namespace gridrt {

class OutputLog {
 public:
  explicit OutputLog(std::size_t budget = kDefaultBudget) : budget_(budget) {}
  static constexpr std::size_t kDefaultBudget = 16u << 20;

  // Numbers `f` and keeps a copy.
  void append(wire::Frame& f) {
    f.header.seq = next_++;
    bytes_ += f.body.size() + wire::kHeaderSize;
    kept_.push_back(f);
    while (bytes_ > budget_ && !kept_.empty()) {
      bytes_ -= kept_.front().body.size() + wire::kHeaderSize;
      kept_.pop_front();
    }
  }
  // The frames numbered after `seq`, oldest first, and how many of those are no longer kept.
  std::vector<wire::Frame> after(std::uint64_t seq, std::uint64_t* dropped) const {
    std::vector<wire::Frame> out;
    const std::uint64_t first_kept = kept_.empty() ? next_ : kept_.front().header.seq;
    *dropped = first_kept > seq + 1 ? first_kept - (seq + 1) : 0;
    for (const auto& f : kept_)
      if (f.header.seq > seq) out.push_back(f);
    return out;
  }
  std::uint64_t last() const { return next_ - 1; }
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t budget_;
  std::deque<wire::Frame> kept_;
  std::size_t bytes_ = 0;
  std::uint64_t next_ = 1;
};

}  // namespace gridrt
