// The paced split gather inside one cluster: the hierarchical gather's step inside a cluster
// when the cluster's gathers escalate (models/many_to_one.h).
//
// Lastovetsky and O'Flynn ("A Performance Model of Many-to-One Collective Communications for
// Parallel Computing", 2007, §7) avoid the escalations of a medium gather, the TCP
// retransmission timeouts that follow losses at the root's switch port when n-1 senders
// burst into it, by cutting it into k = ceil(M / (M1 - 1)) gathers of pieces below M1(n),
// done one after the other. On a real switch (the kernel tier, docs/benchmarks.md) pieces
// sent back to back still overflowed the port where every gather escalated: a sender's
// next piece follows its last at once, so the pieces of all senders pile up as one burst.
// Here the root paces them: for each piece it posts its receives, then sends each sender a
// message of no data, and a sender sends its piece only when it has that message; at most
// n-1 pieces are in flight towards the root at any time, each no larger than the largest
// size whose gathers were never seen to escalate (ManyToOneModel::calm), which the root's
// port carried without loss.
//
// Cost (ManyToOneModel::paced_split): each piece a small gather (M-3) plus the root's n-1
// signals and their latency, n C; no escalation.
#include "algorithms.h"
#include "cluster_steps.h"

#include <cstdio>

namespace gridrt::detail {

Async<std::vector<char>> cluster_gather_paced(CommImpl& c, const std::vector<char>& mine, int root, std::size_t block, int pieces,
                                              int tag) {
  const std::vector<int>& part = c.parts[c.my_part()];
  const std::vector<std::uint64_t> sizes = models::pieces_of(block, static_cast<std::uint64_t>(pieces));
  std::vector<char> blocks;
  if (c.me != root) {
    std::size_t at = 0;
    for (const std::uint64_t piece : sizes) {
      co_await one(receive_from(c, root, tag, nullptr, 0));
      co_await one(send_to(c, root, tag, mine.data() + at, piece));
      at += piece;
    }
    co_return blocks;
  }
  // Blocks in local rank order; the root's own is `mine` (none when it is in place).
  std::vector<std::size_t> offset;
  std::size_t total = 0;
  for (int m : part) {
    offset.push_back(total);
    total += m == root ? mine.size() : block;
  }
  blocks.resize(total);
  std::size_t at = 0;
  for (const std::uint64_t piece : sizes) {
    std::vector<Step> steps;
    for (std::size_t i = 0; i < part.size(); ++i)
      if (part[i] != root) steps.push_back(receive_from(c, part[i], tag, blocks.data() + offset[i] + at, piece));
    for (int m : part)
      if (m != root) steps.push_back(send_to(c, m, tag, nullptr, 0));
    co_await all(steps);
    at += piece;
  }
  const auto own = std::find(part.begin(), part.end(), root) - part.begin();
  std::copy(mine.begin(), mine.end(), blocks.begin() + static_cast<std::ptrdiff_t>(offset[own]));
  co_return blocks;
}

int gather_pieces(CommImpl& c, std::size_t block) {
  const int n = local_size(c);
  if (block == kSizeNotShared || n < 2 || block < 2) return 1;
  const int asked = state().gather_pieces;
  if (asked > 0) return static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(asked), block));
  auto& kept = coll_state(c).gather_split;
  if (const auto it = kept.find(block); it != kept.end()) return it->second;
  const models::ManyToOneModel* m = many_to_one_of(c);
  if (!m) return 1;
  const int pieces = m->paced_pieces(n, block);
  if (kept.size() < kChoicesKept) {
    kept.emplace(block, pieces);
    // Said once per size where there is a choice (from M1 on), by the cluster's first
    // member, where GRIDRT_EXPLAIN asks.
    if (state().explain && c.is_leader() && m->m1(n) > 0 && block >= m->m1(n))
      std::fprintf(
          stderr,
          "gridrt: gather inside cluster %s of %zu B per member among %d: one gather %.1f us expected, %d paced pieces %.1f us -> %s\n",
          cluster_name_of(c).c_str(), block, n, m->expected(n, block) * 1e6, static_cast<int>(m->paced_sizes(n, block).size()),
          m->paced_split(n, block) * 1e6, pieces > 1 ? "paced pieces" : "one gather");
  }
  return pieces;
}

double root_cluster_gather_cost(const CostShape& s, int root, double b) {
  const int rp = s.part_of[root];
  return s.gathers[rp] ? s.gathers[rp]->expected(s.part_size[rp], static_cast<std::uint64_t>(b)) : 0;
}

double paced_gather_cost(const models::ManyToOneModel& m, int n, double b) {
  const auto M = static_cast<std::uint64_t>(b);
  return m.paced_pieces(n, M) > 1 ? m.paced_split(n, M) : m.expected(n, M);
}

}  // namespace gridrt::detail
