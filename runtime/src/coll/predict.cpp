// What auto chooses when the grid's model is loaded (GRIDRT_MODEL; docs/models.md): for
// every call, the algorithm with the least predicted time (algorithms.h's cost functions)
// for that operation, size, root and communicator. Every member has the same model and the
// same communicator shape, and the sizes are ones every member knows (choice.h), so every
// member chooses alike; for the v-forms whose sizes only some members know, the candidate
// least slower than the best over all sizes (choose_without_sizes). Without a model, the
// measured rules of choice.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "catalogue.h"

namespace gridrt::detail {

namespace {
// The route an operation takes when `r` is asked for: `r` where it is one of the
// operation's, else its first (a gather has no order to schedule, its root receiving what
// arrives, so ordered is packed there; the paper's two-cluster all-to-all needs two parts).
Route effective(Coll op, int parts, Route r) {
  return algorithm_of(op, Algo::kHier, r, parts).route.value_or(Route::kPacked);  // one way: a Pick's default
}

// The model's cost of a slice of `op` on route r: its own, else the operation's, else none.
double slice_cost_of(const CostShape& s, Coll op, Route r) {
  auto it = s.slice_costs.find(std::string(coll_name(op)) + "/" + route_name(r));
  if (it == s.slice_costs.end()) it = s.slice_costs.find(coll_name(op));
  return it == s.slice_costs.end() ? 0 : it->second;
}

// A pipelined collective's least time and its slice: GRIDRT_SLICE's where set, else the
// model's choice.
SlicePick sliced(const std::function<double(double)>& cost, double m, std::optional<std::size_t> forced) {
  if (forced) return {cost(static_cast<double>(*forced)), *forced};
  return pipelined_slice(cost, m);
}

Prediction uncorrected(const CostShape& s, Coll op, std::size_t bytes, int root, std::optional<Route> forced,
                       std::optional<std::size_t> forced_slice);

// The rooted route's: the all-reduce's reduction and broadcast from member 0 on the routes
// and in the slices own_pick gives them (the same prediction, corrections aside, which keep
// each one's order; GRIDRT_ROUTE aside); the reduce-scatter's hierarchical reduction of
// all P blocks to member 0, then its hierarchical scatter of them, on their own routes.
double rooted_cost(const CostShape& s, Coll op, std::size_t bytes, std::optional<std::size_t> forced_slice) {
  if (op == Coll::kReduceScatter)
    return uncorrected(s, Coll::kReduce, bytes * static_cast<std::size_t>(s.size()), 0, std::nullopt, forced_slice).hier +
           uncorrected(s, Coll::kScatter, bytes, 0, std::nullopt, forced_slice).hier;
  const Prediction reduce = uncorrected(s, Coll::kReduce, bytes, 0, std::nullopt, forced_slice);
  const Prediction bcast = uncorrected(s, Coll::kBcast, bytes, 0, std::nullopt, forced_slice);
  return allreduce_rooted_cost(s, static_cast<double>(bytes), Pick{Algo::kHier, reduce.route, reduce.slice, nullptr},
                               Pick{Algo::kHier, bcast.route, bcast.slice, nullptr});
}

// The flat algorithm's prediction and the hierarchical family's on each of its routes, by
// the catalogue's rows (catalogue.h).
Prediction uncorrected(const CostShape& s, Coll op, std::size_t bytes, int root, std::optional<Route> forced,
                       std::optional<std::size_t> forced_slice) {
  const double m = static_cast<double>(bytes);
  const double given_slice = static_cast<double>(forced_slice.value_or(kDefaultSlice));
  Prediction p;
  p.flat = algorithm_of(op, Algo::kFlat, Route::kPacked, s.parts()).cost(s, {root, m, Route::kPacked, given_slice});
  const std::vector<Route> routes = routes_of(op, s.parts());
  if (routes.empty()) {  // its one way
    p.hier = algorithm_of(op, Algo::kHier, Route::kPacked, s.parts()).cost(s, {root, m, Route::kPacked, given_slice});
    return p;
  }
  std::vector<std::size_t> slices;  // each route's
  for (Route r : routes) {
    const Algorithm& a = algorithm_of(op, Algo::kHier, r, s.parts());
    // A pipelined route's every slice also costs the model's slice cost (its steps'
    // scheduling, which the messages' parameters do not see): more slices pipeline
    // better on the lines and cost more in the processes and relays.
    const double per_slice = a.pipelined ? slice_cost_of(s, op, r) : 0.0;
    auto on_route = [&](double slice) { return a.cost(s, {root, m, r, slice}) + per_slice * SliceSizes(m, slice).count(); };
    const SlicePick least = !a.cost       ? SlicePick{rooted_cost(s, op, bytes, forced_slice), kDefaultSlice}  // a composition
                            : a.pipelined ? sliced(on_route, m, forced_slice)
                                          : SlicePick{on_route(given_slice), kDefaultSlice};
    p.routes.emplace_back(r, least.t);
    slices.push_back(least.slice);
  }
  // GRIDRT_ROUTE's, else the least predicted (the first of equals).
  auto least = std::min_element(p.routes.begin(), p.routes.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  p.route = forced ? effective(op, s.parts(), *forced) : least->first;
  for (std::size_t i = 0; i < p.routes.size(); ++i)
    if (p.routes[i].first == p.route) p.hier = p.routes[i].second, p.slice = slices[i];
  return p;
}
}  // namespace

SlicePick pipelined_slice(const std::function<double(double)>& cost, double m) {
  std::vector<SlicePick> tried;
  std::size_t slice = kSmallestSlice;
  while (static_cast<double>(slice) * kMostSlices < m) slice *= 2;
  for (;; slice *= 2) {
    tried.push_back({cost(static_cast<double>(slice)), slice});
    if (static_cast<double>(slice) >= m) break;
  }
  const double least = std::min_element(tried.begin(), tried.end(), [](const auto& a, const auto& b) { return a.t < b.t; })->t;
  auto off_default = [](std::size_t slice) { return std::abs(std::log2(static_cast<double>(slice) / kDefaultSlice)); };
  const SlicePick* best = nullptr;
  for (const SlicePick& s : tried)  // sizes increasing: `<=` keeps the larger of two as near
    if (s.t <= least * (1 + kSliceTolerance) && (!best || off_default(s.slice) <= off_default(best->slice))) best = &s;
  return *best;
}

// The cost functions' predictions, corrected as the model's sample run says (models/grid_model.h);
// the hierarchical family's correction applies to each of its routes (a correction keeps the
// order of times, so the slices chosen before it stand).
Prediction predict(const CostShape& s, Coll op, std::size_t bytes, int root, std::optional<Route> forced,
                   std::optional<std::size_t> slice) {
  Prediction p = uncorrected(s, op, bytes, root, forced, slice);
  const std::string name = coll_name(op);
  if (const auto it = s.corrections.find(name + "/hier"); it != s.corrections.end()) {
    p.hier = it->second.apply(p.hier);
    for (auto& r : p.routes) r.second = it->second.apply(r.second);
  }
  if (const auto it = s.corrections.find(name + "/flat"); it != s.corrections.end()) p.flat = it->second.apply(p.flat);
  return p;
}

// Ratios of predictions this close to 1 are taken as equal times: the event timeline adds
// a message's gap frame by frame, one rounding each, where Timeline adds it whole.
constexpr double kSameTime = 1e-9;

SizelessChoice choose_without_sizes(const CostShape& s, Coll op, int root, std::optional<Route> forced) {
  using Candidate = SizelessChoice::Candidate;
  // A scatterv's and a gatherv's flat algorithm is the linear one, the direct route's (not
  // the binomial tree of the scatter and gather, which needs every block's size).
  const bool flat_is_direct = op == Coll::kScatter || op == Coll::kGather;
  std::vector<Candidate> candidates;
  const std::vector<Route> routes = routes_of(op, s.parts());
  for (Route r : routes)
    if ((!forced || r == effective(op, s.parts(), *forced)) && !(flat_is_direct && r == Route::kDirect))
      candidates.push_back({Algo::kHier, r});
  if (routes.empty()) candidates.push_back({Algo::kHier, Route::kPacked});
  candidates.push_back({Algo::kFlat, Route::kPacked});
  for (std::size_t b : kSizesWeighed) {
    const Prediction p = predict(s, op, b, root);
    auto route_time = [&](Route route) {
      for (const auto& [r, t] : p.routes)
        if (r == route) return t;
      return p.hier;
    };
    auto time = [&](const Candidate& c) {
      if (c.algo == Algo::kFlat) return flat_is_direct ? route_time(Route::kDirect) : p.flat;
      return route_time(c.route);
    };
    double least = time(candidates.front());
    for (const Candidate& c : candidates) least = std::min(least, time(c));
    for (Candidate& c : candidates) {
      const double t = time(c), ratio = least > 0 ? t / least : t > 0 ? HUGE_VAL : 1.0;
      if (ratio > c.worst * (1 + kSameTime)) c.worst = ratio, c.at = b;
    }
  }
  const auto taken = std::min_element(candidates.begin(), candidates.end(),
                                      [](const Candidate& a, const Candidate& b) { return a.worst * (1 + kSameTime) < b.worst; });
  SizelessChoice choice;
  choice.algo = taken->algo;
  choice.route = taken->route;
  choice.candidates = std::move(candidates);
  return choice;
}

const char* coll_name(Coll op) {
  switch (op) {
    case Coll::kBarrier: return "barrier";
    case Coll::kBcast: return "bcast";
    case Coll::kReduce: return "reduce";
    case Coll::kAllreduce: return "allreduce";
    case Coll::kGather: return "gather";
    case Coll::kScatter: return "scatter";
    case Coll::kAllgather: return "allgather";
    case Coll::kAlltoall: return "alltoall";
    case Coll::kScan: return "scan";
    case Coll::kReduceScatter: return "reduce_scatter";
  }
  return "?";
}

namespace {

// The communicator's shape with the model's parameters: its parts' clusters and sites by
// name, as the topology has them.
std::shared_ptr<const CostShape> shape_of(const CommImpl& c) {
  const Topology& t = state().topo;
  std::vector<std::string> part_cluster, site_name(c.sites.size()), member_node;
  if (t.rank_node.size() == t.size())
    for (int r : c.members) member_node.push_back(t.nodes[t.rank_node[r]]);
  for (std::size_t p = 0; p < c.parts.size(); ++p) {
    const ClusterPart& cluster = t.clusters[t.cluster_of(static_cast<std::uint32_t>(c.members[c.leader(static_cast<int>(p))]))];
    part_cluster.push_back(cluster.name);
    site_name[c.site_of_part[p]] = t.sites[cluster.site];
  }
  auto shape = std::make_shared<CostShape>(*state().model, c.part_of, c.site_of_part, part_cluster, site_name, member_node);
  shape->steps = state().cluster_steps;
  shape->set_window(state().window);
  return shape;
}

}  // namespace

const CostShape* costs_of(CommImpl& c) {
  if (!state().model) return nullptr;
  CollState& kept = coll_state(c);
  if (!kept.costs_tried) {
    kept.costs_tried = true;
    try {
      kept.costs = shape_of(c);
    } catch (const models::ModelError& e) {
      if (c.me == 0) std::fprintf(stderr, "gridrt: auto follows its measured rules on this communicator: %s\n", e.what());
    }
  }
  return kept.costs.get();
}

const std::string& cluster_name_of(const CommImpl& c) {
  const Topology& t = state().topo;
  return t.clusters[t.cluster_of(static_cast<std::uint32_t>(c.members[c.leader(c.my_part())]))].name;
}

const models::ManyToOneModel* many_to_one_of(const CommImpl& c) {
  if (!state().model || state().model->many_to_one.empty()) return nullptr;
  return state().model->gathers_of(cluster_name_of(c));
}

namespace {
// What the model picks for a call of `bytes` every member knows; `said`, where not null,
// gets what GRIDRT_EXPLAIN says of it (every route's prediction, the slices).
Pick with_size(const CommImpl& c, const CostShape& costs, Coll op, std::size_t bytes, int root, std::optional<Route> forced,
               std::string* said) {
  const Prediction p = predict(costs, op, bytes, root, forced, state().slice);
  Pick pick{p.flat < p.hier ? Algo::kFlat : Algo::kHier, p.route, p.slice, nullptr};
  if (p.route == Route::kOrdered)
    pick.tree = std::make_shared<const PartTree>(scatter_tree(costs, root, static_cast<double>(bytes), p.route));
  if (!said) return pick;
  std::string routes;  // the hierarchical family's routes, where it has several
  for (const auto& [r, t] : p.routes.size() > 1 ? p.routes : std::vector<std::pair<Route, double>>{}) {
    char one[64];
    std::snprintf(one, sizeof one, "%s%s %.1f us", routes.empty() ? " (" : ", ", route_name(r), t * 1e6);
    routes += one;
  }
  if (!routes.empty()) routes += ")";
  // Auto's family; where its hierarchical one has several routes, also the one it takes,
  // and where it is pipelined its slices ("hier by the chain route in slices of 16384 B";
  // "flat (hier's: the chain route in slices of 16384 B)").
  std::string how;
  if (!routes.empty()) how = std::string("the ") + route_name(p.route) + " route";
  // (The rooted route's reduction and broadcast say their own; one cluster's is MPICH's.)
  if (algorithm_of(op, Algo::kHier, p.route, costs.parts()).pipelined && c.parts.size() > 1)
    how += (how.empty() ? "" : " ") + std::string("in slices of ") + std::to_string(p.slice) + " B";
  std::string chosen = pick.algo == Algo::kFlat ? "flat" : "hier";
  if (!how.empty()) chosen += pick.algo == Algo::kFlat ? " (hier's: " + how + ")" : (routes.empty() ? " " : " by ") + how;
  char head[192], flat[64];
  std::snprintf(head, sizeof head, "gridrt: auto: %s of %zu B on %d members in %d clusters at %zu sites: hier %.1f us", coll_name(op),
                bytes, c.size(), static_cast<int>(c.parts.size()), c.sites.size(), p.hier * 1e6);
  std::snprintf(flat, sizeof flat, ", flat %.1f us -> ", p.flat * 1e6);
  *said = head + routes + flat + chosen;
  return pick;
}

// What the model picks for a v-form whose sizes not every member knows
// (choose_without_sizes); `said` as with_size's (every candidate's worst ratio).
Pick without_sizes(const CommImpl& c, const CostShape& costs, Coll op, int root, std::optional<Route> forced, std::string* said) {
  const SizelessChoice choice = choose_without_sizes(costs, op, root, forced);
  const Pick pick{choice.algo, choice.route, kDefaultSlice, nullptr};
  if (!said) return pick;
  const bool routes = !routes_of(op, costs.parts()).empty();
  auto name = [&](Algo a, Route r) {
    return a == Algo::kFlat ? std::string("flat") : routes ? std::string("hier by ") + route_name(r) : "hier";
  };
  std::string candidates;
  for (const auto& k : choice.candidates) {
    char worst[64] = "never slower";
    if (k.at) std::snprintf(worst, sizeof worst, "%.2fx at %zu B", k.worst, k.at);
    candidates += (candidates.empty() ? "" : ", ") + name(k.algo, k.route) + " " + worst;
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "gridrt: auto: %s of blocks whose sizes not every member knows, on %d members in %d clusters at %zu sites: "
                "each at its worst against the least predicted from %zu B to %zu B: ",
                coll_name(op), c.size(), static_cast<int>(c.parts.size()), c.sites.size(), kSizesWeighed[0], std::end(kSizesWeighed)[-1]);
  *said = line + candidates + " -> " + name(choice.algo, choice.route);
  return pick;
}

// The model's pick for one call, made once per (operation, size, root, route forced) and
// kept; none without a model. `forced`: GRIDRT_ROUTE's, or packed for an operation that
// folds in rank order (only the packed tree keeps it), or none. GRIDRT_EXPLAIN says each
// one, when it is first made.
std::optional<Pick> modelled(CommImpl& c, Coll op, std::size_t bytes, int root, std::optional<Route> forced) {
  const CostShape* costs = costs_of(c);
  if (!costs) return std::nullopt;
  if (forced && routes_of(op, costs->parts()).empty()) forced.reset();  // nothing to fix
  const auto key = std::make_tuple(static_cast<int>(op), bytes, root, forced ? static_cast<int>(*forced) : -1);
  auto& chosen = coll_state(c).chosen;
  if (const auto it = chosen.find(key); it != chosen.end()) return it->second;
  const bool keep = chosen.size() < kChoicesKept;
  std::string said;
  std::string* explained = keep && state().explain && c.me == 0 ? &said : nullptr;
  const Pick pick = bytes == kSizeNotShared ? without_sizes(c, *costs, op, root, forced, explained)
                                            : with_size(c, *costs, op, bytes, root, forced, explained);
  if (!keep) return pick;
  chosen.emplace(key, pick);
  if (explained) std::fprintf(stderr, "%s\n", said.c_str());
  return pick;
}
}  // namespace

Algo auto_choice(CommImpl& c, Coll op, std::size_t bytes, int root) {
  if (const auto m = modelled(c, op, bytes, root, state().route)) return m->algo;
  return auto_picks_flat(c.sites.size(), c.parts.size(), op, bytes) ? Algo::kFlat : Algo::kHier;
}

Pick choose_with_route(Algo asked, CommImpl& c, Coll op, std::size_t bytes, int root, bool rank_order) {
  const Algo a = asked_for(asked);
  if (a == Algo::kFlat) return {Algo::kFlat, Route::kPacked, kDefaultSlice, nullptr};
  Pick pick;
  // Folding in rank order, a route that does not keep it is not asked for, nor taken where
  // the model would choose it: the packed tree (the all-reduce's heads) instead.
  const int parts = static_cast<int>(c.parts.size());
  auto keeps_rank_order = [&](Route r) { return algorithm_of(op, Algo::kHier, r, parts).keeps_rank_order; };
  std::optional<Route> asked_route = state().route;
  if (rank_order && asked_route && !keeps_rank_order(*asked_route)) asked_route = Route::kPacked;
  std::optional<Pick> m = modelled(c, op, bytes, root, asked_route);
  if (rank_order && m && !keeps_rank_order(m->route)) m = modelled(c, op, bytes, root, Route::kPacked);
  if (m) {
    pick = *m;
    if (a == Algo::kHier) pick.algo = Algo::kHier;
  } else {
    const std::vector<Route> routes = routes_of(op, static_cast<int>(c.parts.size()));
    const Route route = asked_route.value_or(rank_order || routes.empty() ? Route::kPacked : routes.front());
    const bool flat = a == Algo::kAuto && auto_picks_flat(c.sites.size(), c.parts.size(), op, bytes);
    pick = {flat ? Algo::kFlat : Algo::kHier, effective(op, static_cast<int>(c.parts.size()), route), state().slice.value_or(kDefaultSlice),
            nullptr};
  }
  if (rank_order && pick.algo == Algo::kHier && !folds_keep_rank_order(c)) pick.algo = Algo::kFlat;
  return pick;
}

Pick own_pick(CommImpl& c, Coll op, std::size_t bytes, int root) {
  if (auto m = modelled(c, op, bytes, root, std::nullopt)) {
    m->algo = Algo::kHier;
    return *m;
  }
  const std::vector<Route> routes = routes_of(op, static_cast<int>(c.parts.size()));
  return {Algo::kHier, routes.empty() ? Route::kPacked : routes.front(), state().slice.value_or(kDefaultSlice), nullptr};
}

PartTree rooted_tree(CommImpl& c, Coll op, int root, const Pick& pick) {
  if (pick.tree) return *pick.tree;
  const Route r = effective(op, static_cast<int>(c.parts.size()), pick.route);
  PartTree t = part_tree(c.sites, c.site_of_part, c.part_of[root], r);
  if (r != Route::kOrdered) return t;
  // Without the model's times: children with more members below them first.
  std::vector<double> tail(c.parts.size(), 0);
  for (int x : t.children[t.root]) tail[x] = static_cast<double>(c.members_of(t.subtree(x)).size());
  serve_in_order(t, tail);
  return t;
}

std::shared_ptr<const PartTree> ordered_tree(CommImpl& c, int root, double block) {
  const CostShape* costs = costs_of(c);
  if (!costs) return nullptr;
  return std::make_shared<const PartTree>(scatter_tree(*costs, root, block, Route::kOrdered));
}

Coll coll_named(const std::string& op) {
  for (Coll c : {Coll::kBarrier, Coll::kBcast, Coll::kReduce, Coll::kAllreduce, Coll::kGather, Coll::kScatter, Coll::kAllgather,
                 Coll::kAlltoall, Coll::kScan, Coll::kReduceScatter})
    if (op == coll_name(c)) return c;
  throw Error("gridrt: predicted_us: unknown collective '" + op + "'");
}

double pick(const Prediction& p, Algo algo) {
  const double s = algo == Algo::kHier ? p.hier : algo == Algo::kFlat ? p.flat : std::min(p.hier, p.flat);
  return s * 1e6;
}

}  // namespace gridrt::detail

namespace gridrt {

double Comm::predicted_us(const std::string& op, std::size_t bytes, Algo algo, int root) const {
  const detail::Coll which = detail::coll_named(op);
  const detail::CostShape* costs = detail::costs_of(impl());
  if (!costs) return -1;
  if (algo == Algo::kDefault) algo = detail::asked_for(algo);
  return detail::pick(detail::predict(*costs, which, bytes, root, detail::state().route, detail::state().slice), algo);
}

namespace {
// The shape of a grid described by name (GridShape) with `model`'s parameters, those it
// does not name taking its typical ones.
std::shared_ptr<const detail::CostShape> shape_of(const models::GridModel& model, const GridShape& grid) {
  if (grid.clusters.size() != grid.sites.size() || grid.clusters.size() != grid.ranks.size() || grid.clusters.empty())
    throw Error("gridrt: GridPredictor: a cluster, a site and a number of ranks for each cluster");
  std::vector<int> part_of, site_of_part;
  std::vector<std::string> site_name;
  for (std::size_t p = 0; p < grid.clusters.size(); ++p) {
    if (grid.ranks[p] < 1) throw Error("gridrt: GridPredictor: every cluster needs at least one rank");
    part_of.insert(part_of.end(), grid.ranks[p], static_cast<int>(p));
    auto at = std::find(site_name.begin(), site_name.end(), grid.sites[p]);
    if (at == site_name.end()) at = site_name.insert(site_name.end(), grid.sites[p]);
    site_of_part.push_back(static_cast<int>(at - site_name.begin()));
  }
  auto shape = std::make_shared<detail::CostShape>(model.with_typical(), part_of, site_of_part, grid.clusters, site_name);
  if (grid.window) shape->set_window(flow::Window{grid.window, false});
  return shape;
}

// A model read by `read`, its errors as the API's.
template <class Read> std::shared_ptr<const detail::CostShape> shape_from(Read read, const GridShape& grid) {
  try {
    return shape_of(read(), grid);
  } catch (const models::ModelError& e) { throw Error(std::string("gridrt: ") + e.what()); }
}
}  // namespace

GridPredictor GridPredictor::from_file(const std::string& path, const GridShape& grid) {
  return GridPredictor(shape_from([&] { return models::load_model(path); }, grid));
}

GridPredictor GridPredictor::from_json(const std::string& json, const GridShape& grid) {
  return GridPredictor(shape_from([&] { return models::read_model_json(json, "the model"); }, grid));
}

double GridPredictor::predicted_us(const std::string& op, std::size_t bytes, Algo algo, int root, const std::string& route,
                                   std::size_t slice) const {
  const detail::Coll which = detail::coll_named(op);
  if (root < 0 || root >= shape_->size()) throw Error("gridrt: predicted_us: root " + std::to_string(root) + " is not a rank");
  const std::optional<detail::Route> r = detail::route_named(route);
  if (!route.empty() && !r) throw Error("gridrt: predicted_us: route '" + route + "' is not one of " + detail::route_names());
  return detail::pick(detail::predict(*shape_, which, bytes, root, r, slice ? std::optional<std::size_t>(slice) : std::nullopt), algo);
}

}  // namespace gridrt
