#include "shared_lock.h"

#include <sched.h>

namespace gridrt::rma {

// Spins this many times before yielding: a holder on another core releases within a copy of
// the window's memory; one on this core (2-core machines run more processes than cores)
// needs the core back.
constexpr int kSpinsBeforeYield = 64;

SpinGuard::SpinGuard(SharedLock& lock) : lock_(lock) {
  for (int spins = 0;; ++spins) {
    if (lock_.busy.load(std::memory_order_relaxed) == 0 && lock_.busy.exchange(1, std::memory_order_acquire) == 0) return;
    if (spins >= kSpinsBeforeYield) sched_yield();
  }
}

SpinGuard::~SpinGuard() { lock_.busy.store(0, std::memory_order_release); }

bool try_lock_here(SharedLock& l, bool exclusive, std::int32_t who) {
  SpinGuard guard(l);
  if (l.queued > 0 || !lock_free(l, exclusive)) return false;
  take_lock(l, exclusive, who);
  return true;
}

}  // namespace gridrt::rma
