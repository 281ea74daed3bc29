// Logical homogeneous clusters (Barchet-Estefanel, Mounié, "Identifying Logical Homogeneous
// Clusters for Efficient Wide-area Communications", 2004, §4-5): a declared cluster whose
// nodes are not alike (two kinds of network card, two switches) is split into logical
// clusters in which one measurement stands for every pair, and those are what the
// collectives should treat as a level.
//
// partition: the paper's Algorithm 1 (after Lowekamp's ECO). Edges (latencies between
// nodes; a missing one is never taken) are visited by non-decreasing weight, ties by their
// nodes, so that every process that runs it gets the same partition; an edge joins the
// subnets of its ends unless it is more than `tolerance` (1.20: "a latency bound of 20%")
// times the cheapest edge at either end, or at either end's subnet; a joined subnet's
// cheapest edge is the least of the two and the edge. Nodes joined to none stay alone.
// `noise`, gridrt's addition: an edge may also exceed those bounds by the measurements'
// own noise (seconds), which the relative rule would otherwise take for a difference
// between nodes where latencies are a few microseconds (0: the paper's rule).
//
// node_names: same-host detection. A node is a host (the topology's name for it), or, where
// MPI sees several shared-memory domains on one host (MPICH's cliques, for tests), each of
// them: "host/k", k counting the host's domains in their leaders' order.
//
// LogicalClusters: what calibration measured inside a declared cluster (its nodes, the
// latency between each two; then the pLogP parameters of one pair per logical cluster and
// per pair of them, measurement_pairs) and the partition the rule draws from it, kept in the
// model file (docs/models.md) so that every process of a job draws the same one.
//
// measurement_pairs: what to measure once the partition is known (§5.2): one pair inside
// every subnet that holds two hosts, and one pair for every pair of subnets; processes of
// one host share memory and are not measured as a network. With links alike both ways that
// is at most C(C+1)/2 measurements for C subnets (21 for the paper's 6), against n(n-1)/2
// pairs of nodes.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "models/plogp.h"

namespace gridrt::models {

// latency[a][b]: the cost between nodes a and b (s); NaN or infinity where it is not
// known. Where both directions are known their mean is taken. Returns each node's subnet,
// the subnets numbered by their first node.
inline std::vector<int> partition(const std::vector<std::vector<double>>& latency, double tolerance = 1.20, double noise = 0) {
  const int n = static_cast<int>(latency.size());
  auto known = [](double w) { return std::isfinite(w); };
  auto weight = [&](int a, int b) {
    const double ab = latency[a][b], ba = latency[b][a];
    if (known(ab) && known(ba)) return (ab + ba) / 2;
    return known(ab) ? ab : ba;
  };
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<std::tuple<double, int, int>> edges;
  std::vector<double> node_min(n, kNone);
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const double w = weight(a, b);
      if (!known(w)) continue;
      edges.emplace_back(w, a, b);
      node_min[a] = std::min(node_min[a], w);
      node_min[b] = std::min(node_min[b], w);
    }
  std::sort(edges.begin(), edges.end());
  // Subnets as a union-find over nodes; a node in no subnet yet is its own root with no
  // subnet minimum (it does not constrain the join).
  std::vector<int> root(n);
  std::iota(root.begin(), root.end(), 0);
  std::vector<double> subnet_min(n, kNone);
  std::vector<bool> in_subnet(n, false);
  auto find = [&](int v) {
    while (root[v] != v) v = root[v] = root[root[v]];
    return v;
  };
  for (const auto& [w, a, b] : edges) {
    const int ra = find(a), rb = find(b);
    if (ra == rb) continue;
    auto beyond = [&](double least) { return w > tolerance * least + noise; };
    if (beyond(node_min[a]) || beyond(node_min[b])) continue;
    if (in_subnet[ra] && beyond(subnet_min[ra])) continue;
    if (in_subnet[rb] && beyond(subnet_min[rb])) continue;
    root[rb] = ra;
    subnet_min[ra] = std::min({w, subnet_min[ra], subnet_min[rb]});
    in_subnet[ra] = true;
  }
  std::vector<int> subnet(n, -1), number(n, -1);
  int next = 0;
  for (int v = 0; v < n; ++v) {
    const int r = find(v);
    if (number[r] < 0) number[r] = next++;
    subnet[v] = number[r];
  }
  return subnet;
}

// Every process's node name, from every process's host and the rank of the first process
// of its shared-memory domain (any number identifying the domain, alike within it).
inline std::vector<std::string> node_names(const std::vector<std::string>& host, const std::vector<int>& domain) {
  std::map<std::string, std::vector<int>> domains;  // each host's, in their first processes' order
  for (std::size_t r = 0; r < host.size(); ++r) {
    std::vector<int>& seen = domains[host[r]];
    if (std::find(seen.begin(), seen.end(), domain[r]) == seen.end()) seen.push_back(domain[r]);
  }
  std::vector<std::string> out(host.size());
  for (std::size_t r = 0; r < host.size(); ++r) {
    const std::vector<int>& seen = domains[host[r]];
    out[r] = seen.size() == 1 ? host[r] : host[r] + "/" + std::to_string(std::find(seen.begin(), seen.end(), domain[r]) - seen.begin());
  }
  return out;
}

// A declared cluster's nodes as measured, and their logical clusters (drawn once, when
// made: `of`).
struct LogicalClusters {
  std::vector<std::string> nodes;
  std::vector<std::vector<double>> latency;  // [a][b], s (one way: half a round trip of no data)
  double tolerance = 1.20;
  double noise = 0;        // s: the latency measurements' own spread (calibration's)
  std::vector<int> group;  // of each node: partition(latency, tolerance, noise)
  // pLogP of the pairs measured (measurement_pairs): inside a logical cluster whose nodes
  // are not all one; between two logical clusters (a < b). Empty where none was measured.
  std::map<int, PLogP> inside;
  std::map<std::pair<int, int>, PLogP> between;

  static LogicalClusters of(std::vector<std::string> nodes, std::vector<std::vector<double>> latency, double tolerance = 1.20,
                            double noise = 0) {
    LogicalClusters l;
    l.nodes = std::move(nodes);
    l.latency = std::move(latency);
    l.tolerance = tolerance;
    l.noise = noise;
    l.group = partition(l.latency, l.tolerance, l.noise);
    return l;
  }

  int groups() const { return group.empty() ? 0 : *std::max_element(group.begin(), group.end()) + 1; }
  // The logical cluster of node `name`, or -1 if it was not measured.
  int group_of(const std::string& name) const {
    const auto at = std::find(nodes.begin(), nodes.end(), name);
    return at == nodes.end() ? -1 : group[at - nodes.begin()];
  }
};

// The pairs of nodes to measure (each pair once: links alike both ways), given each node's
// subnet and host: inside each subnet, its first two nodes on different hosts (none if all
// its nodes share one host); between two subnets, their first nodes.
inline std::vector<std::pair<int, int>> measurement_pairs(const std::vector<int>& subnet, const std::vector<std::string>& host) {
  const int subnets = subnet.empty() ? 0 : *std::max_element(subnet.begin(), subnet.end()) + 1;
  std::vector<std::vector<int>> members(subnets);
  for (int v = 0; v < static_cast<int>(subnet.size()); ++v) members[subnet[v]].push_back(v);
  std::vector<std::pair<int, int>> pairs;
  for (const auto& m : members) {
    auto other = std::find_if(m.begin(), m.end(), [&](int v) { return host[v] != host[m.front()]; });
    if (other != m.end()) pairs.emplace_back(m.front(), *other);
  }
  for (int s = 0; s < subnets; ++s)
    for (int t = s + 1; t < subnets; ++t) pairs.emplace_back(members[s].front(), members[t].front());
  return pairs;
}

}  // namespace gridrt::models
