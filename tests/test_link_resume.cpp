// A relay link's session across broken connections (common/link_resume.h), without sockets:
// two ends exchanging numbered frames and acknowledgements over an in-memory line that can
// be cut at any point, losing whatever is on it.
#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>
#include <vector>

#include "common/link_resume.h"

using namespace gridrt;

namespace {

struct OnTheLine {
  bool ack = false;
  std::uint64_t count = 0;  // ack: frames received
  std::string body;         // frame
};

struct End {
  explicit End(std::string name) : cluster(std::move(name)) {}
  std::string cluster;
  LinkResume session{random_instance()};
  std::vector<std::string> delivered;  // bodies, in the order they arrived
  std::deque<OnTheLine> outbound;      // on the line towards the other end
  std::vector<std::string> sent;       // everything handed to keep(), in order
};

class Line {
 public:
  End a{"a"}, b{"b"};
  bool up = false;

  void send(End& from, const std::string& body) {
    wire::Frame f;
    f.body = body;
    from.sent.push_back(body);
    const LinkResume::Kept& k = from.session.keep(std::move(f));
    if (up) from.outbound.push_back({false, 0, *k.body});
  }
  // Moves up to `n` items from `from`'s side of the line to the other end.
  void deliver(End& from, std::size_t n) {
    End& to = &from == &a ? b : a;
    for (; n > 0 && !from.outbound.empty(); --n) {
      OnTheLine item = std::move(from.outbound.front());
      from.outbound.pop_front();
      if (item.ack) {
        ASSERT_TRUE(to.session.acknowledged(item.count));
        continue;
      }
      to.delivered.push_back(item.body);
      if (const auto count = to.session.received(item.body.size())) to.outbound.push_back({true, *count, ""});
    }
  }
  // The connection breaks: whatever is on the line is lost.
  void cut() {
    up = false;
    a.outbound.clear();
    b.outbound.clear();
  }
  // A new connection: `dialler`'s hello, the other's answer, then each sends what it kept.
  std::pair<LinkResume::Answer, LinkResume::Answer> connect(End& dialler) {
    End& other = &dialler == &a ? b : a;
    const LinkHello first = dialler.session.hello(dialler.cluster);
    const LinkResume::Answer at_other = other.session.on_hello(LinkHello::decode(first.encode()));
    const LinkHello second = other.session.hello(other.cluster);
    const LinkResume::Answer at_dialler = dialler.session.on_hello(LinkHello::decode(second.encode()));
    up = true;
    for (End* e : {&a, &b})
      for (const auto& k : e->session.kept()) e->outbound.push_back({false, 0, *k.body});
    return {at_other, at_dialler};
  }
};

std::string numbered(const std::string& from, int i) { return from + "#" + std::to_string(i) + std::string(i % 97, 'x'); }

}  // namespace

// Many connections, each cut at a random point with frames and acknowledgements on the line
// both ways: each end receives every frame the other sent exactly once, in order.
TEST(LinkResume, ConnectionsCutAnywhereLoseDuplicateAndReorderNothing) {
  Line line;
  std::mt19937 random(7);
  EXPECT_EQ(line.connect(line.a).first.outcome, LinkResume::Outcome::kFirst);
  int next_a = 0, next_b = 0;
  for (int connection = 0; connection < 200; ++connection) {
    const int steps = static_cast<int>(random() % 400);
    for (int s = 0; s < steps; ++s) {
      switch (random() % 4) {
        case 0: line.send(line.a, numbered("a", next_a++)); break;
        case 1: line.send(line.b, numbered("b", next_b++)); break;
        case 2: line.deliver(line.a, random() % 8); break;
        case 3: line.deliver(line.b, random() % 8); break;
      }
    }
    line.cut();
    // Frames sent while no connection is up are kept, and go with the next one.
    for (int s = static_cast<int>(random() % 20); s > 0; --s) line.send(random() % 2 ? line.a : line.b, numbered("late", s));
    const auto [at_other, at_dialler] = line.connect(connection % 2 ? line.a : line.b);
    ASSERT_EQ(at_other.outcome, LinkResume::Outcome::kResumed) << at_other.why;
    ASSERT_EQ(at_dialler.outcome, LinkResume::Outcome::kResumed) << at_dialler.why;
  }
  line.deliver(line.a, SIZE_MAX);
  line.deliver(line.b, SIZE_MAX);
  EXPECT_EQ(line.b.delivered, line.a.sent);
  EXPECT_EQ(line.a.delivered, line.b.sent);
  EXPECT_GT(line.a.sent.size(), 10000u);
}

// Acknowledgements bound what a sender keeps: a frame at most kAckFrames after it was received.
TEST(LinkResume, AcknowledgementsBoundWhatIsKept) {
  Line line;
  line.connect(line.a);
  std::size_t most = 0;
  for (int i = 0; i < 5000; ++i) {
    line.send(line.a, numbered("a", i));
    line.deliver(line.a, 1);
    line.deliver(line.b, 1);  // the acknowledgement, when one was due
    most = std::max(most, line.a.session.kept().size());
  }
  EXPECT_LE(most, kAckFrames);
  EXPECT_GT(most, 0u);
  // Large frames: acknowledged by bytes before kAckFrames of them.
  std::size_t most_bytes = 0;
  for (int i = 0; i < 100; ++i) {
    line.send(line.a, std::string(1 << 20, 'y'));
    line.deliver(line.a, 1);
    line.deliver(line.b, 1);
    most_bytes = std::max(most_bytes, line.a.session.kept_bytes());
  }
  EXPECT_LE(most_bytes, kAckBytes + (1 << 20) + 64 * wire::kHeaderSize);
}

// The answer to a dialler's hello is lost with the connection: the dialler never learnt the
// other's session, yet the next connection resumes it, and what the other had sent after
// its hello arrives once.
TEST(LinkResume, AnAnswerLostWithItsConnectionStillResumes) {
  Line line;
  line.send(line.a, "a0");
  const LinkHello first = line.a.session.hello("a");
  EXPECT_EQ(line.b.session.on_hello(first).outcome, LinkResume::Outcome::kFirst);
  line.up = true;
  line.send(line.b, "b0");  // b's hello and this are on the line when it breaks
  line.cut();
  const auto [at_b, at_a] = line.connect(line.a);
  EXPECT_EQ(at_b.outcome, LinkResume::Outcome::kResumed) << at_b.why;
  EXPECT_EQ(at_a.outcome, LinkResume::Outcome::kFirst) << at_a.why;
  line.deliver(line.a, SIZE_MAX);
  line.deliver(line.b, SIZE_MAX);
  EXPECT_EQ(line.a.delivered, std::vector<std::string>{"b0"});
  EXPECT_EQ(line.b.delivered, std::vector<std::string>{"a0"});
}

// A relay that restarts (a new LinkResume) or gives the link up (forget_peer) begins a new
// session: the other end learns that what it kept and received belonged to one that is
// over, whichever of the two dials, and both then count alike from zero.
TEST(LinkResume, ARestartedOrForgettingPeerEndsTheSessionOnBothEnds) {
  for (const bool restart : {true, false})
    for (const bool restarted_dials : {true, false}) {
      Line line;
      line.connect(line.a);
      for (int i = 0; i < 10; ++i) line.send(line.b, numbered("b", i));
      line.deliver(line.b, 5);
      line.cut();
      if (restart) {
        line.a.session = LinkResume(random_instance());
        line.a.delivered.clear();
      } else {
        line.a.session.forget_peer();
      }
      const auto [at_other, at_dialler] = line.connect(restarted_dials ? line.a : line.b);
      const LinkResume::Answer& at_b = restarted_dials ? at_other : at_dialler;
      EXPECT_EQ(at_b.outcome, LinkResume::Outcome::kPeerRestarted) << restart << restarted_dials;
      EXPECT_TRUE(line.b.session.kept().empty()) << "frames of the session that is over are not sent again";
      line.deliver(line.b, SIZE_MAX);
      line.send(line.a, "new-a");
      line.send(line.b, "new-b");
      line.deliver(line.a, SIZE_MAX);
      line.deliver(line.b, SIZE_MAX);
      EXPECT_EQ(line.b.delivered.back(), "new-a");
      EXPECT_EQ(line.a.delivered.back(), "new-b");
      // The new session resumes like any other.
      line.cut();
      const auto again = line.connect(line.b);
      EXPECT_EQ(again.first.outcome, LinkResume::Outcome::kResumed) << again.first.why;
      EXPECT_EQ(again.second.outcome, LinkResume::Outcome::kResumed) << again.second.why;
    }
}

// Counts that cannot be true are refused, and change nothing.
TEST(LinkResume, ImpossibleCountsAreRefused) {
  Line line;
  line.connect(line.a);
  for (int i = 0; i < 3; ++i) line.send(line.a, "x");
  EXPECT_FALSE(line.a.session.acknowledged(4));
  EXPECT_TRUE(line.a.session.acknowledged(2));
  EXPECT_FALSE(line.a.session.acknowledged(1));
  EXPECT_EQ(line.a.session.kept().size(), 1u);
  line.cut();
  LinkHello lie = line.b.session.hello("b");
  lie.received = 9;
  const LinkResume::Answer answer = line.a.session.on_hello(lie);
  EXPECT_EQ(answer.outcome, LinkResume::Outcome::kRefused);
  EXPECT_EQ(answer.why, "it says it received 9 frames, of which 3 were sent and 2 acknowledged");
  EXPECT_EQ(line.a.session.kept().size(), 1u);
}

TEST(LinkResume, HellosThatCannotBeRightAreBadBodies) {
  EXPECT_THROW(LinkHello::decode(LinkHello{"", 1, 0, 0}.encode()), wire::BadBody);
  EXPECT_THROW(LinkHello::decode(LinkHello{"c0", 0, 0, 0}.encode()), wire::BadBody);
  EXPECT_THROW(LinkHello::decode(LinkHello{"c0", 1, 0, 5}.encode()), wire::BadBody);
  EXPECT_THROW(LinkHello::decode("c0"), wire::BadBody);
  const LinkHello h = LinkHello::decode(LinkHello{"c0", 1, 2, 3}.encode());
  EXPECT_EQ(h.cluster, "c0");
  EXPECT_EQ(h.received, 3u);
}
