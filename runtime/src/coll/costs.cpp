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
                     const std::vector<std::string>& part_cluster, const std::vector<std::string>& site_name,
                     const std::vector<std::string>& member_node)
    : site_of_part(std::move(part_site)), part_of(std::move(members_part)), corrections(model.corrections), slice_costs(model.slice_costs) {
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
    if (const models::ManyToOneModel* g = model.gathers_of(part_cluster[p]))
      gathers[p] = std::make_shared<const models::ManyToOneModel>(*g);
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
    // The slowest pair: collectives wait for it. Where no logical cluster of two nodes was
    // measured (each is one node), the cluster's own pair (shared memory); not otherwise,
    // since that pair, the cluster's first two processes, may lie in two logical clusters.
    auto slower = [](const models::PLogP& a, const models::PLogP& b) { return b.L > a.L ? b : a; };
    lv.between = l.between.begin()->second;
    for (const auto& [ab, q] : l.between) lv.between = slower(lv.between, q);
    lv.inside = l.inside.empty() ? link[p][p] : l.inside.begin()->second;
    for (const auto& [g, q] : l.inside) lv.inside = slower(lv.inside, q);
    // Members where their hosts are, when the model names every one; else in runs over the
    // nodes, in the model's order (more nodes than members: spread).
    const int n = part_size[p], nodes = static_cast<int>(l.group.size());
    std::vector<int> group_of(n);
    bool known = !member_node.empty();
    for (int i = 0; i < n && known; ++i) {
      const auto at_node = std::find(l.nodes.begin(), l.nodes.end(), member_node[members[p][i]]);
      known = at_node != l.nodes.end();
      if (known) group_of[i] = l.group[at_node - l.nodes.begin()];
    }
    if (!known)
      for (int i = 0; i < n; ++i) group_of[i] = l.group[static_cast<std::size_t>(i) * nodes / n];
    lv.place(std::move(group_of));
    logical[p] = std::move(lv);
  }
  set_window(flow::Window{});
}

double CostShape::local(Coll op, int q, double m, double at) const {
  if (!logical[q]) return local_cost(op, part_size[q], link[q][q], m, at);
  const LogicalLevel& lv = *logical[q];
  return composes(op, lv, m, 0, steps) ? composed_cost(op, lv, m, at) : spread_cost(op, lv, m, at);
}

void LogicalLevel::place(std::vector<int> members_group) {
  group_of = std::move(members_group);
  std::map<int, int> count;
  for (int g : group_of) ++count[g];
  groups = std::max<int>(1, static_cast<int>(count.size()));
  per_group = 1;
  for (const auto& [g, k] : count) per_group = std::max(per_group, k);
}

namespace {

// MPICH's step `op` over n processes in rounds (Thakur, Rabenseifner, Gropp, "Optimization
// of Collective Communication Operations in MPICH", 2005): log2 n rounds, round `mask`
// carrying `mask` blocks of m bytes per pair for a gather, scatter or all-gather (binomial
// trees, recursive doubling), one for the others, none for a barrier; the all-to-all one
// round, every pair at once. Each round as long as its slowest pair: across two groups
// (`group_of`, empty: all in one) where any of its pairs is, for the exchanges, whose
// pairs are the dissemination barrier's (i with i + mask mod n), recursive doubling's (i
// with i xor mask) and the scan's (i with i + mask). The rooted operations' pairs are not
// looked at: with members in several groups spread_cost plays their trees instead.
double rounds_cost(Coll op, int n, const std::vector<int>& group_of, const models::PLogP& inside, const models::PLogP& between, double m,
                   double at) {
  auto across = [&](int i, int j) { return group_of[i % n] != group_of[j % n]; };
  auto round = [&](double blocks, bool crosses) {
    const models::PLogP& p = crosses ? between : inside;
    return op == Coll::kAlltoall ? (n - 1) * p.gap(m) + latency_after(p, at) : latency_after(p, at) + p.gap(blocks * m);
  };
  if (op == Coll::kAlltoall) {
    bool any = false;
    for (int i = 1; i < n && !any && !group_of.empty(); ++i) any = across(0, i);
    return round(1, any);
  }
  double t = 0;
  for (int mask = 1; mask < n; mask <<= 1) {
    bool crosses = false;
    for (int i = 0; i < n && !crosses && !group_of.empty(); ++i) switch (op) {
        case Coll::kBarrier: crosses = across(i, i + mask); break;
        case Coll::kAllreduce:
        case Coll::kAllgather: crosses = (i ^ mask) < n && across(i, i ^ mask); break;
        case Coll::kScan: crosses = i + mask < n && across(i, i + mask); break;
        default: break;  // rooted: see above
      }
    const bool per_block = op == Coll::kGather || op == Coll::kScatter || op == Coll::kAllgather;
    t += round(op == Coll::kBarrier ? 0 : per_block ? mask : 1, crosses);
  }
  return t;
}

// MPICH's binomial tree (the rooted operations) over members in several logical clusters,
// played edge by edge rather than in rounds: going down (broadcast, scatter), a member sends
// to its children, largest subtree first, once it has the data, busy for the gap inside for
// each (it hands the message to the pair's connection); an edge takes its pair's gap and
// latency, inside or across, so that edges across, each on a connection of its own, run at
// once. Going up (reduction, gather), a member sends once its children's have arrived.
// Measured on six nodes in two halves, MPICH's tree over the cluster broadcast 64 KiB and
// scattered 1 MiB two to three times faster than the same composed over the halves, whose
// leaders carry everything across on one connection (docs/benchmarks.md).
double binomial_tree_cost(Coll op, int n, int root, const std::vector<int>& group_of, const models::PLogP& inside,
                          const models::PLogP& between, double m, double at) {
  const bool down = op == Coll::kBcast || op == Coll::kScatter, blocks = op == Coll::kScatter || op == Coll::kGather;
  auto edge = [&](int a, int b, double bytes) {  // relative ranks
    const models::PLogP& p = group_of[(a + root) % n] != group_of[(b + root) % n] ? between : inside;
    return p.gap(bytes) + latency_after(p, at);
  };
  auto bytes = [&](int subtree) { return blocks ? subtree * m : m; };
  Times clock;
  if (!down)
    return binomial_up(n, clock,
                       [&](int rel, int parent, int subtree, double ready, double) { return ready + edge(rel, parent, bytes(subtree)); });
  std::vector<double> free(n, 0);  // when each sender is done handing over its last
  return binomial_down(n, clock, [&](int rel, int child, int subtree, double ready) {
    const double start = std::max(ready, free[rel]);
    free[rel] = start + inside.gap(bytes(subtree));
    return start + edge(rel, child, bytes(subtree));
  });
}

}  // namespace

double spread_cost(Coll op, const LogicalLevel& lv, double m, double at, int root) {
  const int n = static_cast<int>(lv.group_of.size());
  if (n <= 1) return 0;
  if (op == Coll::kBcast || op == Coll::kScatter || op == Coll::kReduce || op == Coll::kGather)
    return binomial_tree_cost(op, n, root, lv.group_of, lv.inside, lv.between, m, at);
  return rounds_cost(op, n, lv.group_of, lv.inside, lv.between, m, at);
}

double composed_cost(Coll op, const LogicalLevel& lv, double m, double at) {
  double t = at;
  auto in = [&](Coll o, double bytes) { t += local_cost(o, lv.per_group, lv.inside, bytes, t); };
  auto across = [&](Coll o, double bytes) { t += local_cost(o, lv.groups, lv.between, bytes, t); };
  switch (op) {
    case Coll::kBcast: across(op, m), in(op, m); break;
    case Coll::kReduce: in(op, m), across(op, m); break;
    case Coll::kAllreduce: in(Coll::kReduce, m), across(Coll::kAllreduce, m), in(Coll::kBcast, m); break;
    case Coll::kGather: in(op, m), across(op, m * lv.per_group); break;
    case Coll::kScatter: across(op, m * lv.per_group), in(op, m); break;
    case Coll::kBarrier: in(op, m), across(op, m), in(Coll::kBcast, m); break;
    case Coll::kAllgather:
    case Coll::kAlltoall:
    case Coll::kScan:
    case Coll::kReduceScatter:  // (no step inside a cluster: a reduction, then a scatter)
      return spread_cost(op, lv, m, at);
  }
  return t - at;
}

bool composes(Coll op, const LogicalLevel& lv, double m, int root, ClusterSteps steps) {
  switch (steps) {
    case ClusterSteps::kComposed: return true;
    case ClusterSteps::kMpich: return false;
    case ClusterSteps::kModel: break;
  }
  return composed_cost(op, lv, m, 0) <= spread_cost(op, lv, m, 0, root);
}

Timeline::Timeline(const CostShape& s) : s_(s), sender_free_(s.size(), 0.0), line_free_(s.lines(), 0.0) {}

void CostShape::set_window(flow::Window w) {
  window = static_cast<double>(w.bytes);
  const int C = parts();
  const double frame = static_cast<double>(models::fragment_bytes(w.bytes));
  pair_window.assign(static_cast<std::size_t>(C) * C, PairWindow{});
  for (int a = 0; a < C; ++a)
    for (int b = 0; b < C; ++b) {
      if (a == b) continue;  // inside a cluster: MPICH's paths, no window
      const models::PLogP& p = link[a][b];
      PairWindow& pw = pair_window[a * C + b];
      pw.round_trip = 2 * (p.L + p.gap(0));
      pw.window = static_cast<double>(models::settled_window(w, frame / p.gap(frame), pw.round_trip));
      pw.outpaced = models::FlowWindow::outpaced(pw.window, pw.round_trip, p.gap(frame));
    }
}

int CostShape::lines() const {
  const int C = parts(), S = static_cast<int>(sites.size());
  return C * C + S * S + S;
}

int CostShape::line_of(int a, int b) const {
  const int C = parts(), S = static_cast<int>(sites.size());
  if (a == b) return -1;  // inside a cluster: MPICH's paths, not a shared line
  if (same_site(a, b)) return a * C + b;
  const int sa = site_of_part[a], sb = site_of_part[b];
  if (site_access[sa]) return C * C + S * S + sa;
  return C * C + sa * S + sb;
}

double Timeline::send(int from, int a, int b, double m, double t, int to, double* handed, double) {
  const models::PLogP& p = s_.pair(a, b);
  double start = t;
  if (from >= 0) {
    start = std::max(start, sender_free_[from]);
    sender_free_[from] = start + s_.handover(a, b, m);
  }
  if (handed) *handed = from >= 0 ? sender_free_[from] : start;
  const int line = s_.line_of(a, b);
  const double gap = p.gap(m);
  if (line < 0) return start + gap + latency_after(p, start);
  const double clocked = std::max(start, line_free_[line]) + gap;
  line_free_[line] = clocked;
  // Its stream's frames wait for credit, which comes back a round trip of no data after
  // each left (2 (L + g(0))). Only a line that outpaces the window needs its streams kept,
  // and only so many (a flat all-to-all of 10,000 processes has 10^8): beyond, a message
  // is taken as its stream's first.
  const CostShape::PairWindow& pw = s_.pair_window[a * s_.parts() + b];
  if (!pw.outpaced && !models::goes_as_rendezvous(m)) return clocked + p.L;  // (fresh(): start + gap)
  const std::pair<int, int> stream{from >= 0 ? from : s_.leader(a), to >= 0 ? to : s_.leader(b)};
  auto it = pw.outpaced ? streams_.find(stream) : streams_.end();
  if (pw.outpaced && it == streams_.end() && streams_.size() < kMaxStreams)
    it = streams_.emplace(stream, models::FlowWindow(pw.window, pw.round_trip)).first;
  const double left =
      it != streams_.end() ? it->second.send(m, start, gap) : models::FlowWindow::fresh(pw.window, pw.round_trip, m, start, gap);
  return std::max(clocked, left) + p.L;
}

std::vector<double> through_heads(const CostShape& s, const std::vector<double>& ready, const std::vector<double>& up,
                                  const std::vector<double>& across, const std::vector<double>& down) {
  Timeline tl(s);
  return through_heads(tl, s, ready, up, across, down);
}

std::vector<double> through_heads(Timeline& tl, const CostShape& s, const std::vector<double>& ready, const std::vector<double>& up,
                                  const std::vector<double>& across, const std::vector<double>& down) {
  return from_heads(tl, s, between_heads(tl, s, to_heads(tl, s, ready, up), across), down);
}

std::vector<double> to_heads(Timeline& tl, const CostShape& s, const std::vector<double>& ready, const std::vector<double>& up) {
  const int S = static_cast<int>(s.sites.size());
  std::vector<double> at_head(S, 0);
  for (int t = 0; t < S; ++t)
    for (int p : s.sites[t])
      at_head[t] = std::max(at_head[t], p == s.head(t) ? ready[p] : tl.send(s.leader(p), p, s.head(t), up[p], ready[p]));
  return at_head;
}

std::vector<double> between_heads(Timeline& tl, const CostShape& s, const std::vector<double>& at_head, const std::vector<double>& across) {
  const int S = static_cast<int>(s.sites.size());
  std::vector<double> everything = at_head;
  for (int t = 0; t < S; ++t)
    for (int u = 0; u < S; ++u)
      if (u != t) everything[u] = std::max(everything[u], tl.send(s.leader(s.head(t)), s.head(t), s.head(u), across[t], at_head[t]));
  return everything;
}

std::vector<double> from_heads(Timeline& tl, const CostShape& s, const std::vector<double>& everything, const std::vector<double>& down) {
  const int S = static_cast<int>(s.sites.size());
  std::vector<double> done(s.parts(), 0);
  for (int t = 0; t < S; ++t)
    for (int p : s.sites[t]) done[p] = p == s.head(t) ? everything[t] : tl.send(s.leader(s.head(t)), s.head(t), p, down[p], everything[t]);
  return done;
}

double local_cost(Coll op, int n, const models::PLogP& p, double m, double at) { return n <= 1 ? 0 : rounds_cost(op, n, {}, p, p, m, at); }

}  // namespace gridrt::detail
