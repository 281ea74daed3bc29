// gridbench's bound_us: the least time a collective must spend on the emulated WAN
// (common/wan.h), for algorithms whose blocks cross it at most once on any path, as gridrt's
// hierarchical ones do on their packed routes (docs/algorithms.md, "Bounds"; a flat one, or
// the binomial and chain routes of scatter and gather, may take a detour through a third
// site and beat it where a direct line is slower than the detour). A broadcast's bound
// allows relaying (its binomial and chain routes relay; below).
//
// For an operation, B[i][j] is what must go from site i to site j (n bytes per message, or
// per block; a message crosses even when n is 0): a reduce's root site takes n from every other site, a gather's root site takes
// p_j n from each site j, an all-to-all moves p_i p_j n from i to j, a reduce-scatter's site j
// takes p_j n from each other site (its members' blocks), and so on. A byte
// handed to a line arrives after the line has clocked out everything handed to it before,
// and then the pair's delay d_ij. So, with a line per pair of sites (rate r_ij):
//     T >= max over i, j with B_ij > 0 of  d_ij + B_ij / r_ij;
// with an access line at site i (rate r_i), everything i sends shares it, and its last byte
// still has a delay to go:
//     T >= max over i of  sum_j B_ij / r_i + min over j with B_ij > 0 of d_ij.
// A barrier moves no payload but every site must hear from every other: max d_ij. An
// all-reduce may cross once, each site taking n bytes from its nearest other site. A
// broadcast's n bytes may reach a site through others: the first byte reaches site i no
// sooner than D_i, the shortest path's delay from the root's site, so site j's last byte
// arrives no sooner than min over i of D_i + d_ij + n / r_ij (the line that brings it to j
// clocks all n bytes); and the root's site sends them once at least, on its access line
// where it has one.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "common/wan.h"

namespace gridrt::bench {

struct SiteShape {
  std::vector<std::string> names;  // the job's sites
  std::vector<int> procs;          // processes at each
  int root = 0;                    // the root's site (bcast, reduce, gather, scatter)
};

// What each ordered pair of sites must carry, in bytes, for one call of `op` with `n`.
inline std::vector<std::vector<double>> bytes_between_sites(const std::string& op, double n, const SiteShape& s) {
  const std::size_t C = s.names.size();
  std::vector<std::vector<double>> B(C, std::vector<double>(C, 0));
  for (std::size_t i = 0; i < C; ++i)
    for (std::size_t j = 0; j < C; ++j) {
      if (i == j) continue;
      const bool from_root = static_cast<int>(i) == s.root, to_root = static_cast<int>(j) == s.root;
      if (op == "reduce") B[i][j] = to_root ? n : 0;
      else if (op == "gather") B[i][j] = to_root ? s.procs[i] * n : 0;
      else if (op == "scatter") B[i][j] = from_root ? s.procs[j] * n : 0;
      else if (op == "allgather") B[i][j] = s.procs[i] * n;
      else if (op == "alltoall") B[i][j] = static_cast<double>(s.procs[i]) * s.procs[j] * n;
      else if (op == "reduce_scatter") B[i][j] = s.procs[j] * n;  // j's members' blocks, folded once
    }
  return B;
}

inline double delay_us(const WanPlan& plan, const std::string& a, const std::string& b) {
  return std::chrono::duration<double, std::micro>(plan.pair(a, b).delay).count();
}
inline double per_byte_us(const WanPlan::Line& line) { return line.bytes_per_second > 0 ? 1e6 / line.bytes_per_second : 0.0; }

inline double relayed_bcast_bound_us(double n, const WanPlan& plan, const SiteShape& s) {
  const std::size_t C = s.names.size();
  // D: the shortest paths' delays from the root's site (Bellman-Ford over a handful of sites).
  std::vector<double> D(C, -1);
  D[s.root] = 0;
  for (std::size_t round = 1; round < C; ++round)
    for (std::size_t i = 0; i < C; ++i)
      for (std::size_t j = 0; j < C; ++j)
        if (i != j && D[i] >= 0) {
          const double via = D[i] + delay_us(plan, s.names[i], s.names[j]);
          if (D[j] < 0 || via < D[j]) D[j] = via;
        }
  double bound = 0, nearest = -1;
  for (std::size_t j = 0; j < C; ++j) {
    if (static_cast<int>(j) == s.root) continue;
    double last = -1;
    for (std::size_t i = 0; i < C; ++i)
      if (i != j) {
        const double t = D[i] + delay_us(plan, s.names[i], s.names[j]) + n * per_byte_us(plan.line(s.names[i], s.names[j]));
        last = last < 0 ? t : std::min(last, t);
      }
    bound = std::max(bound, last);
    const double d = delay_us(plan, s.names[s.root], s.names[j]);
    nearest = nearest < 0 ? d : std::min(nearest, d);
  }
  const WanPlan::Line out = plan.line(s.names[s.root], "");
  if (out.name == s.names[s.root] + ">*") bound = std::max(bound, nearest + n * per_byte_us(out));
  return bound;
}

inline double wan_bound_us(const std::string& op, std::size_t n, const WanPlan& plan, const SiteShape& s) {
  const std::size_t C = s.names.size();
  if (C < 2 || !plan.active()) return 0;
  double bound = 0;
  if (op == "barrier") {
    for (std::size_t i = 0; i < C; ++i)
      for (std::size_t j = 0; j < C; ++j)
        if (i != j) bound = std::max(bound, delay_us(plan, s.names[i], s.names[j]));
    return bound;
  }
  if (op == "allreduce") {
    for (std::size_t j = 0; j < C; ++j) {
      double nearest = -1;
      for (std::size_t i = 0; i < C; ++i) {
        if (i == j) continue;
        const double t = delay_us(plan, s.names[i], s.names[j]) + n * per_byte_us(plan.line(s.names[i], s.names[j]));
        nearest = nearest < 0 ? t : std::min(nearest, t);
      }
      bound = std::max(bound, nearest);
    }
    return bound;
  }
  if (op == "bcast") return relayed_bcast_bound_us(static_cast<double>(n), plan, s);
  const auto B = bytes_between_sites(op, static_cast<double>(n), s);
  const auto crosses = bytes_between_sites(op, 1.0, s);  // which pairs exchange a message at all (also when n is 0)
  for (std::size_t i = 0; i < C; ++i) {
    double sent = 0, least_delay = -1;
    for (std::size_t j = 0; j < C; ++j) {
      if (i == j || crosses[i][j] <= 0) continue;
      const WanPlan::Line line = plan.line(s.names[i], s.names[j]);
      const double d = delay_us(plan, s.names[i], s.names[j]);
      bound = std::max(bound, d + B[i][j] * per_byte_us(line));
      sent += B[i][j];
      least_delay = least_delay < 0 ? d : std::min(least_delay, d);
    }
    // An access line clocks out everything the site sends, one message after another.
    const WanPlan::Line any = plan.line(s.names[i], "");
    if (least_delay >= 0 && any.name == s.names[i] + ">*") bound = std::max(bound, least_delay + sent * per_byte_us(any));
  }
  return bound;
}

}  // namespace gridrt::bench
