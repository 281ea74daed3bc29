#include "progress.h"

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "transport/message_transport.h"

namespace gridrt::detail {

WaitPolicy wait_policy = WaitPolicy::kYield;

void Pause::operator()() {
  switch (wait_policy) {
    case WaitPolicy::kSpin: break;
    case WaitPolicy::kYield:
      if (std::chrono::steady_clock::now() - since_ < yield_for_) {
        sched_yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
        sleep_us_ = std::min(sleep_us_ * 2, max_sleep_us_);
      }
      break;
    case WaitPolicy::kSleep: std::this_thread::sleep_for(std::chrono::microseconds(50)); break;
  }
}

namespace progress {
namespace {
// One for the process (MPI_THREAD_SERIALIZED lets several threads call in turn), or one per
// thread for the in-process tests, which run several ranks in one process.
// Never destroyed: a process that exits without finalize destroys the runtime's state from
// its static destructors, whose pollables then leave this registry, which must still be
// there whatever the order of destruction.
std::vector<Pollable*>& process_wide() {
  static auto* registered = new std::vector<Pollable*>;
  return *registered;
}
thread_local std::vector<Pollable*> this_thread;
bool per_thread = false;
std::vector<Pollable*>& registry() { return per_thread ? this_thread : process_wide(); }
}  // namespace

void one_registry_per_thread() { per_thread = true; }

void add(Pollable* p) {
  auto& registered = registry();
  if (std::find(registered.begin(), registered.end(), p) == registered.end()) registered.push_back(p);
}

void remove(Pollable* p) {
  auto& registered = registry();
  auto it = std::find(registered.begin(), registered.end(), p);
  if (it != registered.end()) *it = nullptr;  // (a pass may be under way: compacted after it)
}

bool poll_all() {
  auto& registered = registry();
  if (registered.empty()) return false;
  bool moved = false;
  // A poll may register more or remove any: indices, not iterators, and the size re-read.
  for (std::size_t i = 0; i < registered.size(); ++i) {
    Pollable* p = registered[i];
    if (!p) continue;
    if (p->poll()) {
      moved = true;
      if (i < registered.size() && registered[i] == p) registered[i] = nullptr;
    }
  }
  registered.erase(std::remove(registered.begin(), registered.end(), nullptr), registered.end());
  return moved;
}

bool needs_mpi() {
  const auto& registered = registry();
  return std::any_of(registered.begin(), registered.end(), [](const Pollable* p) { return p && p->needs_mpi(); });
}

bool idle() {
  const auto& registered = registry();
  return std::none_of(registered.begin(), registered.end(), [](const Pollable* p) { return p != nullptr; });
}
}  // namespace progress

std::uint64_t activity_of(MessageTransport* transport) { return transport ? transport->activity() : 0; }

void sleep_on(MessageTransport* transport, std::uint64_t seen) {
  transport->await_activity(seen, std::chrono::milliseconds(1));
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);  // MPICH's progress engine turns
}

}  // namespace gridrt::detail
