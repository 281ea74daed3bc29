// MPI-like message matching for traffic that arrives across clusters (docs/protocol.md;
// MPI 4.0 §3.5 and §3.8): posted receives matched in the order they were posted, arrivals
// kept in an unexpected queue in arrival order; a receive matches on (context, source, tag),
// where kAnySource and a negative tag match any. A message is matched when its first
// fragment arrives, so a receive can take a message larger than the flow-control window
// while the rest is still on its way. Pure data structure: no socket, no lock (the
// transport locks).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <utility>

namespace gridrt::detail {

// The sources and tags a receive may name besides real ones (the values MPICH gives
// MPI_ANY_SOURCE and MPI_ANY_TAG, so that the layers above pass them through unchanged).
inline constexpr std::int32_t kAnySource = -2;
inline constexpr std::int32_t kAnyTag = -1;

struct Envelope {
  std::uint32_t context = 0;
  std::int32_t source = -1;
  std::int32_t tag = 0;
};

inline bool envelope_matches(const Envelope& pattern, const Envelope& e) {
  return pattern.context == e.context && (pattern.source == kAnySource || pattern.source == e.source) &&
         (pattern.tag < 0 || pattern.tag == e.tag);
}

// R has an Envelope `pattern` (the receive); A has an Envelope `env` (the message).
template <typename R, typename A> class MatchQueue {
 public:
  using Posted = std::shared_ptr<R>;
  using Arrived = std::shared_ptr<A>;

  static bool matches(const Envelope& pattern, const Envelope& e) { return envelope_matches(pattern, e); }
  // A receive being posted: the oldest unexpected message it matches (removed), if any;
  // else the receive waits.
  Arrived post(Posted p) {
    if (Arrived a = take(p->pattern)) return a;
    posted_.push_back(std::move(p));
    return nullptr;
  }
  // The oldest unexpected message `pattern` matches, removed (a matched probe), or null.
  Arrived take(const Envelope& pattern) {
    for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it)
      if (matches(pattern, (*it)->env)) {
        Arrived a = std::move(*it);
        unexpected_.erase(it);
        return a;
      }
    return nullptr;
  }
  // The same, left where it is (a probe), or null.
  const A* peek(const Envelope& pattern) const {
    for (const auto& a : unexpected_)
      if (matches(pattern, a->env)) return a.get();
    return nullptr;
  }
  // A message arriving: the oldest posted receive it matches (removed), if any; else the
  // message is kept as unexpected.
  Posted arrive(Arrived a) {
    for (auto it = posted_.begin(); it != posted_.end(); ++it)
      if (matches((*it)->pattern, a->env)) {
        Posted p = std::move(*it);
        posted_.erase(it);
        return p;
      }
    unexpected_.push_back(std::move(a));
    return nullptr;
  }
  // Withdraws a posted receive that nothing matched yet; false if it was matched (or never
  // posted).
  bool cancel(const Posted& p) {
    for (auto it = posted_.begin(); it != posted_.end(); ++it)
      if (*it == p) {
        posted_.erase(it);
        return true;
      }
    return false;
  }
  // Removes the posted receives `pred` holds for (those from a lost peer, to fail them).
  template <typename Pred> std::list<Posted> take_posted_if(Pred pred) {
    std::list<Posted> out;
    for (auto it = posted_.begin(); it != posted_.end();)
      if (pred(**it)) out.push_back(std::move(*it)), it = posted_.erase(it);
      else ++it;
    return out;
  }
  // Removes every posted receive (on failure, to fail them all).
  std::list<Posted> take_posted() { return std::exchange(posted_, {}); }
  std::size_t unexpected() const { return unexpected_.size(); }
  std::size_t posted() const { return posted_.size(); }

 private:
  std::list<Posted> posted_;
  std::list<Arrived> unexpected_;
};

}  // namespace gridrt::detail
