// Hierarchical scatter(v): down the tree that enters every site once, each entry (the
// root, or a cluster's leader) receives the blocks of its cluster and of the clusters below
// it (a site's head: its whole site's) in one message (after their sizes, for scatterv:
// only the root knows them), keeps its cluster's and passes on the rest; then scatters its
// cluster's blocks inside with MPICH. One WAN message per site, every block crossing the
// WAN once.
#include <numeric>

#include "algorithms.h"
#include "costs.h"
#include "cluster_steps.h"

namespace gridrt::detail {

Async<> scatterv_hier(CommImpl& c, Blocks in, void* recvbuf, Layout recv, bool in_place, int root, bool equal) {
  const int tag = c.next_tag();
  const int root_part = c.part_of[root], p = c.my_part();
  const bool is_entry = c.me == c.entry(p, root);
  const int local_root = c.index_in_part[c.entry(p, root)];
  const bool keep = c.me == root && in_place;
  const auto& part = c.parts[p];
  const int block_bytes = static_cast<int>(recv.packed);
  auto cover = [&](int q) { return c.members_of(with_part(c.downstream(q, root_part), q)); };
  std::vector<int> sizes;  // of `cover(p)`'s members, in order
  std::vector<char> blob;
  std::vector<std::vector<int>> sizes_to(c.parts.size());
  std::vector<std::vector<char>> blobs_to(c.parts.size());
  std::vector<Step> sends;
  if (is_entry) {
    // This cluster's members first, then those of each cluster below, in order (for an entry
    // other than the root that is cover(p): it heads the clusters below it).
    const std::vector<int> below = c.downstream(p, root_part);
    std::vector<int> mine = part;
    for (int q : below) {
      const std::vector<int> more = cover(q);
      mine.insert(mine.end(), more.begin(), more.end());
    }
    if (c.me == root) {
      for (int m : mine) sizes.push_back(m == root && keep ? 0 : static_cast<int>(in.packed(m)));
      std::vector<int> members = mine;
      if (keep) members.erase(std::find(members.begin(), members.end(), root));
      blob = in.pack_all(members);
    } else {
      sizes.assign(mine.size(), block_bytes);
      if (!equal) co_await one(receive_from(c, c.entry(c.upstream(p, root_part), root), tag, sizes.data(), sizes.size() * sizeof(int)));
      blob.resize(std::accumulate(sizes.begin(), sizes.end(), std::size_t{0}));
      co_await one(receive_from(c, c.entry(c.upstream(p, root_part), root), tag, blob.data(), blob.size()));
    }
    // Cut out the clusters below's sizes and blocks.
    std::size_t member = part.size(), at = 0;
    for (std::size_t i = 0; i < part.size(); ++i) at += sizes[i];
    for (int q : below) {
      const std::size_t n = cover(q).size();
      sizes_to[q].assign(sizes.begin() + static_cast<std::ptrdiff_t>(member), sizes.begin() + static_cast<std::ptrdiff_t>(member + n));
      const std::size_t bytes = std::accumulate(sizes_to[q].begin(), sizes_to[q].end(), std::size_t{0});
      blobs_to[q].assign(blob.begin() + static_cast<std::ptrdiff_t>(at), blob.begin() + static_cast<std::ptrdiff_t>(at + bytes));
      if (!equal) sends.push_back(send_to(c, c.leader(q), tag, sizes_to[q].data(), sizes_to[q].size() * sizeof(int)));
      sends.push_back(send_to(c, c.leader(q), tag, blobs_to[q].data(), blobs_to[q].size()));
      member += n;
      at += bytes;
    }
    sizes.resize(part.size());
  }
  // Each entry point scatters its cluster's blocks inside.
  std::vector<char> got(keep ? 0 : recv.packed);
  if (part.size() > 1) {
    co_await cluster_scatterv(c, blob, std::vector<std::size_t>(sizes.begin(), sizes.end()), local_root, got);
  } else if (!keep) {
    got.assign(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(recv.packed));
  }
  if (!keep) unpack(recv, got.data(), recvbuf);
  co_await all(sends);
}

// Cost: the root sends each part of its site its blocks and each other site's head that
// site's, one message each in part order; heads hand on their site's other parts'; MPICH's
// scatter inside every part once its blocks are there.
double scatter_hier_cost(const CostShape& s, int root, double b) {
  const int C = s.parts(), rp = s.part_of[root];
  Timeline tl(s);
  std::vector<double> got(C, 0), blocks(C);
  for (int q = 0; q < C; ++q) blocks[q] = s.part_size[q] * b;
  for (int q = 0; q < C; ++q)
    if (q != rp && s.is_head(q) && !s.same_site(q, rp))
      for (int r : s.sites[s.site_of_part[q]])
        if (r != q) blocks[q] += blocks[r];
  for (int q = 0; q < C; ++q)
    if (q != rp && s.upstream(q, rp) == rp) got[q] = tl.send(root, rp, q, blocks[q], 0);
  for (int q = 0; q < C; ++q)
    if (q != rp && s.upstream(q, rp) != rp) {
      const int h = s.upstream(q, rp);
      got[q] = tl.send(s.first_member[h], h, q, s.part_size[q] * b, got[h]);
    }
  double done = 0;
  for (int q = 0; q < C; ++q) done = std::max(done, got[q] + local_cost(Coll::kScatter, s.part_size[q], s.link[q][q], b, got[q]));
  return done;
}

}  // namespace gridrt::detail
