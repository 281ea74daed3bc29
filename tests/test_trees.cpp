// The peer arithmetic of the flat collectives (runtime/src/coll/trees.h), for every size 1..64,
// and the routes of the hierarchical scatter and gather (coll/part_trees.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "coll/local_group_two.h"
#include "coll/part_trees.h"
#include "coll/trees.h"

using namespace gridrt::detail::trees;

TEST(Trees, BinomialTreeSpansEveryRankOnceWithContiguousSubtrees) {
  for (int n = 1; n <= 64; ++n) {
    std::vector<int> parent_seen(n, -1);
    int depth_max = 0;
    for (int r = 0; r < n; ++r) {
      int prev = r;
      for (int c : binomial_children(r, n)) {
        ASSERT_GT(c, prev) << "n=" << n << " r=" << r << ": children in increasing order";
        ASSERT_LT(c, n);
        ASSERT_EQ(parent_seen[c], -1) << "n=" << n << ": rank " << c << " has two parents";
        parent_seen[c] = r;
        ASSERT_EQ(binomial_parent(c), r) << "n=" << n;
        prev = c;
      }
    }
    for (int r = 1; r < n; ++r) {
      ASSERT_NE(parent_seen[r], -1) << "n=" << n << ": rank " << r << " is not in the tree";
      // Subtree of r: the ranks [r, r + lowbit(r)) below n (what keeps reductions in order).
      std::set<int> sub{r};
      for (bool grew = true; grew;) {
        grew = false;
        for (int x : std::set<int>(sub))
          for (int c : binomial_children(x, n)) grew |= sub.insert(c).second;
      }
      ASSERT_EQ(*sub.begin(), r);
      ASSERT_EQ(*sub.rbegin(), std::min(n, r + lowbit(r)) - 1) << "n=" << n << " r=" << r;
      ASSERT_EQ(static_cast<int>(sub.size()), binomial_subtree_size(r, n));
      int depth = 0;
      for (int x = r; x != 0; x = binomial_parent(x)) ++depth;
      depth_max = std::max(depth_max, depth);
    }
    EXPECT_EQ(binomial_subtree_size(0, n), n);
    int log2n = 0;
    while ((1 << log2n) < n) ++log2n;
    EXPECT_LE(depth_max, log2n) << "n=" << n;
  }
}

TEST(Trees, RecursiveDoublingFoldsToAPowerOfTwoInRankOrder) {
  for (int n = 1; n <= 64; ++n) {
    const Doubling d(n);
    ASSERT_EQ(d.p2 + d.rem, n);
    ASSERT_EQ(d.p2 & (d.p2 - 1), 0) << "p2 must be a power of two";
    ASSERT_LT(d.rem, d.p2);
    int prev_outer = -1;
    std::set<int> inner;
    for (int r = 0; r < n; ++r) {
      const int v = d.inner(r);
      if (v < 0) {
        ASSERT_TRUE(r < 2 * d.rem && r % 2 == 0) << "n=" << n << " r=" << r;
        ASSERT_EQ(d.inner(r + 1), r / 2) << "a rank that sits out hands over to the next";
        continue;
      }
      ASSERT_EQ(d.outer(v), r);
      ASSERT_GT(r, prev_outer) << "inner ranks keep rank order";
      prev_outer = r;
      inner.insert(v);
    }
    ASSERT_EQ(static_cast<int>(inner.size()), d.p2);
    ASSERT_EQ(*inner.rbegin(), d.p2 - 1);
    // Every pairing is mutual in every round.
    for (int mask = 1; mask < d.p2; mask <<= 1)
      for (int v = 0; v < d.p2; ++v) ASSERT_EQ((v ^ mask) ^ mask, v);
  }
}

TEST(Trees, DisseminationReachesEveryoneInLogRounds) {
  for (int n = 1; n <= 64; ++n) {
    // heard[r] = who r has heard from, directly or through others.
    std::vector<std::set<int>> heard(n);
    for (int r = 0; r < n; ++r) heard[r] = {r};
    const auto ds = dissemination_distances(n);
    for (int d : ds) {
      auto next = heard;
      for (int r = 0; r < n; ++r) next[(r + d) % n].insert(heard[r].begin(), heard[r].end());
      heard = next;
    }
    for (int r = 0; r < n; ++r) ASSERT_EQ(static_cast<int>(heard[r].size()), n) << "n=" << n << " r=" << r;
    int log2n = 0;
    while ((1 << log2n) < n) ++log2n;
    EXPECT_EQ(static_cast<int>(ds.size()), log2n);
  }
}

// Every member of every other cluster has exactly one agent in a cluster, and the agents
// share the work evenly: for clusters of any sizes 1..64.
TEST(Trees, LocalGroupAgentsCoverEveryRemoteMemberOnceAndSpreadEvenly) {
  for (int x_size = 1; x_size <= 64; ++x_size)
    for (int y_size = 1; y_size <= 64; ++y_size)
      for (int y_number : {0, 1, 2, 7}) {
        std::vector<int> served(x_size, 0);
        for (int j = 0; j < y_size; ++j) {
          const int a = lg_agent(j, y_number, x_size);
          ASSERT_GE(a, 0);
          ASSERT_LT(a, x_size);
          ++served[a];
        }
        const auto [lo, hi] = std::minmax_element(served.begin(), served.end());
        ASSERT_LE(*hi - *lo, 1) << "x=" << x_size << " y=" << y_size << ": agents unevenly loaded";
        ASSERT_EQ(*hi, (y_size + x_size - 1) / x_size);
      }
}

// ---------------------------------------------------------------- the paper's two-cluster LG

namespace lg2 = gridrt::detail::lg2;

// Whether every block between the clusters reaches its destination exactly once through
// the wide-area messages of `c` (and nothing else is carried); counts the messages.
bool lg2_complete(const lg2::Shape& c, bool as_printed, std::size_t* messages = nullptr) {
  std::vector<std::vector<int>> arrived(c.size(), std::vector<int>(c.size(), 0));
  const auto msgs = lg2::wan_messages(c, as_printed);
  if (messages) *messages = msgs.size();
  for (const auto& m : msgs)
    for (int k : m.senders) {
      if (c.in_c1(k) == c.in_c1(m.to)) return false;  // a local block crossed
      ++arrived[k][m.to];
    }
  for (int i = 0; i < c.size(); ++i)
    for (int j = 0; j < c.size(); ++j)
      if (c.in_c1(i) != c.in_c1(j) && arrived[i][j] != 1) return false;
  return true;
}

// The paper's worked example (n1 = 3, n2 = 7): its steps, a block's proxy, and the fix
// for the partial last group (node 9's blocks for nodes 1 and 2 would go to nodes 10 and
// 11, which do not exist).
TEST(LocalGroupTwo, ThePapersExampleWithItsPartialGroupMended) {
  const lg2::Shape c{3, 7};
  EXPECT_EQ(c.steps(), 3);
  EXPECT_EQ(lg2::proxy(c, 7, 2), 8);
  EXPECT_EQ(lg2::proxy(c, 9, 1, true), 10);
  EXPECT_EQ(lg2::proxy(c, 9, 2, true), 11);
  EXPECT_EQ(lg2::proxy(c, 9, 1), 7);
  EXPECT_EQ(lg2::proxy(c, 9, 2), 8);
  std::vector<std::tuple<int, int, int>> pairs;  // step, C1 node, C2 node
  for (const auto& m : lg2::wan_messages(c))
    if (c.in_c1(m.from)) pairs.emplace_back(m.step, m.from, m.to);
  EXPECT_EQ(pairs, (std::vector<std::tuple<int, int, int>>{{1, 0, 3}, {1, 1, 4}, {1, 2, 5}, {2, 0, 6}, {2, 1, 7}, {2, 2, 8}, {3, 0, 9}}));
  for (const auto& m : lg2::wan_messages(c))
    if (m.from == 7 && m.to == 1) { EXPECT_EQ(m.senders, (std::vector<int>{6, 7, 8, 9})) << "node 7 carries the partial group's block"; }
  std::size_t messages = 0;
  EXPECT_TRUE(lg2_complete(c, false, &messages));
  EXPECT_EQ(messages, 14u) << "against 2 * 3 * 7 = 42 for the direct exchange";
  EXPECT_FALSE(lg2_complete(c, true));
}

// Every pair of cluster sizes 1 <= n1 <= n2 <= 64: with the fix, every block crosses once,
// in 2 * n2 wide-area messages, each C1 node's message n1 blocks and every message at most
// 2 * n1 - 1; phase 1 keeps every block in its sender's cluster. As printed, the rule is
// complete exactly when n1 divides n2 (1800 of the 2080 pairs are not).
TEST(LocalGroupTwo, EveryBlockCrossesOnceForEveryPairOfSizesUpTo64) {
  int printed_incomplete = 0, pairs = 0;
  for (int n1 = 1; n1 <= 64; ++n1)
    for (int n2 = n1; n2 <= 64; ++n2) {
      const lg2::Shape c{n1, n2};
      ++pairs;
      std::size_t messages = 0;
      ASSERT_TRUE(lg2_complete(c, false, &messages)) << n1 << "+" << n2;
      ASSERT_EQ(messages, 2u * n2) << n1 << "+" << n2;
      for (const auto& m : lg2::wan_messages(c)) {
        if (c.in_c1(m.from)) { ASSERT_EQ(m.senders.size(), static_cast<std::size_t>(n1)) << n1 << "+" << n2; }
        ASSERT_LE(m.senders.size(), static_cast<std::size_t>(2 * n1 - 1)) << n1 << "+" << n2;
      }
      for (int i = 0; i < c.size(); ++i)
        for (int j = 0; j < c.size(); ++j) {
          const int p = lg2::proxy(c, i, j);
          ASSERT_TRUE(p >= 0 && p < c.size() && c.in_c1(p) == c.in_c1(i)) << n1 << "+" << n2 << ": M(" << i << "," << j << ")";
        }
      const bool complete = lg2_complete(c, true);
      EXPECT_EQ(complete, n2 % n1 == 0) << n1 << "+" << n2;
      printed_incomplete += !complete;
    }
  EXPECT_EQ(pairs, 2080);
  EXPECT_EQ(printed_incomplete, 1800);
}

// The routes of the hierarchical scatter and gather (coll/part_trees.h), over every layout
// of 1..7 sites of 1..3 parts (in runs, and with parts of sites interleaved), every root.
namespace {
using gridrt::detail::part_tree;
using gridrt::detail::PartTree;
using gridrt::detail::Route;
using gridrt::detail::route_name;

struct Layout {
  std::vector<std::vector<int>> sites;
  std::vector<int> site_of_part;
};
// Site t holds per_site[t] parts; interleaved: parts dealt round the sites, else in runs.
Layout layout(const std::vector<int>& per_site, bool interleaved) {
  Layout l;
  l.sites.resize(per_site.size());
  int part = 0;
  if (!interleaved) {
    for (std::size_t t = 0; t < per_site.size(); ++t)
      for (int k = 0; k < per_site[t]; ++k) l.sites[t].push_back(part++);
  } else {
    for (int k = 0; k < 3; ++k)
      for (std::size_t t = 0; t < per_site.size(); ++t)
        if (k < per_site[t]) l.sites[t].push_back(part++);
  }
  l.site_of_part.resize(part);
  for (std::size_t t = 0; t < l.sites.size(); ++t)
    for (int p : l.sites[t]) l.site_of_part[p] = static_cast<int>(t);
  return l;
}
// How many site-crossing edges lie between part p and the root.
int wan_depth(const PartTree& t, const Layout& l, int p) {
  int d = 0;
  for (; t.parent[p] >= 0; p = t.parent[p]) d += l.site_of_part[p] != l.site_of_part[t.parent[p]];
  return d;
}
}  // namespace

TEST(PartTrees, EveryRouteSpansEveryPartOnceAndEntersEachSiteOnce) {
  int layouts = 0;
  for (int S = 1; S <= 7; ++S)
    for (int shape = 0; shape < 3; ++shape)
      for (bool interleaved : {false, true}) {
        std::vector<int> per_site(S);
        for (int t = 0; t < S; ++t) per_site[t] = 1 + (t * (shape + 1) + shape) % 3;
        const Layout l = layout(per_site, interleaved);
        const int C = static_cast<int>(l.site_of_part.size());
        ++layouts;
        for (int root = 0; root < C; ++root)
          for (Route r : {Route::kPacked, Route::kBinomial, Route::kChain}) {
            const PartTree t = part_tree(l.sites, l.site_of_part, root, r);
            const std::string at = "S=" + std::to_string(S) + " shape=" + std::to_string(shape) +
                                   " interleaved=" + std::to_string(interleaved) + " root=" + std::to_string(root) +
                                   " route=" + route_name(r);
            ASSERT_EQ(t.root, root) << at;
            ASSERT_EQ(t.parent[root], -1) << at;
            // The root's subtree is every part, once each.
            std::vector<int> all = t.subtree(root);
            std::sort(all.begin(), all.end());
            std::vector<int> expected(C);
            for (int p = 0; p < C; ++p) expected[p] = p;
            ASSERT_EQ(all, expected) << at;
            ASSERT_EQ(static_cast<int>(t.top_down(root).size()), C) << at;
            int deepest = 0;
            for (int p = 0; p < C; ++p) {
              if (p == root) continue;
              const int up = t.parent[p];
              ASSERT_GE(up, 0) << at;
              ASSERT_EQ(std::count(t.children[up].begin(), t.children[up].end(), p), 1) << at << ": part " << p;
              // A site is entered once, at its speaker (the root's part in the root's site, else
              // its first part); its other parts hang under that speaker over the LAN.
              const int site = l.site_of_part[p];
              const int speaker = site == l.site_of_part[root] ? root : l.sites[site].front();
              if (p != speaker) ASSERT_EQ(up, speaker) << at << ": part " << p;
              else ASSERT_NE(l.site_of_part[up], site) << at << ": part " << p;
              deepest = std::max(deepest, wan_depth(t, l, p));
            }
            // WAN hops on the deepest path: one (packed), S - 1 (chain), and for the binomial
            // tree the most set bits of a site number 1 .. S - 1 (at most ceil(log2 S)).
            int bits = 0;
            for (int rel = 1; rel < S; ++rel) bits = std::max(bits, __builtin_popcount(rel));
            const int hops = r == Route::kPacked ? std::min(1, S - 1) : r == Route::kBinomial ? bits : S - 1;
            ASSERT_EQ(deepest, hops) << at;
          }
        // The packed tree is the hierarchy's: every part of the root's site and every other
        // site's head under the root's part, the others under their site's head.
        for (int root = 0; root < C; ++root) {
          const PartTree t = part_tree(l.sites, l.site_of_part, root, Route::kPacked);
          for (int p = 0; p < C; ++p) {
            if (p == root) continue;
            const int site = l.site_of_part[p];
            const bool under_root = site == l.site_of_part[root] || l.sites[site].front() == p;
            ASSERT_EQ(t.parent[p], under_root ? root : l.sites[site].front());
          }
          ASSERT_TRUE(std::is_sorted(t.children[root].begin(), t.children[root].end())) << "served in part order";
        }
      }
  EXPECT_EQ(layouts, 42);
}

TEST(PartTrees, OrderedServesTheLongestTailFirstTiesInPartOrder) {
  const Layout l = layout({1, 1, 1, 1, 1}, false);
  PartTree t = part_tree(l.sites, l.site_of_part, 0, Route::kOrdered);
  gridrt::detail::serve_in_order(t, {0, 2.0, 5.0, 2.0, 9.0});
  EXPECT_EQ(t.children[0], (std::vector<int>{4, 2, 1, 3}));
  // The binomial tree serves its farthest subtree first: from the root of 8 sites, 4, 2, 1.
  const Layout eight = layout({1, 1, 1, 1, 1, 1, 1, 1}, false);
  EXPECT_EQ(part_tree(eight.sites, eight.site_of_part, 0, Route::kBinomial).children[0], (std::vector<int>{4, 2, 1}));
  // From root 5: site numbers count from the root's, so site 1 (relative 4) comes first.
  EXPECT_EQ(part_tree(eight.sites, eight.site_of_part, 5, Route::kBinomial).children[5], (std::vector<int>{1, 7, 6}));
}
