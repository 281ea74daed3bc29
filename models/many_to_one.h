// The many-to-one model (Lastovetsky, O'Flynn, "A Performance Model of Many-to-One Collective
// Communications for Parallel Computing", 2007): a gather on a switched network is linear in
// the message size M for small and for large messages, and between M1(n) and M2 it jumps,
// at random, to a few fixed levels ("escalations": on Linux and TCP, the retransmission
// timers after losses at the root's switch port). Homogeneous nodes here (one C and t for
// every node), n processes counting the root:
//
//   small,  M < M1(n):   T_s = n C + M (t + 1/beta0 + kappa1 (n-1) t)                  (M-3)
//   medium, M1 <= M < M2: T_s, or with probability f_i(n, M) the level tau_i          (M-4)
//   large,  M >= M2:     T_l = C + t M + M/beta0 + kappa2 (n-1) (C + t M)               (M-5)
//
// C and t (a node's fixed and per-byte processing) come from how long an eager send takes
// to return, 1/beta0 from the round trip's slope less 2t; kappa1 and kappa2 each from one
// measured gather, below M1 and above M2. T_s is kept above the time the root's link takes
// to carry the n-1 messages (the printed M-3 counts one and lets kappa1 stand for the rest). The escalation thresholds, levels and
// frequencies come from a sweep over n and M (repetitions at every point): a sample is
// escalated when it takes more than twice T_s and more than T_s + `min_jump`; levels are the
// groups of escalated times separated by gaps of more than 10%; M1(n) is the least size with
// an escalated sample, Mc(n) the least size from which every sample up to M2 escalated, M2
// the least sampled size from which no count escalates. The frequencies are kept as the
// table measured (the paper smooths them with B-splines; a table lookup is what prediction
// needs here).
//
// The split gather (the paper's section 7): a gather of medium size is done as k gathers of
// pieces below M1(n), k = ceil(M / (M1 - 1)) (every piece strictly below M1: M1 is the least
// size seen to escalate), when the model says the k small gathers cost less than the
// expected time of the one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "models/least_squares.h"

namespace gridrt::models {

// M bytes in k pieces (1 <= k <= M) as even as can be: the first M mod k one byte larger.
inline std::vector<std::uint64_t> pieces_of(std::uint64_t M, std::uint64_t k) {
  std::vector<std::uint64_t> pieces(k, M / k);
  for (std::uint64_t i = 0; i < M % k; ++i) ++pieces[i];
  return pieces;
}

// The split rule alone: k = ceil(M / (M1 - 1)) pieces, each below M1.
inline std::vector<std::uint64_t> split_sizes(std::uint64_t M, std::uint64_t M1) {
  if (M1 < 2 || M < M1) return {M};
  return pieces_of(M, (M + M1 - 2) / (M1 - 1));
}

struct ManyToOneModel {
  double C = 0;          // s: a node's fixed processing delay
  double t = 0;          // s per byte: a node's processing per byte
  double inv_beta0 = 0;  // s per byte: the root's incoming link
  double kappa1 = 0, kappa2 = 0;
  std::uint64_t M2 = 0;                 // the least size from which no escalation; 0: none seen, or up to the largest size swept
  std::map<int, std::uint64_t> M1, Mc;  // per process count; absent: none seen
  std::vector<double> levels;           // tau_i, s, ascending
  // f_i(n, M) as measured: one frequency per level.
  std::map<std::pair<int, std::uint64_t>, std::vector<double>> frequencies;

  // M-3 as printed counts the root's link once (M/beta0) and leaves the other n-2 messages
  // to kappa1 (fitted at one size); where the root's link is the bottleneck the n-1 messages
  // it must carry are a floor no run goes below, kept here.
  double small(int n, double M) const {
    return std::max(n * C + M * (t + inv_beta0 + kappa1 * (n - 1) * t), n * C + (n - 1) * M * inv_beta0);
  }
  double large(int n, double M) const { return C + t * M + M * inv_beta0 + kappa2 * (n - 1) * (C + t * M); }
  bool is_large(double M) const { return M2 > 0 && M >= static_cast<double>(M2); }
  double linear(int n, double M) const { return is_large(M) ? large(n, M) : small(n, M); }

  // The measurements that stand for n processes: those of the largest count measured up to
  // n (escalations grow with n, so a larger count escalates at least as much: a prediction
  // from fewer senders errs towards not splitting); -1 when n is below every count measured.
  int measured_count(int n) const {
    int best = -1;
    for (const auto& [key, f] : frequencies)
      if (key.first <= n && key.first > best) best = key.first;
    return best;
  }
  // M1 for n processes (measured_count's); 0 when none escalated there.
  std::uint64_t m1(int n) const {
    const auto it = M1.find(measured_count(n));
    return it == M1.end() ? 0 : it->second;
  }
  // For each size measured for n processes (measured_count's) below `below`, ascending:
  // visit(size, frequencies).
  template <typename Visit> void each_size(int n, std::uint64_t below, Visit&& visit) const {
    const int count = measured_count(n);
    for (auto it = frequencies.lower_bound({count, 0}); it != frequencies.end() && it->first.first == count && it->first.second < below;
         ++it)
      visit(it->first.second, it->second);
  }
  // The escalation frequencies for (n, M): measured_count's row at the largest size
  // measured up to M (between two sizes swept, the smaller one's); null where none applies.
  const std::vector<double>* frequencies_at(int n, std::uint64_t M) const {
    const std::vector<double>* f = nullptr;
    each_size(n, M + 1, [&](std::uint64_t, const std::vector<double>& row) { f = &row; });
    return f;
  }

  // The expected time (M-4's outcomes weighted by their frequencies, where measured).
  double expected(int n, std::uint64_t M) const {
    const double base = linear(n, static_cast<double>(M));
    const std::vector<double>* f = is_large(static_cast<double>(M)) ? nullptr : frequencies_at(n, M);
    if (!f) return base;
    double p = 0, e = 0;
    for (std::size_t i = 0; i < f->size() && i < levels.size(); ++i) {
      p += (*f)[i];
      e += (*f)[i] * levels[i];
    }
    return (1 - p) * base + e;
  }

  // How many gathers in sequence a gather of M bytes per sender among n processes becomes
  // (1: not split): M in [M1(n), M2) and the pieces' linear time under the expected time.
  int split_pieces(int n, std::uint64_t M) const;

  // The largest size measured below M1 for n processes (measured_count's) at which no
  // gather escalated; 0 when there is none (M1 is the least size swept).
  std::uint64_t calm(int n) const {
    std::uint64_t best = 0;
    each_size(n, m1(n), [&](std::uint64_t size, const std::vector<double>& row) {
      if (std::all_of(row.begin(), row.end(), [](double f) { return f == 0; })) best = size;
    });
    return best;
  }

  // The paced split gather (coll/gather_paced_split.cpp): pieces no larger than calm(n), each
  // sent when the root has posted its receives and told the senders so, with a message of
  // no data to each. The pieces are cut to the largest size seen never to escalate, not just
  // below M1 as the paper's rule: M1 is a size swept, and the threshold lies somewhere
  // between it and the size below (on the kernel tier, paced pieces just under M1(8) = 8 KiB
  // still overflowed the root's port, docs/benchmarks.md). A piece costs its small gather
  // plus the root's n-1 signals and their latency (n C); none escalates, so the time is linear.
  std::vector<std::uint64_t> paced_sizes(int n, std::uint64_t M) const {
    const std::uint64_t piece = calm(n);
    if (piece == 0 || M <= piece) return {M};
    return pieces_of(M, (M + piece - 1) / piece);
  }
  double paced_split(int n, std::uint64_t M) const {
    double total = 0;
    for (const std::uint64_t piece : paced_sizes(n, M)) total += small(n, static_cast<double>(piece)) + n * C;
    return total;
  }
  // The pieces of the paced split gather where it is expected to beat one gather; 1 elsewhere.
  int paced_pieces(int n, std::uint64_t M) const;
};

inline int ManyToOneModel::split_pieces(int n, std::uint64_t M) const {
  const std::uint64_t first = m1(n);
  if (first == 0 || is_large(static_cast<double>(M))) return 1;
  const auto pieces = split_sizes(M, first);
  const auto k = static_cast<int>(pieces.size());
  return k > 1 && k * small(n, static_cast<double>(pieces.front())) < expected(n, M) ? k : 1;
}

inline int ManyToOneModel::paced_pieces(int n, std::uint64_t M) const {
  const std::uint64_t first = m1(n);
  if (first == 0 || M < first || is_large(static_cast<double>(M))) return 1;
  const auto k = static_cast<int>(paced_sizes(n, M).size());
  return k > 1 && paced_split(n, M) < expected(n, M) ? k : 1;
}

struct GatherSample {
  int n = 0;            // processes, root included
  std::uint64_t M = 0;  // bytes per sender
  double seconds = 0;   // one operation
};

struct PointToPointSample {
  std::uint64_t M = 0;
  double half_round_trip = 0;  // s
  double send_return = 0;      // s: how long an eager send took to return
};

// C, t and 1/beta0 from point-to-point samples (the paper's "simultaneous equations from the
// ping-pong latency readings", made least-squares fits over sizes): C and t from how long a
// send of up to `eager_limit` bytes takes to return (C + t M), 1/beta0 from the half round
// trip's slope above its smallest size (2t + 1/beta0) less 2t.
inline void fit_node_parameters(ManyToOneModel& m, const std::vector<PointToPointSample>& pp, std::uint64_t eager_limit) {
  std::vector<Point> send, rtt;
  for (const auto& s : pp) {
    if (s.M <= eager_limit) send.push_back({static_cast<double>(s.M), s.send_return, 1});
    rtt.push_back({static_cast<double>(s.M), s.half_round_trip, 1});
  }
  const Line o = fit_line(send), r = fit_through_least_x(rtt);
  if (!o.ok || !r.ok) return;
  m.C = std::max(0.0, o.intercept);
  m.t = std::max(0.0, o.slope);
  m.inv_beta0 = std::max(0.0, r.slope - 2 * m.t);
}

// kappa1 from gathers at (n, M) below M1(n) (their median), kappa2 from gathers above M2.
inline void fit_kappas(ManyToOneModel& m, int n1, std::uint64_t small_M, int n2, std::uint64_t large_M,
                       const std::vector<GatherSample>& samples) {
  auto median_at = [&](int n, std::uint64_t M) {
    std::vector<double> v;
    for (const auto& s : samples)
      if (s.n == n && s.M == M) v.push_back(s.seconds);
    return v.empty() ? -1.0 : median_of(v);
  };
  const double Ms = static_cast<double>(small_M), Ml = static_cast<double>(large_M);
  const double ts = median_at(n1, small_M), tl = median_at(n2, large_M);
  if (ts > 0 && m.t > 0 && n1 > 1) m.kappa1 = std::max(0.0, (ts - n1 * m.C - Ms * (m.t + m.inv_beta0)) / (Ms * (n1 - 1) * m.t));
  if (tl > 0 && n2 > 1) m.kappa2 = std::max(0.0, (tl - m.C - m.t * Ml - Ml * m.inv_beta0) / ((n2 - 1) * (m.C + m.t * Ml)));
}

// Thresholds, levels and frequencies from a sweep (the linear parameters fitted first).
inline void fit_escalations(ManyToOneModel& m, const std::vector<GatherSample>& samples, double min_jump = 0.005) {
  auto escalated = [&](const GatherSample& s) {
    const double base = m.small(s.n, static_cast<double>(s.M));
    return s.seconds > 2 * base && s.seconds > base + min_jump;
  };
  // Levels: escalated times grouped where consecutive ones differ by more than 10%.
  std::vector<double> times;
  for (const auto& s : samples)
    if (escalated(s)) times.push_back(s.seconds);
  std::sort(times.begin(), times.end());
  m.levels.clear();
  for (std::size_t i = 0; i < times.size();) {
    std::size_t j = i + 1;
    while (j < times.size() && times[j] <= 1.10 * times[j - 1]) ++j;
    m.levels.push_back(median_of(std::vector<double>(times.begin() + static_cast<long>(i), times.begin() + static_cast<long>(j))));
    i = j;
  }
  auto level_of = [&](double seconds) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < m.levels.size(); ++i)
      if (std::fabs(std::log(seconds / m.levels[i])) < std::fabs(std::log(seconds / m.levels[best]))) best = i;
    return best;
  };
  // Per (n, M): how many samples, how many at each level.
  std::map<std::pair<int, std::uint64_t>, std::pair<int, std::vector<int>>> cells;
  for (const auto& s : samples) {
    auto& cell = cells[{s.n, s.M}];
    cell.first++;
    cell.second.resize(m.levels.size());
    if (escalated(s)) cell.second[level_of(s.seconds)]++;
  }
  m.frequencies.clear();
  m.M1.clear();
  m.Mc.clear();
  std::uint64_t last_escalating = 0;
  std::map<int, std::vector<std::pair<std::uint64_t, bool>>> all_escalated;  // per n, ascending M
  for (const auto& [key, cell] : cells) {
    int count = 0;
    std::vector<double> f;
    for (const int c : cell.second) {
      count += c;
      f.push_back(static_cast<double>(c) / cell.first);
    }
    m.frequencies[key] = f;
    if (count > 0) {
      last_escalating = std::max(last_escalating, key.second);
      if (!m.M1.count(key.first)) m.M1[key.first] = key.second;
    }
    all_escalated[key.first].push_back({key.second, count == cell.first});
  }
  // M2: the least sampled size above every escalating one (none when the largest escalated).
  m.M2 = 0;
  for (const auto& [key, cell] : cells)
    if (key.second > last_escalating && (m.M2 == 0 || key.second < m.M2)) m.M2 = key.second;
  if (last_escalating == 0) m.M2 = 0;             // no escalation at all: no medium region
  for (const auto& [n, sizes] : all_escalated) {  // Mc: from here on (below M2) always escalated
    std::uint64_t from = 0;
    for (const auto& [M, always] : sizes) {
      if (m.M2 > 0 && M >= m.M2) break;
      if (!always) from = 0;
      else if (from == 0) from = M;
    }
    if (from > 0) m.Mc[n] = from;
  }
}

// The whole model from a ping-pong and a gather sweep, as calibration and the kernel tier fit
// it: the eager limit is the largest size whose send returned at once (within 4 times the
// quickest + 50 us); C, t, 1/beta0 from the ping-pong; kappa1 at *k1 (M 0: the largest count
// at the smallest size swept, filled in), kappa2 at *k2 (M 0: the largest count and size);
// then the escalations of the whole sweep.
struct KappaAt {
  int n = 0;
  std::uint64_t M = 0;
};
inline ManyToOneModel fit_many_to_one(const std::vector<PointToPointSample>& pp, const std::vector<GatherSample>& gathers,
                                      KappaAt* k1 = nullptr, KappaAt* k2 = nullptr) {
  ManyToOneModel model;
  if (pp.empty() || gathers.empty()) return model;
  double quickest = pp.front().send_return;
  for (const auto& p : pp) quickest = std::min(quickest, p.send_return);
  std::uint64_t eager_limit = 0;
  for (const auto& p : pp)
    if (p.send_return < 4 * quickest + 50e-6) eager_limit = std::max(eager_limit, p.M);
  fit_node_parameters(model, pp, eager_limit);
  int most = 0;
  std::uint64_t least = ~0ull, largest = 0;
  for (const auto& g : gathers) {
    most = std::max(most, g.n);
    least = std::min(least, g.M);
    largest = std::max(largest, g.M);
  }
  KappaAt small_at{most, least}, large_at{most, largest};
  if (k1 && k1->M) small_at = *k1;
  if (k2 && k2->M) large_at = *k2;
  fit_kappas(model, small_at.n, small_at.M, large_at.n, large_at.M, gathers);
  fit_escalations(model, gathers);
  if (k1) *k1 = small_at;
  if (k2) *k2 = large_at;
  return model;
}

}  // namespace gridrt::models
