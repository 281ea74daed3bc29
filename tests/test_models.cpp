// The performance models' fits and predictions (runtime/src/models), on synthetic data whose
// parameters are known, and against hand-computed cases.
#include <gtest/gtest.h>

#include <cmath>

#include "models/contention_signature.h"
#include "models/least_squares.h"

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

}  // namespace
