// The super-master's book of a multi-level task queue (docs/queues.md; Coti, Herault, Cappello 2009 §3.3): every
// task the job has, where it is — waiting, held by a holder below (a cluster's boss, or a
// worker of a single queue), or done — and so exactly-once results, requeueing what a lost
// holder held, and termination. Pure bookkeeping, no communication: the queue's protocol
// drives it, and tests drive it directly.
//
// Exactly once: a task is known by its id from the moment it is put. A second put of a known
// id (a task re-spawned by a parent that ran again after its holder was lost) is ignored; a
// result is taken only from the holder the task was given to, and only once; a result that
// comes late from a lost holder for a task handed out again is taken if the task is not done
// yet (the copy handed out again is then withdrawn), and ignored if it is.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gridrt::queue {

using TaskId = std::uint64_t;

struct Task {
  TaskId id = 0;
  std::vector<char> payload;
};

// The id of the k-th task spawned by task `parent`: the same every time the parent runs, so
// that a parent run again after its holder was lost re-spawns the same ids (splitmix64 of
// both: distinct ids collide with probability ~n^2 / 2^64).
TaskId child_id(TaskId parent, std::uint64_t k);
// The id of the k-th task rank `rank` puts outside any task.
TaskId root_id(int rank, std::uint64_t k);

class Ledger {
 public:
  // A holder loses its tasks more than `crash_limit` times: those tasks fail (HyperQueue's
  // crash limit), rather than taking down holder after holder.
  explicit Ledger(int crash_limit = 2) : crash_limit_(crash_limit) {}

  // A new task, waiting at the back. False if its id is known.
  bool put(Task t);
  // Up to `max_tasks` waiting tasks that fit in `max_bytes` (each its payload and
  // `item_cost`; the first one whatever its size), handed to `holder`.
  std::vector<Task> take(int holder, std::size_t max_tasks, std::size_t max_bytes, std::size_t item_cost = 0);

  enum class Result { kTaken, kDuplicate, kUnknown };
  // The result of task `id` came from `holder`: kTaken the first time it is done (from its
  // holder, or late from a lost one); kDuplicate once done; kUnknown if never put, or
  // from a holder that never had it (a protocol error, named by the caller).
  Result complete(int holder, TaskId id);

  // `holder` is gone: what it held waits again, at the front (it was handed out first), in
  // the order it was handed out. Returns how many; a task lost more than crash_limit times
  // fails instead (failed(); a late result for it is then ignored as a duplicate).
  std::size_t lose(int holder);

  // Producers that may still put tasks outside any task (each rank until it says it is
  // done putting); tasks spawned by tasks are put before their parent's result, so they
  // need no count.
  void add_producers(int n) { producers_ += n; }
  void producers_done(int n = 1) { producers_ -= n; }

  // Nothing waits, nothing is held, nobody can put more: the queue is finished.
  bool finished() const { return producers_ <= 0 && waiting_.empty() && held_count_ == 0; }

  std::size_t waiting() const { return waiting_.size(); }
  std::size_t held(int holder) const;
  std::size_t held_total() const { return held_count_; }
  std::size_t done() const { return done_.size(); }
  const std::vector<TaskId>& failed() const { return failed_; }

 private:
  struct Where {
    int holder = -1;  // -1: waiting
    int losses = 0;
    std::uint64_t handed = 0;  // when it was last handed out (the order to requeue in)
  };
  int crash_limit_;
  int producers_ = 0;
  std::uint64_t handed_ = 0;
  std::deque<Task> waiting_;
  std::unordered_map<TaskId, Where> open_;                             // waiting or held
  std::unordered_map<int, std::unordered_map<TaskId, Task>> holding_;  // holder -> its tasks
  std::unordered_map<TaskId, std::vector<int>> lost_by_;               // tasks lost holders had: which ones
  std::unordered_set<TaskId> done_;
  std::unordered_set<TaskId> failed_set_;
  std::size_t held_count_ = 0;
  std::vector<TaskId> failed_;
  void withdraw(TaskId id, const Where& w);
};

}  // namespace gridrt::queue
