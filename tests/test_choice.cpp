// What Algo::kAuto picks (runtime/src/choice.h): hierarchical across sites and on one
// cluster, the measured ranges within one site, and a choice every member makes alike when
// some members do not know the sizes.
#include <gtest/gtest.h>

#include "coll/choice.h"

using gridrt::detail::auto_picks_flat;
using gridrt::detail::Coll;
using gridrt::detail::kSizeNotShared;

namespace {
const Coll kAll[] = {Coll::kBarrier, Coll::kBcast,   Coll::kReduce,    Coll::kAllreduce,
                     Coll::kGather,  Coll::kScatter, Coll::kAllgather, Coll::kAlltoall};
}

TEST(AutoChoice, AcrossSitesAndOnOneClusterItIsAlwaysHierarchical) {
  for (Coll op : kAll)
    for (std::size_t bytes : {std::size_t{0}, std::size_t{8}, std::size_t{1} << 20, std::size_t{1} << 30, kSizeNotShared}) {
      EXPECT_FALSE(auto_picks_flat(2, 3, op, bytes));
      EXPECT_FALSE(auto_picks_flat(3, 3, op, bytes));
      EXPECT_FALSE(auto_picks_flat(1, 1, op, bytes));
    }
}

TEST(AutoChoice, WithinOneSiteItFollowsTheMeasuredCrossovers) {
  EXPECT_FALSE(auto_picks_flat(1, 3, Coll::kBarrier, 0));
  EXPECT_TRUE(auto_picks_flat(1, 3, Coll::kBcast, 8));
  EXPECT_TRUE(auto_picks_flat(1, 3, Coll::kAllreduce, 16 * 1024));
  EXPECT_FALSE(auto_picks_flat(1, 3, Coll::kAllreduce, 64 * 1024));
  EXPECT_FALSE(auto_picks_flat(1, 3, Coll::kAllgather, 64 * 1024));
  EXPECT_TRUE(auto_picks_flat(1, 3, Coll::kAllgather, 256 * 1024));
  EXPECT_FALSE(auto_picks_flat(1, 3, Coll::kAlltoall, 256 * 1024 - 1));
  EXPECT_TRUE(auto_picks_flat(1, 3, Coll::kAlltoall, 256 * 1024));
  EXPECT_FALSE(auto_picks_flat(1, 3, Coll::kGather, 256 * 1024));
  EXPECT_TRUE(auto_picks_flat(1, 3, Coll::kGather, 1024 * 1024));
}

// gatherv, scatterv, alltoallv: flat only where the rule is flat at every size, so that a
// member's own (unshared) size never changes the choice.
TEST(AutoChoice, UnsharedSizesGetWhatEverySizeGets) {
  for (Coll op : kAll) {
    bool everywhere = true;
    for (std::size_t bytes = 0; bytes <= (std::size_t{1} << 26); bytes = bytes ? bytes * 2 : 1)
      everywhere &= auto_picks_flat(1, 3, op, bytes);
    EXPECT_EQ(auto_picks_flat(1, 3, op, kSizeNotShared), everywhere) << static_cast<int>(op);
  }
  EXPECT_TRUE(auto_picks_flat(1, 3, Coll::kScatter, kSizeNotShared));
  EXPECT_FALSE(auto_picks_flat(1, 3, Coll::kGather, kSizeNotShared));
}
