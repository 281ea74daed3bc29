// Hierarchical gather(v): 1. each cluster's blocks gather at its entry point (the root, or
// the cluster's leader) with MPICH, in the cluster's order; 2. up a tree over the parts
// (part_trees.h: packed, binomial or chain across the sites): an entry collects the blocks
// of each subtree below it in one message and sends them on after its own. On the packed
// route one WAN message per site, every block crossing the WAN once. Only the root knows
// gatherv's sizes, so an entry is told each message's size first.
#include "algorithms.h"
#include "costs.h"
#include "cluster_steps.h"

namespace gridrt::detail {

Async<> gatherv_hier(CommImpl& c, std::vector<char> mine, bool in_place, Blocks out, int root, std::size_t block, PartTree tree) {
  const int tag = c.next_tag();
  const int p = c.my_part();
  const bool is_entry = c.me == c.entry(p, root);
  const int local_root = c.index_in_part[c.entry(p, root)];
  const auto& part = c.parts[p];
  // (No co_await inside ?: here or anywhere in the algorithms: GCC 12 destroys its
  // temporaries twice.)
  std::vector<char> blob;
  // At the root, MPICH gathers its cluster's blocks straight into recvbuf where they lie
  // there packed in order (not in place: the root's own block is there already).
  char* in_recvbuf = c.me == root && !in_place && part.size() > 1 ? out.packed_in_place(part) : nullptr;
  // Inside the cluster: MPICH's gather, or, where the cluster's gathers escalate, the paced
  // split gather (the same choice in every member: same model, same block size).
  if (const int pieces = gather_pieces(c, block); pieces > 1) {
    in_recvbuf = nullptr;
    blob = co_await cluster_gather_paced(c, mine, c.entry(p, root), block, pieces, tag);
  } else if (part.size() > 1) {
    blob = co_await cluster_gatherv(c, mine, local_root, nullptr, block, in_recvbuf, in_recvbuf ? out.packed(part) : 0);
    if (!blob.empty()) in_recvbuf = nullptr;  // not there after all: the blocks came back
  } else {
    blob = std::move(mine);
  }
  auto unpack_own_cluster = [&] {  // at the root
    if (in_recvbuf) return;        // there already
    std::vector<int> members = part;
    if (in_place) members.erase(std::find(members.begin(), members.end(), root));
    out.unpack_all(members, blob.data());
  };
  if (!is_entry || c.parts.size() == 1) {
    if (c.me == root) unpack_own_cluster();
    co_return;
  }
  auto cover = [&](int q) { return c.members_of(tree.subtree(q)); };
  const bool told_sizes = block == kSizeNotShared && c.me != root;
  const std::vector<int>& below = tree.children[p];
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
  const int up = c.entry(tree.parent[p], root);
  if (block == kSizeNotShared && up != root) {
    const std::uint64_t size = blob.size();
    co_await one(send_to(c, up, tag, &size, sizeof size));
  }
  co_await one(send_to(c, up, tag, blob.data(), blob.size()));
}

// Cost: MPICH's gather (or the paced split one, where the model has the cluster's gathers)
// at every part's entry; then up the tree, each entry sending its subtree's blocks in one
// message once its own and its children's are there; b bytes per block.
double gather_tree_cost(const CostShape& s, double b, const PartTree& t) {
  const int C = s.parts();
  Timeline tl(s);
  std::vector<double> ready(C);
  for (int q = 0; q < C; ++q) ready[q] = s.gathers[q] ? paced_gather_cost(*s.gathers[q], s.part_size[q], b) : s.local(Coll::kGather, q, b);
  const std::vector<int> order = t.top_down(t.root);
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (const int q = *it; q != t.root)
      ready[t.parent[q]] = std::max(ready[t.parent[q]], tl.send(s.leader(q), q, t.parent[q], s.members_in(t.subtree(q)) * b, ready[q]));
  return ready[t.root];
}

double gather_hier_cost(const CostShape& s, int root, double b, Route r) {
  if (r == Route::kDirect) return gatherv_linear_cost(s, root, b);
  // (A gather has no order to schedule: its root receives what arrives; part_tree gives
  // kOrdered the packed tree.)
  return gather_tree_cost(s, b, part_tree(s.sites, s.site_of_part, s.part_of[root], r));
}

}  // namespace gridrt::detail
