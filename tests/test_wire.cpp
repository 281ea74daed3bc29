// The pure codec: frames in, frames out, and every kind of garbage rejected.
#include <gtest/gtest.h>
#include <cstring>
#include <span>

#include "common/messages.h"
#include "common/wire.h"

using namespace gridrt;
using namespace gridrt::wire;

namespace {
Frame sample() {
  Frame f = make_frame(Type::kData, "payload bytes", 42);
  f.header.src = 3;
  f.header.dst = -1;
  f.header.context = 7;
  f.header.tag = 99;
  f.header.seq = 1234567890123ull;
  f.header.flags = 5;
  return f;
}
}  // namespace

TEST(Wire, RoundTripByteByByte) {
  const std::string bytes = encode(sample()) + encode(make_frame(Type::kRegistered));
  Decoder d;
  Frame out;
  std::vector<Frame> got;
  for (char c : bytes) {
    d.feed(&c, 1);
    while (d.next(out) == Decoder::Status::kFrame) got.push_back(out);
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].header.type, Type::kData);
  EXPECT_EQ(got[0].header.job, 42u);
  EXPECT_EQ(got[0].header.src, 3);
  EXPECT_EQ(got[0].header.dst, -1);
  EXPECT_EQ(got[0].header.context, 7u);
  EXPECT_EQ(got[0].header.tag, 99);
  EXPECT_EQ(got[0].header.seq, 1234567890123ull);
  EXPECT_EQ(got[0].header.flags, 5u);
  EXPECT_EQ(got[0].body, "payload bytes");
  EXPECT_EQ(got[1].header.type, Type::kRegistered);
  EXPECT_TRUE(got[1].body.empty());
}

// Large bodies are read straight into their frame (Decoder::prepare gives their own space):
// fed whole, or in pieces of every size through prepare/commit, two large frames around
// small ones come out whole and in order.
TEST(Wire, LargeBodiesComeWholeAndInOrderHoweverTheyAreFed) {
  std::string big1(100000, 'a'), big2(20000, 'b');
  for (std::size_t i = 0; i < big1.size(); ++i) big1[i] = static_cast<char>(i * 7);
  Frame f1 = make_frame(Type::kData, big1, 1), f2 = make_frame(Type::kData, "small", 2), f3 = make_frame(Type::kRest, big2, 3);
  const std::string bytes = encode(f1) + encode(f2) + encode(f3) + encode(make_frame(Type::kRegistered));
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{4096}, std::size_t{65536}, bytes.size()}) {
    for (bool zero_copy : {false, true}) {
      Decoder d;
      Frame out;
      std::vector<Frame> got;
      for (std::size_t off = 0; off < bytes.size();) {
        const std::size_t n = std::min(piece, bytes.size() - off);
        if (zero_copy) {
          const std::span<char> space = d.prepare(n);
          ASSERT_LE(space.size(), n);
          ASSERT_GT(space.size(), 0u);
          std::memcpy(space.data(), bytes.data() + off, space.size());
          d.commit(space.size());
          off += space.size();
        } else {
          d.feed(bytes.data() + off, n);
          off += n;
        }
        while (d.next(out) == Decoder::Status::kFrame) got.push_back(out);
      }
      ASSERT_EQ(got.size(), 4u) << piece;
      EXPECT_EQ(got[0].body, big1) << piece;
      EXPECT_EQ(got[0].header.job, 1u);
      EXPECT_EQ(got[1].body, "small");
      EXPECT_EQ(got[2].body, big2) << piece;
      EXPECT_EQ(got[2].header.type, Type::kRest);
      EXPECT_EQ(got[3].header.type, Type::kRegistered);
    }
  }
}

TEST(Wire, HeaderIsFixedSize) { EXPECT_EQ(encode(make_frame(Type::kError)).size(), kHeaderSize); }

TEST(Wire, RejectsGarbage) {
  Decoder d;
  const std::string junk(100, 'x');
  d.feed(junk.data(), junk.size());
  Frame out;
  EXPECT_EQ(d.next(out), Decoder::Status::kBad);
  EXPECT_NE(d.error().find("magic"), std::string::npos);
  EXPECT_EQ(d.next(out), Decoder::Status::kBad);  // stays bad
}

TEST(Wire, RejectsOtherVersionUnknownTypeAndOversize) {
  auto corrupt = [](int offset, unsigned char value) {
    std::string b = encode(sample());
    b[offset] = static_cast<char>(value);
    Decoder d;
    d.feed(b.data(), b.size());
    Frame out;
    EXPECT_EQ(d.next(out), Decoder::Status::kBad);
    return d.error();
  };
  EXPECT_NE(corrupt(4, 9).find("version 9"), std::string::npos);
  EXPECT_NE(corrupt(6, 200).find("unknown frame type 200"), std::string::npos);
  EXPECT_NE(corrupt(15, 0x7f).find("exceeds the maximum"), std::string::npos);
}

TEST(Wire, NeedsMoreUntilTheBodyIsComplete) {
  const std::string b = encode(sample());
  Decoder d;
  d.feed(b.data(), b.size() - 1);
  Frame out;
  EXPECT_EQ(d.next(out), Decoder::Status::kNeedMore);
  d.feed(b.data() + b.size() - 1, 1);
  EXPECT_EQ(d.next(out), Decoder::Status::kFrame);
}

TEST(Messages, RoundTripAndTruncation) {
  JobSpec s;
  s.app_id = "app";
  s.task_id = "t";
  s.groups = {{"a", 2}, {"b", 1}};
  s.executable = "/bin/true";
  s.args = {"x", "", "y z"};
  s.env = {{"K", "V"}};
  s.workdir = "/tmp";
  const std::string body = s.encode();
  const JobSpec back = JobSpec::decode(body);
  EXPECT_EQ(back.groups.size(), 2u);
  EXPECT_EQ(back.groups[1].name, "b");
  EXPECT_EQ(back.args, s.args);
  EXPECT_EQ(back.env, s.env);
  EXPECT_EQ(back.total_processes(), 3u);
  for (std::size_t cut = 0; cut < body.size(); ++cut) EXPECT_THROW(JobSpec::decode(body.substr(0, cut)), BadBody) << "cut at " << cut;
  EXPECT_THROW(JobSpec::decode(body + "x"), BadBody);
}

TEST(Messages, GridStatusRoundTripsAndRefusesTruncation) {
  GridStatus st;
  st.clusters = {{"c0", "site0", 3, 2, true, "relay c0 [127.0.0.1:4100 (relay c0)]"}, {"c1", "site1", 3, 0, false, ""}};
  st.jobs = {{7, "user alice", "hello", 4, {"c0", "c1"}, 12}};
  st.waiting = 1;
  st.up_s = 7300;
  st.takes_jobs_back = true;
  const std::string body = st.encode();
  const GridStatus back = GridStatus::decode(body);
  ASSERT_EQ(back.clusters.size(), 2u);
  EXPECT_EQ(back.clusters[0].busy, 2u);
  EXPECT_TRUE(back.clusters[0].relay_up);
  EXPECT_FALSE(back.clusters[1].relay_up);
  ASSERT_EQ(back.jobs.size(), 1u);
  EXPECT_EQ(back.jobs[0].owner, "user alice");
  EXPECT_EQ(back.jobs[0].clusters, (std::vector<std::string>{"c0", "c1"}));
  EXPECT_EQ(back.waiting, 1u);
  EXPECT_TRUE(back.takes_jobs_back);
  for (std::size_t cut = 0; cut < body.size(); ++cut) EXPECT_THROW(GridStatus::decode(body.substr(0, cut)), BadBody) << "cut at " << cut;
  EXPECT_THROW(GridStatus::decode(std::string("\xff\xff\xff\xff", 4)), BadBody) << "a count no body can hold";
}

TEST(Messages, TopologyRejectsInconsistentTables) {
  Topology t;
  t.groups = {"g"};
  t.sites = {"s"};
  t.clusters = {{"c0", 0, 0, 2, "127.0.0.1", 1, true, true, false, ""}};
  t.rank_group = {0, 0};
  Writer w;
  t.encode(w);
  std::string ok = w.take();
  Reader r(ok);
  EXPECT_EQ(Topology::decode(r).size(), 2u);
  t.rank_group = {0, 1};  // group 1 does not exist
  Writer w2;
  t.encode(w2);
  std::string bad = w2.take();
  Reader r2(bad);
  EXPECT_THROW(Topology::decode(r2), BadBody);
}
