// What auto chooses when the grid's model is loaded (GRIDRT_MODEL; docs/models.md): for
// every call, the algorithm with the least predicted time (algorithms.h's cost functions)
// for that operation, size, root and communicator. Every member has the same model and the
// same communicator shape, and the sizes are ones every member knows (choice.h), so every
// member chooses alike. Without a model, or for the v-forms whose sizes only some members
// know, the measured rules of choice.h.
#include <cstdio>
#include <map>

#include "algorithms.h"

namespace gridrt::detail {

namespace {
Prediction uncorrected(const CostShape& s, Coll op, std::size_t bytes, int root) {
  const double m = static_cast<double>(bytes);
  switch (op) {
    case Coll::kBarrier: return {barrier_hier_cost(s), barrier_dissemination_cost(s)};
    case Coll::kBcast: return {bcast_hier_cost(s, root, m), bcast_binomial_cost(s, root, m)};
    case Coll::kReduce: return {reduce_hier_cost(s, root, m), reduce_binomial_cost(s, root, m)};
    case Coll::kAllreduce: return {allreduce_hier_cost(s, m), allreduce_doubling_cost(s, m)};
    case Coll::kGather: return {gather_hier_cost(s, root, m), gather_binomial_cost(s, root, m)};
    case Coll::kScatter: return {scatter_hier_cost(s, root, m), scatter_binomial_cost(s, root, m)};
    case Coll::kAllgather: return {allgather_hier_cost(s, m), allgather_ring_cost(s, m)};
    case Coll::kAlltoall: return {alltoall_local_group_cost(s, m), alltoall_pairwise_cost(s, m)};
    case Coll::kScan: return {scan_hier_cost(s, m), scan_doubling_cost(s, m)};
  }
  return {};
}
}  // namespace

// The cost functions' predictions, corrected as the model's sample run says (models/grid_model.h).
Prediction predict(const CostShape& s, Coll op, std::size_t bytes, int root) {
  Prediction p = uncorrected(s, op, bytes, root);
  const std::string name = coll_name(op);
  if (const auto it = s.corrections.find(name + "/hier"); it != s.corrections.end()) p.hier = it->second.apply(p.hier);
  if (const auto it = s.corrections.find(name + "/flat"); it != s.corrections.end()) p.flat = it->second.apply(p.flat);
  return p;
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
  }
  return "?";
}

namespace {

// The communicator's shape with the model's parameters: its parts' clusters and sites by
// name, as the topology has them.
std::shared_ptr<const CostShape> shape_of(const CommImpl& c) {
  const Topology& t = state().topo;
  std::vector<std::string> part_cluster, site_name(c.sites.size());
  for (std::size_t p = 0; p < c.parts.size(); ++p) {
    const ClusterPart& cluster = t.clusters[t.cluster_of(static_cast<std::uint32_t>(c.members[c.leader(static_cast<int>(p))]))];
    part_cluster.push_back(cluster.name);
    site_name[c.site_of_part[p]] = t.sites[cluster.site];
  }
  return std::make_shared<const CostShape>(*state().model, c.part_of, c.site_of_part, part_cluster, site_name,
                                           static_cast<double>(state().slice));
}

// The communicator's shape, made once; null without a model or when it lacks a pair.
const CostShape* costs_of(CommImpl& c) {
  if (!state().model) return nullptr;
  if (!c.costs_tried) {
    c.costs_tried = true;
    try {
      c.costs = shape_of(c);
    } catch (const models::ModelError& e) {
      if (c.me == 0) std::fprintf(stderr, "gridrt: auto follows its measured rules on this communicator: %s\n", e.what());
    }
  }
  return c.costs.get();
}

}  // namespace

const std::string& cluster_name_of(const CommImpl& c) {
  const Topology& t = state().topo;
  return t.clusters[t.cluster_of(static_cast<std::uint32_t>(c.members[c.leader(c.my_part())]))].name;
}

const models::ManyToOneModel* many_to_one_of(const CommImpl& c) {
  if (!state().model || state().model->many_to_one.empty()) return nullptr;
  return state().model->gathers_of(cluster_name_of(c));
}


Algo auto_choice(CommImpl& c, Coll op, std::size_t bytes, int root) {
  const CostShape* costs = bytes == kSizeNotShared ? nullptr : costs_of(c);
  if (!costs) return auto_picks_flat(c.sites.size(), c.parts.size(), op, bytes) ? Algo::kFlat : Algo::kHier;
  const auto key = std::make_tuple(static_cast<int>(op), bytes, root);
  if (const auto it = c.chosen.find(key); it != c.chosen.end()) return it->second;
  const Prediction p = predict(*costs, op, bytes, root);
  const Algo a = p.flat < p.hier ? Algo::kFlat : Algo::kHier;
  if (c.chosen.size() < kChoicesKept) {
    c.chosen.emplace(key, a);
    // Each choice said once, where GRIDRT_EXPLAIN asks.
    if (state().explain && c.me == 0)
      std::fprintf(stderr, "gridrt: auto: %s of %zu B on %d members in %d clusters at %zu sites: hier %.1f us, flat %.1f us -> %s\n",
                   coll_name(op), bytes, c.size(), static_cast<int>(c.parts.size()), c.sites.size(), p.hier * 1e6, p.flat * 1e6,
                   a == Algo::kFlat ? "flat" : "hier");
  }
  return a;
}

Coll coll_named(const std::string& op) {
  for (Coll c : {Coll::kBarrier, Coll::kBcast, Coll::kReduce, Coll::kAllreduce, Coll::kGather, Coll::kScatter, Coll::kAllgather,
                 Coll::kAlltoall, Coll::kScan})
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
  return detail::pick(detail::predict(*costs, which, bytes, root), algo);
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
  return std::make_shared<const detail::CostShape>(model.with_typical(), part_of, site_of_part, grid.clusters, site_name, 64 * 1024);
}


// A model read by `read`, its errors as the API's.
template <class Read>
std::shared_ptr<const detail::CostShape> shape_from(Read read, const GridShape& grid) {
  try {
    return shape_of(read(), grid);
  } catch (const models::ModelError& e) {
    throw Error(std::string("gridrt: ") + e.what());
  }
}
}  // namespace

GridPredictor GridPredictor::from_file(const std::string& path, const GridShape& grid) {
  return GridPredictor(shape_from([&] { return models::load_model(path); }, grid));
}

GridPredictor GridPredictor::from_json(const std::string& json, const GridShape& grid) {
  return GridPredictor(shape_from([&] { return models::read_model_json(json, "the model"); }, grid));
}

double GridPredictor::predicted_us(const std::string& op, std::size_t bytes, Algo algo, int root) const {
  const detail::Coll which = detail::coll_named(op);
  if (root < 0 || root >= shape_->size()) throw Error("gridrt: predicted_us: root " + std::to_string(root) + " is not a rank");
  return detail::pick(detail::predict(*shape_, which, bytes, root), algo);
}

}  // namespace gridrt
