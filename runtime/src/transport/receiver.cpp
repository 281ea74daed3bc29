#include "receiver.h"

#include <algorithm>
#include <cstring>

namespace gridrt::detail {

bool Receiver::on_fragment(const Fragment& f) {
  if (f.rest) return on_rest(f);
  const StreamKey key{f.env.source, f.env.context};
  auto& in = current_[key];
  bool news = false;
  if (!in) {  // the first fragment of a message: match it now
    in = std::make_shared<Arrival>();
    in->env = f.env;
    in->total = f.total;
    in->synchronous = f.synchronous;
    in->rendezvous = f.rendezvous;
    in->number = started_[key]++;
    if (auto op = queue_.arrive(in)) bind(in, op);
    news = true;
  }
  if (in->bound) {
    deliver(*in, f.data, f.size);
    hooks_.grant(f.env, f.cost, f.credit_may_wait);
  } else {
    // A large fragment is kept as it came, its frame's body taken whole rather than copied
    // once more before its receive copies it out; not a buffer much larger than its bytes
    // (the budget counts bytes, not what holds them).
    if (f.owner && f.owner->data() == f.data && f.owner->size() == f.size && f.size >= kTakeWholeFrom && f.owner->capacity() <= 2 * f.size)
      in->data.push_back(std::move(*f.owner));
    else in->data.emplace_back(f.data, f.size);
    if (buffered_ + f.cost <= budget_) {  // buffered here: its sender may go on
      buffered_ += f.cost;
      in->buffered += f.cost;
      hooks_.grant(f.env, f.cost, f.credit_may_wait);
    } else {
      in->withheld += f.cost;
    }
  }
  if (f.last) {
    if (in->rendezvous) {
      rest_[{key, in->number}] = in;  // its rest comes once matched
    } else {
      in->complete = true;
      if (in->bound) {
        finish_if_complete(*in);
        news = true;
      }
    }
    current_.erase(key);
  }
  return news;
}

// The rest of a rendezvous message: it is matched (its sender waited for that), so it goes
// straight into its receive.
bool Receiver::on_rest(const Fragment& f) {
  const auto it = rest_.find({{f.env.source, f.env.context}, f.number});
  if (it == rest_.end()) return false;  // (a peer's confusion, or a receive that failed: dropped)
  Arrival& in = *it->second;
  if (in.bound) deliver(in, f.data, f.size);
  hooks_.grant(f.env, f.cost, false);
  if (!f.last) return false;
  in.complete = true;
  finish_if_complete(in);
  rest_.erase(it);
  return true;
}

std::shared_ptr<RemoteOp> Receiver::post(void* buf, std::size_t capacity, const Envelope& pattern) {
  auto op = std::make_shared<RemoteOp>();
  op->pattern = pattern;
  op->buf = buf;
  op->capacity = capacity;
  if (auto in = queue_.post(op)) bind(in, op);
  return op;
}

std::shared_ptr<RemoteOp> Receiver::receive(const std::shared_ptr<Arrival>& message, void* buf, std::size_t capacity) {
  auto op = std::make_shared<RemoteOp>();
  op->pattern = message->env;
  op->buf = buf;
  op->capacity = capacity;
  bind(message, op);
  return op;
}

// Matched: what came so far goes into the receive, its credit back to the sender, and a
// synchronous sender hears that its message was matched (MPI_Ssend completes only then).
void Receiver::bind(const std::shared_ptr<Arrival>& in, const std::shared_ptr<RemoteOp>& op) {
  in->bound = op;
  op->got = in->env;
  op->total = in->total;
  for (const std::string& held : std::exchange(in->data, {})) deliver(*in, held.data(), held.size());
  buffered_ -= std::exchange(in->buffered, 0);
  hooks_.grant(in->env, std::exchange(in->withheld, 0), false);
  if (in->synchronous || in->rendezvous) hooks_.matched(in->env, in->number);
  finish_if_complete(*in);
}

// What does not fit is consumed and dropped: a truncated receive (MPI_ERR_TRUNCATE) still
// completes when the whole message has come, and the stream goes on.
void Receiver::deliver(Arrival& in, const char* data, std::size_t n) {
  RemoteOp& op = *in.bound;
  if (!op.error.empty()) return;
  const std::size_t room = op.capacity > in.filled ? op.capacity - in.filled : 0;
  const std::size_t take = std::min(room, n);
  if (take) std::memcpy(static_cast<char*>(op.buf) + in.filled, data, take);
  in.filled += take;
  if (take < n) op.truncated = true;
}

void Receiver::finish_if_complete(Arrival& in) {
  if (!in.complete || !in.bound) return;
  RemoteOp& op = *in.bound;
  op.bytes = in.filled;
  op.truncated = op.truncated || in.total > op.capacity;
  if (op.error.empty()) op.done = true;
}

void Receiver::fail_all(const std::string& why) {
  for (auto& op : queue_.take_posted()) op->error = why;
  for (auto& [key, in] : current_)
    if (in->bound && !in->bound->done) in->bound->error = why;
  for (auto& [key, in] : rest_)
    if (in->bound && !in->bound->done) in->bound->error = why;
}

void Receiver::fail_from(const std::function<bool(std::int32_t)>& gone, const std::string& why) {
  for (auto& op : queue_.take_posted_if([&](const RemoteOp& op) { return op.pattern.source != kAnySource && gone(op.pattern.source); }))
    op->error = why;
  for (auto& [key, in] : current_)
    if (gone(key.first) && in->bound && !in->bound->done) in->bound->error = why;
  for (auto& [key, in] : rest_)
    if (gone(key.first.first) && in->bound && !in->bound->done) in->bound->error = why;
}

}  // namespace gridrt::detail
