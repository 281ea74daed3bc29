// The cluster-loss arbiter (broker/cluster_loss.h) on its own: which cluster a job loses for
// the reports of one grace period.
#include <gtest/gtest.h>

#include "broker/cluster_loss.h"

using namespace gridrt;

namespace {

const auto none_settled = [](std::size_t) { return false; };

TEST(ClusterLoss, OneBrokenLinkLosesTheHigherIndexWhicheverEndReportedIt) {
  for (const auto& [from, to] : {std::pair<std::size_t, std::size_t>{0, 2}, {2, 0}}) {
    std::vector<UnreachableReport> reports = {{from, to, "lost the link"}};
    const auto loss = next_cluster_to_lose(reports, 3, none_settled);
    ASSERT_TRUE(loss);
    EXPECT_EQ(loss->lose, 2u);
    EXPECT_EQ(loss->other, 0u);
    EXPECT_EQ(loss->what, "lost the link");
  }
}

TEST(ClusterLoss, AClusterCutFromAllOthersIsTheOneLostEvenWithALowIndex) {
  // Cluster 0 cannot reach 1 nor 2 (both ends said so for one pair): 0 is in two cut pairs.
  std::vector<UnreachableReport> reports = {{1, 0, "a"}, {0, 1, "b"}, {2, 0, "c"}};
  const auto loss = next_cluster_to_lose(reports, 3, none_settled);
  ASSERT_TRUE(loss);
  EXPECT_EQ(loss->lose, 0u);
  EXPECT_EQ(loss->what, "a");  // the first report naming it
}

TEST(ClusterLoss, TwoBrokenLinksLoseOneClusterEachAndSettledPartsEndIt) {
  std::vector<UnreachableReport> reports = {{0, 1, "x"}, {2, 3, "y"}};
  std::vector<bool> lost(4, false);
  const auto settled = [&](std::size_t p) { return lost[p]; };
  std::vector<std::size_t> order;
  while (const auto loss = next_cluster_to_lose(reports, 4, settled)) {
    lost[loss->lose] = true;
    order.push_back(loss->lose);
  }
  EXPECT_EQ(order, (std::vector<std::size_t>{3, 1}));  // highest index first on ties
  EXPECT_TRUE(reports.empty());
}

TEST(ClusterLoss, ReportsAboutSettledOrUnknownPartsDecideNothing) {
  std::vector<UnreachableReport> reports = {{0, 1, "about a finished part"}, {0, 7, "no such part"}};
  EXPECT_FALSE(next_cluster_to_lose(reports, 3, [](std::size_t p) { return p == 1; }));
  EXPECT_TRUE(reports.empty());
}

}  // namespace
