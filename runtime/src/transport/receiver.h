// The receiving side of a transport (message_transport.h), apart from how its bytes
// travel: fragments in, messages matched to receives (matching.h), matched probes,
// truncation, and the word back to the sender (Matched) of a synchronous message once it is
// matched, and of a rendezvous one, whose rest it then sends.
//
// Flow control: the credit of what a receive takes is granted back as it takes it. What no
// receive has taken yet (unexpected messages) is buffered here and its credit granted at
// once, as long as all such data stays within `unexpected_budget` bytes; beyond that credit
// is withheld until receives take the data, and its senders wait. Large messages come as
// rendezvous (only their first bytes until matched), so that an unmatched large message
// never holds up the messages behind it on its stream: MPI lets a later message be
// received first.
//
// Pure: no socket, no lock, no thread; its owner locks around every call and says, through
// Hooks, how credit and acknowledgements reach the sender.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "message_transport.h"

namespace gridrt::detail {

class Receiver {
 public:
  struct Hooks {
    // `bytes` more of the stream from.source on from.context were taken by the application.
    // `may_wait`: the frame said its credit may wait (wire::kCreditMayWait).
    std::function<void(const Envelope& from, std::size_t bytes, bool may_wait)> grant;
    // Message `number` of that stream, a synchronous one, was matched to a receive.
    std::function<void(const Envelope& from, std::uint64_t number)> matched;
  };
  static constexpr std::size_t kUnexpectedBudget = 32u << 20;
  static constexpr std::size_t kTakeWholeFrom = 16u << 10;  // (Fragment::owner)
  explicit Receiver(Hooks hooks, std::size_t unexpected_budget = kUnexpectedBudget)
      : hooks_(std::move(hooks)), budget_(unexpected_budget) {}

  struct Fragment {
    Envelope env;
    const char* data = nullptr;
    std::size_t size = 0;
    std::string* owner = nullptr;  // the string `data` lies in, if it may be taken whole (else copied)
    std::size_t total = 0;         // the whole message's size (first part)
    bool last = false;             // no more fragments of this part of the message follow
    bool synchronous = false;      // (first fragment) its sender waits for the match
    bool rendezvous = false;       // (first fragment) its rest comes as a second part, once matched
    bool rest = false;             // a fragment of such a second part ...
    std::uint64_t number = 0;      // ... of this message of the stream
    std::size_t cost = 0;          // the credit it took from the sender's window
    bool credit_may_wait = false;  // ... and the sender can do without it a while
  };
  // True when waiters should look again: a message began to arrive or a receive completed.
  bool on_fragment(const Fragment& f);

  // Posts a receive: bound at once to the oldest matching message here, or left to wait.
  std::shared_ptr<RemoteOp> post(void* buf, std::size_t capacity, const Envelope& pattern);
  // A matched probe's message, taken, and the same left in place (null when none is here).
  std::shared_ptr<Arrival> take(const Envelope& pattern) { return queue_.take(pattern); }
  const Arrival* peek(const Envelope& pattern) const { return queue_.peek(pattern); }
  // Receives a message a matched probe took.
  std::shared_ptr<RemoteOp> receive(const std::shared_ptr<Arrival>& message, void* buf, std::size_t capacity);
  bool cancel(const std::shared_ptr<RemoteOp>& op) { return queue_.cancel(op); }

  // Every posted receive and every message being taken in fails with `why`.
  void fail_all(const std::string& why);
  // Those of sources `gone` holds for (their cluster was lost): posted receives naming such
  // a source (those open to any source may still be matched by others), and messages from
  // them cut short. Messages they sent in full are still delivered.
  void fail_from(const std::function<bool(std::int32_t source)>& gone, const std::string& why);
  std::size_t unexpected() const { return queue_.unexpected(); }

 private:
  using StreamKey = std::pair<std::int32_t, std::uint32_t>;  // (source, context)
  void bind(const std::shared_ptr<Arrival>& in, const std::shared_ptr<RemoteOp>& op);
  void deliver(Arrival& in, const char* data, std::size_t n);
  static void finish_if_complete(Arrival& in);
  bool on_rest(const Fragment& f);

  Hooks hooks_;
  const std::size_t budget_;
  std::size_t buffered_ = 0;  // credit granted for data nobody has taken yet
  MatchQueue<RemoteOp, Arrival> queue_;
  std::map<StreamKey, std::shared_ptr<Arrival>> current_;                         // the message each stream is sending (first parts)
  std::map<StreamKey, std::uint64_t> started_;                                    // messages each stream began so far
  std::map<std::pair<StreamKey, std::uint64_t>, std::shared_ptr<Arrival>> rest_;  // rendezvous ones awaiting their rest
};

}  // namespace gridrt::detail
