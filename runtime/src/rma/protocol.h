// The messages of one-sided communication between the processes of a grid window, on the
// window's own context of the transport (message_transport.h, kOneSidedContext). Built on
// send and receive, as MPICH2 first built MPI-2's one-sided chapter (Thakur, Gropp, Toonen,
// "Optimizing the Synchronization Operations in MPI One-Sided Communication", 2005): the
// origin sends each operation at once; the target's engine (engine.h) applies it. A stream
// keeps its order, so an operation is applied after everything its origin sent the target
// before it, and a flush's, an unlock's or a completion's answer means that all of those
// were applied. Locks are taken lazily: the lock request goes ahead of the operations
// without waiting for its grant, and the target holds them back until it grants it, so that
// lock, get, unlock costs one round trip.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/wire.h"
#include "typemap.h"

namespace gridrt::rma {

enum class Message : std::uint8_t {
  kPut = 1,        // disp, map, data
  kGet,            // id, disp, map                 -> reply: the data
  kAccumulate,     // op, disp, map, data
  kGetAccumulate,  // id, op, disp, map, data       -> reply: the data before (also MPI_Fetch_and_op)
  kCompareSwap,    // id, disp, map (one element), compare, data -> reply: the element before
  kLock,           // exclusive (u8)
  kUnlock,         // id                            -> reply once released
  kFlush,          // id                            -> reply once everything before is applied
  kPost,           // (target to origin) the target exposes its window to the origin (PSCW)
  kComplete,       // (origin to target) the origin's access epoch ended (PSCW)
  kReply,          // id, error class (0: none), error text, data
  kFenceMark,      // fence number: everything this origin sent before in the fence's epoch is here
  kWake,           // (an origin of the target's node) it released the lock that requests wait for
};

// A request's target location: `disp` in the target's displacement units (a dynamic
// window's: an address at the target), where the map's displacements start.
struct Location {
  std::uint64_t disp = 0;
  TypeMap map;
};

std::string put_message(const Location& at, std::string_view data);
// Put's and accumulate's messages without their data, which the caller appends (`bytes` of
// it, packed straight into the message).
std::string put_head(const Location& at, std::size_t bytes);
std::string accumulate_head(Op op, const Location& at, std::size_t bytes);
std::string get_message(std::uint64_t id, const Location& at);
std::string accumulate_message(Op op, const Location& at, std::string_view data);
std::string get_accumulate_message(std::uint64_t id, Op op, const Location& at, std::string_view data);
std::string compare_swap_message(std::uint64_t id, const Location& at, std::string_view compare, std::string_view data);
std::string lock_message(bool exclusive);
std::string sync_message(Message kind, std::uint64_t id);  // kUnlock, kFlush
std::string signal_message(Message kind);                  // kPost, kComplete, kWake
std::string fence_mark_message(std::uint64_t fence);
std::string reply_message(std::uint64_t id, std::uint32_t error_class, std::string_view error, std::string_view data);

}  // namespace gridrt::rma
