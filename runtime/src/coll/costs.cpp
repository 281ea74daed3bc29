#include "costs.h"

#include <algorithm>
#include <cmath>

#include "models/scatter_models.h"

namespace gridrt::detail {

int ceil_log2(int n) {
  int k = 0;
  while ((1LL << k) < n) ++k;
  return k;
}

CostShape::CostShape(const models::GridModel& model, std::vector<int> members_part, std::vector<int> part_site,
                     const std::vector<std::string>& part_cluster, const std::vector<std::string>& site_name)
    : site_of_part(std::move(part_site)), part_of(std::move(members_part)), corrections(model.corrections) {
  const int C = static_cast<int>(site_of_part.size());
  part_size.assign(C, 0);
  members.assign(C, {});
  for (int i = 0; i < static_cast<int>(part_of.size()); ++i) {
    ++part_size[part_of[i]];
    members[part_of[i]].push_back(i);
  }
  for (int p = 0; p < C; ++p) {
    if (site_of_part[p] >= static_cast<int>(sites.size())) sites.resize(site_of_part[p] + 1);
    sites[site_of_part[p]].push_back(p);
  }
  site_access.assign(sites.size(), false);
  for (std::size_t t = 0; t < sites.size(); ++t) site_access[t] = model.access.count(site_name[t]) > 0;
  gathers.resize(C);
  for (int p = 0; p < C; ++p)
    if (const models::ManyToOneModel* g = model.gathers_of(part_cluster[p])) gathers[p] = std::make_shared<const models::ManyToOneModel>(*g);
  link.assign(C, std::vector<models::PLogP>(C));
  for (int a = 0; a < C; ++a)
    for (int b = 0; b < C; ++b) {
      // A cluster of one process has no pair inside to measure, and needs none: nothing is
      // sent inside it (its own gap as a sender is then taken as nil).
      if (a == b && part_size[a] == 1 && !model.inside.count(part_cluster[a]) && !model.inside.count("*")) continue;
      link[a][b] = model.link(part_cluster[a], site_name[site_of_part[a]], part_cluster[b], site_name[site_of_part[b]]);
    }
  logical.resize(C);
  for (int p = 0; p < C; ++p) {
    const auto at = model.logical.find(part_cluster[p]);
    if (at == model.logical.end() || at->second.groups() < 2 || at->second.between.empty() || part_size[p] < 2) continue;
    const models::LogicalClusters& l = at->second;
    LogicalLevel lv;
    lv.groups = std::min(l.groups(), part_size[p]);
    std::vector<int> nodes(l.groups(), 0);
    for (int g : l.group) ++nodes[g];
    const int largest = *std::max_element(nodes.begin(), nodes.end()), all = static_cast<int>(l.group.size());
    lv.per_group = std::max(1, (part_size[p] * largest + all - 1) / all);
    // The slowest pair: collectives wait for it. Where no logical cluster of two nodes was
    // measured (each is one node), the cluster's own pair (shared memory); not otherwise,
    // since that pair, the cluster's first two processes, may lie in two logical clusters.
    auto slower = [](const models::PLogP& a, const models::PLogP& b) { return b.L > a.L ? b : a; };
    lv.between = l.between.begin()->second;
    for (const auto& [ab, q] : l.between) lv.between = slower(lv.between, q);
    lv.inside = l.inside.empty() ? link[p][p] : l.inside.begin()->second;
    for (const auto& [g, q] : l.inside) lv.inside = slower(lv.inside, q);
    logical[p] = lv;
  }
}

// Over logical clusters, each step as the node level composes it (cluster_steps.cpp): a
// broadcast between the leaders, then inside each; a reduction the other way; an
// allreduce reduces inside, all-reduces between, broadcasts inside; a gather gathers
// inside, then the leaders' blocks of per_group members each; a scatter the other way. The
// all-gather and all-to-all are MPICH's over the whole part, its slowest pair setting the
// pace; a barrier or a scan goes in, across and out.
double CostShape::local(Coll op, int q, double m, double at) const {
  if (!logical[q]) return local_cost(op, part_size[q], link[q][q], m, at);
  const LogicalLevel& lv = *logical[q];
  double t = at;
  auto in = [&](Coll o, double bytes) { t += local_cost(o, lv.per_group, lv.inside, bytes, t); };
  auto across = [&](Coll o, double bytes) { t += local_cost(o, lv.groups, lv.between, bytes, t); };
  switch (op) {
    case Coll::kBcast: across(op, m), in(op, m); break;
    case Coll::kReduce: in(op, m), across(op, m); break;
    case Coll::kAllreduce: in(Coll::kReduce, m), across(Coll::kAllreduce, m), in(Coll::kBcast, m); break;
    case Coll::kGather: in(op, m), across(op, m * lv.per_group); break;
    case Coll::kScatter: across(op, m * lv.per_group), in(op, m); break;
    case Coll::kAllgather:
    case Coll::kAlltoall: return local_cost(op, part_size[q], lv.between, m, at);
    case Coll::kBarrier:
    case Coll::kScan: in(op, m), across(op, m), in(Coll::kBcast, m); break;
  }
  return t - at;
}

Timeline::Timeline(const CostShape& s) : s_(s), sender_free_(s.size(), 0.0) {
  const std::size_t C = s.parts(), S = s.sites.size();
  line_free_.assign(C * C + S * S + S, 0.0);
}

int Timeline::line_of(int a, int b) const {
  const int C = s_.parts(), S = static_cast<int>(s_.sites.size());
  if (a == b) return -1;  // inside a cluster: MPICH's paths, not a shared line
  if (s_.same_site(a, b)) return a * C + b;
  const int sa = s_.site_of_part[a], sb = s_.site_of_part[b];
  if (s_.site_access[sa]) return C * C + S * S + sa;
  return C * C + sa * S + sb;
}

double Timeline::send(int from, int a, int b, double m, double t) {
  // Between two members of a cluster of several logical clusters the message is taken as
  // crossing between them, on the slowest pair: which logical cluster a member is in only
  // its own cluster's processes know, and every member must predict alike (a point-to-point
  // algorithm's critical path crosses anyway: a linear gather waits for the farthest member,
  // a tree over both crosses at least once).
  const bool crossing = a == b && s_.logical[a].has_value();
  const models::PLogP& p = crossing ? s_.logical[a]->between : s_.link[a][b];
  double start = t;
  if (from >= 0) {
    // The sender is busy for its own gap (inside its cluster: handing the message over).
    start = std::max(start, sender_free_[from]);
    sender_free_[from] = start + (crossing ? p : s_.link[a][a]).gap(m);
  }
  const int line = line_of(a, b);
  if (line < 0) return start + p.gap(m) + p.L + (start > kYieldPhase ? p.wake : 0);
  const double clocked = std::max(start, line_free_[line]) + p.gap(m);
  line_free_[line] = clocked;
  return clocked + p.L;
}

std::vector<double> through_heads(const CostShape& s, const std::vector<double>& ready, const std::vector<double>& up,
                                  const std::vector<double>& across, const std::vector<double>& down) {
  Timeline tl(s);
  return through_heads(tl, s, ready, up, across, down);
}

std::vector<double> through_heads(Timeline& tl, const CostShape& s, const std::vector<double>& ready, const std::vector<double>& up,
                                  const std::vector<double>& across, const std::vector<double>& down) {
  const int S = static_cast<int>(s.sites.size());
  std::vector<double> at_head(S, 0), everything(S, 0), done(s.parts(), 0);
  for (int t = 0; t < S; ++t)
    for (int p : s.sites[t])
      at_head[t] = std::max(at_head[t], p == s.head(t) ? ready[p] : tl.send(s.leader(p), p, s.head(t), up[p], ready[p]));
  everything = at_head;
  for (int t = 0; t < S; ++t)
    for (int u = 0; u < S; ++u)
      if (u != t) everything[u] = std::max(everything[u], tl.send(s.leader(s.head(t)), s.head(t), s.head(u), across[t], at_head[t]));
  for (int t = 0; t < S; ++t)
    for (int p : s.sites[t])
      done[p] = p == s.head(t) ? everything[t] : tl.send(s.leader(s.head(t)), s.head(t), p, down[p], everything[t]);
  return done;
}

double local_cost(Coll op, int n, const models::PLogP& p, double m, double at) {
  if (n <= 1) return 0;
  const int k = ceil_log2(n);
  models::PLogP q = p;
  if (at > kYieldPhase) q.L += p.wake;  // the step's receivers have been asleep
  switch (op) {
    case Coll::kBarrier: return k * (q.L + q.gap(0));
    case Coll::kBcast:
    case Coll::kReduce:
    case Coll::kAllreduce:
    case Coll::kScan: return k * (q.L + q.gap(m));
    case Coll::kGather:
    case Coll::kScatter:
    case Coll::kAllgather: return models::scatter_binomial(q, n, m);
    case Coll::kAlltoall: return (n - 1) * q.gap(m) + q.L;
  }
  return 0;
}

}  // namespace gridrt::detail
