// A gridrt application to start from: it reads where it landed in the grid, sums a value
// over the whole job with a hierarchical allreduce (each cluster sums inside itself first,
// then the clusters' sums cross the WAN once), and shares work out through a task queue
// with a boss per cluster. Build it with CMake (CMakeLists.txt) or make (Makefile) against
// an installed gridrt, then run it across the grid:
//
//   gridrun -n 4 ./app            the embedded grid on this machine (two clusters)
//   gridrun app.xml               the same job as a JobProfile
#include <gridrt/gridrt.hpp>
#include <gridrt/queue.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  gridrt::init(&argc, &argv);
  {
    const gridrt::Comm world = gridrt::Comm::world();
    std::printf("rank %d of %d: group %s, cluster %s, site %s\n", gridrt::rank(), gridrt::size(), gridrt::group_name().c_str(),
                gridrt::level_name(gridrt::Level::kCluster, gridrt::rank()).c_str(),
                gridrt::level_name(gridrt::Level::kSite, gridrt::rank()).c_str());

    long mine = gridrt::rank() + 1, total = 0;
    world.allreduce(&mine, &total, 1, MPI_LONG, MPI_SUM);
    if (world.rank() == 0) std::printf("sum of 1..%d over the grid: %ld\n", world.size(), total);

    // 100 tasks, each a number to square; the sum of the squares comes back to the master.
    gridrt::TaskQueue queue(world);
    long squares = 0;
    if (queue.is_master()) {
      queue.on_result([&](gridrt::TaskId, const char* data, std::size_t) { squares += *reinterpret_cast<const long*>(data); });
      for (long i = 1; i <= 100; ++i) queue.put(i);
    }
    while (auto task = queue.next()) {
      const long x = task->as<long>();
      const long square = x * x;
      queue.done(*task, &square, sizeof square);
    }
    if (queue.is_master()) std::printf("sum of the squares of 1..100, from the task queue: %ld\n", squares);
  }  // communicators and queues end before finalize
  gridrt::finalize();
  return 0;
}
