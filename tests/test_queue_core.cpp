// The multi-level queue's bookkeeping (runtime/src/queue): exactly-once results under random
// interleavings of puts, hand-outs, results, duplicates and lost holders, checked against a
// plain model; requeueing order, crash limit, re-spawned children, termination; chunk sizes.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "queue/chunking.h"
#include "queue/ledger.h"
#include "queue/protocol.h"

using gridrt::queue::child_id;
using gridrt::queue::ChunkLimits;
using gridrt::queue::ChunkSizer;
using gridrt::queue::Ledger;
using gridrt::queue::root_id;
using gridrt::queue::Task;
using gridrt::queue::TaskId;

namespace {
Task task(TaskId id, std::size_t bytes = 1) { return Task{id, std::vector<char>(bytes, 'x')}; }
std::vector<TaskId> ids(const std::vector<Task>& ts) {
  std::vector<TaskId> out;
  for (const auto& t : ts) out.push_back(t.id);
  return out;
}
}  // namespace

TEST(Ledger, EveryTaskIsDoneExactlyOnceWhateverHappens) {
  for (unsigned seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed);
    Ledger ledger(/*crash_limit=*/1000);
    std::map<int, std::set<TaskId>> holds;  // the model: what each live holder holds
    std::map<TaskId, int> lost;             // tasks a lost holder had
    std::set<TaskId> put, taken;
    std::uint64_t next = 0;
    int next_holder = 0;
    std::vector<int> live{next_holder++, next_holder++, next_holder++};
    for (int step = 0; step < 400; ++step) {
      const int what = static_cast<int>(rng() % 10);
      if (what < 3) {
        const TaskId id = root_id(0, next++);
        ASSERT_TRUE(ledger.put(task(id)));
        put.insert(id);
        if (rng() % 4 == 0) {
          ASSERT_FALSE(ledger.put(task(id)));  // a second put of one id
        }
      } else if (what < 5) {
        const int h = live[rng() % live.size()];
        for (const Task& t : ledger.take(h, 1 + rng() % 4, 1 << 20)) holds[h].insert(t.id);
      } else if (what < 8) {
        const int h = live[rng() % live.size()];
        if (holds[h].empty()) continue;
        const TaskId id = *std::next(holds[h].begin(), static_cast<long>(rng() % holds[h].size()));
        holds[h].erase(id);
        const auto r = ledger.complete(h, id);
        if (taken.count(id)) {
          EXPECT_EQ(r, Ledger::Result::kDuplicate);
        } else {
          EXPECT_EQ(r, Ledger::Result::kTaken);
          taken.insert(id);
        }
        if (rng() % 5 == 0) { EXPECT_EQ(ledger.complete(h, id), Ledger::Result::kDuplicate); }
      } else if (what == 8 && live.size() > 1) {
        const std::size_t i = rng() % live.size();
        const int h = live[i];
        // What it holds and is not done yet waits again (a task done meanwhile from a late
        // result was withdrawn from it).
        std::size_t open = 0;
        for (TaskId id : holds[h]) {
          lost[id] = h;
          open += !taken.count(id);
        }
        EXPECT_EQ(ledger.lose(h), open);
        holds.erase(h);
        live.erase(live.begin() + static_cast<long>(i));
        live.push_back(next_holder++);
      } else if (!lost.empty()) {  // a late result from a lost holder
        const auto it = std::next(lost.begin(), static_cast<long>(rng() % lost.size()));
        const auto r = ledger.complete(it->second, it->first);
        EXPECT_EQ(r, taken.count(it->first) ? Ledger::Result::kDuplicate : Ledger::Result::kTaken) << "seed " << seed;
        taken.insert(it->first);
        lost.erase(it);
      }
    }
    // Drain: live holders finish what they hold, then take and finish the rest.
    for (int h : live) {
      for (TaskId id : holds[h]) {
        const auto r = ledger.complete(h, id);
        EXPECT_EQ(r, taken.count(id) ? Ledger::Result::kDuplicate : Ledger::Result::kTaken);
        taken.insert(id);
      }
    }
    for (std::vector<Task> got; !(got = ledger.take(live[0], 8, 1 << 20)).empty();)
      for (const Task& t : got) {
        EXPECT_EQ(ledger.complete(live[0], t.id), Ledger::Result::kTaken);
        EXPECT_TRUE(taken.insert(t.id).second) << "seed " << seed << ": task handed out after it was done";
      }
    EXPECT_EQ(taken, put) << "seed " << seed;
    EXPECT_EQ(ledger.done(), put.size());
    EXPECT_TRUE(ledger.finished()) << "seed " << seed;
  }
}

TEST(Ledger, ALostHoldersTasksWaitAgainFirstInTheOrderTheyWereHandedOut) {
  Ledger ledger;
  for (TaskId id : {50, 40, 30, 20, 10}) ledger.put(task(id));
  EXPECT_EQ(ids(ledger.take(7, 3, 1 << 20)), (std::vector<TaskId>{50, 40, 30}));
  EXPECT_EQ(ledger.lose(7), 3u);
  EXPECT_EQ(ledger.held_total(), 0u);
  EXPECT_EQ(ids(ledger.take(8, 10, 1 << 20)), (std::vector<TaskId>{50, 40, 30, 20, 10}));
  EXPECT_EQ(ledger.complete(7, 40), Ledger::Result::kTaken);       // late, from the lost holder
  EXPECT_EQ(ledger.complete(8, 40), Ledger::Result::kDuplicate);   // the copy handed out again
  EXPECT_EQ(ledger.complete(9, 50), Ledger::Result::kUnknown);     // from a holder that never had it
  EXPECT_EQ(ledger.complete(8, 12345), Ledger::Result::kUnknown);  // never put
}

TEST(Ledger, ATaskLostTooOftenFailsInsteadOfWaitingAgain) {
  Ledger ledger(/*crash_limit=*/1);
  ledger.put(task(1));
  ledger.take(0, 1, 1);
  EXPECT_EQ(ledger.lose(0), 1u);
  ledger.take(1, 1, 1);
  EXPECT_EQ(ledger.lose(1), 0u);
  EXPECT_EQ(ledger.failed(), std::vector<TaskId>{1});
  EXPECT_TRUE(ledger.finished());
  EXPECT_EQ(ledger.complete(1, 1), Ledger::Result::kDuplicate);
}

// A parent run again after its holder was lost spawns its children again, with the same ids:
// the second spawn is ignored, so each child runs once.
TEST(Ledger, ChildrenSpawnedAgainByAParentRunAgainAreIgnored) {
  Ledger ledger;
  const TaskId parent = root_id(0, 0);
  ledger.put(task(parent));
  ledger.take(0, 1, 1);
  EXPECT_TRUE(ledger.put(task(child_id(parent, 0))));
  EXPECT_TRUE(ledger.put(task(child_id(parent, 1))));
  ledger.lose(0);  // the parent's result never came
  EXPECT_EQ(ids(ledger.take(1, 1, 1)), std::vector<TaskId>{parent});
  EXPECT_FALSE(ledger.put(task(child_id(parent, 0))));
  EXPECT_FALSE(ledger.put(task(child_id(parent, 1))));
  EXPECT_TRUE(ledger.put(task(child_id(parent, 2))));  // a child it did not spawn the first time
  EXPECT_EQ(ledger.waiting(), 3u);
  // Ids of different parents and ranks do not collide (on a sample).
  std::set<TaskId> seen;
  for (TaskId p = 0; p < 100; ++p)
    for (std::uint64_t k = 0; k < 100; ++k) EXPECT_TRUE(seen.insert(child_id(p, k)).second);
  for (int r = 0; r < 100; ++r)
    for (std::uint64_t k = 0; k < 100; ++k) EXPECT_TRUE(seen.insert(root_id(r, k)).second);
}

TEST(Ledger, FinishedOnlyWhenNothingWaitsNothingIsHeldAndNobodyCanPut) {
  Ledger ledger;
  EXPECT_TRUE(ledger.finished());  // zero tasks, no producers
  ledger.add_producers(2);
  EXPECT_FALSE(ledger.finished());
  ledger.producers_done();
  ledger.put(task(1));
  ledger.producers_done();
  EXPECT_FALSE(ledger.finished());
  ledger.take(0, 1, 1);
  EXPECT_FALSE(ledger.finished());
  ledger.complete(0, 1);
  EXPECT_TRUE(ledger.finished());
}

TEST(Ledger, TakeKeepsToTheCountAndTheBytesButAlwaysGivesOne) {
  Ledger ledger;
  for (TaskId id = 1; id <= 5; ++id) ledger.put(task(id, 100));
  EXPECT_EQ(ledger.take(0, 10, 250).size(), 2u);
  EXPECT_EQ(ledger.take(0, 10, 10).size(), 1u);  // bigger than the bytes: one anyway
  EXPECT_EQ(ledger.take(0, 1, 1000).size(), 1u);
  EXPECT_EQ(ledger.take(0, 10, 230, 12).size(), 1u);  // 2 x (100 + 12) is over 230
  EXPECT_EQ(ledger.held(0), 5u);
  EXPECT_EQ(ledger.waiting(), 0u);
}

TEST(ChunkSizer, AFasterClusterAsksForMoreAndWhatItKeepsIsBounded) {
  ChunkSizer fast(ChunkLimits{8, 1, 1000, 0.25}), slow(ChunkLimits{8, 1, 1000, 0.25});
  EXPECT_EQ(fast.chunk(), 8u);  // rate not known yet
  for (int i = 0; i <= 10; ++i) {
    fast.completed(125, i * 0.125);  // 1000 tasks/s
    slow.completed(25, i * 0.125);   // 200 tasks/s
  }
  fast.round_trip(0.25);
  slow.round_trip(0.25);
  EXPECT_DOUBLE_EQ(fast.rate(), 1000);
  EXPECT_EQ(fast.chunk(), 500u);  // 1000 x (0.25 + 0.25)
  EXPECT_EQ(slow.chunk(), 100u);
  for (int i = 11; i <= 30; ++i) fast.completed(10000, i * 0.125);
  EXPECT_EQ(fast.chunk(), 1000u);  // bounded
}

TEST(ChunkSizer, AParentHandsEachChildAtMostItsShareSoTheLastTasksAreSpread) {
  EXPECT_EQ(gridrt::queue::fair_share(500, 10000, 2), 500u);  // plenty: what it asked for
  EXPECT_EQ(gridrt::queue::fair_share(500, 100, 2), 50u);     // its share of what is left
  EXPECT_EQ(gridrt::queue::fair_share(500, 101, 2), 51u);
  EXPECT_EQ(gridrt::queue::fair_share(500, 1, 4), 1u);  // the last one still goes
  EXPECT_EQ(gridrt::queue::fair_share(500, 0, 4), 0u);
  EXPECT_EQ(gridrt::queue::fair_share(3, 100, 0), 3u);
}

TEST(ChunkSizer, ABossAsksAheadWhenWhatIsLeftWouldNotOutlastARoundTrip) {
  // 1000 tasks/s for 20 ms: 20 tasks go during a round trip, and 4 workers ask now.
  EXPECT_FALSE(ChunkSizer::should_prefetch(25, 1000, 0.02, 4));
  EXPECT_TRUE(ChunkSizer::should_prefetch(24, 1000, 0.02, 4));
  EXPECT_TRUE(ChunkSizer::should_prefetch(0, 0, 0, 0));
}

// The queue's messages: what is encoded comes back, in order, payloads of any bytes (zeros
// included); anything cut short, lengthened or of the other direction is refused by name.
TEST(QueueProtocol, MessagesRoundTripAndGarbageIsRefused) {
  using namespace gridrt::queue;
  UpMessage up;
  up.producers_done = 3;
  up.want = 17;
  up.puts = {task(5, 0), Task{child_id(5, 0), {'\0', 'a', '\0'}}};
  up.results = {Result{9, {}}, Result{11, std::vector<char>(70000, '\x7f')}};
  const std::string u = encode(up);
  const UpMessage back = decode_up(u.data(), u.size());
  EXPECT_EQ(back.producers_done, 3u);
  EXPECT_EQ(back.want, 17u);
  ASSERT_EQ(back.puts.size(), 2u);
  EXPECT_EQ(back.puts[1].id, child_id(5, 0));
  EXPECT_EQ(back.puts[1].payload, (std::vector<char>{'\0', 'a', '\0'}));
  ASSERT_EQ(back.results.size(), 2u);
  EXPECT_EQ(back.results[0].id, 9u);
  EXPECT_EQ(back.results[1].data.size(), 70000u);

  DownMessage down;
  down.tasks = {task(1, 3), task(2, 0)};
  const std::string d = encode(down);
  EXPECT_EQ(ids(decode_down(d.data(), d.size()).tasks), (std::vector<TaskId>{1, 2}));
  const std::string f = encode(DownMessage{true, {}, {2, 5}});
  EXPECT_TRUE(decode_down(f.data(), f.size()).finish);
  EXPECT_EQ(decode_down(f.data(), f.size()).lost, (std::vector<std::uint32_t>{2, 5}));
  EXPECT_THROW(decode_down(f.data(), f.size() - 1), ProtocolError);

  for (std::size_t cut = 0; cut < u.size(); cut += 97) EXPECT_THROW(decode_up(u.data(), cut), ProtocolError) << cut;
  const std::string longer = u + "x";
  EXPECT_THROW(decode_up(longer.data(), longer.size()), ProtocolError);
  EXPECT_THROW(decode_down(u.data(), u.size()), ProtocolError);
  EXPECT_THROW(decode_up(d.data(), d.size()), ProtocolError);
  const std::string none = encode(DownMessage{});
  EXPECT_THROW(decode_down(none.data(), none.size()), ProtocolError);  // an answer of no task
  std::string huge_count = u;
  huge_count[9] = huge_count[10] = huge_count[11] = huge_count[12] = '\xff';  // puts: 4 billion
  try {
    decode_up(huge_count.data(), huge_count.size());
    ADD_FAILURE() << "a count the message cannot hold was taken";
  } catch (const ProtocolError& e) { EXPECT_NE(std::string(e.what()).find("puts"), std::string::npos) << e.what(); }
}
