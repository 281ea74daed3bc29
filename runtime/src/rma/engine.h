// The one-sided engine of one process: for each grid window it holds the memory this process
// exposes and applies what origins send to it (puts, gets, accumulates, locks, flushes), and
// it collects the answers to what this process sent as an origin. Messages come from the
// transport's I/O thread (deliver), while the application's thread computes or waits
// anywhere: a passive-target operation completes without the target's help (MPI's progress
// rule for passive target, which ARMCI-MPI and coarray programs count on). An operation on
// this process's own window is delivered the same way, from the application's thread.
//
// Everything a window's memory sees from origins is applied here under one lock, in the
// order each origin sent it: accumulate-type operations on an element are atomic with
// respect to each other, from whichever cluster they come (MPI 4.0 §12.7.1), and those of
// one origin to one location keep their order (the default accumulate_ordering).
//
// No MPI here: pure, so that in-process tests drive several engines directly.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "protocol.h"
#include "shared_lock.h"

namespace gridrt::rma {

// MPI's error classes the target reports (numbers as MPICH's mpi.h; the engine needs no MPI).
struct ErrorClass {
  static constexpr std::uint32_t kRange = 55;   // MPI_ERR_RMA_RANGE
  static constexpr std::uint32_t kOp = 9;       // MPI_ERR_OP
  static constexpr std::uint32_t kWin = 45;     // MPI_ERR_WIN
  static constexpr std::uint32_t kIntern = 16;  // MPI_ERR_INTERN
};

struct Reply {
  bool arrived = false;
  std::uint32_t error_class = 0;  // 0: none
  std::string error, data;
};

class Engine {
 public:
  // Sends a message of window `window` to process `dst` (never called for this process's
  // own messages, which the engine delivers itself; never called with the engine's lock held).
  using Send = std::function<void(std::int32_t dst, std::uint32_t window, std::string body)>;
  Engine(std::int32_t me, Send send);

  // ---- the target side: this process's part of a window
  // Exposes `size` bytes at `base` for window `window`, displacements in `disp_unit` bytes;
  // a dynamic window exposes what is attached to it (addresses as displacements). Its
  // passive-target lock is `shared` where the processes of this node share it (shared_lock.h),
  // else the engine's own.
  void expose(std::uint32_t window, char* base, std::uint64_t size, std::uint32_t disp_unit, bool dynamic, SharedLock* shared = nullptr);
  // The window's lock (the engine's own or the shared one), for this process's own operations
  // on its window, which it applies in place as an origin of its node does; null for no window.
  SharedLock* lock_of(std::uint32_t window);
  void attach(std::uint32_t window, char* base, std::uint64_t size);
  bool detach(std::uint32_t window, const char* base);  // false if nothing is attached there
  void withdraw(std::uint32_t window);

  // A message of `window` from process `src`, through the transport or from this process.
  void deliver(std::int32_t src, std::uint32_t window, std::string_view body);
  // One fragment of such a message (`total` bytes in all), in the order the origin sent it.
  // A large put to a contiguous target is written to the window as its fragments come (once
  // its head is in and it may be applied now: its origin waits for no lock here); anything
  // else is applied once whole.
  void deliver_part(std::int32_t src, std::uint32_t window, std::string_view part, std::uint64_t total, bool first, bool last);
  // Processes that will send nothing more (a lost cluster's): the locks they hold go on to
  // those waiting, their own requests waiting for a lock are dropped with what waited behind.
  void forget(const std::function<bool(std::int32_t)>& gone);

  // ---- the origin side
  std::uint64_t next_id();
  // Sends `body` to `dst` (delivered here at once when dst is this process).
  void send(std::int32_t dst, std::uint32_t window, std::string body);
  // The reply to request `id` once it came (then forgotten), or nothing yet. (A waiter
  // waits on the transport's activity, which the transport bumps after every message it
  // hands the engine.)
  bool take_reply(std::uint64_t id, Reply* out);
  // Whether this process holds the lock it asked `window`'s target `target` for (for its own
  // window: a lock on itself must be held before the application touches the memory).
  bool holds_lock(std::uint32_t window, std::int32_t holder);
  // PSCW: takes one post of `target` to this origin / one completion of `origin` at this
  // target, if it came.
  bool take_post(std::uint32_t window, std::int32_t target);
  bool take_complete(std::uint32_t window, std::int32_t origin);
  // Fence `fence`: whether `expected` origins' marks of it came (then forgotten).
  bool take_marks(std::uint32_t window, std::uint64_t fence, int expected);
  // The engine's lock, for MPI_Win_sync: memory written by the I/O thread before it
  // is visible to the caller after, and the caller's to the engine.
  void synchronize();

 private:
  // The engine's side of the lock: who holds it is in the SharedLock (which the node's
  // origins take and release themselves); here the shared holds the engine granted, by
  // origin, and the requests waiting with what their origins sent meanwhile.
  struct Lock {
    std::map<std::int32_t, int> shared;  // origins it granted the lock shared (and how many times)
    struct Waiting {
      std::int32_t origin;
      bool exclusive;
    };
    std::deque<Waiting> waiting;
    std::map<std::int32_t, std::deque<std::string>> held_back;  // messages of origins waiting for it
  };
  struct Exposed {
    char* base = nullptr;
    std::uint64_t size = 0;
    std::uint32_t disp_unit = 1;
    bool dynamic = false;
    std::map<const char*, std::uint64_t> attached;  // a dynamic window's regions
    Lock lock;
    SharedLock own;                                                        // the lock, where the node's processes do not share it
    SharedLock* word = &own;                                               // the lock and the spin lock over the memory
    std::map<std::int32_t, std::pair<std::uint32_t, std::string>> errors;  // an origin's first since its last sync
    std::map<std::int32_t, int> completes;                                 // PSCW completions per origin, not yet waited for
    std::map<std::int32_t, int> posts;                                     // PSCW posts per target, not yet started on
    std::map<std::uint64_t, int> marks;                                    // fence marks per fence number, not yet waited for
  };
  struct Out {
    std::int32_t dst;
    std::uint32_t window;
    std::string body;
  };

  // A message of one origin on one window on its way in fragments.
  struct Incoming {
    std::string bytes;  // what came so far (without a streamed put's data)
    std::uint64_t total = 0;
    bool decided = false;    // whether it streams is known
    char* to = nullptr;      // streaming: where the put's next byte goes
    std::uint64_t left = 0;  // streaming: the put's bytes still to come
  };
  void begin_streaming(std::int32_t src, std::uint32_t window, Incoming& in);

  void apply(std::int32_t src, std::uint32_t window, std::string_view body, std::vector<Out>& out);
  void apply_to(Exposed& w, std::int32_t src, std::uint32_t window, std::string_view body, std::vector<Out>& out);
  // The memory a request addresses, or null with the error recorded (and answered, with id).
  char* locate(Exposed& w, const Location& at, std::string* why);
  void grant_waiting(Exposed& w, std::uint32_t window, std::vector<Out>& out);
  void flush_out(std::vector<Out>& out);

  const std::int32_t me_;
  Send send_;
  std::mutex mu_;
  std::map<std::uint32_t, Exposed> windows_;
  std::map<std::uint64_t, Reply> replies_;
  std::map<std::pair<std::int32_t, std::uint32_t>, Incoming> incoming_;
  std::uint64_t next_id_ = 1;
};

}  // namespace gridrt::rma
