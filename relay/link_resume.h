// What lets a relay-to-relay link outlive its TCP connection: a wide-area connection breaks
// (a router restarts, a NAT or firewall forgets the mapping, the line flaps) far more often
// than the relays behind it do. Each end numbers the frames it sends on the link (implicitly:
// both count the same frames in the same order, as TCP delivers them) and keeps each one
// until the other acknowledges it (LinkAck, every kAckFrames frames or kAckBytes bytes). When
// the connection breaks, the next one between the same two relays starts with a LinkHello
// each way saying how many frames that end has received; each sends again exactly the rest,
// so nothing is lost, duplicated or reordered and the processes above see only a pause.
//
// A session is one unbroken succession of connections between two relays. It ends when a
// relay restarts or gives the link up (down past its grace): its next hello then carries a
// new instance number, and the other end learns that what it had kept or received belongs
// to a session that is over (Outcome::kPeerRestarted) — the jobs that crossed it cannot go on
// whole. The same idea as TCP's sequence and acknowledgement numbers, one layer up, where a
// connection's end no longer ends the stream; here in the pure form the relay's link code
// (relay/links.cpp) drives, without sockets, tested alone.
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

class LinkResume {
 public:
  // A frame kept for sending again: its header and its body, shared with the connection's
  // write queue (never copied).
  struct Kept {
    wire::Header header;
    std::shared_ptr<const std::string> body;
  };
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

  // An acknowledgement is due after this many frames or bytes received since the last one:
  // what a sender keeps beyond what is in flight is bounded by them.
  static constexpr std::uint64_t kAckFrames = 128;
  static constexpr std::uint64_t kAckBytes = 4u << 20;

  // `instance`: this end's first session number (never 0; random_instance()); forget_peer()
  // draws the next.
  explicit LinkResume(std::uint64_t instance);

  // Sending. `f` is numbered and kept until acknowledged; its body is taken over. Returns
  // what to write on the connection, if one is up.
  const Kept& keep(wire::Frame&& f);
  // The peer has received `count` frames of this session in all: those are forgotten. False
  // (nothing changed) when `count` is more than was sent or less than was acknowledged.
  bool acknowledged(std::uint64_t count);
  const std::deque<Kept>& kept() const { return kept_; }  // oldest first: send again in order
  std::size_t kept_bytes() const { return kept_bytes_; }

  // Receiving: one frame of `bytes` body bytes came; returns the count to acknowledge when
  // an acknowledgement is due.
  std::optional<std::uint64_t> received(std::size_t bytes);
  std::uint64_t received_count() const { return received_; }

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
  void reset();  // nothing sent, kept or received

  std::uint64_t instance_;
  std::uint64_t peer_ = 0;       // the peer's session, 0 until a hello came
  std::uint64_t sent_ = 0;       // frames numbered in this session
  std::uint64_t acked_ = 0;      // of them, acknowledged (kept_ holds sent_ - acked_)
  std::uint64_t received_ = 0;   // frames received in this session
  std::uint64_t ack_frames_ = 0, ack_bytes_ = 0;  // received since the last acknowledgement
  std::deque<Kept> kept_;
  std::size_t kept_bytes_ = 0;
};

// A random session number, never 0 (for LinkResume).
std::uint64_t random_instance();

}  // namespace gridrt
