// Neighbourhood exchange (MPI 4.0 §8.6, the neighbourhood collectives over a Cartesian,
// graph or distributed graph topology): every block goes straight to its neighbour, all at
// once, and every block from a neighbour is received likewise; a neighbour MPI_PROC_NULL
// sends and receives nothing. Which blocks meet is the caller's: a block's `slot` picks one
// of `slots` tags (a Cartesian neighbour that is the same process in both directions of a
// dimension needs two). Cost: one round; a member with d neighbours posts d sends and d
// receives, and waits for its slowest link, α + β·m over the WAN for a neighbour at another
// site, α_LAN + β·m inside one (Hockney's model). The neighbours are the application's, so
// nothing is combined per level: each block crosses the WAN once, as it must.
#include "algorithms.h"
#include "collectives.h"

namespace gridrt::detail {

Async<> neighbor_exchange(CommImpl& c, int slots, std::vector<NeighborBlock> sends, std::vector<NeighborBlock> receives) {
  std::vector<int> tags(static_cast<std::size_t>(slots));
  for (int& t : tags) t = c.next_tag();
  std::vector<std::vector<char>> in(receives.size()), out(sends.size());
  std::vector<Step> steps;
  for (std::size_t i = 0; i < receives.size(); ++i) {
    const NeighborBlock& b = receives[i];
    if (b.peer < 0) continue;
    in[i].resize(b.layout.packed);
    steps.push_back(receive_from(c, b.peer, tags[static_cast<std::size_t>(b.slot)], in[i].data(), in[i].size()));
  }
  for (std::size_t i = 0; i < sends.size(); ++i) {
    const NeighborBlock& b = sends[i];
    if (b.peer < 0) continue;
    out[i].resize(b.layout.packed);
    pack(b.layout, b.at, out[i].data());
    steps.push_back(send_to(c, b.peer, tags[static_cast<std::size_t>(b.slot)], out[i].data(), out[i].size()));
  }
  co_await all(steps);
  for (std::size_t i = 0; i < receives.size(); ++i)
    if (receives[i].peer >= 0) unpack(receives[i].layout, in[i].data(), receives[i].at);
}

}  // namespace gridrt::detail
