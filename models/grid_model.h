// The calibrated model of a grid (docs/models.md, "The model file"): pLogP parameters
// (models/plogp.h) for each level of the grid, from which every collective algorithm's
// cost function (coll/costs.h) predicts what a call will take, and `auto` chooses.
//
//   inside[cluster]          between two processes of one cluster (MPICH's own path)
//   within_site[site]        between processes of two clusters of one site (through the
//                            relays, over the site's LAN)
//   between_sites[{s, t}]    from a process of site s to one of site t (through the relays and
//                            the WAN): a direction each, as a WAN path's two directions may
//                            differ in rate
//   access                   sites whose outgoing WAN traffic shares one line (the
//                            one-port assumption); otherwise each pair of sites has its line
//   many_to_one[cluster]     a cluster's gathers (models/many_to_one.h): where they escalate,
//                            the hierarchical gather splits them (coll/gather_paced_split.cpp)
//   logical[cluster]         a cluster's nodes, the latencies between them and the logical
//                            clusters they make (models/logical_clusters.h), where it has
//                            several nodes; the steps inside the cluster then may compose over them
//
// One measurement stands for every pair it represents: a cluster's processes are taken as
// alike, a site's clusters, and all clusters of two sites (logical homogeneous clusters,
// Barchet-Estefanel and Mounié 2004), so C sites of one cluster each take C(C+1)/2
// measurements. Kept as JSON (read_model_json / model_json), in microseconds.
#pragma once

#include <algorithm>
#include <map>
#include <vector>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "models/logical_clusters.h"
#include "models/many_to_one.h"
#include "models/plogp.h"

namespace gridrt::models {

// What a sample run of an algorithm on the calibrated grid says of its predictions: measured
// = scale x predicted + offset, fitted by least squares over the sizes sampled (relative
// errors weighed alike), as Steffenel, Martinasso and Trystram fit their contention
// signature from one sample run and reuse it at other sizes and process counts. It takes
// in what pLogP measured one pair at a time cannot see: processes and relays contending for
// the CPUs, the wait policy's wake-ups, copies.
struct Correction {
  double scale = 1, offset = 0;  // offset in seconds
  double from = 0, to = 0;       // the least and the largest prediction sampled (seconds; 0: not known)
  // The line between them; beyond, the ratio the line gives at the nearer end, not the line
  // extrapolated. Below the least, where a negative offset would take the line to zero and
  // under (one calibration of three clusters on one machine fitted 3.85 x predicted - 1.5
  // ms, and auto took an algorithm predicted to cost nothing at 8 B): a call smaller than
  // any sampled is corrected as the smallest sampled was. Above the largest, where a slope
  // below 1 fitted to the sampled sizes' fixed costs would shave off more and more of a
  // large message's time, which the model predicts well (a broadcast of 4 MiB over 10 ms,
  // 1 Gbit/s: 203 ms measured, 203 predicted, 182 with the line extrapolated).
  double apply(double predicted) const {
    if (offset < 0 && predicted < from) return predicted * (scale + offset / from);
    if (to > 0 && predicted > to) return predicted * (scale + offset / to);
    return std::max(0.0, scale * predicted + offset);
  }
};
// From (predicted, measured) pairs in seconds: a line when it fits with a plausible slope
// and gives every sample a time, else the ratio alone (also from a single pair); none
// (scale 1) from none.
Correction fit_correction(const std::vector<std::pair<double, double>>& predicted_measured);

struct GridModel {
  std::map<std::string, PLogP> inside;
  std::map<std::string, PLogP> within_site;
  std::map<std::pair<std::string, std::string>, PLogP> between_sites;  // (from, to)
  std::set<std::string> access;
  std::map<std::string, Correction> corrections;  // by "op/algo", e.g. "bcast/hier"
  // What one more slice of a pipelined collective (bcast, reduce, allreduce hier) costs
  // beyond its messages, seconds, by "op" or "op/route" (the all-reduce's heads and
  // reduce-scatter routes differ): its steps' scheduling in every process and relay, which
  // the pLogP parameters of one pair do not see (the sample run measures the same calls in
  // slices of 8 and 64 KiB). A route without its own takes its operation's; neither: none.
  std::map<std::string, double> slice_costs;
  std::map<std::string, ManyToOneModel> many_to_one;  // by cluster ("*": any other)
  std::map<std::string, LogicalClusters> logical;     // by cluster
  // A cluster's gathers, or the typical ones ("*"); null when the model has neither.
  const ManyToOneModel* gathers_of(const std::string& cluster) const;
  std::string grid;      // what was measured (a grid description, or "embedded C x R")
  std::string measured;  // when (UTC, ISO 8601)
  int measurements = 0;  // pairs measured to make it
  double seconds = 0;    // how long calibration took

  bool empty() const { return inside.empty() && within_site.empty() && between_sites.empty() && many_to_one.empty() && logical.empty(); }
  // The same with typical values ("*": the first it has of each kind) for clusters and
  // sites it does not name: for predictions on grids larger than the one measured.
  GridModel with_typical() const;
  // The parameters between two processes: of clusters a and b, at sites sa and sb. Throws
  // ModelError naming what the model lacks.
  const PLogP& link(const std::string& a, const std::string& sa, const std::string& b, const std::string& sb) const;
};

struct ModelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Reads a model file's text; throws ModelError naming `source`, where and what is wrong.
GridModel read_model_json(const std::string& text, const std::string& source);
GridModel load_model(const std::string& path);
// A model file's text, checked as read_model_json does (to be handed on as it is).
std::string read_model_text(const std::string& path);
std::string model_json(const GridModel& m);
// A readable account of it, for `gridrun calibrate --show`.
std::string describe_model(const GridModel& m);
// Of a cluster's gathers alone (lines beginning with two spaces).
std::string describe_many_to_one(const std::string& cluster, const ManyToOneModel& g);
// Of a cluster's nodes and logical clusters (the partition, and why: the latencies).
std::string describe_logical_clusters(const std::string& cluster, const LogicalClusters& l);

}  // namespace gridrt::models
