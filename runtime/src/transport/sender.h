// The sending side of the transport, pure (no sockets, no threads: its owner calls it under
// its own lock, as it calls the receiving side, receiver.h). Per stream (destination,
// context) it numbers the messages, cuts each into frames, and lets frames leave as the
// receiver's credit allows (common/flow_control.h): at most a window of credit on its way per
// stream, so a slow receiver makes its senders wait and nothing is ever dropped. A
// rendezvous message's rest waits, parked, until the receiver says it matched it; a
// synchronous send completes only then. A growing window (common/flow_control.h) learns from the
// round trips of its frames' credit, timed by the owner's clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/frame_pool.h"
#include "common/wire.h"
#include "common/flow_control.h"
#include "message_transport.h"

namespace gridrt::detail {

class Sender {
 public:
  // A frame may leave now, to `dst` (by the peer's path). It may call fail().
  using Write = std::function<void(std::int32_t dst, std::string frame)>;
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  Sender(Write write, flow::Window window, Clock clock = std::chrono::steady_clock::now)
      : write_(std::move(write)), window_(window), clock_(std::move(clock)) {}

  // The window of the streams begun from now on (those begun before keep theirs).
  void set_window(flow::Window window) { window_ = window; }
  // The window a new stream to `dst` begins with: grown where earlier ones grew.
  std::size_t window_to(std::int32_t dst) const;

  // The next message's place on stream (dst, context): its number there and the size of
  // its frames' bodies.
  struct Slot {
    std::uint64_t number = 0;
    std::size_t fragment = 0;
  };
  Slot slot(std::int32_t dst, std::uint32_t context);

  struct Outgoing {
    std::string bytes;                    // an encoded frame
    std::size_t cost = 0;                 // the credit it takes
    std::shared_ptr<RemoteOp> completes;  // on the last frame of a message
    bool whole = false;                   // the message's only frame
  };
  struct Frames {
    std::vector<Outgoing> first, rest;  // (rest: a rendezvous message's, sent once matched)
  };
  // A message's frames, encoded from `h` (job, source, destination, context and tag set):
  // without any lock, in the sender's thread, whose buffer is free once this returns. The
  // message is `head` (if any) followed by `bytes` from `buf`, copied once, into the frames.
  // `pool`: where the frames' buffers come from (written frames' kept ones), or null.
  static Frames encode(wire::Header h, const Slot& slot, std::string_view head, const void* buf, std::size_t bytes, bool synchronous,
                       bool rendezvous, const std::shared_ptr<RemoteOp>& op, FramePool* pool = nullptr);
  static Frames encode(wire::Header h, const Slot& slot, const void* buf, std::size_t bytes, bool synchronous, bool rendezvous,
                       const std::shared_ptr<RemoteOp>& op) {
    return encode(h, slot, {}, buf, bytes, synchronous, rendezvous, op);
  }
  // Queues the stream's next message; its frames leave as credit allows. Each returns
  // whether an operation completed (the owner then wakes its waiters).
  bool queue(std::int32_t dst, std::uint32_t context, Frames frames, const std::shared_ptr<RemoteOp>& op, bool synchronous,
             bool rendezvous);
  // The receiver granted `bytes` of credit back on the stream.
  bool credit(std::int32_t dst, std::uint32_t context, std::size_t bytes);
  // The receiver matched message `number` of the stream: a synchronous send completes, a
  // rendezvous message's rest leaves.
  bool matched(std::int32_t dst, std::uint32_t context, std::uint64_t number);
  // Every send queued or waiting to be matched fails with `why` (and every one after).
  void fail(const std::string& why);
  // Every send to a destination that is `gone` fails with `why`; its frames are dropped.
  void fail_to(const std::function<bool(std::int32_t)>& gone, const std::string& why);

 private:
  struct Stream {
    std::int32_t dst = -1;
    std::size_t window = 0;  // its window: as the stream began, then as grown
    bool grows = false;
    std::int64_t credit = 0;
    // The credit its frames took so far (in all) and given back, and its frames on their way,
    // each timed (the round trips of their credit). A frame judges a growing window only if credit coming back sent
    // it (clocked: the frames of a burst from full credit queue behind each other whatever
    // the window) and it left after those the window's last growth let go and a round trip
    // of frames behind them (its end past judged_after).
    std::uint64_t taken = 0, returned = 0, judged_after = 0;
    std::uint64_t unqueued = 0;  // credit of the frames judged in a row that came back unqueued
    struct InFlight {
      std::uint64_t end = 0;  // the credit taken up to its end
      std::size_t cost = 0;
      std::chrono::steady_clock::time_point left;
      bool clocked = false;
      bool may_wait = false;  // its credit may wait at the receiver (wire::kCreditMayWait): no round trip
    };
    std::deque<InFlight> in_flight;
    std::deque<Outgoing> queue;
    std::uint64_t messages = 0;                                    // begun so far: the receiver numbers them alike
    std::map<std::uint64_t, std::shared_ptr<RemoteOp>> unmatched;  // synchronous and rendezvous sends, by number
    std::map<std::uint64_t, std::vector<Outgoing>> parked;         // rendezvous ones' rest, until matched
  };
  Stream& stream(std::int32_t dst, std::uint32_t context);
  bool pump(Stream& s, bool clocked = false);  // clocked: by credit that came back
  void learn(Stream& s, bool waiting);

  // What a destination's streams learned: the least round trip of a frame's credit (which
  // tells a short path, common/flow_control.h), and the largest window grown.
  struct Destination {
    std::chrono::steady_clock::duration least_round_trip = std::chrono::steady_clock::duration::max();
    std::size_t window = 0;
  };
  Write write_;
  flow::Window window_;
  Clock clock_;
  std::map<std::int32_t, Destination> destinations_;
  std::string failure_;
  std::map<std::pair<std::int32_t, std::uint32_t>, Stream> out_;
};

}  // namespace gridrt::detail
