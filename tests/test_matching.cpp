// Matching for relay traffic: posted order, arrival order, contexts, any-tag.
#include <gtest/gtest.h>

#include "matching.h"

using namespace gridrt::detail;

namespace {
struct Recv {
  Envelope pattern;
  int id;
};
Arrival msg(std::uint32_t ctx, int src, int tag, std::string data) { return {{ctx, src, tag}, std::move(data)}; }
}  // namespace

TEST(Matching, UnexpectedMessagesMatchInArrivalOrder) {
  MatchQueue<Recv> q;
  for (int i = 0; i < 3; ++i) {
    Arrival a = msg(0, 1, 5, "m" + std::to_string(i));
    EXPECT_FALSE(q.arrive(a));
  }
  for (int i = 0; i < 3; ++i) {
    auto got = q.post(std::make_shared<Recv>(Recv{{0, 1, 5}, i}));
    ASSERT_TRUE(got);
    EXPECT_EQ(got->data, "m" + std::to_string(i));
  }
  EXPECT_EQ(q.unexpected(), 0u);
}

TEST(Matching, PostedReceivesMatchInPostOrderOnSourceTagAndContext) {
  MatchQueue<Recv> q;
  EXPECT_FALSE(q.post(std::make_shared<Recv>(Recv{{0, 1, 7}, 1})));
  EXPECT_FALSE(q.post(std::make_shared<Recv>(Recv{{0, 1, -1}, 2})));  // any tag
  EXPECT_FALSE(q.post(std::make_shared<Recv>(Recv{{1, 1, 7}, 3})));   // other context
  Arrival wrong_src = msg(0, 2, 7, "");
  EXPECT_FALSE(q.arrive(wrong_src));
  Arrival a = msg(0, 1, 8, "");
  auto r = q.arrive(a);
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)->id, 2);  // tag 8 skips the tag-7 receive, takes the any-tag one
  Arrival b = msg(1, 1, 7, "");
  r = q.arrive(b);
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)->id, 3);
  Arrival c = msg(0, 1, 7, "");
  r = q.arrive(c);
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)->id, 1);
  EXPECT_EQ(q.posted(), 0u);
  EXPECT_EQ(q.unexpected(), 1u);  // the one from source 2
}

TEST(Matching, AnyTagTakesTheOldestMatchingArrival) {
  MatchQueue<Recv> q;
  Arrival a = msg(0, 4, 3, "first"), b = msg(0, 4, 1, "second");
  q.arrive(a);
  q.arrive(b);
  auto got = q.post(std::make_shared<Recv>(Recv{{0, 4, -1}, 0}));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->data, "first");
  got = q.post(std::make_shared<Recv>(Recv{{0, 4, 1}, 0}));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->data, "second");
}
