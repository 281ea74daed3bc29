#include "relay/link_resume.h"

#include <openssl/rand.h>

#include <stdexcept>

namespace gridrt {

std::uint64_t random_instance() {
  std::uint64_t v = 0;
  while (v == 0)
    if (RAND_bytes(reinterpret_cast<unsigned char*>(&v), sizeof v) != 1) throw std::runtime_error("no random bytes for a link session");
  return v;
}

LinkResume::LinkResume(std::uint64_t instance) : instance_(instance) {
  if (instance == 0) throw std::invalid_argument("a link session's number is never 0");
}

const LinkResume::Kept& LinkResume::keep(wire::Frame&& f) {
  f.header.length = static_cast<std::uint32_t>(f.body.size());
  kept_bytes_ += wire::kHeaderSize + f.body.size();
  kept_.push_back({f.header, std::make_shared<const std::string>(std::move(f.body))});
  ++sent_;
  return kept_.back();
}

bool LinkResume::acknowledged(std::uint64_t count) {
  if (count > sent_ || count < acked_) return false;
  for (; acked_ < count; ++acked_) {
    kept_bytes_ -= wire::kHeaderSize + kept_.front().body->size();
    kept_.pop_front();
  }
  return true;
}

std::optional<std::uint64_t> LinkResume::received(std::size_t bytes) {
  ++received_;
  ++ack_frames_;
  ack_bytes_ += wire::kHeaderSize + bytes;
  if (ack_frames_ < kAckFrames && ack_bytes_ < kAckBytes) return std::nullopt;
  ack_frames_ = ack_bytes_ = 0;
  return received_;
}

LinkHello LinkResume::hello(const std::string& cluster) const { return {cluster, instance_, peer_, peer_ ? received_ : 0}; }

LinkResume::Answer LinkResume::on_hello(const LinkHello& peer) {
  if (peer_ == 0) {
    // The first connection of our session. Whatever the peer remembers of an earlier one of
    // ours, it learns from our hello that it is over; what we kept meanwhile is all new.
    peer_ = peer.instance;
    return {Outcome::kFirst, ""};
  }
  // The session goes on: the peer knows ours, or it never got our hello on the connection
  // before (that broke first), in which case it received nothing of ours either.
  if (peer.instance == peer_ && (peer.peer_instance == instance_ || peer.peer_instance == 0)) {
    if (!acknowledged(peer.received))
      return {Outcome::kRefused, "it says it received " + std::to_string(peer.received) + " frames, of which " +
                                     std::to_string(sent_) + " were sent and " + std::to_string(acked_) + " acknowledged"};
    ack_frames_ = ack_bytes_ = 0;
    return {Outcome::kResumed, ""};
  }
  // The peer began a session of its own (it restarted, or gave the link up): ours is over,
  // and a new one begins with this connection. (Our number stays: the peer, whose session is
  // new, knows none of ours; our hello tells it this one.)
  reset();
  peer_ = peer.instance;
  return {Outcome::kPeerRestarted, "it restarted or gave the link up"};
}

void LinkResume::forget_peer() {
  reset();
  peer_ = 0;
  // A new number: the peer, should it still hold the old session, learns from our next
  // hello that it is over.
  std::uint64_t next = random_instance();
  while (next == instance_) next = random_instance();
  instance_ = next;
}

void LinkResume::reset() {
  sent_ = acked_ = received_ = ack_frames_ = ack_bytes_ = 0;
  kept_.clear();
  kept_bytes_ = 0;
}

}  // namespace gridrt
