// What lets a connection's stream of frames outlive the connection: a wide-area connection
// breaks (a router restarts, a NAT or firewall forgets the mapping, the line flaps) far more
// often than the processes at its ends do. Each end numbers the frames it sends (implicitly:
// both count the same frames in the same order, as TCP delivers them) and keeps each one
// until the other acknowledges it (LinkAck, every kAckFrames frames or kAckBytes bytes).
// When the connection breaks, each end says how many frames it has received, and the other
// sends exactly the rest again, on a new connection or another path: nothing is lost,
// duplicated or reordered, and what runs above sees a pause. The same idea as TCP's
// sequence and acknowledgement numbers, one layer up, where a connection's end no longer
// ends the stream.
//
// KeptFrames is the sending half, ReceivedCount the receiving one; a direct connection
// between two processes uses both (runtime/src/transport/peer_paths.h), and LinkResume adds
// to them the session of a relay link (relay/links.cpp), resumed by LinkHellos on the next
// connection between the same two relays. Pure: no sockets, tested alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "common/messages.h"
#include "common/wire.h"

namespace gridrt {

// An acknowledgement is due after this many frames or bytes received since the last one:
// what a sender keeps beyond what is in flight is bounded by them. Small, for the caches:
// with 4 MiB the relay path streamed about a tenth slower than without keeping anything
// (its kept bodies crowd out the ones being written); with 1 MiB no slower beyond noise,
// for a 48-byte LinkAck per MiB the other way (bench/relay.sh, docs/benchmarks.md).
inline constexpr std::uint64_t kAckFrames = 128;
inline constexpr std::uint64_t kAckBytes = 1u << 20;

// The frames sent and not yet acknowledged, oldest first.
class KeptFrames {
 public:
  // A frame kept for sending again, shared with the connection's write queue (never copied):
  // its header and body, or (`encoded`) the whole encoded frame in `body`.
  struct Kept {
    wire::Header header;
    std::shared_ptr<const std::string> body;
    bool encoded = false;
  };
  // Numbers `f` and keeps it; its body is taken over. Returns what to write.
  const Kept& keep(wire::Frame&& f);
  // The same for a frame already encoded (header and body in one string).
  const Kept& keep_encoded(std::string&& bytes);
  // The peer has received `count` frames in all: those are forgotten. False (nothing
  // changed) when `count` is more than was sent or less than was acknowledged.
  bool acknowledged(std::uint64_t count);
  const std::deque<Kept>& kept() const { return kept_; }
  std::size_t bytes() const { return bytes_; }
  std::uint64_t sent() const { return sent_; }
  std::uint64_t acked() const { return acked_; }
  void clear();  // nothing sent or kept

 private:
  std::uint64_t sent_ = 0, acked_ = 0;  // kept_ holds sent_ - acked_ frames
  std::deque<Kept> kept_;
  std::size_t bytes_ = 0;
};

// The frames received, and when to acknowledge them.
class ReceivedCount {
 public:
  // One frame of `bytes` body bytes came; returns the count to acknowledge when an
  // acknowledgement is due.
  std::optional<std::uint64_t> received(std::size_t bytes);
  std::uint64_t count() const { return received_; }
  void clear() { received_ = since_frames_ = since_bytes_ = 0; }
  void acknowledged_now() { since_frames_ = since_bytes_ = 0; }

 private:
  std::uint64_t received_ = 0, since_frames_ = 0, since_bytes_ = 0;
};

// A relay link's session: one unbroken succession of connections between two relays. It ends
// when a relay restarts or gives the link up (down past its grace): its next hello then
// carries a new instance number, and the other end learns that what it had kept or received
// belongs to a session that is over (Outcome::kPeerRestarted) — the jobs that crossed it
// cannot go on whole.
class LinkResume {
 public:
  using Kept = KeptFrames::Kept;
  enum class Outcome {
    kFirst,          // the first connection of a session: everything kept is sent
    kResumed,        // the session goes on: what the peer has not received is sent again
    kPeerRestarted,  // the peer's session is a new one: ours is over, nothing kept any more
    kRefused,        // the peer's counts cannot be true: the connection is dropped
  };
  struct Answer {
    Outcome outcome;
    std::string why;  // kRefused, kPeerRestarted: what was seen
  };

  // `instance`: this end's first session number (never 0; random_instance()); forget_peer()
  // draws the next.
  explicit LinkResume(std::uint64_t instance);

  // Sending: see KeptFrames.
  const Kept& keep(wire::Frame&& f) { return out_.keep(std::move(f)); }
  bool acknowledged(std::uint64_t count) { return out_.acknowledged(count); }
  const std::deque<Kept>& kept() const { return out_.kept(); }  // oldest first: send again in order
  std::size_t kept_bytes() const { return out_.bytes(); }

  // Receiving: see ReceivedCount.
  std::optional<std::uint64_t> received(std::size_t bytes) { return in_.received(bytes); }
  std::uint64_t received_count() const { return in_.count(); }

  // The hello this end sends on a new connection, then what the peer's says. After any
  // outcome but kRefused, kept() is what to send, in order, before anything new.
  LinkHello hello(const std::string& cluster) const;
  Answer on_hello(const LinkHello& peer);

  // Ends the session (a link down past its grace): everything kept and counted is dropped,
  // and this end's next hello opens a new session.
  void forget_peer();

  std::uint64_t instance() const { return instance_; }
  bool knows_peer() const { return peer_ != 0; }

 private:
  std::uint64_t instance_;
  std::uint64_t peer_ = 0;  // the peer's session, 0 until a hello came
  KeptFrames out_;
  ReceivedCount in_;
};

// A random session number, never 0 (for LinkResume).
std::uint64_t random_instance();

}  // namespace gridrt
