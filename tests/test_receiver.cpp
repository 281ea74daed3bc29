// The transport's receiving side alone (runtime/src/transport/receiver.h): what arrives before
// its receive is kept, whatever buffers its bytes came in, and delivered whole and in order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "transport/receiver.h"

namespace gridrt::detail {
namespace {

TEST(Receiver, AnUnexpectedMessageArrivesWholeWhetherItsFramesAreKeptOrCopied) {
  std::size_t granted = 0;
  Receiver r({[&](const Envelope&, std::size_t bytes, bool) { granted += bytes; }, [](const Envelope&, std::uint64_t) {}});
  const Envelope from{7, 1, 3};
  // Three fragments of one message: a large frame body (kept as it is), a large one lying in a
  // buffer far larger than its bytes (copied: the budget counts bytes), and a small one.
  std::string kept(Receiver::kTakeWholeFrom + 100, 'a');
  std::string roomy;
  roomy.reserve(8 * Receiver::kTakeWholeFrom);
  roomy.assign(Receiver::kTakeWholeFrom, 'b');
  std::string small(10, 'c');
  for (std::size_t i = 0; i < kept.size(); ++i) kept[i] = static_cast<char>('a' + i % 7);
  const std::string whole = kept + roomy + small;
  std::size_t cost = 0;
  std::vector<std::string*> parts{&kept, &roomy, &small};
  for (std::size_t i = 0; i < parts.size(); ++i) {
    Receiver::Fragment f;
    f.env = from;
    f.data = parts[i]->data();
    f.size = parts[i]->size();
    f.owner = parts[i];
    f.total = whole.size();
    f.last = i + 1 == parts.size();
    f.cost = f.size + 64;
    cost += f.cost;
    r.on_fragment(f);
  }
  EXPECT_EQ(roomy, std::string(Receiver::kTakeWholeFrom, 'b'));  // (not taken)
  EXPECT_EQ(small, "cccccccccc");
  EXPECT_EQ(granted, cost);  // within the unexpected budget: its sender went on
  std::vector<char> buf(whole.size() + 5, 'z');
  auto op = r.post(buf.data(), buf.size(), from);
  ASSERT_TRUE(op->done);
  EXPECT_EQ(op->bytes, whole.size());
  EXPECT_FALSE(op->truncated);
  EXPECT_EQ(std::string(buf.data(), whole.size()), whole);
  EXPECT_EQ(buf.back(), 'z');
}

TEST(Receiver, AKeptMessageTooLargeForItsReceiveIsTruncatedThere) {
  Receiver r({[](const Envelope&, std::size_t, bool) {}, [](const Envelope&, std::uint64_t) {}});
  const Envelope from{7, 1, 3};
  std::string a(Receiver::kTakeWholeFrom, 'a'), b(Receiver::kTakeWholeFrom, 'b');
  for (std::string* body : {&a, &b}) {
    Receiver::Fragment f;
    f.env = from;
    f.data = body->data();
    f.size = body->size();
    f.owner = body;
    f.total = 2 * Receiver::kTakeWholeFrom;
    f.last = body == &b;
    f.cost = f.size + 64;
    r.on_fragment(f);
  }
  std::vector<char> buf(Receiver::kTakeWholeFrom + 1);
  auto op = r.post(buf.data(), buf.size(), from);
  ASSERT_TRUE(op->done);
  EXPECT_TRUE(op->truncated);
  EXPECT_EQ(op->bytes, buf.size());
  EXPECT_EQ(buf.back(), 'b');
  EXPECT_EQ(buf.front(), 'a');
}

}  // namespace
}  // namespace gridrt::detail
