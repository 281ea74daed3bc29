// The catalogue of collective algorithms: one row per algorithm, which the entry points
// (collectives.cpp) run by, and auto and the predictions (predict.cpp) weigh by. A row says
// which operation the algorithm performs, in which family (hierarchical or flat), by which
// route between clusters where its family has several (part_trees.h), on communicators of
// how many clusters, whether it is cut into slices (pipelined) and keeps rank order in its
// folds, how it runs and what it costs (its cost function, beside it in its file).
//
// Adding an algorithm: its file (the coroutine and its cost function, declared in
// algorithms.h) and its row below (catalogue.cpp); a new route also gets its name in
// part_trees.h. docs/algorithms.md says so.
#pragma once

#include <optional>
#include <vector>

#include "algorithms.h"

namespace gridrt::detail {

// What a cost function is asked: the root, the size as choice.h counts it (the message; a
// member's block; a pair's block) in bytes, the route and, for the pipelined ones, the slice.
struct CostArgs {
  int root = 0;
  double m = 0;
  Route route = Route::kPacked;
  double slice = static_cast<double>(kDefaultSlice);
};

// What an entry point hands the algorithm that runs its call: each operation fills what it
// has, each row's runner takes what its algorithm needs.
struct CallArgs {
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;  // a broadcast's buffer
  // The message (broadcast, reductions, scans), a scatter's receive block, or the element
  // of a reduce-scatter.
  Layout layout{MPI_BYTE, 0};
  MPI_Op op = MPI_OP_NULL;
  int root = 0;
  Blocks in, out;                      // the blocks sent and received (v-collectives, all-to-all)
  std::vector<char> mine;              // gathers and all-gathers: this member's block, packed
  bool in_place = false;               // gathers and scatters: MPI_IN_PLACE at the root
  std::size_t block = kSizeNotShared;  // every block's packed size where every member knows it
  bool equal = false;                  // all-to-all: all blocks alike
  bool exclusive = false;              // MPI_Exscan
  std::vector<int> counts;             // reduce-scatter: every member's count of elements
  Pick pick;                           // the route, slices and tree chosen
};

struct Algorithm {
  Coll op;
  Algo family;                             // kHier or kFlat
  std::optional<Route> route;              // the hierarchical family's way between clusters; none: its one way
  const char* name;                        // its file's name
  int min_parts = 1, max_parts = 1 << 30;  // the communicators (by clusters) it runs on
  bool pipelined = false;                  // cut into slices: its cost is weighed slice size by slice size
  bool keeps_rank_order = true;            // folds partial results in rank order (where parts and sites are runs of ranks)
  // Its cost: predicted seconds of one call. None: a composition of other operations, each
  // predicted on its own (the rooted routes; predict.cpp).
  double (*cost)(const CostShape&, const CostArgs&) = nullptr;
  Async<> (*run)(CommImpl&, CallArgs) = nullptr;
};

// Every row, hierarchical routes of an operation in the order they are tried and preferred
// (the first is the default route).
const std::vector<Algorithm>& catalogue();

// The routes `op`'s hierarchical family can take on a communicator of `parts` clusters (none:
// it has one way there).
std::vector<Route> routes_of(Coll op, int parts);
// The row of `op`'s family on `parts` clusters: for the hierarchical family the row of
// `route` where it has routes there (the first where `route` is not one of them), else its
// one way. Throws std::logic_error where there is none (a catalogue without it).
const Algorithm& algorithm_of(Coll op, Algo family, Route route, int parts);
// Runs the call as `args.pick` chose (its family and route) on `c`.
Async<> run_picked(CommImpl& c, Coll op, CallArgs args);

}  // namespace gridrt::detail
