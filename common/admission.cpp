#include "common/admission.h"

#include <malloc.h>

namespace gridrt {

struct Admission::Entry {
  std::string address;
  std::function<void()> drop;
  std::list<std::shared_ptr<Entry>>::iterator in_order;  // valid while counted
  bool counted = true;
};

struct Admission::State {
  std::string port;
  Limits limits;
  std::list<std::shared_ptr<Entry>> order;  // oldest first
  std::map<std::string, std::size_t> per_address;
  std::size_t dropped = 0;
  std::size_t since_trim = 0;  // connections counted since memory was last given back
  log::Repeated warning;

  State(std::string p, Limits l) : port(std::move(p)), limits(l), warning("unauthenticated connections dropped on the " + port) {}

  void forget(const std::shared_ptr<Entry>& e) {
    if (!e->counted) return;
    e->counted = false;
    order.erase(e->in_order);
    if (auto it = per_address.find(e->address); it != per_address.end() && --it->second == 0) per_address.erase(it);
    // After a burst of strangers (an attack, or a big job's start) the allocator keeps the
    // freed handshake state; once none is left, give it back to the system.
    if (order.empty() && since_trim >= kTrimAfter) {
      since_trim = 0;
      ::malloc_trim(0);
    }
  }
  static constexpr std::size_t kTrimAfter = 256;
  void evict(const std::shared_ptr<Entry>& e, const char* cap) {
    forget(e);
    ++dropped;
    warning.warn("dropping the oldest unauthenticated connection from ", e->address, " on the ", port, ": ", cap);
    if (auto drop = std::move(e->drop)) drop();
  }
};

Admission::Admission(std::string port, Limits limits) : state_(std::make_shared<State>(std::move(port), limits)) {}

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
  ++s.since_trim;
  ++s.per_address[address];
  Ticket t;
  t.state_ = state_;
  t.entry_ = std::move(e);
  return t;
}

std::size_t Admission::pending() const { return state_->order.size(); }
std::size_t Admission::dropped() const { return state_->dropped; }

}  // namespace gridrt
