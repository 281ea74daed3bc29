// The transport's sending side alone (runtime/src/transport/sender.h): frames leave as the
// receiver's credit allows, rendezvous rests wait for the match, synchronous sends complete
// at it, failures fail what waits.
#include <gtest/gtest.h>

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
                4096};
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

}  // namespace
}  // namespace gridrt::detail
