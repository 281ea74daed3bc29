// What moves a communicator's messages between clusters, as the channels above see it
// (channel/channel.h): sends and receives between global ranks on a context, matched as MPI
// matches (matching.h), with matched probes, cancellation and synchronous sends. The real
// one is RelayTransport (relay_transport.h: the relays and direct connections, Asio and
// TLS); tests run several ranks in one process over an in-memory one. Nothing here names a
// socket, so the layers above never see how the bytes travel.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <string_view>

#include "matching.h"

namespace gridrt::detail {

// One remote send or receive; the transport fills in the outcome.
struct RemoteOp {
  Envelope pattern;     // receive: what it waits for (source kAnySource, tag < 0: any)
  void* buf = nullptr;  // receive: where the data goes
  std::size_t capacity = 0;
  bool done = false;
  std::string error;  // set instead of done when it failed
  // Receive, once matched:
  Envelope got;            // what matched
  std::size_t bytes = 0;   // bytes delivered into buf
  std::size_t total = 0;   // the message's size; more than `capacity`: truncated (MPI_ERR_TRUNCATE),
  bool truncated = false;  // and only the first `capacity` bytes (at most) were delivered
  // Send:
  bool synchronous = false;  // completes once the receiver matched it, not when written
  bool written = false;      // its last fragment left
  bool matched = false;      // the receiver said it matched (synchronous sends only)
};

// A message the receiving side is taking in: matched as soon as its first fragment is here
// (to a posted receive, or by a matched probe); until then the fragments wait here.
struct Arrival {
  Envelope env;
  std::size_t total = 0;          // the whole message's size, known from its first fragment
  std::uint64_t number = 0;       // its place among the messages of its stream (source, context)
  bool synchronous = false;       // its sender waits to hear that it was matched
  bool rendezvous = false;        // its rest comes once it is matched
  std::vector<std::string> data;  // fragments not yet delivered (while nobody took it), each as it came
  std::size_t withheld = 0;       // flow-control credit owed for them, granted when delivered
  std::size_t buffered = 0;       // credit granted already for them (the receiver's unexpected budget)
  std::size_t filled = 0;         // bytes delivered into the bound receive
  std::shared_ptr<RemoteOp> bound;
  bool complete = false;  // its last fragment is here
};

// One-sided communication's traffic (rma/engine.h) travels on contexts with this bit set:
// messages that no receive matches, each fragment handed as it comes to the one-sided sink
// on the transport's own thread (so that they are served while the application computes;
// the engine assembles them, or applies a large put as it comes), never as rendezvous, their
// credit granted as they arrive.
inline constexpr std::uint32_t kOneSidedContext = 0x80000000u;
// One fragment of a one-sided message; a stream's fragments come in order, one message's
// after another's.
struct OneSidedPart {
  std::string_view bytes;
  std::uint64_t total = 0;  // the whole message's size, as its first fragment says
  bool first = true, last = true;
};
using OneSidedSink = std::function<void(std::int32_t source, std::uint32_t context, const OneSidedPart& part)>;
// Told, on the transport's thread, when ranks are lost (a lost cluster's): they send nothing more.
using LossSink = std::function<void(const std::function<bool(std::int32_t rank)>& gone)>;

class MessageTransport {
 public:
  virtual ~MessageTransport() = default;

  // Sends a copy of `bytes` from `buf` (free again when this returns). The op completes
  // when the message has left, or, `synchronous`, once the receiver has also matched it.
  virtual std::shared_ptr<RemoteOp> send(std::int32_t dst, std::uint32_t context, std::int32_t tag, const void* buf, std::size_t bytes,
                                         bool synchronous = false) = 0;
  // The same for a message of `head` followed by `bytes` from `buf` (one-sided messages:
  // an operation's head and the origin's data, not first copied together), tag 0.
  virtual std::shared_ptr<RemoteOp> send_with_head(std::int32_t dst, std::uint32_t context, std::string_view head, const void* buf,
                                                   std::size_t bytes) {
    std::string whole(head);
    whole.append(static_cast<const char*>(buf), bytes);
    return send(dst, context, 0, whole.data(), whole.size());
  }
  // Posts a receive (src may be kAnySource, tag kAnyTag).
  virtual std::shared_ptr<RemoteOp> recv(void* buf, std::size_t capacity, std::int32_t src, std::uint32_t context, std::int32_t tag) = 0;
  // A matched probe: the oldest message here that a receive (src, context, tag) would match,
  // taken so that no other receive can match it; receive it with mrecv. Null if none came.
  virtual std::shared_ptr<Arrival> improbe(std::int32_t src, std::uint32_t context, std::int32_t tag) = 0;
  // A probe: that message's envelope and size, left where it is.
  virtual bool iprobe(std::int32_t src, std::uint32_t context, std::int32_t tag, Envelope* env, std::size_t* total) = 0;
  virtual std::shared_ptr<RemoteOp> mrecv(const std::shared_ptr<Arrival>& message, void* buf, std::size_t capacity) = 0;
  // Withdraws a receive that no message has matched yet (its buffer may then go); false if
  // one did (it then completes as usual).
  virtual bool cancel(const std::shared_ptr<RemoteOp>& op) = 0;
  // Whether op completed; throws std::runtime_error naming why when it failed.
  virtual bool test(const std::shared_ptr<RemoteOp>& op) = 0;
  // Blocks until op completes (never spinning); throws as test does.
  virtual void wait(const std::shared_ptr<RemoteOp>& op) = 0;
  // A count of what happened here (operations completed, messages begun to arrive), and a
  // wait, without spinning, until it passes `seen` or `at_most` has gone by: a waiter with
  // nothing but remote work sleeps here instead of polling.
  virtual std::uint64_t activity() = 0;
  virtual void await_activity(std::uint64_t seen, std::chrono::microseconds at_most) = 0;
  // Where one-sided messages go from now on (set before any can come: before the first
  // window is made), and who hears of lost ranks. Neither may call back into the
  // transport but to send.
  virtual void set_one_sided_sink(OneSidedSink sink, LossSink lost = {}) = 0;
};

}  // namespace gridrt::detail
