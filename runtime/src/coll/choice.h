// What Algo::kAuto picks for a collective when no grid model is loaded, from measurements
// (docs/algorithms.md, "Choosing"; docs/benchmarks.md, "auto within one site"); with a
// model, the least predicted time chooses (predict.cpp).
//
// Across sites (a WAN between them), hierarchical: across the emulated WAN it was never
// slower than flat, at any operation and size measured (8 B to 1 MiB). Within one site
// (clusters on a LAN, through their relays) the flat algorithms win some operations and
// sizes: bench/collectives.sh on bench/grids/one-site-3x2.xml, 5 runs, 8 B to 1 MiB.
// One cluster: hierarchical (it is MPICH's own collective there).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gridrt::detail {

enum class Coll { kBarrier, kBcast, kReduce, kAllreduce, kGather, kScatter, kAllgather, kAlltoall, kScan, kReduceScatter };

// How the steps inside a cluster of several logical clusters run (GRIDRT_CLUSTER_STEPS):
// each one as the model predicts faster (costs.h, composes), always composed over the
// logical clusters, or always MPICH's over the whole cluster.
enum class ClusterSteps { kModel, kComposed, kMpich };

// Every member must choose alike, so the size a choice depends on is one every member knows:
// the message (bcast, reduce, allreduce), a member's block (gather, scatter, allgather;
// reduce-scatter: the mean of the blocks, which every member knows) or a pair's block
// (alltoall), in bytes. The v-forms whose sizes some members do not know pass
// kSizeNotShared: with a model, the choice that does best whatever the sizes
// (choose_without_sizes, algorithms.h); without, what the rule says for every size, or
// hierarchical.
inline constexpr std::size_t kSizeNotShared = SIZE_MAX;

// Bytes per slice of the pipelined collectives (bcast, reduce, allreduce) when neither
// GRIDRT_SLICE nor the grid's model chooses (docs/benchmarks.md, "Slice size": the best of
// those measured at 1 MiB across the emulated WAN).
inline constexpr std::size_t kDefaultSlice = 64 * 1024;

// Within one site, flat for sizes in [from, below).
struct FlatRange {
  std::size_t from, below;
};
inline FlatRange flat_within_one_site(Coll op) {
  constexpr std::size_t kNever = SIZE_MAX, kAll = SIZE_MAX;
  switch (op) {
    case Coll::kBarrier: return {kNever, kNever};      // hier 1.23x faster
    case Coll::kBcast: return {0, kAll};               // flat 1.06-1.43x faster at every size
    case Coll::kReduce: return {0, kAll};              // flat faster or equal at every size
    case Coll::kAllreduce: return {0, 64 * 1024};      // flat up to 16 KiB, hier from 64 KiB
    case Coll::kGather: return {1024 * 1024, kAll};    // equal up to 256 KiB, flat at 1 MiB
    case Coll::kScatter: return {0, kAll};             // flat at every size
    case Coll::kAllgather: return {256 * 1024, kAll};  // hier up to 64 KiB, flat from 256 KiB
    case Coll::kAlltoall: return {256 * 1024, kAll};   // hier up to 64 KiB, flat from 256 KiB
    case Coll::kScan: return {kNever, kNever};         // not measured: one latency against log2 n rounds
    case Coll::kReduceScatter: return {0, kAll};       // as the reduction and the scatter it is made of there
  }
  return {kNever, kNever};
}

inline bool auto_picks_flat(std::size_t sites, std::size_t clusters, Coll op, std::size_t bytes) {
  if (sites != 1 || clusters < 2) return false;
  const FlatRange r = flat_within_one_site(op);
  if (bytes == kSizeNotShared) return r.from == 0 && r.below == SIZE_MAX;
  return bytes >= r.from && bytes < r.below;
}

}  // namespace gridrt::detail
