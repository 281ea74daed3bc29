// The event-loop watchdog: quiet while the loop runs, one report when a handler holds it,
// one when it runs again.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "common/watchdog.h"

namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

TEST(Watchdog, SaysWhenTheLoopIsHeldAndWhenItRunsAgain) {
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::mutex mu;
  std::vector<milliseconds> stalls, recoveries;
  {
    gridrt::Watchdog dog(
        io, 20ms, 200ms,
        [&](milliseconds held) {
          std::lock_guard<std::mutex> l(mu);
          stalls.push_back(held);
        },
        [&](milliseconds held) {
          std::lock_guard<std::mutex> l(mu);
          recoveries.push_back(held);
        });
    std::thread loop([&] { io.run(); });
    std::this_thread::sleep_for(400ms);  // running freely
    {
      std::lock_guard<std::mutex> l(mu);
      EXPECT_TRUE(stalls.empty());
    }
    boost::asio::post(io, [] { std::this_thread::sleep_for(800ms); });  // a handler that holds the loop
    std::this_thread::sleep_for(1200ms);
    work.reset();
    io.stop();
    loop.join();
  }
  ASSERT_EQ(stalls.size(), 1u);
  EXPECT_GE(stalls[0], 200ms);
  EXPECT_LT(stalls[0], 800ms);  // said while the loop was still held
  ASSERT_EQ(recoveries.size(), 1u);
  EXPECT_GE(recoveries[0], 800ms);
}

}  // namespace
