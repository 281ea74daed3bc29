// The all-to-all contention signature of a cluster's network (Steffenel, Martinasso,
// Trystram, "Assessing Contention Effects of All-to-All Communications on Clusters and
// Grids", 2008, Eq. 5): measured once, at one process count, it predicts an all-to-all of
// any count and size on that network,
//
//   T(n, m) = (n - 1) (alpha + gamma * beta * m)            for m <  M
//   T(n, m) = (n - 1) (alpha + gamma * beta * m + delta)    for m >= M
//
// alpha and beta are the network's point-to-point start-up and time per byte (Hockney);
// gamma, the contention ratio, scales the bandwidth term only; delta is a start-up overhead
// per peer that appears from size M on. Fitting (the paper: generalized least squares on at
// least four points of one sample run; how M is chosen it leaves to the reader):
//   1. each sample (m_k, T_k) of a run of n' processes gives y_k = T_k / (n' - 1) - alpha
//      against x_k = beta * m_k, so that y = gamma * x (+ delta from M on); a sample with
//      y_k <= 0, faster than the n' - 1 start-ups, is left out;
//   2. for every sampled size M with at least four samples from it on, gamma and delta are
//      fitted on those samples by weighted least squares (weights 1 / y^2: the relative
//      error counts), the samples below M being predicted with that gamma and no delta;
//   3. the M with the least weighted squared error over all samples is kept (the smaller on
//      a tie); a delta that is not positive beyond `min_delta` means there is none (the
//      paper's Myrinet): gamma is then fitted on every sample through the origin.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "models/least_squares.h"

namespace gridrt::models {

struct ContentionSignature {
  double alpha = 0;                                             // s: point-to-point start-up
  double beta = 0;                                              // s per byte
  double gamma = 1;                                             // the contention ratio
  double delta = 0;                                             // s per peer, from size M on
  std::uint64_t M = std::numeric_limits<std::uint64_t>::max();  // none: delta never applies

  // Predicted time of an all-to-all of n processes, m bytes per pair.
  double predict(int n, double m) const {
    const double per_peer = alpha + gamma * beta * m + (m >= static_cast<double>(M) ? delta : 0.0);
    return (n - 1) * per_peer;
  }
};

struct AlltoallSample {
  std::uint64_t m = 0;  // bytes per pair
  double seconds = 0;   // the measured time of one all-to-all (mean of repetitions)
};

// Fits gamma, delta and M from one run of `n` processes (alpha and beta measured apart).
// Needs at least four samples of distinct sizes; returns gamma = 1, delta = 0 otherwise.
inline ContentionSignature fit_contention_signature(int n, double alpha, double beta, std::vector<AlltoallSample> samples,
                                                    double min_delta = 1e-6) {
  ContentionSignature sig;
  sig.alpha = alpha;
  sig.beta = beta;
  if (n < 2 || samples.size() < 4) return sig;
  std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.m < b.m; });
  std::vector<Point> pts;
  for (const auto& s : samples) {
    // A sample faster than n-1 start-ups (y <= 0) is not the direct exchange the model
    // describes (MPICH's all-to-all of small messages takes log2 n rounds): weight 0.
    const double y = s.seconds / (n - 1) - alpha;
    pts.push_back({beta * static_cast<double>(s.m), y, y > 0 ? 1.0 / (y * y) : 0.0});
  }
  double best_sse = std::numeric_limits<double>::infinity();
  for (std::size_t from = 0; from + 4 <= pts.size(); ++from) {
    if (from > 0 && samples[from].m == samples[from - 1].m) continue;
    const std::vector<Point> upper(pts.begin() + static_cast<long>(from), pts.end());
    const Line l = fit_line(upper);
    if (!l.ok || l.intercept <= min_delta) continue;
    double sse = l.sse;
    for (std::size_t k = 0; k < from; ++k) sse += pts[k].w * (pts[k].y - l.slope * pts[k].x) * (pts[k].y - l.slope * pts[k].x);
    if (sse < best_sse) {
      best_sse = sse;
      sig.gamma = l.slope;
      sig.delta = l.intercept;
      sig.M = samples[from].m;
    }
  }
  if (best_sse == std::numeric_limits<double>::infinity()) {  // no overhead: one gamma for all
    const Line l = fit_through_origin(pts);
    if (l.ok) sig.gamma = l.slope;
  }
  return sig;
}

}  // namespace gridrt::models
