// Local Group all-to-all (Steffenel, Martinasso, Trystram, "Assessing Contention Effects of
// All-to-All Communications on Clusters and Grids", 2008, §VI-B), generalised from two
// clusters to C clusters of any sizes. For every other cluster Y, each member j of Y has an agent in this cluster: the member of index
// (j's index in Y + Y's number) mod (this cluster's size), which spreads the agents over the
// cluster. 1. Inside the cluster, one MPI_Ialltoallv: every member sends each local member
// its block for it and its blocks for the remote members that member is agent for (after
// their sizes, unless all blocks are `equal`). 2. Every agent sends each remote member it
// serves one message holding the blocks of all its cluster's members for it, in the
// cluster's order: across the WAN each member receives C - 1 messages, and the
// inter-cluster exchange runs between many pairs of members at once, not through one
// coordinator.
#include <numeric>

#include "algorithms.h"
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
  // What local member k sent me: its blocks for `mine`, one after the other, of these sizes.
  std::vector<std::vector<std::size_t>> piece_size(m, std::vector<std::size_t>(mine.size(), equal ? in.packed(0) : 0));
  std::vector<char> received;
  ByteCounts rb({});
  if (m > 1) {
    if (!equal) {  // the sizes first, for the members each local member serves
      std::vector<unsigned long long> size_out, size_in(static_cast<std::size_t>(m) * mine.size());
      std::vector<int> scount(m), sdispl(m), rcount(m), rdispl(m);
      for (int a = 0; a < m; ++a) {
        sdispl[a] = static_cast<int>(size_out.size());
        for (int j : served[a]) size_out.push_back(in.packed(j));
        scount[a] = static_cast<int>(served[a].size());
        rcount[a] = static_cast<int>(mine.size());
        rdispl[a] = a * static_cast<int>(mine.size());
      }
      MPI_Request r;
      check_mpi(MPI_Ialltoallv(size_out.data(), scount.data(), sdispl.data(), MPI_UNSIGNED_LONG_LONG, size_in.data(), rcount.data(),
                               rdispl.data(), MPI_UNSIGNED_LONG_LONG, c.local, &r),
                kMpiInCluster);
      co_await one(local_step(r));
      for (int k = 0; k < m; ++k)
        for (std::size_t t = 0; t < mine.size(); ++t) piece_size[k][t] = size_in[k * mine.size() + t];
    }
    std::vector<std::size_t> send_sizes(m), recv_sizes(m);
    std::vector<char> send_data;
    for (int a = 0; a < m; ++a) {
      const std::vector<char> p = in.pack_all(served[a]);
      send_data.insert(send_data.end(), p.begin(), p.end());
      send_sizes[a] = p.size();
    }
    for (int k = 0; k < m; ++k) recv_sizes[k] = std::accumulate(piece_size[k].begin(), piece_size[k].end(), std::size_t{0});
    const ByteCounts sb(send_sizes);
    rb = ByteCounts(recv_sizes);
    received.resize(rb.total());
    MPI_Request r;
    check_mpi(MPI_Ialltoallv(send_data.data(), sb.counts.data(), sb.displs.data(), MPI_BYTE, received.data(), rb.counts.data(),
                             rb.displs.data(), MPI_BYTE, c.local, &r),
              kMpiInCluster);
    co_await one(local_step(r));
  } else {
    received = in.pack_all(mine);
    for (std::size_t t = 0; t < mine.size(); ++t) piece_size[0][t] = in.packed(mine[t]);
    rb = ByteCounts({received.size()});
  }
  // Where the piece for the t-th member of `mine` from local member k lies in `received`.
  std::vector<std::vector<std::size_t>> piece_at(m, std::vector<std::size_t>(mine.size() + 1, 0));
  for (int k = 0; k < m; ++k) {
    piece_at[k][0] = static_cast<std::size_t>(rb.displs[k]);
    for (std::size_t t = 0; t < mine.size(); ++t) piece_at[k][t + 1] = piece_at[k][t] + piece_size[k][t];
  }
  // My own blocks from this cluster (t = 0 is me).
  for (int k = 0; k < m; ++k) out.unpack_all({part[k]}, received.data() + piece_at[k][0]);
  // 2. Across the WAN: to every remote member I serve, its blocks from all of this cluster;
  //    from every other cluster, the blocks of all its members for me, from my agent there.
  std::vector<std::vector<char>> to(mine.size());
  std::vector<Step> steps;
  for (std::size_t t = 1; t < mine.size(); ++t) {
    for (int k = 0; k < m; ++k)
      to[t].insert(to[t].end(), received.begin() + static_cast<std::ptrdiff_t>(piece_at[k][t]),
                   received.begin() + static_cast<std::ptrdiff_t>(piece_at[k][t + 1]));
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
// lines): MPICH's all-to-all inside every part, each member's blocks for a local member
// joined by those it carries as agent (P/p blocks per pair on average); then every agent
// sends each remote member it serves one message of its part's p blocks, the messages of a
// site to another one after the other on their line.
double alltoall_local_group_cost(const CostShape& s, double b) {
  const int C = s.parts(), P = s.size();
  std::vector<double> ready(C);
  for (int x = 0; x < C; ++x) ready[x] = local_cost(Coll::kAlltoall, s.part_size[x], s.link[x][x], b * P / s.part_size[x]);
  if (C == 1) return ready[0];
  Timeline tl(s);
  double done = *std::max_element(ready.begin(), ready.end());
  for (int x = 0; x < C; ++x)
    for (int y = 0; y < C; ++y) {
      if (y == x) continue;
      for (int j = 0; j < s.part_size[y]; ++j) {
        const int agent = s.first_member[x] + (j + y) % s.part_size[x];
        done = std::max(done, tl.send(agent, x, y, s.part_size[x] * b, ready[x]));
      }
    }
  return done;
}

}  // namespace gridrt::detail
