// The messages of the multi-level task queue (docs/queues.md, "Protocol"): what a child (a
// boss or a worker) sends its parent, and what a parent answers. Pure encoding, no
// communication; every message fits in the queue's max_message bytes, which the receiver's
// buffers hold.
//
// Order matters and is kept by the path (one parent per child, messages in order): a child
// sends the tasks it spawned (puts) before, or with, the result of the task that spawned
// them, and the parent takes puts before results, so a parent's result never overtakes its
// children (the ledger, and so termination, always knows them first).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ledger.h"

namespace gridrt::queue {

struct Result {
  TaskId id = 0;
  std::vector<char> data;
};

// Child -> parent.
struct UpMessage {
  std::uint32_t producers_done = 0;  // processes below that will put no more tasks outside tasks
  std::uint32_t want = 0;            // tasks asked for (0: none; at most one request outstanding)
  std::vector<Task> puts;            // new tasks, in the order they were put
  std::vector<Result> results;       // in the order the tasks were done
  bool empty() const { return producers_done == 0 && want == 0 && puts.empty() && results.empty(); }
};

// Parent -> child: tasks answering a request (at least one), or the end of the queue with
// the clusters the super-master lost meanwhile (their topology indices), so that every
// process ends knowing the same ones.
struct DownMessage {
  bool finish = false;
  std::vector<Task> tasks;
  std::vector<std::uint32_t> lost;
};

struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Bytes an item costs in a message beyond its payload (id and length).
inline constexpr std::size_t kItemCost = 12;
// Bytes of a message's fixed part.
inline constexpr std::size_t kHeaderCost = 24;

std::string encode(const UpMessage& m);
std::string encode(const DownMessage& m);
// Throw ProtocolError naming what is wrong on a truncated or malformed message.
UpMessage decode_up(const char* data, std::size_t n);
DownMessage decode_down(const char* data, std::size_t n);

}  // namespace gridrt::queue
