#include "common/admission.h"

#include <malloc.h>

#include <optional>

#include <boost/asio/steady_timer.hpp>

namespace gridrt {

struct Admission::Entry {
  std::string address;
  std::function<void()> drop;
  std::list<std::shared_ptr<Entry>>::iterator in_order;  // valid while counted
  bool counted = true;
};

struct Admission::State : std::enable_shared_from_this<Admission::State> {
  std::string port;
  Limits limits;
  std::list<std::shared_ptr<Entry>> order;  // oldest first
  std::map<std::string, std::size_t> per_address;
  std::size_t dropped = 0;
  log::Repeated warning;
  // Giving memory back: whether strangers went since it last was (what they held is free
  // now), and the wait for quiet.
  bool gone_since_trim = false;
  std::size_t trims = 0;
  std::optional<boost::asio::steady_timer> quiet;  // none: memory is not given back here
  bool trim_pending = false;

  State(boost::asio::any_io_executor ex, std::string p, Limits l, bool give_memory_back)
      : port(std::move(p)), limits(l), warning("unauthenticated connections dropped on the " + port) {
    if (give_memory_back) quiet.emplace(std::move(ex));
  }

  void forget(const std::shared_ptr<Entry>& e) {
    if (!e->counted) return;
    e->counted = false;
    order.erase(e->in_order);
    if (auto it = per_address.find(e->address); it != per_address.end() && --it->second == 0) per_address.erase(it);
    gone_since_trim = true;
    if (order.empty() && !trim_pending && quiet) give_memory_back_when_quiet();
  }
  // After strangers (an attack, or a big job's start) glibc's allocator keeps the memory
  // their handshakes used: freed, but in pages that it returns to the system only from the
  // top of the heap, and the few objects that outlive them sit between them. malloc_trim(0)
  // returns every whole free page wherever it lies (madvise). It runs once the port has had
  // no stranger for a moment — by then the last ones' buffers, freed after their ticket,
  // are free too — and at most once per moment. Whatever the number: a handful of late
  // connections (an attacker's, closed while still queued for accept) dirty megabytes of
  // pages that an earlier trim gave back. The cost is a walk over the free lists.
  static constexpr std::chrono::seconds kQuiet{1};
  void give_memory_back_when_quiet() {
    trim_pending = true;
    quiet->expires_after(kQuiet);
    quiet->async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
      const auto self = weak.lock();
      if (ec || !self) return;  // the port is gone
      self->trim_pending = false;
      if (!self->order.empty()) return;  // not quiet: the next time it empties tries again
      if (!self->gone_since_trim) return;
      self->gone_since_trim = false;
      ++self->trims;
      ::malloc_trim(0);
    });
  }
  void evict(const std::shared_ptr<Entry>& e, const char* cap) {
    forget(e);
    ++dropped;
    warning.warn("dropping the oldest unauthenticated connection from ", e->address, " on the ", port, ": ", cap);
    if (auto drop = std::move(e->drop)) drop();
  }
};

Admission::Admission(boost::asio::any_io_executor ex, std::string port, Limits limits, bool give_memory_back)
    : state_(std::make_shared<State>(std::move(ex), std::move(port), limits, give_memory_back)) {}

void Admission::Ticket::release() {
  if (state_ && entry_) state_->forget(entry_);
  state_.reset();
  entry_.reset();
}

Admission::Ticket Admission::admit(const boost::asio::ip::address& from, std::function<void()> drop) {
  State& s = *state_;
  const std::string address = from.to_string();
  if (s.per_address[address] >= s.limits.per_address) {
    for (const auto& e : s.order)
      if (e->address == address) {
        s.evict(std::shared_ptr<Entry>(e), "too many from that address");
        break;
      }
  }
  if (s.order.size() >= s.limits.total) s.evict(std::shared_ptr<Entry>(s.order.front()), "too many in all");
  auto e = std::make_shared<Entry>();
  e->address = address;
  e->drop = std::move(drop);
  e->in_order = s.order.insert(s.order.end(), e);
  ++s.per_address[address];
  Ticket t;
  t.state_ = state_;
  t.entry_ = std::move(e);
  return t;
}

bool Admission::drop_oldest(const char* why) {
  if (state_->order.empty()) return false;
  state_->evict(std::shared_ptr<Entry>(state_->order.front()), why);
  return true;
}

std::size_t Admission::pending() const { return state_->order.size(); }
std::size_t Admission::memory_given_back() const { return state_->trims; }
std::size_t Admission::dropped() const { return state_->dropped; }

}  // namespace gridrt
