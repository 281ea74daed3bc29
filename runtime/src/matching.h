// MPI-like message matching for traffic that arrives through the relay (design.md, "The
// cross-site transport"): posted receives matched in the order they were posted, arrivals
// kept in an unexpected queue in arrival order; a receive matches on (context, source, tag)
// with kAnyTag allowed. Pure data structure: no socket, no lock (the transport locks).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>

namespace gridrt::detail {

struct Envelope {
  std::uint32_t context = 0;
  std::int32_t source = -1;
  std::int32_t tag = 0;
};

struct Arrival {
  Envelope env;
  std::string data;
};

// Receives are held as shared_ptr<R>, R having an Envelope `pattern` (tag < 0: any tag).
template <typename R>
class MatchQueue {
 public:
  using Posted = std::shared_ptr<R>;
  static bool matches(const Envelope& pattern, const Envelope& e) {
    return pattern.context == e.context && pattern.source == e.source && (pattern.tag < 0 || pattern.tag == e.tag);
  }
  // A receive being posted: the first unexpected arrival it matches, if any; else it waits.
  std::optional<Arrival> post(Posted p) {
    for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it)
      if (matches(p->pattern, it->env)) {
        Arrival a = std::move(*it);
        unexpected_.erase(it);
        return a;
      }
    posted_.push_back(std::move(p));
    return std::nullopt;
  }
  // A message arriving: the first posted receive it matches, if any (then `a` is left for the
  // caller to deliver); else it is moved into the unexpected queue.
  std::optional<Posted> arrive(Arrival& a) {
    for (auto it = posted_.begin(); it != posted_.end(); ++it)
      if (matches((*it)->pattern, a.env)) {
        Posted p = std::move(*it);
        posted_.erase(it);
        return p;
      }
    unexpected_.push_back(std::move(a));
    return std::nullopt;
  }
  // Removes every posted receive (on failure, to fail them all).
  std::list<Posted> take_posted() { return std::exchange(posted_, {}); }
  std::size_t unexpected() const { return unexpected_.size(); }
  std::size_t posted() const { return posted_.size(); }

 private:
  std::list<Posted> posted_;
  std::list<Arrival> unexpected_;
};

}  // namespace gridrt::detail
