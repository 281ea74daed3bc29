// Hierarchical gather(v): 1. each cluster's blocks gather at its entry point (the root, or
// the cluster's leader) with MPICH, in the cluster's order; 2. up the tree that enters
// every site once: an entry collects the blocks of the clusters below it (a site's head:
// its site's), each cluster's or site's in one message, and sends them on with its own:
// one WAN message per site, every block crossing the WAN once. Only the root knows
// gatherv's sizes, so an entry is told each message's size first.
#include "algorithms.h"
#include "costs.h"
#include "cluster_steps.h"

namespace gridrt::detail {

Async<> gatherv_hier(CommImpl& c, std::vector<char> mine, bool in_place, Blocks out, int root, std::size_t block) {
  const int tag = c.next_tag();
  const int root_part = c.part_of[root], p = c.my_part();
  const bool is_entry = c.me == c.entry(p, root);
  const int local_root = c.index_in_part[c.entry(p, root)];
  const auto& part = c.parts[p];
  // (No co_await inside ?: here or anywhere in the algorithms: GCC 12 destroys its
  // temporaries twice.)
  std::vector<char> blob = mine;
  // Inside the cluster: MPICH's gather, or, where the cluster's gathers escalate, the paced
  // split gather (the same choice in every member: same model, same block size).
  if (const int pieces = gather_pieces(c, block); pieces > 1) blob = co_await cluster_gather_paced(c, mine, c.entry(p, root), block, pieces, tag);
  else if (part.size() > 1) blob = co_await cluster_gatherv(c, mine, local_root, nullptr);
  auto unpack_own_cluster = [&] {  // at the root
    std::vector<int> members = part;
    if (in_place) members.erase(std::find(members.begin(), members.end(), root));
    out.unpack_all(members, blob.data());
  };
  if (!is_entry || c.parts.size() == 1) {
    if (c.me == root) unpack_own_cluster();
    co_return;
  }
  auto cover = [&](int q) { return c.members_of(with_part(c.downstream(q, root_part), q)); };
  const bool told_sizes = block == kSizeNotShared && c.me != root;
  const std::vector<int> below = c.downstream(p, root_part);
  std::vector<std::vector<char>> from(c.parts.size());
  for (int q : below) {
    std::uint64_t size = 0;
    if (told_sizes) co_await one(receive_from(c, c.leader(q), tag, &size, sizeof size));
    else size = c.me == root ? out.packed(cover(q)) : block * cover(q).size();
    from[q].resize(size);
  }
  std::vector<Step> steps;
  for (int q : below) steps.push_back(receive_from(c, c.leader(q), tag, from[q].data(), from[q].size()));
  co_await all(steps);
  if (c.me == root) {
    unpack_own_cluster();
    for (int q : below) out.unpack_all(cover(q), from[q].data());
    co_return;
  }
  for (int q : below) blob.insert(blob.end(), from[q].begin(), from[q].end());  // p comes first: it heads them
  const int up = c.entry(c.upstream(p, root_part), root);
  if (block == kSizeNotShared && up != root) {
    const std::uint64_t size = blob.size();
    co_await one(send_to(c, up, tag, &size, sizeof size));
  }
  co_await one(send_to(c, up, tag, blob.data(), blob.size()));
}

// Cost: MPICH's gather (or the paced split one, where the model has the cluster's gathers) at every part's entry, a site's other parts' blocks to its head, one
// message per site (and per part of the root's site) to the root; b bytes per block.
double gather_hier_cost(const CostShape& s, int root, double b) {
  const int C = s.parts(), rp = s.part_of[root];
  Timeline tl(s);
  std::vector<double> ready(C), blocks(C);
  for (int q = 0; q < C; ++q) {
    ready[q] = s.gathers[q] ? paced_gather_cost(*s.gathers[q], s.part_size[q], b) : local_cost(Coll::kGather, s.part_size[q], s.link[q][q], b);
    blocks[q] = s.part_size[q] * b;
  }
  for (int q = 0; q < C; ++q)
    if (!s.same_site(q, rp) && !s.is_head(q)) {
      const int h = s.head(s.site_of_part[q]);
      ready[h] = std::max(ready[h], tl.send(s.first_member[q], q, h, blocks[q], ready[q]));
      blocks[h] += blocks[q];
    }
  double done = ready[rp];
  for (int q = 0; q < C; ++q)
    if (q != rp && s.upstream(q, rp) == rp) done = std::max(done, tl.send(s.first_member[q], q, rp, blocks[q], ready[q]));
  return done;
}

}  // namespace gridrt::detail
