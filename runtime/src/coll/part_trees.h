// The routes a hierarchical scatter or gather can take between the parts (clusters) of a
// communicator: trees over the parts along which packed blocks travel, one message per
// edge, each part's blocks entering it once. Pure functions of the sites' layout, the
// same in every member; tested exhaustively (tests/test_trees.cpp).
//
// The site level is where the trees differ; a site's other parts always hang under its
// head (or, in the root's site, under the root's part): the LAN inside a site is cheap.
//
//   packed    every other site's head under the root's part, the root serving its children
//             in part order: one WAN message per site, straight from the root ("flat trees
//             with message packing" of the grid scatter: Steffenel's group's scatter
//             models, after Kielmann et al., "MagPIe", 1999);
//   ordered   the packed tree, the root serving its children by decreasing tail, the time
//             a child still needs once its message has arrived ("flat trees with order
//             scheduling"; the order is Jackson's rule for one machine with delivery times,
//             optimal for a root that sends one message at a time);
//   binomial  a binomial tree over the sites, numbered from the root's: the site r hangs
//             under r minus its lowest set bit, at most ceil(log2 S) WAN hops deep;
//             every head serves its farthest subtree first;
//   chain     the sites one after the other, each head keeping its site's blocks and
//             handing the rest to the next: S - 1 WAN hops deep.
// (A sixth way, "direct", is no tree: every block crosses on its own, the linear
// algorithms scatterv_linear and gatherv_linear. The hierarchical all-to-all's two routes
// are no trees either: "agents", the Local Group rule for any number of clusters, and
// "groups", the paper's rule for two, alltoallv_local_group*.cpp.)
//
// What each costs is its algorithm's cost function (scatterv_hier.cpp, gatherv_hier.cpp),
// played over the same tree.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "trees.h"

namespace gridrt::detail {

// The trees above, and the all-to-all's (agents, groups) and the all-reduce's (heads:
// through the sites' heads; rooted: a reduction then a broadcast; reduce-scatter: through
// the heads in pieces, each folded by one head) ways between clusters.
enum class Route { kPacked, kOrdered, kBinomial, kChain, kDirect, kAgents, kGroups, kHeads, kRooted, kReduceScatter };
inline constexpr Route kEveryRoute[] = {Route::kPacked, Route::kOrdered, Route::kBinomial, Route::kChain,  Route::kDirect,
                                        Route::kAgents, Route::kGroups,  Route::kHeads,    Route::kRooted, Route::kReduceScatter};

inline const char* route_name(Route r) {
  switch (r) {
    case Route::kPacked: return "packed";
    case Route::kOrdered: return "ordered";
    case Route::kBinomial: return "binomial";
    case Route::kChain: return "chain";
    case Route::kDirect: return "direct";
    case Route::kAgents: return "agents";
    case Route::kGroups: return "groups";
    case Route::kHeads: return "heads";
    case Route::kRooted: return "rooted";
    case Route::kReduceScatter: return "reduce-scatter";
  }
  return "?";
}

// The route of that name (route_name's), or none.
inline std::optional<Route> route_named(const std::string& name) {
  for (Route r : kEveryRoute)
    if (name == route_name(r)) return r;
  return std::nullopt;
}

// "packed, ordered, ..., rooted or reduce-scatter", for messages.
inline std::string route_names() {
  std::string names;
  for (Route r : kEveryRoute) names += std::string(names.empty() ? "" : r == std::end(kEveryRoute)[-1] ? " or " : ", ") + route_name(r);
  return names;
}

struct PartTree {
  int root = 0;                            // the root's part
  std::vector<int> parent;                 // of every part; -1 for the root's
  std::vector<std::vector<int>> children;  // of every part, in the order it serves them

  // The parts of q's subtree: q, then each child's subtree in the child order. Packed
  // messages hold their members' blocks in this order.
  std::vector<int> subtree(int q) const {
    std::vector<int> out{q};
    for (int x : children[q]) {
      const std::vector<int> more = subtree(x);
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }
  // The parts of `from`'s subtree (all, from the root), parents before their children (the
  // order a scatter's data reaches them).
  std::vector<int> top_down(int from) const {
    std::vector<int> out{from};
    for (std::size_t i = 0; i < out.size(); ++i)
      for (int x : children[out[i]]) out.push_back(x);
    return out;
  }
};

// The packed tree's (the hierarchy's) parent of part p, from part `from`: the parts of
// from's site and the heads of other sites hang under `from`, a site's other parts under
// its head.
inline int packed_parent(const std::vector<std::vector<int>>& sites, const std::vector<int>& site_of_part, int p, int from) {
  const int head = sites[site_of_part[p]].front();
  return site_of_part[p] == site_of_part[from] || head == p ? from : head;
}

// The tree of route `r` (not kDirect) over parts laid out in `sites` (each site's parts, in
// part order; site_of_part the inverse), rooted at part `root_part`. kOrdered gives the
// packed tree: serve_in_order() orders it.
inline PartTree part_tree(const std::vector<std::vector<int>>& sites, const std::vector<int>& site_of_part, int root_part, Route r) {
  const int C = static_cast<int>(site_of_part.size()), S = static_cast<int>(sites.size());
  const int home = site_of_part[root_part];
  PartTree t;
  t.root = root_part;
  t.parent.assign(C, -1);
  t.children.assign(C, {});
  // The part that speaks for site number `rel` (counted from the root's site).
  auto speaker = [&](int rel) {
    const int site = (home + rel) % S;
    return rel == 0 ? root_part : sites[site].front();
  };
  auto hang = [&](int child, int under) {
    t.parent[child] = under;
    t.children[under].push_back(child);
  };
  if (r == Route::kPacked || r == Route::kOrdered) {
    for (int p = 0; p < C; ++p)
      if (p != root_part) hang(p, packed_parent(sites, site_of_part, p, root_part));
    return t;
  }
  // Across sites first (a WAN hop has the longest tail), then the site's own other parts.
  for (int rel = 0; rel < S; ++rel) {
    const int at = speaker(rel);
    if (r == Route::kChain) {
      if (rel + 1 < S) hang(speaker(rel + 1), at);
    } else {
      const std::vector<int> below = trees::binomial_children(rel, S);  // nearest first
      for (auto it = below.rbegin(); it != below.rend(); ++it) hang(speaker(*it), at);
    }
    for (int p : sites[(home + rel) % S])
      if (p != at) hang(p, at);
  }
  return t;
}

// The root serves its children by decreasing tail (tail[q]: the time child q still needs
// once its message has been sent; Jackson's rule), ties in part order.
inline void serve_in_order(PartTree& t, const std::vector<double>& tail) {
  std::stable_sort(t.children[t.root].begin(), t.children[t.root].end(), [&](int a, int b) { return tail[a] > tail[b]; });
}

}  // namespace gridrt::detail
