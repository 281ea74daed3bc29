// The cost functions of the collective algorithms (coll/costs.h, each algorithm's file) on
// hand-computed cases, and the model file (models/grid_model.h): read, written, refused.
// Pure computations: no MPI is started.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <set>

#include "algorithms.h"
#include "catalogue.h"
#include "costs.h"
#include "models/grid_model.h"
#include "models/scatter_models.h"

using namespace gridrt;
using namespace gridrt::detail;

namespace {

// L in seconds, and a gap of `us_per_byte` microseconds per byte (none at 0 bytes).
models::PLogP line(double L, double us_per_byte) {
  models::PLogP p;
  p.L = L;
  p.g.points = {{0, 0}, {1e6, us_per_byte}};  // 1e6 bytes take us_per_byte seconds
  return p;
}

// Free inside clusters, 1 ms and 1 byte/us between clusters of a site, 10 ms and 1 byte/us
// between sites.
models::GridModel simple_model() {
  models::GridModel m;
  m.inside["*"] = line(0, 0);
  m.within_site["*"] = line(1e-3, 1.0);
  m.between_sites[{"*", "*"}] = line(10e-3, 1.0);
  return m;
}

// Clusters c0, c1, ... with `ranks` members each, at the sites given.
CostShape shape(const models::GridModel& m, const std::vector<int>& ranks, const std::vector<std::string>& sites) {
  std::vector<int> part_of, site_of_part;
  std::vector<std::string> clusters, site_names;
  for (std::size_t p = 0; p < ranks.size(); ++p) {
    part_of.insert(part_of.end(), ranks[p], static_cast<int>(p));
    clusters.push_back("c" + std::to_string(p));
    auto at = std::find(site_names.begin(), site_names.end(), sites[p]);
    if (at == site_names.end()) at = site_names.insert(site_names.end(), sites[p]);
    site_of_part.push_back(static_cast<int>(at - site_names.begin()));
  }
  return CostShape(m, part_of, site_of_part, clusters, site_names);
}

constexpr double kMs = 1e-3;

// Every text refused, the error saying what is given.
void expect_refused(const std::vector<std::pair<std::string, const char*>>& bad) {
  for (const auto& [text, says] : bad) {
    try {
      models::read_model_json(text, "m.json");
      ADD_FAILURE() << text << " was accepted";
    } catch (const models::ModelError& e) { EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << text << ": " << e.what(); }
  }
}

}  // namespace

TEST(Costs, HierarchicalBroadcastCrossesEachLineOnce) {
  const models::GridModel m = simple_model();
  const CostShape s = shape(m, {2, 2, 2}, {"A", "B", "C"});
  // The root sends 1000 B to each other site's head on its own line: 1 ms + 10 ms.
  EXPECT_NEAR(bcast_hier_cost(s, 0, 1000), 11 * kMs, 1e-9);
  // Above a slice, slices follow each other on the line: 128 KiB is 131.072 ms of gaps.
  EXPECT_NEAR(bcast_hier_cost(s, 0, 131072), 131.072 * kMs + 10 * kMs, 1e-9);
}

// The broadcast's and the reduction's routes by hand, four sites of one process each. 1000 B
// (one slice): one, two and three hops on the packed, binomial and chain trees (11, 22, 33
// ms: the root's three messages go on three lines at once). 256 KiB in four slices of 64 KiB
// (65.536 ms each) with every site behind an access line, which clocks what a site sends,
// not what it receives:
//   broadcast: packed puts twelve slices on the root's line (12 slices + 10 ms); binomial
//   eight on the root's, the far child forwarding each of its four as it comes (its last at
//   7 slices + 10 ms, then one slice + 10 ms on); the chain four on each line, pipelined (the
//   last leaves A at 4 slices, then two hops of a slice and three latencies) and wins;
//   reduction: packed has every site send its four slices on its own line at once (4 slices
//   + 10 ms) and wins; the binomial tree's far child waits for its own child's slices (5
//   slices + 20 ms), the chain for two hops (6 slices + 30 ms).
TEST(Costs, BroadcastAndReductionRoutesByHand) {
  using Cost = double (*)(const CostShape&, int, double, Route, double);
  struct Case {
    Coll op;
    Cost cost;
    double packed, binomial, chain;  // 256 KiB behind access lines: slices, ms
    Route least;
  };
  const double slice = 65.536 * kMs;
  const Case cases[] = {
      {Coll::kBcast, bcast_hier_cost, 12 * slice + 10 * kMs, 8 * slice + 20 * kMs, 6 * slice + 30 * kMs, Route::kChain},
      {Coll::kReduce, reduce_hier_cost, 4 * slice + 10 * kMs, 5 * slice + 20 * kMs, 6 * slice + 30 * kMs, Route::kPacked}};
  for (const Case& c : cases) {
    SCOPED_TRACE(coll_name(c.op));
    models::GridModel m = simple_model();
    const CostShape s = shape(m, {1, 1, 1, 1}, {"A", "B", "C", "D"});
    EXPECT_NEAR(c.cost(s, 0, 1000, Route::kPacked, kDefaultSlice), 11 * kMs, 1e-9);
    EXPECT_NEAR(c.cost(s, 0, 1000, Route::kBinomial, kDefaultSlice), 22 * kMs, 1e-9);
    EXPECT_NEAR(c.cost(s, 0, 1000, Route::kChain, kDefaultSlice), 33 * kMs, 1e-9);
    for (const char* site : {"A", "B", "C", "D"}) m.access.insert(site);
    const CostShape one_port = shape(m, {1, 1, 1, 1}, {"A", "B", "C", "D"});
    EXPECT_NEAR(c.cost(one_port, 0, 262144, Route::kPacked, kDefaultSlice), c.packed, 1e-9);
    EXPECT_NEAR(c.cost(one_port, 0, 262144, Route::kBinomial, kDefaultSlice), c.binomial, 1e-9);
    EXPECT_NEAR(c.cost(one_port, 0, 262144, Route::kChain, kDefaultSlice), c.chain, 1e-9);
    const Prediction p = predict(one_port, c.op, 262144, 0, std::nullopt, kDefaultSlice);
    EXPECT_EQ(p.routes.size(), 3u);
    EXPECT_EQ(p.route, c.least);
  }
}

// The slice size the model picks for a pipelined collective, by hand. Four sites of one
// process in a chain, each line taking g0 = 1 ms per message plus 1 us per byte, 10 ms
// latency: a broadcast of m bytes in slices of s leaves the root in m/s gaps, and its last
// slice takes two more hops of one gap and a latency each, so T(s) = (m/s + 2)(g0 + s us)
// + 30 ms. For 1 MiB: m g0 / s + 2 s us is 96.8 ms at 16 KiB (the least of the powers of
// two), 97.5 ms at 32 KiB, 147.1 ms at 64 KiB: of the slices within 2% of the least, the
// model takes the one nearest 64 KiB, 32 KiB. GRIDRT_SLICE's slice, when set, is the one
// predicted.
TEST(Costs, TheModelPicksTheSliceOfAPipelinedBroadcast) {
  models::GridModel m = simple_model();
  m.between_sites[{"*", "*"}].g.points = {{0, 1e-3}, {1e6, 1e-3 + 1.0}};
  const CostShape s = shape(m, {1, 1, 1, 1}, {"A", "B", "C", "D"});
  const double bytes = 1048576;
  auto by_hand = [&](double slice) { return (bytes / slice + 2) * (1e-3 + slice * 1e-6) + 30 * kMs; };
  for (double slice : {8192.0, 16384.0, 32768.0, 65536.0, 1048576.0})
    EXPECT_NEAR(bcast_hier_cost(s, 0, bytes, Route::kChain, slice), by_hand(slice), 1e-9) << slice;
  const Prediction p = predict(s, Coll::kBcast, 1048576, 0, Route::kChain);
  EXPECT_EQ(p.slice, 32768u);
  EXPECT_NEAR(p.hier, by_hand(32768), 1e-9);
  const Prediction forced = predict(s, Coll::kBcast, 1048576, 0, Route::kChain, 65536);
  EXPECT_EQ(forced.slice, 65536u);
  EXPECT_NEAR(forced.hier, by_hand(65536), 1e-9);
  // A message of one slice or less: one slice.
  EXPECT_EQ(predict(s, Coll::kBcast, 1000, 0, Route::kChain).slice, kSmallestSlice);
  // With the model's cost of a slice (5 ms each: 128 at 8 KiB, 16 at 64 KiB), fewer and
  // larger slices: 64 KiB, 1.3076 s against 1.3381 at 32 KiB. A route's own cost comes
  // before its operation's; a cost for another route is not this one's.
  models::GridModel sliced = m;
  sliced.slice_costs = {{"bcast", 5e-3}};
  const Prediction costly = predict(shape(sliced, {1, 1, 1, 1}, {"A", "B", "C", "D"}), Coll::kBcast, 1048576, 0, Route::kChain);
  EXPECT_EQ(costly.slice, 65536u);
  EXPECT_NEAR(costly.hier, by_hand(65536) + 16 * 5e-3, 1e-9);
  sliced.slice_costs = {{"bcast", 5e-3}, {"bcast/chain", 0}};
  EXPECT_EQ(predict(shape(sliced, {1, 1, 1, 1}, {"A", "B", "C", "D"}), Coll::kBcast, 1048576, 0, Route::kChain).slice, 32768u);
  sliced.slice_costs = {{"bcast/binomial", 5e-3}};
  EXPECT_EQ(predict(shape(sliced, {1, 1, 1, 1}, {"A", "B", "C", "D"}), Coll::kBcast, 1048576, 0, Route::kChain).slice, 32768u);
}

// The all-reduce's three routes on four sites of one process, 256 KiB. Each pair of sites
// on its own line: through the heads every line carries the message once (about 262 + 10
// ms), where the rooted route reduces (272 ms) and then broadcasts (272 ms), and the
// reduce-scatter route, sent whole, carries a quarter each way twice (2 x (65.5 + 10) ms).
// Behind access lines each site sends its partial result to three heads on one line
// (786 + 10 ms), the rooted route's reduction sends it once (packed, 272 ms) and its
// broadcast goes down the chain in 8 KiB slices (262 + 2 x 8 + 30 ms), and the
// reduce-scatter route puts three quarters on each line twice (2 x (196.6 + 10) ms). In
// its own slices it is predicted no slower than whole, and is the least both ways. On two
// sites it moves as much as the heads route but pays the latency twice: heads.
TEST(Costs, AnAllReduceGoesThroughTheHeadsInPiecesFromThreeSitesOn) {
  models::GridModel m = simple_model();
  for (bool access : {false, true}) {
    SCOPED_TRACE(access ? "access lines" : "a line per pair");
    if (access)
      for (const char* site : {"A", "B", "C", "D"}) m.access.insert(site);
    const CostShape s = shape(m, {1, 1, 1, 1}, {"A", "B", "C", "D"});
    const Prediction p = predict(s, Coll::kAllreduce, 262144, 0);
    ASSERT_EQ(p.routes.size(), 3u);
    EXPECT_EQ(p.routes[0].first, Route::kHeads);
    EXPECT_EQ(p.routes[1].first, Route::kRooted);
    EXPECT_EQ(p.routes[2].first, Route::kReduceScatter);
    EXPECT_EQ(p.route, Route::kReduceScatter);
    const double rooted = predict(s, Coll::kReduce, 262144, 0).hier + predict(s, Coll::kBcast, 262144, 0).hier;
    EXPECT_NEAR(p.routes[1].second, rooted, 1e-12);
    EXPECT_NEAR(p.routes[0].second, access ? 796.432 * kMs : 272.144 * kMs, 0.1 * kMs);
    EXPECT_NEAR(rooted, access ? (272.144 + 262.144 + 16.384 + 30) * kMs : 2 * 272.144 * kMs, 0.1 * kMs);
    const double whole = predict(s, Coll::kAllreduce, 262144, 0, Route::kReduceScatter, 262144).hier;
    EXPECT_NEAR(whole, access ? 2 * (196.608 + 10) * kMs : 2 * (65.536 + 10) * kMs, 1e-9);
    EXPECT_LE(p.routes[2].second, whole);
  }
  const Prediction two_sites = predict(shape(simple_model(), {1, 1}, {"A", "B"}), Coll::kAllreduce, 262144, 0, std::nullopt, 262144);
  EXPECT_EQ(two_sites.route, Route::kHeads);
  EXPECT_NEAR(two_sites.routes[2].second - two_sites.routes[0].second, 10 * kMs, 1e-9);
  // One cluster: MPICH's own all-reduce, no routes.
  EXPECT_TRUE(predict(shape(m, {4}, {"A"}), Coll::kAllreduce, 262144, 0).routes.empty());
}

// The reduce-scatter's two routes on three sites of two processes, 1000 B blocks. Through
// the heads each site sends every other its two members' blocks (2000 B) once: 2 + 10 ms on
// lines of their own, 4 + 10 ms where each site's share leaves on one access line. The rooted
// route reduces the whole 6000 B to member 0 (6 + 10 ms) and then scatters (2 + 10 ms).
TEST(Costs, AReduceScatterCrossesOnceThroughTheHeads) {
  models::GridModel m = simple_model();
  for (bool access : {false, true}) {
    SCOPED_TRACE(access ? "access lines" : "a line per pair");
    if (access)
      for (const char* site : {"A", "B", "C"}) m.access.insert(site);
    const CostShape s = shape(m, {2, 2, 2}, {"A", "B", "C"});
    const Prediction p = predict(s, Coll::kReduceScatter, 1000, 0);
    ASSERT_EQ(p.routes.size(), 2u);
    EXPECT_EQ(p.routes[0].first, Route::kHeads);
    EXPECT_EQ(p.routes[1].first, Route::kRooted);
    EXPECT_EQ(p.route, Route::kHeads);
    EXPECT_NEAR(p.routes[0].second, (access ? 14 : 12) * kMs, 1e-9);
    const Prediction reduce = predict(s, Coll::kReduce, 6000, 0), scatter = predict(s, Coll::kScatter, 1000, 0);
    EXPECT_NEAR(p.routes[1].second, reduce.hier + scatter.hier, 1e-12);
    if (!access) { EXPECT_NEAR(p.routes[1].second, 28 * kMs, 1e-9); }
    EXPECT_NEAR(p.flat, reduce_binomial_cost(s, 0, 6000) + scatterv_linear_cost(s, 0, 1000), 1e-12);
  }
  // One cluster: MPICH's reduction and scatter, no routes.
  EXPECT_TRUE(predict(shape(m, {4}, {"A"}), Coll::kReduceScatter, 1000, 0).routes.empty());
}

// A prediction plays at most kMostSlices slices: a message of 256 MiB is cut into no fewer
// than 256 KiB slices by the model, and a smaller slice asked for is played as that many
// larger ones (on 100 clusters such predictions took most of a minute before).
TEST(Costs, APredictionPlaysNoMoreThanItsMostSlices) {
  const SliceSizes asked{268435456, 8192};
  EXPECT_EQ(asked.count(), 1024);
  EXPECT_EQ(asked.slice, 262144);
  EXPECT_EQ((SliceSizes{1048576, 8192}.count()), 128);  // below the bound: as asked
  const models::GridModel m = simple_model();
  std::vector<std::string> sites;
  for (int i = 0; i < 100; ++i) sites.push_back("S" + std::to_string(i));
  const CostShape s = shape(m, std::vector<int>(100, 100), sites);
  for (Coll op : {Coll::kBcast, Coll::kReduce, Coll::kAllreduce}) {
    const Prediction p = predict(s, op, 268435456, 0);
    EXPECT_GE(static_cast<double>(p.slice) * kMostSlices, 268435456.0) << coll_name(op);
    EXPECT_GT(p.hier, 0) << coll_name(op);
  }
  EXPECT_GT(predict(s, Coll::kReduceScatter, 1048576, 0).hier, 0);
}

// The all-reduce's slices on two sites of one process: each slice crosses both ways at
// once, the lines busy with the earlier ones, so T(s) = (m/s)(g0 + s us) + 10 ms: every
// slice pays g0. With g0 = 1 ms, 256 KiB whole takes 273.1 ms and in 64 KiB slices 276.1
// (1.1% more): the default stands. With g0 = 10 ms, 282.1 against 312.1: sent whole.
TEST(Costs, AnAllReduceIsSlicedOnlyWhereItPays) {
  const double bytes = 262144;
  for (double g0 : {1e-3, 10e-3}) {
    models::GridModel m = simple_model();
    m.between_sites[{"*", "*"}].g.points = {{0, g0}, {1e6, g0 + 1.0}};
    const CostShape s = shape(m, {1, 1}, {"A", "B"});
    for (double slice : {8192.0, 65536.0, 262144.0})
      EXPECT_NEAR(allreduce_hier_cost(s, bytes, slice), bytes / slice * (g0 + slice * 1e-6) + 10 * kMs, 1e-9) << slice;
    EXPECT_EQ(predict(s, Coll::kAllreduce, 262144, 0).slice, g0 < 5e-3 ? 65536u : 262144u);
  }
}

TEST(Costs, AnAccessLineMakesASitesMessagesWaitForEachOther) {
  models::GridModel m = simple_model();
  const CostShape without = shape(m, {1, 1, 1}, {"A", "B", "C"});
  m.access.insert("A");
  const CostShape with = shape(m, {1, 1, 1}, {"A", "B", "C"});
  EXPECT_NEAR(bcast_hier_cost(without, 0, 1000), 11 * kMs, 1e-9);
  EXPECT_NEAR(bcast_hier_cost(with, 0, 1000), 12 * kMs, 1e-9);  // the second after the first
}

// Between sites each stream keeps the job's flow-control window (models/flow_window.h):
// on a line of 125 MB/s whose round trip of no data is R = 20 ms, 512 KiB (set, so it
// stays) holds seven frames of 64 KiB (tau = 0.524 ms each on the line), and a stream of
// 1 MiB (16 frames) leaves its last frame at 2 (R + tau) + 2 tau; with a window the line
// never fills, after its 16 tau. Two such streams at once share the line (32 tau) but are
// held by their windows; eight fill the line (128 tau) before their windows hold them. The
// default window, which grows, settles at eight times its start there (2.5 MB in flight):
// the line's pace.
TEST(Costs, AStreamAcrossALongFatLineGoesAtItsWindowsPace) {
  models::GridModel m = simple_model();
  m.between_sites[{"*", "*"}] = line(10e-3, 0.008);  // 1e6 bytes in 8 ms
  CostShape s = shape(m, {8, 8}, {"A", "B"});
  const double L = 10e-3, R = 20e-3, tau = 65536 * 8e-9, mib = 1048576;
  EXPECT_EQ(s.pair_window[1].window, 8.0 * flow::kDefaultWindowBytes);
  {
    Timeline tl(s);
    EXPECT_NEAR(tl.send(0, 0, 1, mib, 0, 8), L + 16 * tau, 1e-12);
  }
  s.set_window(flow::Window{512 * 1024, false});
  EXPECT_EQ(s.pair_window[1].window, 512.0 * 1024);
  {
    Timeline tl(s);
    EXPECT_NEAR(tl.send(0, 0, 1, mib, 0, 8), L + 2 * (R + tau) + 2 * tau, 1e-12);
  }
  {
    Timeline tl(s);
    double last = 0;
    for (int i = 0; i < 2; ++i) last = std::max(last, tl.send(i, 0, 1, mib, 0, 8 + i));
    EXPECT_NEAR(last, L + 2 * (R + tau) + 2 * tau, 1e-12);
    for (int i = 2; i < 8; ++i) last = std::max(last, tl.send(i, 0, 1, mib, 0, 8 + i));
    EXPECT_NEAR(last, L + 128 * tau, 1e-12);
  }
  s.set_window(flow::Window{64 << 20, false});
  Timeline tl(s);
  EXPECT_NEAR(tl.send(0, 0, 1, mib, 0, 8), L + 16 * tau, 1e-12);
}

TEST(Costs, GatherGoesThroughTheSitesHeadThenOneWideAreaMessage) {
  const models::GridModel m = simple_model();
  // Site A holds c0 and c1, site B c2 (the root's). c1's 2 blocks of 1000 B reach A's head
  // over the LAN at 1 + 2 = 3 ms; A's 4 blocks then cross: 4 ms + 10 ms.
  const CostShape s = shape(m, {2, 2, 2}, {"A", "A", "B"});
  EXPECT_NEAR(gather_hier_cost(s, 4, 1000), 17 * kMs, 1e-9);
  // The scatter is the same way down: 4 ms + 10 ms to A's head, then 2 ms + 1 ms to c1.
  EXPECT_NEAR(scatter_hier_cost(s, 4, 1000), 17 * kMs, 1e-9);
}

TEST(Costs, FlatTreesByHand) {
  const models::GridModel m = simple_model();
  const CostShape s = shape(m, {2, 2}, {"A", "B"});
  // Binomial from rank 0: to rank 2 across (11 ms), to rank 1 inside (free); rank 2 to 3.
  EXPECT_NEAR(bcast_binomial_cost(s, 0, 1000), 11 * kMs, 1e-9);
  EXPECT_NEAR(reduce_binomial_cost(s, 0, 1000), 11 * kMs, 1e-9);
  // Dissemination, 1-byte messages (1 us each on a line): round 1 crosses once each way
  // (10.001 ms); in round 2 both of A's members send across: rank 1, which has rank 0's
  // round-1 message at once, right behind its own round-1 message (at 1 us), and rank 0
  // once it has rank 3's (10.001 ms, arriving at 20.002 ms). The line serves them as they
  // come in time, not in the order the rounds are written (which put rank 1 behind rank 0:
  // 20.003 ms).
  EXPECT_NEAR(barrier_dissemination_cost(s), 20.002 * kMs, 1e-9);
}

TEST(Costs, LocalGroupAgainstPairwiseExchangeByHand) {
  const models::GridModel m = simple_model();
  const CostShape s = shape(m, {2, 2}, {"A", "B"});
  // Local Group: each agent sends each remote member 2 blocks (2000 B), two messages a line
  // one after the other: 4 ms + 10 ms.
  EXPECT_NEAR(alltoall_local_group_cost(s, 1000), 14 * kMs, 1e-9);
  // Pairwise: step 1 crosses once each way (11 ms), step 2 twice each way on the same
  // line (22 and 23 ms), step 3 once more after those (33 ms).
  EXPECT_NEAR(alltoall_pairwise_cost(s, 1000), 33 * kMs, 1e-9);
  const Prediction p = predict(s, Coll::kAlltoall, 1000, 0);
  EXPECT_LT(p.hier, p.flat);
}

// Each agent's own blocks leave at once, while its cluster still exchanges: where that
// exchange is slow (here 2000 B inside a cluster at 0.5 B/us, 4 ms), A's two agents' own
// blocks take its line at 0-1 and 1-2 ms, the parked ones at 4-5 and 5-6 ms: the last
// arrives at 16 ms, where two messages of 2 blocks after the exchange would arrive at
// 4 + 2 + 2 + 10 = 18 ms.
TEST(Costs, LocalGroupAgentsSendTheirOwnBlocksWhileTheClusterExchanges) {
  models::GridModel m = simple_model();
  m.inside["*"] = line(0, 2.0);
  const CostShape s = shape(m, {2, 2}, {"A", "B"});
  EXPECT_NEAR(local_group_parked_at(s, 1000)[0], 4 * kMs, 1e-9);
  EXPECT_NEAR(alltoall_local_group_cost(s, 1000), 16 * kMs, 1e-9);
}

// The paper's two-cluster rule (the groups route) against the C-cluster one (agents), by
// hand. Clusters of 2 (A) and 3 (B), 1000 B blocks. Groups: A's member k sends B's members
// k + 2s their 2 blocks (three messages of 2 ms on A's line: the last arrives at 6 + 10 ms);
// B's members 2, 3 and 4 send 2 blocks to 0, 3 blocks to 1 (the partial group's block for
// 1 parked on 3, the fix) and 1 block to 0: 2 + 3 + 1 ms on B's line, 16 ms. Agents: three
// messages of 2 blocks one way, two of 3 the other: 16 ms too. Equal predictions go to
// agents, the first route.
TEST(Costs, LocalGroupsTwoClusterRuleByHand) {
  const models::GridModel m = simple_model();
  const CostShape s = shape(m, {2, 3}, {"A", "B"});
  EXPECT_NEAR(alltoall_local_group_two_cost(s, 1000), 16 * kMs, 1e-9);
  EXPECT_NEAR(alltoall_local_group_cost(s, 1000), 16 * kMs, 1e-9);
  const Prediction p = predict(s, Coll::kAlltoall, 1000, 0);
  ASSERT_EQ(p.routes.size(), 2u);
  EXPECT_EQ(p.routes[1].first, Route::kGroups);
  EXPECT_EQ(p.route, Route::kAgents);
  EXPECT_EQ(predict(s, Coll::kAlltoall, 1000, 0, Route::kGroups).route, Route::kGroups);
  // The smaller cluster second (1 against 3): every message one block, node 0 of C1 sending
  // three on A's line and B's three members one each on B's: 13 ms.
  const CostShape swapped = shape(m, {3, 1}, {"B", "A"});
  EXPECT_NEAR(alltoall_local_group_two_cost(swapped, 1000), 13 * kMs, 1e-9);
  // Three clusters: the two-cluster rule is no route, and asking for it gets agents.
  const CostShape three = shape(m, {1, 1, 1}, {"A", "B", "C"});
  EXPECT_EQ(predict(three, Coll::kAlltoall, 1000, 0).routes.size(), 1u);
  EXPECT_EQ(predict(three, Coll::kAlltoall, 1000, 0, Route::kGroups).route, Route::kAgents);
  EXPECT_EQ(predict(three, Coll::kScatter, 1000, 0, Route::kGroups).route, Route::kPacked);
}

TEST(Costs, OneClusterIsMpichsOwnCollective) {
  models::GridModel m;
  m.inside["*"] = line(5e-6, 0.001);
  const CostShape s = shape(m, {8}, {"A"});
  // A binomial tree of 8: 3 rounds of L + g(m).
  EXPECT_NEAR(bcast_hier_cost(s, 0, 1000), 3 * (5e-6 + 1e-6), 1e-12);
  EXPECT_NEAR(allreduce_hier_cost(s, 1000), 3 * (5e-6 + 1e-6), 1e-12);
  EXPECT_NEAR(barrier_hier_cost(s), 3 * 5e-6, 1e-12);  // one barrier, not arrive and release
}

// A cluster of two logical clusters (nodes n1 n2 | n3 n4) whose pairs were measured: 20 us
// inside the first, 90 us between them (shared memory, 5 us, inside the second's nodes).
// Its 8 members count as 4 per logical cluster, in runs; a broadcast crosses between the
// two leaders (90 + 2 us), then a binomial tree of 4 inside the slower (2 x (20 + 1) us),
// as MPICH's own binomial tree over the 8 does (its first round crosses, the two others
// not): composed on the tie. An allreduce composed would reduce inside, all-reduce
// across, broadcast inside (42 + 92 + 42 us); MPICH's recursive doubling over the 8 in runs
// crosses only in its last round (21 + 21 + 92 us): that one. An all-to-all is MPICH's over
// all 8, at the pace of the slowest pair (7 gaps of 2 us + 90 us). Point-to-point algorithms
// inside it (a flat tree, a linear gather) are taken as crossing on every message, as no
// member outside the cluster knows which logical cluster another is in: the flat binomial
// broadcast 3 x 92 us, the direct gather 92 us (every member sends at once). Without the
// pairs measured (the partition alone) the cluster is one level as before.
TEST(Costs, AClusterOfLogicalClustersComposesOverThem) {
  models::GridModel m;
  m.inside["*"] = line(5e-6, 0.001);
  models::LogicalClusters l = models::LogicalClusters::of(
      {"n1", "n2", "n3", "n4"}, {{0, 20e-6, 90e-6, 90e-6}, {20e-6, 0, 90e-6, 90e-6}, {90e-6, 90e-6, 0, 21e-6}, {90e-6, 90e-6, 21e-6, 0}});
  m.logical["c0"] = l;
  EXPECT_NEAR(bcast_hier_cost(shape(m, {8}, {"A"}), 0, 1000), 3 * (5e-6 + 1e-6), 1e-12);
  l.inside[0] = line(20e-6, 0.001);
  l.between[{0, 1}] = line(90e-6, 0.002);
  m.logical["c0"] = l;
  const CostShape s = shape(m, {8}, {"A"});
  EXPECT_NEAR(bcast_hier_cost(s, 0, 1000), 92e-6 + 2 * 21e-6, 1e-12);
  EXPECT_NEAR(allreduce_hier_cost(s, 1000), 21e-6 + 21e-6 + 92e-6, 1e-12);
  EXPECT_NEAR(alltoall_local_group_cost(s, 1000), 7 * 2e-6 + 90e-6, 1e-12);
  EXPECT_NEAR(bcast_binomial_cost(s, 0, 1000), 3 * 92e-6, 1e-12);
  // A barrier: inside the larger (2 rounds of 20 us), once between the leaders, released
  // inside (a broadcast of nothing, 2 x 20 us).
  EXPECT_NEAR(barrier_hier_cost(s), 40e-6 + 90e-6 + 40e-6, 1e-12);
  // The cluster's own pair (its first two processes) lying across the two logical clusters
  // is not taken for the pair inside one, which was measured.
  m.inside["c0"] = line(90e-6, 0.002);
  EXPECT_NEAR(bcast_hier_cost(shape(m, {8}, {"A"}), 0, 1000), 92e-6 + 2 * 21e-6, 1e-12);
  EXPECT_NEAR(gather_hier_cost(s, 0, 1000, Route::kDirect), 92e-6, 1e-12);
}

// Which way the steps inside such a cluster go, by the members' placement (two logical
// clusters, 20 us inside, 90 us between, gaps of 1 and 2 us at 1000 B). The barrier:
// MPICH's dissemination over 8 members in runs crosses in all three rounds (3 x 90 us),
// composed it meets inside (2 x 20), once across (90), releases inside (2 x 20): composed.
// Interleaved (0 1 0 1 ...), dissemination crosses only in its first round (90 + 2 x 20
// us): MPICH's. A broadcast interleaved: MPICH's tree crosses only in its last round, as
// composed once, a tie: composed. GRIDRT_CLUSTER_STEPS overrides the model either way.
TEST(Costs, TheStepsOfALogicalClusterComposeOnlyWhereTheModelPredictsItFaster) {
  LogicalLevel lv;
  lv.inside = line(20e-6, 0.001);
  lv.between = line(90e-6, 0.002);
  lv.place({0, 0, 0, 0, 1, 1, 1, 1});
  EXPECT_EQ(lv.groups, 2);
  EXPECT_EQ(lv.per_group, 4);
  EXPECT_NEAR(spread_cost(Coll::kBarrier, lv, 0, 0), 3 * 90e-6, 1e-12);
  EXPECT_NEAR(composed_cost(Coll::kBarrier, lv, 0, 0), 40e-6 + 90e-6 + 40e-6, 1e-12);
  EXPECT_TRUE(composes(Coll::kBarrier, lv, 0, 0, ClusterSteps::kModel));
  EXPECT_FALSE(composes(Coll::kAllreduce, lv, 1000, 0, ClusterSteps::kModel));
  EXPECT_TRUE(composes(Coll::kAllreduce, lv, 1000, 0, ClusterSteps::kComposed));
  // A binomial gather to member 0 in runs: rounds of 1, 2 (inside) and 4 blocks (across).
  EXPECT_NEAR(spread_cost(Coll::kGather, lv, 1000, 0), 21e-6 + (20e-6 + 2e-6) + (90e-6 + 8e-6), 1e-12);
  // From member 5, MPICH's tree is relative to it: its first round crosses (5 to 1), and so
  // does its last (7 to 0).
  EXPECT_NEAR(spread_cost(Coll::kBcast, lv, 1000, 0, 5), 92e-6 + 21e-6 + 92e-6, 1e-12);
  lv.place({0, 1, 0, 1, 0, 1, 0, 1});
  EXPECT_EQ(lv.per_group, 4);
  EXPECT_NEAR(spread_cost(Coll::kBarrier, lv, 0, 0), 90e-6 + 2 * 20e-6, 1e-12);
  EXPECT_FALSE(composes(Coll::kBarrier, lv, 0, 0, ClusterSteps::kModel));
  EXPECT_TRUE(composes(Coll::kBarrier, lv, 0, 0, ClusterSteps::kComposed));
  EXPECT_NEAR(spread_cost(Coll::kBcast, lv, 1000, 0), 2 * 21e-6 + 92e-6, 1e-12);
  EXPECT_TRUE(composes(Coll::kBcast, lv, 1000, 0, ClusterSteps::kModel));
  EXPECT_FALSE(composes(Coll::kBcast, lv, 1000, 0, ClusterSteps::kMpich));
  // No composed form: the all-gather, all-to-all and scan are MPICH's either way.
  for (Coll op : {Coll::kAllgather, Coll::kAlltoall, Coll::kScan})
    EXPECT_EQ(composed_cost(op, lv, 1000, 0), spread_cost(op, lv, 1000, 0)) << coll_name(op);
  // Large blocks down a tree: six members in runs of three, 3 us and 0.7 ms per MB inside,
  // 650 us and 3 ms per MB across, a scatter of 1 MB blocks from member 0. Composed, the
  // leaders carry three blocks across on one connection (0.65 + 9 ms), then a binomial
  // scatter of three inside (2 x 3 us + 0.7 + 1.4 ms). MPICH's tree sends two blocks across
  // to member 4 (6.65 ms) while member 2, served inside (at 2.803 ms, after the root handed
  // member 4 its 2 MB: 1.4 ms), sends one across to member 3 on a connection of its own;
  // member 4 hands one on inside (6.65 + 0.703 ms): MPICH's.
  LogicalLevel halves;
  halves.inside = line(3e-6, 0.0007);
  halves.between = line(650e-6, 0.003);
  halves.place({0, 0, 0, 1, 1, 1});
  EXPECT_NEAR(composed_cost(Coll::kScatter, halves, 1e6, 0), 0.65e-3 + 9e-3 + 6e-6 + 2.1e-3, 1e-9);
  EXPECT_NEAR(spread_cost(Coll::kScatter, halves, 1e6, 0), 6.65e-3 + 0.703e-3, 1e-9);
  EXPECT_FALSE(composes(Coll::kScatter, halves, 1e6, 0, ClusterSteps::kModel));
  // All in one group, the rounds are local_cost's.
  lv.place(std::vector<int>(8, 0));
  for (Coll op : {Coll::kBarrier, Coll::kBcast, Coll::kGather, Coll::kAllreduce, Coll::kAlltoall})
    EXPECT_NEAR(spread_cost(op, lv, 1000, 0), local_cost(op, 8, lv.inside, 1000), 1e-12) << coll_name(op);
}

// Where the model's logical clusters name hosts that every member knows (the topology's),
// the grid-level prediction places a cluster's members where they are: 8 members on hosts
// n1 n3 n1 n3 ..., two logical clusters {n1 n2} {n3 n4}, so members alternate between them
// and the barrier is MPICH's (90 + 2 x 20 us); in runs it would be composed (2 x 20 + 90 +
// 2 x 20 us). A host the model does not name leaves the runs.
TEST(Costs, MembersArePlacedOnTheirHostsWhereTheModelNamesThem) {
  models::GridModel m;
  m.inside["*"] = line(5e-6, 0.001);
  models::LogicalClusters l = models::LogicalClusters::of(
      {"n1", "n2", "n3", "n4"}, {{0, 20e-6, 90e-6, 90e-6}, {20e-6, 0, 90e-6, 90e-6}, {90e-6, 90e-6, 0, 21e-6}, {90e-6, 90e-6, 21e-6, 0}});
  l.inside[0] = line(20e-6, 0.001);
  l.between[{0, 1}] = line(90e-6, 0.002);
  m.logical["c0"] = l;
  const std::vector<int> part_of(8, 0), site_of_part{0};
  std::vector<std::string> hosts;
  for (int i = 0; i < 8; ++i) hosts.push_back(i % 2 ? "n3" : "n1");
  const CostShape placed(m, part_of, site_of_part, {"c0"}, {"A"}, hosts);
  EXPECT_EQ(placed.logical[0]->group_of, (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1}));
  EXPECT_NEAR(barrier_hier_cost(placed), 90e-6 + 40e-6, 1e-12);
  EXPECT_NEAR(barrier_hier_cost(shape(m, {8}, {"A"})), 40e-6 + 90e-6 + 40e-6, 1e-12);
  hosts[5] = "elsewhere";
  const CostShape unnamed(m, part_of, site_of_part, {"c0"}, {"A"}, hosts);
  EXPECT_EQ(unnamed.logical[0]->group_of, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(Costs, AClusterOfOneProcessNeedsNoMeasurementInside) {
  models::GridModel m;
  m.inside["c0"] = line(0, 0);  // c1 holds one process: calibration measured nothing in it
  m.between_sites[{"A", "B"}] = line(10e-3, 1.0);
  m.between_sites[{"B", "A"}] = line(10e-3, 1.0);
  const CostShape s = shape(m, {2, 1}, {"A", "B"});
  EXPECT_NEAR(bcast_hier_cost(s, 0, 1000), 11 * kMs, 1e-9);
  EXPECT_THROW(shape(m, {2, 2}, {"A", "B"}), models::ModelError);  // two processes in c1: needed
}

TEST(ModelFile, WrittenAndReadBack) {
  models::GridModel m = simple_model();
  m.inside["c0"] = line(3e-6, 0.0005);
  m.between_sites[{"A", "B"}] = line(0.01, 0.08);
  m.access.insert("A");
  m.grid = "a \"quoted\" grid";
  m.measurements = 6;
  m.slice_costs = {{"bcast", 23.2e-6}, {"allreduce/reduce-scatter", 142.5e-6}};
  const models::GridModel back = models::read_model_json(models::model_json(m), "m.json");
  EXPECT_EQ(back.grid, m.grid);
  ASSERT_EQ(back.slice_costs.size(), 2u);
  EXPECT_NEAR(back.slice_costs.at("bcast"), 23.2e-6, 1e-12);
  EXPECT_NEAR(back.slice_costs.at("allreduce/reduce-scatter"), 142.5e-6, 1e-12);
  EXPECT_NE(models::describe_model(back).find("allreduce/reduce-scatter: every slice 142.5 us beyond its messages"), std::string::npos)
      << models::describe_model(back);
  EXPECT_EQ(back.measurements, 6);
  EXPECT_EQ(back.access, m.access);
  EXPECT_NEAR(back.link("c0", "A", "c0", "A").L, 3e-6, 1e-12);
  EXPECT_NEAR(back.link("c0", "A", "c9", "B").gap(1e6), 0.08, 1e-9);
  EXPECT_NEAR(back.link("c1", "A", "c0", "B").gap(5e5), 0.04, 1e-9);  // interpolated
  EXPECT_NEAR(back.link("c1", "B", "c0", "A").gap(1e6), 1.0, 1e-9);   // the other direction: the typical pair's
  // Without typical values, what it does not name is an error naming the pair.
  models::GridModel named;
  named.inside["c0"] = line(0, 0);
  try {
    named.link("c0", "A", "c1", "B");
    ADD_FAILURE() << "a missing pair was found";
  } catch (const models::ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("from site 'A' to site 'B'"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(named.with_typical().link("c5", "A", "c5", "A"));
}

TEST(ModelFile, RefusesWhatItCannotReadNamingIt) {
  const std::string ok_plogp = R"({"L_us": 1, "g_us": [[0, 1], [1024, 2]]})";
  const std::vector<std::pair<std::string, const char*>> bad = {
      {"{", "m.json:1: not JSON"},
      {R"({"format": "other"})", "'format' must be"},
      {R"({"format": "gridrt-model/1"})", "no measurement"},
      {R"({"format": "gridrt-model/1", "inside": {"c0": {"g_us": [[0, 1]]}}})", "inside.c0: 'L_us' is missing"},
      {R"({"format": "gridrt-model/1", "inside": {"c0": {"L_us": -1, "g_us": [[0, 1]]}}})", "must be a non-negative number"},
      {R"({"format": "gridrt-model/1", "inside": {"c0": {"L_us": 1, "g_us": [[5, 1], [1, 2]]}}})", "sizes must increase"},
      {R"({"format": "gridrt-model/1", "inside": {"c0": {"L_us": 1, "g_us": [[5, 1, 3]]}}})", "[bytes, microseconds] pairs"},
      {R"({"format": "gridrt-model/1", "between_sites": [{"sites": ["A"], "plogp": )" + ok_plogp + "}]}", "must name two sites"},
      {R"({"format": "gridrt-model/1", "between_sites": [{"from": "A", "plogp": )" + ok_plogp + "}]}", "'to' is missing"},
      {R"({"format": "gridrt-model/1", "inside": {"c0": )" + ok_plogp + R"(}, "slice_cost_us": {"bcast": -3}})", "slice_cost_us.bcast"}};
  expect_refused(bad);
}

// The sample run's corrections: measured = scale x predicted + offset, recovered from
// synthetic runs; a slope out of reason falls back to the ratio; applied by predict().
TEST(ModelFile, CorrectionsFittedFromASampleRunAndApplied) {
  std::vector<std::pair<double, double>> run;
  for (double x : {0.011, 0.012, 0.021, 0.053, 0.180}) run.emplace_back(x, 1.08 * x + 0.0009);
  const models::Correction c = models::fit_correction(run);
  EXPECT_NEAR(c.scale, 1.08, 0.0108);
  EXPECT_NEAR(c.offset, 0.0009, 0.000009);
  // Times that fall as predictions rise: no line of reason, the mean ratio's slope instead.
  const models::Correction odd = models::fit_correction({{0.01, 0.05}, {0.02, 0.04}, {0.04, 0.01}});
  EXPECT_EQ(odd.offset, 0);
  EXPECT_GT(odd.scale, 0);
  // A line that crosses zero at 1.5 ms predicted (slope 3, offset -4.5 ms), sampled from 2
  // ms: the line where sampled, below it the ratio at 2 ms (1.5 / 2), not zero.
  std::vector<std::pair<double, double>> below;
  for (double x : {0.002, 0.004, 0.008, 0.016}) below.emplace_back(x, 3 * x - 0.0045);
  const models::Correction crossing = models::fit_correction(below);
  EXPECT_NEAR(crossing.scale, 3, 1e-9);
  EXPECT_NEAR(crossing.offset, -0.0045, 1e-12);
  EXPECT_NEAR(crossing.from, 0.002, 1e-15);
  EXPECT_NEAR(crossing.apply(0.004), 0.0075, 1e-12);
  EXPECT_NEAR(crossing.apply(0.0001), 0.0001 * 0.75, 1e-15);
  // Above the largest sampled (16 ms), the ratio at 16 ms (43.5 / 16), not the line.
  EXPECT_NEAR(crossing.to, 0.016, 1e-15);
  EXPECT_NEAR(crossing.apply(0.016), 0.0435, 1e-12);
  EXPECT_NEAR(crossing.apply(0.160), 0.160 * 0.0435 / 0.016, 1e-12);
  const models::Correction shallow = models::fit_correction({{0.01, 0.012}, {0.02, 0.020}, {0.04, 0.036}});  // 0.8 x + 4 ms
  EXPECT_NEAR(shallow.apply(0.4), 0.4 * 0.036 / 0.04, 1e-9);                                                 // 360 ms, not the line's 324
  EXPECT_NEAR((models::Correction{3, -0.0045}.apply(0.0001)), 0, 1e-15);  // (as it was: no samples known)
  EXPECT_NEAR(models::fit_correction({{0.01, 0.02}}).scale, 2, 1e-12);    // one point: its ratio
  EXPECT_EQ(models::fit_correction({}).scale, 1);                         // none: none
  EXPECT_EQ((models::Correction{1, -1}.apply(0.5)), 0);                   // never below zero

  models::GridModel m = simple_model();
  m.corrections["bcast/hier"] = {2.0, 0.001};
  m.corrections["bcast/flat"] = {3.0, -0.0045, 0.002, 0.016};
  models::GridModel back = models::read_model_json(models::model_json(m), "m.json");
  ASSERT_EQ(back.corrections.count("bcast/hier"), 1u);
  EXPECT_NEAR(back.corrections.at("bcast/hier").offset, 0.001, 1e-9);
  EXPECT_NEAR(back.corrections.at("bcast/flat").from, 0.002, 1e-9);  // (written as from_us)
  EXPECT_NEAR(back.corrections.at("bcast/flat").to, 0.016, 1e-9);    // (and to_us)
  EXPECT_EQ(back.corrections.at("bcast/hier").to, 0);                // not known: the line throughout
  back.corrections.erase("bcast/flat");
  const CostShape s = shape(back, {2, 2, 2}, {"A", "B", "C"});
  const Prediction p = predict(s, Coll::kBcast, 1000, 0);
  EXPECT_NEAR(p.hier, 2 * 11 * kMs + 1 * kMs, 1e-9);            // corrected
  EXPECT_NEAR(p.flat, bcast_binomial_cost(s, 0, 1000), 1e-12);  // not
}

// A cluster's gathers in the model file: written and read back (thresholds, levels, the
// frequency table), refused when malformed, and the hierarchical gather's cost taking the
// paced split where the model splits, one gather's expected time elsewhere.
// A cluster's nodes, the latencies between them, and the logical clusters that follow.
TEST(ModelFile, LogicalClustersWrittenReadBackDescribedAndRefused) {
  models::GridModel m;
  m.inside["*"] = line(50e-6, 0.08);
  // Two pairs of nodes 20 us apart, 90 us between the pairs.
  const models::LogicalClusters l = models::LogicalClusters::of(
      {"n1", "n2", "n3", "n4"}, {{0, 20e-6, 90e-6, 90e-6}, {20e-6, 0, 90e-6, 90e-6}, {90e-6, 90e-6, 0, 21e-6}, {90e-6, 90e-6, 21e-6, 0}});
  m.logical["c0"] = l;
  m.logical["c0"].inside[1] = line(21e-6, 0.01);
  m.logical["c0"].between[{0, 1}] = line(90e-6, 0.02);
  const models::GridModel back = models::read_model_json(models::model_json(m), "m.json");
  ASSERT_EQ(back.logical.count("c0"), 1u);
  const models::LogicalClusters& r = back.logical.at("c0");
  EXPECT_EQ(r.nodes, l.nodes);
  ASSERT_EQ(r.inside.size(), 1u);
  EXPECT_NEAR(r.inside.at(1).L, 21e-6, 1e-12);
  ASSERT_EQ(r.between.size(), 1u);
  EXPECT_NEAR(r.between.at({0, 1}).gap(1e6), 0.02, 1e-9);
  EXPECT_NEAR(r.latency[2][3], 21e-6, 1e-12);
  EXPECT_EQ(r.group, (std::vector<int>{0, 0, 1, 1})) << "drawn from the latencies when read";
  const std::string said = models::describe_model(back);
  EXPECT_NE(said.find("cluster c0: 4 nodes in 2 logical clusters (latency within 20% of each node's and group's least): {n1 n2} {n3 n4}"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("n3:     90.0     90.0        -     21.0"), std::string::npos) << said;
  EXPECT_NE(said.find("pLogP between logical clusters 0 and 1: L 90.0 us"), std::string::npos) << said;
  // The measurements' noise, written and read back, and drawn with.
  m.logical["c0"] = models::LogicalClusters::of(l.nodes, l.latency, 1.20, 80e-6);
  const models::GridModel noisy = models::read_model_json(models::model_json(m), "m.json");
  EXPECT_NEAR(noisy.logical.at("c0").noise, 80e-6, 1e-12);
  EXPECT_EQ(noisy.logical.at("c0").groups(), 1) << "90 us is within 1.2 x 20 + 80 us";
  EXPECT_NE(models::describe_model(noisy).find("least, + 80.0 us of the measurements' noise):"), std::string::npos);
  const std::string head = R"({"format": "gridrt-model/1", "inside": {"*": {"L_us": 1, "g_us": [[0, 1]]}}, "logical_clusters": {"c0": )";
  expect_refused(
      {{head + R"({"nodes": ["a"], "latency_us": [[0]]}}})", "logical_clusters.c0.nodes: at least two nodes"},
       {head + R"({"nodes": ["a", "a"], "latency_us": [[0, 1], [1, 0]]}}})", "node names must be given, each once ('a')"},
       {head + R"({"nodes": ["a", "b"], "latency_us": [[0, 1]]}}})", "latency_us must have a row per node (2)"},
       {head + R"({"nodes": ["a", "b"], "latency_us": [[0, 1], [1]]}}})", "latency_us must be a 2 x 2 matrix"},
       {head + R"({"nodes": ["a", "b"], "latency_us": [[0, -1], [1, 0]]}}})", "must be a non-negative number, not '-1'"},
       {head + R"({"nodes": ["a", "b"], "latency_us": [[0, 1], [1, 0]], "tolerance": 0.5}}})", "tolerance must be at least 1"},
       {head + R"({"latency_us": [[0, 1], [1, 0]]}}})", "logical_clusters.c0: 'nodes' is missing"},
       {head +
            R"({"nodes": ["a", "b"], "latency_us": [[0, 1], [1, 0]], "plogp_inside": [{"group": 1, "plogp": {"L_us": 1, "g_us": [[0, 1]]}}]}}})",
        "plogp_inside.group must be a logical cluster's number, 0 to 0 (the latencies make 1)"},
       {head +
            R"({"nodes": ["a", "b"], "latency_us": [[0, 1], [1, 0]], "plogp_between": [{"groups": [0, 0], "plogp": {"L_us": 1, "g_us": [[0, 1]]}}]}}})",
        "plogp_between must be a list of {\"groups\": [a, b] (a < b)"}});
}

TEST(ModelFile, ManyToOneWrittenReadBackAndPredicting) {
  models::GridModel m;
  m.inside["*"] = line(50e-6, 0.08);
  models::ManyToOneModel g;
  g.C = 60e-6;
  g.t = 2e-9;
  g.inv_beta0 = 80e-9;
  g.kappa1 = 0.7;
  g.kappa2 = 0.3;
  g.M1 = {{4, 16384}, {8, 8192}};
  g.Mc = {{8, 65536}};
  g.levels = {0.232, 0.462};
  g.frequencies = {{{8, 4096}, {0.0, 0.0}}, {{8, 8192}, {0.25, 0.05}}, {{8, 32768}, {0.7, 0.3}}};
  m.many_to_one["c0"] = g;
  const models::GridModel back = models::read_model_json(models::model_json(m), "m.json");
  ASSERT_EQ(back.many_to_one.count("c0"), 1u);
  const models::ManyToOneModel& r = back.many_to_one.at("c0");
  EXPECT_NEAR(r.C, g.C, 1e-12);
  EXPECT_NEAR(r.t, g.t, 1e-15);
  EXPECT_NEAR(r.inv_beta0, g.inv_beta0, 1e-15);
  EXPECT_NEAR(r.kappa1, 0.7, 1e-9);
  EXPECT_EQ(r.M1, g.M1);
  EXPECT_EQ(r.Mc, g.Mc);
  EXPECT_EQ(r.M2, 0u);
  ASSERT_EQ(r.levels.size(), 2u);
  EXPECT_NEAR(r.levels[1], 0.462, 1e-9);
  EXPECT_EQ(r.frequencies.size(), 3u);
  EXPECT_NEAR(r.frequencies.at({8, 32768})[1], 0.3, 1e-9);
  EXPECT_NE(models::describe_model(back).find("escalate from M1 = 16 KiB (4 processes), 8 KiB (8 processes)"), std::string::npos)
      << models::describe_model(back);

  // Among 8 at 32 KiB every gather escalates (232 ms or 462 ms): split in 8 pieces of 4 KiB,
  // the largest size that never escalated, each a small gather and a signal round.
  EXPECT_EQ(r.paced_pieces(8, 32768), 8);
  const CostShape s = shape(back, {8}, {"A"});
  EXPECT_NEAR(gather_hier_cost(s, 0, 32768), r.paced_split(8, 32768), 1e-12);
  EXPECT_NEAR(r.paced_split(8, 32768), 8 * (r.small(8, 4096) + 8 * r.C), 1e-12);
  // The gathers that are not split escalate as the model says: the direct route's and the
  // flat binomial's at least one gather's expected time; the paced split is chosen.
  EXPECT_GE(gather_hier_cost(s, 0, 32768, Route::kDirect), r.expected(8, 32768));
  EXPECT_GE(gather_binomial_cost(s, 0, 32768), r.expected(8, 32768));
  EXPECT_EQ(predict(s, Coll::kGather, 32768, 0).route, Route::kPacked);
  // A model of another cluster's gathers: not this one's, unless taken as the typical one
  // (predictions for grids larger than the one measured).
  models::GridModel elsewhere = m;
  elsewhere.many_to_one = {{"nodes", g}};
  EXPECT_EQ(shape(elsewhere, {8}, {"A"}).gathers[0], nullptr);
  EXPECT_NE(shape(elsewhere.with_typical(), {8}, {"A"}).gathers[0], nullptr);
  // Below M1 nothing escalates: one gather, its linear time.
  EXPECT_NEAR(gather_hier_cost(s, 0, 4096), r.small(8, 4096), 1e-12);
  // A cluster the model has no gathers for: MPICH's gather over pLogP.
  models::GridModel plain = m;
  plain.many_to_one.clear();
  EXPECT_NEAR(gather_hier_cost(shape(plain, {8}, {"A"}), 0, 32768), local_cost(Coll::kGather, 8, plain.inside["*"], 32768), 1e-12);

  const std::string base = R"({"format": "gridrt-model/1", "many_to_one": {"nodes": )";
  const std::vector<std::pair<std::string, const char*>> bad = {
      {base + R"({"t_us_per_byte": 0, "inv_beta0_us_per_byte": 0}}})", "many_to_one.nodes: 'C_us' is missing"},
      {base + R"({"C_us": 1, "t_us_per_byte": 0, "inv_beta0_us_per_byte": 0, "M1": [[1, 4096]]}}})", "[processes (2 or more), bytes]"},
      {base + R"({"C_us": 1, "t_us_per_byte": 0, "inv_beta0_us_per_byte": 0, "M2": 1.5}}})", "must be a whole number"},
      {base + R"({"C_us": 1, "t_us_per_byte": 0, "inv_beta0_us_per_byte": 0, "levels_us": [5, 1]}}})", "ascending"},
      {base + R"({"C_us": 1, "t_us_per_byte": 0, "inv_beta0_us_per_byte": 0, "levels_us": [1], "frequencies": [[8, 4096]]}}})",
       "one frequency per level"},
      {base + R"({"C_us": 1, "t_us_per_byte": 0, "inv_beta0_us_per_byte": 0, "levels_us": [1, 2], "frequencies": [[8, 4096, 0.8, 0.7]]}}})",
       "add up to more than 1"}};
  expect_refused(bad);
}

// The scatter models of Steffenel's group's slides (after Kielmann et al.'s MagPIe models),
// models/scatter_models.h: with one process per site and every site's traffic on one
// access line (a sender sends one message at a time), the hierarchical scatter's routes are
// the slides' trees, and their played cost must be their formulas: packed = flat tree
// (S-1), chain = S-2 exactly, binomial = S-3 for P a power of two and at most S-3 else.
TEST(Costs, ScatterRoutesOverSitesAreTheFlatChainAndBinomialFormulas) {
  models::PLogP wan;
  wan.L = 10e-3;
  wan.g.points = {{0, 0.5e-3}, {1e6, 0.5e-3 + 1.0}};  // 0.5 ms a message, 1 us a byte
  models::GridModel m;
  m.inside["*"] = line(0, 0);
  m.within_site["*"] = line(1e-3, 1.0);
  m.between_sites[{"*", "*"}] = wan;
  for (int P = 2; P <= 16; ++P) {
    std::vector<std::string> sites;
    for (int t = 0; t < P; ++t) {
      sites.push_back("s" + std::to_string(t));
      m.access.insert(sites.back());
    }
    const CostShape s = shape(m, std::vector<int>(P, 1), sites);
    for (double b : {1.0, 1000.0, 65536.0}) {
      const std::string at = "P=" + std::to_string(P) + " m=" + std::to_string(b);
      EXPECT_NEAR(scatter_hier_cost(s, 0, b, Route::kPacked), models::scatter_flat(wan, P, b), 1e-12) << at;
      EXPECT_NEAR(scatter_hier_cost(s, 0, b, Route::kOrdered), models::scatter_flat(wan, P, b), 1e-12) << at;
      EXPECT_NEAR(scatter_hier_cost(s, 0, b, Route::kChain), models::scatter_chain(wan, P, b), 1e-12) << at;
      const double binomial = scatter_hier_cost(s, 0, b, Route::kBinomial);
      if ((P & (P - 1)) == 0) EXPECT_NEAR(binomial, models::scatter_binomial(wan, P, b), 1e-12) << at;
      else EXPECT_LE(binomial, models::scatter_binomial(wan, P, b) + 1e-12) << at;
      // Direct is the flat tree too here: one block per remote process, each its own message.
      EXPECT_NEAR(scatter_hier_cost(s, 0, b, Route::kDirect), models::scatter_flat(wan, P, b), 1e-12) << at;
    }
  }
}

TEST(Costs, RoutesOfGatherAndScatterByHand) {
  const models::GridModel m = simple_model();
  // Four sites of one cluster of 2 each; 1000 B blocks (1 ms on a line), 10 ms across.
  const CostShape s = shape(m, {2, 2, 2, 2}, {"A", "B", "C", "D"});
  // Chain: the root sends 6 blocks to B (6 + 10 ms), B 4 to C (4 + 10), C 2 to D (2 + 10).
  EXPECT_NEAR(scatter_hier_cost(s, 0, 1000, Route::kChain), 42 * kMs, 1e-9);
  // Gather's chain the other way: D's 2 at C (12 ms), C's 4 at B (14 ms later), B's 6 at
  // the root (16 ms later).
  EXPECT_NEAR(gather_hier_cost(s, 0, 1000, Route::kChain), 42 * kMs, 1e-9);
  // Binomial over 4 sites: the root sends C's and D's 4 blocks (14 ms; on its own line to
  // C), then B's 2 (12 ms, B's line); C sends D its 2: 14 + 12 = 26 ms.
  EXPECT_NEAR(scatter_hier_cost(s, 0, 1000, Route::kBinomial), 26 * kMs, 1e-9);
  EXPECT_NEAR(gather_hier_cost(s, 0, 1000, Route::kBinomial), 26 * kMs, 1e-9);
  // Packed: each site's 2 blocks on its own line: 12 ms; direct: each block its own
  // message, two on each line: 12 ms too, but twice the WAN messages.
  EXPECT_NEAR(scatter_hier_cost(s, 0, 1000, Route::kPacked), 12 * kMs, 1e-9);
  EXPECT_NEAR(scatter_hier_cost(s, 0, 1000, Route::kDirect), 12 * kMs, 1e-9);
  // The model picks packed (the first of equals), and a forced route is taken as it is.
  EXPECT_EQ(predict(s, Coll::kScatter, 1000, 0).route, Route::kPacked);
  EXPECT_NEAR(predict(s, Coll::kScatter, 1000, 0, Route::kChain).hier, 42 * kMs, 1e-9);
  EXPECT_EQ(predict(s, Coll::kGather, 1000, 0, Route::kOrdered).route, Route::kPacked);
  EXPECT_EQ(predict(s, Coll::kGather, 1000, 0).routes.size(), 4u);
  EXPECT_EQ(predict(s, Coll::kScatter, 1000, 0).routes.size(), 5u);
}

TEST(Costs, OrderedScatterServesTheSlowestSiteFirstOnASharedLineAndAChainBypassesIt) {
  models::GridModel m = simple_model();
  m.between_sites[{"A", "C"}] = line(40e-3, 1.0);  // C is far
  m.access.insert("A");                            // and the root's site sends on one line
  const CostShape s = shape(m, {1, 1, 1}, {"A", "B", "C"});
  // In part order B's message (1 ms) goes first, C's waits behind it: 1 + 1 + 40 ms. Served
  // by tail, C's goes first: 1 + 40 ms, B's at 2 + 10 ms.
  EXPECT_NEAR(scatter_hier_cost(s, 0, 1000, Route::kPacked), 42 * kMs, 1e-9);
  EXPECT_NEAR(scatter_hier_cost(s, 0, 1000, Route::kOrdered), 41 * kMs, 1e-9);
  EXPECT_EQ(scatter_tree(s, 0, 1000, Route::kOrdered).children[0], (std::vector<int>{2, 1}));
  // The chain beats both: C's block through B, 2 + 10 ms there, then 1 + 10 ms on B's line
  // to C: 23 ms. A slow line is best bypassed through a faster site, and the model sees it.
  EXPECT_NEAR(scatter_hier_cost(s, 0, 1000, Route::kChain), 23 * kMs, 1e-9);
  EXPECT_EQ(predict(s, Coll::kScatter, 1000, 0).route, Route::kChain);
}

// The public predictor takes a route by name for the operations that have routes, the least
// without one; a route an operation lacks is its first.
TEST(Costs, GridPredictorPredictsEachRouteByName) {
  const GridShape grid{{"c0", "c1", "c2", "c3"}, {"A", "B", "C", "D"}, {2, 2, 2, 2}};
  const GridPredictor predictor = GridPredictor::from_json(models::model_json(simple_model()), grid);
  EXPECT_NEAR(predictor.predicted_us("scatter", 1000, Algo::kHier, 0, "chain"), 42000, 1e-3);  // as RoutesOfGatherAndScatterByHand
  EXPECT_NEAR(predictor.predicted_us("gather", 1000, Algo::kHier, 0, "binomial"), 26000, 1e-3);
  EXPECT_NEAR(predictor.predicted_us("scatter", 1000, Algo::kHier, 0), 12000, 1e-3);
  EXPECT_NEAR(predictor.predicted_us("gather", 1000, Algo::kHier, 0, "ordered"), 12000, 1e-3);  // a gather's ordered is packed
  EXPECT_NEAR(predictor.predicted_us("bcast", 1000, Algo::kHier, 0, "chain"), 33000, 1e-3);     // as BroadcastRoutesByHand
  EXPECT_NEAR(predictor.predicted_us("bcast", 1000, Algo::kHier, 0, "direct"), 11000, 1e-3);    // packed
  EXPECT_NEAR(predictor.predicted_us("alltoall", 1000, Algo::kHier, 0, "groups"),
              predictor.predicted_us("alltoall", 1000, Algo::kHier, 0, "agents"), 1e-3);  // four clusters: agents
  try {
    predictor.predicted_us("scatter", 1000, Algo::kHier, 0, "zigzag");
    ADD_FAILURE() << "route zigzag accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "route 'zigzag' is not one of packed, ordered, binomial, chain, direct, agents, groups, heads, rooted or reduce-scatter"),
              std::string::npos)
        << e.what();
  }
}

// A model as a calibration on loaded cores can measure it: inside the clusters, the gap of
// 1 KiB held up above that of 64 KiB, the largest size measured. Beyond it the gap is held,
// not extrapolated below zero (a 384 KiB message once arrived before it was sent, and the
// event timeline refused its schedule): every operation, hier and flat, at every size up to
// 16 MiB on a grid of two sites, one of two clusters, is predicted, and its time is
// positive and no less than a message of its size across the WAN alone.
TEST(Costs, AGapThatFallsAtTheLargestSizeMeasuredPredictsEveryOperation) {
  models::GridModel m;
  m.inside["*"].L = 20e-6;
  m.inside["*"].g.points = {{0, 2e-6}, {1024, 30e-6}, {65536, 10e-6}};
  m.within_site["*"] = line(1e-3, 0.1);
  m.between_sites[{"*", "*"}] = line(2e-3, 0.1);
  const GridShape grid{{"c0", "c1", "c2"}, {"A", "A", "B"}, {2, 2, 2}};
  const GridPredictor predictor = GridPredictor::from_json(models::model_json(m), grid);
  for (const char* op : {"barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall", "scan", "reduce_scatter"})
    for (Algo algo : {Algo::kHier, Algo::kFlat})
      for (std::size_t bytes = 1024; bytes <= (16u << 20); bytes *= 4) {
        const double us = predictor.predicted_us(op, bytes, algo);
        EXPECT_TRUE(std::isfinite(us)) << op << " " << bytes;
        const double alone = 2000 + (std::string(op) == "barrier" ? 0 : 0.1 * static_cast<double>(bytes));  // L + g(m), in us
        EXPECT_GE(us, alone * (1 - 1e-12)) << op << (algo == Algo::kHier ? " hier " : " flat ") << bytes;
      }
}

// A v-form whose sizes not every member knows (choose_without_sizes): the candidate whose
// worst ratio to the least predicted over the sizes weighed is least. Four sites of one
// process, lines of their own (simple_model), b bytes per block (b us on a line): packed,
// ordered and flat (a scatterv's flat algorithm is the linear one, the direct route) all
// send each site its block at once, 10 ms + b; the binomial tree takes two hops, 20 ms +
// 3b; the chain three, 30 ms + 6b. Both ratios grow with b, so their worst is at 4 MiB,
// where the messages of several blocks (above 4 MiB) go as rendezvous, their rest a round
// trip (20 ms) after their first frame: one such message on the binomial tree's path, two
// on the chain's.
TEST(Costs, WithoutTheSizesTheCandidateLeastSlowerThanTheBestAtItsWorstIsTaken) {
  const CostShape s = shape(simple_model(), {1, 1, 1, 1}, {"A", "B", "C", "D"});
  const double x = 4194304e-6;  // 4 MiB on a line, in seconds
  const SizelessChoice c = choose_without_sizes(s, Coll::kScatter, 0);
  EXPECT_EQ(c.algo, Algo::kHier);
  EXPECT_EQ(c.route, Route::kPacked);  // the first of the three never slower
  ASSERT_EQ(c.candidates.size(), 5u);  // four routes and flat
  for (const auto& k : c.candidates) {
    const bool at_once = k.algo == Algo::kFlat || k.route == Route::kPacked || k.route == Route::kOrdered;
    const double worst = at_once ? 1 : k.route == Route::kChain ? (70 * kMs + 6 * x) / (10 * kMs + x) : (40 * kMs + 3 * x) / (10 * kMs + x);
    EXPECT_NEAR(k.worst, worst, 1e-9) << route_name(k.route) << (k.algo == Algo::kFlat ? " (flat)" : "");
    EXPECT_EQ(k.at, at_once ? 0u : 4194304u) << route_name(k.route);
  }
  // With the chain asked for (GRIDRT_ROUTE), flat's one hop is never slower than its three.
  const SizelessChoice chain = choose_without_sizes(s, Coll::kScatter, 0, Route::kChain);
  EXPECT_EQ(chain.algo, Algo::kFlat);
  ASSERT_EQ(chain.candidates.size(), 2u);
  EXPECT_NEAR(chain.candidates[0].worst, (70 * kMs + 6 * x) / (10 * kMs + x), 1e-9);
  EXPECT_NEAR(chain.candidates[1].worst, 1, 1e-12);
  // The all-to-all's flat algorithm is the pairwise exchange, as for alltoall.
  const SizelessChoice pairs = choose_without_sizes(s, Coll::kAlltoall, 0);
  ASSERT_EQ(pairs.candidates.size(), 2u);
  EXPECT_EQ(pairs.candidates[1].algo, Algo::kFlat);

  // On unequal lines, an access line and two clusters at one site, for each operation with
  // sizes not shared and two roots: each candidate's worst is its largest ratio to the least
  // of all at one of the sizes, and none has a smaller worst than the one taken.
  models::GridModel m = simple_model();
  m.between_sites[{"A", "C"}] = line(20e-3, 4.0);
  m.between_sites[{"B", "C"}] = line(5e-3, 0.5);
  m.access.insert("A");
  const CostShape u = shape(m, {2, 1, 2, 1}, {"A", "A", "B", "C"});
  for (Coll op : {Coll::kScatter, Coll::kGather, Coll::kAlltoall})
    for (int root : {0, 5}) {
      const SizelessChoice got = choose_without_sizes(u, op, root);
      std::vector<double> worst(got.candidates.size(), 1);
      for (std::size_t b : kSizesWeighed) {
        const Prediction p = predict(u, op, b, root);
        std::vector<double> t;
        const bool linear = op != Coll::kAlltoall;  // a scatterv's and gatherv's flat: the direct route
        for (const auto& k : got.candidates)
          t.push_back(k.algo == Algo::kFlat ? (linear ? predict(u, op, b, root, Route::kDirect).hier : p.flat)
                                            : predict(u, op, b, root, k.route).hier);
        const double least = *std::min_element(t.begin(), t.end());
        for (std::size_t i = 0; i < t.size(); ++i) worst[i] = std::max(worst[i], t[i] / least);
      }
      for (std::size_t i = 0; i < worst.size(); ++i) {
        EXPECT_NEAR(got.candidates[i].worst, worst[i], 1e-9) << coll_name(op) << " root " << root << " candidate " << i;
        const bool taken = got.candidates[i].algo == got.algo && (got.algo == Algo::kFlat || got.candidates[i].route == got.route);
        if (!taken) continue;
        for (double other : worst) EXPECT_LE(worst[i], other + 1e-12) << coll_name(op) << " root " << root;
      }
    }
}

// Alone on its line, a message costs in the event timeline what Timeline says: inside a
// cluster, between clusters of a site, across sites within the window, beyond it, on a
// line that outpaces the window, and as a rendezvous (above 4 MiB).
TEST(EventTimeline, ALoneMessageCostsWhatTheTimelineSays) {
  models::GridModel m = simple_model();
  m.inside["*"] = line(20e-6, 0.001);
  for (double fast : {1.0, 0.008}) {
    m.between_sites[{"*", "*"}] = line(10e-3, fast);
    for (std::size_t window : {std::size_t{65536}, models::kDefaultWindowBytes, std::size_t{64} << 20}) {
      CostShape s = shape(m, {2, 2, 2}, {"A", "A", "B"});
      s.set_window(flow::Window{window, false});
      for (double bytes : {8.0, 100000.0, 1048576.0, 9e6})
        for (auto [from, a, b, to] : {std::array<int, 4>{0, 0, 0, 1}, {0, 0, 1, 2}, {2, 1, 2, 5}}) {
          Timeline tl(s);
          EventTimeline ev(s);
          const EventTimeline::Time t = ev.send(from, a, b, bytes, EventTimeline::kStart, to);
          ev.play();
          EXPECT_NEAR(ev.at(t), tl.send(from, a, b, bytes, 0, to), 1e-9)
              << bytes << " B from part " << a << " to " << b << ", window " << window;
        }
    }
  }
}

// Two streams of 1 MiB (16 frames of 64 KiB, tau = 65.5 ms each on a line of 1 byte/us)
// from site A to site B at once, a window of 512 KiB holding 7 frames, whose credit is back
// (R = 20 ms) long before the line has served them: the first stream's 7 frames, the
// second's 7, then the first's next 7 (queued as its credit came back, while the second's
// were on the line), the second's, and the last two of each: the first ends after 30 tau,
// the second after 32, where one after the other (Timeline) the first ends after 16. With a
// window that holds a message whole, the first is queued whole: 16 and 32 tau. A message
// ready earlier is served earlier, whatever the order the schedule added it in.
TEST(EventTimeline, StreamsBeyondTheirWindowShareTheLineFrameByFrame) {
  CostShape s = shape(simple_model(), {2, 2}, {"A", "B"});
  s.set_window(flow::Window{512 * 1024, false});
  const double L = 10e-3, tau = 65536e-6, mib = 1048576;
  auto both = [&](auto& tl) {
    const auto first = tl.send(0, 0, 1, mib, {}, 2);
    return std::make_pair(first, tl.latest(first, tl.send(1, 0, 1, mib, {}, 3)));
  };
  // When the first and the last arrive, played in time order.
  auto in_time = [&] {
    EventTimeline ev(s);
    const auto [first, last] = both(ev);
    ev.play();
    return std::make_pair(ev.at(first), ev.at(last));
  };
  EXPECT_NEAR(in_time().first, L + 30 * tau, 1e-9);
  EXPECT_NEAR(in_time().second, L + 32 * tau, 1e-9);
  {
    Timeline tl(s);
    const auto [first_fifo, last_fifo] = both(tl);
    EXPECT_NEAR(first_fifo, L + 16 * tau, 1e-9);
    EXPECT_NEAR(last_fifo, L + 32 * tau, 1e-9);
  }
  // played(): in time order up to kMostFrames frames, else first come, first served.
  EXPECT_NEAR(played(s, 2, mib, [&](auto& tl) { return both(tl).first; }), L + 30 * tau, 1e-9);
  EXPECT_NEAR(played(s, kMostFrames, mib, [&](auto& tl) { return both(tl).first; }), L + 16 * tau, 1e-9);
  s.set_window(flow::Window{64 << 20, false});
  EXPECT_NEAR(in_time().first, L + 16 * tau, 1e-9);
  EXPECT_NEAR(in_time().second, L + 32 * tau, 1e-9);
  // Member 1's message, added second but ready first (member 0's waits for 8 bytes from
  // site B, 10.008 ms), crosses first; member 0's follows it (first come, first served, it
  // would have gone first: 2 L + 8 us + 16 tau).
  EventTimeline ev(s);
  const auto late = ev.send(0, 0, 1, mib, ev.send(2, 1, 0, 8, EventTimeline::kStart, 0), 2);
  const auto early = ev.send(1, 0, 1, mib, EventTimeline::kStart, 3);
  ev.play();
  EXPECT_NEAR(ev.at(early), L + 16 * tau, 1e-9);
  EXPECT_NEAR(ev.at(late), L + 32 * tau, 1e-9);
}

// A send completes once its sender has handed it over whole: where the window holds the
// message, when it begins; a stream of 1 MiB beyond a 512 KiB window (7 frames of 64 KiB,
// tau = 65.5 ms each on a line of 1 byte/us, credit back R = 2 L = 20 ms after a frame
// left) has its frame k >= 7 given credit when frame k - 7's is back, (k - 6) tau + R: its
// last at 9 tau + R, while it arrives at 16 tau + L.
TEST(EventTimeline, ASendIsHandedOverWhenItsLastFrameHasCredit) {
  CostShape s = shape(simple_model(), {2, 2}, {"A", "B"});
  s.set_window(flow::Window{512 * 1024, false});
  const double L = 10e-3, R = 20e-3, tau = 65536e-6, mib = 1048576;
  EventTimeline ev(s);
  EventTimeline::Time beyond{}, whole{}, inside{};
  const auto arrives = ev.send(0, 0, 1, mib, EventTimeline::kStart, 2, &beyond);
  ev.send(2, 1, 0, 65536, EventTimeline::kStart, 0, &whole);  // the other way
  ev.send(3, 1, 1, mib, EventTimeline::kStart, 2, &inside);
  ev.play();
  EXPECT_NEAR(ev.at(arrives), 16 * tau + L, 1e-9);
  EXPECT_NEAR(ev.at(beyond), 9 * tau + R, 1e-9);
  EXPECT_NEAR(ev.at(whole), 0, 1e-12);
  EXPECT_NEAR(ev.at(inside), 0, 1e-12);  // (free inside clusters in this model)
}

// Credit comes back on the line the other way, behind what is queued there (windows of 512
// KiB, seven frames of 64 KiB). Four members
// of site B send site A's one member 256 KiB each at once (16 frames on B's line to A,
// each stream's held whole by its window), while A's member sends B 1 MiB: the grants for
// its first 7 frames wait behind B's 16 frames and are back at 16 tau + L; its frames 7 to
// 13 then leave at 17 tau + L .. 23 tau + L; 14 and 15 have credit from 7 and 8 (back at
// 17 and 18 tau + 3 L), leave at 24 and 25 tau + L, and it arrives at 25 tau + 2 L (16 tau
// + L with the line back idle). A pairwise exchange of 1 MiB both ways at once is held the
// same way, and is not with a window holding its messages whole.
TEST(EventTimeline, CreditComesBackBehindTheFramesOnTheLineBack) {
  const double L = 10e-3, tau = 65536e-6, mib = 1048576;
  CostShape s = shape(simple_model(), {1, 4}, {"A", "B"});
  s.set_window(flow::Window{512 * 1024, false});
  EventTimeline ev(s);
  EventTimeline::Time handed{};
  const auto arrives = ev.send(0, 0, 1, mib, EventTimeline::kStart, 1, &handed);
  for (int i = 1; i <= 4; ++i) ev.send(i, 1, 0, 262144, EventTimeline::kStart, 0);
  ev.play();
  EXPECT_NEAR(ev.at(arrives), 25 * tau + 2 * L, 1e-9);
  EXPECT_NEAR(ev.at(handed), 18 * tau + 3 * L, 1e-9);

  CostShape two = shape(simple_model(), {1, 1}, {"A", "B"});
  two.set_window(flow::Window{512 * 1024, false});
  EXPECT_GT(alltoall_pairwise_cost(two, mib), 16 * tau + L + 1e-3);
  two.set_window(flow::Window{64 << 20, false});
  EXPECT_NEAR(alltoall_pairwise_cost(two, mib), 16 * tau + L, 1e-9);
}

// A rendezvous (above 4 MiB) sends its first frame, then its rest once the receiver has
// matched it and its Matched is back. Site A's member receives 5 MiB (80 frames, tau =
// 65.5 ms each on lines of 1 byte/us, a window holding it) from B's and 1 MiB (16 frames)
// from C's: with both receives posted at once, the Matched comes back with the first
// frame's credit (tau + 2 L) and the 5 MiB arrive at 80 tau + 3 L; with the 5 MiB's receive
// posted once the 1 MiB has arrived (16 tau + L), at 95 tau + 3 L. A binomial reduction
// receives its children in turn: of 5 MiB from B and C to A, C's rest waits for B's to
// arrive (80 tau + 3 L) and its own arrives at 159 tau + 5 L.
TEST(EventTimeline, ARendezvousWaitsForItsReceiveToBePosted) {
  CostShape s = shape(simple_model(), {1, 1, 1}, {"A", "B", "C"});
  s.set_window(flow::Window{64 << 20, false});
  const double L = 10e-3, tau = 65536e-6, mib = 1048576;
  for (bool in_turn : {false, true}) {
    EventTimeline ev(s);
    const auto small = ev.send(2, 2, 0, mib, EventTimeline::kStart, 0);
    const auto large = ev.send(1, 1, 0, 5 * mib, EventTimeline::kStart, 0, nullptr, in_turn ? small : EventTimeline::kStart);
    ev.play();
    EXPECT_NEAR(ev.at(small), 16 * tau + L, 1e-9);
    EXPECT_NEAR(ev.at(large), (in_turn ? 95 : 80) * tau + 3 * L, 1e-9) << in_turn;
  }
  EXPECT_NEAR(reduce_binomial_cost(s, 0, 5 * mib), 159 * tau + 5 * L, 1e-9);
}

// The catalogue (coll/catalogue.h): every operation has a hierarchical and a flat algorithm on
// any number of clusters; the routes each family takes, in the order auto weighs them and
// the first the default; every row runs and, but for the compositions, costs; each names
// the file that holds it.
TEST(Catalogue, EveryOperationHasItsFamiliesAndTheRoutesTheyTake) {
  const Coll every[] = {Coll::kBarrier, Coll::kBcast,     Coll::kReduce,   Coll::kAllreduce, Coll::kGather,
                        Coll::kScatter, Coll::kAllgather, Coll::kAlltoall, Coll::kScan,      Coll::kReduceScatter};
  for (Coll op : every)
    for (int parts = 1; parts <= 4; ++parts)
      for (Algo family : {Algo::kHier, Algo::kFlat})
        EXPECT_EQ(algorithm_of(op, family, Route::kPacked, parts).op, op) << coll_name(op) << " on " << parts;
  using R = Route;
  EXPECT_EQ(routes_of(Coll::kScatter, 3), (std::vector<R>{R::kPacked, R::kOrdered, R::kBinomial, R::kChain, R::kDirect}));
  EXPECT_EQ(routes_of(Coll::kGather, 3), (std::vector<R>{R::kPacked, R::kBinomial, R::kChain, R::kDirect}));
  EXPECT_EQ(routes_of(Coll::kBcast, 1), (std::vector<R>{R::kPacked, R::kBinomial, R::kChain}));
  EXPECT_EQ(routes_of(Coll::kReduce, 2), (std::vector<R>{R::kPacked, R::kBinomial, R::kChain}));
  EXPECT_EQ(routes_of(Coll::kAllreduce, 2), (std::vector<R>{R::kHeads, R::kRooted, R::kReduceScatter}));
  EXPECT_TRUE(routes_of(Coll::kAllreduce, 1).empty());  // MPICH's own on one cluster
  EXPECT_EQ(routes_of(Coll::kReduceScatter, 3), (std::vector<R>{R::kHeads, R::kRooted}));
  EXPECT_TRUE(routes_of(Coll::kReduceScatter, 1).empty());
  EXPECT_EQ(routes_of(Coll::kAlltoall, 2), (std::vector<R>{R::kAgents, R::kGroups}));
  EXPECT_EQ(routes_of(Coll::kAlltoall, 3), (std::vector<R>{R::kAgents}));  // the paper's rule is for two
  for (Coll op : {Coll::kBarrier, Coll::kAllgather, Coll::kScan}) EXPECT_TRUE(routes_of(op, 3).empty()) << coll_name(op);
  // A route the operation does not take runs its first.
  EXPECT_EQ(algorithm_of(Coll::kAlltoall, Algo::kHier, R::kGroups, 3).route, R::kAgents);
  EXPECT_EQ(algorithm_of(Coll::kGather, Algo::kHier, R::kOrdered, 3).route, R::kPacked);
  // Only these fold in rank order among the reductions' routes.
  for (Coll op : {Coll::kReduce, Coll::kAllreduce, Coll::kReduceScatter}) {
    std::set<R> keep;
    for (R r : routes_of(op, 3))
      if (algorithm_of(op, Algo::kHier, r, 3).keeps_rank_order) keep.insert(r);
    const std::set<R> expected = op == Coll::kReduce      ? std::set<R>{R::kPacked}
                                 : op == Coll::kAllreduce ? std::set<R>{R::kHeads, R::kReduceScatter}
                                                          : std::set<R>{R::kHeads};
    EXPECT_EQ(keep, expected) << coll_name(op);
  }
  for (const Algorithm& a : catalogue()) {
    EXPECT_NE(a.run, nullptr) << a.name;
    EXPECT_TRUE(a.cost || a.route == R::kRooted) << a.name << ": only the rooted compositions are costed by their parts";
    EXPECT_TRUE(std::filesystem::exists(std::string(GRIDRT_SOURCE_DIR "/runtime/src/coll/") + a.name + ".cpp")) << a.name;
  }
}
