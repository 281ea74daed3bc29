// Local Group all-to-all (Steffenel, Martinasso, Trystram, "Assessing Contention Effects of
// All-to-All Communications on Clusters and Grids", 2008, §VI-B), generalised from two
// clusters to C clusters of any sizes (the "agents" route; the paper's own rule for two
// clusters is alltoallv_local_group_two.cpp, the "groups" route). For every other cluster
// Y, each member j of Y has an agent in this cluster: the member of index (j's index in Y +
// Y's number) mod (this cluster's size), which spreads the agents over the cluster. 1. Inside the cluster, one MPI_Ialltoallv: every member sends each local member
// its block for it and its blocks for the remote members that member is agent for (after
// their sizes, unless all blocks are `equal`). 2. Every agent sends each remote member it
// serves one message holding the blocks of all its cluster's members for it, in the
// cluster's order: across the WAN each member receives C - 1 messages, and the
// inter-cluster exchange runs between many pairs of members at once, not through one
// coordinator.
#include "algorithms.h"
#include "cluster_steps.h"
#include "costs.h"
#include "trees.h"

namespace gridrt::detail {

Async<> alltoallv_local_group(CommImpl& c, Blocks in, Blocks out, bool equal) {
  const int tag = c.next_tag();
  const int n = c.size();
  const int x = c.my_part();
  const auto& part = c.parts[x];
  const int m = static_cast<int>(part.size());
  const int ix = c.index_in_part[c.me];
  auto agent_index = [&](int j, int cluster) {
    return trees::lg_agent(c.index_in_part[j], c.part_of[j], static_cast<int>(c.parts[cluster].size()));
  };
  // served[a]: the members whose data local member a handles here: itself, then the remote
  // members it is agent for, in rank order.
  std::vector<std::vector<int>> served(m);
  for (int a = 0; a < m; ++a) served[a].push_back(part[a]);
  for (int j = 0; j < n; ++j)
    if (c.part_of[j] != x) served[agent_index(j, x)].push_back(j);
  // 1. Inside the cluster: every member parks on a its blocks for served[a].
  const ParkedOn parked_on = [&](int, int a) { return served[a]; };
  const Parked parked = co_await park_in_part(c, in, equal, parked_on);
  const std::vector<int>& mine = served[ix];
  // My own blocks from this cluster (t = 0 is me).
  for (int k = 0; k < m; ++k) out.unpack_all({part[k]}, parked.block(k, 0));
  // 2. Across the WAN: to every remote member I serve, its blocks from all of this cluster;
  //    from every other cluster, the blocks of all its members for me, from my agent there.
  std::vector<std::vector<char>> to(mine.size());
  std::vector<Step> steps;
  for (std::size_t t = 1; t < mine.size(); ++t) {
    for (int k = 0; k < m; ++k) to[t].insert(to[t].end(), parked.block(k, t), parked.block(k, t) + parked.size(k, t));
    steps.push_back(send_to(c, mine[t], tag, to[t].data(), to[t].size()));
  }
  std::vector<std::vector<char>> from(c.parts.size());
  for (std::size_t y = 0; y < c.parts.size(); ++y) {
    if (static_cast<int>(y) == x) continue;
    from[y].resize(out.packed(c.parts[y]));
    const int agent = c.parts[y][agent_index(c.me, static_cast<int>(y))];
    steps.push_back(receive_from(c, agent, tag, from[y].data(), from[y].size()));
  }
  co_await all(steps);
  for (std::size_t y = 0; y < c.parts.size(); ++y)
    if (static_cast<int>(y) != x) out.unpack_all(c.parts[y], from[y].data());
}

// Cost (the Local Group model, Steffenel, Martinasso, Trystram 2008, Eq. 7, on shared
// lines). Phase one, in both Local Group all-to-alls: MPICH's all-to-all inside every part,
// each member's blocks for a local member joined by those it parks there (P/p blocks per
// pair on average): when each part is done. Then, here, every agent
// sends each remote member it serves one message of its part's p blocks, the messages of a
// site to another one after the other on their line.
std::vector<double> local_group_parked_at(const CostShape& s, double b) {
  std::vector<double> ready(s.parts());
  for (int x = 0; x < s.parts(); ++x) ready[x] = s.local(Coll::kAlltoall, x, b * s.size() / s.part_size[x]);
  return ready;
}

double alltoall_local_group_cost(const CostShape& s, double b) {
  const int C = s.parts();
  const std::vector<double> ready = local_group_parked_at(s, b);
  if (C == 1) return ready[0];
  Timeline tl(s);
  double done = *std::max_element(ready.begin(), ready.end());
  for (int x = 0; x < C; ++x)
    for (int y = 0; y < C; ++y) {
      if (y == x) continue;
      for (int j = 0; j < s.part_size[y]; ++j) {
        const int agent = s.member(x, (j + y) % s.part_size[x]);
        done = std::max(done, tl.send(agent, x, y, s.part_size[x] * b, ready[x], s.member(y, j)));
      }
    }
  return done;
}

}  // namespace gridrt::detail
