// Waiting and progress (docs/architecture.md, "Threads and waiting").
//
// MPICH busy-polls inside blocking calls, which on an oversubscribed node slows everything
// by 100x or more; testing non-blocking requests and yielding the CPU between tests does not.
// So every wait in gridrt tests what it waits for, then pauses as GRIDRT_WAIT says, or,
// when only the transport can finish it, sleeps until the transport reports activity.
//
// Some work moves only when somebody polls it: non-blocking collectives in flight, and
// channels holding back wildcard receives. It registers here as Pollable, and every wait in
// the process (the runtime's and the MPI layer's, whatever it waits for) polls all of it
// once per turn: MPI's progress rule (MPI 4.0 §2.9, §6.12: a started operation completes
// while the process is in any MPI call) without a progress thread, which MPICH would allow
// only at MPI_THREAD_MULTIPLE.
#pragma once

#include <chrono>
#include <cstdint>

namespace gridrt::detail {

class MessageTransport;

enum class WaitPolicy { kSpin, kYield, kSleep };
extern WaitPolicy wait_policy;  // GRIDRT_WAIT, read at init

// What the wait policy does between two tests of one wait. Under `yield`, a wait that has
// yielded for kYieldFor without its request completing backs off to short sleeps (20 µs
// doubling to 200 µs): a process waiting for data that must first cross the relays would
// otherwise keep taking the CPU from the relays and the processes that carry it (on this
// 2-core machine a grid barrier took 5.7 ms with pure yielding), while a wait inside a
// cluster mostly ends within it (docs/benchmarks.md, "Waiting").
//
// A wait whose end is not near (a task queue's server waiting for its workers' next
// requests, which come a task's duration apart) yields for less and sleeps longer: its
// yielding would take the CPU from the very processes it waits for.
class Pause {
 public:
  static constexpr std::chrono::microseconds kYieldFor{500};
  Pause() = default;
  Pause(std::chrono::microseconds yield_for, int max_sleep_us) : yield_for_(yield_for), max_sleep_us_(max_sleep_us) {}
  void operator()();

 private:
  const std::chrono::steady_clock::time_point since_ = std::chrono::steady_clock::now();  // the wait began
  const std::chrono::microseconds yield_for_ = kYieldFor;
  const int max_sleep_us_ = 200;
  int sleep_us_ = 20;
};

class Pollable {
 public:
  virtual ~Pollable() = default;
  // Moves it on as far as it can go now; true once it needs no more polling (it is then
  // dropped from the registry).
  virtual bool poll() = 0;
  // Whether what it waits for needs MPI to be polled (else the transport wakes its waiters).
  virtual bool needs_mpi() const = 0;
};

namespace progress {
void add(Pollable* p);  // (once; a Pollable removes itself before it goes)
void remove(Pollable* p);
bool poll_all();   // one pass over everything registered; true if anything moved
bool needs_mpi();  // something registered waits on MPI
bool idle();       // nothing registered
// For in-process tests that run several ranks as threads: each thread its own registry.
void one_registry_per_thread();
}  // namespace progress

// What one test of a wait found: done, or what waiting on needs.
struct Waited {
  bool done = false;
  bool mpi = false;  // MPI must be polled (else only the transport can finish it)
};

// Waits under the wait policy until test() says done, polling the registry each turn.
// When neither the test nor the registry needs MPI, it sleeps on `transport`'s activity
// instead (waking now and then to let MPI move what the application left pending).
template <typename Test> void wait_until(MessageTransport* transport, Test test);

// Sleeps until `transport` reports activity after `seen`, or a millisecond has gone by,
// then lets MPI move (a standard send of the application's into this cluster may need this
// process's MPI calls to go on while it waits for another cluster).
void sleep_on(MessageTransport* transport, std::uint64_t seen);
std::uint64_t activity_of(MessageTransport* transport);

template <typename Test> void wait_until(MessageTransport* transport, Test test) {
  Pause pause;
  for (;;) {
    const std::uint64_t seen = activity_of(transport);  // before testing: no wake-up is missed
    progress::poll_all();
    const Waited w = test();
    if (w.done) return;
    if (w.mpi || progress::needs_mpi() || !transport) pause();
    else sleep_on(transport, seen);
  }
}

}  // namespace gridrt::detail
