// The WAN emulation's arithmetic (common/wan): spec parsing, and when an emulated line
// delivers what it is given; the relay's emulated path (relay/emulated_path.h) on its own.
#include <gtest/gtest.h>

#include <unistd.h>

#include <set>
#include <tuple>

#include "bench/wan_bounds.h"
#include "common/grid.h"
#include "common/xml.h"
#include "common/wan.h"
#include "relay/emulated_path.h"

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
      {"", "the delay ''"},           {"10", "the delay '10'"},        {"ten ms", "the delay 'ten ms'"}, {"-1ms", "the delay '-1ms'"},
      {"10 ms", "the delay '10 ms'"}, {"10ms,", "the rate ''"},        {"10ms,100", "the rate '100'"},   {"10ms,100mb", "the rate '100mb'"},
      {"61s", "more than a minute"},  {"1ms,0.5kbit", "below 1 kbit"}, {"nanms", "the delay 'nanms'"}};
  for (const auto& [text, says] : bad) {
    try {
      parse_wan_spec(text);
      ADD_FAILURE() << "'" << text << "' was accepted";
    } catch (const std::invalid_argument& e) { EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << text << ": " << e.what(); }
  }
}

TEST(WanLine, AnIdleLineClocksOutAtItsRate) {
  WanLine line(parse_wan_spec("10ms,8mbit").bytes_per_second);  // 1 byte per microsecond
  const auto t0 = WanLine::Clock::now();
  EXPECT_EQ(line.clocked_out(1000, t0), t0 + 1000us);
  // Long after: idle again.
  const auto t1 = t0 + 1s;
  EXPECT_EQ(line.clocked_out(0, t1), t1);
}

TEST(WanLine, BackToBackMessagesQueueBehindEachOtherInOrder) {
  for (std::size_t size : {1u, 100u, 1500u, 65536u}) {
    WanLine line(parse_wan_spec("5ms,8mbit").bytes_per_second);
    const auto t0 = WanLine::Clock::now();
    WanLine::Clock::time_point last{};
    for (int i = 1; i <= 64; ++i) {
      const auto a = line.clocked_out(size, t0);  // all handed over at once
      EXPECT_EQ(a, t0 + std::chrono::microseconds(size * i)) << size << " bytes, message " << i;
      EXPECT_GE(a, last);
      last = a;
    }
  }
}

TEST(WanLine, WithoutARateNothingWaits) {
  WanLine line(parse_wan_spec("3ms").bytes_per_second);
  const auto t0 = WanLine::Clock::now();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(line.clocked_out(1 << 20, t0), t0);
}

// ---------------------------------------------------------------- the grid's emulated WAN

TEST(WanPlan, PairsAndAccessLinesFromTheOptions) {
  WanPlan plan;
  EXPECT_FALSE(plan.active());
  ASSERT_TRUE(apply_wan_option(plan, "--emulate-wan", "10ms,100mbit"));
  ASSERT_TRUE(apply_wan_option(plan, "--emulate-wan-pair", "B:A=30ms,50mbit"));
  EXPECT_FALSE(apply_wan_option(plan, "--clusters", "3"));
  EXPECT_TRUE(plan.active());
  // A pair is the same both ways; pairs not named get the default.
  EXPECT_EQ(plan.pair("A", "B").delay, 30ms);
  EXPECT_EQ(plan.pair("B", "A").bytes_per_second, 50e6 / 8);
  EXPECT_EQ(plan.pair("A", "C").delay, 10ms);
  // Each direction between two sites has its line, named alike in every relay.
  EXPECT_EQ(plan.line("A", "B").name, "A>B");
  EXPECT_EQ(plan.line("B", "A").name, "B>A");
  EXPECT_EQ(plan.line("A", "C").bytes_per_second, 100e6 / 8);
  // An access line takes everything its site sends, at its own rate or the default one.
  ASSERT_TRUE(apply_wan_option(plan, "--emulate-wan-access", "A=1gbit"));
  ASSERT_TRUE(apply_wan_option(plan, "--emulate-wan-access", "C"));
  EXPECT_EQ(plan.line("A", "B").name, "A>*");
  EXPECT_EQ(plan.line("A", "C").name, "A>*");
  EXPECT_EQ(plan.line("A", "C").bytes_per_second, 1e9 / 8);
  EXPECT_EQ(plan.line("C", "B").bytes_per_second, 100e6 / 8);
  EXPECT_EQ(plan.line("B", "A").name, "B>A");
  EXPECT_EQ(plan.named_sites(), (std::set<std::string>{"A", "B", "C"}));
  // An access line given no rate runs at the default rate, also one given after it.
  ASSERT_TRUE(apply_wan_option(plan, "--emulate-wan", "10ms,200mbit"));
  EXPECT_EQ(plan.line("C", "B").bytes_per_second, 200e6 / 8);
  ASSERT_TRUE(apply_wan_option(plan, "--emulate-wan-access", "all"));
  EXPECT_EQ(plan.line("B", "C").name, "B>*");
  EXPECT_NE(plan.describe().find("A-B 30 ms one way, 50 Mbit/s"), std::string::npos) << plan.describe();
}

TEST(WanPlan, RefusesWhatItCannotReadNamingIt) {
  const std::tuple<const char*, const char*, const char*> bad[] = {
      {"--emulate-wan-pair", "A=10ms", "must be SITE:SITE=DELAY"}, {"--emulate-wan-pair", "A:A=10ms", "names site 'A' twice"},
      {"--emulate-wan-pair", "A:B=", "must be SITE:SITE"},         {"--emulate-wan-pair", "A:B=fast", "the delay 'fast'"},
      {"--emulate-wan-access", "", "must be SITE[=RATE]"},         {"--emulate-wan-access", "A=10", "the rate '10'"},
      {"--emulate-wan-access", "A=0.5kbit", "below 1 kbit"},       {"--emulate-wan", "10", "the delay '10'"}};
  for (const auto& [option, value, says] : bad) {
    WanPlan plan;
    try {
      apply_wan_option(plan, option, value);
      ADD_FAILURE() << option << " " << value << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << value << ": " << e.what();
    }
  }
}

// Two relays of one site are two processes; two WanLine objects of one name stand for them.
TEST(WanLine, ASharedLineClocksEveryUsersTrafficThroughOneLine) {
  const double spec = parse_wan_spec("0ms,8mbit").bytes_per_second;  // 1 byte per microsecond
  const std::string grid = "test-" + std::to_string(::getpid());
  auto first = WanLine::shared(grid, "A>B", spec), second = WanLine::shared(grid, "A>B", spec);
  auto other_pair = WanLine::shared(grid, "A>C", spec), other_grid = WanLine::shared(grid + "x", "A>B", spec);
  const auto t0 = WanLine::Clock::now();
  EXPECT_EQ(first->clocked_out(1000, t0), t0 + 1000us);
  EXPECT_EQ(second->clocked_out(1000, t0), t0 + 2000us);  // behind the first one's bytes
  EXPECT_EQ(first->clocked_out(500, t0), t0 + 2500us);
  EXPECT_EQ(other_pair->clocked_out(1000, t0), t0 + 1000us);  // a line of its own
  EXPECT_EQ(other_grid->clocked_out(1000, t0), t0 + 1000us);
}

TEST(WanPlan, FromTheGridDescriptionWithItsSitesChecked) {
  const std::string clusters =
      "<cluster name='a1' site='A' slots='1'><relay link='127.0.0.1:0' local='127.0.0.1:0'/><launch>mpiexec -n {np}</launch></cluster>"
      "<cluster name='a2' site='A' slots='1'><relay link='127.0.0.1:0' local='127.0.0.1:0'/><launch>mpiexec -n {np}</launch></cluster>"
      "<cluster name='b' site='B' slots='1'><relay link='127.0.0.1:0' local='127.0.0.1:0'/><launch>mpiexec -n {np}</launch></cluster>";
  const Grid g = parse_grid(
      "g.xml", "<grid>" + clusters +
                   "<wan delay='10ms' rate='100mbit'><between sites='A B' delay='25ms'/><access site='B' rate='1gbit'/></wan></grid>");
  EXPECT_EQ(g.wan.pair("B", "A").delay, 25ms);
  EXPECT_EQ(g.wan.pair("B", "A").bytes_per_second, 0);  // the pair's own: no rate given
  EXPECT_EQ(g.wan.line("B", "A").name, "B>*");
  EXPECT_EQ(g.wan.line("B", "A").bytes_per_second, 1e9 / 8);
  EXPECT_FALSE(parse_grid("g.xml", "<grid>" + clusters + "</grid>").wan.active());
  const std::pair<std::string, const char*> bad[] = {
      {"<wan delay='10ms'><between sites='A C'/></wan>", "g.xml:1:"},
      {"<wan delay='10ms'><between sites='A C'/></wan>", "site 'C' is not the site of any cluster"},
      {"<wan delay='10ms'><between sites='A'/></wan>", "must name two sites"},
      {"<wan delay='10'/>", "the delay '10'"},
      {"<wan delay='1ms' access='some'/>", "attribute access must be 'all'"},
      {"<wan delay='1ms'><line/></wan>", "unexpected element <line>"}};
  for (const auto& [wan, says] : bad) {
    try {
      parse_grid("g.xml", "<grid>" + clusters + wan + "</grid>");
      ADD_FAILURE() << wan << " was accepted";
    } catch (const InputError& e) { EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << wan << ": " << e.what(); }
  }
}

// gridbench's bound_us, by hand: sites A (4 processes) and B (1), 1 ms, 20 Mbit/s (2.5 bytes
// per microsecond), 32 KiB blocks.
TEST(WanBounds, ByHandForPairLinesAndAnAccessLine) {
  WanPlan plan;
  apply_wan_option(plan, "--emulate-wan", "1ms,20mbit");
  const bench::SiteShape s{{"A", "B"}, {4, 1}, 1};
  const double n = 32768, us_per_byte = 1 / 2.5;
  EXPECT_DOUBLE_EQ(bench::wan_bound_us("gather", 32768, plan, s), 1000 + 4 * n * us_per_byte);    // A's 4 blocks to B
  EXPECT_DOUBLE_EQ(bench::wan_bound_us("scatter", 32768, plan, s), 1000 + 4 * n * us_per_byte);   // B's 4 blocks to A
  EXPECT_DOUBLE_EQ(bench::wan_bound_us("alltoall", 32768, plan, s), 1000 + 4 * n * us_per_byte);  // 4 x 1 each way
  EXPECT_DOUBLE_EQ(bench::wan_bound_us("bcast", 32768, plan, s), 1000 + n * us_per_byte);
  EXPECT_DOUBLE_EQ(bench::wan_bound_us("barrier", 0, plan, s), 1000);
  EXPECT_DOUBLE_EQ(bench::wan_bound_us("bcast", 0, plan, s), 1000);  // a message crosses, empty or not
  // Three sites, A to C slower (5 ms): a broadcast from A reaches C sooner through B (1 + 1
  // ms), the line B to C clocking all n; a gather at A takes C's block on the direct line.
  apply_wan_option(plan, "--emulate-wan-pair", "A:C=5ms,20mbit");
  const bench::SiteShape three{{"A", "B", "C"}, {1, 1, 1}, 0};
  EXPECT_DOUBLE_EQ(bench::wan_bound_us("bcast", 32768, plan, three), 2000 + n * us_per_byte);
  EXPECT_DOUBLE_EQ(bench::wan_bound_us("gather", 32768, plan, three), 5000 + n * us_per_byte);
  EXPECT_DOUBLE_EQ(bench::wan_bound_us("barrier", 0, plan, three), 5000);
  // With A's access line A's sends share it: a broadcast sends n on it once at least (1 ms
  // to B after it), a scatter both blocks.
  apply_wan_option(plan, "--emulate-wan-access", "A");
  EXPECT_DOUBLE_EQ(bench::wan_bound_us("bcast", 32768, plan, three), 2000 + n * us_per_byte);
  EXPECT_DOUBLE_EQ(bench::wan_bound_us("scatter", 32768, plan, three), std::max(5000 + n * us_per_byte, 1000 + 2 * n * us_per_byte));
  // Three sites of 1 ms behind access lines of 20 Mbit/s: nothing is gained by relaying but
  // nothing lost, the root's line clocking n once.
  WanPlan one_port;
  apply_wan_option(one_port, "--emulate-wan", "1ms,20mbit");
  apply_wan_option(one_port, "--emulate-wan-access", "all");
  EXPECT_DOUBLE_EQ(bench::wan_bound_us("bcast", 32768, one_port, three), 1000 + n * us_per_byte);
  EXPECT_EQ(bench::wan_bound_us("bcast", 32768, WanPlan{}, three), 0);
}

// Frames through an emulated path come out in order, none before the line has clocked it out
// and the delay has passed, except credits, which go ahead of the data on the line. (Lower
// bounds only: a timer never fires early, while a busy machine may fire it late.)
TEST(EmulatedPath, DeliversInOrderAfterTheLineAndTheDelayWithCreditsAhead) {
  boost::asio::io_context io;
  WanLine line(1e6);                                                          // 1 MB/s: a frame of 10,000 bytes takes 10 ms
  std::vector<std::pair<std::uint64_t, WanLine::Clock::time_point>> arrived;  // seq, when
  EmulatedPath path(io, line, 20ms, [&](wire::Frame& f) { arrived.emplace_back(f.header.seq, WanLine::Clock::now()); });
  const auto start = WanLine::Clock::now();
  for (std::uint64_t seq = 1; seq <= 3; ++seq) {
    wire::Frame f = wire::make_frame(wire::Type::kData, std::string(10000 - wire::kHeaderSize, 'x'));
    f.header.seq = seq;
    path.send(f);
    EXPECT_TRUE(f.body.empty()) << "taken, not copied";
  }
  wire::Frame credit = wire::make_frame(wire::Type::kCredit);
  credit.header.seq = 4;
  path.send(credit);
  io.run();
  ASSERT_EQ(arrived.size(), 4u);
  EXPECT_EQ(arrived[0].first, 4u);  // the credit, ahead of the data queued on the line
  for (std::uint64_t i = 1; i <= 3; ++i) {
    EXPECT_EQ(arrived[i].first, i);
    EXPECT_GE(arrived[i].second - start, 20ms + i * 10ms) << "frame " << i;
  }
  EXPECT_GE(arrived[0].second - start, 20ms);
}

TEST(EmulatedPath, WhatIsOnTheLineWhenTheRelayStopsIsDropped) {
  boost::asio::io_context io;
  WanLine line(0);
  int arrived = 0;
  EmulatedPath path(io, line, 50ms, [&](wire::Frame&) { ++arrived; });
  wire::Frame f = wire::make_frame(wire::Type::kData, "x");
  path.send(f);
  path.stop();
  io.run();
  EXPECT_EQ(arrived, 0);
}
