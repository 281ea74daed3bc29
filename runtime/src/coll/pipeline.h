// The pipeline the hierarchical collectives run their slices through (Coti, Herault,
// Cappello, "MPI Applications on Grids: a Topology-Aware Approach", 2009, §4.2: a large
// message cut into slices, so that one slice crosses the WAN while the others are reduced
// or broadcast inside the clusters): slices x stages.
//
// A collective first says every message it expects, per stage and slice, from which part
// (`expect`): all are posted before any stage runs, so that a peer's messages of one tag
// match in the order it sends them. Then it runs its stages one after the other, each over
// every slice in order: a stage of a slice waits only for its own arrivals (`arrived`),
// while what was sent before and the steps inside the cluster keep moving, and sends as
// soon as its slice is ready (`send`, which keeps the bytes until they are gone). `finish`
// waits for everything sent and started.
#pragma once

#include <deque>
#include <vector>

#include "async.h"
#include "comm.h"

namespace gridrt::detail {

class Pipeline {
 public:
  Pipeline(CommImpl& c, int tag, int slices, int stages)
      : c_(c),
        tag_(tag),
        arrivals_(stages, std::vector<std::vector<Step>>(slices)),
        received_(stages, std::vector<std::vector<std::vector<char>>>(slices, std::vector<std::vector<char>>(c.parts.size()))) {}
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Stage `stage` of slice `k` takes `bytes` from part `part`, sent by `member`.
  void expect(int stage, int k, int part, int member, std::size_t bytes) {
    std::vector<char>& buffer = received_[stage][k][part];
    buffer.resize(bytes);
    arrivals_[stage][k].push_back(receive_from(c_, member, tag_, buffer.data(), bytes));
  }
  // The same, received in place: `place` holds `bytes` until the stage has arrived.
  void expect_into(int stage, int k, int member, void* place, std::size_t bytes) {
    arrivals_[stage][k].push_back(receive_from(c_, member, tag_, place, bytes));
  }
  // What stage `stage` of slice `k` received, by part (empty for the parts it expects nothing from).
  const std::vector<std::vector<char>>& received(int stage, int k) const { return received_[stage][k]; }
  const std::vector<char>& received(int stage, int k, int part) const { return received_[stage][k][part]; }

  // Waits for every message stage `stage` of slice `k` expects (and for `also`, if given),
  // keeping the rest moving.
  Async<> arrived(int stage, int k, Step* also = nullptr) {
    if (also) co_await amid(*also, started_);
    for (Step& s : arrivals_[stage][k]) co_await amid(s, started_);
  }
  // Sends `bytes` to `member`; they are kept until sent.
  void send(int member, std::vector<char> bytes) {
    const std::vector<char>& kept = sent_.emplace_back(std::move(bytes));
    started_.push_back(send_to(c_, member, tag_, kept.data(), kept.size()));
  }
  // `bytes` at `data`, which the caller keeps until `finish`.
  void send(int member, const void* data, std::size_t bytes) { started_.push_back(send_to(c_, member, tag_, data, bytes)); }
  // The same bytes to several members.
  void send(const std::vector<int>& members, std::vector<char> bytes) {
    const std::vector<char>& kept = sent_.emplace_back(std::move(bytes));
    for (int member : members) started_.push_back(send_to(c_, member, tag_, kept.data(), kept.size()));
  }
  // A step (inside the cluster, say) that `finish` waits for.
  void start(Step s) { started_.push_back(std::move(s)); }
  Async<> finish() { co_await all(started_); }

 private:
  CommImpl& c_;
  const int tag_;
  std::vector<std::vector<std::vector<Step>>> arrivals_;               // [stage][slice]
  std::vector<std::vector<std::vector<std::vector<char>>>> received_;  // [stage][slice][part]
  std::deque<std::vector<char>> sent_;                                 // (a deque: what is kept does not move)
  std::vector<Step> started_;
};

}  // namespace gridrt::detail
