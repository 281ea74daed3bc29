// The transport's sending side alone (runtime/src/transport/sender.h): frames leave as the
// receiver's credit allows, rendezvous rests wait for the match, synchronous sends complete
// at it, failures fail what waits.
#include <gtest/gtest.h>

#include <algorithm>
#include <queue>
#include <utility>
#include <vector>

#include "transport/sender.h"

namespace gridrt::detail {
namespace {

struct Wire {
  std::vector<std::pair<std::int32_t, wire::Header>> frames;  // what left, in order
  Sender sender{[this](std::int32_t dst, std::string f) {
                  wire::Decoder d;
                  d.feed(f.data(), f.size());
                  wire::Frame frame;
                  EXPECT_EQ(d.next(frame), wire::Decoder::Status::kFrame);
                  frames.emplace_back(dst, frame.header);
                },
                flow::Window{4096, false}};
  std::shared_ptr<RemoteOp> send(std::int32_t dst, std::uint32_t context, std::size_t bytes, bool synchronous = false,
                                 bool rendezvous = false) {
    auto op = std::make_shared<RemoteOp>();
    op->synchronous = synchronous;
    const Sender::Slot slot = sender.slot(dst, context);
    wire::Header h;
    h.dst = dst;
    h.context = context;
    std::vector<char> data(bytes, 'x');
    sender.queue(dst, context, Sender::encode(h, slot, data.data(), bytes, synchronous, rendezvous, op), op, synchronous, rendezvous);
    return op;
  }
};

TEST(Sender, FramesLeaveAsCreditAllowsAndTheMessageCompletesWithItsLastFrame) {
  Wire w;  // window 4096: fragments of 960 bytes, each costing 1024
  const std::size_t fragment = flow::fragment_bytes(4096);
  auto op = w.send(1, 5, 6 * fragment);
  EXPECT_EQ(w.frames.size(), 4u);  // 4 x 1024 of credit
  EXPECT_FALSE(op->done);
  EXPECT_TRUE(w.frames[0].second.flags & wire::kMoreFragments);
  EXPECT_EQ(w.frames[0].second.seq, 6 * fragment);  // the first frame names the size
  w.sender.credit(1, 5, fragment + flow::kFrameCost);
  EXPECT_EQ(w.frames.size(), 5u);
  EXPECT_TRUE(w.sender.credit(1, 5, 10 * 1024));
  EXPECT_EQ(w.frames.size(), 6u);
  EXPECT_FALSE(w.frames.back().second.flags & wire::kMoreFragments);
  EXPECT_TRUE(op->done);
  // Another stream has credit of its own.
  auto other = w.send(2, 5, 10);
  EXPECT_TRUE(other->done);
}

TEST(Sender, TheDefaultWindowHolds512KiBOfMessagesInWholeFrames) {
  Wire w;
  w.sender.set_window(flow::Window{});
  // A wide-area line's frames (no round trip seen yet): a message of 512 KiB leaves whole.
  auto first = w.send(1, 5, 512 * 1024);
  EXPECT_EQ(w.frames.size(), 8u);
  EXPECT_TRUE(first->done);
  w.sender.credit(1, 5, 8 * (flow::kMaxFragment + flow::kFrameCost));  // (at once: a short path)
  // On a short path, a message of 1 MiB goes as eight frames of 128 KiB, four of them at once.
  w.frames.clear();
  auto second = w.send(1, 5, 1024 * 1024);
  EXPECT_EQ(w.frames.size(), 4u);
  EXPECT_EQ(w.frames[0].second.seq, 1024u * 1024);
  EXPECT_FALSE(second->done);
  EXPECT_TRUE(w.sender.credit(1, 5, 4 * (flow::kMaxShortPathFragment + flow::kFrameCost)));
  EXPECT_EQ(w.frames.size(), 8u);
  EXPECT_TRUE(second->done);
}

TEST(Sender, AHeadAndTheDataBehindItAreOneMessageWhereverTheFramesCutThem) {
  Sender::Slot slot;
  slot.fragment = 7;
  for (const std::size_t head_size : {std::size_t{3}, std::size_t{7}, std::size_t{10}}) {
    const std::string head = std::string("HEADHEADHE").substr(0, head_size), data = "0123456789abcdefghij";
    wire::Header h;
    const Sender::Frames frames = Sender::encode(h, slot, head, data.data(), data.size(), false, false, std::make_shared<RemoteOp>());
    std::string whole;
    for (const auto& o : frames.first) {
      wire::Decoder d;
      d.feed(o.bytes.data(), o.bytes.size());
      wire::Frame f;
      ASSERT_EQ(d.next(f), wire::Decoder::Status::kFrame);
      EXPECT_EQ(f.header.seq, head.size() + data.size());  // every fragment names the whole message's size
      EXPECT_LE(f.body.size(), slot.fragment);
      whole += f.body;
    }
    EXPECT_EQ(whole, head + data) << "head of " << head_size;
    EXPECT_EQ(frames.first.size(), (head.size() + data.size() + 6) / 7);
  }
}

TEST(Sender, ARendezvousRestWaitsForTheMatchAndASynchronousSendCompletesAtIt) {
  Wire w;
  const std::size_t fragment = flow::fragment_bytes(4096);
  auto big = w.send(1, 5, 3 * fragment, false, true);
  EXPECT_EQ(w.frames.size(), 1u);  // the first part only
  w.sender.credit(1, 5, 10 * 1024);
  EXPECT_EQ(w.frames.size(), 1u);
  EXPECT_TRUE(w.sender.matched(1, 5, 0));
  EXPECT_EQ(w.frames.size(), 3u);
  EXPECT_EQ(w.frames[1].second.type, wire::Type::kRest);
  EXPECT_EQ(w.frames[1].second.seq, 0u);  // the rest names its message
  EXPECT_TRUE(big->done);
  auto sync = w.send(1, 5, 10, true);
  EXPECT_TRUE(sync->written);
  EXPECT_FALSE(sync->done);
  EXPECT_FALSE(w.sender.matched(1, 5, 7));  // (no such message: nothing)
  EXPECT_TRUE(w.sender.matched(1, 5, 1));
  EXPECT_TRUE(sync->done);
}

TEST(Sender, FailuresFailWhatWaitsAndWhatComesAfter) {
  Wire w;
  const std::size_t fragment = flow::fragment_bytes(4096);
  auto stuck = w.send(1, 5, 8 * fragment);
  auto waiting = w.send(2, 5, 10, true);
  w.sender.fail_to([](std::int32_t r) { return r == 1; }, "cluster B lost");
  EXPECT_EQ(stuck->error, "cluster B lost");
  EXPECT_TRUE(waiting->error.empty());
  w.sender.fail("the relay is gone");
  EXPECT_EQ(waiting->error, "the relay is gone");
  auto later = w.send(3, 5, 10);
  EXPECT_EQ(later->error, "the relay is gone");
}

// A message of one frame that leaves three quarters of the window or more says that its
// credit may wait; a message of several frames never does.
TEST(Sender, AOneFrameMessageLetsItsCreditWaitOnlyWhileThreeQuartersOfTheWindowAreLeft) {
  Wire w;  // window 4096: a 10-byte message costs 74
  for (int i = 0; i < 14; ++i) w.send(1, 5, 10);
  ASSERT_EQ(w.frames.size(), 14u);
  for (int i = 0; i < 13; ++i) EXPECT_TRUE(w.frames[i].second.flags & wire::kCreditMayWait) << i;  // 4096 - 13 x 74 >= 3072
  EXPECT_FALSE(w.frames[13].second.flags & wire::kCreditMayWait);
  w.sender.credit(1, 5, 14 * 74);
  w.send(1, 5, 2000);  // three frames
  for (std::size_t i = 14; i < w.frames.size(); ++i) EXPECT_FALSE(w.frames[i].second.flags & wire::kCreditMayWait) << i;
  w.send(1, 5, 10);
  EXPECT_FALSE(w.frames.back().second.flags & wire::kCreditMayWait);  // 4096 - 2000 - 3 x 64 - 74 left: less
}

// Whatever the messages' sizes, a receiver that holds back every credit that may wait, and
// sends what it holds with the next credit that may not, never leaves the sender stalled.
TEST(Sender, CreditThatWaitsAtTheReceiverNeverStallsTheSender) {
  Wire w;
  std::size_t delivered = 0, held = 0;
  std::vector<std::shared_ptr<RemoteOp>> sends;
  unsigned seed = 7;
  for (int i = 0; i < 2000; ++i) {
    seed = seed * 1103515245 + 12345;
    sends.push_back(w.send(1, 5, 1 + (seed >> 16) % 3000));
    for (; delivered < w.frames.size(); ++delivered) {  // the receiver takes what left
      const wire::Header& h = w.frames[delivered].second;
      held += h.length + flow::kFrameCost;
      if (h.flags & wire::kCreditMayWait) continue;
      w.sender.credit(1, 5, std::exchange(held, 0));  // (frames it lets go are taken in this loop)
    }
  }
  for (std::size_t i = 0; i < sends.size(); ++i) ASSERT_TRUE(sends[i]->done) << "send " << i << " stalled";
  EXPECT_LE(held, 4096u - 4096u / 4);
}

// A line for a growing window: frames leave through a bottleneck of `rate` bytes per second
// (a queue before it), and each frame's credit comes back `round_trip` seconds after it
// went through; the sender's clock is the line's.
struct Line {
  double rate, round_trip;
  using Clock = std::chrono::steady_clock;
  Clock::time_point now{};
  double free_at = 0;  // seconds: when the bottleneck is free
  struct Credit {
    double at;
    std::uint32_t context;
    std::size_t bytes;
    bool operator>(const Credit& o) const { return at > o.at; }
  };
  std::priority_queue<Credit, std::vector<Credit>, std::greater<>> credits;
  std::uint32_t context = 0;  // of the frames being written
  double seconds() const { return std::chrono::duration<double>(now.time_since_epoch()).count(); }
  Sender sender;

  Line(double rate, double round_trip, flow::Window window)
      : rate(rate),
        round_trip(round_trip),
        sender(
            [this](std::int32_t, std::string f) {
              const std::size_t cost = f.size() - wire::kHeaderSize + flow::kFrameCost;
              free_at = std::max(free_at, seconds()) + static_cast<double>(f.size()) / this->rate;
              credits.push({free_at + this->round_trip, context, cost});
            },
            window, [this] { return now; }) {}

  // `count` messages of `bytes` to rank 1 on `ctx`, each once the one before is all back,
  // `idle` seconds later; returns the seconds the last took (queued to all credit back).
  double stream(std::uint32_t ctx, std::size_t bytes, int count, double idle = 0) {
    std::vector<char> data(bytes, 'x');
    double took = 0;
    for (int i = 0; i < count; ++i) {
      now += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(idle));
      const double begun = seconds();
      context = ctx;
      auto op = std::make_shared<RemoteOp>();
      wire::Header h;
      h.dst = 1;
      h.context = ctx;
      const Sender::Slot slot = sender.slot(1, ctx);
      sender.queue(1, ctx, Sender::encode(h, slot, data.data(), bytes, false, false, op), op, false, false);
      while (!credits.empty()) {
        const Credit c = credits.top();
        credits.pop();
        now = Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(c.at)));
        context = c.context;
        sender.credit(1, c.context, c.bytes);
      }
      took = seconds() - begun;
    }
    return took;
  }
};

TEST(Sender, AWindowGrowsOnALongFatLineUntilItsFramesQueueThere) {
  // 200 Mbit/s over 50 ms: 1.25 MB in flight keeps the line full; the default window does
  // not, and doubles while its frames find no queue: twice, past which they would.
  Line line(25e6, 0.05, flow::Window{});
  const std::size_t settled = flow::settled_window(flow::Window{}, 25e6, 0.05);
  EXPECT_EQ(settled, 4 * flow::kDefaultWindowBytes);
  line.stream(3, 16 << 20, 2);
  EXPECT_EQ(line.sender.window_to(1), settled);
  // Settled, 16 MiB cross at the line's rate (plus a round trip), not at a window per round trip.
  const double took = line.stream(3, 16 << 20, 1);
  EXPECT_LT(took, 1.1 * (16 << 20) / 25e6 + 0.05 + 0.01);
  // A new stream to the same destination begins where the first got to; another
  // destination at the start.
  EXPECT_EQ(line.sender.slot(1, 4).fragment, flow::kMaxFragment);
  line.stream(4, 1 << 20, 1);
  EXPECT_EQ(line.sender.window_to(1), settled);
  EXPECT_EQ(line.sender.window_to(2), flow::kDefaultWindowBytes);
}

TEST(Sender, AWindowStaysWhereItsLineIsShortAndAFixedOneStaysAnywhere) {
  // 50 MB/s over 6 ms: 300 KB fill the line, and the default window already queues its
  // frames; bursts from full credit after idle times (each message alone) do not fool it.
  Line full(50e6, 6e-3, flow::Window{});
  full.stream(1, 4 << 20, 3);
  full.stream(2, 1 << 20, 20, 0.05);
  EXPECT_EQ(full.sender.window_to(1), flow::kDefaultWindowBytes);
  EXPECT_EQ(flow::settled_window(flow::Window{}, 50e6, 6e-3), flow::kDefaultWindowBytes);
  // Nor below a least round trip of 5 ms, however fast the line: 1.25 GB/s over 2 ms.
  Line lan(1.25e9, 2e-3, flow::Window{});
  lan.stream(1, 16 << 20, 2);
  EXPECT_EQ(lan.sender.window_to(1), flow::kDefaultWindowBytes);
  EXPECT_EQ(flow::settled_window(flow::Window{}, 1.25e9, 2e-3), flow::kDefaultWindowBytes);
  // There, once a round trip has shown the path short, frames are larger (fewer for the relays
  // and ends to handle); to a destination not yet heard from, and on a long line, they are not.
  EXPECT_EQ(lan.sender.slot(1, 2).fragment, flow::fragment_bytes(flow::kDefaultWindowBytes, true));
  EXPECT_GT(flow::fragment_bytes(flow::kDefaultWindowBytes, true), flow::kMaxFragment);
  EXPECT_EQ(lan.sender.slot(2, 2).fragment, flow::kMaxFragment);
  EXPECT_EQ(full.sender.slot(1, 3).fragment, flow::kMaxFragment);
  // A window GRIDRT_WINDOW set stays, however long the line.
  Line fixed(25e6, 0.05, flow::Window{flow::kDefaultWindowBytes, false});
  const double took = fixed.stream(1, 16 << 20, 1);
  EXPECT_EQ(fixed.sender.window_to(1), flow::kDefaultWindowBytes);
  EXPECT_EQ(fixed.sender.slot(1, 2).fragment, flow::kMaxFragment);
  Line fixed_lan(1.25e9, 2e-3, flow::Window{flow::kDefaultWindowBytes, false});  // (a set window learns the path too)
  fixed_lan.stream(1, 4 << 20, 1);
  EXPECT_EQ(fixed_lan.sender.slot(1, 2).fragment, flow::fragment_bytes(flow::kDefaultWindowBytes, true));
  EXPECT_GT(took, 0.9 * (16 << 20) / (flow::kDefaultWindowBytes / 0.05));  // a window per round trip
  // The largest a window grows to: 1 GB/s over 100 ms would take 100 MB.
  Line huge(1e9, 0.1, flow::Window{});
  huge.stream(1, 64 << 20, 2);
  EXPECT_EQ(huge.sender.window_to(1), flow::kMaxGrownWindowBytes);
  EXPECT_EQ(flow::settled_window(flow::Window{}, 1e9, 0.1), flow::kMaxGrownWindowBytes);
}

}  // namespace
}  // namespace gridrt::detail
