#include "common/link_resume.h"

#include <openssl/rand.h>

#include <stdexcept>

namespace gridrt {

std::uint64_t random_instance() {
  std::uint64_t v = 0;
  while (v == 0)
    if (RAND_bytes(reinterpret_cast<unsigned char*>(&v), sizeof v) != 1) throw std::runtime_error("no random bytes for a link session");
  return v;
}

// ---------------------------------------------------------------- the sending half

const KeptFrames::Kept& KeptFrames::keep(wire::Frame&& f) {
  f.header.length = static_cast<std::uint32_t>(f.body.size());
  bytes_ += wire::kHeaderSize + f.body.size();
  kept_.push_back({f.header, std::make_shared<const std::string>(std::move(f.body)), false});
  ++sent_;
  return kept_.back();
}

const KeptFrames::Kept& KeptFrames::keep_encoded(std::string&& bytes) {
  bytes_ += bytes.size();
  kept_.push_back({wire::Header{}, std::make_shared<const std::string>(std::move(bytes)), true});
  ++sent_;
  return kept_.back();
}

bool KeptFrames::acknowledged(std::uint64_t count) {
  if (count > sent_ || count < acked_) return false;
  for (; acked_ < count; ++acked_) {
    const Kept& k = kept_.front();
    bytes_ -= (k.encoded ? 0 : wire::kHeaderSize) + k.body->size();
    kept_.pop_front();
  }
  return true;
}

void KeptFrames::clear() {
  sent_ = acked_ = 0;
  kept_.clear();
  bytes_ = 0;
}

// ---------------------------------------------------------------- the receiving half

std::optional<std::uint64_t> ReceivedCount::received(std::size_t bytes) {
  ++received_;
  ++since_frames_;
  since_bytes_ += wire::kHeaderSize + bytes;
  if (since_frames_ < kAckFrames && since_bytes_ < kAckBytes) return std::nullopt;
  acknowledged_now();
  return received_;
}

// ---------------------------------------------------------------- a relay link's session

LinkResume::LinkResume(std::uint64_t instance) : instance_(instance) {
  if (instance == 0) throw std::invalid_argument("a link session's number is never 0");
}

LinkHello LinkResume::hello(const std::string& cluster) const { return {cluster, instance_, peer_, peer_ ? in_.count() : 0}; }

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
    if (!out_.acknowledged(peer.received))
      return {Outcome::kRefused, "it says it received " + std::to_string(peer.received) + " frames, of which " +
                                     std::to_string(out_.sent()) + " were sent and " + std::to_string(out_.acked()) + " acknowledged"};
    in_.acknowledged_now();
    return {Outcome::kResumed, ""};
  }
  // The peer began a session of its own (it restarted, or gave the link up): ours is over,
  // and a new one begins with this connection. (Our number stays: the peer, whose session is
  // new, knows none of ours; our hello tells it this one.)
  out_.clear();
  in_.clear();
  peer_ = peer.instance;
  return {Outcome::kPeerRestarted, "it restarted or gave the link up"};
}

void LinkResume::forget_peer() {
  out_.clear();
  in_.clear();
  peer_ = 0;
  // A new number: the peer, should it still hold the old session, learns from our next
  // hello that it is over.
  std::uint64_t next = random_instance();
  while (next == instance_) next = random_instance();
  instance_ = next;
}

}  // namespace gridrt
