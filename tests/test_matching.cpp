// Matching for relay traffic: posted order, arrival order, contexts, any-tag.
#include <gtest/gtest.h>

#include <string>

#include "transport/matching.h"

using namespace gridrt::detail;

namespace {
struct Recv {
  Envelope pattern;
  int id;
};
struct Msg {
  Envelope env;
  std::string data;
};
using Queue = MatchQueue<Recv, Msg>;
std::shared_ptr<Msg> msg(std::uint32_t ctx, int src, int tag, std::string data = "") {
  return std::make_shared<Msg>(Msg{{ctx, src, tag}, std::move(data)});
}
std::shared_ptr<Recv> recv(std::uint32_t ctx, int src, int tag, int id) { return std::make_shared<Recv>(Recv{{ctx, src, tag}, id}); }
}  // namespace

TEST(Matching, UnexpectedMessagesMatchInArrivalOrder) {
  Queue q;
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(q.arrive(msg(0, 1, 5, "m" + std::to_string(i))));
  for (int i = 0; i < 3; ++i) {
    auto got = q.post(recv(0, 1, 5, i));
    ASSERT_TRUE(got);
    EXPECT_EQ(got->data, "m" + std::to_string(i));
  }
  EXPECT_EQ(q.unexpected(), 0u);
}

TEST(Matching, PostedReceivesMatchInPostOrderOnSourceTagAndContext) {
  Queue q;
  EXPECT_FALSE(q.post(recv(0, 1, 7, 1)));
  EXPECT_FALSE(q.post(recv(0, 1, -1, 2)));  // any tag
  EXPECT_FALSE(q.post(recv(1, 1, 7, 3)));   // other context
  EXPECT_FALSE(q.arrive(msg(0, 2, 7)));     // other source: unexpected
  auto r = q.arrive(msg(0, 1, 8));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, 2);  // tag 8 skips the tag-7 receive, takes the any-tag one
  r = q.arrive(msg(1, 1, 7));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, 3);
  r = q.arrive(msg(0, 1, 7));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, 1);
  EXPECT_EQ(q.posted(), 0u);
  EXPECT_EQ(q.unexpected(), 1u);  // the one from source 2
}

TEST(Matching, AnyTagTakesTheOldestMatchingArrival) {
  Queue q;
  q.arrive(msg(0, 4, 3, "first"));
  q.arrive(msg(0, 4, 1, "second"));
  auto got = q.post(recv(0, 4, -1, 0));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->data, "first");
  got = q.post(recv(0, 4, 1, 0));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->data, "second");
}

TEST(Matching, TakePostedEmptiesTheQueue) {
  Queue q;
  q.post(recv(0, 1, 1, 1));
  q.post(recv(0, 2, 1, 2));
  EXPECT_EQ(q.take_posted().size(), 2u);
  EXPECT_EQ(q.posted(), 0u);
  EXPECT_FALSE(q.arrive(msg(0, 1, 1)));
}
