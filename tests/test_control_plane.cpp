// The transport's control plane alone (runtime/src/transport/control_plane.h): what the
// relay's control frames make of the process's picture of the job, and the frames it sends.
#include <gtest/gtest.h>

#include "transport/control_plane.h"

namespace gridrt::detail {
namespace {

// Two clusters: "alpha" holds ranks 0-1, "beta" ranks 2-4.
Topology two_clusters() {
  Topology t;
  t.groups = {"g"};
  t.sites = {"s"};
  t.clusters = {ClusterPart{"alpha", 0, 0, 2, "", 0, true, true, false, ""}, ClusterPart{"beta", 0, 2, 3, "", 0, true, true, false, ""}};
  t.rank_group.assign(5, 0);
  t.rank_endpoint.assign(5, "");
  return t;
}

wire::Frame topology_frame(const Topology& t) {
  wire::Writer w;
  t.encode(w);
  return wire::make_frame(wire::Type::kTopology, w.take(), 7);
}

wire::Frame decoded(const std::string& bytes) {
  wire::Decoder d;
  d.feed(bytes.data(), bytes.size());
  wire::Frame f;
  EXPECT_EQ(d.next(f), wire::Decoder::Status::kFrame);
  return f;
}

using What = ControlPlane::Heard::What;

TEST(ControlPlane, PlansPairsOnlyOnceTopologyAndRankAreBothKnown) {
  ControlPlane c(7);
  c.set_rank(3);
  EXPECT_FALSE(c.planned());
  EXPECT_EQ(c.hear(topology_frame(two_clusters())).what, What::kTopology);
  EXPECT_TRUE(c.planned());
  ControlPlane other(7);
  other.hear(topology_frame(two_clusters()));
  EXPECT_FALSE(other.planned());  // the application's thread has not set the rank yet
}

TEST(ControlPlane, ABadBodyIsAFailureThatSaysWhat) {
  ControlPlane c(7);
  const ControlPlane::Heard topology = c.hear(wire::make_frame(wire::Type::kTopology, "garbage", 7));
  EXPECT_EQ(topology.what, What::kFailure);
  EXPECT_NE(topology.why.find("bad topology from the relay"), std::string::npos) << topology.why;
  EXPECT_FALSE(c.topology());
  const ControlPlane::Heard count = c.hear(wire::make_frame(wire::Type::kWanCount, "short", 7));
  EXPECT_EQ(count.what, What::kFailure);
  EXPECT_NE(count.why.find("bad WanCount"), std::string::npos) << count.why;
  const ControlPlane::Heard refused = c.hear(wire::make_frame(wire::Type::kError, "wrong secret", 7));
  EXPECT_EQ(refused.what, What::kFailure);
  EXPECT_EQ(refused.why, "the relay refused this process: wrong secret");
}

TEST(ControlPlane, ALostClusterIsRecordedOnceAndNamesItsRanks) {
  ControlPlane c(7);
  EXPECT_FALSE(c.lose(1, "before the topology"));  // nothing to name it by
  c.hear(topology_frame(two_clusters()));
  wire::Frame lost = wire::make_frame(wire::Type::kClusterLost, "relay unreachable", 7);
  lost.header.tag = 1;
  const ControlPlane::Heard heard = c.hear(lost);
  ASSERT_EQ(heard.what, What::kLoss);
  EXPECT_EQ(heard.cluster, 1u);
  EXPECT_TRUE(c.lost_clusters().empty());  // heard, not yet recorded
  EXPECT_TRUE(c.lose(heard.cluster, heard.why));
  EXPECT_FALSE(c.lose(1, "again"));
  EXPECT_FALSE(c.lose(2, "no such cluster"));
  ASSERT_NE(c.lost(2), nullptr);
  EXPECT_EQ(*c.lost(4), "cluster beta lost: relay unreachable");
  EXPECT_EQ(c.lost(1), nullptr);
  EXPECT_EQ(c.lost(-1), nullptr);
  const auto in_beta = c.in_cluster(1);
  EXPECT_TRUE(in_beta(2));
  EXPECT_FALSE(in_beta(1));
  EXPECT_FALSE(in_beta(5));  // not a rank
}

TEST(ControlPlane, AWanCountAnswersTheLastQuestion) {
  ControlPlane c(7);
  c.set_rank(2);
  const wire::Frame question = decoded(c.ask_wan_count());
  EXPECT_EQ(question.header.type, wire::Type::kWanCount);
  EXPECT_EQ(question.header.src, 2);
  EXPECT_EQ(question.header.job, 7u);
  wire::Writer w;
  w.u64(12);
  w.u64(4096);
  EXPECT_EQ(c.hear(wire::make_frame(wire::Type::kWanCount, w.take(), 7)).what, What::kWanCount);
  ASSERT_TRUE(c.wan_count());
  EXPECT_EQ(c.wan_count()->messages, 12u);
  EXPECT_EQ(c.wan_count()->bytes, 4096u);
  c.ask_wan_count();
  EXPECT_FALSE(c.wan_count());  // a new question waits for its own answer
}

TEST(ControlPlane, FramesToTheRelayCarryRankAndCluster) {
  ControlPlane c(7);
  c.hear(topology_frame(two_clusters()));
  c.set_rank(0);
  const wire::Frame direct = decoded(c.direct_lost(3, "reset by peer"));
  EXPECT_EQ(direct.header.type, wire::Type::kClusterLost);
  EXPECT_EQ(direct.header.tag, 1);  // rank 3's cluster
  EXPECT_EQ(direct.header.src, 0);
  EXPECT_NE(direct.body.find("rank 3"), std::string::npos);
  EXPECT_EQ(decoded(c.in_finalize()).header.type, wire::Type::kFinalizing);
  EXPECT_FALSE(c.released());
  c.hear(wire::make_frame(wire::Type::kFinalizing, {}, 7));
  EXPECT_TRUE(c.released());
  EXPECT_EQ(c.hear(wire::make_frame(wire::Type::kData, {}, 7)).what, What::kNothing);
}

}  // namespace
}  // namespace gridrt::detail
