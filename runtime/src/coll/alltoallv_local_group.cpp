// Local Group all-to-all (Steffenel, Martinasso, Trystram, "Assessing Contention Effects of
// All-to-All Communications on Clusters and Grids", 2008, §VI-B), generalised from two
// clusters to C clusters of any sizes (the "agents" route; the paper's own rule for two
// clusters is alltoallv_local_group_two.cpp, the "groups" route). For every other cluster
// Y, each member j of Y has an agent in this cluster: the member of index (j's index in Y +
// Y's number) mod (this cluster's size), which spreads the agents over the cluster. 0. At
// once, every agent sends each remote member it serves its own block for it: the lines
// between the sites start while the cluster still exchanges (on a slow line the bytes of
// a site's agents are what bounds the call, and the step inside the cluster would
// otherwise come before all of them). 1. Inside the cluster, one MPI_Ialltoallv: every
// member sends each local member its block for it and its blocks for the remote members
// that member is agent for (after their sizes, unless all blocks are `equal`). 2. Every
// agent sends each remote member it serves one message holding the blocks of its
// cluster's other members for it, in the cluster's order: across the WAN each member
// receives 2 (C - 1) messages (C - 1 from one-member clusters), and the inter-cluster
// exchange runs between many pairs of members at once, not through one coordinator.
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
  const std::vector<int>& mine = served[ix];
  // 0. Across the WAN at once: to every remote member I serve, my own block for it; from
  //    my agent in every other cluster, its own block for me, and the rest after it.
  std::vector<Step> steps;
  std::vector<std::vector<char>> own(mine.size());
  for (std::size_t t = 1; t < mine.size(); ++t) {
    own[t] = in.pack_all({mine[t]});
    steps.push_back(send_to(c, mine[t], tag, own[t].data(), own[t].size()));
  }
  std::vector<std::vector<char>> from_agent(c.parts.size()), from_rest(c.parts.size());
  std::vector<std::vector<int>> rest(c.parts.size());  // the members of y other than my agent there
  for (std::size_t y = 0; y < c.parts.size(); ++y) {
    if (static_cast<int>(y) == x) continue;
    const int agent = c.parts[y][agent_index(c.me, static_cast<int>(y))];
    for (int j : c.parts[y])
      if (j != agent) rest[y].push_back(j);
    from_agent[y].resize(out.packed(agent));
    steps.push_back(receive_from(c, agent, tag, from_agent[y].data(), from_agent[y].size()));
    if (rest[y].empty()) continue;
    from_rest[y].resize(out.packed(rest[y]));
    steps.push_back(receive_from(c, agent, tag, from_rest[y].data(), from_rest[y].size()));
  }
  // 1. Inside the cluster: every member parks on a its blocks for served[a], except on
  //    itself, where only its block for itself stays (those for the remote members it serves
  //    went ahead).
  const ParkedOn parked_on = [&](int k, int a) { return k == a ? std::vector<int>{part[a]} : served[a]; };
  const Parked parked = co_await park_in_part(c, in, equal, parked_on);
  // My own blocks from this cluster (t = 0 is me).
  for (int k = 0; k < m; ++k) out.unpack_all({part[k]}, parked.block(k, 0));
  // 2. Across the WAN: to every remote member I serve, its blocks from this cluster's
  //    other members.
  std::vector<std::vector<char>> to(mine.size());
  for (std::size_t t = 1; t < mine.size() && m > 1; ++t) {
    for (int k = 0; k < m; ++k)
      if (k != ix) to[t].insert(to[t].end(), parked.block(k, t), parked.block(k, t) + parked.size(k, t));
    steps.push_back(send_to(c, mine[t], tag, to[t].data(), to[t].size()));
  }
  co_await all(steps);
  for (std::size_t y = 0; y < c.parts.size(); ++y) {
    if (static_cast<int>(y) == x) continue;
    out.unpack_all({c.parts[y][agent_index(c.me, static_cast<int>(y))]}, from_agent[y].data());
    if (!rest[y].empty()) out.unpack_all(rest[y], from_rest[y].data());
  }
}

// Cost (the Local Group model, Steffenel, Martinasso, Trystram 2008, Eq. 7, on shared
// lines). Phase one, in both Local Group all-to-alls: MPICH's all-to-all inside every part,
// each member's blocks for a local member joined by those it parks there (P/p blocks per
// pair on average): when each part is done. Here, every agent sends each remote member it
// serves its own block from the start, and once its part is done one message of its part's
// p - 1 other blocks, the messages of a site to another one after the other on their line.
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
  for (const bool early : {true, false})
    for (int x = 0; x < C; ++x)
      for (int y = 0; y < C; ++y) {
        if (y == x || (!early && s.part_size[x] == 1)) continue;
        for (int j = 0; j < s.part_size[y]; ++j) {
          const int agent = s.member(x, (j + y) % s.part_size[x]);
          const double bytes = early ? b : (s.part_size[x] - 1) * b;
          done = std::max(done, tl.send(agent, x, y, bytes, early ? 0.0 : ready[x], s.member(y, j)));
        }
      }
  return done;
}

}  // namespace gridrt::detail
