// An in-memory MessageTransport for in-process tests: several "ranks" of one test process
// (threads) exchange messages through a shared MemoryNetwork. Messages are delivered at
// once, whole, into the destination's Receiver (the same receiving side the real transport
// uses), so matching, probes, truncation and synchronous sends behave as they do across the
// relays; one-sided messages go to the destination's sink, in the sender's thread. There is
// no flow control (nothing here can fill up).
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "transport/message_transport.h"
#include "transport/receiver.h"

namespace gridrt::detail {

class MemoryNetwork {
 public:
  explicit MemoryNetwork(int ranks) {
    for (int r = 0; r < ranks; ++r)
      receivers_.push_back(std::make_unique<Receiver>(
          Receiver::Hooks{[](const Envelope&, std::size_t, bool) {},
                          [this, r](const Envelope& from, std::uint64_t number) { matched(from.source, r, from.context, number); }}));
  }
  int size() const { return static_cast<int>(receivers_.size()); }

 private:
  friend class MemoryTransport;
  using Stream = std::tuple<int, int, std::uint32_t>;  // (source, destination, context)
  void matched(int src, int dst, std::uint32_t context, std::uint64_t number) {
    auto it = unmatched_.find({{src, dst, context}, number});
    if (it == unmatched_.end()) return;
    it->second->matched = true;
    it->second->done = true;
    unmatched_.erase(it);
  }
  void notify() {
    ++activity_;
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::uint64_t activity_ = 0;
  std::vector<std::unique_ptr<Receiver>> receivers_;
  std::map<int, OneSidedSink> sinks_;     // one-sided messages' (message_transport.h)
  std::map<Stream, std::uint64_t> sent_;  // messages begun on each stream
  std::map<std::pair<Stream, std::uint64_t>, std::shared_ptr<RemoteOp>> unmatched_;
};

class MemoryTransport : public MessageTransport {
 public:
  MemoryTransport(MemoryNetwork& net, int rank) : net_(net), rank_(rank) {}

  std::shared_ptr<RemoteOp> send(std::int32_t dst, std::uint32_t context, std::int32_t tag, const void* buf, std::size_t bytes,
                                 bool synchronous) override {
    if (dst < 0 || dst >= net_.size()) throw std::runtime_error("no rank " + std::to_string(dst));
    auto op = std::make_shared<RemoteOp>();
    op->synchronous = synchronous;
    if (context & kOneSidedContext) {  // served at once, in the sender's thread
      OneSidedSink sink;
      {
        std::lock_guard<std::mutex> lock(net_.mu_);
        sink = net_.sinks_[dst];
      }
      if (sink) sink(rank_, context, OneSidedPart{std::string_view(static_cast<const char*>(buf), bytes), bytes, true, true});
      std::lock_guard<std::mutex> lock(net_.mu_);
      op->written = op->done = true;
      net_.notify();
      return op;
    }
    std::lock_guard<std::mutex> lock(net_.mu_);
    const MemoryNetwork::Stream stream{rank_, dst, context};
    const std::uint64_t number = net_.sent_[stream]++;
    if (synchronous) net_.unmatched_[{stream, number}] = op;
    op->written = true;
    op->done = !synchronous;
    Receiver::Fragment f;
    f.env = {context, rank_, tag};
    f.data = static_cast<const char*>(buf);
    f.size = f.total = bytes;
    f.last = true;
    f.synchronous = synchronous;
    f.cost = bytes;
    net_.receivers_[dst]->on_fragment(f);
    net_.notify();
    return op;
  }
  std::shared_ptr<RemoteOp> recv(void* buf, std::size_t capacity, std::int32_t src, std::uint32_t context, std::int32_t tag) override {
    std::lock_guard<std::mutex> lock(net_.mu_);
    return mine().post(buf, capacity, {context, src, tag});
  }
  std::shared_ptr<Arrival> improbe(std::int32_t src, std::uint32_t context, std::int32_t tag) override {
    std::lock_guard<std::mutex> lock(net_.mu_);
    return mine().take({context, src, tag});
  }
  bool iprobe(std::int32_t src, std::uint32_t context, std::int32_t tag, Envelope* env, std::size_t* total) override {
    std::lock_guard<std::mutex> lock(net_.mu_);
    const Arrival* a = mine().peek({context, src, tag});
    if (a) *env = a->env, *total = a->total;
    return a != nullptr;
  }
  std::shared_ptr<RemoteOp> mrecv(const std::shared_ptr<Arrival>& m, void* buf, std::size_t capacity) override {
    std::lock_guard<std::mutex> lock(net_.mu_);
    return mine().receive(m, buf, capacity);
  }
  bool cancel(const std::shared_ptr<RemoteOp>& op) override {
    std::lock_guard<std::mutex> lock(net_.mu_);
    return mine().cancel(op);
  }
  bool test(const std::shared_ptr<RemoteOp>& op) override {
    std::lock_guard<std::mutex> lock(net_.mu_);
    if (!op->error.empty()) throw std::runtime_error(op->error);
    return op->done;
  }
  void wait(const std::shared_ptr<RemoteOp>& op) override {
    std::unique_lock<std::mutex> lock(net_.mu_);
    net_.cv_.wait(lock, [&] { return op->done || !op->error.empty(); });
    if (!op->error.empty()) throw std::runtime_error(op->error);
  }
  std::uint64_t activity() override {
    std::lock_guard<std::mutex> lock(net_.mu_);
    return net_.activity_;
  }
  void await_activity(std::uint64_t seen, std::chrono::microseconds at_most) override {
    std::unique_lock<std::mutex> lock(net_.mu_);
    net_.cv_.wait_for(lock, at_most, [&] { return net_.activity_ != seen; });
  }
  void set_one_sided_sink(OneSidedSink sink, LossSink = {}) override {
    std::lock_guard<std::mutex> lock(net_.mu_);
    net_.sinks_[rank_] = std::move(sink);
  }

 private:
  Receiver& mine() { return *net_.receivers_[rank_]; }
  MemoryNetwork& net_;
  const int rank_;
};

}  // namespace gridrt::detail
