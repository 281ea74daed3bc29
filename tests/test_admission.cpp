// The caps on unauthenticated connections, without sockets: who is dropped, and when not;
// and the log of refusals an attacker can repeat.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "common/admission.h"

using namespace gridrt;

namespace {
const auto kA = boost::asio::ip::make_address("10.0.0.1");
const auto kB = boost::asio::ip::make_address("10.0.0.2");

// A port with its caps, the connections admitted and held, and the numbers of those it
// dropped, in the order it dropped them.
struct Port {
  boost::asio::io_context io;
  Admission port;
  std::vector<int> dropped;
  std::vector<Admission::Ticket> held;
  explicit Port(Admission::Limits limits) : port(io.get_executor(), "test port", limits) {}
  void admit(const boost::asio::ip::address& from, int number) {
    held.push_back(port.admit(from, [this, number] { dropped.push_back(number); }));
  }
};
}  // namespace

TEST(Admission, TheOldestOfAnAddressMakesRoomAtItsCap) {
  Port p({2, 10});
  for (int i = 0; i < 4; ++i) p.admit(kA, i);
  p.admit(kB, 100);
  EXPECT_EQ(p.dropped, (std::vector<int>{0, 1}));  // a's oldest two; b is not touched
  EXPECT_EQ(p.port.pending(), 3u);
  EXPECT_EQ(p.port.dropped(), 2u);
}

TEST(Admission, TheOldestOfAllMakesRoomAtTheTotalCap) {
  Port p({10, 3});
  p.admit(kB, 100);
  for (int i = 0; i < 3; ++i) p.admit(kA, i);
  EXPECT_EQ(p.dropped, (std::vector<int>{100}));
  EXPECT_EQ(p.port.pending(), 3u);
}

TEST(Admission, AuthenticatedOrGoneConnectionsNoLongerCountAndAreNeverDropped) {
  boost::asio::io_context io;
  Admission port(io.get_executor(), "test port", {2, 10});
  int dropped = 0;
  Admission::Ticket first = port.admit(kA, [&dropped] { ++dropped; });
  first.release();  // authenticated
  {
    Admission::Ticket gone = port.admit(kA, [&dropped] { ++dropped; });
  }  // closed before authenticating
  EXPECT_EQ(port.pending(), 0u);
  Admission::Ticket a = port.admit(kA, [&dropped] { ++dropped; });
  Admission::Ticket b = port.admit(kA, [&dropped] { ++dropped; });
  EXPECT_EQ(dropped, 0);
  Admission::Ticket c = port.admit(kA, [&dropped] { ++dropped; });
  EXPECT_EQ(dropped, 1);  // a
  a.release();            // released after being dropped: harmless
  EXPECT_EQ(port.pending(), 2u);
}

// A process out of file descriptors frees one of a stranger's, the oldest first.
TEST(Admission, TheOldestIsDroppedOnDemand) {
  Port p({10, 10});
  for (int i = 0; i < 2; ++i) p.admit(kA, i);
  EXPECT_TRUE(p.port.drop_oldest("out of file descriptors"));
  EXPECT_TRUE(p.port.drop_oldest("out of file descriptors"));
  EXPECT_FALSE(p.port.drop_oldest("out of file descriptors"));
  EXPECT_EQ(p.dropped, (std::vector<int>{0, 1}));
  EXPECT_EQ(p.port.dropped(), 2u);
}

// Memory goes back to the system after strangers have gone and the port has been quiet a
// moment; not while strangers remain, and once for all that go within that moment.
TEST(Admission, MemoryGoesBackOnceStrangersHaveGone) {
  boost::asio::io_context io;
  Admission port(io.get_executor(), "test port", {1000, 1000});
  auto crowd = [&](int n) {
    std::vector<Admission::Ticket> held;
    for (int i = 0; i < n; ++i) held.push_back(port.admit(kA, [] {}));
    return held;
  };
  auto run_for = [&](std::chrono::milliseconds d) {
    io.restart();
    io.run_for(d);
  };
  {
    auto held = crowd(100);
    Admission::Ticket stays = port.admit(kB, [] {});
    held.clear();
    run_for(std::chrono::milliseconds(1300));
    EXPECT_EQ(port.memory_given_back(), 0u) << "a stranger still waits";
  }  // gone: the port is quiet
  run_for(std::chrono::milliseconds(300));
  EXPECT_EQ(port.memory_given_back(), 0u) << "before a moment of quiet";
  run_for(std::chrono::milliseconds(1000));
  EXPECT_EQ(port.memory_given_back(), 1u);
  run_for(std::chrono::milliseconds(1300));
  EXPECT_EQ(port.memory_given_back(), 1u) << "nothing went since";
  crowd(1);
  run_for(std::chrono::milliseconds(500));
  crowd(3);  // within the same moment
  run_for(std::chrono::milliseconds(1300));
  EXPECT_EQ(port.memory_given_back(), 2u);
}

// The first few of an interval are logged, the rest counted and summarised in one line when
// the next interval begins.
TEST(RepeatedWarning, TheFirstFewAreLoggedTheRestSummarised) {
  log::Repeated refusals("test refusals", 3, std::chrono::milliseconds(200));
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 10; ++i) refusals.warn("refusal ", i);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  refusals.warn("refusal ", 10);
  const std::string out = ::testing::internal::GetCapturedStderr();
  for (const char* logged : {"refusal 0\n", "refusal 1\n", "refusal 2\n", "refusal 10\n"})
    EXPECT_NE(out.find(logged), std::string::npos) << out;
  EXPECT_EQ(out.find("refusal 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("7 more test refusals in the last 0.2"), std::string::npos) << out;
  EXPECT_LT(out.find("7 more"), out.find("refusal 10\n")) << out;
}
