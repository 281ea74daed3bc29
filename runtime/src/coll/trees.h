// Peer arithmetic of the flat (topology-unaware) collective algorithms, as a plain MPI does
// them over all processes (binomial trees; Thakur, Rabenseifner and Gropp's recursive
// doubling and dissemination). Pure functions of a rank and a size, tested exhaustively.
// Ranks here are relative: rotate by the root before and after.
#pragma once

#include <algorithm>
#include <vector>

namespace gridrt::detail::trees {

// The lowest set bit of r (r > 0).
inline int lowbit(int r) { return r & -r; }

// Binomial tree over n ranks rooted at 0. Rank r > 0 hangs under r minus its lowest set
// bit; its subtree is the contiguous ranks [r, r + lowbit(r)) that exist, so a reduction
// that folds children in increasing order keeps rank order (non-commutative operations).
inline int binomial_parent(int r) { return r - lowbit(r); }
// Children of r, nearest first: r + 1, r + 2, r + 4, ... below lowbit(r) (any for the root).
inline std::vector<int> binomial_children(int r, int n) {
  std::vector<int> out;
  const int limit = r == 0 ? n : lowbit(r);
  for (int step = 1; step < limit && r + step < n; step <<= 1) out.push_back(r + step);
  return out;
}

// How many ranks the subtree of r holds (all n for the root).
inline int binomial_subtree_size(int r, int n) { return (r == 0 ? n : std::min(n, r + lowbit(r))) - r; }

// Recursive doubling over n ranks that need not be a power of two: the first 2 * rem ranks
// (rem = n - p2, p2 the largest power of two <= n) pair up, the even one of each pair hands
// its part to the odd one and sits out; the p2 that remain exchange with partner
// new ^ mask for mask = 1, 2, 4, ... < p2; then the odd ones hand the result back.
struct Doubling {
  int n, p2, rem;
  explicit Doubling(int size) : n(size), p2(1), rem(0) {
    while (p2 * 2 <= n) p2 *= 2;
    rem = n - p2;
  }
  // The rank in the power-of-two phase, or -1 for a rank that sits out.
  int inner(int r) const {
    if (r < 2 * rem) return r % 2 == 0 ? -1 : r / 2;
    return r - rem;
  }
  // The real rank behind an inner rank.
  int outer(int v) const { return v < rem ? 2 * v + 1 : v + rem; }
};

// Local Group all-to-all (Steffenel, Martinasso, Trystram 2008 §VI-B, generalised to clusters of any sizes): the member
// of a cluster of `size` that acts as agent for member `index` of cluster number `cluster`
// (another cluster): it gathers its cluster's blocks for that member and sends them in one
// message. The cluster number offsets the choice so that agents spread over the cluster.
inline int lg_agent(int index, int cluster, int size) { return (index + cluster) % size; }

// Dissemination barrier: in round k (distance 2^k < n) rank r signals (r + 2^k) mod n and
// waits for (r - 2^k) mod n; after ceil(log2 n) rounds everyone has heard from everyone.
inline std::vector<int> dissemination_distances(int n) {
  std::vector<int> out;
  for (int d = 1; d < n; d <<= 1) out.push_back(d);
  return out;
}

}  // namespace gridrt::detail::trees
