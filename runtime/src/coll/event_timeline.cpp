#include "event_timeline.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gridrt::detail {

EventTimeline::EventTimeline(const CostShape& s) : s_(s), nodes_(1), senders_(s.size()), lines_(s.lines()) {}

EventTimeline::Time EventTimeline::send(int from, int a, int b, double m, Time ready, int to, Time* handed, Time posted) {
  const int node = static_cast<int>(nodes_.size());
  nodes_.emplace_back();
  nodes_[node].message = static_cast<int>(messages_.size());
  nodes_[node].waiting = 1;
  nodes_[ready].next.push_back(node);
  messages_.push_back(Message{from, to >= 0 ? to : s_.leader(b), a, b, m, node});
  messages_.back().posted = posted;
  if (from >= 0) senders_[from].messages.push_back(nodes_[node].message);
  if (handed) {
    *handed = static_cast<int>(nodes_.size());
    nodes_.emplace_back();
    nodes_.back().waiting = 1;  // reached by an event, not by others
    messages_.back().handed = *handed;
  }
  return node;
}

EventTimeline::Time EventTimeline::latest(Time x, Time y) {
  if (x == y || y == kStart) return x;
  if (x == kStart) return y;
  const int node = static_cast<int>(nodes_.size());
  nodes_.emplace_back();
  nodes_[node].waiting = 2;
  nodes_[x].next.push_back(node);
  nodes_[y].next.push_back(node);
  return node;
}

void EventTimeline::schedule(double t, Kind kind, int id, double cost) { events_.push(Event{t, seq_++, kind, id, cost}); }

void EventTimeline::play() {
  for (Node& n : nodes_) n.reached = false;
  reach(kStart, 0);
  while (!events_.empty()) {
    const Event e = events_.top();
    events_.pop();
    switch (e.kind) {
      case Kind::kReach: reach(e.id, e.t); break;
      case Kind::kStart:
        senders_[e.id].start_due = false;
        pump(e.id, e.t);
        break;
      case Kind::kLineDone: line_done(e.id, e.t); break;
      case Kind::kGrant: {
        Frame& g = grants_[e.id];
        const Message& mm = messages_[g.message];
        // A rendezvous's first frame is in: its Matched goes back with its credit where the
        // receive is posted, else once it is (reach()).
        if (g.index == 0 && models::goes_as_rendezvous(mm.m)) {
          if (nodes_[mm.posted].reached) g.matched = true;
          else unposted_.emplace(mm.posted, g.message);
        }
        enqueue(s_.line_of(mm.b, mm.a), mm.stream, g, e.t);
        break;
      }
      case Kind::kCredit:
        streams_[e.id].credit += e.cost;
        push(e.id, e.t);
        break;
      case Kind::kGate:
        messages_[e.id].gate_open = true;
        push(messages_[e.id].stream, e.t);
        break;
    }
  }
  // Every point waits only for points added before it, so all are reached: one that is not
  // is a fault here, not a time.
  for (const Node& n : nodes_)
    if (!n.reached) throw std::logic_error("EventTimeline: a point of the schedule was never reached");
}

// A point reached at t: those waiting only for it are reached too (a join, at once) or
// become ready (a message).
void EventTimeline::reach(int node, double t) {
  std::vector<int> now{node};
  while (!now.empty()) {
    const int n = now.back();
    now.pop_back();
    nodes_[n].time = t;
    nodes_[n].reached = true;
    // Rendezvous waiting for this receive: their Matched goes back now.
    const auto [first, end] = unposted_.equal_range(n);
    for (auto it = first; it != end; ++it) {
      const Message& mm = messages_[it->second];
      Frame matched{it->second, 0, 0, s_.pair(mm.a, mm.b).gap(0), false};
      matched.grant = matched.matched = true;
      enqueue(s_.line_of(mm.b, mm.a), mm.stream, matched, t);
    }
    unposted_.erase(first, end);
    for (int w : nodes_[n].next) {
      if (--nodes_[w].waiting > 0) continue;
      const int msg = nodes_[w].message;
      if (msg < 0) {
        now.push_back(w);
        continue;
      }
      Message& mm = messages_[msg];
      mm.ready = true;
      if (mm.from < 0) begin(msg, t);
      else pump(mm.from, t);
    }
  }
}

// A sender hands its messages over in the order added, each once it is ready and the one
// before is handed over (its gap inside the cluster after it began).
void EventTimeline::pump(int sender, double now) {
  Sender& sd = senders_[sender];
  while (!sd.start_due && sd.next < sd.messages.size() && messages_[sd.messages[sd.next]].ready) {
    if (sd.free > now) {
      sd.start_due = true;
      schedule(sd.free, Kind::kStart, sender);
      return;
    }
    const Message& mm = messages_[sd.messages[sd.next]];
    sd.free = now + s_.handover(mm.a, mm.b, mm.m);
    begin(sd.messages[sd.next++], now);
  }
}

// A message handed over at t: inside a cluster it arrives after its gap and latency; between
// clusters its frames join its stream's.
void EventTimeline::begin(int message, double t) {
  Message& mm = messages_[message];
  const models::PLogP& p = s_.pair(mm.a, mm.b);
  const int line = s_.line_of(mm.a, mm.b);
  if (line < 0) {  // inside a cluster: no line shared, no window
    schedule(t + p.gap(mm.m) + latency_after(p, t), Kind::kReach, mm.node);
    if (mm.handed >= 0) schedule(mm.from >= 0 ? senders_[mm.from].free : t, Kind::kReach, mm.handed);
    return;
  }
  const std::pair<int, int> key{mm.from >= 0 ? mm.from : s_.leader(mm.a), mm.to};
  auto it = stream_of_.find(key);
  if (it == stream_of_.end()) {
    it = stream_of_.emplace(key, static_cast<int>(streams_.size())).first;
    streams_.push_back(Stream{line, s_.pair_window[mm.a * s_.parts() + mm.b].window, {}});
  }
  mm.stream = it->second;
  const double fragment = static_cast<double>(models::fragment_bytes(static_cast<std::size_t>(s_.window)));
  const int frames = static_cast<int>(models::frames_in(mm.m, s_.window));
  const double line_time = p.gap(mm.m) / frames;
  double sent = 0;
  for (int k = 0; k < frames; ++k) {
    const double body = std::min(fragment, mm.m - sent);
    sent += body;
    streams_[mm.stream].waiting.push_back(Frame{message, k, body + static_cast<double>(models::kFrameCost), line_time, k == frames - 1});
  }
  push(mm.stream, t);
}

// A stream's waiting frames go onto its line as its credit lets them, in order; a
// rendezvous's second frame waits for the receiver's Matched, a round trip after the first
// left (models::FlowWindow).
void EventTimeline::push(int stream, double now) {
  Stream& st = streams_[stream];
  while (!st.waiting.empty()) {
    const Frame& f = st.waiting.front();
    const Message& mm = messages_[f.message];
    if (f.index == 1 && models::goes_as_rendezvous(mm.m) && !mm.gate_open) break;
    if (st.credit < f.cost) break;
    st.credit -= f.cost;
    if (f.last && mm.handed >= 0) schedule(now, Kind::kReach, mm.handed);
    enqueue(st.line, stream, f, now);
    st.waiting.pop_front();
  }
}

void EventTimeline::enqueue(int line, int stream, const Frame& f, double now) {
  Line& ln = lines_[line];
  ln.queue.emplace_back(stream, f);
  if (ln.queue.size() == 1) serve(line, now);
}

void EventTimeline::serve(int line, double now) { schedule(now + lines_[line].queue.front().second.line_time, Kind::kLineDone, line); }

// What was on the line has left. A frame: the last of its message arrives L later; its
// receiver grants its credit back as it arrives (and, for the first of a rendezvous whose
// receive is posted, its Matched), a frame that is queued on the line back (L + g(0) after: arrived and handed to
// the receiver's relay), behind that line's own frames, and occupies it for g(0). A grant:
// it arrives L later. Alone, a frame's credit is back R = 2 (L + g(0)) after it left, as
// models::FlowWindow has it; on a line busy the other way, later: in an all-to-all each
// line carries data both ways, and a window's credit waits behind the frames going back.
void EventTimeline::line_done(int line, double now) {
  Line& ln = lines_[line];
  const auto [stream, f] = ln.queue.front();
  ln.queue.pop_front();
  const Message& mm = messages_[f.message];
  const models::PLogP& p = s_.pair(mm.a, mm.b);
  if (f.grant) {
    if (f.cost > 0) schedule(now + p.L, Kind::kCredit, stream, f.cost);
    if (f.matched) schedule(now + p.L, Kind::kGate, f.message);
  } else {
    if (f.last) schedule(now + p.L, Kind::kReach, mm.node);
    Frame g = f;
    g.grant = true;
    g.line_time = p.gap(0);
    schedule(now + p.L + p.gap(0), Kind::kGrant, static_cast<int>(grants_.size()));
    grants_.push_back(g);
  }
  if (!ln.queue.empty()) serve(line, now);
}

}  // namespace gridrt::detail
