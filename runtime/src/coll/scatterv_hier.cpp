// Hierarchical scatter(v): down a tree over the parts (part_trees.h: packed, ordered,
// binomial or chain across the sites), each entry (the root, or a cluster's leader)
// receives the blocks of its cluster and of the clusters below it in one message (after
// their sizes, for scatterv: only the root knows them), keeps its cluster's and passes on
// each child's subtree's, in the tree's order; then scatters its cluster's blocks inside
// with MPICH. One WAN message per edge that crosses sites, every block crossing the WAN
// once on the packed and ordered routes.
//
// Where the blocks already lie packed in the order they go (a datatype without gaps, blocks
// in rank order), they go from the caller's buffer as they lie, and a member's own block
// comes straight into its receive buffer: on one cluster of two processes the scatter of 1
// MiB blocks spent 27% of its time copying and zeroing buffers of its own otherwise.
#include <cstring>
#include <numeric>

#include "algorithms.h"
#include "costs.h"
#include "cluster_steps.h"

namespace gridrt::detail {

Async<> scatterv_hier(CommImpl& c, Blocks in, void* recvbuf, Layout recv, bool in_place, int root, std::size_t block, PartTree tree) {
  const bool equal = block != kSizeNotShared;
  const int tag = c.next_tag();
  const int p = c.my_part();
  const bool is_entry = c.me == c.entry(p, root);
  const int local_root = c.index_in_part[c.entry(p, root)];
  const bool keep = c.me == root && in_place;
  const auto& part = c.parts[p];
  const int block_bytes = static_cast<int>(recv.packed);
  auto cover = [&](int q) { return c.members_of(tree.subtree(q)); };
  std::vector<int> sizes;        // of `cover(p)`'s members, in order
  std::vector<char> blob;        // their blocks, where they had to be packed or were received
  const char* blocks = nullptr;  // their blocks: blob's, or the caller's where they lie packed
  std::vector<std::vector<int>> sizes_to(c.parts.size());
  std::vector<Step> sends;  // (from `blocks`, which stay until the end)
  if (is_entry) {
    // This cluster's members first, then those of each subtree below, in order: cover(p).
    const std::vector<int>& below = tree.children[p];
    const std::vector<int> mine = cover(p);
    if (c.me == root) {
      for (int m : mine) sizes.push_back(m == root && keep ? 0 : static_cast<int>(in.packed(m)));
      std::vector<int> members = mine;
      if (keep) members.erase(std::find(members.begin(), members.end(), root));
      blocks = in.packed_in_place(members);
      if (!blocks) {
        blob = in.pack_all(members);
        blocks = blob.data();
      }
    } else {
      sizes.assign(mine.size(), block_bytes);
      if (!equal) co_await one(receive_from(c, c.entry(tree.parent[p], root), tag, sizes.data(), sizes.size() * sizeof(int)));
      blob.resize(std::accumulate(sizes.begin(), sizes.end(), std::size_t{0}));
      co_await one(receive_from(c, c.entry(tree.parent[p], root), tag, blob.data(), blob.size()));
      blocks = blob.data();
    }
    // Cut out the clusters below's sizes and blocks.
    std::size_t member = part.size(), at = 0;
    for (std::size_t i = 0; i < part.size(); ++i) at += sizes[i];
    for (int q : below) {
      const std::size_t n = cover(q).size();
      sizes_to[q].assign(sizes.begin() + static_cast<std::ptrdiff_t>(member), sizes.begin() + static_cast<std::ptrdiff_t>(member + n));
      const std::size_t bytes = std::accumulate(sizes_to[q].begin(), sizes_to[q].end(), std::size_t{0});
      if (!equal) sends.push_back(send_to(c, c.leader(q), tag, sizes_to[q].data(), sizes_to[q].size() * sizeof(int)));
      sends.push_back(send_to(c, c.leader(q), tag, blocks + at, bytes));
      member += n;
      at += bytes;
    }
    sizes.resize(part.size());
  }
  // Each entry point scatters its cluster's blocks inside (the root keeping its own where
  // it is in place: it receives nothing).
  const Layout got_layout(recv, keep ? 0 : recv.count);
  PackedArrival got(got_layout, recvbuf);
  if (part.size() > 1) {
    co_await cluster_scatterv(c, blocks, std::vector<std::size_t>(sizes.begin(), sizes.end()), local_root, got.data(), got_layout.packed,
                              block);
  } else if (got_layout.packed > 0) {
    std::memcpy(got.data(), blocks, got_layout.packed);
  }
  got.arrived();
  co_await all(sends);
}

// Cost: the tree played over the lines (costs.h): each entry, once its message has
// arrived, sends each child its subtree's blocks in the tree's order (the root from the
// start); MPICH's scatter inside every part once its blocks are there. For the packed tree
// that is the grid scatter's packed formula, max over c of (sum of g_w(R_c' m) for c' up
// to c) + L_w + T_local,c (models/scatter_models.h), with the lines and wake-ups of costs.h.
namespace {
// When the subtree of part `from` is done, its entry starting at 0 with its blocks there.
double scatter_from(const CostShape& s, int root, double b, const PartTree& t, int from) {
  Timeline tl(s);
  std::vector<double> got(s.parts(), 0);
  double done = 0;
  for (int q : t.top_down(from)) {
    const int sender = q == t.root ? root : s.leader(q);
    for (int x : t.children[q]) got[x] = tl.send(sender, q, x, s.members_in(t.subtree(x)) * b, got[q]);
    done = std::max(done, got[q] + s.local(Coll::kScatter, q, b, got[q]));
  }
  return done;
}
}  // namespace

PartTree scatter_tree(const CostShape& s, int root, double b, Route r) {
  const int rp = s.part_of[root];
  PartTree t = part_tree(s.sites, s.site_of_part, rp, r);
  if (r == Route::kOrdered) {
    // A child's tail: its message's latency, then its subtree's time from its arrival.
    std::vector<double> tail(s.parts(), 0);
    for (int x : t.children[rp]) tail[x] = s.link[rp][x].L + scatter_from(s, root, b, t, x);
    serve_in_order(t, tail);
  }
  return t;
}

double scatter_tree_cost(const CostShape& s, int root, double b, const PartTree& t) { return scatter_from(s, root, b, t, t.root); }

double scatter_hier_cost(const CostShape& s, int root, double b, Route r) {
  return r == Route::kDirect ? scatterv_linear_cost(s, root, b) : scatter_tree_cost(s, root, b, scatter_tree(s, root, b, r));
}

}  // namespace gridrt::detail
