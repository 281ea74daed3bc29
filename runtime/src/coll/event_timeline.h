// A schedule of messages played in time order, frame by frame, over the grid's lines: the
// timeline of the flat algorithms, whose streams share the lines at once.
//
// Timeline (costs.h) serves a line first come, first served in the order an algorithm adds
// its messages, each message whole. The relays do neither: they forward frames (models/
// flow_window.h) in the order they reach them, so where a stream's message is larger than
// its window, the stream stops for credit after a window's frames and the other streams'
// frames go in between; the line is shared frame by frame among the streams with frames
// waiting (as any set of window-limited streams through one FIFO queue share it), while a
// message the window holds whole is queued whole, first come, first served. A line serves
// messages in the order they are sent in time, not in the order an algorithm's loops add
// them: in a pairwise exchange the members' rounds drift apart. And the receiver's credit
// goes back on the line the other way, behind the frames queued there: in an all-to-all
// every line carries data both ways. Measured over 3 sites x 2 at 10 ms, 100 Mbit/s, the
// flat all-to-all of 2 MiB took 1191 ms with the default window of 512 KiB and 1048 ms with
// one of 8 MiB that holds its messages whole; first come, first served predicted 1031 ms
// for both, this timeline 1249 and 1061 (docs/models.md, "Predictions").
//
// So here an algorithm adds its messages as a graph (each message ready when another
// arrives, or when the latest of several has: latest()), and play() runs them as events in
// time order: a sender hands its messages over one after the other, in the order added, each
// taking its gap inside the cluster; a message between clusters is cut into its stream's
// frames, each queued on its line as the stream's credit lets it, each occupying the line
// for its share of the message's gap g(m) (so a message alone takes g(m), as in Timeline);
// the receiver grants a frame's credit back as it arrives, a frame of g(0) queued on the
// line back; the message arrives L after its last frame left, and its send completes (it is
// handed over whole: `handed`) when its last frame is given credit. Alone on its line, a message
// costs what Timeline says (credit back R = 2 (L + g(0)) after a frame left).
//
// The graph is kept whole, so a schedule is played so only up to kMostFrames frames (the
// flat collectives of the grids jobs here run on: a 64-process all-to-all of 1 MiB blocks
// has 64,512); larger ones (gridbench --predict-only of 100 x 100) are played by Timeline
// (played(), below).
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <queue>
#include <type_traits>
#include <utility>
#include <vector>

#include "costs.h"

namespace gridrt::detail {

class EventTimeline {
 public:
  // A point of the schedule: a message's arrival, or the latest of others. kStart: the
  // collective's start, time 0.
  using Time = int;
  static constexpr Time kStart = 0;

  explicit EventTimeline(const CostShape& s);
  // A message of m bytes from member `from` of part a (-1: its sender's time does not
  // matter) to member `to` of part b (-1: b's leader), ready once `ready` is: its arrival.
  // `handed`, where given, is set to the point its sender has handed it over whole (its
  // last frame given credit; inside a cluster, its gap after it began): where a send
  // completes. `posted`: when the receiver posts its receive, which a rendezvous (a message
  // between clusters above models::kRendezvousAbove) waits for before its rest goes, its
  // Matched going back then (kStart: posted from the start).
  Time send(int from, int a, int b, double m, Time ready, int to = -1, Time* handed = nullptr, Time posted = kStart);
  // The later of x and y.
  Time latest(Time x, Time y);
  // Plays the schedule; then at() says when each point was reached.
  void play();
  double at(Time t) const { return nodes_[t].time; }

 private:
  struct Node {
    double time = 0;
    bool reached = false;
    int waiting = 0;        // points not yet reached that this one waits for
    int message = -1;       // index in messages_, or -1 (a join)
    std::vector<int> next;  // points waiting for this one
  };
  struct Message {
    int from, to, a, b;
    double m;
    int node;             // its arrival
    int handed = -1;      // the point it is handed over whole, where asked for
    int posted = kStart;  // the point its receive is posted
    int stream = -1;
    bool ready = false;
    bool gate_open = false;  // a rendezvous's rest: its Matched is back
  };
  struct Sender {
    std::vector<int> messages;  // in the order added
    std::size_t next = 0;
    double free = 0;
    bool start_due = false;  // its next message's start is an event to come
  };
  struct Frame {
    int message;
    int index;
    double cost, line_time;
    bool last;
    bool grant = false;    // the receiver's credit for it on its way back
    bool matched = false;  // (a grant) carrying its rendezvous's Matched
  };
  struct Stream {
    int line;
    double credit;
    std::deque<Frame> waiting;  // not yet on the line, in order
  };
  struct Line {
    std::deque<std::pair<int, Frame>> queue;  // (stream, frame), the head on the line
  };
  // What an event's id names: kReach a point, kStart a sender (its next message may
  // begin), kLineDone a line, kGrant a grant (grants_), kCredit a stream, kGate a message.
  enum class Kind { kReach, kStart, kLineDone, kGrant, kCredit, kGate };
  struct Event {
    double t;
    long seq;
    Kind kind;
    int id;
    double cost;  // kCredit's
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  void schedule(double t, Kind kind, int id, double cost = 0);
  void reach(int node, double t);
  void pump(int sender, double now);
  void begin(int message, double t);
  void push(int stream, double now);
  void serve(int line, double now);
  void line_done(int line, double now);
  void enqueue(int line, int stream, const Frame& f, double now);

  const CostShape& s_;
  std::vector<Node> nodes_;
  std::vector<Message> messages_;
  std::vector<Sender> senders_;  // by member
  std::vector<Stream> streams_;
  std::map<std::pair<int, int>, int> stream_of_;  // (from, to) member -> index
  std::vector<Line> lines_;
  std::vector<Frame> grants_;         // by the id of their kGrant event
  std::multimap<int, int> unposted_;  // rendezvous whose first frame is in, by the point their receive is posted
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  long seq_ = 0;
};

// How many frames a schedule may have to be played in time order: 64,512 (the all-to-all
// above) play in about 40 ms here, once per (operation, size, root) a job calls.
constexpr double kMostFrames = 1 << 16;

// Plays `schedule`, a function of a timeline that adds an algorithm's messages to it (its
// `send` and `latest`, over its Time) and returns its last point: in time order
// (EventTimeline) where its `messages` of at most `largest` bytes each make at most
// kMostFrames frames, else first come, first served (Timeline, whose Time is the time).
// Returns when the last point is reached.
template <typename Schedule> double played(const CostShape& s, double messages, double largest, Schedule&& schedule) {
  if (messages * models::frames_in(largest, s.window) <= kMostFrames) {
    EventTimeline ev(s);
    const EventTimeline::Time last = schedule(ev);
    ev.play();
    return ev.at(last);
  }
  Timeline tl(s);
  return schedule(tl);
}

// Synchronous rounds over all members (dissemination, ring, pairwise exchange, doubling
// scans): in round k = 1 .. rounds every member i whose peer to(i, k) is not -1 sends it
// m bytes once its own previous round is done; a member's round is done when what it
// receives in it has arrived and what it sends has been handed over. Returns when the last
// member is done.
template <typename To> double rounds_cost(const CostShape& s, int rounds, To&& to, double m) {
  return played(s, static_cast<double>(rounds) * s.size(), m, [&](auto& tl) {
    using Time = typename std::decay_t<decltype(tl)>::Time;
    std::vector<Time> ready(s.size(), Time{}), next;
    for (int k = 1; k <= rounds; ++k) {
      next = ready;
      for (int i = 0; i < s.size(); ++i) {
        const int j = to(i, k);
        if (j < 0) continue;
        Time handed{};
        next[j] = tl.latest(next[j], tl.send(i, s.part_of[i], s.part_of[j], m, ready[i], j, &handed));
        next[i] = tl.latest(next[i], handed);
      }
      ready = next;
    }
    return latest_of(tl, ready);
  });
}

// MPICH's binomial trees (binomial_down, binomial_up) over all members of the shape from
// `root`, their messages played over its lines; bytes(subtree) is what an edge carries.
template <typename Bytes> double binomial_down_cost(const CostShape& s, int root, Bytes&& bytes) {
  return played(s, s.size() - 1, bytes(s.size() / 2), [&](auto& tl) {
    using Time = typename std::decay_t<decltype(tl)>::Time;
    return binomial_down(s.size(), tl, [&](int rel_from, int rel_to, int subtree, Time ready) {
      const int from = (rel_from + root) % s.size(), to = (rel_to + root) % s.size();
      return tl.send(from, s.part_of[from], s.part_of[to], bytes(subtree), ready, to);
    });
  });
}
// Up, the parent's receives posted `in_turn` (each once the child before has arrived: a
// reduction folds its children in order) or all at once (a gather).
template <typename Bytes> double binomial_up_cost(const CostShape& s, int root, Bytes&& bytes, bool in_turn) {
  return played(s, s.size() - 1, bytes(s.size() / 2), [&](auto& tl) {
    using Time = typename std::decay_t<decltype(tl)>::Time;
    return binomial_up(s.size(), tl, [&](int rel_from, int rel_to, int subtree, Time ready, Time posted) {
      const int from = (rel_from + root) % s.size(), to = (rel_to + root) % s.size();
      return tl.send(from, s.part_of[from], s.part_of[to], bytes(subtree), ready, to, nullptr, in_turn ? posted : Time{});
    });
  });
}

}  // namespace gridrt::detail
