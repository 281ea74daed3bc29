// What the collective algorithms share: slices of pipelined messages, the blocks of
// v-collectives, folding partial results in rank order, the choice of algorithm and the
// checks of their arguments. (Datatype layouts and packing: datatype.h.)
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "choice.h"
#include "coll_state.h"
#include "comm.h"
#include "datatype.h"

namespace gridrt::detail {

// A message cut into slices of whole elements, about `bytes` each (the pick's: GRIDRT_SLICE
// or the model's), for collectives pipelined across levels (Coti, Herault, Cappello 2009
// §4.2). At least one slice, also of none.
struct Slices {
  const Layout& whole;
  int per = 1;  // elements per slice
  int n = 1;    // slices
  Slices(const Layout& l, std::size_t bytes) : whole(l) {
    const std::size_t element = l.count > 0 ? l.packed / static_cast<std::size_t>(l.count) : 0;
    per =
        element > 0 ? static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(bytes / element, INT32_MAX))) : std::max(1, l.count);
    n = l.count > 0 ? (l.count + per - 1) / per : 1;
  }
  int count(int k) const { return std::min(per, whole.count - k * per); }
  Layout layout(int k) const { return Layout(whole, std::max(0, count(k))); }
  char* at(const void* base, int k) const {
    return static_cast<char*>(const_cast<void*>(base)) + static_cast<MPI_Aint>(k) * per * whole.extent;
  }
};

// The blocks of a v-collective: member i's is counts[i] elements of `type` at
// base + displs[i] extents (or bytes, for alltoallw's). It keeps its own copy of the counts
// and displacements, so that an algorithm may hold it across its waits.
struct Blocks {
  char* base = nullptr;
  std::vector<int> counts, displs;
  Layout element{MPI_BYTE, 1};  // the datatype, asked of MPI once
  Blocks() = default;
  Blocks(const void* b, const int* c, const int* d, int n, MPI_Datatype t)
      : base(static_cast<char*>(const_cast<void*>(b))), counts(c, c + n), displs(d, d + n), element(t, 1) {}
  // Every member's block `count` elements, one after the other.
  static Blocks equal(const void* b, int count, int n, MPI_Datatype t) {
    Blocks out;
    out.base = static_cast<char*>(const_cast<void*>(b));
    out.counts.assign(n, count);
    for (int i = 0; i < n; ++i) out.displs.push_back(i * count);
    out.element = Layout(t, 1);
    return out;
  }
  Layout layout(int i) const { return Layout(element, counts[i]); }
  char* at(int i) const { return base + displs[i] * element.extent; }
  std::size_t packed(int i) const { return layout(i).packed; }
  std::size_t packed(const std::vector<int>& which) const {
    std::size_t n = 0;
    for (int i : which) n += packed(i);
    return n;
  }
  // Where the blocks of `which` already lie packed, one after the other in that order (a
  // datatype without gaps, each block where the one before ends, as a scatter's blocks in
  // rank order usually are): their bytes, to be sent or received as they lie; else null
  // (pack_all, unpack_all).
  char* packed_in_place(const std::vector<int>& which) const {
    if (!element.contiguous || which.empty()) return nullptr;
    const char* next = at(which.front());
    for (int i : which) {
      if (at(i) != next) return nullptr;
      next += packed(i);
    }
    return at(which.front());
  }
  // The blocks of `which`, packed one after the other.
  std::vector<char> pack_all(const std::vector<int>& which) const {
    std::vector<char> out(packed(which));
    std::size_t at_byte = 0;
    for (int i : which) {
      const Layout l = layout(i);
      pack(l, at(i), out.data() + at_byte);
      at_byte += l.packed;
    }
    return out;
  }
  void unpack_all(const std::vector<int>& which, const char* data) const {
    for (int i : which) {
      const Layout l = layout(i);
      unpack(l, data, at(i));
      data += l.packed;
    }
  }
};

// Byte counts as MPI wants them, with their displacements.
struct ByteCounts {
  std::vector<int> counts, displs;
  explicit ByteCounts(const std::vector<std::size_t>& sizes) : counts(sizes.size()), displs(sizes.size()) {
    std::size_t at = 0;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] > static_cast<std::size_t>(INT32_MAX) || at > static_cast<std::size_t>(INT32_MAX))
        throw Error("gridrt: a collective's data inside a cluster is limited to 2 GiB");
      counts[i] = static_cast<int>(sizes[i]);
      displs[i] = static_cast<int>(at);
      at += sizes[i];
    }
  }
  std::size_t total() const { return counts.empty() ? 0 : static_cast<std::size_t>(displs.back()) + counts.back(); }
};

inline bool commutative(MPI_Op op) {
  int c = 0;
  MPI_Op_commutative(op, &c);
  return c != 0;
}

inline int local_size(const CommImpl& c) { return static_cast<int>(c.parts[c.my_part()].size()); }

// result = earlier op later, in place of `later` (MPI_Reduce_local's inoutbuf is the right operand).
inline void combine(const Layout& l, MPI_Op op, const void* earlier, void* later) {
  if (l.count) MPI_Reduce_local(earlier, later, l.count, l.type, op);
}

// Folds partial results in part order into `result`, whose current content is part
// `mine`'s. `present` lists, in increasing order, the parts whose values are here: `mine`,
// and for each other one packed[p], the partial result of a run of parts starting at p (a
// part, or a whole site whose head is p). With contiguous parts and sites, part order is
// rank order.
inline void fold_parts(const Layout& l, MPI_Op op, const std::vector<int>& present, int mine, const std::vector<std::vector<char>>& packed,
                       void* result) {
  Scratch acc(l), next(l);
  void* a = acc.get();
  void* b = next.get();
  bool first = true;
  for (int p : present) {
    void* value = first ? a : b;
    if (p == mine) copy_elements(l, result, value);
    else unpack(l, packed[p].data(), value);
    if (!first) {
      combine(l, op, a, b);  // b = a op b
      std::swap(a, b);
    }
    first = false;
  }
  copy_elements(l, a, result);
}

// The parts `which` and `mine`, in increasing order.
inline std::vector<int> with_part(std::vector<int> which, int mine) {
  which.insert(std::lower_bound(which.begin(), which.end(), mine), mine);
  return which;
}

// What an Algo means for one call of `op` moving `bytes` (choice.h says which size).
// Hierarchical reductions need the clusters' members to be runs of consecutive ranks, and
// each site's clusters consecutive, when the operation is not commutative (they fold
// clusters and sites in order); otherwise the flat algorithm, which keeps rank order, is used.
// The algorithm a call asks for: GRIDRT_COLL's for kDefault.
inline Algo asked_for(Algo asked) { return asked == Algo::kDefault ? state().algo : asked; }

// Auto's choice for one call (coll/predict.cpp): from the model's predictions when one is
// loaded, else the measured rules (choice.h).
Algo auto_choice(CommImpl& c, Coll op, std::size_t bytes, int root);
const char* coll_name(Coll op);
// The family of a call and, for the hierarchical one, its route (GRIDRT_ROUTE's, the
// operation's first where it lacks that one; else the model's least predicted, else the
// operation's first) and slices; with auto, the family as auto_choice's. `rank_order`: the
// operation folds in rank order (a non-commutative reduction), which only the routes that
// keep it (the catalogue's rows say which: the packed tree; the all-reduce's heads, whole or in pieces), and
// those only where folds_keep_rank_order.
Pick choose_with_route(Algo asked, CommImpl& c, Coll op, std::size_t bytes, int root, bool rank_order = false);
// The hierarchical pick of `op` by the model alone, GRIDRT_ROUTE aside (the rooted
// all-reduce's reduction and broadcast: GRIDRT_ROUTE names the all-reduce's route); without
// a model the operation's first route.
Pick own_pick(CommImpl& c, Coll op, std::size_t bytes, int root);
// The tree the pick's route takes from `root` (kOrdered: served as the model predicted,
// else by the members below each child).
PartTree rooted_tree(CommImpl& c, Coll op, int root, const Pick& pick);
// The ordered route's tree of a scatter of `block` bytes per member served as the model
// predicts, none without a model: for a scatterv's root, which alone knows its blocks (the
// order matters to the root only; every other member's part of the tree is the same).
std::shared_ptr<const PartTree> ordered_tree(CommImpl& c, int root, double block);

// Whether the hierarchical reductions' folds in part order are rank order: the clusters'
// members runs of consecutive ranks, and each site's clusters consecutive.
inline bool folds_keep_rank_order(const CommImpl& c) { return c.parts_contiguous && c.sites_contiguous; }

// The family of a call whose hierarchical algorithm has one way (barrier, allgather, scan).
inline Algo choose(Algo asked, CommImpl& c, Coll op, std::size_t bytes) {
  const Algo a = asked_for(asked);
  return a == Algo::kAuto ? auto_choice(c, op, bytes, 0) : a;
}

inline void check_root(const CommImpl& c, int root) {
  if (root < 0 || root >= c.size())
    throw ArgumentError(
        "gridrt: root " + std::to_string(root) + " is not a rank of the communicator (size " + std::to_string(c.size()) + ")",
        MPI_ERR_ROOT);
}
// A rooted collective's checks: the root is a member, and MPI_IN_PLACE (given as `buffer`, the
// one MPI lets the root replace) is for the root only.
inline void check_rooted(const CommImpl& c, int root, const void* buffer, const char* what) {
  check_root(c, root);
  if (buffer == MPI_IN_PLACE && c.me != root)
    throw ArgumentError(std::string("gridrt: ") + what + ": MPI_IN_PLACE is for the root only", MPI_ERR_BUFFER);
}
// Counts and displacements of a v-collective: given, none negative.
inline void check_counts(const CommImpl& c, const int* counts, const int* displs, const char* what) {
  if (!counts || !displs) throw ArgumentError(std::string("gridrt: ") + what + ": counts and displacements are needed", MPI_ERR_ARG);
  for (int i = 0; i < c.size(); ++i)
    if (counts[i] < 0)
      throw ArgumentError(
          std::string("gridrt: ") + what + ": count " + std::to_string(counts[i]) + " of member " + std::to_string(i) + " is negative",
          MPI_ERR_COUNT);
}

}  // namespace gridrt::detail
