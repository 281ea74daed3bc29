// The channel (a communicator's point-to-point over MPI and the transport), in-process:
// several ranks of one test process, each alone in its cluster, so that its own messages
// travel through MPI (a duplicate of MPI_COMM_SELF) and every other rank's through an
// in-memory transport. MPI's matching rules across both paths: wildcards, order, probes,
// cancellation, synchronous sends, truncation, datatypes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <numeric>
#include <set>
#include <thread>

#include "channel/channel.h"
#include "memory_transport.h"

using namespace gridrt;
using namespace gridrt::detail;

namespace {

constexpr std::uint32_t kContext = 7;

// n ranks, each a channel over the same in-memory network.
class Ranks {
 public:
  explicit Ranks(int n) : net_(n) {
    std::vector<int> peers(n);
    std::iota(peers.begin(), peers.end(), 0);
    for (int r = 0; r < n; ++r) {
      transports_.push_back(std::make_unique<MemoryTransport>(net_, r));
      MPI_Comm self;
      MPI_Comm_dup(MPI_COMM_SELF, &self);
      MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN);
      comms_.push_back(self);
      std::vector<int> local(n, -1);
      local[r] = 0;  // only itself is in its cluster
      channels_.push_back(std::make_unique<Channel>(peers, local, self, transports_.back().get(), kContext, n));
    }
  }
  ~Ranks() {
    channels_.clear();
    for (auto& c : comms_) MPI_Comm_free(&c);
  }
  Channel& operator[](int r) { return *channels_[r]; }

 private:
  MemoryNetwork net_;
  std::vector<std::unique_ptr<MemoryTransport>> transports_;
  std::vector<MPI_Comm> comms_;
  std::vector<std::unique_ptr<Channel>> channels_;
};

// Completes `op`, testing it (ranks driven from one thread cannot block on each other);
// a failure after 10 s.
ChannelStatus complete(Channel& ch, const OpPtr& op) {
  ChannelStatus st;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until) {
    if (ch.test(*op, &st)) return st;
    std::this_thread::yield();
  }
  ADD_FAILURE() << "the operation did not complete";
  return st;
}

bool done(Channel& ch, const OpPtr& op) { return ch.test(*op); }

// Sends whose buffers live until flush() completes them: a send of a rank to itself may
// complete only once its receive is posted (MPICH's does), so the tests complete sends last.
class Outbox {
 public:
  ~Outbox() { flush(); }
  void send(Channel& ch, int value, int dst, int tag) {
    values_.push_back(value);
    ops_.emplace_back(&ch, ch.isend(&values_.back(), 1, MPI_INT, dst, tag));
  }
  void flush() {
    for (auto& [ch, op] : ops_) complete(*ch, op);
    ops_.clear();
  }

 private:
  std::deque<int> values_;
  std::vector<std::pair<Channel*, OpPtr>> ops_;
};

}  // namespace

TEST(Channel, EveryPairReachesEachOtherOnBothPaths) {
  Ranks ranks(3);
  Outbox out;
  for (int from = 0; from < 3; ++from)
    for (int to = 0; to < 3; ++to) {
      int got = -1;
      OpPtr r = ranks[to].irecv(&got, 1, MPI_INT, from, 10 + from);
      out.send(ranks[from], 100 * from + to, to, 10 + from);
      const ChannelStatus st = complete(ranks[to], r);
      EXPECT_EQ(got, 100 * from + to);
      EXPECT_EQ(st.source, from);
      EXPECT_EQ(st.tag, 10 + from);
      EXPECT_EQ(st.bytes, sizeof(int));
      EXPECT_FALSE(st.truncated);
    }
}

TEST(Channel, ElementsThatDoNotLieBackToBackArriveInPlace) {
  Ranks ranks(2);
  MPI_Datatype every_other;  // 4 ints, each followed by a gap of one
  MPI_Type_vector(4, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);
  for (int from : {0, 1}) {  // to rank 0: from itself through MPI, from rank 1 through the transport
    const int out[8] = {1, -1, 2, -1, 3, -1, 4, -1};
    int in[8] = {0, 9, 0, 9, 0, 9, 0, 9};
    OpPtr r = ranks[0].irecv(in, 1, every_other, from, 0);
    OpPtr s = ranks[from].isend(out, 1, every_other, 0, 0);
    const ChannelStatus st = complete(ranks[0], r);
    complete(ranks[from], s);
    EXPECT_EQ(st.bytes, 4 * sizeof(int));
    const int want[8] = {1, 9, 2, 9, 3, 9, 4, 9};
    EXPECT_TRUE(std::equal(in, in + 8, want)) << "from " << from;
  }
  MPI_Type_free(&every_other);
}

TEST(Channel, AWildcardReceiveTakesEveryMessageFromBothPathsOnceAndInOrderPerSource) {
  Ranks ranks(4);
  Outbox out;
  constexpr int kEach = 6;
  for (int from = 0; from < 4; ++from)  // rank 0's own through MPI, the others' through the transport
    for (int i = 0; i < kEach; ++i) out.send(ranks[from], 1000 * from + i, 0, 3);
  std::map<int, std::vector<int>> seen;
  for (int k = 0; k < 4 * kEach; ++k) {
    int v = -1;
    const ChannelStatus st = complete(ranks[0], ranks[0].irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG));
    EXPECT_EQ(v / 1000, st.source);
    seen[st.source].push_back(v % 1000);
  }
  ASSERT_EQ(seen.size(), 4u);
  for (auto& [source, values] : seen) {
    std::vector<int> want(kEach);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(values, want) << "from " << source;  // non-overtaking
  }
}

TEST(Channel, AMessageBothCouldTakeGoesToTheReceivePostedFirst) {
  Ranks ranks(2);
  for (int from : {1, 0}) {
    Outbox out;
    int a = -1, b = -1;
    OpPtr any = ranks[0].irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 5);
    OpPtr specific = ranks[0].irecv(&b, 1, MPI_INT, from, 5);
    out.send(ranks[from], 1, 0, 5);
    out.send(ranks[from], 2, 0, 5);
    complete(ranks[0], specific);
    complete(ranks[0], any);
    EXPECT_EQ(a, 1) << "from " << from;
    EXPECT_EQ(b, 2) << "from " << from;
  }
}

TEST(Channel, AReceiveHeldBehindAWildcardStillTakesWhatOnlyItMatches) {
  Ranks ranks(3);
  Outbox out;
  int a = -1, b = -1;
  OpPtr any = ranks[0].irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 5);
  OpPtr from1 = ranks[0].irecv(&b, 1, MPI_INT, 1, MPI_ANY_TAG);  // could compete with `any`: held back
  out.send(ranks[1], 7, 0, 7);                                   // only from1 matches this one
  complete(ranks[0], from1);
  EXPECT_EQ(b, 7);
  EXPECT_FALSE(done(ranks[0], any));
  out.send(ranks[2], 5, 0, 5);
  const ChannelStatus st = complete(ranks[0], any);
  EXPECT_EQ(a, 5);
  EXPECT_EQ(st.source, 2);
}

TEST(Channel, ReceivesThatCannotCompeteWithAHeldWildcardAreNotHeldBack) {
  Ranks ranks(2);
  Outbox out;
  int a = -1, b = -1;
  OpPtr any = ranks[0].irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 5);
  EXPECT_TRUE(ranks[0].holds_back());
  OpPtr other_tag = ranks[0].irecv(&b, 1, MPI_INT, 1, 6);
  EXPECT_FALSE(other_tag->needs_mpi()) << "posted to the transport, not held back";
  out.send(ranks[1], 6, 0, 6);
  complete(ranks[0], other_tag);
  EXPECT_EQ(b, 6);
  EXPECT_FALSE(done(ranks[0], any));
  ranks[0].cancel(*any);
  EXPECT_TRUE(complete(ranks[0], any).cancelled);
  EXPECT_FALSE(ranks[0].holds_back());
}

TEST(Channel, ProbeThenReceiveGetsTheProbedMessageOfTheProbedSize) {
  Ranks ranks(3);
  const std::vector<double> out(37, 2.5);
  complete(ranks[2], ranks[2].isend(out.data(), 37, MPI_DOUBLE, 0, 9));  // (across clusters: copied at once)
  ChannelStatus st;
  ASSERT_TRUE(ranks[0].iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, &st));
  EXPECT_EQ(st.source, 2);
  EXPECT_EQ(st.tag, 9);
  ASSERT_EQ(st.bytes, 37 * sizeof(double));
  std::vector<double> in(st.bytes / sizeof(double));
  complete(ranks[0], ranks[0].irecv(in.data(), static_cast<int>(in.size()), MPI_DOUBLE, st.source, st.tag));
  EXPECT_EQ(in, out);
  EXPECT_FALSE(ranks[0].iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, &st));
  ASSERT_TRUE(ranks[0].iprobe(MPI_PROC_NULL, 0, &st));
  EXPECT_EQ(st.source, MPI_PROC_NULL);
}

// Whichever path the probed message came by, and whatever waits on the other, the wildcard
// receive after the probe takes it; rank 0's own messages travel through MPI, the others'
// through the transport.
TEST(Channel, AWildcardReceiveAfterAProbeTakesTheProbedMessageFromEitherPath) {
  Ranks ranks(3);
  Outbox out;
  constexpr int kEach = 20;
  for (int i = 0; i < kEach; ++i)
    for (int from = 0; from < 3; ++from) out.send(ranks[from], 1000 * from + i, 0, i % 4);
  std::map<int, int> next;
  for (int k = 0; k < 3 * kEach; ++k) {
    ChannelStatus probed;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!ranks[0].iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, &probed) && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    int v = -1;
    const ChannelStatus got = complete(ranks[0], ranks[0].irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG));
    ASSERT_EQ(got.source, probed.source) << "receive " << k;
    ASSERT_EQ(got.tag, probed.tag) << "receive " << k;
    EXPECT_EQ(v / 1000, got.source);
    EXPECT_EQ(v % 1000, next[got.source]++) << "from " << got.source;
  }
  EXPECT_FALSE(ranks[0].holds_back());
}

// A probe for one tag sets aside its source's earlier messages of other tags with the one
// it found: a receive that matches both still gets the earlier first (MPI's order per source).
TEST(Channel, AProbeForOneTagKeepsItsSourcesOrder) {
  Ranks ranks(2);
  for (int from : {1, 0}) {  // across clusters, then inside one (MPI)
    Outbox out;
    out.send(ranks[from], 1, 0, 3);
    out.send(ranks[from], 2, 0, 5);
    out.send(ranks[from], 3, 0, 5);
    ChannelStatus st;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!ranks[0].iprobe(MPI_ANY_SOURCE, 5, &st) && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    EXPECT_EQ(st.tag, 5);
    EXPECT_TRUE(ranks[0].holds_back()) << "the probed message is set aside";
    int a = -1, b = -1, c = -1;
    complete(ranks[0], ranks[0].irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG));
    complete(ranks[0], ranks[0].irecv(&b, 1, MPI_INT, from, 5));
    complete(ranks[0], ranks[0].irecv(&c, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG));
    EXPECT_EQ(a, 1) << "from " << from;
    EXPECT_EQ(b, 2) << "from " << from;
    EXPECT_EQ(c, 3) << "from " << from;
    EXPECT_FALSE(ranks[0].holds_back());
  }
}

TEST(Channel, AMatchedProbeTakesTheMessageFromEveryOtherReceive) {
  Ranks ranks(2);
  for (int from : {0, 1}) {
    Outbox out;
    out.send(ranks[from], 1, 0, 4);
    out.send(ranks[from], 2, 0, 4);
    MessagePtr m = ranks[0].improbe(from, 4);
    ASSERT_TRUE(m);
    int other = -1, probed = -1;
    complete(ranks[0], ranks[0].irecv(&other, 1, MPI_INT, MPI_ANY_SOURCE, 4));
    EXPECT_EQ(other, 2) << "from " << from;
    complete(ranks[0], ranks[0].imrecv(m, &probed, 1, MPI_INT));
    EXPECT_EQ(probed, 1) << "from " << from;
  }
  EXPECT_FALSE(ranks[0].improbe(MPI_ANY_SOURCE, MPI_ANY_TAG));
}

TEST(Channel, AProbeLeavesAMessageAHeldReceiveMatchesToThatReceive) {
  Ranks ranks(2);
  Outbox out;
  int a = -1;
  OpPtr any = ranks[0].irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 5);
  out.send(ranks[1], 3, 0, 5);
  ChannelStatus st;
  EXPECT_FALSE(ranks[0].iprobe(1, 5, &st)) << "the wildcard, posted first, has it";
  complete(ranks[0], any);
  EXPECT_EQ(a, 3);
}

TEST(Channel, ASynchronousSendCompletesOnlyOnceMatched) {
  Ranks ranks(2);
  for (int from : {1, 0}) {  // across clusters, then inside one (MPI)
    int v = 42, got = 0;
    OpPtr s = ranks[from].isend(&v, 1, MPI_INT, 0, 1, SendMode::kSynchronous);
    for (int i = 0; i < 1000; ++i) EXPECT_FALSE(done(ranks[from], s)) << "from " << from;
    OpPtr r = ranks[0].irecv(&got, 1, MPI_INT, from, 1);
    complete(ranks[from], s);
    complete(ranks[0], r);
    EXPECT_EQ(got, 42);
  }
}

TEST(Channel, TruncationIsReportedAndTheStreamGoesOn) {
  Ranks ranks(2);
  for (int from : {1, 0}) {
    Outbox out;
    const int big[4] = {1, 2, 3, 4};
    int small[2] = {0, 0}, next = 0;
    OpPtr s = ranks[from].isend(big, 4, MPI_INT, 0, 1);
    out.send(ranks[from], 5, 0, 2);
    const ChannelStatus st = complete(ranks[0], ranks[0].irecv(small, 2, MPI_INT, from, 1));
    EXPECT_TRUE(st.truncated) << "from " << from;
    complete(ranks[0], ranks[0].irecv(&next, 1, MPI_INT, from, 2));
    EXPECT_EQ(next, 5);
    complete(ranks[from], s);
  }
}

TEST(Channel, CancelledReceivesLeaveTheirMessagesToLaterOnes) {
  Ranks ranks(2);
  Outbox out;
  int x = -1;
  OpPtr remote = ranks[0].irecv(&x, 1, MPI_INT, 1, 3);
  ranks[0].cancel(*remote);
  EXPECT_TRUE(complete(ranks[0], remote).cancelled);
  out.send(ranks[1], 8, 0, 3);
  const ChannelStatus st = complete(ranks[0], ranks[0].irecv(&x, 1, MPI_INT, 1, 3));
  EXPECT_FALSE(st.cancelled);
  EXPECT_EQ(x, 8);
  OpPtr local = ranks[0].irecv(&x, 1, MPI_INT, 0, 3);
  ranks[0].cancel(*local);
  EXPECT_TRUE(complete(ranks[0], local).cancelled);
}

TEST(Channel, ProcNullCompletesAtOnceWithItsStatus) {
  Ranks ranks(2);
  int x = 0;
  const ChannelStatus st = complete(ranks[0], ranks[0].irecv(&x, 1, MPI_INT, MPI_PROC_NULL, 0));
  EXPECT_EQ(st.source, MPI_PROC_NULL);
  EXPECT_EQ(st.tag, MPI_ANY_TAG);
  EXPECT_EQ(st.bytes, 0u);
  complete(ranks[0], ranks[0].isend(&x, 1, MPI_INT, MPI_PROC_NULL, 0));
}

TEST(Channel, BadRanksTagsAndCountsAreRefusedWithTheirMpiClass) {
  Ranks ranks(2);
  int x = 0;
  auto error_class = [](auto call) {
    try {
      call();
    } catch (const Error& e) { return e.error_class; }
    return MPI_SUCCESS;
  };
  EXPECT_EQ(error_class([&] { ranks[0].isend(&x, 1, MPI_INT, 2, 0); }), MPI_ERR_RANK);
  EXPECT_EQ(error_class([&] { ranks[0].isend(&x, 1, MPI_INT, MPI_ANY_SOURCE, 0); }), MPI_ERR_RANK);
  EXPECT_EQ(error_class([&] { ranks[0].irecv(&x, 1, MPI_INT, -7, 0); }), MPI_ERR_RANK);
  EXPECT_EQ(error_class([&] { ranks[0].isend(&x, 1, MPI_INT, 1, -1); }), MPI_ERR_TAG);
  EXPECT_EQ(error_class([&] { ranks[0].isend(&x, -1, MPI_INT, 1, 0); }), MPI_ERR_COUNT);
  EXPECT_EQ(error_class([&] { ranks[0].isend(&x, 1, MPI_DATATYPE_NULL, 1, 0); }), MPI_ERR_TYPE);
}

// Several senders at once, each in its own thread, while the receiver mixes wildcard and
// specific receives: every message arrives once, each source's in order.
TEST(Channel, ConcurrentSendersIntoMixedReceives) {
  constexpr int kRanks = 4, kEach = 200;
  Ranks ranks(kRanks);
  std::vector<std::thread> senders;
  for (int from = 1; from < kRanks; ++from)
    senders.emplace_back([&, from] {
      Outbox out;
      for (int i = 0; i < kEach; ++i) out.send(ranks[from], i, 0, i % 3);
    });
  std::map<int, std::vector<int>> seen;
  std::map<int, int> expect_next;
  for (int k = 0; k < (kRanks - 1) * kEach; ++k) {
    int v = -1;
    // Every third receive names a source, one that still has messages to come.
    int src = MPI_ANY_SOURCE;
    for (int i = 0; k % 3 == 0 && i < kRanks - 1 && src == MPI_ANY_SOURCE; ++i) {
      const int candidate = 1 + (k / 3 + i) % (kRanks - 1);
      if (expect_next[candidate] < kEach) src = candidate;
    }
    const ChannelStatus st = complete(ranks[0], ranks[0].irecv(&v, 1, MPI_INT, src, MPI_ANY_TAG));
    EXPECT_EQ(v, expect_next[st.source]) << "from " << st.source;
    expect_next[st.source] = v + 1;
    EXPECT_EQ(st.tag, v % 3);
  }
  for (auto& t : senders) t.join();
  for (int from = 1; from < kRanks; ++from) EXPECT_EQ(expect_next[from], kEach);
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  // MPICH reports errors of request completion (a truncated receive's MPI_Test) through
  // MPI_COMM_WORLD's handler: returned here, as the MPI layer arranges in a job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  gridrt::detail::progress::one_registry_per_thread();
  if (provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "test_channel: MPICH gives no MPI_THREAD_MULTIPLE, which these in-process tests need\n");
    return 1;
  }
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
