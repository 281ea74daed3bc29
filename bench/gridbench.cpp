// gridbench: OSU-style timings of gridrt's collectives, one command for the user.
//
//   gridbench [--clusters C] [--ranks-per-cluster R] [--emulate-wan 10ms,100mbit]
//             [--grid FILE | --broker HOST:PORT --cert PEM --key PEM --ca PEM]
//             --op OP[,OP...] --algo hier|flat|auto[,...] --sizes A:B --iters N [--json]
//
// It starts itself as a job through gridrun (on the embedded grid by default, C clusters of
// R processes) and prints the results of rank 0 on stdout, a line per (op, algo, size) as it
// is measured. See --help and docs/benchmarks.md.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/grid.h"
#include "common/wan.h"
#include "launcher/self_job.h"
#include "launcher/timed_call.h"
#include "models/flow_window.h"
#include "wan_bounds.h"
#include "gridrt/gridrt.hpp"

namespace {

const char* kUsage = R"(usage: gridbench [grid options] [--op OP] [--algo ALGO] [--sizes A:B] [--iters N] [--warmup W] [--json]

Times gridrt's collectives: after W warm-up calls, each of N calls is timed on its own.
With no option it measures every operation, hierarchical and flat, at every power of two
from 1 B to 1 MiB on the embedded grid (as the OSU benchmarks sweep sizes).
When all processes run on one machine (the embedded grid) they start each call together at
a moment rank 0 names, and a process's time is from then to its return, so max_us is when
the operation was complete everywhere; otherwise each call starts after an untimed barrier
(as the OSU benchmarks do). The line gives the per-call time averaged per process, and its
average, minimum and maximum over the processes; and median_us, the median over the calls
of each call's slowest process (steadier than the averages where a few calls are held up:
processes sharing cores).
gridbench starts itself as a gridrun job and prints rank 0's results on stdout.

  --op OP[,OP...]      barrier, bcast, reduce, allreduce, gather, scatter, allgather,
                       alltoall, reduce_scatter (MPI_Reduce_scatter_block), or all (these
                       nine, the default); also scatterv, gatherv and alltoallv (every
                       block of the size given, but passed as counts: not every member
                       knows the sizes, so auto chooses without them, docs/algorithms.md,
                       "Choosing"; predicted_us null), split (MPI_Comm_split of
                       the world in two by rank parity, then freed) and dup (a
                       duplicate of the world, then freed)
  --algo ALGO[,...]    hier, flat or auto (docs/algorithms.md; default hier,flat), or mpi: MPICH's blocking
                       collective on the cluster's communicator, without gridrt (one
                       cluster only): the baseline of the wait policy's gain; or layer:
                       MPI's own calls on MPI_COMM_WORLD, through gridrt's MPI layer
                       (docs/mpi.md; GRIDRT_COLL's choice, auto by default): what an
                       unmodified MPI program gets
  --sizes A:B          message sizes in bytes, powers of two from A to B (0 allowed as A),
  --sizes S1,S2,...      or these sizes; per process for bcast/reduce/allreduce, per block
                       for the others (default 1:1048576)
  --route R            packed, ordered, binomial, chain or direct: the route every
                       hierarchical scatter and gather takes between clusters (bcast and
                       reduce: packed, binomial or chain); agents or
                       groups: the hierarchical all-to-all's (groups: the Local Group
                       paper's rule, on two clusters only); heads, rooted or
                       reduce-scatter: the hierarchical all-reduce's (through the sites'
                       heads, a reduce then a bcast, or through the heads in pieces that
                       each head folds one of); heads or rooted: the reduce_scatter's
                       (each site's blocks through the heads, or a reduce then a scatter)
                       (GRIDRT_ROUTE; docs/algorithms.md, "Routes");
                       default: the model's least predicted, else packed, agents and
                       heads. Their JSON lines say it ("route")
  --iters N            calls timed per size (default 100)
  --warmup W           untimed calls before them (default 2)
  --root R             the root of bcast, reduce, gather and scatter (default 0)
  --json               one JSON object per line: op, algo, bytes, clusters, ranks, iters,
                       avg_us, min_us, max_us, median_us, wan_msgs, wan_bytes, bound_us,
                       predicted_us
  --model FILE         the grid's model (gridrun calibrate): every line gains predicted_us,
                       what the model predicts for that call (null without one), and auto
                       chooses from its predictions
  --predict-only       run nothing: print the model's predictions, hier and flat and their
                       ratio, for the grid --clusters C --ranks-per-cluster R (each cluster
                       its own site, named c0, site0, ... as on the embedded grid) or --grid
                       FILE (its clusters' slots), however large: clusters the model does not
                       name take its typical values; with the flow-control window the jobs
                       would keep (GRIDRT_WINDOW, as theirs). Needs --model

Grid options (as gridrun's):
  --clusters C --ranks-per-cluster R   the embedded grid's size (default 2 x 3)
  --emulate-wan DELAY[,RATE]           relay links cross an emulated WAN (e.g. 10ms,100mbit)
  --emulate-wan-pair A:B=DELAY[,RATE]  between sites A and B instead (repeatable)
  --emulate-wan-access SITE[=RATE]|all SITE's traffic to other sites shares one line
  --grid FILE                          an embedded grid from a grid description
  --broker HOST:PORT --cert PEM --key PEM --ca PEM   a running grid (with -n N)
  -n N                                 processes (default: every slot of the embedded grid)

wan_msgs and wan_bytes: messages and payload bytes per call that crossed the WAN (between
sites; on the embedded grid every cluster is a site), counted by the relays, summed over
the processes. bound_us: the least time an algorithm whose blocks cross the WAN once
must spend on the emulated WAN for one call (a broadcast's: by any path, relaying
allowed; docs/algorithms.md, "Bounds"); 0 without an emulated WAN (--emulate-wan* or
the --grid file's <wan>).
)";

const std::vector<std::string> kOps = {"barrier", "bcast",     "reduce",   "allreduce",     "gather",
                                       "scatter", "allgather", "alltoall", "reduce_scatter"};

// The routes of each operation's hierarchical algorithm that --route (GRIDRT_ROUTE) can
// name (docs/algorithms.md, "Routes"; gridbench sees the public API only, so it keeps its
// own list); a gather's ordered is its packed.
const std::map<std::string, std::vector<std::string>> kRoutes{{"scatter", {"packed", "ordered", "binomial", "chain", "direct"}},
                                                              {"gather", {"packed", "ordered", "binomial", "chain", "direct"}},
                                                              {"bcast", {"packed", "binomial", "chain"}},
                                                              {"reduce", {"packed", "binomial", "chain"}},
                                                              {"alltoall", {"agents", "groups"}},
                                                              {"allreduce", {"heads", "rooted", "reduce-scatter"}},
                                                              {"reduce_scatter", {"heads", "rooted"}}};
// Whether an operation takes the route, which its JSON lines then name.
bool takes_route(const std::string& op, const std::string& route) {
  const auto it = kRoutes.find(gridrt::timing::blocks_of(op));
  return it != kRoutes.end() && std::find(it->second.begin(), it->second.end(), route) != it->second.end();
}
using gridrt::timing::kVForms;                                    // (not in "all")
const std::vector<std::string> kConstructors = {"split", "dup"};  // (nor these)

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "gridbench: %s\n(gridbench --help explains the options)\n", why.c_str());
  std::exit(2);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

struct Options {
  std::vector<std::string> ops, algos;
  std::vector<std::size_t> sizes;
  int iters = 100;
  int warmup = 2;
  int root = 0;
  bool json = false;
  std::vector<std::pair<std::string, std::string>> wan_given;  // the --emulate-wan* options, in order
  std::string grid_file;                                       // --grid
  std::string model;                                           // --model
  std::string route;                                           // --route
  bool predict_only = false;
  int clusters = 2, ranks_per_cluster = 3;  // --clusters, --ranks-per-cluster
  std::vector<std::string> grid_args;       // for gridrun
};

std::size_t parse_size(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 10)
    usage_error("--sizes takes A:B, numbers of bytes; got '" + text + "'");
  return std::strtoull(text.c_str(), nullptr, 10);
}

int whole_number(const std::string& option, const std::string& text, int least) {
  const bool digits = !text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
  const int v = digits ? std::atoi(text.c_str()) : -1;
  if (v < least) usage_error(option + " takes a whole number from " + std::to_string(least) + ", got '" + text + "'");
  return v;
}

// The options both modes understand; grid options are kept for gridrun.
Options parse(int argc, char** argv) {
  Options o;
  std::string ops = "all", algos = "hier,flat", sizes = "1:1048576";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    gridrt::answer_help_or_version(a, "gridbench", kUsage);
    if (a == "--worker") {  // the launcher's mark on the job's own command line
    } else if (a == "--op") {
      ops = value();
    } else if (a == "--algo") {
      algos = value();
    } else if (a == "--route") {
      o.route = value();
      std::vector<std::string> routes;
      for (const auto& [op, its] : kRoutes)
        for (const std::string& r : its)
          if (std::find(routes.begin(), routes.end(), r) == routes.end()) routes.push_back(r);
      if (std::find(routes.begin(), routes.end(), o.route) == routes.end()) {
        std::string names;
        for (const std::string& r : routes) names += (names.empty() ? "" : ", ") + r;
        usage_error("--route takes one of " + names + "; got '" + o.route + "'");
      }
      o.grid_args.insert(o.grid_args.end(), {"--env", "GRIDRT_ROUTE=" + o.route});
    } else if (a == "--sizes") {
      sizes = value();
    } else if (a == "--iters") {
      o.iters = whole_number(a, value(), 1);
    } else if (a == "--warmup") {
      o.warmup = whole_number(a, value(), 0);
    } else if (a == "--root") {
      o.root = whole_number(a, value(), 0);
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--predict-only") {
      o.predict_only = true;
    } else if (a == "--model") {
      o.model = value();
      o.grid_args.insert(o.grid_args.end(), {a, o.model});
    } else if (gridrt::is_wan_option(a)) {
      const std::string v = value();
      try {
        gridrt::WanPlan checked;
        gridrt::apply_wan_option(checked, a, v);
      } catch (const std::invalid_argument& e) { usage_error(a + ": " + e.what()); }
      o.wan_given.emplace_back(a, v);
      o.grid_args.insert(o.grid_args.end(), {a, v});
    } else if (a == "--clusters" || a == "--ranks-per-cluster" || a == "--grid" || a == "--broker" || a == "--cert" || a == "--key" ||
               a == "--ca" || a == "-n") {
      const std::string v = value();
      if (a == "--grid") o.grid_file = v;
      if (a == "--clusters") o.clusters = whole_number(a, v, 1);
      if (a == "--ranks-per-cluster") o.ranks_per_cluster = whole_number(a, v, 1);
      o.grid_args.insert(o.grid_args.end(), {a, v});
    } else {
      usage_error("unknown option '" + a + "'");
    }
  }
  if (ops.empty()) usage_error("--op needs at least one operation");
  o.ops = ops == "all" ? kOps : split_list(ops);
  for (const auto& op : o.ops)
    if (std::find(kOps.begin(), kOps.end(), op) == kOps.end() && std::find(kVForms.begin(), kVForms.end(), op) == kVForms.end() &&
        std::find(kConstructors.begin(), kConstructors.end(), op) == kConstructors.end())
      usage_error("unknown --op '" + op + "'");
  if (algos.empty()) usage_error("--algo needs at least one algorithm");
  o.algos = split_list(algos);
  for (const auto& al : o.algos)
    if (al != "hier" && al != "flat" && al != "auto" && al != "mpi" && al != "layer")
      usage_error("--algo takes hier, flat, auto, mpi or layer, got '" + al + "'");
  if (const auto colon = sizes.find(':'); colon != std::string::npos) {
    std::size_t lo = parse_size(sizes.substr(0, colon));
    const std::size_t hi = parse_size(sizes.substr(colon + 1));
    if (lo > hi) usage_error("--sizes A:B needs A <= B, got '" + sizes + "'");
    if (lo == 0) {
      o.sizes.push_back(0);
      lo = 1;
    }
    for (std::size_t s = lo; s <= hi; s *= 2) o.sizes.push_back(s);
  } else {
    for (const auto& s : split_list(sizes)) o.sizes.push_back(parse_size(s));
  }
  for (std::size_t s : o.sizes)
    if (s > (1u << 30)) usage_error("--sizes: at most 1 GiB");
  return o;
}

// ---------------------------------------------------------------- launcher

// --predict-only: the model's predictions for a grid of any size, nothing run.
int predict_only(const Options& o) {
  if (o.model.empty()) usage_error("--predict-only needs --model FILE (from gridrun calibrate)");
  gridrt::GridShape shape;
  if (!o.grid_file.empty()) {
    for (const auto& c : gridrt::load_grid(o.grid_file).clusters) {
      shape.clusters.push_back(c.name);
      shape.sites.push_back(c.site);
      shape.ranks.push_back(static_cast<int>(std::min<std::uint32_t>(c.slots, 1u << 20)));
    }
  } else {
    for (int c = 0; c < o.clusters; ++c) {
      shape.clusters.push_back("c" + std::to_string(c));
      shape.sites.push_back("site" + std::to_string(c));
      shape.ranks.push_back(o.ranks_per_cluster);
    }
  }
  try {
    const gridrt::flow::Window w = gridrt::models::window_from_env();
    shape.window = w.grows ? 0 : w.bytes;
  } catch (const std::invalid_argument& e) { usage_error(e.what()); }
  const gridrt::GridPredictor predictor = gridrt::GridPredictor::from_file(o.model, shape);
  long P = 0;
  for (int r : shape.ranks) P += r;
  if (!o.json)
    std::printf(
        "# gridbench --predict-only: %ld processes in %zu clusters, model %s, flow-control window %s\n# %-9s %10s %14s %14s %10s %6s\n", P,
        shape.clusters.size(), o.model.c_str(),
        shape.window ? (std::to_string(shape.window / 1024) + " KiB").c_str() : "512 KiB, growing where a line asks for more", "op",
        "bytes", "hier_us", "flat_us", "hier/flat", "auto");
  for (const auto& op : o.ops) {
    if (std::find(kOps.begin(), kOps.end(), op) == kOps.end()) continue;  // (v-forms, split, dup: not predicted)
    for (std::size_t n : op == "barrier" ? std::vector<std::size_t>{0} : o.sizes) {
      const double hier = predictor.predicted_us(op, n, gridrt::Algo::kHier, o.root);
      const double flat = predictor.predicted_us(op, n, gridrt::Algo::kFlat, o.root);
      if (o.json)
        std::printf(
            "{\"op\":\"%s\",\"bytes\":%zu,\"clusters\":%zu,\"ranks\":%ld,\"hier_us\":%.1f,\"flat_us\":%.1f,\"hier_over_flat\":%.3f}\n",
            op.c_str(), n, shape.clusters.size(), P, hier, flat, hier / flat);
      else std::printf("  %-9s %10zu %14.1f %14.1f %10.3f %6s\n", op.c_str(), n, hier, flat, hier / flat, hier <= flat ? "hier" : "flat");
      std::fflush(stdout);
    }
  }
  return 0;
}

int launch(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.predict_only) return predict_only(o);
  const std::string gridrun = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "gridrun").string();
  return gridrt::run_self_as_job("gridbench", gridrun, o.grid_args, std::vector<std::string>(argv + 1, argv + argc),
                                 [](const std::string& line) {
                                   std::fputs(line.c_str(), stdout);
                                   std::fflush(stdout);
                                 });
}

// ---------------------------------------------------------------- worker

gridrt::Algo algo_of(const std::string& a) {
  return a == "hier" ? gridrt::Algo::kHier : a == "flat" ? gridrt::Algo::kFlat : gridrt::Algo::kAuto;
}

// The emulated WAN the job runs on, as the relays have it: the grid description's <wan>
// (with --grid), then the options over it.
gridrt::WanPlan emulated_wan(const Options& o) {
  gridrt::WanPlan plan = o.grid_file.empty() ? gridrt::WanPlan{} : gridrt::load_grid(o.grid_file).wan;
  for (const auto& [option, value] : o.wan_given) gridrt::apply_wan_option(plan, option, value);
  return plan;
}

int work(int argc, char** argv) {
  const Options o = parse(argc, argv);
  gridrt::init(&argc, &argv);
  const gridrt::Comm world = gridrt::Comm::world();
  const int P = world.size(), me = world.rank();
  const int clusters = world.num_clusters();
  // The WAN lies between sites (one per cluster on the embedded grid): the bounds count the
  // processes of each site.
  if (o.root >= P)
    throw gridrt::Error("--root " + std::to_string(o.root) + " is not a rank of the job (" + std::to_string(P) + " processes)");
  gridrt::bench::SiteShape sites;
  for (int r = 0; r < P; ++r) {
    const std::string& name = gridrt::level_name(gridrt::Level::kSite, r);
    auto at = std::find(sites.names.begin(), sites.names.end(), name);
    if (at == sites.names.end()) {
      sites.names.push_back(name);
      sites.procs.push_back(0);
      at = sites.names.end() - 1;
    }
    ++sites.procs[at - sites.names.begin()];
    if (r == o.root) sites.root = static_cast<int>(at - sites.names.begin());
  }
  const gridrt::WanPlan wan = emulated_wan(o);
  std::chrono::nanoseconds longest_delay{0};
  for (const auto& a : sites.names)
    for (const auto& b : sites.names)
      if (a != b) longest_delay = std::max(longest_delay, wan.pair(a, b).delay);
  // How far ahead the common start is: the broadcast announcing it crosses the WAN once.
  gridrt::timing::CallTimer timer(
      world, std::chrono::duration_cast<std::chrono::steady_clock::duration>(3 * longest_delay + std::chrono::milliseconds(10)));
  if (me == 0 && !o.json)
    std::printf(
        "# gridbench: %d processes in %d clusters at %zu sites, %s, %d calls per size\n# %-9s %-4s %10s %12s %12s %12s %12s %9s %12s %12s "
        "%12s\n",
        P, clusters, sites.names.size(), wan.active() ? ("emulated WAN " + wan.describe()).c_str() : "no emulated WAN", o.iters, "op",
        "algo", "bytes", "avg_us", "min_us", "max_us", "median_us", "wan_msgs", "wan_bytes", "bound_us", "predicted_us");
  for (const auto& op : o.ops) {
    std::vector<std::size_t> sizes = op == "barrier" ? std::vector<std::size_t>{0} : o.sizes;
    for (std::size_t n : sizes) {
      gridrt::timing::Buffers buffers(op, n, P);
      std::vector<char>&send = buffers.send, &recv = buffers.recv;
      const int count = static_cast<int>(n);
      for (const auto& algo_name : o.algos) {
        const gridrt::Algo algo = algo_of(algo_name);
        if (algo_name == "mpi" && clusters != 1) throw gridrt::Error("--algo mpi needs a grid of one cluster");
        const bool through_mpi = algo_name == "mpi" || algo_name == "layer";
        const MPI_Comm mpi = algo_name == "layer" ? MPI_COMM_WORLD : gridrt::cluster_comm();
        if (algo_name == "layer") {
          int n = 0;
          MPI_Comm_size(MPI_COMM_WORLD, &n);
          if (n != P)
            throw gridrt::Error("--algo layer: MPI_COMM_WORLD has " + std::to_string(n) + " processes, not the job's " + std::to_string(P) +
                                " (is gridrt's MPI layer loaded?)");
        }
        auto call = [&] {
          // Communicator constructors: a split in two by rank parity, a duplicate; each freed.
          if (op == "split" || op == "dup") {
            if (through_mpi) {
              MPI_Comm made = MPI_COMM_NULL;
              if (op == "split") MPI_Comm_split(mpi, me % 2, me, &made);
              else MPI_Comm_dup(mpi, &made);
              MPI_Comm_free(&made);
            } else if (op == "split") {
              static_cast<void>(world.split(me % 2, me));
            } else {
              static_cast<void>(world.dup());
            }
            return;
          }
          if (through_mpi) {
            if (op == "barrier") MPI_Barrier(mpi);
            else if (op == "bcast") MPI_Bcast(send.data(), count, MPI_BYTE, o.root, mpi);
            else if (op == "reduce") MPI_Reduce(send.data(), recv.data(), count, MPI_BYTE, MPI_BOR, o.root, mpi);
            else if (op == "allreduce") MPI_Allreduce(send.data(), recv.data(), count, MPI_BYTE, MPI_BOR, mpi);
            else if (op == "gather") MPI_Gather(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE, o.root, mpi);
            else if (op == "scatter") MPI_Scatter(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE, o.root, mpi);
            else if (op == "allgather") MPI_Allgather(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE, mpi);
            else if (op == "alltoall") MPI_Alltoall(send.data(), count, MPI_BYTE, recv.data(), count, MPI_BYTE, mpi);
            else if (op == "reduce_scatter") MPI_Reduce_scatter_block(send.data(), recv.data(), count, MPI_BYTE, MPI_BOR, mpi);
            else if (op == "scatterv")
              MPI_Scatterv(send.data(), buffers.counts.data(), buffers.displs.data(), MPI_BYTE, recv.data(), count, MPI_BYTE, o.root, mpi);
            else if (op == "gatherv")
              MPI_Gatherv(send.data(), count, MPI_BYTE, recv.data(), buffers.counts.data(), buffers.displs.data(), MPI_BYTE, o.root, mpi);
            else if (op == "alltoallv")
              MPI_Alltoallv(send.data(), buffers.counts.data(), buffers.displs.data(), MPI_BYTE, recv.data(), buffers.counts.data(),
                            buffers.displs.data(), MPI_BYTE, mpi);
            return;
          }
          gridrt::timing::call_collective(world, op, algo, n, o.root, buffers);
        };
        for (int i = 0; i < o.warmup; ++i) call();
        world.barrier();
        // Each call timed on its own (launcher/timed_call.h): from a common start on one
        // machine, else after a barrier.
        double busy = 0;
        std::vector<double> each(o.iters), slowest(o.iters);
        unsigned long long sent[2] = {0, 0};
        for (int i = 0; i < o.iters; ++i) {
          gridrt::WanTraffic before;
          each[i] = 1e6 * timer.time(call, [&] { before = gridrt::wan_traffic(); });
          busy += each[i];
          const gridrt::WanTraffic after = gridrt::wan_traffic();
          sent[0] += after.messages - before.messages;
          sent[1] += after.bytes - before.bytes;
        }
        const double us = busy / o.iters;
        double sum = 0, lo = 0, hi = 0;
        world.allreduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM);
        world.allreduce(&us, &lo, 1, MPI_DOUBLE, MPI_MIN);
        world.allreduce(&us, &hi, 1, MPI_DOUBLE, MPI_MAX);
        world.allreduce(each.data(), slowest.data(), o.iters, MPI_DOUBLE, MPI_MAX);
        std::sort(slowest.begin(), slowest.end());
        const double median = (slowest[(o.iters - 1) / 2] + slowest[o.iters / 2]) / 2;
        unsigned long long total[2] = {0, 0};
        world.allreduce(sent, total, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM);
        if (me != 0) continue;
        const double msgs = static_cast<double>(total[0]) / o.iters, bytes = static_cast<double>(total[1]) / o.iters;
        const double bound = gridrt::bench::wan_bound_us(gridrt::timing::blocks_of(op), n, wan, sites);
        const bool modelled = std::find(kOps.begin(), kOps.end(), op) != kOps.end() && !through_mpi;
        const double predicted = modelled ? world.predicted_us(op, n, algo, o.root) : -1;
        char predicted_text[32] = "null";
        if (predicted >= 0) std::snprintf(predicted_text, sizeof predicted_text, "%.1f", predicted);
        // The route asked for, on the lines whose calls take one.
        const std::string route = takes_route(op, o.route) ? ",\"route\":\"" + o.route + "\"" : "";
        if (o.json)
          std::printf(
              "{\"op\":\"%s\",\"algo\":\"%s\",\"bytes\":%zu,\"clusters\":%d,\"ranks\":%d,\"iters\":%d,\"avg_us\":%.1f,"
              "\"min_us\":%.1f,\"max_us\":%.1f,\"median_us\":%.1f,\"wan_msgs\":%.2f,\"wan_bytes\":%.1f,\"bound_us\":%.1f,\"predicted_us\":%"
              "s%s}\n",
              op.c_str(), algo_name.c_str(), n, clusters, P, o.iters, sum / P, lo, hi, median, msgs, bytes, bound, predicted_text,
              route.c_str());
        else
          std::printf("  %-9s %-4s %10zu %12.1f %12.1f %12.1f %12.1f %9.2f %12.1f %12.1f %12s\n", op.c_str(), algo_name.c_str(), n, sum / P,
                      lo, hi, median, msgs, bytes, bound, predicted_text);
        std::fflush(stdout);
      }
    }
  }
  int late = timer.late(), late_total = 0;
  world.allreduce(&late, &late_total, 1, MPI_INT, MPI_SUM);
  if (me == 0 && late_total > 0)
    std::fprintf(stderr, "gridbench: warning: %d call(s) started late on some process (the machine was too busy)\n", late_total);
  gridrt::finalize();
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gridrt::self_job_main("gridbench", argc, argv, work, launch); }
