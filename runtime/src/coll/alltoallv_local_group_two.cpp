// The Local Group all-to-all between two clusters as its paper defines it (Steffenel,
// Martinasso, Trystram, "Assessing Contention Effects of All-to-All Communications on
// Clusters and Grids", 2008, §VI-B, Algorithm 1), with the partial-group defect of its
// printed rule mended: the schedule is local_group_two.h's, tested exhaustively there. The
// "groups" route of the hierarchical all-to-all, for communicators of exactly two parts.
//
// 1. Inside each part, one MPI_Ialltoallv parks every block on its proxy (the rule's).
// 2. Across the WAN, the rule's messages: in step s, member k of the smaller part C1 and
//    member k + s*n1 of the other exchange, one message each way, of the blocks parked for
//    the other. They are posted at once, in step order (a WAN line serves them in that
//    order, as the paper's steps would; waiting for each step would only add round trips).
//
// Against the C-cluster rule (alltoallv_local_group.cpp, "agents"): the same bytes cross,
// but every member of the larger part sends across the WAN (n2 messages each way rather
// than n1 one way): more, smaller messages, spread over more senders.
#include <algorithm>

#include "algorithms.h"
#include "cluster_steps.h"
#include "costs.h"
#include "local_group_two.h"

namespace gridrt::detail {

namespace {
// The schedule's numbering of two parts: the smaller one (the first of equals) is C1.
struct TwoParts {
  int small = 0;  // the part that is C1
  lg2::Shape shape;
  explicit TwoParts(int size0, int size1) : small(size1 < size0 ? 1 : 0), shape{std::min(size0, size1), std::max(size0, size1)} {}
  int node(int part, int index) const { return part == small ? index : shape.n1 + index; }
  int part(int node) const { return shape.in_c1(node) ? small : 1 - small; }
  int index(int node) const { return shape.in_c1(node) ? node : node - shape.n1; }
};
}  // namespace

Async<> alltoallv_local_group_two(CommImpl& c, Blocks in, Blocks out, bool equal) {
  const int tag = c.next_tag();
  const TwoParts two(static_cast<int>(c.parts[0].size()), static_cast<int>(c.parts[1].size()));
  const int n = c.size();
  const int x = c.my_part();
  const auto& part = c.parts[x];
  const int m = static_cast<int>(part.size());
  auto node_of = [&](int rank) { return two.node(c.part_of[rank], c.index_in_part[rank]); };
  auto rank_of = [&](int node) { return c.parts[two.part(node)][two.index(node)]; };
  // 1. Local member k parks on member a its blocks for the ranks the rule parks there (its
  //    own part's blocks on their destinations, the others' on proxies), in rank order.
  const ParkedOn parked_on = [&](int k, int a) {
    std::vector<int> ranks;
    const int from = two.node(x, k), on = two.node(x, a);
    for (int j = 0; j < n; ++j)
      if (lg2::proxy(two.shape, from, node_of(j)) == on) ranks.push_back(j);
    return ranks;
  };
  const Parked parked = co_await park_in_part(c, in, equal, parked_on);
  // The block from local member k for rank j, parked here (k's blocks are in rank order).
  auto held = [&](int k, int j) {
    const std::vector<int>& kept = parked.ranks[k];
    const auto t = static_cast<std::size_t>(std::lower_bound(kept.begin(), kept.end(), j) - kept.begin());
    return std::make_pair(parked.block(k, t), parked.size(k, t));
  };
  for (int k = 0; k < m; ++k) out.unpack_all({part[k]}, held(k, c.me).first);
  // 2. The rule's wide-area messages from and to me.
  const int me = node_of(c.me);
  const std::vector<lg2::WanMessage> messages = lg2::wan_messages(two.shape);
  std::vector<std::vector<char>> sent, got;
  std::vector<std::vector<int>> got_from;  // the ranks whose blocks got[i] holds
  sent.reserve(messages.size());
  got.reserve(messages.size());
  std::vector<Step> steps;
  for (const lg2::WanMessage& msg : messages) {
    if (msg.from == me) {
      std::vector<char>& data = sent.emplace_back();
      for (int sender : msg.senders) {
        const auto [block, size] = held(c.index_in_part[rank_of(sender)], rank_of(msg.to));
        data.insert(data.end(), block, block + size);
      }
      steps.push_back(send_to(c, rank_of(msg.to), tag, data.data(), data.size()));
    } else if (msg.to == me) {
      std::vector<int>& ranks = got_from.emplace_back();
      for (int sender : msg.senders) ranks.push_back(rank_of(sender));
      std::vector<char>& data = got.emplace_back(out.packed(ranks));
      steps.push_back(receive_from(c, rank_of(msg.from), tag, data.data(), data.size()));
    }
  }
  co_await all(steps);
  for (std::size_t i = 0; i < got.size(); ++i) out.unpack_all(got_from[i], got[i].data());
}

// Cost (the Local Group model, Steffenel, Martinasso, Trystram 2008, Eq. 7, on shared
// lines): phase one as in the C-cluster rule (local_group_parked_at); then the rule's
// messages in step order, each of as many blocks as it carries, those from one part to the
// other one after the other on their line.
double alltoall_local_group_two_cost(const CostShape& s, double b) {
  const TwoParts two(s.part_size[0], s.part_size[1]);
  const std::vector<double> ready = local_group_parked_at(s, b);
  Timeline tl(s);
  double done = std::max(ready[0], ready[1]);
  for (const lg2::WanMessage& msg : lg2::wan_messages(two.shape)) {
    const int from = two.part(msg.from), to = two.part(msg.to);
    const double bytes = static_cast<double>(msg.senders.size()) * b;
    done = std::max(done, tl.send(s.member(from, two.index(msg.from)), from, to, bytes, ready[from], s.member(to, two.index(msg.to))));
  }
  return done;
}

}  // namespace gridrt::detail
