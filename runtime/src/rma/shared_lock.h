// A target's passive-target lock as every process of its node sees it: a word in memory the
// node's processes share (node_segment.h), under a spin lock that also guards the window's
// memory. The origins of the target's node take and release the lock here themselves, and
// read and write the target's memory under the spin lock, without the target (MPI's
// passive-target progress) and without a message: what MPICH's own window does inside one
// node, at memory speed. Origins elsewhere ask the target's engine (engine.h), which takes
// and releases the lock here for them on the target's I/O thread, under the same spin lock:
// an exclusive lock excludes the origins of both paths, and accumulate-type operations on an
// element are atomic whichever path they come by (MPI 4.0 §12.7.1).
//
// Fairness between the paths: the engine queues its origins' requests when the lock is taken;
// while any waits there, the node's origins take no new lock (they wait too), so a stream of
// local holders cannot starve a remote one; a local origin releasing the lock with requests
// queued wakes the engine (a message), which grants them in turn.
#pragma once

#include <atomic>
#include <cstdint>

namespace gridrt::rma {

struct SharedLock {
  std::atomic<std::uint32_t> busy{0};  // the spin lock: guards what follows and the window's memory
  std::int32_t exclusive = -1;         // the process (global rank) holding it exclusively, or -1
  std::int32_t shared = 0;             // holders of the shared lock, counted with multiplicity
  std::int32_t queued = 0;             // requests the target's engine holds, waiting for it
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "a spin lock in memory shared between processes");

// Holds `lock`'s spin lock for its lifetime (spinning a little, then yielding the core: the
// holder may be a process that waits for this core).
class SpinGuard {
 public:
  explicit SpinGuard(SharedLock& lock);
  ~SpinGuard();
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;

 private:
  SharedLock& lock_;
};

// With the spin lock held: whether the lock can go to a new holder (`exclusive` or shared)
// now, and taking it for `who`; releasing `who`'s hold (the engine must then be woken when
// requests are queued: the return value).
inline bool lock_free(const SharedLock& l, bool exclusive) { return l.exclusive < 0 && (!exclusive || l.shared == 0); }
inline void take_lock(SharedLock& l, bool exclusive, std::int32_t who) {
  if (exclusive) l.exclusive = who;
  else ++l.shared;
}
inline bool release_lock(SharedLock& l, std::int32_t who) {
  if (l.exclusive == who) l.exclusive = -1;
  else if (l.shared > 0) --l.shared;
  return l.queued > 0;
}

// A node origin's attempt: takes the lock for `who` if it is free and nothing waits for it at
// the engine (taking the spin lock itself).
bool try_lock_here(SharedLock& l, bool exclusive, std::int32_t who);

}  // namespace gridrt::rma
