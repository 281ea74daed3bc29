// What the collectives keep per communicator, beside it (CommImpl::coll) and made at their
// first use on it: auto's choices and the communicator's shape with the model's parameters,
// the hierarchical gather's pieces, and the steps inside a cluster composed over its node
// level (cluster_steps.h): the choices to compose, and the chains of stages in flight. The
// communicator knows nothing of these; the collectives find them through coll_state.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "comm.h"
#include "part_trees.h"

namespace gridrt::detail {

struct Chain;
struct CostShape;
struct LogicalLevel;

// What a collective call runs: the family and, for a hierarchical one that has several, its
// route (part_trees.h), and the slice size of a pipelined one.
struct Pick {
  Algo algo = Algo::kHier;
  Route route = Route::kPacked;
  std::size_t slice = kDefaultSlice;
  std::shared_ptr<const PartTree> tree;  // the ordered route's, served as the model predicts (kept with the pick)
};

struct CollState {
  // Its shape with the model's parameters (costs.h), made at auto's first choice when a model
  // is loaded; null when there is none or it lacks a pair this one needs.
  std::shared_ptr<const CostShape> costs;
  bool costs_tried = false;
  // What auto chose by the model, by (operation, size, root, the route forced or -1): a
  // prediction plays the algorithm's messages, far more work than a call should pay each
  // time (predict.cpp).
  std::map<std::tuple<int, std::size_t, int, int>, Pick> chosen;
  // Pieces of the hierarchical gather inside this member's cluster, by block size, as the
  // cluster's many-to-one model says (gather_paced_split.cpp).
  std::map<std::size_t, int> gather_split;

  // The node level's (cluster_steps.cpp). Where the nodes are the model's logical clusters,
  // the cluster's level placed as they are, made at the first step that asks, and the
  // choices to compose, by (operation, bytes, root).
  std::shared_ptr<const LogicalLevel> placed;
  bool placed_tried = false;
  std::map<std::tuple<int, std::size_t, int>, bool> composes;
  // Chains of stages in flight, in the order they were made, and the tickets of their
  // stages on the node's communicator and the leaders' (NodeLevel::kNode, kLeaders).
  std::uint64_t issued[2] = {0, 0}, started[2] = {0, 0};
  std::vector<std::shared_ptr<Chain>> live;
  std::uint64_t last_pass = 0;  // the wait loops' pass that last advanced them
};

inline CollState& coll_state(CommImpl& c) {
  if (!c.coll) c.coll = std::make_shared<CollState>();
  return *c.coll;
}

}  // namespace gridrt::detail
