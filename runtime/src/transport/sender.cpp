#include "sender.h"

#include <algorithm>
#include <cstring>

namespace gridrt::detail {

Sender::Stream& Sender::stream(std::int32_t dst, std::uint32_t context) {
  auto [it, fresh] = out_.try_emplace({dst, context});
  if (fresh) {
    it->second.dst = dst;
    it->second.window = window_to(dst);
    it->second.grows = window_.grows;
    it->second.credit = static_cast<std::int64_t>(it->second.window);
  }
  return it->second;
}

std::size_t Sender::window_to(std::int32_t dst) const {
  if (!window_.grows) return window_.bytes;
  auto d = destinations_.find(dst);
  return d == destinations_.end() ? window_.bytes : std::max(window_.bytes, d->second.window);
}

Sender::Slot Sender::slot(std::int32_t dst, std::uint32_t context) {
  const Stream& s = stream(dst, context);
  // Relays store and forward whole frames, so small fragments let the hops work at once
  // (a pipeline); a window holds several, so the stream flows while credit comes back
  // (models/flow_window.h, where the model plays the same frames). Larger ones on a short
  // path, once a round trip to its destination says it is one (common/flow_control.h).
  const auto d = destinations_.find(dst);
  const bool short_path = d != destinations_.end() && d->second.least_round_trip < std::chrono::duration<double>(flow::kGrowFrom);
  return {s.messages, flow::fragment_bytes(s.window, short_path)};
}

Sender::Frames Sender::encode(wire::Header h, const Slot& slot, std::string_view head, const void* buf, std::size_t bytes, bool synchronous,
                              bool rendezvous, const std::shared_ptr<RemoteOp>& op, FramePool* pool) {
  Frames out;
  const char* p = static_cast<const char*>(buf);
  const std::size_t total = head.size() + bytes;
  const std::size_t first_part = rendezvous ? slot.fragment : total;
  std::size_t off = 0;
  do {
    const bool in_rest = rendezvous && off >= first_part;
    const std::size_t end = in_rest ? total : first_part;
    const std::size_t n = std::min(end - off, slot.fragment);
    h.type = in_rest ? wire::Type::kRest : wire::Type::kData;
    h.length = static_cast<std::uint32_t>(n);
    h.flags = off + n < end ? wire::kMoreFragments : 0;
    if (off == 0) h.flags |= (synchronous ? wire::kSynchronous : 0) | (rendezvous ? wire::kRendezvous : 0);
    h.seq = in_rest ? slot.number : total;  // a first part names the whole message's size: a probe tells it
    // Header and payload straight into one buffer: the only copy of the caller's data (not
    // zeroed first: that cost as much as the copy).
    std::string encoded = pool ? pool->take(wire::kHeaderSize + n) : std::string();
    encoded.reserve(wire::kHeaderSize + n);
    encoded.resize(wire::kHeaderSize);
    wire::encode_header(h, reinterpret_cast<unsigned char*>(encoded.data()));
    const std::size_t from_head = off < head.size() ? std::min(n, head.size() - off) : 0;
    encoded.append(head.data() + std::min(off, head.size()), from_head);
    if (n > from_head) encoded.append(p + (off + from_head - head.size()), n - from_head);  // (past the head)
    off += n;
    (in_rest ? out.rest : out.first).push_back({std::move(encoded), n + flow::kFrameCost, off < total ? nullptr : op, n == total});
  } while (off < total);
  return out;
}

bool Sender::queue(std::int32_t dst, std::uint32_t context, Frames frames, const std::shared_ptr<RemoteOp>& op, bool synchronous,
                   bool rendezvous) {
  Stream& s = stream(dst, context);
  const std::uint64_t number = s.messages++;
  if (synchronous || rendezvous) s.unmatched[number] = op;
  if (rendezvous) s.parked[number] = std::move(frames.rest);
  for (auto& o : frames.first) s.queue.push_back(std::move(o));
  return pump(s);
}

bool Sender::pump(Stream& s, bool clocked) {
  bool completed = false;
  while (!s.queue.empty() && s.credit >= static_cast<std::int64_t>(s.queue.front().cost)) {
    Outgoing& o = s.queue.front();
    s.credit -= static_cast<std::int64_t>(o.cost);
    const bool may_wait = o.whole && flow::credit_may_wait(static_cast<std::size_t>(s.credit), s.window);
    if (may_wait) wire::add_flags(o.bytes, wire::kCreditMayWait);
    s.taken += o.cost;
    s.in_flight.push_back({s.taken, o.cost, clock_(), clocked, may_wait});
    write_(s.dst, std::move(o.bytes));
    if (o.completes) {
      // A frame that could not go (the peer's direct connection is gone) fails its send.
      RemoteOp& op = *o.completes;
      op.written = true;
      if (!failure_.empty()) op.error = failure_;
      else if (!op.synchronous || op.matched) op.done = true;
      completed = true;
    }
    s.queue.pop_front();
  }
  return completed;
}

bool Sender::credit(std::int32_t dst, std::uint32_t context, std::size_t bytes) {
  auto it = out_.find({dst, context});
  if (it == out_.end()) return false;  // credit for a stream never used: nothing waits on it
  Stream& s = it->second;
  s.credit += static_cast<std::int64_t>(bytes);
  s.returned += bytes;
  learn(s, !s.queue.empty());
  return pump(s, true);
}

// Credit came back (s.returned): each frame it covers gives a round trip (the least of them
// tells a short path: slot()). `waiting`: frames of the stream were waiting for that credit.
// common/flow_control.h says why and when a growing window doubles.
void Sender::learn(Stream& s, bool waiting) {
  Destination& d = destinations_[s.dst];
  const auto now = clock_();
  while (!s.in_flight.empty() && s.in_flight.front().end <= s.returned) {
    const Stream::InFlight f = s.in_flight.front();
    s.in_flight.pop_front();
    if (f.may_wait) continue;  // (its credit came when the receiver next wrote to us)
    const auto round_trip = now - f.left;
    d.least_round_trip = std::min(d.least_round_trip, round_trip);
    if (!f.clocked || f.end <= s.judged_after) continue;
    // More than a window of frames in a row must come back as fast as on an idle line: one
    // lucky frame among queued ones (a busy machine's scheduling) is not a line held by its
    // window.
    if (round_trip <= d.least_round_trip * flow::kGrowWithin) s.unqueued += f.cost;
    else s.unqueued = 0;
  }
  if (!s.grows || !waiting || s.unqueued <= s.window || s.window >= flow::kMaxGrownWindowBytes ||
      d.least_round_trip < std::chrono::duration<double>(flow::kGrowFrom))
    return;
  const std::size_t grown = std::min(2 * s.window, flow::kMaxGrownWindowBytes);
  s.credit += static_cast<std::int64_t>(grown - s.window);
  s.judged_after = s.taken + (grown - s.window) + s.window;  // past the burst it lets go and a round trip of frames
  s.unqueued = 0;
  s.window = grown;
  d.window = std::max(d.window, grown);
}

bool Sender::matched(std::int32_t dst, std::uint32_t context, std::uint64_t number) {
  auto it = out_.find({dst, context});
  if (it == out_.end()) return false;
  Stream& s = it->second;
  auto op = s.unmatched.find(number);
  if (op == s.unmatched.end()) return false;  // (a peer's confusion: nothing waits on it)
  op->second->matched = true;
  if (op->second->written && op->second->error.empty()) op->second->done = true;
  s.unmatched.erase(op);
  if (auto rest = s.parked.find(number); rest != s.parked.end()) {
    for (auto& o : rest->second) s.queue.push_back(std::move(o));
    s.parked.erase(rest);
    pump(s);
  }
  return true;
}

void Sender::fail(const std::string& why) {
  if (failure_.empty()) failure_ = why;
  for (auto& [key, s] : out_) {
    for (auto& o : s.queue)
      if (o.completes) o.completes->error = failure_;
    for (auto& [number, op] : s.unmatched) op->error = failure_;
    s.unmatched.clear();
    s.parked.clear();
  }
}

void Sender::fail_to(const std::function<bool(std::int32_t)>& gone, const std::string& why) {
  for (auto& [key, s] : out_)
    if (gone(s.dst)) {
      for (auto& o : s.queue)
        if (o.completes) o.completes->error = why;
      s.queue.clear();
      for (auto& [number, op] : s.unmatched) op->error = why;
      s.unmatched.clear();
      s.parked.clear();
    }
}

}  // namespace gridrt::detail
