// Collectives that move data rather than combine it, hierarchical and flat
// (docs/algorithms.md): gather(v), scatter(v), allgather(v), alltoall(v). The hierarchical
// ones cross the WAN once on every path and bring each block into a cluster once: the
// cluster's entry point (the root, or its cluster's leader) gathers or scatters inside with
// MPICH, and across clusters whole clusters' blocks travel in one message. The all-to-all
// is the Local Group algorithm (seed 000 §VI-B) generalised to C clusters of any sizes.
#include <numeric>
#include <optional>

#include "cluster_steps.h"
#include "trees.h"

namespace gridrt {
namespace detail {
namespace {

std::vector<std::size_t> packed_sizes(const Blocks& b, const std::vector<int>& which) {
  std::vector<std::size_t> out;
  for (int i : which) out.push_back(b.packed(i));
  return out;
}

// ------------------------------------------------------------------ gather

// `out` matters at the root only (and, when `equal`, everywhere: every block is `count`
// elements); sendbuf MPI_IN_PLACE at the root: its block is in place.
void gatherv_hier(CommImpl& c, const void* sendbuf, int sendcount, const Blocks& out, MPI_Datatype type, int root, bool equal) {
  const int tag = c.next_tag();
  const int root_part = c.part_of[root], p = c.my_part();
  const bool is_entry = c.me == c.entry(p, root);
  const int local_root = c.index_in_part[c.entry(p, root)];
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const std::vector<char> mine = in_place ? std::vector<char>() : packed_copy(Layout(type, sendcount), sendbuf);
  // 1. Each cluster's blocks gather at its entry point, in the cluster's order.
  const auto& part = c.parts[p];
  std::vector<char> blob = part.size() > 1 ? cluster_gatherv(c, mine, local_root, nullptr) : mine;
  auto unpack_own_cluster = [&] {  // at the root
    std::vector<int> members = part;
    if (in_place) members.erase(std::find(members.begin(), members.end(), root));
    out.unpack_all(members, blob.data());
  };
  if (!is_entry || c.parts.size() == 1) {
    if (c.me == root) unpack_own_cluster();
    return;
  }
  // 2. Up the tree that enters every site once: an entry collects the blocks of the clusters
  //    below it (a site's head: its site's), each cluster's or site's in one message, and
  //    sends them on with its own (one WAN hop per site). Only the root knows gatherv's
  //    sizes, so a head is told each message's size first.
  auto cover = [&](int q) { return c.members_of(with_part(c.downstream(q, root_part), q)); };
  const bool told_sizes = !equal && c.me != root;
  const std::vector<int> below = c.downstream(p, root_part);
  std::vector<std::vector<char>> from(c.parts.size());
  for (int q : below) {
    std::uint64_t size = 0;
    if (told_sizes) wait_step(receive_from(c, c.leader(q), tag, &size, sizeof size));
    else size = out.packed(cover(q));
    from[q].resize(size);
  }
  std::vector<Step> steps;
  for (int q : below) steps.push_back(receive_from(c, c.leader(q), tag, from[q].data(), from[q].size()));
  wait_steps(steps);
  if (c.me == root) {
    unpack_own_cluster();
    for (int q : below) out.unpack_all(cover(q), from[q].data());
    return;
  }
  for (int q : below) blob.insert(blob.end(), from[q].begin(), from[q].end());  // p comes first: it heads them
  const int up = c.entry(c.upstream(p, root_part), root);
  if (!equal && up != root) {
    const std::uint64_t size = blob.size();
    wait_step(send_to(c, up, tag, &size, sizeof size));
  }
  wait_step(send_to(c, up, tag, blob.data(), blob.size()));
}

// Binomial tree towards the root (relative ranks): every subtree is a run of consecutive
// relative ranks, gathered in one buffer and sent up whole.
void gather_flat(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, int root) {
  const int tag = c.next_tag();
  const int n = c.size();
  const int rel = (c.me - root + n) % n;
  const Layout one(type, count);
  const std::size_t block = one.packed;
  std::vector<char> sub(block * trees::binomial_subtree_size(rel, n));
  const void* contribution = sendbuf == MPI_IN_PLACE ? static_cast<char*>(recvbuf) + static_cast<MPI_Aint>(root) * count * one.extent : sendbuf;
  pack(one, contribution, sub.data());
  std::vector<Step> steps;
  for (int child : trees::binomial_children(rel, n))
    steps.push_back(receive_from(c, (child + root) % n, tag, sub.data() + block * (child - rel), block * trees::binomial_subtree_size(child, n)));
  wait_steps(steps);
  if (rel != 0) return wait_step(send_to(c, (trees::binomial_parent(rel) + root) % n, tag, sub.data(), sub.size()));
  for (int k = 0; k < n; ++k) {
    const int real = (k + root) % n;
    if (real == root && sendbuf == MPI_IN_PLACE) continue;
    unpack(one, sub.data() + block * k, static_cast<char*>(recvbuf) + static_cast<MPI_Aint>(real) * count * one.extent);
  }
}

// Every member sends its block straight to the root (MPICH's gatherv).
void gatherv_flat(CommImpl& c, const void* sendbuf, int sendcount, const Blocks& out, MPI_Datatype type, int root) {
  const int tag = c.next_tag();
  if (c.me != root) {
    const std::vector<char> mine = packed_copy(Layout(type, sendcount), sendbuf);
    return wait_step(send_to(c, root, tag, mine.data(), mine.size()));
  }
  std::vector<std::vector<char>> from(c.size());
  std::vector<Step> steps;
  for (int r = 0; r < c.size(); ++r) {
    if (r == root) continue;
    from[r].resize(out.packed(r));
    steps.push_back(receive_from(c, r, tag, from[r].data(), from[r].size()));
  }
  wait_steps(steps);
  for (int r = 0; r < c.size(); ++r)
    if (r != root) out.unpack_all({r}, from[r].data());
  if (sendbuf != MPI_IN_PLACE) copy_elements(Layout(type, sendcount), sendbuf, out.at(root));
}

// ------------------------------------------------------------------ scatter

// `in` matters at the root only; recvbuf MPI_IN_PLACE at the root: its block stays in place.
// `equal`: every member's block has recvcount elements (scatter), so an entry knows the
// sizes without being told.
void scatterv_hier(CommImpl& c, const Blocks& in, void* recvbuf, int recvcount, MPI_Datatype type, int root, bool equal) {
  const int tag = c.next_tag();
  const int root_part = c.part_of[root], p = c.my_part();
  const bool is_entry = c.me == c.entry(p, root);
  const int local_root = c.index_in_part[c.entry(p, root)];
  const bool keep = c.me == root && recvbuf == MPI_IN_PLACE;
  const auto& part = c.parts[p];
  const int block_bytes = static_cast<int>(Layout(type, recvcount).packed);
  auto cover = [&](int q) { return c.members_of(with_part(c.downstream(q, root_part), q)); };
  // 1. Down the tree that enters every site once: each entry receives the blocks of its
  //    cluster and of the clusters below it (a site's head: its whole site's) in one
  //    message (after their sizes, for scatterv), keeps its cluster's and passes on the rest.
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
      if (!equal) wait_step(receive_from(c, c.entry(c.upstream(p, root_part), root), tag, sizes.data(), sizes.size() * sizeof(int)));
      blob.resize(std::accumulate(sizes.begin(), sizes.end(), std::size_t{0}));
      wait_step(receive_from(c, c.entry(c.upstream(p, root_part), root), tag, blob.data(), blob.size()));
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
  // 2. Each entry point scatters its cluster's blocks inside.
  const Layout mine(type, keep ? 0 : recvcount);
  std::vector<char> got(mine.packed);
  if (part.size() > 1) {
    cluster_scatterv(c, blob, std::vector<std::size_t>(sizes.begin(), sizes.end()), local_root, got);
  } else if (!keep) {
    got.assign(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(mine.packed));
  }
  if (!keep) unpack(mine, got.data(), recvbuf);
  wait_steps(sends);
}

// Binomial tree from the root: each member receives its subtree's blocks and passes on its
// children's.
void scatter_flat(CommImpl& c, const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, int root) {
  const int tag = c.next_tag();
  const int n = c.size();
  const int rel = (c.me - root + n) % n;
  const Layout one(type, count);
  const std::size_t block = one.packed;
  std::vector<char> sub(block * trees::binomial_subtree_size(rel, n));
  if (rel == 0) {
    for (int k = 0; k < n; ++k)
      pack(one, static_cast<const char*>(sendbuf) + static_cast<MPI_Aint>((k + root) % n) * count * one.extent, sub.data() + block * k);
  } else {
    wait_step(receive_from(c, (trees::binomial_parent(rel) + root) % n, tag, sub.data(), sub.size()));
  }
  std::vector<Step> steps;
  for (int child : trees::binomial_children(rel, n))
    steps.push_back(send_to(c, (child + root) % n, tag, sub.data() + block * (child - rel), block * trees::binomial_subtree_size(child, n)));
  wait_steps(steps);
  if (!(rel == 0 && recvbuf == MPI_IN_PLACE)) unpack(one, sub.data(), recvbuf);
}

// The root sends every block straight to its member (MPICH's scatterv).
void scatterv_flat(CommImpl& c, const Blocks& in, void* recvbuf, int recvcount, MPI_Datatype type, int root) {
  const int tag = c.next_tag();
  const Layout mine(type, recvcount);
  if (c.me != root) {
    std::vector<char> got(mine.packed);
    wait_step(receive_from(c, root, tag, got.data(), got.size()));
    return unpack(mine, got.data(), recvbuf);
  }
  std::vector<std::vector<char>> to(c.size());
  std::vector<Step> steps;
  for (int r = 0; r < c.size(); ++r) {
    if (r == root) continue;
    to[r] = in.pack_all({r});
    steps.push_back(send_to(c, r, tag, to[r].data(), to[r].size()));
  }
  if (recvbuf != MPI_IN_PLACE) copy_elements(mine, in.at(root), recvbuf);
  wait_steps(steps);
}

// ------------------------------------------------------------------ allgather

void allgatherv_hier(CommImpl& c, const void* sendbuf, int sendcount, const Blocks& out, MPI_Datatype type) {
  const int tag = c.next_tag();
  const bool in_place = sendbuf == MPI_IN_PLACE;
  const std::vector<char> mine = in_place ? out.pack_all({c.me}) : packed_copy(Layout(type, sendcount), sendbuf);
  const int p = c.my_part();
  // 1. Each cluster gathers its blocks at its leader (every size is known to everyone).
  const auto& part = c.parts[p];
  std::vector<std::vector<char>> from(c.parts.size());  // each cluster's blocks
  from[p] = mine;
  if (part.size() > 1) {
    const std::vector<std::size_t> known = packed_sizes(out, part);
    from[p] = cluster_gatherv(c, mine, 0, &known);
  }
  std::size_t total = 0;
  for (const auto& q : c.parts) total += out.packed(q);
  std::vector<char> all;
  // 2. Leaders: a site's clusters hand their blocks to the site's head; heads send their
  //    site's blocks to every other head (one WAN hop: every block enters every site once)
  //    and hand everything back to their site's clusters, clusters in order.
  if (c.is_leader() && c.parts.size() > 1) {
    const int site = c.site_of_part[p], head = c.site_head(site);
    if (p != head) {
      wait_step(send_to(c, c.leader(head), tag, from[p].data(), from[p].size()));
      all.resize(total);
      wait_step(receive_from(c, c.leader(head), tag, all.data(), all.size()));
    } else {
      const std::vector<int> mates = c.site_mates(p), others = c.other_sites(p);
      std::vector<Step> steps;
      for (int q : mates) {
        from[q].resize(out.packed(c.parts[q]));
        steps.push_back(receive_from(c, c.leader(q), tag, from[q].data(), from[q].size()));
      }
      wait_steps(steps);
      std::vector<char> site_blocks;
      for (int q : c.sites[site]) site_blocks.insert(site_blocks.end(), from[q].begin(), from[q].end());
      std::vector<std::vector<char>> site_from(c.sites.size());
      steps.clear();
      for (int t : others) {
        const int other = c.leader(c.site_head(t));
        site_from[t].resize(out.packed(c.members_of(c.sites[t])));
        steps.push_back(receive_from(c, other, tag, site_from[t].data(), site_from[t].size()));
        steps.push_back(send_to(c, other, tag, site_blocks.data(), site_blocks.size()));
      }
      wait_steps(steps);
      for (int t : others) {  // split every other site's blocks by cluster
        std::size_t at = 0;
        for (int q : c.sites[t]) {
          const std::size_t n = out.packed(c.parts[q]);
          from[q].assign(site_from[t].begin() + static_cast<std::ptrdiff_t>(at), site_from[t].begin() + static_cast<std::ptrdiff_t>(at + n));
          at += n;
        }
      }
      for (const auto& f : from) all.insert(all.end(), f.begin(), f.end());
      steps.clear();
      for (int q : mates) steps.push_back(send_to(c, c.leader(q), tag, all.data(), all.size()));
      wait_steps(steps);
    }
  } else if (c.is_leader()) {
    all = from[p];
  }
  // 3. Each leader hands everyone's blocks to its cluster.
  all.resize(total);
  if (part.size() > 1 && total > 0) {
    if (total > static_cast<std::size_t>(INT32_MAX)) throw Error("gridrt: a collective's data inside a cluster is limited to 2 GiB");
    wait_step(cluster_bcast(c, all.data(), static_cast<int>(total), MPI_BYTE, 0));
  }
  const char* at = all.data();
  for (const auto& q : c.parts) {
    out.unpack_all(q, at);
    at += out.packed(q);
  }
}

// Ring (MPICH's long-message allgather): in step k, pass on the block received in step k - 1.
void allgatherv_flat(CommImpl& c, const void* sendbuf, int sendcount, const Blocks& out, MPI_Datatype type) {
  const int tag = c.next_tag();
  const int n = c.size();
  std::vector<std::size_t> offset(n + 1, 0);
  for (int i = 0; i < n; ++i) offset[i + 1] = offset[i] + out.packed(i);
  std::vector<char> all(offset[n]);
  const std::vector<char> mine = sendbuf == MPI_IN_PLACE ? out.pack_all({c.me}) : packed_copy(Layout(type, sendcount), sendbuf);
  std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(offset[c.me]));
  const int right = (c.me + 1) % n, left = (c.me - 1 + n) % n;
  for (int k = 0; k < n - 1; ++k) {
    const int send_block = (c.me - k + n) % n, recv_block = (c.me - k - 1 + n) % n;
    std::vector<Step> steps;
    steps.push_back(receive_from(c, left, tag, all.data() + offset[recv_block], out.packed(recv_block)));
    steps.push_back(send_to(c, right, tag, all.data() + offset[send_block], out.packed(send_block)));
    wait_steps(steps);
  }
  for (int i = 0; i < n; ++i) out.unpack_all({i}, all.data() + offset[i]);
}

// ------------------------------------------------------------------ alltoall

// Local Group all-to-all (seed 000 §VI-B), for C clusters of any sizes. For every other
// cluster Y, each member j of Y has an agent in this cluster: the member of index
// (j's index in Y + Y's number) mod (this cluster's size), which spreads the agents over the
// cluster. 1. Inside the cluster, one MPI_Ialltoallv: every member sends each local member
// its block for it and its blocks for the remote members that member is agent for (after
// their sizes, unless all blocks are `equal`). 2. Every agent sends each remote member it
// serves one message holding the blocks of all its cluster's members for it, in the
// cluster's order: across the WAN each member receives C - 1 messages, and the
// inter-cluster exchange runs between many pairs of members at once, not through one
// coordinator.
void alltoallv_hier(CommImpl& c, const Blocks& in, const Blocks& out, bool equal) {
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
      wait_local(r);
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
    wait_local(r);
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
  wait_steps(steps);
  for (std::size_t y = 0; y < c.parts.size(); ++y)
    if (static_cast<int>(y) != x) out.unpack_all(c.parts[y], from[y].data());
}

// Pairwise exchange (MPICH's long-message all-to-all): in step k, send to rank + k and
// receive from rank - k.
void alltoallv_flat(CommImpl& c, const Blocks& in, const Blocks& out) {
  const int tag = c.next_tag();
  const int n = c.size();
  out.unpack_all({c.me}, in.pack_all({c.me}).data());
  for (int k = 1; k < n; ++k) {
    const int dst = (c.me + k) % n, src = (c.me - k + n) % n;
    const std::vector<char> block = in.pack_all({dst});
    std::vector<char> got(out.packed(src));
    std::vector<Step> steps;
    steps.push_back(receive_from(c, src, tag, got.data(), got.size()));
    steps.push_back(send_to(c, dst, tag, block.data(), block.size()));
    wait_steps(steps);
    out.unpack_all({src}, got.data());
  }
}

void check_counts(const CommImpl& c, const int* counts, const int* displs, const char* what) {
  if (!counts || !displs) throw ArgumentError(std::string("gridrt: ") + what + ": counts and displacements are needed");
  for (int i = 0; i < c.size(); ++i)
    if (counts[i] < 0) throw ArgumentError(std::string("gridrt: ") + what + ": count " + std::to_string(counts[i]) + " of member " + std::to_string(i) + " is negative");
}

}  // namespace
}  // namespace detail

using detail::Blocks;
using detail::choose;
using detail::Coll;
using detail::EqualBlocks;

void Comm::gatherv(const void* sendbuf, int sendcount, void* recvbuf, const int* recvcounts, const int* displs, MPI_Datatype type,
                   int root, Algo algo) const {
  detail::CommImpl& c = impl();
  detail::check_rooted(c, root, sendbuf, "gatherv");
  if (c.me == root) detail::check_counts(c, recvcounts, displs, "gatherv");
  const Blocks out(recvbuf, recvcounts, displs, type);
  if (choose(algo, c, Coll::kGather, detail::kSizeNotShared) == Algo::kFlat) detail::gatherv_flat(c, sendbuf, sendcount, out, type, root);
  else detail::gatherv_hier(c, sendbuf, sendcount, out, type, root, false);
}

void Comm::gather(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, int root, Algo algo) const {
  detail::CommImpl& c = impl();
  detail::check_rooted(c, root, sendbuf, "gather");
  const detail::Layout l(type, count);  // checks type and count
  if (choose(algo, c, Coll::kGather, l.packed) == Algo::kFlat) return detail::gather_flat(c, sendbuf, recvbuf, count, type, root);
  const EqualBlocks e(c.size(), count);
  detail::gatherv_hier(c, sendbuf, count, Blocks(recvbuf, e.counts.data(), e.displs.data(), type), type, root, true);
}

void Comm::scatterv(const void* sendbuf, const int* sendcounts, const int* displs, void* recvbuf, int recvcount, MPI_Datatype type,
                    int root, Algo algo) const {
  detail::CommImpl& c = impl();
  detail::check_rooted(c, root, recvbuf, "scatterv");
  if (c.me == root) detail::check_counts(c, sendcounts, displs, "scatterv");
  const Blocks in(sendbuf, sendcounts, displs, type);
  if (choose(algo, c, Coll::kScatter, detail::kSizeNotShared) == Algo::kFlat) detail::scatterv_flat(c, in, recvbuf, recvcount, type, root);
  else detail::scatterv_hier(c, in, recvbuf, recvcount, type, root, false);
}

void Comm::scatter(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, int root, Algo algo) const {
  detail::CommImpl& c = impl();
  detail::check_rooted(c, root, recvbuf, "scatter");
  const detail::Layout l(type, count);
  if (choose(algo, c, Coll::kScatter, l.packed) == Algo::kFlat) return detail::scatter_flat(c, sendbuf, recvbuf, count, type, root);
  const EqualBlocks e(c.size(), count);
  detail::scatterv_hier(c, Blocks(sendbuf, e.counts.data(), e.displs.data(), type), recvbuf, count, type, root, true);
}

void Comm::allgatherv(const void* sendbuf, int sendcount, void* recvbuf, const int* recvcounts, const int* displs, MPI_Datatype type,
                      Algo algo) const {
  detail::CommImpl& c = impl();
  detail::check_counts(c, recvcounts, displs, "allgatherv");
  const Blocks out(recvbuf, recvcounts, displs, type);
  // Every member knows every block's size: auto goes by their mean (worked out only for it).
  std::size_t mean = 0;
  if (detail::asked_for(algo) == Algo::kAuto) {
    for (int i = 0; i < c.size(); ++i) mean += out.packed(i);
    mean /= static_cast<std::size_t>(c.size());
  }
  if (choose(algo, c, Coll::kAllgather, mean) == Algo::kFlat) detail::allgatherv_flat(c, sendbuf, sendcount, out, type);
  else detail::allgatherv_hier(c, sendbuf, sendcount, out, type);
}

void Comm::allgather(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, Algo algo) const {
  const EqualBlocks e(size(), count);
  allgatherv(sendbuf, count, recvbuf, e.counts.data(), e.displs.data(), type, algo);
}

namespace {
// alltoall and alltoallv; `equal`: every block has the same count (alltoall), so nobody needs
// to be told the sizes.
void alltoallv_any(detail::CommImpl& c, const void* sendbuf, const int* sendcounts, const int* sdispls, void* recvbuf,
                   const int* recvcounts, const int* rdispls, MPI_Datatype type, Algo algo, bool equal) {
  detail::check_counts(c, recvcounts, rdispls, "alltoallv");
  if (sendbuf != MPI_IN_PLACE) detail::check_counts(c, sendcounts, sdispls, "alltoallv");
  const Blocks out(recvbuf, recvcounts, rdispls, type);
  // In place, what recvbuf holds now is what is sent (laid out as the receive, MPI's rule):
  // it is copied aside first, blocks where they are.
  std::optional<detail::Scratch> aside;
  if (sendbuf == MPI_IN_PLACE) {
    int span = 0;
    for (int i = 0; i < c.size(); ++i) span = std::max(span, rdispls[i] + recvcounts[i]);
    const detail::Layout whole(out.element, span);
    aside.emplace(whole);
    detail::copy_elements(whole, recvbuf, aside->get());
    sendbuf = aside->get();
    sendcounts = recvcounts;
    sdispls = rdispls;
  }
  const Blocks in(sendbuf, sendcounts, sdispls, type);
  if (choose(algo, c, Coll::kAlltoall, equal ? in.packed(0) : detail::kSizeNotShared) == Algo::kFlat) detail::alltoallv_flat(c, in, out);
  else detail::alltoallv_hier(c, in, out, equal);
}
}  // namespace

void Comm::alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, void* recvbuf, const int* recvcounts,
                     const int* rdispls, MPI_Datatype type, Algo algo) const {
  alltoallv_any(impl(), sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, type, algo, false);
}

void Comm::alltoall(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, Algo algo) const {
  const EqualBlocks e(size(), count);
  alltoallv_any(impl(), sendbuf, e.counts.data(), e.displs.data(), recvbuf, e.counts.data(), e.displs.data(), type, algo, true);
}

}  // namespace gridrt
