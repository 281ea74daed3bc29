// raytrace: a Ray2mesh-like application (Coti, Herault, Cappello 2009 §3.3, §4.3) in its three phases:
//   1. three broadcasts from the master: the earth model and parameters, the sources
//      (earthquakes), the receivers (seismographs);
//   2. master-worker over chunks of rays (every source to every receiver), each ray traced
//      through the model (earth.h) and its length added to the cells it crosses;
//   3. a broadcast of the travel-time table, and an all-to-all that brings every cell's
//      lengths from every process to the process owning the cell.
// in three modes (Coti, Herault, Cappello 2009 Figure 7): vanilla (flat collectives, one queue), grid (grid
// collectives, one queue), hier (grid collectives, a queue per cluster). The output is the
// same in all three; the master checks it (every ray's length is in the cells, sample rays
// traced again here agree bit for bit, every process got the same table).
//
//   gridrun --var MODE=hier jobprofiles/raytrace.xml     (see --help)
#include <gridrt/queue.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "earth.h"

namespace {

const char* kUsage = R"(usage: raytrace [--mode vanilla|grid|hier] [--sources S] [--receivers R] [--chunk K]
                [--sectors N] [--step KM] [--workers-only] [--json]

Traces S x R seismic rays through a layered earth, K rays per task, as one gridrt job.
  --mode          vanilla: flat collectives and one queue at the master (the classic)
                  grid:    grid collectives, one queue
                  hier:    grid collectives, a boss per cluster (default)
  --sources S     earthquakes (default 200); --receivers R stations (default 100)
  --chunk K       rays per task (default 50)
  --sectors N     cells per shell around the section (default 3600); --step KM (default 1)
  --workers-only  the master and bosses only hand out work (Ray2mesh's roles); by default
                  they trace rays too
  --json          the summary as one JSON line
)";

struct Params {  // the first broadcast
  double radius[16], velocity[16];
  int shells, sectors, sources, receivers;
  double step_km;
};
struct Chunk {  // a task
  std::int32_t first, count;
};
struct Traced {  // per ray, in a task's result
  double time;   // seconds; -1: no direct ray
  std::int64_t length_m;
};

std::uint64_t hash(const void* data, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
// Angles on the surface, spread by a fixed generator (the same every run).
std::vector<double> angles(int n, std::uint64_t seed) {
  std::vector<double> out(static_cast<std::size_t>(n));
  for (auto& a : out) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    a = static_cast<double>(seed >> 11) / static_cast<double>(1ull << 53) * 2 * 3.14159265358979323846;
  }
  return out;
}
double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}
int fail(const std::string& why) {
  std::fprintf(stderr, "raytrace: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  gridrt::init(&argc, &argv);
  std::string mode = "hier";
  int sources = 200, receivers = 100, chunk = 50, sectors = 3600;
  double step = 1;
  bool workers_only = false, json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--mode" && has_value) mode = argv[++i];
    else if (a == "--sources" && has_value) sources = std::atoi(argv[++i]);
    else if (a == "--receivers" && has_value) receivers = std::atoi(argv[++i]);
    else if (a == "--chunk" && has_value) chunk = std::atoi(argv[++i]);
    else if (a == "--sectors" && has_value) sectors = std::atoi(argv[++i]);
    else if (a == "--step" && has_value) step = std::atof(argv[++i]);
    else if (a == "--workers-only") workers_only = true;
    else if (a == "--json") json = true;
    else return fail("unknown argument '" + a + "' (--help lists them)");
  }
  if ((mode != "vanilla" && mode != "grid" && mode != "hier") || sources < 1 || receivers < 1 || chunk < 1 || sectors < 1 || !(step > 0))
    return fail("bad --mode, --sources, --receivers, --chunk, --sectors or --step (--help)");
  const gridrt::Algo algo = mode == "vanilla" ? gridrt::Algo::kFlat : gridrt::Algo::kHier;
  gridrt::QueueOptions qopts;
  if (mode != "hier") qopts.levels = {};
  qopts.master_works = qopts.bosses_work = !workers_only;

  const gridrt::Comm world = gridrt::Comm::world();
  const int me = world.rank(), size = world.size();
  constexpr int kMaster = 0;
  world.barrier(gridrt::Algo::kHier);
  const auto start = std::chrono::steady_clock::now();

  // Phase 1: three broadcasts.
  Params prm{};
  std::vector<double> src, rcv;
  if (me == kMaster) {
    const raytrace::Model m = raytrace::standard_model(sectors, step);
    prm.shells = static_cast<int>(m.velocity.size());
    std::copy(m.radius.begin(), m.radius.end(), prm.radius);
    std::copy(m.velocity.begin(), m.velocity.end(), prm.velocity);
    prm.sectors = sectors;
    prm.step_km = step;
    prm.sources = sources;
    prm.receivers = receivers;
    src = angles(sources, 17);
    rcv = angles(receivers, 4242);
  }
  world.bcast(&prm, sizeof prm, MPI_BYTE, kMaster, algo);
  src.resize(static_cast<std::size_t>(prm.sources));
  rcv.resize(static_cast<std::size_t>(prm.receivers));
  world.bcast(src.data(), prm.sources, MPI_DOUBLE, kMaster, algo);
  world.bcast(rcv.data(), prm.receivers, MPI_DOUBLE, kMaster, algo);
  raytrace::Model model;
  model.radius.assign(prm.radius, prm.radius + prm.shells + 1);
  model.velocity.assign(prm.velocity, prm.velocity + prm.shells);
  model.sectors = prm.sectors;
  model.step_km = prm.step_km;
  const int rays = prm.sources * prm.receivers;
  const double phase1_ms = ms_since(start);

  // Phase 2: master-worker over chunks of rays.
  std::vector<std::int64_t> coverage(static_cast<std::size_t>(model.cells()), 0);
  std::vector<double> times(static_cast<std::size_t>(rays), 0);
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(rays), 0);
  long tasks_run = 0;
  std::uint64_t queue_wan = 0;  // messages this process sent across the WAN in phase 2
  {
    gridrt::TaskQueue q(world, qopts);
    const std::uint64_t wan_before = gridrt::wan_traffic().messages;
    if (q.is_master()) {
      q.on_result([&](gridrt::TaskId, const char* data, std::size_t n) {
        Chunk c;
        std::memcpy(&c, data, sizeof c);
        if (n != sizeof c + sizeof(Traced) * static_cast<std::size_t>(c.count)) {
          std::fprintf(stderr, "raytrace: a result of %zu bytes for %d rays\n", n, c.count);
          std::abort();
        }
        for (int j = 0; j < c.count; ++j) {
          Traced t;
          std::memcpy(&t, data + sizeof c + sizeof t * static_cast<std::size_t>(j), sizeof t);
          times[static_cast<std::size_t>(c.first + j)] = t.time;
          lengths[static_cast<std::size_t>(c.first + j)] = t.length_m;
        }
      });
      for (int first = 0; first < rays; first += chunk) q.put(Chunk{first, std::min(chunk, rays - first)});
    }
    std::vector<char> result;
    while (auto t = q.next()) {
      const Chunk c = t->as<Chunk>();
      result.resize(sizeof c + sizeof(Traced) * static_cast<std::size_t>(c.count));
      std::memcpy(result.data(), &c, sizeof c);
      for (int j = 0; j < c.count; ++j) {
        const int ray = c.first + j;
        const raytrace::Ray r = raytrace::trace(model, src[static_cast<std::size_t>(ray / prm.receivers)],
                                                rcv[static_cast<std::size_t>(ray % prm.receivers)], coverage);
        const Traced out{r.arrived ? r.time : -1, r.length_m};
        std::memcpy(result.data() + sizeof c + sizeof out * static_cast<std::size_t>(j), &out, sizeof out);
        if (q.is_boss()) q.poll();  // a master or boss tracing rays keeps serving the others
      }
      q.done(*t, result.data(), result.size());
      ++tasks_run;
    }
    queue_wan = gridrt::wan_traffic().messages - wan_before;
  }
  const double phase2_ms = ms_since(start) - phase1_ms;

  // Phase 3: the travel-time table to everyone, and every cell's lengths to its owner.
  world.bcast(times.data(), rays, MPI_DOUBLE, kMaster, algo);
  const std::uint64_t table = hash(times.data(), times.size() * sizeof(double));
  const int block = (model.cells() + size - 1) / size;
  coverage.resize(static_cast<std::size_t>(block) * static_cast<std::size_t>(size), 0);
  std::vector<std::int64_t> mine(coverage.size());
  world.alltoall(coverage.data(), mine.data(), block, MPI_INT64_T, algo);
  for (int from = 1; from < size; ++from)
    for (int i = 0; i < block; ++i) mine[static_cast<std::size_t>(i)] += mine[static_cast<std::size_t>(from * block + i)];
  std::vector<std::int64_t> cells(me == kMaster ? coverage.size() : 0);
  world.gather(mine.data(), cells.data(), block, MPI_INT64_T, kMaster, algo);
  std::uint64_t tables[2] = {table, ~table}, agreed[2];  // min and (inverted) max over the processes
  world.allreduce(tables, agreed, 2, MPI_UINT64_T, MPI_MIN, algo);
  const double phase3_ms = ms_since(start) - phase1_ms - phase2_ms;
  const double makespan_ms = ms_since(start);
  long all_tasks = 0;
  world.reduce(&tasks_run, &all_tasks, 1, MPI_LONG, MPI_SUM, kMaster, gridrt::Algo::kHier);
  std::uint64_t all_queue_wan = 0;
  world.reduce(&queue_wan, &all_queue_wan, 1, MPI_UINT64_T, MPI_SUM, kMaster, gridrt::Algo::kHier);

  if (me == kMaster) {
    std::string problem;
    std::int64_t sum_rays = 0, sum_cells = 0;
    int arrived = 0;
    for (int r = 0; r < rays; ++r) {
      sum_rays += lengths[static_cast<std::size_t>(r)];
      arrived += times[static_cast<std::size_t>(r)] >= 0;
    }
    for (auto v : cells) sum_cells += v;
    if (sum_rays != sum_cells) problem = "the cells hold " + std::to_string(sum_cells) + " m of rays, the rays " + std::to_string(sum_rays);
    if (agreed[0] != table || ~agreed[1] != table) problem = "the processes got different travel-time tables";
    const long expected_tasks = (rays + chunk - 1) / chunk;
    if (all_tasks != expected_tasks) problem = std::to_string(all_tasks) + " tasks run, " + std::to_string(expected_tasks) + " put";
    std::vector<std::int64_t> scratch(static_cast<std::size_t>(model.cells()), 0);
    for (int r = 0; r < rays; r += std::max(1, rays / 50)) {  // sample rays, traced again here
      const raytrace::Ray again = raytrace::trace(model, src[static_cast<std::size_t>(r / prm.receivers)],
                                                  rcv[static_cast<std::size_t>(r % prm.receivers)], scratch);
      if ((again.arrived ? again.time : -1) != times[static_cast<std::size_t>(r)] || again.length_m != lengths[static_cast<std::size_t>(r)])
        problem = "ray " + std::to_string(r) + " differs when traced again";
    }
    if (!problem.empty()) return fail(problem);
    const std::uint64_t cell_hash = hash(cells.data(), static_cast<std::size_t>(model.cells()) * sizeof(std::int64_t));
    if (json) {
      std::printf(
          "{\"mode\":\"%s\",\"procs\":%d,\"clusters\":%d,\"rays\":%d,\"arrived\":%d,\"tasks\":%ld,\"workers_only\":%s,"
          "\"travel_times\":\"%016llx\",\"coverage\":\"%016llx\",\"phase1_ms\":%.1f,\"phase2_ms\":%.1f,\"phase3_ms\":%.1f,"
          "\"makespan_ms\":%.1f,\"queue_wan_msgs\":%llu,\"queue_wan_msgs_per_task\":%.3f}\n",
          mode.c_str(), size, world.num_clusters(), rays, arrived, all_tasks, workers_only ? "true" : "false",
          static_cast<unsigned long long>(table), static_cast<unsigned long long>(cell_hash), phase1_ms, phase2_ms, phase3_ms, makespan_ms,
          static_cast<unsigned long long>(all_queue_wan),
          static_cast<double>(all_queue_wan) / static_cast<double>(std::max(1L, all_tasks)));
    } else {
      std::printf("raytrace %s: %d rays (%d arrived) in %ld tasks on %d processes in %d clusters\n", mode.c_str(), rays, arrived, all_tasks,
                  size, world.num_clusters());
      std::printf("travel times %016llx, coverage %016llx: checks passed\n", static_cast<unsigned long long>(table),
                  static_cast<unsigned long long>(cell_hash));
      std::printf("phases: distribute %.1f ms, master-worker %.1f ms, results %.1f ms; makespan %.1f ms (at the master)\n", phase1_ms,
                  phase2_ms, phase3_ms, makespan_ms);
      std::printf("the queue sent %llu messages across the WAN (%.3f per task)\n", static_cast<unsigned long long>(all_queue_wan),
                  static_cast<double>(all_queue_wan) / static_cast<double>(std::max(1L, all_tasks)));
    }
  }
  gridrt::finalize();
  return 0;
}
