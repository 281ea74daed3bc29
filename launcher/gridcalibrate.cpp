// gridcalibrate (run as `gridrun calibrate`): measures a grid and writes its model file
// (docs/models.md, "Calibration"). It starts itself as a job on every slot of the grid and
// measures the pLogP parameters (Kielmann, Bal, Verstoep, "Fast Measurement of LogP
// Parameters for Message Passing Platforms", 2000) of one representative pair of processes
// per logical cluster and per pair of them (Barchet-Estefanel and Mounié, "Fast Tuning of
// Intra-Cluster Collective Communications", 2004, §5.2):
//   - inside each cluster: its first two processes;
//   - between the clusters of each site with several: the leaders of its first two;
//   - between each pair of sites: their first clusters' leaders;
//   - in a cluster of several nodes, whose logical clusters the latencies between its
//     nodes give (below): one pair inside each logical cluster of two nodes or more, one
//     pair between each two of them.
// C sites of one cluster each: C + C(C-1)/2 = C(C+1)/2 measurements, whatever the number
// of processes; a cluster of L logical clusters adds at most L(L+1)/2. Then, for every site with two other sites, an access probe: its
// leader streams to both at once, which takes as long as the slower stream alone on lines of their own, and as long as both one after the
// other when the site's traffic shares one line (an access line, the one-port assumption): the model then says so. Inside every cluster of
// several nodes, first, the latency between each two nodes, from which the model's logical clusters follow (nodes alike: logical_clusters()
// below). One pair is measured at a time (the others wait in a barrier), so no measurement disturbs another. With --escalations, each
// cluster's gathers are swept too (the many-to-one model, models/many_to_one.h: where they escalate, the hierarchical gather splits its
// step inside the cluster).
//
// For each pair and size m, through gridrt's point-to-point (the path the collectives take):
//   RTT(m)  median round trip of m bytes answered by 0 bytes = L + g(m) + L + g(0)
//   g(m)    n messages of m back to back answered once: T = (n-1) g(m) + RTT(m)
//   o_s(m)  how long the sending call takes
//   o_r(m)  how long the receiving call takes once the message is there (the receiver
//           waits past its arrival first)
//   L       RTT(0) / 2 - g(0)
//   wake    how much longer a round trip of 0 bytes takes when the receiver has waited 3 ms
//           first (it then sleeps between its tests: the wait policy's back-off) than when it
//           polls: what a message inside a cluster costs a collective's members that have
//           waited (gridrt's own addition to pLogP, models/plogp.h)
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/cli.h"
#include "gridrt/gridrt.hpp"
#include "launcher/self_job.h"
#include "launcher/timed_call.h"
#include "common/settings.h"
#include "models/flow_window.h"
#include "models/grid_model.h"
#include "models/least_squares.h"
#include "runtime/src/calibration.h"  // the routes, slices and window of the sample run's calls

namespace {

const char* kUsage = R"(usage: gridrun calibrate [grid options] [--output FILE]
       gridrun calibrate --show FILE

Measures the grid and writes its model file (JSON; docs/models.md): the pLogP parameters
(latency L, gap g(m), send and receive overheads o_s(m), o_r(m) at sizes 0 B to 1 MiB) of
one pair of processes inside each cluster, between the clusters of each site that has
several, and between each pair of sites: C(C+1)/2 measurements for C sites of one cluster
each, taking a few seconds. It runs as a job on every slot of the grid. Give the model to
jobs with `gridrun --model FILE` (GRIDRT_MODEL): auto then chooses every collective's
algorithm from its predictions, and gridbench prints them (predicted_us).

Inside every cluster of several nodes (hosts) it first measures the latency between each
two of them, and the model splits the cluster into logical clusters of nodes alike (a
latency within 20% of each node's least, as Lowekamp's ECO rule); then the pLogP
parameters of one pair inside each logical cluster and one between each two of them. The
collectives' steps inside the cluster compose over them, and so do the predictions.
`--show` prints them and the latencies behind them.

The lines are measured with a flow-control window that does not limit them (64 MiB), so
that the model holds each line's own rate; predictions then play the window the jobs keep
(GRIDRT_WINDOW, default 512 KiB) over it. Where that window holds a stream below its
line's rate (rate x round trip above 1.5 windows: a long fat line), calibration warns and
names the GRIDRT_WINDOW that would let large messages go at the line's rate.

  --output FILE   where to write the model (default gridrt-model.json here)
  --show FILE     print a model file readably, measure nothing
  --sizes S,...   the sizes measured, in bytes (default 0,1024,16384,65536,262144,1048576)
  --escalations   also sweep each cluster's gathers (3 processes up to 8 and the whole
                  cluster, 1 KiB to 256 KiB, 10 times each): the many-to-one model, with the
                  sizes from which its gathers escalate (TCP's retransmission timers after
                  losses at the root's switch port), where the hierarchical gather then
                  splits them in paced pieces. Up to a few minutes on a cluster that escalates
  --no-sample     skip the sample run: every algorithm, hier and flat, run 3 times at the
                  sizes from 1 KiB to 256 KiB, from which the model learns how far its
                  predictions fall from what the grid does (a correction per algorithm),
                  after the pipelined bcast, reduce and allreduce in slices of 8 and 64 KiB,
                  from which it learns what every slice costs beyond its messages

Grid options (as gridrun's): --clusters C --ranks-per-cluster R (the embedded grid, default
2 x 3), --grid FILE, --emulate-wan DELAY[,RATE] (and -pair, -access), or --broker HOST:PORT
--cert PEM --key PEM --ca PEM -n N for a standing grid. The job must span every cluster:
give -n every slot of the grid (the default on an embedded grid), as a job's one group goes
whole onto one cluster whenever it fits there.
)";

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "gridrun calibrate: %s\n(gridrun calibrate --help explains the options)\n", why.c_str());
  std::exit(2);
}

std::vector<double> sizes_from(const std::string& text) {
  std::vector<double> out;
  std::size_t from = 0;
  while (from <= text.size()) {
    const std::size_t comma = std::min(text.find(',', from), text.size());
    const std::string s = text.substr(from, comma - from);
    if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos)
      usage_error("--sizes takes sizes in bytes, got '" + text + "'");
    const double v = std::strtod(s.c_str(), nullptr);
    if (!out.empty() && v <= out.back()) usage_error("--sizes must increase, got '" + text + "'");
    out.push_back(v);
    from = comma + 1;
  }
  if (out.size() < 2) usage_error("--sizes needs at least two sizes");
  return out;
}

// ---------------------------------------------------------------- worker

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Measurement {
  std::string kind;                // "inside", "within_site", "between_sites" or "logical"
  std::string name, to;            // the cluster, the site, or the sites from (a's) and to (b's)
  int a = 0, b = 0;                // the ranks measured (a leads)
  int group_a = -1, group_b = -1;  // "logical": the logical clusters of a and b (alike: inside one)
};

// One round trip of m bytes from a to b answered by 0 bytes, timed at a: {the whole, the
// sending call}; {0, 0} at b.
std::pair<double, double> round_trip(int me, int a, int b, std::vector<char>& buf, std::size_t m, int tag) {
  char none = 0;
  if (me != a) {
    gridrt::recv(buf.data(), m, a, tag);
    gridrt::send(&none, 0, a, tag);
    return {0, 0};
  }
  const auto t0 = Clock::now();
  gridrt::send(buf.data(), m, b, tag);
  const double sent = seconds_since(t0);
  gridrt::recv(&none, 0, b, tag);
  return {seconds_since(t0), sent};
}

// n messages of m bytes from `from` to `to` back to back, answered once, timed at `from`
// (0 at `to`).
double stream(int me, int from, int to, std::vector<char>& buf, std::size_t m, int n, int tag) {
  char none = 0;
  if (me == to) {
    for (int i = 0; i < n; ++i) gridrt::recv(buf.data(), m, from, tag);
    gridrt::send(&none, 0, from, tag);
    return 0;
  }
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) gridrt::send(buf.data(), m, to, tag);
  gridrt::recv(&none, 0, to, tag);
  return seconds_since(t0);
}

// A double known at `from`, handed to `to` (the same process: kept).
double hand_over(int me, int from, int to, double v, int tag) {
  if (from == to) return v;
  if (me == from) gridrt::send(&v, sizeof v, to, tag);
  else if (me == to) gridrt::recv(&v, sizeof v, from, tag);
  return v;
}

// At every size: RTT, g from a to b, o_s, o_r, g from b to a, in seconds, as [size][5],
// then the wake in the last row's first place (filled at `a`).
using Row = std::array<double, 5>;
std::vector<Row> measure_pair(int me, int a, int b, int tag, const std::vector<double>& sizes) {
  std::vector<Row> out(sizes.size() + 1);
  std::vector<char> buf(static_cast<std::size_t>(sizes.back()), 1);
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    const std::size_t m = static_cast<std::size_t>(sizes[k]);
    const int reps = m <= 65536 ? 7 : 3, n = m <= 65536 ? 16 : 4;
    // Round trips (the first one warms the path up and is not counted).
    std::vector<double> rtt, os;
    for (int r = 0; r <= reps; ++r) {
      const auto [whole, sent] = round_trip(me, a, b, buf, m, tag);
      if (r > 0) rtt.push_back(whole), os.push_back(sent);
    }
    const double rtt_m = hand_over(me, a, b, gridrt::models::median_of(rtt), tag);
    // Each direction's stream twice, the faster kept: a stream is one measurement of the
    // gap, and whatever else holds it up (two cores shared by the job's processes and the
    // relays) only adds; one held up once had put g(1 MiB) 10% above its line's.
    auto faster_stream = [&](int from, int to) {
      const double first = stream(me, from, to, buf, m, n, tag);
      return std::min(first, stream(me, from, to, buf, m, n, tag));
    };
    const double forth = faster_stream(a, b);
    // The receive of a message already there: b waits well past its arrival.
    std::vector<double> orecv;
    for (int r = 0; r < 3; ++r) {
      if (me == b) {
        std::this_thread::sleep_for(std::chrono::duration<double>(2 * rtt_m + 0.002));
        const auto t0 = Clock::now();
        gridrt::recv(buf.data(), m, a, tag);
        orecv.push_back(seconds_since(t0));
        char none = 0;
        gridrt::send(&none, 0, a, tag);
      } else {
        round_trip(me, a, b, buf, m, tag);
      }
    }
    const double o_r = hand_over(me, b, a, gridrt::models::median_of(orecv), tag);
    // The other direction's stream (a WAN path's directions may differ), timed at b.
    const double back = hand_over(me, b, a, faster_stream(b, a), tag);
    const gridrt::models::Gaps g = gridrt::models::gaps_from_streams(rtt_m, forth, back, n);
    if (me == a) out[k] = {rtt_m, g.forth, gridrt::models::median_of(os), o_r, g.back};
  }
  // Round trips of 0 bytes to a receiver that has waited 3 ms (asleep), against out[0]'s.
  std::vector<double> cold;
  for (int r = 0; r < 5; ++r) {
    if (me == a) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    cold.push_back(round_trip(me, a, b, buf, 0, tag).first);
  }
  if (me == a) out.back() = {std::max(0.0, gridrt::models::median_of(cold) - out[0][0]), 0, 0, 0, 0};
  return out;
}

// Says so where a line through the relays carries more per round trip than the jobs'
// flow-control window lets a stream (models::check_window, at the largest size measured):
// the model predicts what the window costs there (models/flow_window.h), and a larger
// window would make those messages faster. `window`: the jobs' (the user's GRIDRT_WINDOW,
// not the calibration job's own); the default grows up to its largest, and only a line
// beyond that is said.
void warn_if_window_limits(const Measurement& mm, const std::vector<Row>& r, const std::vector<double>& sizes,
                           gridrt::flow::Window window) {
  const std::size_t k = sizes.size() - 1;
  const gridrt::models::WindowCheck c = gridrt::models::check_window(sizes[k], r[k][1], r[0][0], window);
  if (!c.limits) return;
  double advice = c.settled;
  while (advice < c.needed) advice *= 2;
  std::printf(
      "# warning: %s %s%s%s: the line carries %.1f MB/s, a stream at most the flow-control window "
      "(%.0f KiB%s) per round trip (%.1f ms): %.1f MB/s; its large messages will go at the window's pace (the model "
      "predicts them so); run with GRIDRT_WINDOW=%.0f or more to let them go at the line's rate "
      "(docs/benchmarks.md, \"Flow-control window on a long line\")\n",
      mm.kind.c_str(), mm.name.c_str(), mm.to.empty() ? "" : "|", mm.to.c_str(), c.line_rate / 1e6, c.settled / 1024,
      window.grows ? ", the most the default grows to" : "", r[0][0] * 1e3, c.stream_rate / 1e6, advice);
  std::fflush(stdout);
}

// The pair's parameters from a to b, or from b to a (`back`).
gridrt::models::PLogP plogp_of(const std::vector<Row>& r, const std::vector<double>& sizes, bool back) {
  gridrt::models::PLogP p;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    p.g.points.emplace_back(sizes[k], r[k][back ? 4 : 1]);
    p.os.points.emplace_back(sizes[k], r[k][2]);
    p.orecv.points.emplace_back(sizes[k], r[k][3]);
  }
  p.g = gridrt::models::never_falling(p.g);
  p.L = std::max(0.0, r[0][0] / 2 - (r[0][1] + r[0][4]) / 2);
  p.wake = r[sizes.size()][0];
  return p;
}

// Logical clusters (Barchet-Estefanel and Mounié, "Identifying Logical Homogeneous
// Clusters for Efficient Wide-area Communications", 2004): inside every cluster of several
// nodes (hosts, or MPI's shared-memory domains on one host: models::node_names), the
// latency between each two nodes' first processes, from round trips of no data (the least
// of kLatencyReps after one not counted, in each of kLatencyPasses passes over the pairs:
// the path's own time, without the scheduling noise that a median of a few keeps and that
// the 20% tolerance would take for a difference between nodes), one pair at a time (the cluster's other processes wait in its own barrier,
// which crosses no WAN), one cluster at a time. Two passes, apart in time: on a loaded machine a pair's every round trip in one pass was
// once held up (a pair of nodes alike read 291 us apart, the other pair 6); the other pass then has it. How far a pair's least moves from
// one pass to the next (half of it, one way; the median pair's) is the measurements' noise, which the partition allows beyond the
// tolerance: it is the noise of the very figure compared. (Half the median round trip less half the least, taken first, is the noise of
// single round trips: on a loaded machine the delayed pairs of a test, whose packets wait in a queue, spread by a millisecond and more
// while their least stayed within tens of microseconds, and that allowance joined nodes 0.6 ms apart.) The cluster's first process hands
// rank 0 the latencies, from which it draws the cluster's logical clusters (models::partition, tolerance 1.20) into the model, and hands
// every process the partition. Returns the pairs of processes whose pLogP parameters then stand for each logical cluster and each pair of
// them (models::measurement_pairs: §5.2), and counts the latency probes in `probed`.
constexpr int kLatencyReps = 7, kLatencyPasses = 2;

std::vector<Measurement> logical_clusters(const gridrt::Comm& world, const std::vector<std::vector<int>>& cluster_ranks,
                                          gridrt::models::GridModel& model, int& probed) {
  const int me = world.rank(), P = world.size();
  using gridrt::Level;
  const gridrt::Comm cluster = world.split(gridrt::level_color(Level::kCluster, me), me);
  // Every process's host and the first process (world rank) of its shared-memory domain.
  MPI_Comm domain;
  MPI_Comm_split_type(gridrt::cluster_comm(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &domain);
  int first = me;
  MPI_Bcast(&first, 1, MPI_INT, 0, domain);
  MPI_Comm_free(&domain);
  std::vector<int> first_of(P);
  world.allgather(&first, first_of.data(), 1, MPI_INT);
  probed = 0;
  std::vector<Measurement> pairs;
  std::vector<char> none(1);
  for (const std::vector<int>& ranks : cluster_ranks) {
    std::vector<std::string> host;
    std::vector<int> domain_of;
    for (int r : ranks) {
      host.push_back(gridrt::level_name(Level::kNode, r));
      domain_of.push_back(first_of[r]);
    }
    const std::vector<std::string> name = gridrt::models::node_names(host, domain_of);
    std::vector<std::string> nodes;
    std::vector<int> leader;  // each node's first process
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (std::find(nodes.begin(), nodes.end(), name[i]) == nodes.end()) {
        nodes.push_back(name[i]);
        leader.push_back(ranks[i]);
      }
    const int k = static_cast<int>(nodes.size());
    if (k < 2) continue;
    probed += k * (k - 1) / 2;
    const int tag = 3000;
    // At the cluster's first process (a node leader: leader[0]): each pair's one-way latency,
    // then its noise (half its passes' leasts' spread).
    std::vector<double> latency(2 * k * k, 0);
    if (std::find(ranks.begin(), ranks.end(), me) != ranks.end()) {
      // Each pass's least round trip, by pair a * k + b, at its two leaders.
      std::vector<std::vector<double>> least_of_pass(k * k);
      for (int pass = 0; pass < kLatencyPasses; ++pass)
        for (int a = 0; a < k; ++a)
          for (int b = a + 1; b < k; ++b) {
            if (me == leader[a] || me == leader[b]) {
              double least = std::numeric_limits<double>::infinity();
              for (int r = 0; r <= kLatencyReps; ++r) {
                const double t = round_trip(me, leader[a], leader[b], none, 0, tag).first;
                if (r > 0) least = std::min(least, t);
              }
              least_of_pass[a * k + b].push_back(least);
            }
            cluster.barrier();
          }
      for (int a = 0; a < k; ++a)
        for (int b = a + 1; b < k; ++b) {
          const std::vector<double>& t = least_of_pass[a * k + b];
          const auto [lo, hi] =
              t.empty() ? std::pair(0.0, 0.0) : std::pair(*std::min_element(t.begin(), t.end()), *std::max_element(t.begin(), t.end()));
          latency[a * k + b] = latency[b * k + a] = hand_over(me, leader[a], leader[0], lo / 2, tag);
          latency[k * k + a * k + b] = hand_over(me, leader[a], leader[0], (hi - lo) / 2, tag);
        }
      if (me == leader[0] && me != 0) gridrt::send(latency.data(), latency.size() * sizeof(double), 0, tag);
    }
    if (me == 0 && leader[0] != 0) gridrt::recv(latency.data(), latency.size() * sizeof(double), leader[0], tag);
    const std::string& cluster_name = gridrt::level_name(Level::kCluster, ranks[0]);
    std::vector<int> group(k);
    if (me == 0) {
      std::vector<std::vector<double>> matrix(k);
      for (int a = 0; a < k; ++a) matrix[a].assign(latency.begin() + a * k, latency.begin() + (a + 1) * k);
      // The noise: the median pair's (one pair's scheduling hiccup does not make it).
      std::vector<double> spread;
      for (int a = 0; a < k; ++a)
        for (int b = a + 1; b < k; ++b) spread.push_back(latency[k * k + a * k + b]);
      std::nth_element(spread.begin(), spread.begin() + spread.size() / 2, spread.end());
      const double noise = spread[spread.size() / 2];
      const gridrt::models::LogicalClusters& l = model.logical[cluster_name] =
          gridrt::models::LogicalClusters::of(nodes, matrix, 1.20, noise);
      group = l.group;
      std::printf("# logical clusters of %s:\n%s", cluster_name.c_str(),
                  gridrt::models::describe_logical_clusters(cluster_name, l).c_str());
      std::fflush(stdout);
    }
    world.bcast(group.data(), k, MPI_INT, 0);
    // Nodes are told apart by name: two shared-memory domains of one host talk over MPI's
    // network path, as two hosts do.
    for (const auto& [u, v] : gridrt::models::measurement_pairs(group, nodes))
      pairs.push_back({"logical", cluster_name,
                       group[u] == group[v] ? "logical cluster " + std::to_string(group[u])
                                            : "logical clusters " + std::to_string(group[u]) + " and " + std::to_string(group[v]),
                       leader[u], leader[v], group[u], group[v]});
  }
  return pairs;
}

// The many-to-one sweep (--escalations): in each cluster of 3 processes or more, one cluster
// at a time (the others wait), gathers to its first process from its first n processes, for
// n = 3 .. 8 and the whole cluster, at every size of kGatherSizes, kGatherReps times each
// after one not counted, each timed at the root from a barrier; MPICH's one gather (the job
// runs with GRIDRT_GATHER_PIECES=1). Rank 0 fits each cluster's model (models/many_to_one.h)
// from them and the ping-pong of the pair measured inside it.
const std::vector<std::uint64_t> kGatherSizes = {1024, 2048, 4096, 8192, 16384, 24576, 32768, 49152, 65536, 98304, 131072, 262144};
constexpr int kGatherReps = 10;

void escalation_sweep(const gridrt::Comm& world, const std::vector<std::vector<int>>& cluster_ranks,
                      const std::map<std::string, std::vector<gridrt::models::PointToPointSample>>& pingpong,
                      gridrt::models::GridModel& model) {
  const int me = world.rank();
  std::vector<char> mine(kGatherSizes.back(), 1), all;
  for (const auto& ranks : cluster_ranks) {
    const int size = static_cast<int>(ranks.size());
    if (size < 3) continue;
    const std::string cluster = gridrt::level_name(gridrt::Level::kCluster, ranks[0]);
    std::vector<int> counts;
    for (int n = 3; n <= std::min(size, 8); ++n) counts.push_back(n);
    if (size > 8) counts.push_back(size);
    std::vector<gridrt::models::GatherSample> samples;  // at the cluster's first rank
    for (const int n : counts) {
      const bool in = std::find(ranks.begin(), ranks.begin() + n, me) != ranks.begin() + n;
      const gridrt::Comm sub = world.split(in ? 0 : MPI_UNDEFINED, me);
      if (me == 0) {
        std::printf("# gathers inside cluster %s among %d processes (%zu sizes, %d each)\n", cluster.c_str(), n, kGatherSizes.size(),
                    kGatherReps);
        std::fflush(stdout);
      }
      if (!in) continue;
      all.resize(kGatherSizes.back() * n);
      for (const std::uint64_t M : kGatherSizes)
        for (int r = 0; r <= kGatherReps; ++r) {
          sub.barrier();
          const auto t0 = Clock::now();
          sub.gather(mine.data(), all.data(), static_cast<int>(M), MPI_BYTE, 0, gridrt::Algo::kHier);
          if (r > 0 && sub.rank() == 0) samples.push_back({n, M, seconds_since(t0)});
        }
    }
    // The samples to rank 0, which fits.
    const int root = ranks[0], tag = 2000;
    std::uint64_t count = samples.size();
    if (root != 0 && me == root) {
      gridrt::send(&count, sizeof count, 0, tag);
      gridrt::send(samples.data(), samples.size() * sizeof samples[0], 0, tag);
    }
    if (me == 0) {
      if (root != 0) {
        gridrt::recv(&count, sizeof count, root, tag);
        samples.resize(count);
        gridrt::recv(samples.data(), samples.size() * sizeof samples[0], root, tag);
      }
      const auto pp = pingpong.find(cluster);
      if (pp != pingpong.end()) {
        model.many_to_one[cluster] = gridrt::models::fit_many_to_one(pp->second, samples);
        std::fputs(gridrt::models::describe_many_to_one(cluster, model.many_to_one[cluster]).c_str(), stdout);
        std::fflush(stdout);
      }
    }
    world.barrier();
  }
}

// The slices of the sample run's pipelined collectives (GRIDRT_SLICE, the runtime's default),
// and of the predictions its corrections are fitted against.
const std::size_t kSampleSlice = gridrt::calibration::default_slice();
// The flow-control window of the calibration job's own streams: more than is ever in flight
// in its streams at the default sizes (4 x 1 MiB), and more than a line of 10 Gbit/s carries
// in a 50 ms round trip, so that the gaps it measures are the lines' own, whatever window
// the jobs keep (which the model then plays over them: models/flow_window.h).
constexpr std::size_t kLineWindow = 64u << 20;

// How many calls the sample run times at each size: 3, or where calls are fast, as many as
// take about 50 ms, up to 15. On one machine a call of a millisecond or two varies by tens
// of percent from call to call (processes and relays sharing the cores), and three calls'
// mean moved the corrections fitted from them by up to a factor of five from one
// calibration to the next; calls across a WAN take tens of milliseconds and vary little.
constexpr double kSampleSeconds = 0.05;
constexpr int kSampleCalls = 3, kSampleCallsFast = 15;
constexpr int kSliceRounds = 3;  // slice_costs_from's (odd: a median of its own)

// The cost of a slice (models::GridModel::slice_costs): the hierarchical bcast and reduce
// (packed route) and allreduce (its heads and its reduce-scatter route) of the largest size
// sampled, in slices of kSampleSlice and of the smallest the model chooses (GRIDRT_SLICE's
// and GRIDRT_ROUTE's settings, changed between the calls), `timed` as the sample run times
// them; each gives the time the smaller slices took beyond what the model predicts for them
// over the larger, per slice more (none below zero). Measured on 3 sites x 2 at 10 ms, 100
// Mbit/s, the all-reduce of 1 MiB by its reduce-scatter route took 104 ms in slices of 8 KiB
// and 74 in 64 KiB, where the model without it predicted 73.9 and 77.9 and chose 8 KiB: the route sends four
// pieces of a slice between the sites per head, and on two cores every message costs the
// relays and processes more than a lone pair's trains show. The two timings alternate over
// kSliceRounds rounds, and the median round's estimate is kept: from one pair of timings
// the costs varied by up to three times from one calibration to the next. Returns whether
// it measured.
template <typename Timed>
bool slice_costs_from(const gridrt::Comm& world, const std::vector<std::size_t>& sampled, gridrt::models::GridModel& model,
                      const std::optional<gridrt::GridPredictor>& predictor, Timed&& timed) {
  using gridrt::calibration::CollectiveTuning;
  const std::size_t kSmallestSlice = gridrt::calibration::smallest_slice();
  if (sampled.empty() || gridrt::num_colors(gridrt::Level::kCluster) < 2) return false;  // one cluster: MPICH's own, no slices
  const std::size_t n = sampled.back();
  auto slices = [n](std::size_t slice) { return gridrt::calibration::slice_count(n, slice); };
  if (slices(kSmallestSlice) <= slices(kSampleSlice)) return false;
  struct Case {
    const char* op;
    const char* route;
    bool own;  // the route's own cost (the all-reduce's routes differ), else the operation's
  };
  std::string said;
  for (const Case& c : {Case{"bcast", "packed", false}, Case{"reduce", "packed", false}, Case{"allreduce", "heads", true},
                        Case{"allreduce", "reduce-scatter", true}}) {
    const std::string route = c.route, key = c.own ? c.op + ("/" + route) : c.op;
    // Each on a communicator of its own: where the job has a model (a standing broker's),
    // a communicator keeps the choice of its first call of a size, slices and all.
    const gridrt::Comm in_small = world.dup(), in_large = world.dup();
    double predicted = 0;
    if (world.rank() == 0)
      predicted = (predictor->predicted_us(c.op, n, gridrt::Algo::kHier, 0, route, kSmallestSlice) -
                   predictor->predicted_us(c.op, n, gridrt::Algo::kHier, 0, route, kSampleSlice)) *
                  1e-6;
    std::vector<double> estimates;  // per slice more, one from each round
    for (int round = 0; round < kSliceRounds; ++round) {
      double small = 0, large = 0;
      {
        CollectiveTuning tuning(route, kSmallestSlice);
        small = timed(in_small, c.op, gridrt::Algo::kHier, n);
      }
      {
        CollectiveTuning tuning(route, kSampleSlice);
        large = timed(in_large, c.op, gridrt::Algo::kHier, n);
      }
      estimates.push_back((small - large - predicted) / (slices(kSmallestSlice) - slices(kSampleSlice)));
    }
    if (world.rank() != 0) continue;
    std::nth_element(estimates.begin(), estimates.begin() + kSliceRounds / 2, estimates.end());
    const double per_slice = std::max(0.0, estimates[kSliceRounds / 2]);
    model.slice_costs[key] = per_slice;
    const auto [least, most] = std::minmax_element(estimates.begin(), estimates.end());
    char one[128];
    std::snprintf(one, sizeof one, "%s%s %.1f us (rounds %.1f to %.1f)", said.empty() ? "" : ", ", key.c_str(), per_slice * 1e6,
                  *least * 1e6, *most * 1e6);
    said += one;
  }
  if (world.rank() == 0) {
    std::printf("# sample run: every slice of a pipelined collective beyond its messages (%zu B in slices of %zu and %zu B): %s\n", n,
                kSmallestSlice, kSampleSlice, said.c_str());
    std::fflush(stdout);
  }
  return true;
}

// The sample run: every algorithm of every operation, hier (gather and scatter on the packed
// route) and flat, at the sizes measured from 1 KiB to 256 KiB (at least four), after a
// warm-up call, kSampleCalls or more timed calls each (launcher/timed_call.h), the
// time until the call was complete everywhere; rank 0 fits each one's correction
// (models::fit_correction) from the model's predictions for the same calls.
//
// The calls go with the jobs' flow-control window (`job_window`), on communicators made
// after it is set (their streams begin with it), not with the calibration's own kLineWindow:
// a correction must be fitted where the jobs will run. Over a long fat line (10 ms, 1
// Gbit/s, 2 sites x 2) the hierarchical reduce-scatter of 256 KiB measured 23.5 ms with the
// large window where the model said 14.9, and 38.0 with the default window where it said
// 32.6: what the model misses differs between the two, and corrections fitted with the
// large window (alltoall hier 2.09 x predicted - 12.5 ms, steered by its 256 KiB point)
// predicted the jobs' 128 KiB all-to-all 37% long.
void sample_run(const gridrt::Comm& world, const std::vector<double>& sizes, gridrt::models::GridModel& model,
                gridrt::flow::Window job_window) {
  const int me = world.rank(), P = world.size();
  const gridrt::calibration::StreamWindow jobs_window(job_window);  // until the sample run ends
  const gridrt::Comm sampled_on = world.dup();
  double widest = 0;  // the longest one-way latency: how far ahead to name a common start
  if (me == 0)
    for (const auto& [pair, p] : model.between_sites) widest = std::max(widest, p.L);
  world.bcast(&widest, 1, MPI_DOUBLE, 0);
  gridrt::timing::CallTimer timer(world, std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(3 * widest + 0.01)));
  std::vector<std::size_t> sampled;
  for (double m : sizes)
    if (m >= 1024 && m <= 262144) sampled.push_back(static_cast<std::size_t>(m));
  for (double m : sizes)
    if (sampled.size() < 4 && m > 262144) sampled.push_back(static_cast<std::size_t>(m));
  // The model so far, for the predictions of the same calls (at rank 0, which keeps it).
  gridrt::GridShape shape;
  for (int r = 0; r < P; ++r) {
    const std::string& cluster = gridrt::level_name(gridrt::Level::kCluster, r);
    if (shape.clusters.empty() || shape.clusters.back() != cluster) {
      shape.clusters.push_back(cluster);
      shape.sites.push_back(gridrt::level_name(gridrt::Level::kSite, r));
      shape.ranks.push_back(0);
    }
    ++shape.ranks.back();
  }
  shape.window = job_window.grows ? 0 : job_window.bytes;
  std::optional<gridrt::GridPredictor> predictor;
  if (me == 0) predictor = gridrt::GridPredictor::from_json(gridrt::models::model_json(model), shape);
  // One call's time, until it was complete everywhere: a warm-up call, timed; the calls
  // timed after it, as many as take about kSampleSeconds (at least kSampleCalls, at most
  // kSampleCallsFast), the same number everywhere (the slowest process's count); their
  // mean, the slowest process's.
  auto timed = [&](const gridrt::Comm& comm, const char* op, gridrt::Algo algo, std::size_t n) {
    gridrt::timing::Buffers buffers(op, n, P);
    auto call = [&] { gridrt::timing::call_collective(comm, op, algo, n, 0, buffers); };
    double warm = timer.time(call), warmest = 0;
    world.allreduce(&warm, &warmest, 1, MPI_DOUBLE, MPI_MAX);
    const int calls =
        static_cast<int>(std::clamp(kSampleSeconds / std::max(warmest, 1e-9), double(kSampleCalls), double(kSampleCallsFast)));
    double mine = 0, slowest = 0;
    for (int i = 0; i < calls; ++i) mine += timer.time(call) / calls;
    world.allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX);
    return slowest;
  };
  if (slice_costs_from(world, sampled, model, predictor, timed) && me == 0)
    predictor = gridrt::GridPredictor::from_json(gridrt::models::model_json(model), shape);
  for (const char* op : {"barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall", "reduce_scatter"})
    for (gridrt::Algo algo : {gridrt::Algo::kHier, gridrt::Algo::kFlat}) {
      const char* name = algo == gridrt::Algo::kHier ? "hier" : "flat";
      std::vector<std::pair<double, double>> points;
      std::string unpredicted;  // why the model could not predict a call (rank 0's): no correction then
      for (std::size_t n : std::string(op) == "barrier" ? std::vector<std::size_t>{0} : sampled) {
        const double slowest = timed(sampled_on, op, algo, n);
        if (me == 0 && unpredicted.empty()) try {
            points.emplace_back(predictor->predicted_us(op, n, algo, 0, "packed", kSampleSlice) * 1e-6, slowest);
          } catch (const std::exception& e) { unpredicted = std::to_string(n) + " B: " + e.what(); }
      }
      if (me != 0) continue;
      if (!unpredicted.empty()) {  // the measurements are kept; this one is left uncorrected
        std::printf("# warning: sample run: %s %s: no prediction at %s; left uncorrected\n", op, name, unpredicted.c_str());
        std::fflush(stdout);
        continue;
      }
      const gridrt::models::Correction c = gridrt::models::fit_correction(points);
      model.corrections[std::string(op) + "/" + name] = c;
      double ratio = 0;
      for (const auto& [x, y] : points) ratio += y / x / points.size();
      std::printf("# sample run: %s %s measured %.2f x predicted on average: measured = %.3f x predicted %+.0f us\n", op, name, ratio,
                  c.scale, c.offset * 1e6);
      std::fflush(stdout);
    }
}

int work(int argc, char** argv) {
  std::string grid_name = "a grid", sizes_text = "0,1024,16384,65536,262144,1048576";
  bool sample = true, escalations = false;
  gridrt::flow::Window job_window;  // (--job-window 0: the default)
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--grid-name") && i + 1 < argc) grid_name = argv[++i];
    else if (!std::strcmp(argv[i], "--job-window") && i + 1 < argc) {
      if (const auto bytes = std::strtoull(argv[++i], nullptr, 10)) job_window = {bytes, false};
    } else if (!std::strcmp(argv[i], "--sizes") && i + 1 < argc) sizes_text = argv[++i];
    else if (!std::strcmp(argv[i], "--no-sample")) sample = false;
    else if (!std::strcmp(argv[i], "--escalations")) escalations = true;
  }
  const std::vector<double> sizes = sizes_from(sizes_text);
  const auto start = Clock::now();
  gridrt::init(&argc, &argv);
  const gridrt::Comm world = gridrt::Comm::world();
  const int P = world.size(), me = world.rank();
  using gridrt::Level;
  // Each cluster's ranks, and each site's clusters, in order of their first rank.
  std::vector<std::vector<int>> cluster_ranks(gridrt::num_colors(Level::kCluster));
  std::vector<std::vector<int>> site_clusters(gridrt::num_colors(Level::kSite));
  for (int r = 0; r < P; ++r) {
    auto& ranks = cluster_ranks[gridrt::level_color(Level::kCluster, r)];
    if (ranks.empty()) site_clusters[gridrt::level_color(Level::kSite, r)].push_back(gridrt::level_color(Level::kCluster, r));
    ranks.push_back(r);
  }
  std::vector<Measurement> plan;
  for (const auto& ranks : cluster_ranks)
    if (ranks.size() >= 2) plan.push_back({"inside", gridrt::level_name(Level::kCluster, ranks[0]), "", ranks[0], ranks[1]});
  for (const auto& clusters : site_clusters)
    if (clusters.size() >= 2)
      plan.push_back({"within_site", gridrt::level_name(Level::kSite, cluster_ranks[clusters[0]][0]), "", cluster_ranks[clusters[0]][0],
                      cluster_ranks[clusters[1]][0]});
  for (std::size_t s = 0; s < site_clusters.size(); ++s)
    for (std::size_t t = s + 1; t < site_clusters.size(); ++t) {
      const int a = cluster_ranks[site_clusters[s][0]][0], b = cluster_ranks[site_clusters[t][0]][0];
      plan.push_back({"between_sites", gridrt::level_name(Level::kSite, a), gridrt::level_name(Level::kSite, b), a, b});
    }
  gridrt::models::GridModel model;
  // The clusters of several nodes first: their logical clusters say which pairs stand for them.
  int latency_probes = 0;
  const std::vector<Measurement> logical = logical_clusters(world, cluster_ranks, model, latency_probes);
  if (me == 0 && latency_probes > 0) std::printf("# %d latency probes between nodes\n", latency_probes);
  plan.insert(plan.end(), logical.begin(), logical.end());
  std::map<std::string, std::vector<gridrt::models::PointToPointSample>> pingpong;  // inside each cluster, at rank 0
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const Measurement& mm = plan[i];
    const int tag = 100 + static_cast<int>(i);
    if (me == 0)
      std::printf("# %zu/%zu: %s %s%s%s (ranks %d and %d)\n", i + 1, plan.size(), mm.kind.c_str(), mm.name.c_str(),
                  mm.to.empty() ? "" : "|", mm.to.c_str(), mm.a, mm.b);
    std::fflush(stdout);
    std::vector<Row> r(sizes.size() + 1);
    if (me == mm.a || me == mm.b) r = measure_pair(me, mm.a, mm.b, tag, sizes);
    // The leader's figures to rank 0, which writes the model.
    if (mm.a != 0 && me == mm.a) gridrt::send(r.data(), r.size() * sizeof r[0], 0, tag);
    if (me == 0 && mm.a != 0) gridrt::recv(r.data(), r.size() * sizeof r[0], mm.a, tag);
    if (me == 0) {
      const gridrt::models::PLogP p = plogp_of(r, sizes, false);
      if (mm.kind == "inside") {
        model.inside[mm.name] = p;
        for (std::size_t k = 0; k < sizes.size(); ++k)
          pingpong[mm.name].push_back({static_cast<std::uint64_t>(sizes[k]), r[k][0] / 2, r[k][2]});
      } else if (mm.kind == "within_site") model.within_site[mm.name] = p;
      else if (mm.kind == "logical" && mm.group_a == mm.group_b) model.logical.at(mm.name).inside[mm.group_a] = p;
      else if (mm.kind == "logical") model.logical.at(mm.name).between[std::minmax(mm.group_a, mm.group_b)] = p;
      else {
        model.between_sites[{mm.name, mm.to}] = p;
        model.between_sites[{mm.to, mm.name}] = plogp_of(r, sizes, true);
      }
      if (mm.kind == "within_site" || mm.kind == "between_sites") warn_if_window_limits(mm, r, sizes, job_window);
    }
    world.barrier();
  }
  // Access probes: does a site's traffic to two other sites share one line? Its leader
  // streams to both at once; on lines of their own the two streams take as long as the
  // slower alone, on one shared line as long as both one after the other.
  const double m = sizes.back();
  const int n = 4;
  for (std::size_t s = 0; s < site_clusters.size(); ++s) {
    std::vector<int> others;
    for (std::size_t t = 0; t < site_clusters.size() && others.size() < 2; ++t)
      if (t != s) others.push_back(cluster_ranks[site_clusters[t][0]][0]);
    if (others.size() < 2) break;
    const int a = cluster_ranks[site_clusters[s][0]][0], tag = 1000 + static_cast<int>(s);
    const std::string site = gridrt::level_name(Level::kSite, a);
    std::vector<char> buf(static_cast<std::size_t>(m), 1);
    char none = 0;
    double both = 0;
    if (me == a) {
      const auto t0 = Clock::now();
      std::vector<gridrt::Request> sends;
      for (int i = 0; i < n; ++i)
        for (int b : others) sends.push_back(gridrt::isend(buf.data(), buf.size(), b, tag));
      gridrt::wait_all(sends);
      for (int b : others) gridrt::recv(&none, 0, b, tag);
      both = seconds_since(t0);
      if (a != 0) gridrt::send(&both, sizeof both, 0, tag);
    } else if (std::find(others.begin(), others.end(), me) != others.end()) {
      for (int i = 0; i < n; ++i) gridrt::recv(buf.data(), buf.size(), a, tag);
      gridrt::send(&none, 0, a, tag);
    }
    if (me == 0) {
      if (a != 0) gridrt::recv(&both, sizeof both, a, tag);
      double gaps[2];
      for (int k = 0; k < 2; ++k) gaps[k] = n * model.between_sites.at({site, gridrt::level_name(Level::kSite, others[k])}).gap(m);
      const double alone = std::max(gaps[0], gaps[1]), shared = gaps[0] + gaps[1];
      const bool access = both >= (alone + shared) / 2;
      if (access) model.access.insert(site);
      std::printf("# access probe of site %s: two streams at once took %.1f ms (%.1f alone, %.1f one after the other): %s\n", site.c_str(),
                  both * 1e3, alone * 1e3, shared * 1e3, access ? "one shared line" : "lines of their own");
      std::fflush(stdout);
    }
    world.barrier();
  }
  if (escalations) escalation_sweep(world, cluster_ranks, pingpong, model);
  if (sample) sample_run(world, sizes, model, job_window);
  if (me == 0) {
    model.grid = grid_name;
    model.measurements = static_cast<int>(plan.size());
    model.seconds = seconds_since(start);
    char when[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    model.measured = when;
    std::printf("# gridrt-model\n%s", gridrt::models::model_json(model).c_str());
    std::fflush(stdout);
  }
  gridrt::finalize();
  return 0;
}

// ---------------------------------------------------------------- launcher

int launch(int argc, char** argv) {
  std::string output = "gridrt-model.json", show, sizes;
  std::vector<std::string> grid_args, worker_args;
  std::string grid_name;
  int clusters = 2, ranks = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    gridrt::answer_help_or_version(a, "gridrun calibrate", kUsage);
    if (a == "--output") {
      output = value();
    } else if (a == "--show") {
      show = value();
    } else if (a == "--sizes") {
      sizes = value();
      sizes_from(sizes);
      worker_args.insert(worker_args.end(), {a, sizes});
    } else if (a == "--no-sample") {
      worker_args.push_back(a);
    } else if (a == "--escalations") {
      worker_args.push_back(a);
      // The sweep measures MPICH's one gather, whatever model the job gets (a standing
      // broker's may split it): set in every process, also on a standing grid's clusters.
      grid_args.insert(grid_args.end(), {"--env", "GRIDRT_GATHER_PIECES=1"});
    } else if (a == "--clusters" || a == "--ranks-per-cluster" || a == "--grid" || a == "--broker" || a == "--cert" || a == "--key" ||
               a == "--ca" || a == "-n" || a.rfind("--emulate-wan", 0) == 0) {
      const std::string v = value();
      if (a == "--clusters") clusters = std::atoi(v.c_str());
      if (a == "--ranks-per-cluster") ranks = std::atoi(v.c_str());
      if (a == "--grid") grid_name = v;
      if (a == "--broker") grid_name = "the grid of broker " + v;
      grid_args.insert(grid_args.end(), {a, v});
    } else {
      usage_error("unknown option '" + a + "'");
    }
  }
  if (!show.empty()) {
    try {
      std::fputs(gridrt::models::describe_model(gridrt::models::load_model(show)).c_str(), stdout);
      return 0;
    } catch (const gridrt::models::ModelError& e) {
      std::fprintf(stderr, "gridrun calibrate: %s\n", e.what());
      return 2;
    }
  }
  if (grid_name.empty()) grid_name = "embedded grid of " + std::to_string(clusters) + " x " + std::to_string(ranks);
  worker_args.insert(worker_args.end(), {"--grid-name", grid_name});
  // The sample run's hierarchical collectives take the packed route and slices of
  // kSampleSlice, whatever the user's environment or a standing broker's model would
  // choose, so that each is compared with the prediction of what it ran.
  grid_args.insert(grid_args.end(), {"--env", "GRIDRT_ROUTE=packed", "--env", "GRIDRT_SLICE=" + std::to_string(kSampleSlice)});
  // The job measures the lines with a window that does not limit them (kLineWindow); the
  // window the jobs will keep (GRIDRT_WINDOW here, as theirs) decides the warning and is
  // the one the sample run's calls keep.
  gridrt::flow::Window job_window;
  try {
    job_window = gridrt::models::window_from_env();
  } catch (const std::invalid_argument& e) { usage_error(e.what()); }
  grid_args.insert(grid_args.end(), {"--env", "GRIDRT_WINDOW=" + std::to_string(kLineWindow)});
  worker_args.insert(worker_args.end(), {"--job-window", std::to_string(job_window.grows ? 0 : job_window.bytes)});
  const std::string launcher = gridrt::settings::value("GRIDRT_GRIDRUN")
                                   .value_or((std::filesystem::read_symlink("/proc/self/exe").parent_path() / "gridrun").string());
  std::string json;
  bool in_model = false;
  std::fprintf(stderr, "gridrun calibrate: measuring %s\n", grid_name.c_str());
  const int status = gridrt::run_self_as_job("gridcalibrate", launcher, grid_args, worker_args, [&](const std::string& line) {
    if (line == "# gridrt-model\n") in_model = true;
    else if (in_model) json += line;
    else std::fputs(("gridrun calibrate: " + line.substr(line.rfind("# ", 0) == 0 ? 2 : 0)).c_str(), stderr);
  });
  if (status != 0 || json.empty()) {
    std::fprintf(stderr, "gridrun calibrate: the calibration job failed (status %d); nothing written\n", status);
    return status ? status : 1;
  }
  try {
    const gridrt::models::GridModel m = gridrt::models::read_model_json(json, "the calibration job's output");
    const std::string tmp = output + ".tmp";
    std::ofstream(tmp) << json;
    std::filesystem::rename(tmp, output);
    std::fprintf(stderr, "gridrun calibrate: wrote %s\n", output.c_str());
    std::fputs(gridrt::models::describe_model(m).c_str(), stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gridrun calibrate: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gridrt::self_job_main("gridrun calibrate", argc, argv, work, launch); }
