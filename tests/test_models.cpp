// The performance models' fits and predictions (models/), on synthetic data whose
// parameters are known, and against hand-computed cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>

#include "models/contention_signature.h"
#include "models/flow_window.h"
#include "models/least_squares.h"
#include "models/logical_clusters.h"
#include "models/many_to_one.h"
#include "models/plogp.h"
#include "models/scatter_models.h"

namespace {

using namespace gridrt::models;

TEST(LeastSquares, LinesThroughHandComputedPoints) {
  // (0, 1), (1, 3), (2, 5): y = 2x + 1 exactly.
  const Line l = fit_line({{0, 1, 1}, {1, 3, 1}, {2, 5, 1}});
  ASSERT_TRUE(l.ok);
  EXPECT_NEAR(l.slope, 2, 1e-12);
  EXPECT_NEAR(l.intercept, 1, 1e-12);
  EXPECT_NEAR(l.sse, 0, 1e-12);
  // (1, 1), (2, 3): through the origin, a = (1*1 + 2*3) / (1 + 4) = 7/5; sse = (1 - 1.4)^2 + (3 - 2.8)^2.
  const Line o = fit_through_origin({{1, 1, 1}, {2, 3, 1}});
  EXPECT_NEAR(o.slope, 1.4, 1e-12);
  EXPECT_NEAR(o.sse, 0.16 + 0.04, 1e-12);
  // Weights: a point weighted 0 does not count.
  EXPECT_NEAR(fit_line({{0, 1, 1}, {1, 3, 1}, {2, 5, 1}, {3, 100, 0}}).slope, 2, 1e-12);
  EXPECT_FALSE(fit_line({{1, 1, 1}}).ok);
  // Through the point of least x, (0, 10), in whatever order given: the others rise 4 at
  // x = 1 and 0 at x = 3, so a = (1*4 + 3*0) / (1 + 9) = 0.4.
  const Line f = fit_through_least_x({{1, 14, 1}, {0, 10, 1}, {3, 10, 1}});
  EXPECT_NEAR(f.slope, 0.4, 1e-12);
  EXPECT_NEAR(f.intercept, 10, 1e-12);
  // Medians: the middle sample, the mean of the middle two, 0 of none.
  EXPECT_EQ(median_of({5, 1, 3}), 3);
  EXPECT_EQ(median_of({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median_of({}), 0);
}

// One run's samples of Eq. 5 with known parameters.
std::vector<AlltoallSample> samples_of(const ContentionSignature& truth, int n) {
  std::vector<AlltoallSample> out;
  for (std::uint64_t m = 256; m <= (1u << 20); m *= 2) out.push_back({m, truth.predict(n, static_cast<double>(m))});
  return out;
}

TEST(ContentionSignature, FittedFromOneRunItRecoversGammaDeltaAndM) {
  ContentionSignature truth;
  truth.alpha = 50e-6;
  truth.beta = 1e-8;  // 100 MB/s
  truth.gamma = 2.5;
  truth.delta = 300e-6;
  truth.M = 8192;
  const ContentionSignature fit = fit_contention_signature(24, truth.alpha, truth.beta, samples_of(truth, 24));
  EXPECT_NEAR(fit.gamma, truth.gamma, 0.01 * truth.gamma);
  EXPECT_NEAR(fit.delta, truth.delta, 0.01 * truth.delta);
  EXPECT_EQ(fit.M, truth.M);
  // What the signature is for: another process count and size, predicted.
  EXPECT_NEAR(fit.predict(40, 100000), truth.predict(40, 100000), 0.01 * truth.predict(40, 100000));
  EXPECT_NEAR(fit.predict(40, 1000), truth.predict(40, 1000), 0.01 * truth.predict(40, 1000));
}

TEST(ContentionSignature, WithoutAnOverheadOneGammaServesEverySize) {
  ContentionSignature truth;
  truth.alpha = 20e-6;
  truth.beta = 1e-9;
  truth.gamma = 1.8;  // no delta: the paper's Myrinet
  const ContentionSignature fit = fit_contention_signature(16, truth.alpha, truth.beta, samples_of(truth, 16));
  EXPECT_NEAR(fit.gamma, truth.gamma, 0.01 * truth.gamma);
  EXPECT_EQ(fit.delta, 0);
  EXPECT_NEAR(fit.predict(8, 4096), truth.predict(8, 4096), 0.01 * truth.predict(8, 4096));
}

TEST(ContentionSignature, TooFewSamplesGiveNoContention) {
  const ContentionSignature fit = fit_contention_signature(8, 1e-5, 1e-8, {{1024, 1e-3}, {2048, 2e-3}, {4096, 4e-3}});
  EXPECT_EQ(fit.gamma, 1);
  EXPECT_EQ(fit.delta, 0);
}

// ---------------------------------------------------------------- logical clusters

using Matrix = std::vector<std::vector<double>>;

// Whether two partitions group the same nodes together, whatever their numbering.
bool same_grouping(const std::vector<int>& a, const std::vector<int>& b) {
  if (a.size() != b.size()) return false;
  std::map<int, int> ab, ba;
  for (std::size_t v = 0; v < a.size(); ++v)
    if (ab.emplace(a[v], b[v]).first->second != b[v] || ba.emplace(b[v], a[v]).first->second != a[v]) return false;
  return true;
}

// A platform like the paper's IDPOT: 20 machines in 6 groups (two kinds of network card,
// two switches), 100 us inside a group (within 5%), 1.5 to 3 times that between groups,
// groups 2 and 4 the slow ones (3 times).
Matrix idpot_like(std::vector<int>* group) {
  const std::vector<int> sizes = {4, 4, 3, 3, 3, 3};
  group->clear();
  for (int g = 0; g < 6; ++g) group->insert(group->end(), sizes[g], g);
  const int n = static_cast<int>(group->size());
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> jitter(0.95, 1.05), between(1.5, 2.4);
  Matrix m(n, std::vector<double>(n, 0));
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) {
      const int ga = (*group)[a], gb = (*group)[b];
      double w = 100e-6 * (ga == gb ? jitter(rng) : (ga == 2 || gb == 2 || ga == 4 || gb == 4 ? 3.0 : between(rng)));
      m[a][b] = m[b][a] = w;
    }
  return m;
}

TEST(LogicalClusters, AnIdpotLikePlatformSplitsIntoItsSixGroupsInAnyNodeOrder) {
  std::vector<int> group;
  const Matrix m = idpot_like(&group);
  EXPECT_TRUE(same_grouping(partition(m), group));
  // The same platform, its nodes numbered otherwise: the same groups.
  std::vector<int> order(group.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(11));
  Matrix shuffled(m.size(), std::vector<double>(m.size()));
  std::vector<int> shuffled_group(m.size());
  for (std::size_t a = 0; a < m.size(); ++a) {
    shuffled_group[a] = group[order[a]];
    for (std::size_t b = 0; b < m.size(); ++b) shuffled[a][b] = m[order[a]][order[b]];
  }
  EXPECT_TRUE(same_grouping(partition(shuffled), shuffled_group));
}

TEST(LogicalClusters, TheToleranceIsTwentyPercentOfTheCheapestEdge) {
  const double none = std::numeric_limits<double>::infinity();
  auto three = [&](double bc) { return Matrix{{0, 100e-6, none}, {100e-6, 0, bc}, {none, bc, 0}}; };
  EXPECT_EQ(partition(three(119e-6)), (std::vector<int>{0, 0, 0})) << "1.19 times: joined";
  EXPECT_EQ(partition(three(121e-6)), (std::vector<int>{0, 0, 1})) << "1.21 times: apart";
  // Nodes with no known latency between them are never joined.
  EXPECT_EQ(partition(Matrix{{0, none}, {none, 0}}), (std::vector<int>{0, 1}));
  // Only one direction known: it is used.
  EXPECT_EQ(partition(Matrix{{0, 1e-4}, {none, 0}}), (std::vector<int>{0, 0}));
  EXPECT_TRUE(partition(Matrix{}).empty());
}

// The measurements' noise as an allowance: three cliques of one host measured at 0.34, 0.52
// and 3.0 us one way (a real calibration) split by the relative rule alone; with the 0.5 us
// the round trips spread by, they are one logical cluster. The IDPOT-like platform's groups,
// 50 to 200 us apart, stay apart with a noise of a few microseconds.
TEST(LogicalClusters, DifferencesWithinTheMeasurementsNoiseAreNone) {
  const Matrix one_host = {{0, 0.3355e-6, 0.516e-6}, {0.3355e-6, 0, 3.0245e-6}, {0.516e-6, 3.0245e-6, 0}};
  EXPECT_EQ(partition(one_host), (std::vector<int>{0, 0, 1}));
  EXPECT_EQ(partition(one_host, 1.20, 0.5e-6), (std::vector<int>{0, 0, 0}));
  std::vector<int> group;
  EXPECT_TRUE(same_grouping(partition(idpot_like(&group), 1.20, 5e-6), group));
  EXPECT_EQ(partition(idpot_like(&group), 1.20, 200e-6), std::vector<int>(group.size(), 0)) << "a noise as large as the gaps joins all";
}

// C subnets of two hosts each take C(C+1)/2 measurements: one inside each, one per pair
// of subnets (21 for the paper's six); a subnet all on one host needs none inside.
TEST(LogicalClusters, MeasurementsTakenAreCTimesCPlusOneHalves) {
  for (int c = 1; c <= 8; ++c) {
    std::vector<int> subnet;
    std::vector<std::string> host;
    for (int s = 0; s < c; ++s)
      for (int k = 0; k < 3; ++k) {
        subnet.push_back(s);
        host.push_back("h" + std::to_string(s) + "-" + std::to_string(k % 2));
      }
    const auto pairs = measurement_pairs(subnet, host);
    EXPECT_EQ(pairs.size(), static_cast<std::size_t>(c * (c + 1) / 2)) << c << " subnets";
    for (const auto& [a, b] : pairs) EXPECT_NE(host[a], host[b]) << "a pair on one host is no network measurement";
  }
  EXPECT_EQ(measurement_pairs({0, 0, 0}, {"h", "h", "h"}).size(), 0u);
  EXPECT_EQ(measurement_pairs({0, 0, 1}, {"h", "h", "g"}), (std::vector<std::pair<int, int>>{{0, 2}}));
}

// Same-host detection: a node is a host, or each of a host's shared-memory domains where
// MPI sees several there (MPICH's cliques, for tests), counted in their first process's order.
TEST(LogicalClusters, NodesAreHostsOrTheirSharedMemoryDomains) {
  EXPECT_EQ(node_names({"h", "h", "h"}, {0, 0, 0}), (std::vector<std::string>{"h", "h", "h"}));
  EXPECT_EQ(node_names({"h", "h", "h", "h"}, {0, 1, 0, 1}), (std::vector<std::string>{"h/0", "h/1", "h/0", "h/1"}));
  EXPECT_EQ(node_names({"a", "b", "a", "b"}, {7, 9, 7, 3}), (std::vector<std::string>{"a", "b/0", "a", "b/1"}));
  EXPECT_TRUE(node_names({}, {}).empty());
  // A model's logical clusters answer by node name; a node it did not measure is -1.
  const LogicalClusters l = LogicalClusters::of({"h/0", "h/1", "h/2"}, {{0, 10e-6, 50e-6}, {10e-6, 0, 50e-6}, {50e-6, 50e-6, 0}});
  EXPECT_EQ(l.groups(), 2);
  EXPECT_EQ(l.group_of("h/1"), 0);
  EXPECT_EQ(l.group_of("h/2"), 1);
  EXPECT_EQ(l.group_of("h/3"), -1);
}

// ---------------------------------------------------------------- pLogP and scatter

TEST(PLogP, MeasuredSizesAreInterpolatedAndExtrapolatedLinearly) {
  const BySize g{{{0, 1}, {10, 2}, {20, 4}}};
  EXPECT_DOUBLE_EQ(g.at(5), 1.5);
  EXPECT_DOUBLE_EQ(g.at(10), 2);
  EXPECT_DOUBLE_EQ(g.at(15), 3);
  EXPECT_DOUBLE_EQ(g.at(30), 6) << "beyond: the last two";
  EXPECT_DOUBLE_EQ(g.at(-10), 0) << "before: the first two";
  const BySize one{{{0, 7}}};
  EXPECT_DOUBLE_EQ(one.at(100), 7);
  // Falling between its last two sizes (a smaller size held up while measured, or a model
  // written by hand): held at the last beyond it, where the line through them would reach
  // below zero (at 30 here); never negative before the first either.
  const BySize falling{{{10, 1}, {20, 5}, {30, 2}}};
  EXPECT_DOUBLE_EQ(falling.at(25), 3.5) << "between: as measured";
  EXPECT_DOUBLE_EQ(falling.at(40), 2);
  EXPECT_DOUBLE_EQ(falling.at(1e9), 2);
  EXPECT_DOUBLE_EQ(falling.at(0), 0) << "the line through the first two is at -3 there";
  // As calibration keeps a gap: a size read above a larger one takes the larger's.
  const BySize kept = never_falling(BySize{{{0, 4}, {10, 1}, {20, 5}, {30, 2}, {40, 6}}});
  const std::vector<std::pair<double, double>> expected{{0, 1}, {10, 1}, {20, 2}, {30, 2}, {40, 6}};
  EXPECT_EQ(kept.points, expected);
}

// A pair whose directions differ (1 MiB: 84 ms from a to b behind an access line, 42 ms back;
// 5 ms each way): the gaps of both directions from the times calibration takes, for the
// stream lengths it uses; and one of equal directions.
TEST(PLogP, EachDirectionsGapFromARoundTripAndTwoStreams) {
  for (int n : {4, 16})
    for (const auto& [gf, gb] : {std::pair{84e-3, 42e-3}, std::pair{42e-3, 84e-3}, std::pair{10e-3, 10e-3}}) {
      const double Lf = 5e-3, Lb = 5e-3;
      const Gaps g = gaps_from_streams(gf + Lf + Lb, n * gf + Lf + Lb, n * gb + Lb + Lf, n);
      EXPECT_NEAR(g.forth, gf, 1e-12) << n;
      EXPECT_NEAR(g.back, gb, 1e-12) << n;
    }
}

// A LAN: L = 50 us, g(x) = 10 us + x / (100 MB/s).
PLogP lan() {
  PLogP p;
  p.L = 50e-6;
  p.g = {{{0, 10e-6}, {1e6, 10e-6 + 1e-2}}};
  return p;
}

TEST(ScatterModels, FlatChainAndBinomialTreesByHand) {
  const PLogP p = lan();
  // (P-1) g(m) + L = 7 x 20 us + 50 us.
  EXPECT_NEAR(scatter_flat(p, 8, 1000), 190e-6, 1e-12);
  // g(1000) + g(2000) + g(3000) + 3 L = 20 + 30 + 40 + 150 us.
  EXPECT_NEAR(scatter_chain(p, 4, 1000), 240e-6, 1e-12);
  // 3 L + g(1000) + g(2000) + g(4000) = 150 + 20 + 30 + 50 us.
  EXPECT_NEAR(scatter_binomial(p, 8, 1000), 250e-6, 1e-12);
  EXPECT_EQ(scatter_flat(p, 1, 1000), 0);
  EXPECT_EQ(scatter_binomial(p, 1, 1000), 0);
}

// With an affine gap the chain is never faster than the flat tree; the binomial tree beats
// it exactly where (P-1-k) g(0) > (k-1) L (P a power of two, k = log2 P).
TEST(ScatterModels, ChainNeverWinsAndBinomialWinsWhereGapsOutweighLatency) {
  for (double L : {1e-6, 50e-6, 10e-3})
    for (double g0 : {1e-6, 10e-6, 100e-6}) {
      PLogP p;
      p.L = L;
      p.g = {{{0, g0}, {1e6, g0 + 1e-2}}};
      for (int P = 2; P <= 64; ++P) {
        EXPECT_GE(scatter_chain(p, P, 1000), scatter_flat(p, P, 1000) - 1e-15) << "P=" << P;
        if ((P & (P - 1)) != 0) continue;
        const int k = static_cast<int>(std::log2(P));
        const double margin = (P - 1 - k) * g0 - (k - 1) * L;
        if (std::fabs(margin) < 1e-12) continue;
        EXPECT_EQ(scatter_binomial(p, P, 1000) < scatter_flat(p, P, 1000), margin > 0) << "P=" << P << " L=" << L << " g0=" << g0;
      }
    }
}

// Across clusters, packing saves the per-message gaps of the remote blocks on the WAN.
TEST(ScatterModels, PackedGridScatterSavesTheWideAreaGapsOfDirect) {
  PLogP wan;
  wan.L = 10e-3;
  wan.g = {{{0, 100e-6}, {1e6, 100e-6 + 0.08}}};  // 12.5 MB/s
  const PLogP local = lan();
  const double m = 1000;
  // One remote process: both send one message.
  EXPECT_NEAR(grid_scatter_direct(wan, local, {1, 1}, m), wan.gap(m) + wan.L, 1e-12);
  EXPECT_NEAR(grid_scatter_packed(wan, local, {1, 1}, m), wan.gap(m) + wan.L, 1e-12);
  // Three remote processes: 3 g_w(m) + L_w against g_w(3m) + L_w + a local flat scatter
  // of 3 (2 g(m) + L).
  EXPECT_NEAR(grid_scatter_direct(wan, local, {1, 3}, m), 3 * wan.gap(m) + wan.L, 1e-12);
  EXPECT_NEAR(grid_scatter_packed(wan, local, {1, 3}, m), wan.gap(3 * m) + wan.L + 2 * local.gap(m) + local.L, 1e-12);
  EXPECT_LT(grid_scatter_packed(wan, local, {2, 4, 4}, m), grid_scatter_direct(wan, local, {2, 4, 4}, m));
}

// The split rule: every piece strictly below M1, the pieces add up to M, as few as can be;
// no split below M1.
TEST(ManyToOne, TheSplitRuleCutsAMediumGatherIntoPiecesBelowM1) {
  for (std::uint64_t M1 = 2; M1 <= 4096; M1 = M1 * 3 / 2 + 1)
    for (std::uint64_t M = 1; M <= 4 * 65536; M = M * 5 / 4 + 7) {
      const auto pieces = split_sizes(M, M1);
      EXPECT_EQ(std::accumulate(pieces.begin(), pieces.end(), std::uint64_t{0}), M) << M << " " << M1;
      if (M < M1) {
        EXPECT_EQ(pieces.size(), 1u);
        continue;
      }
      EXPECT_LT(*std::max_element(pieces.begin(), pieces.end()), M1) << M << " " << M1;
      EXPECT_LE(*std::max_element(pieces.begin(), pieces.end()) - *std::min_element(pieces.begin(), pieces.end()), 1u);
      // One piece fewer would need a piece of M1 bytes or more.
      if (pieces.size() > 1) { EXPECT_GE((M + pieces.size() - 2) / (pieces.size() - 1), M1) << M << " " << M1; }
    }
}

// A platform with known parameters: the linear parts recovered from point-to-point samples
// and one gather each, within 1%.
// A switched cluster's linear parts: 40 us per node and message, 2 ns per byte, a root link
// of 12.5 MB/s, kappa1 above the root link's floor for n <= 8.
ManyToOneModel known_platform() {
  ManyToOneModel m;
  m.C = 40e-6;
  m.t = 2e-9;
  m.inv_beta0 = 80e-9;
  m.kappa1 = 50;
  m.kappa2 = 1.8;
  return m;
}

TEST(ManyToOne, TheLinearPartsAreRecoveredFromPingPongAndOneGatherEach) {
  const ManyToOneModel truth = known_platform();
  std::vector<PointToPointSample> pp;
  for (std::uint64_t M : {0u, 1024u, 4096u, 16384u})
    pp.push_back({M, 2 * truth.C + static_cast<double>(M) * (2 * truth.t + truth.inv_beta0), truth.C + truth.t * static_cast<double>(M)});
  ManyToOneModel fit;
  fit_node_parameters(fit, pp, 16384);
  EXPECT_NEAR(fit.C, truth.C, 0.01 * truth.C);
  EXPECT_NEAR(fit.t, truth.t, 0.01 * truth.t);
  EXPECT_NEAR(fit.inv_beta0, truth.inv_beta0, 0.01 * truth.inv_beta0);
  const std::vector<GatherSample> one_each = {
      {6, 4096, truth.small(6, 4096)}, {6, 4096, truth.small(6, 4096)}, {5, 1 << 20, truth.large(5, 1 << 20)}};
  fit_kappas(fit, 6, 4096, 5, 1 << 20, one_each);
  EXPECT_NEAR(fit.kappa1, truth.kappa1, 0.01 * truth.kappa1);
  EXPECT_NEAR(fit.kappa2, truth.kappa2, 0.01 * truth.kappa2);
  EXPECT_NEAR(fit.small(3, 1000), truth.small(3, 1000), 0.01 * truth.small(3, 1000));
}

// A sweep with escalations injected at known levels, thresholds and frequencies (frequencies
// rising with n and M between M1(n) and M2, as the paper reports): the levels, M1(n), Mc(n)
// and M2 found exactly, the frequencies within their binomial spread.
TEST(ManyToOne, EscalationLevelsAndThresholdsAreFoundInASweep) {
  const ManyToOneModel truth = known_platform();
  const std::vector<double> levels = {0.040, 0.200, 0.250, 0.600};
  const std::vector<std::uint64_t> sizes = {1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};
  auto M1_of = [](int n) -> std::uint64_t { return n >= 6 ? 4096 : 8192; };
  const std::uint64_t M2 = 65536;
  auto chance = [&](int n, std::uint64_t M) {  // of escalating at all
    if (M < M1_of(n) || M >= M2) return 0.0;
    if (n >= 7 && M >= 16384) return 1.0;  // Mc(7) = Mc(8) = 16384
    return std::min(0.9, 0.1 * n * std::log2(static_cast<double>(M) / M1_of(n) + 1));
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<GatherSample> samples;
  std::map<std::pair<int, std::uint64_t>, double> p_true;
  const int reps = 200;
  for (int n = 3; n <= 8; ++n)
    for (const auto M : sizes) {
      p_true[{n, M}] = chance(n, M);
      for (int r = 0; r < reps; ++r) {
        double T = truth.small(n, static_cast<double>(M)) * (1 + 0.05 * (u(rng) - 0.5));
        if (u(rng) < chance(n, M)) {
          const std::size_t level = M >= 32768 ? 2 + (u(rng) < 0.5) : static_cast<std::size_t>(u(rng) < 0.5);
          T = levels[level] * (1 + 0.04 * (u(rng) - 0.5));
        }
        samples.push_back({n, M, T});
      }
    }
  ManyToOneModel fit = truth;
  fit_escalations(fit, samples);
  ASSERT_EQ(fit.levels.size(), levels.size()) << ::testing::PrintToString(fit.levels);
  for (std::size_t i = 0; i < levels.size(); ++i) EXPECT_NEAR(fit.levels[i], levels[i], 0.05 * levels[i]);
  EXPECT_EQ(fit.M2, M2);
  for (int n = 3; n <= 8; ++n) {
    EXPECT_EQ(fit.M1.at(n), M1_of(n)) << n;
    if (n >= 7) EXPECT_EQ(fit.Mc.at(n), 16384u) << n;
    else EXPECT_EQ(fit.Mc.count(n), 0u) << n;
    for (const auto M : sizes) {
      const auto& f = fit.frequencies.at({n, M});
      const double p = std::accumulate(f.begin(), f.end(), 0.0), q = p_true[{n, M}];
      EXPECT_NEAR(p, q, 3 * std::sqrt(q * (1 - q) / reps) + 1e-9) << n << " " << M;
    }
  }
  // The split gather: at n = 8, 32 KiB (certain escalation) becomes pieces below 4 KiB; not
  // below M1, not from M2 on.
  EXPECT_EQ(fit.split_pieces(8, 32768), 9);
  EXPECT_EQ(fit.split_pieces(8, 2048), 1);
  EXPECT_EQ(fit.split_pieces(8, 65536), 1);
  // The paced split: pieces no larger than the largest size that never escalated among 8
  // (2 KiB, below M1(8) = 4 KiB): 32 KiB in 16; its cost is the pieces' small gathers and a
  // signal round each, hand-computed here.
  EXPECT_EQ(fit.calm(8), 2048u);
  EXPECT_EQ(fit.calm(3), 4096u);  // M1(3) = 8 KiB
  EXPECT_EQ(fit.paced_pieces(8, 32768), 16);
  double paced = 0;
  for (const auto piece : pieces_of(32768, 16)) paced += fit.small(8, static_cast<double>(piece)) + 8 * fit.C;
  EXPECT_DOUBLE_EQ(fit.paced_split(8, 32768), paced);
  EXPECT_EQ(fit.paced_pieces(8, 2048), 1);
  EXPECT_EQ(fit.paced_pieces(8, 65536), 1);
  // Sizes and counts between those measured take the nearest measured below: 40000 B among
  // 8 as 32 KiB, 30 processes as 8 (escalations grow with n), 2 processes as none.
  EXPECT_EQ(fit.frequencies_at(8, 40000), &fit.frequencies.at({8, 32768}));
  EXPECT_EQ(fit.frequencies_at(30, 40000), &fit.frequencies.at({8, 32768}));
  EXPECT_EQ(fit.frequencies_at(2, 40000), nullptr);
  EXPECT_EQ(fit.frequencies_at(8, 1000), nullptr);
  EXPECT_EQ(fit.m1(30), 4096u);
  EXPECT_EQ(fit.m1(2), 0u);
  EXPECT_EQ(fit.paced_pieces(30, 40000), 20);  // ceil(40000 / 2048)
  EXPECT_EQ(fit.paced_pieces(2, 40000), 1);
  EXPECT_NEAR(fit.expected(8, 40000), fit.expected(8, 32768), 1e-9) << "every gather escalates there: the levels' mean either way";
  // No size below M1 measured: no size known to be safe, no split.
  ManyToOneModel first_escalates = fit;
  first_escalates.M1[8] = 1024;
  first_escalates.frequencies[{8, 1024}] = {0.5, 0, 0, 0};
  EXPECT_EQ(first_escalates.calm(8), 0u);
  EXPECT_EQ(first_escalates.paced_pieces(8, 32768), 1);
  // Without escalations there is no medium region and nothing is split.
  std::vector<GatherSample> calm;
  for (const auto& s : samples) calm.push_back({s.n, s.M, truth.small(s.n, static_cast<double>(s.M))});
  ManyToOneModel none = truth;
  fit_escalations(none, calm);
  EXPECT_TRUE(none.levels.empty());
  EXPECT_EQ(none.M2, 0u);
  EXPECT_TRUE(none.M1.empty());
  EXPECT_EQ(none.split_pieces(8, 32768), 1);
}

}  // namespace

// The window check calibration warns by (models/flow_window.h, check_window): the line's
// rate from its gap at the largest size (1 MiB), against the window per round trip of no
// data. A line of 1 Gbit/s and 20 ms carries 2.5 MB per round trip, five windows of 512 KiB;
// one of 100 Mbit/s 250 KB, less than one; said only beyond 1.5 windows. A growing window
// (the default) is judged as it settles on the line: only a line beyond 16 MiB is said.
TEST(FlowWindow, AWindowBelowTheLinesRateTimesItsRoundTripIsFound) {
  // 1 Gbit/s over a 20 ms round trip: 2.5 MB in flight; a window of 512 KiB carries 26 MB/s.
  const double m = 1048576, rtt0 = 20e-3;
  const gridrt::flow::Window fixed{524288, false};
  const WindowCheck fast = check_window(m, m / 125e6, rtt0, fixed);
  EXPECT_TRUE(fast.limits);
  EXPECT_NEAR(fast.line_rate, 125e6, 1);
  EXPECT_NEAR(fast.stream_rate, 524288 / rtt0, 1e-6);
  EXPECT_NEAR(fast.needed, 2.5e6, 1);
  EXPECT_FALSE(check_window(m, m / 125e6, rtt0, gridrt::flow::Window{4194304, false}).limits);  // a window of 4 MiB keeps up
  EXPECT_FALSE(check_window(m, m / 12.5e6, rtt0, fixed).limits);                                // 100 Mbit/s: 250 KB per round trip
  EXPECT_FALSE(check_window(m, m / 25e6, rtt0, fixed).limits);                                  // 500 KB: within 1.5 x the window
  EXPECT_TRUE(check_window(m, m / 50e6, rtt0, fixed).limits);                                   // 1 MB: beyond
  EXPECT_FALSE(check_window(m, 0, rtt0, fixed).limits);                                         // no rate to be had: nothing said
  // Growing: 2.5 MB in flight settle at eight default windows (4 MiB and the frames' cost); 10 Gbit/s over 100 ms (125 MB) beyond 16 MiB.
  const WindowCheck grown = check_window(m, m / 125e6, rtt0, gridrt::flow::Window{});
  EXPECT_FALSE(grown.limits);
  EXPECT_EQ(grown.settled, 8.0 * gridrt::flow::kDefaultWindowBytes);
  const WindowCheck huge = check_window(m, m / 1.25e9, 0.1, gridrt::flow::Window{});
  EXPECT_TRUE(huge.limits);
  EXPECT_EQ(huge.settled, static_cast<double>(gridrt::flow::kMaxGrownWindowBytes));
}

// A stream's window frame by frame: 512 KiB hold seven frames of 64 KiB (each costs 64 KiB
// and 64 bytes); over a line of 10 ns a byte (a frame in tau = 0.655 ms) whose credit comes
// back R = 20 ms after a frame left, frame j of a fresh stream leaves at
// (j / 7) (R + tau) + (j % 7 + 1) tau.
TEST(FlowWindow, FramesWaitForTheCreditOfTheFramesAWindowBefore) {
  const double R = 20e-3, per_byte = 1e-8, tau = 65536 * per_byte;
  auto leaves = [&](int j) { return (j / 7) * (R + tau) + (j % 7 + 1) * tau; };
  EXPECT_EQ(fragment_bytes(524288), 65536u);
  EXPECT_EQ(fragment_bytes(65536), 16320u);  // a quarter of a small window, less a frame's cost
  {
    FlowWindow w(524288, R);
    EXPECT_NEAR(w.send(7 * 65536, 0, 7 * tau), leaves(6), 1e-12);  // within the credit: the line's time
  }
  {
    FlowWindow w(524288, R);
    EXPECT_NEAR(w.send(8 * 65536, 0, 8 * tau), leaves(7), 1e-12);  // one frame beyond: a round trip more
    EXPECT_NEAR(leaves(7), R + 2 * tau, 1e-12);
  }
  {
    FlowWindow w(524288, R);
    EXPECT_NEAR(w.send(16 * 65536, 0, 16 * tau), leaves(15), 1e-12);
    // The next message of the stream, ready at once, waits for the credit its frames need.
    EXPECT_NEAR(w.send(65536, 0, tau), leaves(16), 1e-12);
    // Ready a second later, all credit is back: the line's time.
    EXPECT_NEAR(w.send(7 * 65536, 1, 7 * tau), 1 + 7 * tau, 1e-12);
  }
  {
    FlowWindow w(64 << 20, R);  // a window the line never fills: the line's time, whatever the size
    EXPECT_NEAR(w.send(64 * 65536, 0, 64 * tau), 64 * tau, 1e-12);
  }
  {
    FlowWindow w(64 << 20, R);  // above 4 MiB, rendezvous: the rest a round trip after the first frame
    EXPECT_NEAR(w.send(80 * 65536, 0, 80 * tau), tau + R + 79 * tau, 1e-12);
  }
  // A fresh stream's message without the stream kept: the same, for whole frames, on a line
  // that outpaces the window and on one that does not (a frame in 4 ms: seven take 28 ms).
  EXPECT_TRUE(FlowWindow::outpaced(524288, R, tau));
  EXPECT_FALSE(FlowWindow::outpaced(524288, R, 4e-3));
  for (double frame_time : {tau, 4e-3})
    for (double window : {524288.0, 4194304.0, 67108864.0})
      for (int frames : {1, 6, 7, 8, 15, 16, 17, 64, 80, 200}) {
        const double m = frames * 65536.0, t = frames * frame_time;
        FlowWindow w(window, R);
        EXPECT_NEAR(FlowWindow::fresh(window, R, m, 2, t), w.send(m, 2, t), 1e-12) << frames << " frames, window " << window;
      }
}
