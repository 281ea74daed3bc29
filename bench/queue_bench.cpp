// queue_bench: how fast the task queue hands out tasks (docs/benchmarks.md, "Task queue").
// A job program (run it with gridrun; bench/queue.sh does): the super-master puts --tasks
// tasks of --payload bytes, every process runs them (each spinning --work-us microseconds
// of CPU, 0: empty tasks) and returns an 8-byte result; rank 0 prints one JSON line: the
// time from the first put to the end of the queue at the super-master, tasks per second,
// and the messages the processes sent across the WAN through the relays meanwhile (summed,
// as the relays counted them), per task. "window" is --window as given (0: the queue's
// default, QueueOptions::worker_window).
//
//   queue_bench [--tasks N] [--levels cluster|site|single] [--bosses-idle] [--master-idle] [--window W]
//               [--payload BYTES] [--work-us U]
#include "common/program_help.h"
#include <gridrt/queue.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {
void spin_for(long us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {}
}
}  // namespace

const char* kUsage = R"(usage: queue_bench [--tasks N] [--levels cluster|site|single] [--bosses-idle] [--master-idle]
                   [--window W] [--payload BYTES] [--work-us U]
How fast gridrt's task queue hands out tasks. A job program: run it with gridrun (bench/queue.sh
does). The super-master puts N tasks of BYTES bytes (default 100000 of 8), every process runs
them (spinning U microseconds each, 0: empty tasks); rank 0 prints one JSON line: the time to
empty the queue, tasks per second, and the WAN messages per task the relays counted.
)";

int main(int argc, char** argv) {
  gridrt_help_if_asked(argc, argv, kUsage);
  gridrt::init(&argc, &argv);
  long tasks = 100000, payload = 8, work_us = 0;
  std::string levels = "cluster";
  gridrt::QueueOptions opts;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? std::atol(argv[++i]) : 0L; };
    if (a == "--tasks") tasks = value();
    else if (a == "--payload") payload = value();
    else if (a == "--work-us") work_us = value();
    else if (a == "--window") opts.worker_window = static_cast<int>(value());
    else if (a == "--bosses-idle") opts.bosses_work = false;
    else if (a == "--master-idle") opts.master_works = false;
    else if (a == "--levels" && i + 1 < argc) levels = argv[++i];
    else {
      std::fprintf(stderr, "queue_bench: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (levels == "single") {
    opts.levels = {};
  } else if (levels == "site") {
    opts.levels = {gridrt::Level::kSite, gridrt::Level::kCluster};
  } else if (levels != "cluster") {
    std::fprintf(stderr, "queue_bench: --levels takes cluster, site or single, not '%s'\n", levels.c_str());
    return 2;
  }
  const gridrt::Comm world = gridrt::Comm::world();
  double seconds = 0;
  long ran = 0;
  std::uint64_t wan[2] = {0, 0};
  {
    gridrt::TaskQueue q(world, opts);
    world.barrier();
    const gridrt::WanTraffic before = gridrt::wan_traffic();
    const auto t0 = std::chrono::steady_clock::now();
    if (q.is_master()) {
      const std::vector<char> body(static_cast<std::size_t>(payload), 'p');
      for (long t = 0; t < tasks; ++t) q.put(body.data(), body.size());
    }
    while (auto t = q.next()) {
      if (work_us > 0) spin_for(work_us);
      const std::uint64_t result = t->id;
      q.done(*t, &result, sizeof result);
      ++ran;
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const gridrt::WanTraffic after = gridrt::wan_traffic();
    wan[0] = after.messages - before.messages;
    wan[1] = after.bytes - before.bytes;
  }
  std::uint64_t total[2] = {0, 0};
  world.reduce(wan, total, 2, MPI_UINT64_T, MPI_SUM, 0);
  long ran_at_root = 0;
  world.reduce(&ran, &ran_at_root, 1, MPI_LONG, MPI_SUM, 0);
  if (gridrt::rank() == 0) {
    std::printf(
        "{\"levels\":\"%s\",\"procs\":%d,\"clusters\":%d,\"tasks\":%ld,\"ran\":%ld,\"bosses_work\":%s,\"master_works\":%s,\"window\":%d,"
        "\"payload\":%ld,\"work_us\":%ld,\"seconds\":%.4f,\"tasks_per_s\":%.0f,\"wan_msgs\":%llu,\"wan_bytes\":%llu,"
        "\"wan_msgs_per_task\":%.4f}\n",
        levels.c_str(), gridrt::size(), world.num_clusters(), tasks, ran_at_root, opts.bosses_work ? "true" : "false",
        opts.master_works ? "true" : "false", opts.worker_window, payload, work_us, seconds, static_cast<double>(tasks) / seconds,
        static_cast<unsigned long long>(total[0]), static_cast<unsigned long long>(total[1]),
        tasks ? static_cast<double>(total[0]) / static_cast<double>(tasks) : 0.0);
  }
  gridrt::finalize();
  return 0;
}
