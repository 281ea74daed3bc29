// The one-sided engine (runtime/src/rma) in one process: several engines, each a "rank",
// deliver to each other directly, from as many threads as there are origins, as the
// transport's I/O threads and the application's threads do across clusters.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <thread>

#include "rma/engine.h"

namespace gridrt::rma {
namespace {

Kind int64_kind() {
  Kind k;
  k.category = Category::kSigned;
  k.size = k.extent = 8;
  return k;
}

constexpr std::uint32_t kWindow = 7;

// Engines 0..n-1, each delivering straight into the others.
struct Ranks {
  std::int64_t own_cell = 0;  // (before the engines: it outlives them)
  std::vector<std::unique_ptr<Engine>> engines;
  explicit Ranks(int n) {
    for (int r = 0; r < n; ++r)
      engines.push_back(std::make_unique<Engine>(r, [this, r](std::int32_t dst, std::uint32_t window, std::string body) {
        engines[static_cast<std::size_t>(dst)]->deliver(r, window, body);
      }));
  }
  Engine& operator[](int r) { return *engines[static_cast<std::size_t>(r)]; }
  // Rank 0 exposes one int64 `cell` (under `word` where the node shares its lock), the
  // others nothing.
  void expose_cell(std::int64_t& cell, SharedLock* word = nullptr) {
    (*this)[0].expose(kWindow, reinterpret_cast<char*>(&cell), sizeof cell, 8, false, word);
    for (std::size_t r = 1; r < engines.size(); ++r) engines[r]->expose(kWindow, nullptr, 0, 1, false);
  }
  // The same for a cell of its own holding `value`, which lives as long as these ranks.
  std::int64_t& expose_new_cell(std::int64_t value) {
    own_cell = value;
    expose_cell(own_cell);
    return own_cell;
  }
  void send(int from, int to, std::uint32_t window, std::string body) { (*this)[from].send(to, window, std::move(body)); }
  // Sends a flush and returns its answer.
  Reply flush(int from, int to, std::uint32_t window) {
    const std::uint64_t id = (*this)[from].next_id();
    send(from, to, window, sync_message(Message::kFlush, id));
    Reply r;
    EXPECT_TRUE((*this)[from].take_reply(id, &r));
    return r;
  }
};

std::string bytes_of(std::int64_t v) { return std::string(reinterpret_cast<const char*>(&v), sizeof v); }

TEST(RmaEngine, AccumulatesOnOneElementFromEveryOriginAtOnceLoseNothing) {
  Ranks ranks(5);
  std::int64_t& cell = ranks.expose_new_cell(0);
  const Location at{0, TypeMap(int64_kind(), 1)};
  std::vector<std::thread> origins;
  for (int r = 0; r < 5; ++r)  // (rank 0 accumulates on its own memory too, as a local origin)
    origins.emplace_back([&, r] {
      for (int i = 0; i < 2000; ++i) ranks.send(r, 0, kWindow, accumulate_message(Op::kSum, at, bytes_of(1)));
    });
  for (auto& t : origins) t.join();
  EXPECT_EQ(cell, 5 * 2000);
}

TEST(RmaEngine, AnExclusiveLockHoldsBackAnotherOriginsOperationsUntilItIsReleased) {
  Ranks ranks(3);
  std::int64_t& cell = ranks.expose_new_cell(1);
  const Location at{0, TypeMap(int64_kind(), 1)};
  ranks.send(1, 0, kWindow, lock_message(true));
  EXPECT_TRUE(ranks[0].holds_lock(kWindow, 1));
  // Rank 2 asks too and goes on at once (lazily): its put and its unlock wait at the target.
  ranks.send(2, 0, kWindow, lock_message(true));
  ranks.send(2, 0, kWindow, put_message(at, bytes_of(22)));
  const std::uint64_t unlock2 = ranks[2].next_id();
  ranks.send(2, 0, kWindow, sync_message(Message::kUnlock, unlock2));
  EXPECT_EQ(cell, 1);
  Reply r;
  EXPECT_FALSE(ranks[2].take_reply(unlock2, &r));
  ranks.send(1, 0, kWindow, put_message(at, bytes_of(11)));
  EXPECT_EQ(cell, 11);
  const std::uint64_t unlock1 = ranks[1].next_id();
  ranks.send(1, 0, kWindow, sync_message(Message::kUnlock, unlock1));
  // Released: rank 2's lock, put and unlock run now, in their order.
  EXPECT_TRUE(ranks[1].take_reply(unlock1, &r));
  EXPECT_EQ(cell, 22);
  EXPECT_TRUE(ranks[2].take_reply(unlock2, &r));
  EXPECT_EQ(r.error_class, 0u);
  EXPECT_FALSE(ranks[0].holds_lock(kWindow, 2));
}

// The origins of the target's node take its lock and touch its memory in place
// (shared_lock.h); the engine takes and releases the same lock for the others.
TEST(RmaEngine, TheNodesOriginsAndTheEnginesShareOneLockAndNeitherStarvesTheOther) {
  Ranks ranks(3);
  SharedLock word;
  std::int64_t cell = 1;
  ranks.expose_cell(cell, &word);
  EXPECT_EQ(ranks[0].lock_of(kWindow), &word);
  const Location at{0, TypeMap(int64_kind(), 1)};
  // Node origin 5 holds it exclusively: rank 1's lock request and put wait at the engine,
  // and while they wait no node origin takes it, not even shared.
  ASSERT_TRUE(try_lock_here(word, true, 5));
  ranks.send(1, 0, kWindow, lock_message(false));
  ranks.send(1, 0, kWindow, put_message(at, bytes_of(11)));
  EXPECT_EQ(cell, 1);
  EXPECT_EQ(word.queued, 1);
  EXPECT_FALSE(try_lock_here(word, false, 6));
  // Released: the engine must be woken (a message), and then grants it.
  bool wake = false;
  {
    SpinGuard guard(word);
    wake = release_lock(word, 5);
  }
  EXPECT_TRUE(wake);
  EXPECT_EQ(cell, 1);
  ranks.send(2, 0, kWindow, signal_message(Message::kWake));  // (any process may wake it: harmless)
  EXPECT_EQ(cell, 11);
  EXPECT_TRUE(ranks[0].holds_lock(kWindow, 1));
  EXPECT_EQ(word.shared, 1);
  EXPECT_EQ(word.queued, 0);
  // Shared with rank 1: a node origin's shared lock goes with it, an exclusive one does not.
  EXPECT_TRUE(try_lock_here(word, false, 6));
  EXPECT_FALSE(try_lock_here(word, true, 7));
  {
    SpinGuard guard(word);
    EXPECT_FALSE(release_lock(word, 6));
  }
  const std::uint64_t unlock = ranks[1].next_id();
  ranks.send(1, 0, kWindow, sync_message(Message::kUnlock, unlock));
  EXPECT_EQ(word.shared, 0);
  EXPECT_TRUE(try_lock_here(word, true, 7));
  // A lost origin's hold is forgotten from the shared word too.
  ranks.send(2, 0, kWindow, lock_message(true));
  EXPECT_EQ(word.queued, 1);
  ranks[0].forget([](std::int32_t r) { return r == 2; });
  EXPECT_EQ(word.queued, 0);
  EXPECT_EQ(word.exclusive, 7);
}

// Node origins accumulating in place and origins elsewhere through the engine, at once, on
// one element: none is lost (the spin lock makes each atomic against the other path).
TEST(RmaEngine, AccumulatesInPlaceAndThroughTheEngineOnOneElementLoseNothing) {
  Ranks ranks(3);
  SharedLock word;
  std::int64_t cell = 0;
  ranks.expose_cell(cell, &word);
  const TypeMap map(int64_kind(), 1);
  const Location at{0, map};
  const std::string one = bytes_of(1);
  std::vector<std::thread> origins;
  for (int r = 1; r < 3; ++r)
    origins.emplace_back([&, r] {
      for (int i = 0; i < 5000; ++i) ranks.send(r, 0, kWindow, accumulate_message(Op::kSum, at, one));
    });
  for (int t = 0; t < 2; ++t)
    origins.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) {
        SpinGuard guard(word);
        map.accumulate(Op::kSum, one.data(), reinterpret_cast<char*>(&cell));
      }
    });
  for (auto& t : origins) t.join();
  EXPECT_EQ(cell, 4 * 5000);
}

TEST(RmaEngine, SharedLocksGoTogetherAndAnExclusiveOneWaitsForThemAll) {
  Ranks ranks(4);
  ranks.expose_new_cell(0);
  ranks.send(1, 0, kWindow, lock_message(false));
  ranks.send(2, 0, kWindow, lock_message(false));
  EXPECT_TRUE(ranks[0].holds_lock(kWindow, 1));
  EXPECT_TRUE(ranks[0].holds_lock(kWindow, 2));
  ranks.send(3, 0, kWindow, lock_message(true));
  EXPECT_FALSE(ranks[0].holds_lock(kWindow, 3));
  ranks.send(1, 0, kWindow, sync_message(Message::kUnlock, ranks[1].next_id()));
  EXPECT_FALSE(ranks[0].holds_lock(kWindow, 3));
  ranks.send(2, 0, kWindow, sync_message(Message::kUnlock, ranks[2].next_id()));
  EXPECT_TRUE(ranks[0].holds_lock(kWindow, 3));
}

TEST(RmaEngine, ALostOriginsLockGoesToTheNextAndItsWaitingRequestsAreDropped) {
  Ranks ranks(4);
  std::int64_t& cell = ranks.expose_new_cell(0);
  ranks.send(1, 0, kWindow, lock_message(true));  // rank 1 holds it and is then lost
  ranks.send(3, 0, kWindow, lock_message(true));  // rank 3 waits, and is lost too
  ranks.send(3, 0, kWindow, put_message({0, TypeMap(int64_kind(), 1)}, bytes_of(33)));
  ranks.send(2, 0, kWindow, lock_message(true));
  ranks.send(2, 0, kWindow, put_message({0, TypeMap(int64_kind(), 1)}, bytes_of(22)));
  EXPECT_EQ(cell, 0);
  ranks[0].forget([](std::int32_t r) { return r == 1 || r == 3; });
  EXPECT_TRUE(ranks[0].holds_lock(kWindow, 2));
  EXPECT_EQ(cell, 22);  // rank 3's put went with it
}

TEST(RmaEngine, AStridedTargetTypeIsLaidOverTheWindowAsMpiLaysIt) {
  Ranks ranks(2);
  std::int64_t mem[8] = {0};
  ranks[0].expose(kWindow, reinterpret_cast<char*>(mem), sizeof mem, 8, false);
  ranks[1].expose(kWindow, nullptr, 0, 1, false);
  TypeMap every_other;
  for (int i = 0; i < 3; ++i) every_other.append({16 * i, 1, int64_kind()});
  const std::int64_t values[3] = {5, 6, 7};
  const Location at{1, every_other};  // from element 1 (disp_unit 8)
  ranks.send(1, 0, kWindow, put_message(at, std::string(reinterpret_cast<const char*>(values), sizeof values)));
  const std::int64_t expected[8] = {0, 5, 0, 6, 0, 7, 0, 0};
  EXPECT_EQ(std::memcmp(mem, expected, sizeof mem), 0);
  const std::uint64_t id = ranks[1].next_id();
  ranks.send(1, 0, kWindow, get_message(id, at));
  Reply r;
  ASSERT_TRUE(ranks[1].take_reply(id, &r));
  EXPECT_EQ(r.data, std::string(reinterpret_cast<const char*>(values), sizeof values));
}

// A message handed over in fragments of `size` bytes, as the transport hands them.
void deliver_in_parts(Engine& e, std::int32_t src, const std::string& body, std::size_t size) {
  for (std::size_t off = 0; off < body.size(); off += size)
    e.deliver_part(src, kWindow, std::string_view(body).substr(off, size), body.size(), off == 0, off + size >= body.size());
}

TEST(RmaEngine, PutsInFragmentsLandWholeWhetherTheyStreamWaitForALockOrAreStrided) {
  Ranks ranks(3);
  std::vector<std::int64_t> mem(4096, 0);
  ranks[0].expose(kWindow, reinterpret_cast<char*>(mem.data()), mem.size() * 8, 8, false);
  for (int r = 1; r < 3; ++r) ranks[r].expose(kWindow, nullptr, 0, 1, false);
  std::vector<std::int64_t> values(4000);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<std::int64_t>(i) + 1;
  const std::string data(reinterpret_cast<const char*>(values.data()), values.size() * 8);
  // Contiguous, the head cut in two (7-byte fragments first): written as it comes.
  const std::string put = put_message({10, TypeMap(int64_kind(), 4000)}, data);
  const std::string_view whole(put);
  const std::size_t cut = put.size() - 1000;
  ranks[0].deliver_part(1, kWindow, whole.substr(0, 7), put.size(), true, false);
  ranks[0].deliver_part(1, kWindow, whole.substr(7, cut - 7), put.size(), false, false);
  EXPECT_EQ(mem[10], 1);  // before the message is whole
  EXPECT_EQ(mem[4009], 0);
  ranks[0].deliver_part(1, kWindow, whole.substr(cut), put.size(), false, true);
  EXPECT_EQ(mem[10], 1);
  EXPECT_EQ(mem[4009], 4000);
  EXPECT_EQ(mem[9], 0);
  EXPECT_EQ(mem[4010], 0);
  EXPECT_EQ(ranks.flush(1, 0, kWindow).error_class, 0u);
  // Rank 1 holds an exclusive lock: rank 2's put waits, whole, until it is released.
  std::fill(mem.begin(), mem.end(), 0);
  ranks.send(1, 0, kWindow, lock_message(true));
  ranks.send(2, 0, kWindow, lock_message(true));
  deliver_in_parts(ranks[0], 2, put_message({0, TypeMap(int64_kind(), 4000)}, data), 4096);
  EXPECT_EQ(mem[0], 0);
  ranks.send(1, 0, kWindow, sync_message(Message::kUnlock, ranks[1].next_id()));
  EXPECT_EQ(mem[0], 1);
  EXPECT_EQ(mem[3999], 4000);
  ranks.send(2, 0, kWindow, sync_message(Message::kUnlock, ranks[2].next_id()));
  // Strided (every other element): assembled, then laid out.
  std::fill(mem.begin(), mem.end(), 0);
  TypeMap every_other;
  for (int i = 0; i < 2000; ++i) every_other.append({16 * i, 1, int64_kind()});
  deliver_in_parts(ranks[0], 1, put_message({0, every_other}, data.substr(0, 2000 * 8)), 1000);
  EXPECT_EQ(mem[0], 1);
  EXPECT_EQ(mem[1], 0);
  EXPECT_EQ(mem[3998], 2000);
  // Out of range and in fragments: nothing written, the error with the next flush.
  std::fill(mem.begin(), mem.end(), 0);
  deliver_in_parts(ranks[0], 1, put_message({100, TypeMap(int64_kind(), 4000)}, data), 1000);
  EXPECT_EQ(std::count(mem.begin(), mem.end(), 0), static_cast<std::ptrdiff_t>(mem.size()));
  EXPECT_EQ(ranks.flush(1, 0, kWindow).error_class, ErrorClass::kRange);
}

TEST(RmaEngine, AnOperationOutOfRangeChangesNothingAndItsErrorComesWithTheNextFlush) {
  Ranks ranks(2);
  std::int64_t mem[2] = {3, 4};
  ranks[0].expose(kWindow, reinterpret_cast<char*>(mem), sizeof mem, 8, false);
  ranks[1].expose(kWindow, nullptr, 0, 1, false);
  ranks.send(1, 0, kWindow, put_message({2, TypeMap(int64_kind(), 1)}, bytes_of(9)));
  ranks.send(1, 0, kWindow, accumulate_message(Op::kSum, {1, TypeMap(int64_kind(), 2)}, bytes_of(1) + bytes_of(1)));
  EXPECT_EQ(mem[0], 3);
  EXPECT_EQ(mem[1], 4);
  Reply r = ranks.flush(1, 0, kWindow);
  EXPECT_EQ(r.error_class, ErrorClass::kRange);
  EXPECT_NE(r.error.find("of the 16 bytes rank 0 exposes"), std::string::npos) << r.error;
  EXPECT_EQ(ranks.flush(1, 0, kWindow).error_class, 0u);  // (said once)
}

TEST(RmaEngine, FetchAndOpCompareAndSwapAndMaxlocAnswerWhatWasThere) {
  Ranks ranks(2);
  std::int64_t cell = 10;
  ranks[0].expose(kWindow, reinterpret_cast<char*>(&cell), sizeof cell, 8, false);
  ranks[1].expose(kWindow, nullptr, 0, 1, false);
  const Location at{0, TypeMap(int64_kind(), 1)};
  std::uint64_t id = ranks[1].next_id();
  ranks.send(1, 0, kWindow, get_accumulate_message(id, Op::kSum, at, bytes_of(5)));
  Reply r;
  ASSERT_TRUE(ranks[1].take_reply(id, &r));
  EXPECT_EQ(r.data, bytes_of(10));
  EXPECT_EQ(cell, 15);
  id = ranks[1].next_id();
  ranks.send(1, 0, kWindow, compare_swap_message(id, at, bytes_of(14), bytes_of(99)));  // (not equal: unchanged)
  ASSERT_TRUE(ranks[1].take_reply(id, &r));
  EXPECT_EQ(cell, 15);
  id = ranks[1].next_id();
  ranks.send(1, 0, kWindow, compare_swap_message(id, at, bytes_of(15), bytes_of(99)));
  ASSERT_TRUE(ranks[1].take_reply(id, &r));
  EXPECT_EQ(r.data, bytes_of(15));
  EXPECT_EQ(cell, 99);

  struct {
    double value;
    int index;
  } pair = {2.0, 7};
  Kind k;
  k.category = Category::kPair;
  k.value = Category::kFloat;
  k.index = Category::kSigned;
  k.value_size = 8;
  k.index_size = 4;
  k.size = 12;
  k.extent = sizeof pair;
  k.index_offset = 8;
  const double v = 2.0;
  const int index = 3;
  char packed[12];
  std::memcpy(packed, &v, 8);
  std::memcpy(packed + 8, &index, 4);
  accumulate(Op::kMaxloc, k, &pair, packed, 1);  // equal values: the smaller index
  EXPECT_EQ(pair.index, 3);
  EXPECT_EQ(check(Op::kBand, int64_kind()), "");
  Kind f;
  f.category = Category::kFloat;
  f.size = f.extent = 8;
  EXPECT_NE(check(Op::kBand, f), "");
}

TEST(RmaEngine, MalformedMessagesAndUnknownWindowsAreAnsweredWithoutHarm) {
  Ranks ranks(3);
  std::int64_t cell = 1;
  ranks[0].expose(kWindow, reinterpret_cast<char*>(&cell), sizeof cell, 8, false);
  ranks[1].expose(kWindow, nullptr, 0, 1, false);
  ranks[2].expose(kWindow, nullptr, 0, 1, false);
  std::uint64_t seed = 12345;
  for (int i = 0; i < 20000; ++i) {  // garbage of every length, first byte a known kind or not
    std::string body(1 + (seed >> 33) % 64, '\0');
    for (char& c : body) c = static_cast<char>((seed = seed * 6364136223846793005ull + 1442695040888963407ull) >> 56);
    if (i % 4) body[0] = static_cast<char>(1 + (seed >> 40) % 11);
    ranks.send(1, 0, kWindow, body);
  }
  // The target still serves another origin (rank 1's garbage may have left it a lock held).
  const std::uint64_t id = ranks[2].next_id();
  ranks.send(2, 0, kWindow + 1, get_message(id, {0, TypeMap(int64_kind(), 1)}));
  Reply r;
  ASSERT_TRUE(ranks[2].take_reply(id, &r));
  EXPECT_EQ(r.error_class, ErrorClass::kWin);
  EXPECT_NE(r.error.find("no such window at rank 0"), std::string::npos) << r.error;
  EXPECT_EQ(ranks.flush(2, 0, kWindow).error_class, 0u);
}

}  // namespace
}  // namespace gridrt::rma
