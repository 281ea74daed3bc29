// The caps on unauthenticated connections, without sockets: who is dropped, and when not.
#include <gtest/gtest.h>

#include <vector>

#include "common/admission.h"

using namespace gridrt;

namespace {
const auto kA = boost::asio::ip::make_address("10.0.0.1");
const auto kB = boost::asio::ip::make_address("10.0.0.2");
}  // namespace

TEST(Admission, TheOldestOfAnAddressMakesRoomAtItsCap) {
  Admission port("test port", {2, 10});
  std::vector<int> dropped;
  std::vector<Admission::Ticket> held;
  for (int i = 0; i < 4; ++i) held.push_back(port.admit(kA, [&dropped, i] { dropped.push_back(i); }));
  held.push_back(port.admit(kB, [&dropped] { dropped.push_back(100); }));
  EXPECT_EQ(dropped, (std::vector<int>{0, 1}));  // a's oldest two; b is not touched
  EXPECT_EQ(port.pending(), 3u);
  EXPECT_EQ(port.dropped(), 2u);
}

TEST(Admission, TheOldestOfAllMakesRoomAtTheTotalCap) {
  Admission port("test port", {10, 3});
  std::vector<int> dropped;
  std::vector<Admission::Ticket> held;
  held.push_back(port.admit(kB, [&dropped] { dropped.push_back(100); }));
  for (int i = 0; i < 3; ++i) held.push_back(port.admit(kA, [&dropped, i] { dropped.push_back(i); }));
  EXPECT_EQ(dropped, (std::vector<int>{100}));
  EXPECT_EQ(port.pending(), 3u);
}

TEST(Admission, AuthenticatedOrGoneConnectionsNoLongerCountAndAreNeverDropped) {
  Admission port("test port", {2, 10});
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
