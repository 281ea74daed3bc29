#include "engine.h"

#include <algorithm>
#include <cstring>

namespace gridrt::rma {

namespace {

Location read_location(wire::Reader& r) {
  Location at;
  at.disp = r.u64();
  at.map = TypeMap::decode(r);
  return at;
}

Op read_op(wire::Reader& r) {
  const std::uint8_t v = r.u8();
  if (!valid_op(v)) throw wire::BadBody("an operation one-sided communication does not know");
  return static_cast<Op>(v);
}

// Why `op` cannot apply to the map's elements, or "".
std::string op_applies(Op op, const TypeMap& map) {
  for (const Run& run : map.runs())
    if (std::string why = check(op, run.kind); !why.empty()) return why;
  return "";
}

}  // namespace

Engine::Engine(std::int32_t me, Send send) : me_(me), send_(std::move(send)) {}

void Engine::expose(std::uint32_t window, char* base, std::uint64_t size, std::uint32_t disp_unit, bool dynamic, SharedLock* shared) {
  std::lock_guard<std::mutex> lock(mu_);
  Exposed& w = windows_[window];
  w.base = base;
  w.size = size;
  w.disp_unit = disp_unit == 0 ? 1 : disp_unit;
  w.dynamic = dynamic;
  w.word = shared ? shared : &w.own;
}

SharedLock* Engine::lock_of(std::uint32_t window) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(window);
  return it == windows_.end() ? nullptr : it->second.word;
}

void Engine::attach(std::uint32_t window, char* base, std::uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  windows_[window].attached[base] = size;
}

bool Engine::detach(std::uint32_t window, const char* base) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(window);
  return it != windows_.end() && it->second.attached.erase(base) > 0;
}

void Engine::withdraw(std::uint32_t window) {
  std::lock_guard<std::mutex> lock(mu_);
  windows_.erase(window);
  for (auto it = incoming_.begin(); it != incoming_.end();) it = it->first.second == window ? incoming_.erase(it) : std::next(it);
}

std::uint64_t Engine::next_id() {
  std::lock_guard<std::mutex> lock(mu_);
  return next_id_++;
}

void Engine::send(std::int32_t dst, std::uint32_t window, std::string body) {
  if (dst == me_) return deliver(me_, window, body);
  send_(dst, window, std::move(body));
}

void Engine::deliver(std::int32_t src, std::uint32_t window, std::string_view body) {
  std::vector<Out> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    apply(src, window, body, out);
  }
  flush_out(out);
}

// What a message's first fragment may make the engine set aside for the rest at once (a
// larger message's buffer grows as it comes).
constexpr std::uint64_t kReserveAtMost = std::uint64_t{64} << 20;

void Engine::deliver_part(std::int32_t src, std::uint32_t window, std::string_view part, std::uint64_t total, bool first, bool last) {
  if (first && last) return deliver(src, window, part);
  std::string whole;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto key = std::make_pair(src, window);
    Incoming& in = incoming_[key];
    if (first) {
      in = Incoming{};
      in.total = total;
      in.bytes.reserve(std::min(total, kReserveAtMost));
    }
    if (in.to) {  // a put on its way into the window
      const std::uint64_t n = std::min<std::uint64_t>(part.size(), in.left);
      if (auto w = windows_.find(window); w != windows_.end()) {
        SpinGuard guard(*w->second.word);
        std::memcpy(in.to, part.data(), n);
      }
      in.to += n;
      in.left -= n;
      if (last) {
        if (in.left != 0 || n != part.size())  // (never from a sound origin: its head said the size)
          if (auto w = windows_.find(window); w != windows_.end())
            w->second.errors.emplace(src,
                                     std::make_pair(ErrorClass::kIntern, std::string("a put of another size than its target datatype")));
        incoming_.erase(key);
      }
      return;
    }
    in.bytes.append(part);
    if (!last) {
      if (!in.decided) begin_streaming(src, window, in);
      return;
    }
    whole = std::move(in.bytes);
    incoming_.erase(key);
  }
  deliver(src, window, whole);
}

// Whether the message coming in is a put that can go into the window as it comes: its head
// (the target location) is in; the window is here; its origin holds what it needs (no lock
// request of its waits here, so it would be applied at once if whole); its target is one
// run of elements laid out as packed (a contiguous datatype), inside the window. Decided once,
// as soon as the head can be read.
void Engine::begin_streaming(std::int32_t src, std::uint32_t window, Incoming& in) {
  if (static_cast<Message>(static_cast<std::uint8_t>(in.bytes[0])) != Message::kPut) {
    in.decided = true;
    return;
  }
  wire::Reader r(std::string_view(in.bytes).substr(1));
  Location at;
  std::uint64_t bytes = 0;
  try {
    at = read_location(r);
    bytes = r.u32();  // (put_head: the data's length, then the data)
  } catch (const wire::BadBody&) {
    return;  // the head is not all here yet (or is malformed: the whole message says so)
  }
  in.decided = true;
  const std::size_t head = 1 + r.consumed();
  auto it = windows_.find(window);
  if (it == windows_.end() || it->second.lock.held_back.count(src) || at.map.runs().size() != 1) return;
  const Run& run = at.map.runs().front();
  if (run.kind.size != run.kind.extent || bytes != at.map.packed() || in.total != head + bytes) return;
  std::string why;
  char* mem = locate(it->second, at, &why);
  if (!mem) return;  // (the whole message reports it)
  const std::size_t here = in.bytes.size() - head;
  in.to = mem + run.disp;
  SpinGuard guard(*it->second.word);
  std::memcpy(in.to, in.bytes.data() + head, here);
  in.to += here;
  in.left = at.map.packed() - here;
  in.bytes = std::string();
}

void Engine::forget(const std::function<bool(std::int32_t)>& gone) {
  std::vector<Out> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = incoming_.begin(); it != incoming_.end();) it = gone(it->first.first) ? incoming_.erase(it) : std::next(it);
    for (auto& [id, w] : windows_) {
      SpinGuard guard(*w.word);
      Lock& l = w.lock;
      SharedLock& word = *w.word;
      if (word.exclusive >= 0 && gone(word.exclusive)) word.exclusive = -1;
      for (auto it = l.shared.begin(); it != l.shared.end();) {
        if (!gone(it->first)) {
          ++it;
          continue;
        }
        word.shared -= it->second;
        it = l.shared.erase(it);
      }
      const auto kept = std::remove_if(l.waiting.begin(), l.waiting.end(), [&](const Lock::Waiting& x) { return gone(x.origin); });
      word.queued -= static_cast<std::int32_t>(l.waiting.end() - kept);
      l.waiting.erase(kept, l.waiting.end());
      for (auto it = l.held_back.begin(); it != l.held_back.end();) it = gone(it->first) ? l.held_back.erase(it) : std::next(it);
      grant_waiting(w, id, out);
    }
  }
  flush_out(out);
}

void Engine::flush_out(std::vector<Out>& out) {
  for (Out& o : out) {
    if (o.dst == me_) deliver(me_, o.window, o.body);  // (a reply to ourselves makes nothing more)
    else send_(o.dst, o.window, std::move(o.body));
  }
}

bool Engine::take_reply(std::uint64_t id, Reply* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = replies_.find(id);
  if (it == replies_.end()) return false;
  *out = std::move(it->second);
  replies_.erase(it);
  return true;
}

bool Engine::holds_lock(std::uint32_t window, std::int32_t holder) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(window);
  if (it == windows_.end()) return false;
  SpinGuard guard(*it->second.word);
  return it->second.word->exclusive == holder || it->second.lock.shared.count(holder) > 0;
}

namespace {
bool take_one(std::map<std::int32_t, int>& counts, std::int32_t who) {
  auto it = counts.find(who);
  if (it == counts.end()) return false;
  if (--it->second == 0) counts.erase(it);
  return true;
}
}  // namespace

bool Engine::take_post(std::uint32_t window, std::int32_t target) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(window);
  return it != windows_.end() && take_one(it->second.posts, target);
}

bool Engine::take_complete(std::uint32_t window, std::int32_t origin) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(window);
  return it != windows_.end() && take_one(it->second.completes, origin);
}

bool Engine::take_marks(std::uint32_t window, std::uint64_t fence, int expected) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = windows_.find(window);
  if (it == windows_.end()) return expected == 0;
  auto m = it->second.marks.find(fence);
  const int came = m == it->second.marks.end() ? 0 : m->second;
  if (came < expected) return false;
  if (m != it->second.marks.end()) it->second.marks.erase(m);
  return true;
}

void Engine::synchronize() { std::lock_guard<std::mutex> lock(mu_); }

// ---------------------------------------------------------------- applying

void Engine::apply(std::int32_t src, std::uint32_t window, std::string_view body, std::vector<Out>& out) {
  if (body.empty()) return;
  const auto kind = static_cast<Message>(static_cast<std::uint8_t>(body[0]));
  if (kind == Message::kReply) {
    try {
      wire::Reader r(body.substr(1));
      const std::uint64_t id = r.u64();
      Reply reply;
      reply.arrived = true;
      reply.error_class = r.u32();
      reply.error = r.str();
      reply.data = r.str();
      r.end();
      replies_[id] = std::move(reply);
    } catch (const wire::BadBody&) {
      // (a reply nobody can read: its request's waiter is failed by the transport's checks)
    }
    return;
  }
  auto it = windows_.find(window);
  if (it == windows_.end()) {
    // A window freed here (or never made): an origin waiting on an answer hears why.
    if (kind == Message::kGet || kind == Message::kGetAccumulate || kind == Message::kCompareSwap || kind == Message::kUnlock ||
        kind == Message::kFlush) {
      wire::Reader r(body.substr(1));
      const std::uint64_t id = r.u64();
      out.push_back({src, window, reply_message(id, ErrorClass::kWin, "no such window at rank " + std::to_string(me_) + " (freed?)", {})});
    }
    return;
  }
  Exposed& w = it->second;
  SpinGuard guard(*w.word);  // (the node's origins touch the memory and the lock under it too)
  if (auto held = w.lock.held_back.find(src); held != w.lock.held_back.end()) {
    held->second.emplace_back(body);  // its origin waits for the lock: this waits with it
    return;
  }
  apply_to(w, src, window, body, out);
}

char* Engine::locate(Exposed& w, const Location& at, std::string* why) {
  const TypeMap& m = at.map;
  if (m.elements() == 0) return w.base;
  if (w.dynamic) {
    const auto address = static_cast<std::uintptr_t>(at.disp);
    const auto lo = address + static_cast<std::uintptr_t>(m.lo()), hi = address + static_cast<std::uintptr_t>(m.hi());
    // Within attached memory: one region, or regions attached back to back (as MPICH allows).
    std::uintptr_t covered = 0;  // the end of the run of regions from the one holding lo
    for (const auto& [base, size] : w.attached) {
      const auto b = reinterpret_cast<std::uintptr_t>(base);
      if (covered ? b == covered : lo >= b && lo < b + size) covered = b + size;
      else if (covered) break;
      if (covered && hi <= covered && lo <= hi) return reinterpret_cast<char*>(address);
    }
    *why = "address " + std::to_string(address) + " (bytes " + std::to_string(lo) + " to " + std::to_string(hi) +
           ") is not in memory attached to the dynamic window at rank " + std::to_string(me_);
    return nullptr;
  }
  const unsigned __int128 offset = static_cast<unsigned __int128>(at.disp) * w.disp_unit;
  const __int128 lo = static_cast<__int128>(offset) + m.lo(), hi = static_cast<__int128>(offset) + m.hi();
  if (offset > (static_cast<unsigned __int128>(1) << 64) || lo < 0 || hi > static_cast<__int128>(w.size)) {
    *why = "displacement " + std::to_string(at.disp) + " (x " + std::to_string(w.disp_unit) + " bytes) reaches bytes " +
           std::to_string(static_cast<long long>(lo)) + " to " + std::to_string(static_cast<long long>(hi)) + " of the " +
           std::to_string(w.size) + " bytes rank " + std::to_string(me_) + " exposes";
    return nullptr;
  }
  return w.base + static_cast<std::uint64_t>(offset);
}

void Engine::apply_to(Exposed& w, std::int32_t src, std::uint32_t window, std::string_view body, std::vector<Out>& out) {
  const auto kind = static_cast<Message>(static_cast<std::uint8_t>(body[0]));
  wire::Reader r(body.substr(1));
  std::uint64_t id = 0;
  // A request that fails here: answered with the error when it has an answer, else kept for
  // its origin's next flush, unlock or completion.
  auto fail = [&](std::uint32_t error_class, const std::string& why, bool answered) {
    if (answered) out.push_back({src, window, reply_message(id, error_class, why, {})});
    else w.errors.emplace(src, std::make_pair(error_class, why));
  };
  auto answer_sync = [&] {
    std::uint32_t error_class = 0;
    std::string why;
    if (auto e = w.errors.find(src); e != w.errors.end()) {
      error_class = e->second.first;
      why = std::move(e->second.second);
      w.errors.erase(e);
    }
    out.push_back({src, window, reply_message(id, error_class, why, {})});
  };
  try {
    switch (kind) {
      case Message::kPut:
      case Message::kAccumulate: {
        const Op op = kind == Message::kPut ? Op::kReplace : read_op(r);
        const Location at = read_location(r);
        const std::string_view data = r.view();
        r.end();
        if (data.size() != at.map.packed()) return fail(ErrorClass::kIntern, "data of another size than its target datatype", false);
        if (std::string why = op_applies(op, at.map); !why.empty()) return fail(ErrorClass::kOp, why, false);
        std::string why;
        char* mem = locate(w, at, &why);
        if (!mem) return fail(ErrorClass::kRange, why, false);
        if (op == Op::kReplace) at.map.scatter(data.data(), mem);
        else at.map.accumulate(op, data.data(), mem);
        return;
      }
      case Message::kGet:
      case Message::kGetAccumulate: {
        id = r.u64();
        const Op op = kind == Message::kGet ? Op::kNoOp : read_op(r);
        const Location at = read_location(r);
        const std::string_view data = kind == Message::kGet ? std::string_view() : r.view();
        r.end();
        if (op != Op::kNoOp && data.size() != at.map.packed())
          return fail(ErrorClass::kIntern, "data of another size than its target datatype", true);
        if (std::string why = op_applies(op, at.map); !why.empty()) return fail(ErrorClass::kOp, why, true);
        std::string why;
        char* mem = locate(w, at, &why);
        if (!mem) return fail(ErrorClass::kRange, why, true);
        std::string before(at.map.packed(), '\0');
        at.map.gather(mem, before.data());
        if (op != Op::kNoOp) at.map.accumulate(op, data.data(), mem);
        out.push_back({src, window, reply_message(id, 0, {}, before)});
        return;
      }
      case Message::kCompareSwap: {
        id = r.u64();
        const Location at = read_location(r);
        const std::string_view compare = r.view(), data = r.view();
        r.end();
        if (compare.size() != at.map.packed() || data.size() != at.map.packed())
          return fail(ErrorClass::kIntern, "data of another size than its target datatype", true);
        std::string why;
        char* mem = locate(w, at, &why);
        if (!mem) return fail(ErrorClass::kRange, why, true);
        std::string before(at.map.packed(), '\0');
        at.map.gather(mem, before.data());
        if (before == compare) at.map.scatter(data.data(), mem);
        out.push_back({src, window, reply_message(id, 0, {}, before)});
        return;
      }
      case Message::kLock: {
        const bool exclusive = r.u8() != 0;
        r.end();
        Lock& l = w.lock;
        if (!lock_free(*w.word, exclusive) || !l.waiting.empty()) {
          l.waiting.push_back({src, exclusive});
          ++w.word->queued;  // (the node's origins now wait behind it)
          l.held_back[src];  // what src sends next waits for the grant
          return;
        }
        take_lock(*w.word, exclusive, src);
        if (!exclusive) ++l.shared[src];
        return;
      }
      case Message::kUnlock: {
        id = r.u64();
        r.end();
        if (w.word->exclusive == src) w.word->exclusive = -1;
        else if (take_one(w.lock.shared, src)) --w.word->shared;
        answer_sync();
        return grant_waiting(w, window, out);
      }
      case Message::kFlush:
        id = r.u64();
        r.end();
        return answer_sync();
      case Message::kPost:
        r.end();
        ++w.posts[src];
        return;
      case Message::kComplete:
        r.end();
        ++w.completes[src];
        return;
      case Message::kFenceMark:
        ++w.marks[r.u64()];
        r.end();
        return;
      case Message::kWake: r.end(); return grant_waiting(w, window, out);
      case Message::kReply: return;  // (handled in apply)
    }
  } catch (const wire::BadBody& e) { fail(ErrorClass::kIntern, std::string("a malformed one-sided request: ") + e.what(), id != 0); }
}

// After an unlock (here, or by an origin of this node, which sends kWake): the lock goes to
// those waiting for it, in turn, as far as it can; what each one's origin sent meanwhile is
// applied now, in order (until it waits again).
void Engine::grant_waiting(Exposed& w, std::uint32_t window, std::vector<Out>& out) {
  for (;;) {
    Lock& l = w.lock;
    if (l.waiting.empty()) return;
    const Lock::Waiting next = l.waiting.front();
    if (!lock_free(*w.word, next.exclusive)) return;
    l.waiting.pop_front();
    --w.word->queued;
    take_lock(*w.word, next.exclusive, next.origin);
    if (!next.exclusive) ++l.shared[next.origin];
    std::deque<std::string> held = std::move(l.held_back[next.origin]);
    l.held_back.erase(next.origin);
    while (!held.empty()) {
      std::string body = std::move(held.front());
      held.pop_front();
      if (auto again = w.lock.held_back.find(next.origin); again != w.lock.held_back.end()) {
        again->second.push_back(std::move(body));  // it asked for the lock again and waits
        continue;
      }
      apply_to(w, next.origin, window, body, out);  // (an unlock in there grants on, recursively)
    }
  }
}

}  // namespace gridrt::rma
