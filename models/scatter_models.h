// What a scatter costs in pLogP (models/plogp.h), for P processes (the root included), m
// bytes to each: the three trees of the scatter models (a slide deck of Steffenel's group,
// after Kielmann et al.'s MagPIe models), and the two ways a grid scatter reaches remote
// clusters. (The formulas for gather are the same, the data flowing the other way.)
//
//   flat tree:     the root sends P-1 messages back to back; the last arrives L later
//                  (P-1) g(m) + L
//   chain:         the root sends (P-1)m to the next, which keeps its block and forwards the
//                  rest, and so on: every hop pays its gap and the latency
//                  sum_{j=1}^{P-1} g(j m) + (P-1) L
//   binomial tree: the critical path to the deepest leaf carries 2^{k-1} m, ..., 2m, m
//                  (k = ceil(log2 P); exact for P a power of two, an upper bound otherwise)
//                  k L + sum_{j=0}^{k-1} g(2^j m)
//
// With an affine gap the chain is never predicted faster than the flat tree, and the
// binomial tree beats it only where the per-message gap outweighs the latency ((P-1-k) g(0)
// > (k-1) L): on a LAN with slow software, never across a WAN.
//
// Across clusters (C clusters, `sizes` processes each; the root's own cluster first):
//   direct: the root sends every remote process its block over the WAN, then scatters at
//           home: (remote processes) g_w(m) + L_w
//   packed: one message of R_c m bytes per remote cluster to its coordinator, which then
//           scatters locally; clusters served in order, each done when its packed message
//           has arrived and its local scatter ended:
//           max over c of (sum of g_w(R_c' m) for c' up to c) + L_w + local_c
#pragma once

#include <cmath>
#include <vector>

#include "models/plogp.h"

namespace gridrt::models {

inline double scatter_flat(const PLogP& p, int P, double m) { return P <= 1 ? 0 : (P - 1) * p.gap(m) + p.L; }

inline double scatter_chain(const PLogP& p, int P, double m) {
  double t = 0;
  for (int j = 1; j <= P - 1; ++j) t += p.gap(j * m) + p.L;
  return t;
}

inline double scatter_binomial(const PLogP& p, int P, double m) {
  if (P <= 1) return 0;
  const int k = static_cast<int>(std::ceil(std::log2(P)));
  double t = k * p.L;
  for (int j = 0; j < k; ++j) t += p.gap(std::ldexp(m, j));
  return t;
}

// `wan` between the root's cluster and the others, `local` inside every cluster (each
// remote cluster's coordinator scatters with a flat tree); sizes[0] is the root's cluster.
inline double grid_scatter_direct(const PLogP& wan, const PLogP& local, const std::vector<int>& sizes, double m) {
  int remote = 0;
  for (std::size_t c = 1; c < sizes.size(); ++c) remote += sizes[c];
  const double away = remote > 0 ? remote * wan.gap(m) + wan.L : 0;
  return std::max(away, remote * wan.gap(m) + scatter_flat(local, sizes[0], m));
}

inline double grid_scatter_packed(const PLogP& wan, const PLogP& local, const std::vector<int>& sizes, double m) {
  double sent = 0, done = 0;
  for (std::size_t c = 1; c < sizes.size(); ++c) {
    sent += wan.gap(sizes[c] * m);
    done = std::max(done, sent + wan.L + scatter_flat(local, sizes[c], m));
  }
  return std::max(done, sent + scatter_flat(local, sizes[0], m));
}

}  // namespace gridrt::models
