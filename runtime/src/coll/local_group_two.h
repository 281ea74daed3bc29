// The Local Group all-to-all between two clusters as its paper defines it (Steffenel,
// Martinasso, Trystram, "Assessing Contention Effects of All-to-All Communications on
// Clusters and Grids", 2008, §VI-B, Algorithm 1), with the defect of its printed rule fixed.
// A pure schedule: who parks which block where in the local phase, and which pair exchanges
// what in each wide-area step. (gridrt's collective for any number of clusters uses another
// agent map, trees.h lg_agent; this one is the paper's, for two clusters.)
//
// Numbering: the smaller cluster C1 = {0 .. n1-1}, the other C2 = {n1 .. n1+n2-1}, n1 <= n2.
// The C2 nodes form groups of n1: node i is in group i / n1 (1 .. ceil(n2/n1)), and in
// wide-area step s node k of C1 (k < n1) pairs with node k + s*n1 of group s, if it exists.
//
// Phase 1 (local): every block M(i,j) goes to a proxy in its sender's own cluster —
//   i in C1: proxy j mod n1 (j itself when j is in C1);
//   i in C2, j in C2: j itself;
//   i in C2, j in C1: the member of i's group paired with j, (i / n1)*n1 + j.
// Phase 2 (wide area): in step s, C1 node k sends node k + s*n1 every C1 block meant for it
// (n1 blocks: one message), and that node sends k every block its group parked for k.
//
// The defect: when n1 does not divide n2 the last group is partial, and the printed rule
// parks a block of one of its nodes for j in C1 on (i / n1)*n1 + j, which may not exist
// (n1 = 3, n2 = 7: node 9's blocks for nodes 1 and 2 would go to nodes 10 and 11). The fix
// parks it on the same slot of the group before, (i / n1 - 1)*n1 + j, which always exists
// and meets j in the step before: every block then crosses once, in 2*n2 wide-area messages.
#pragma once

#include <vector>

namespace gridrt::detail::lg2 {

struct Shape {
  int n1 = 0, n2 = 0;  // n1 <= n2
  int size() const { return n1 + n2; }
  bool in_c1(int node) const { return node < n1; }
  int steps() const { return (n2 + n1 - 1) / n1; }  // ceil(n2 / n1) wide-area steps
};

// The node that M(i, j) is parked on after phase 1; with `as_printed` the paper's rule
// without the fix, which may name a node that does not exist (>= size()).
inline int proxy(const Shape& c, int i, int j, bool as_printed = false) {
  if (c.in_c1(i)) return j % c.n1;
  if (!c.in_c1(j)) return j;
  const int p = (i / c.n1) * c.n1 + j;
  if (p < c.size() || as_printed) return p;
  return (i / c.n1 - 1) * c.n1 + j;
}

// One wide-area message of step `step`: `from` sends `to` the blocks M(k, to) it holds.
struct WanMessage {
  int step = 0;
  int from = -1, to = -1;
  std::vector<int> senders;  // the k of every block M(k, to) it carries
};

// Phase 2 for `c`: every message, step by step, built from where phase 1 parked the blocks
// (so that a rule that parks a block nowhere, or where no step reaches it, shows as a block
// missing at its destination).
inline std::vector<WanMessage> wan_messages(const Shape& c, bool as_printed = false) {
  std::vector<WanMessage> out;
  for (int s = 1; s <= c.steps(); ++s)
    for (int k = 0; k < c.n1; ++k) {
      const int peer = k + s * c.n1;
      if (peer >= c.size()) continue;
      WanMessage down{s, k, peer, {}}, up{s, peer, k, {}};
      for (int i = 0; i < c.size(); ++i) {
        if (c.in_c1(i) && proxy(c, i, peer, as_printed) == k) down.senders.push_back(i);
        if (!c.in_c1(i) && proxy(c, i, k, as_printed) == peer) up.senders.push_back(i);
      }
      out.push_back(down);
      out.push_back(up);
    }
  return out;
}

}  // namespace gridrt::detail::lg2
