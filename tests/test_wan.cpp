// The WAN emulation's arithmetic (common/wan): spec parsing, and when an emulated line
// delivers what it is given.
#include <gtest/gtest.h>

#include "common/wan.h"

using namespace gridrt;
using namespace std::chrono_literals;

TEST(WanSpec, ParsesDelayAndRate) {
  WanSpec s = parse_wan_spec("10ms,100mbit");
  EXPECT_EQ(s.delay, 10ms);
  EXPECT_DOUBLE_EQ(s.bytes_per_second, 100e6 / 8);
  EXPECT_TRUE(s.active());
  s = parse_wan_spec("250us");
  EXPECT_EQ(s.delay, 250us);
  EXPECT_EQ(s.bytes_per_second, 0);
  s = parse_wan_spec("0.5s,1.5gbit");
  EXPECT_EQ(s.delay, 500ms);
  EXPECT_DOUBLE_EQ(s.bytes_per_second, 1.5e9 / 8);
  s = parse_wan_spec("0ms,64kbit");
  EXPECT_EQ(s.delay, 0ms);
  EXPECT_TRUE(s.active());
  EXPECT_FALSE(parse_wan_spec("0ms").active());
  EXPECT_EQ(describe(parse_wan_spec("10ms,100mbit")), "10 ms one way, 100 Mbit/s");
}

TEST(WanSpec, RefusesWhatItCannotReadNamingIt) {
  const std::pair<const char*, const char*> bad[] = {
      {"", "the delay ''"},           {"10", "the delay '10'"},       {"ten ms", "the delay 'ten ms'"},
      {"-1ms", "the delay '-1ms'"},   {"10 ms", "the delay '10 ms'"}, {"10ms,", "the rate ''"},
      {"10ms,100", "the rate '100'"}, {"10ms,100mb", "the rate '100mb'"}, {"61s", "more than a minute"},
      {"1ms,0.5kbit", "below 1 kbit"}, {"nanms", "the delay 'nanms'"}};
  for (const auto& [text, says] : bad) {
    try {
      parse_wan_spec(text);
      ADD_FAILURE() << "'" << text << "' was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << text << ": " << e.what();
    }
  }
}

TEST(WanLine, AnIdleLineDeliversAfterClockingOutAndTheDelay) {
  WanLine line(parse_wan_spec("10ms,8mbit"));  // 1 byte per microsecond
  const auto t0 = WanLine::Clock::now();
  EXPECT_EQ(line.arrival(1000, t0), t0 + 1000us + 10ms);
  // Long after: idle again.
  const auto t1 = t0 + 1s;
  EXPECT_EQ(line.arrival(0, t1), t1 + 10ms);
}

TEST(WanLine, BackToBackMessagesQueueBehindEachOtherInOrder) {
  for (std::size_t size : {1u, 100u, 1500u, 65536u}) {
    WanLine line(parse_wan_spec("5ms,8mbit"));
    const auto t0 = WanLine::Clock::now();
    WanLine::Clock::time_point last{};
    for (int i = 1; i <= 64; ++i) {
      const auto a = line.arrival(size, t0);  // all handed over at once
      EXPECT_EQ(a, t0 + std::chrono::microseconds(size * i) + 5ms) << size << " bytes, message " << i;
      EXPECT_GE(a, last);
      last = a;
    }
  }
}

TEST(WanLine, WithoutARateOnlyTheDelayCounts) {
  WanLine line(parse_wan_spec("3ms"));
  const auto t0 = WanLine::Clock::now();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(line.arrival(1 << 20, t0), t0 + 3ms);
}
