// A multi-level master-boss-worker task queue whose roles come from the topology (Coti,
// Herault, Cappello, "MPI Applications on Grids: a Topology-Aware Approach", 2009, §3.3,
// Figure 4; docs/queues.md).
//
//   gridrt::TaskQueue q(gridrt::Comm::world());          // collective: every member
//   if (q.is_master()) {
//     q.on_result([](gridrt::TaskId id, const char* data, std::size_t n) { ... });
//     for (...) q.put(&job, sizeof job);                  // or any rank, before its next()
//   }
//   while (auto t = q.next()) {                            // every member, until it is empty
//     ... compute, q.put() here spawns tasks ...
//     q.done(*t, &result, sizeof result);
//   }
//
// The super-master (member `root`) holds the queue; with the default levels {kCluster} each
// cluster's boss (the root in its own cluster, the first member elsewhere) fetches chunks of
// tasks from it, prefetching the next before it runs dry, and serves the workers of its
// cluster, who talk only to it: the WAN carries few, large transfers. Bosses and the
// super-master also run tasks (`bosses_work`, `master_works`). levels {} is the classic single queue: every
// worker asks the super-master itself, across the WAN if it is elsewhere.
//
// Every task's result reaches the super-master's handler exactly once. If a cluster's part
// of the job is lost (a JobProfile that lets the job go on without it), what its boss held
// is handed out again and the job finishes on the others, every process then knowing the
// lost clusters (gridrt::lost_clusters()); otherwise the loss is an Error naming the cluster.
//
// Single-threaded: the queue moves only inside put(), next(), done() and poll(). A boss or
// super-master that runs long tasks should call poll() now and then during them, or its
// workers wait for it (they hold `worker_window` tasks to bridge shorter ones).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "gridrt/gridrt.hpp"

namespace gridrt {

using TaskId = std::uint64_t;

struct Task {
  TaskId id = 0;
  std::vector<char> payload;
  // The payload as one T (put with put(const T&)); ArgumentError if the sizes differ.
  template <typename T> T as() const {
    static_assert(std::is_trivially_copyable_v<T>, "Task::as needs a trivially copyable type");
    if (payload.size() != sizeof(T))
      throw ArgumentError("gridrt: task " + std::to_string(id) + " has " + std::to_string(payload.size()) + " bytes, not " +
                          std::to_string(sizeof(T)));
    T v;
    std::memcpy(&v, payload.data(), sizeof v);
    return v;
  }
};

struct QueueOptions {
  // The levels below the super-master that get a boss, outermost first: {kCluster} a boss
  // per cluster (default); {kSite, kCluster} also one per site; {} one queue for the whole
  // grid (the classic master-worker).
  std::vector<Level> levels = {Level::kCluster};
  int root = 0;                       // the super-master, a member of the communicator
  bool bosses_work = true;            // bosses run tasks too
  bool master_works = true;           // the super-master runs tasks too
  int worker_window = 0;              // tasks a worker holds (the one running and the next); 0: 2
                                      // under a boss, 1 in a single queue (the classic)
  std::size_t max_message = 1 << 20;  // bytes of one queue message (bounds a chunk's payloads)
  std::size_t first_chunk = 8;        // tasks a boss asks for before it knows its rate
  std::size_t max_chunk = 4096;       // most tasks a boss holds (its memory)
  double horizon_s = 0.25;            // a chunk lasts this long beyond the round trip
  int crash_limit = 2;                // a task lost with this many clusters more fails
  bool requeue_lost = true;           // a lost cluster's tasks go to the others (else Error)
};

struct QueueStats {
  std::uint64_t run = 0;         // tasks this process ran
  std::uint64_t put = 0;         // tasks this process put
  std::uint64_t sent_up = 0;     // messages to its parent
  std::uint64_t sent_down = 0;   // messages to its children
  std::uint64_t results = 0;     // at the super-master: results taken (once per task)
  std::uint64_t duplicates = 0;  // at the super-master: results ignored as duplicates
  std::uint64_t requeued = 0;    // tasks handed out again after a lost cluster (super-master, site bosses)
};

namespace detail {
class QueueNode;
}

class TaskQueue {
 public:
  using ResultHandler = std::function<void(TaskId id, const char* data, std::size_t bytes)>;

  // Collective over `comm`.
  explicit TaskQueue(const Comm& comm, QueueOptions options = {});
  ~TaskQueue();
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  bool is_master() const;
  bool is_boss() const;  // serves workers below it (the super-master too, when it has any)
  // At the super-master: called once per task with its result, as results arrive.
  void on_result(ResultHandler handler);

  // A new task. Inside a task (between next() and done()) it is that task's child; outside
  // one, only before this process's first next(). Returns its id.
  TaskId put(const void* data, std::size_t bytes);
  template <typename T> TaskId put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>, "TaskQueue::put(T) needs a trivially copyable type");
    return put(&value, sizeof value);
  }
  // The next task for this process, or nothing once every task of the job is done.
  std::optional<Task> next();
  // The result of the task `next()` gave last (at most max_message bytes).
  void done(const Task& task, const void* result = nullptr, std::size_t bytes = 0);
  // Serves the others (workers below, the level above) without taking a task.
  void poll();

  QueueStats stats() const;

 private:
  std::unique_ptr<detail::QueueNode> node_;
};

}  // namespace gridrt
