// The process side of the relay transport, in-process: several RelayTransports (one per
// "rank") connect to a fake relay on 127.0.0.1 that forwards Data and Credit frames by
// destination rank and counts what each source sent. No MPI, no daemons.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>
#include <tuple>

#include "common/link.h"
#include "common/messages.h"
#include "transport/relay_transport.h"

#include "common/ladder.h"

using namespace gridrt;
using namespace gridrt::detail;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t kWindow = 64 * 1024;

// Forwards frames between connected transports: rank = the local rank of the hello.
class FakeRelay {
 public:
  FakeRelay() : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~FakeRelay() {
    asio::post(io_, [this] {
      acceptor_.close();
      for (auto& l : all_) l->close("test over");
    });
    thread_.join();
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()); }
  // Data bytes forwarded from `rank` so far.
  std::size_t data_from(int rank) { return data_bytes_[rank].load(); }
  // Credit frames forwarded from `rank` so far, and the types of the frames to other processes.
  std::size_t credit_frames_from(int rank) { return credit_frames_[rank].load(); }
  std::vector<wire::Type> types_from(int rank) {
    std::lock_guard<std::mutex> lock(mu_);
    return types_[rank];
  }
  int hellos() const { return hellos_.load(); }
  // Once `n` processes said hello, send them a topology of n one-rank clusters, with the
  // endpoints they announced; cluster i's nodes may dial out iff outbound[i].
  // `fake_endpoints` replace what the processes announced, where not empty.
  void publish_topology_after(int n, std::vector<bool> outbound, std::vector<std::string> fake_endpoints = {}) {
    outbound_ = std::move(outbound);
    fake_endpoints_ = std::move(fake_endpoints);
    topology_for_ = n;
  }
  // `rank` gets the topology `delay` after the others (each process hears the broker
  // through its own relay: the word may reach one later than its peers' first frames).
  void delay_topology(int rank, std::chrono::milliseconds delay) { topology_delay_[rank] = delay; }
  // ClusterLost reports the processes made, as "rank R: cluster T: body".
  std::vector<std::string> reports() {
    std::lock_guard<std::mutex> lock(mu_);
    return reports_;
  }
  // Sends `rank` a frame, as the broker's word through a relay.
  void tell(int rank, const wire::Frame& f) {
    asio::post(io_, [this, rank, f] { links_.at(rank)->send(f); });
  }
  // Drops every connection, as a relay that dies would.
  void kill() {
    std::promise<void> done;
    asio::post(io_, [&] {
      for (auto& l : all_) l->close("relay killed");
      done.set_value();
    });
    done.get_future().wait();
  }

 private:
  void publish_topology() {
    Topology t;
    t.groups = {"g"};
    t.sites = {"s"};
    for (int i = 0; i < topology_for_; ++i) {
      if (i < static_cast<int>(fake_endpoints_.size()) && !fake_endpoints_[i].empty()) endpoints_[i] = fake_endpoints_[i];
      t.clusters.push_back(
          {"c" + std::to_string(i), 0, static_cast<std::uint32_t>(i), 1, "h", 1, true, outbound_[i], !endpoints_[i].empty(), ""});
      t.rank_group.push_back(0);
      t.rank_endpoint.push_back(endpoints_[i]);
    }
    wire::Writer w;
    t.encode(w);
    const wire::Frame f = wire::make_frame(wire::Type::kTopology, w.take(), 1);
    for (auto& [r, l] : links_) {
      auto delay = topology_delay_.find(r);
      if (delay == topology_delay_.end()) {
        l->send(f);
        continue;
      }
      auto t = std::make_shared<asio::steady_timer>(io_, delay->second);
      t->async_wait([t, l, f](const boost::system::error_code&) { l->send(f); });
    }
  }

  void accept() {
    acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket s) {
      if (ec) return;
      tune_socket(s);  // (as the relay does: no Nagle delay behind a frame the peer does not answer)
      auto link = std::make_shared<TcpLink>(std::move(s), "test");
      all_.push_back(link);
      auto rank = std::make_shared<int>(-1);
      link->start(
          [this, link, rank](wire::Frame& f) {
            if (f.header.type == wire::Type::kProcHello) {
              const ProcHello hello = ProcHello::decode(f.body);
              *rank = static_cast<int>(hello.local_rank);
              links_[*rank] = link;
              endpoints_[*rank] = hello.listen;
              ++hellos_;
              if (topology_for_ > 0 && hellos_ == topology_for_) publish_topology();
              for (auto& held : pending_[*rank]) link->send(held);  // as a relay does
              pending_.erase(*rank);
              return;
            }
            if (f.header.type == wire::Type::kClusterLost) {  // for the broker, not another process
              std::lock_guard<std::mutex> lock(mu_);
              reports_.push_back("rank " + std::to_string(*rank) + ": cluster " + std::to_string(f.header.tag) + ": " + f.body);
              return;
            }
            if (f.header.type == wire::Type::kData) data_bytes_[*rank] += f.body.size();
            if (f.header.type == wire::Type::kCredit) ++credit_frames_[*rank];
            {
              std::lock_guard<std::mutex> lock(mu_);
              types_[*rank].push_back(f.header.type);
            }
            auto to = links_.find(f.header.dst);
            if (to != links_.end()) to->second->send(f);
            else pending_[f.header.dst].push_back(f);
          },
          [](const std::string&) {});
      accept();
    });
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  std::map<int, std::shared_ptr<TcpLink>> links_;
  std::vector<std::shared_ptr<TcpLink>> all_;
  std::atomic<int> hellos_{0};
  std::map<int, std::string> endpoints_;
  std::vector<bool> outbound_;
  std::vector<std::string> fake_endpoints_;
  int topology_for_ = 0;
  std::map<int, std::chrono::milliseconds> topology_delay_;
  std::map<int, std::vector<wire::Frame>> pending_;  // for ranks not connected yet
  std::array<std::atomic<std::size_t>, 8> data_bytes_{};
  std::array<std::atomic<std::size_t>, 8> credit_frames_{};
  std::mutex mu_;
  std::map<int, std::vector<wire::Type>> types_;
  std::vector<std::string> reports_;
};

// GRIDRT_ON_CLUSTER_LOSS=continue (what a relay sets for a job that goes on without lost
// clusters) for transports made in this scope.
struct JobGoesOn {
  JobGoesOn() { ::setenv("GRIDRT_ON_CLUSTER_LOSS", "continue", 1); }
  ~JobGoesOn() { ::unsetenv("GRIDRT_ON_CLUSTER_LOSS"); }
};

// `unexpected_budget`: how much data no receive took yet the transport buffers (granting its
// credit); 0 makes a sender wait as soon as its window is full.
// `rank_now` false: the transport learns its rank later (set_rank), as a process's does
// after its application thread took it from the topology.
std::unique_ptr<RelayTransport> connect(FakeRelay& relay, int rank, ListenSpec listen = {},
                                        std::size_t unexpected_budget = Receiver::kUnexpectedBudget, bool rank_now = true) {
  auto t = std::make_unique<RelayTransport>(relay.endpoint(), 1, "secret", rank, "host", flow::Window{kWindow, false}, listen,
                                            unexpected_budget);
  if (rank_now) t->set_rank(rank);
  return t;
}

std::string pattern(std::size_t n, int seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 31 + seed);
  return s;
}

// Ranks 0 (listening) and 1 of two one-rank clusters, their direct connection made by a
// first message.
std::pair<std::unique_ptr<RelayTransport>, std::unique_ptr<RelayTransport>> direct_pair(FakeRelay& relay) {
  relay.publish_topology_after(2, {true, true});
  auto a = connect(relay, 0, ListenSpec::parse("any"));
  auto b = connect(relay, 1);
  a->wait_topology(std::chrono::seconds(5));
  b->wait_topology(std::chrono::seconds(5));
  char x = 'x', y = 0;
  auto s = a->send(1, 0, 0, &x, 1);
  auto r = b->recv(&y, 1, 0, 0, 0);
  b->wait(r);
  a->wait(s);
  return {std::move(a), std::move(b)};
}

// Waits until cond() holds (up to 5 s).
template <typename F> bool eventually(F cond) {
  for (int i = 0; i < 500 && !cond(); ++i) std::this_thread::sleep_for(10ms);
  return cond();
}

}  // namespace

// A connection hands the buffers of the whole frames it wrote back (recycle_written), the
// one its sending thread wrote itself and those its own thread wrote, and the pool gives
// each to the next frame to be encoded: a stream of large messages allocates no buffer anew.
TEST(Transport, TheBuffersOfWrittenFramesComeBackForTheNext) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket a(io), b(io);
  a.connect(acceptor.local_endpoint());
  acceptor.accept(b);
  auto writer = std::make_shared<TcpLink>(std::move(a), "writer");
  auto reader = std::make_shared<TcpLink>(std::move(b), "reader");
  FramePool pool;
  writer->share_writing();
  writer->recycle_written([&](std::string&& written) { pool.give(std::move(written)); });
  std::vector<std::string> got;
  reader->start([&](wire::Frame& f) { got.push_back(f.body); }, [](const std::string&) {});
  writer->start([](wire::Frame&) {}, [](const std::string&) {});
  const std::string body(64 * 1024, 'x');
  const std::size_t size = wire::kHeaderSize + body.size();
  auto frame_in = [&](std::string buffer, char fill) {
    buffer.append(wire::encode(wire::make_frame(wire::Type::kData, std::string(body.size(), fill))));
    return buffer;
  };
  // A lone frame: the calling thread writes it and hands its buffer back at once.
  std::string first = frame_in(pool.take(size), 'a');
  const char* buffer = first.data();
  writer->write_from_any_thread(std::move(first));
  std::string blocker;  // (would take a freed buffer's place in malloc, were it freed)
  blocker.reserve(size);
  std::string second = pool.take(size);
  EXPECT_EQ(second.data(), buffer) << "the written frame's buffer did not come back";
  EXPECT_TRUE(second.empty());
  // Right behind it: queued for the link's thread, which hands it back once written.
  second = frame_in(std::move(second), 'b');
  writer->write_from_any_thread(std::move(second));
  for (int i = 0; i < 2000 && got.size() < 2; ++i) io.run_for(5ms);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::string(body.size(), 'a'));
  EXPECT_EQ(got[1], std::string(body.size(), 'b'));
  std::string blocker2;
  blocker2.reserve(size);
  EXPECT_EQ(pool.take(size).data(), buffer);
  writer->close("test over");
  reader->close("test over");
  io.run_for(20ms);
}

TEST(Transport, SlowReceiverMakesTheSenderWaitAndNothingIsLost) {
  FakeRelay relay;
  auto a = connect(relay, 0), b = connect(relay, 1, {}, 0);
  constexpr int kMessages = 12;
  constexpr std::size_t kSize = 20000;  // 12 x 20 kB = 240 kB, well past a 64 KiB window
  std::vector<std::shared_ptr<RemoteOp>> sends;
  for (int i = 0; i < kMessages; ++i) {
    const std::string m = pattern(kSize, i);
    sends.push_back(a->send(1, 0, i, m.data(), m.size()));
  }
  // Nobody receives yet: the sender is held to one window in flight.
  std::this_thread::sleep_for(200ms);
  const std::size_t in_flight = relay.data_from(0);
  EXPECT_LE(in_flight, kWindow);
  EXPECT_GT(in_flight, kWindow / 2);  // but it used its window
  int done = 0;
  for (auto& s : sends) done += a->test(s);
  EXPECT_LT(done, kMessages);
  // The receiver takes them all, in order, intact; the sender's sends all complete.
  for (int i = 0; i < kMessages; ++i) {
    std::string got(kSize, '\0');
    auto r = b->recv(got.data(), got.size(), 0, 0, -1);
    b->wait(r);
    EXPECT_EQ(r->got.tag, i);
    EXPECT_EQ(r->bytes, kSize);
    EXPECT_EQ(got, pattern(kSize, i)) << "message " << i;
  }
  for (auto& s : sends) a->wait(s);
  EXPECT_EQ(relay.data_from(0), kMessages * kSize);
}

// A small message's credit waits at its receiver until the receiver writes to its sender,
// then goes just before that frame: an answered message crosses the relays with the answer,
// in the same write, instead of as a frame of its own (common/flow_control.h, credit_may_wait).
TEST(Transport, ASmallMessagesCreditWaitsForTheAnswer) {
  FakeRelay relay;
  auto a = connect(relay, 0), b = connect(relay, 1);
  std::string ping(1024, 'p'), got(1024, 0);
  auto s = a->send(1, 0, 7, ping.data(), ping.size());
  auto r = b->recv(got.data(), got.size(), 0, 0, 7);
  b->wait(r);
  a->wait(s);
  EXPECT_EQ(got, ping);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(relay.credit_frames_from(1), 0u);  // held while B has nothing for A
  auto answer = b->send(0, 0, 8, got.data(), got.size());
  auto r2 = a->recv(got.data(), got.size(), 1, 0, 8);
  a->wait(r2);
  b->wait(answer);
  EXPECT_TRUE(eventually([&] { return relay.credit_frames_from(1) == 1; }));
  EXPECT_EQ(relay.types_from(1), (std::vector<wire::Type>{wire::Type::kCredit, wire::Type::kData}));
  EXPECT_EQ(relay.credit_frames_from(0), 0u);  // A's for the answer waits in turn
}

// Streams of small messages nobody answers: the credit held back goes with the first frame
// that may not wait, so the sender never stalls for it, and every message comes once. At a
// pace the window outruns, credit comes back once per quarter window of messages; in a
// burst that holds the sender to its window, nearly every frame leaves below three quarters
// and its credit comes at once.
TEST(Transport, CreditHeldForUnansweredMessagesNeverStallsTheirSender) {
  FakeRelay relay;
  auto a = connect(relay, 0), b = connect(relay, 1);
  constexpr int kPaced = 150, kMessages = 3000;  // 3000 x (1000 + 64) bytes: 49 windows of 64 KiB
  std::vector<std::shared_ptr<RemoteOp>> sends;
  std::thread receiver([&] {
    std::string got(1000, 0);
    for (int i = 0; i < kMessages; ++i) {
      auto r = b->recv(got.data(), got.size(), 0, 0, -1);
      b->wait(r);
      ASSERT_EQ(r->got.tag, i);
      ASSERT_EQ(got, pattern(1000, i)) << "message " << i;
    }
  });
  for (int i = 0; i < kMessages; ++i) {
    const std::string m = pattern(1000, i);
    sends.push_back(a->send(1, 0, i, m.data(), m.size()));
    if (i < kPaced) {
      std::this_thread::sleep_for(1ms);  // (a round trip through the relay takes less)
      if (i == kPaced - 1) {             // 150 messages, 1064 bytes each, 15 of them to a quarter window
        EXPECT_TRUE(eventually([&] { return relay.credit_frames_from(1) > 0; }));
        EXPECT_LT(relay.credit_frames_from(1), kPaced / 4u);
      }
    }
  }
  for (auto& s : sends) a->wait(s);
  receiver.join();
  EXPECT_EQ(relay.data_from(0), kMessages * 1000u);
}

// A window set later holds the streams begun after it (calibration's sample run keeps the
// jobs' window on new communicators); a stream begun before keeps its own.
TEST(Transport, AWindowSetLaterHoldsOnlyTheStreamsBegunAfterIt) {
  FakeRelay relay;
  auto a = connect(relay, 0), b = connect(relay, 1, {}, 0);
  char x = 'x', y = 0;
  auto first = a->send(1, 0, 0, &x, 1);  // context 0's stream begins with kWindow
  auto got_first = b->recv(&y, 1, 0, 0, 0);
  b->wait(got_first);
  a->wait(first);
  a->set_window(flow::Window{kWindow / 4, false});
  constexpr int kMessages = 12;
  constexpr std::size_t kSize = 20000;
  std::vector<std::shared_ptr<RemoteOp>> sends;
  auto send_all = [&](std::uint32_t context) {
    for (int i = 0; i < kMessages; ++i) {
      const std::string m = pattern(kSize, i + static_cast<int>(context));
      sends.push_back(a->send(1, context, i, m.data(), m.size()));
    }
    std::this_thread::sleep_for(200ms);  // nobody receives: each stream held to its window
  };
  send_all(5);  // a new stream: the new window
  const std::size_t new_stream = relay.data_from(0) - 1;
  EXPECT_LE(new_stream, kWindow / 4);
  EXPECT_GT(new_stream, kWindow / 8);
  send_all(0);  // the stream begun before: its own
  const std::size_t old_stream = relay.data_from(0) - 1 - new_stream;
  EXPECT_LE(old_stream, kWindow);
  EXPECT_GT(old_stream, kWindow / 2);
  for (std::uint32_t context : {5u, 0u})
    for (int i = 0; i < kMessages; ++i) {
      std::string got(kSize, '\0');
      auto r = b->recv(got.data(), got.size(), 0, context, i);
      b->wait(r);
      EXPECT_EQ(got, pattern(kSize, i + static_cast<int>(context))) << "context " << context << ", message " << i;
    }
  for (auto& s : sends) a->wait(s);
}

TEST(Transport, MessageLargerThanTheWindowArrivesWhenTheReceiveIsPostedLate) {
  FakeRelay relay;
  auto a = connect(relay, 0), b = connect(relay, 1, {}, 0);
  const std::string big = pattern(10 * kWindow + 123, 7);
  auto s = a->send(1, 0, 3, big.data(), big.size());
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(a->test(s));
  EXPECT_LE(relay.data_from(0), kWindow);
  std::string got(big.size(), '\0');
  auto r = b->recv(got.data(), got.size(), 0, 0, 3);
  b->wait(r);
  a->wait(s);
  EXPECT_EQ(r->bytes, big.size());
  EXPECT_TRUE(got == big);
}

TEST(Transport, StreamsAreIndependent) {
  // Context 0 from 0 to 1 is full (nobody receives); context 1 still flows.
  FakeRelay relay;
  auto a = connect(relay, 0), b = connect(relay, 1, {}, 0);
  const std::string filler = pattern(4 * kWindow, 1);
  auto stuck = a->send(1, 0, 0, filler.data(), filler.size());
  char token = 'x', got = 0;
  auto s = a->send(1, 1, 0, &token, 1);
  auto r = b->recv(&got, 1, 0, 1, 0);
  b->wait(r);
  a->wait(s);
  EXPECT_EQ(got, 'x');
  EXPECT_FALSE(a->test(stuck));
}

TEST(Transport, TruncationCompletesThatReceiveAsTruncatedAndTheStreamGoesOn) {
  FakeRelay relay;
  auto a = connect(relay, 0), b = connect(relay, 1);
  const std::string m1 = pattern(3 * kWindow, 2), m2 = "after";
  auto s1 = a->send(1, 0, 1, m1.data(), m1.size());
  auto s2 = a->send(1, 0, 2, m2.data(), m2.size());
  std::string small(100, '\0');
  auto r1 = b->recv(small.data(), small.size(), 0, 0, 1);
  b->wait(r1);
  EXPECT_TRUE(r1->truncated);
  EXPECT_EQ(r1->total, m1.size());
  EXPECT_EQ(r1->bytes, small.size());
  EXPECT_EQ(small, m1.substr(0, 100));
  std::string got(16, '\0');
  auto r2 = b->recv(got.data(), got.size(), 0, 0, 2);
  b->wait(r2);
  EXPECT_FALSE(r2->truncated);
  EXPECT_EQ(got.substr(0, r2->bytes), "after");
  a->wait(s1);
  a->wait(s2);
}

// A probe sees a message's whole size from its first fragment, also when it is larger than
// the window (its sender then waits for the receive); a matched probe takes it from every
// other receive, even one open to any source.
TEST(Transport, ProbesTellTheSizeOfAMessageLargerThanTheWindowAndMatchedOnesTakeIt) {
  FakeRelay relay;
  auto a = connect(relay, 0), b = connect(relay, 1);
  const std::string big = pattern(4 * kWindow + 7, 5), next = "next";
  auto s1 = a->send(1, 3, 9, big.data(), big.size());
  auto s2 = a->send(1, 3, 9, next.data(), next.size());
  Envelope env;
  std::size_t total = 0;
  ASSERT_TRUE(eventually([&] { return b->iprobe(kAnySource, 3, kAnyTag, &env, &total); }));
  EXPECT_EQ(env.source, 0);
  EXPECT_EQ(env.tag, 9);
  EXPECT_EQ(total, big.size());
  auto taken = b->improbe(0, 3, 9);
  ASSERT_TRUE(taken);
  std::string got(16, '\0');
  auto any = b->recv(got.data(), got.size(), kAnySource, 3, kAnyTag);  // the next one, not the taken one
  b->wait(any);
  EXPECT_EQ(got.substr(0, any->bytes), "next") << "the second message overtook nothing: the first was taken";
  std::string whole(total, '\0');
  auto r = b->mrecv(taken, whole.data(), whole.size());
  b->wait(r);
  EXPECT_TRUE(whole == big);
  a->wait(s1);
  a->wait(s2);
}

// MPI lets a later message be received before an earlier one of the same sender: what no
// receive has taken is buffered (up to a budget) so that later messages get through, and a
// very large message waits as rendezvous, its rest sent only once matched. Each is then
// received whole.
TEST(Transport, UnmatchedMessagesHoldUpNothingBehindThem) {
  FakeRelay relay;
  auto a = connect(relay, 0), b = connect(relay, 1, {}, 8 * kWindow);
  const std::string buffered = pattern(4 * kWindow, 1);                                 // within the budget
  const std::string huge = pattern(RelayTransport::kRendezvousAbove + 4 * kWindow, 2);  // rendezvous
  const std::string small = "small";
  std::vector<std::shared_ptr<RemoteOp>> sends;
  sends.push_back(a->send(1, 0, 1, buffered.data(), buffered.size()));
  sends.push_back(a->send(1, 0, 2, huge.data(), huge.size()));
  sends.push_back(a->send(1, 0, 3, small.data(), small.size()));
  std::string got(16, '\0');
  auto r3 = b->recv(got.data(), got.size(), 0, 0, 3);
  b->wait(r3);
  EXPECT_EQ(got.substr(0, r3->bytes), small);
  EXPECT_LT(relay.data_from(0), buffered.size() + 2 * kWindow) << "the huge one's rest waited for its match";
  std::string got2(huge.size(), '\0'), got1(buffered.size(), '\0');
  auto r2 = b->recv(got2.data(), got2.size(), 0, 0, 2);
  auto r1 = b->recv(got1.data(), got1.size(), 0, 0, 1);
  b->wait(r2);
  b->wait(r1);
  EXPECT_TRUE(got2 == huge);
  EXPECT_TRUE(got1 == buffered);
  for (auto& s : sends) a->wait(s);
}

// A synchronous send completes only once the receiver matched it (MPI_Ssend), through the
// relays as through a direct connection.
TEST(Transport, ASynchronousSendCompletesOnlyOnceMatched) {
  for (const bool direct : {false, true}) {
    FakeRelay relay;
    std::unique_ptr<RelayTransport> a, b;
    if (direct) std::tie(a, b) = direct_pair(relay);
    else a = connect(relay, 0), b = connect(relay, 1);
    const char x = 'x';
    auto s = a->send(1, 0, 4, &x, 1, true);
    std::this_thread::sleep_for(200ms);
    EXPECT_TRUE(s->written) << (direct ? "direct" : "relayed");
    EXPECT_FALSE(a->test(s)) << (direct ? "direct" : "relayed");
    char y = 0;
    auto r = b->recv(&y, 1, 0, 0, 4);
    b->wait(r);
    a->wait(s);
    EXPECT_EQ(y, 'x');
  }
}

TEST(Transport, LostRelayFailsEveryPendingOperation) {
  FakeRelay relay;
  auto a = connect(relay, 0), b = connect(relay, 1, {}, 0);
  const std::string filler = pattern(4 * kWindow, 3);
  auto stuck = a->send(1, 0, 0, filler.data(), filler.size());
  char buf[8];
  auto never = b->recv(buf, sizeof buf, 0, 5, 0);
  ASSERT_TRUE(eventually([&] { return relay.hellos() == 2; }));
  relay.kill();
  EXPECT_THROW(a->wait(stuck), std::runtime_error);
  try {
    b->wait(never);
    FAIL() << "expected a failure";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("lost the connection to the relay"), std::string::npos) << e.what();
  }
  EXPECT_THROW(a->send(1, 0, 0, buf, 1), std::runtime_error);
}

TEST(Transport, DirectConnectionBothWaysWhenOnlyOneSideListens) {
  // Rank 0 listens (public nodes), rank 1 does not but may dial out: 1 dials 0. When 0
  // speaks first it asks 1, through the relay, to connect back.
  FakeRelay relay;
  relay.publish_topology_after(2, {true, true});
  auto a = connect(relay, 0, ListenSpec::parse("any"));
  auto b = connect(relay, 1);
  EXPECT_FALSE(a->listening().empty());
  EXPECT_TRUE(b->listening().empty());
  a->wait_topology(std::chrono::seconds(5));
  b->wait_topology(std::chrono::seconds(5));
  const std::size_t relayed_before = relay.data_from(0) + relay.data_from(1);
  for (int round = 0; round < 3; ++round) {
    const std::string m = pattern(200000, round);
    auto s = a->send(1, 0, round, m.data(), m.size());
    std::string got(m.size(), '\0');
    auto r = b->recv(got.data(), got.size(), 0, 0, round);
    b->wait(r);
    a->wait(s);
    EXPECT_TRUE(got == m);
    auto s2 = b->send(0, 0, round, m.data(), 1000);
    auto r2 = a->recv(got.data(), got.size(), 1, 0, round);
    a->wait(r2);
    b->wait(s2);
    EXPECT_EQ(r2->bytes, 1000u);
  }
  EXPECT_EQ(relay.data_from(0) + relay.data_from(1), relayed_before) << "no data through the relay";
}

// A process's direct port holds strangers (connections that have not proved the job's
// secret) as the daemons' ports do: past the cap the oldest are dropped, and the job's own
// dialler still gets in and carries the data.
TEST(Transport, StrangersOnADirectPortAreBoundedAndThePeerStillGetsIn) {
  FakeRelay relay;
  relay.publish_topology_after(2, {true, true});
  auto a = connect(relay, 0, ListenSpec::parse("any"));
  const std::string ep = a->listening();
  ASSERT_FALSE(ep.empty());
  asio::io_context io;
  const tcp::endpoint port(asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(std::stoi(ep.substr(ep.rfind(':') + 1))));
  const std::size_t extra = 8;
  std::vector<tcp::socket> strangers;
  for (std::size_t i = 0; i < limits::kLocalPort.per_address + extra; ++i) {
    strangers.emplace_back(io);
    strangers.back().connect(port);
    // Dropped at once by the cap, not at the handshake's deadline (3 s): a read that waits
    // longer than 1.5 s fails the test.
    timeval tv{1, 500000};
    ::setsockopt(strangers.back().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  for (std::size_t i = 0; i < extra; ++i) {
    char byte;
    const ssize_t n = ::recv(strangers[i].native_handle(), &byte, 1, 0);  // (Asio's read would wait on past the timeout)
    const int err = errno;
    EXPECT_TRUE(n == 0 || (n < 0 && err == ECONNRESET)) << "stranger " << i << ": " << (n < 0 ? std::strerror(err) : "data");
  }
  auto b = connect(relay, 1);
  a->wait_topology(std::chrono::seconds(5));
  b->wait_topology(std::chrono::seconds(5));
  const std::size_t relayed_before = relay.data_from(0) + relay.data_from(1);
  const std::string m = pattern(100000, 1);
  auto sent = b->send(0, 0, 1, m.data(), m.size());
  std::string got(m.size(), '\0');
  auto r = a->recv(got.data(), got.size(), 1, 0, 1);
  a->wait(r);
  b->wait(sent);
  EXPECT_TRUE(got == m);
  EXPECT_EQ(relay.data_from(0) + relay.data_from(1), relayed_before) << "no data through the relay";
}

TEST(Transport, FallsBackToTheRelayWhenNobodyCanDial) {
  FakeRelay relay;
  relay.publish_topology_after(2, {false, false});  // 0 listens, but 1 may not dial out
  auto a = connect(relay, 0, ListenSpec::parse("any"));
  auto b = connect(relay, 1);
  a->wait_topology(std::chrono::seconds(5));
  b->wait_topology(std::chrono::seconds(5));
  const std::string m = pattern(5000, 9);
  auto s = a->send(1, 0, 0, m.data(), m.size());
  std::string got(m.size(), '\0');
  auto r = b->recv(got.data(), got.size(), 0, 0, 0);
  b->wait(r);
  a->wait(s);
  EXPECT_TRUE(got == m);
  EXPECT_EQ(relay.data_from(0), m.size()) << "relayed";
}

TEST(Transport, AFailedDirectAttemptFallsBackToTheRelayInBoundedTime) {
  // Rank 0 announces an endpoint nobody can connect to: rank 1's dial fails, it tells
  // rank 0, and both use the relay; nothing is lost, each way.
  FakeRelay relay;
  relay.publish_topology_after(2, {true, true}, {"127.0.0.1:1", ""});
  auto a = connect(relay, 0, ListenSpec::parse("any"));
  auto b = connect(relay, 1);
  a->wait_topology(std::chrono::seconds(5));
  b->wait_topology(std::chrono::seconds(5));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string m = pattern(300000, 4);
  auto s = a->send(1, 0, 0, m.data(), m.size());  // 0 speaks first: asks 1 to call back
  std::string got(m.size(), '\0');
  auto r = b->recv(got.data(), got.size(), 0, 0, 0);
  b->wait(r);
  a->wait(s);
  EXPECT_TRUE(got == m);
  auto s2 = b->send(0, 0, 1, m.data(), 10);
  auto r2 = a->recv(got.data(), got.size(), 1, 0, 1);
  a->wait(r2);
  b->wait(s2);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(8));
  EXPECT_EQ(relay.data_from(0), m.size());
  EXPECT_EQ(relay.data_from(1), 10u);
}

TEST(Transport, SendingOverALostDirectConnectionFailsClearly) {
  FakeRelay relay;
  auto [a, b] = direct_pair(relay);
  char x = 'x';
  b.reset();  // rank 1 goes away: its direct connection with rank 0 closes
  ASSERT_TRUE(eventually([&] {
    try {
      a->wait(a->send(1, 0, 1, &x, 1));
      return false;
    } catch (const std::runtime_error& e) {
      return std::string(e.what()).find("the direct connection to rank 1 is closed") != std::string::npos;
    }
  }));
}

// In a job that goes on without lost clusters, a closed direct connection does not fail the
// process: it is reported to the relay (for the broker to decide which cluster goes), what
// is sent meanwhile is dropped, what waits on the peer waits for the broker's word; the
// broker's ClusterLost then fails it, naming the cluster, and later sends to it.
TEST(Transport, InAJobThatGoesOnALostDirectConnectionIsReportedAndWaitsForTheBroker) {
  JobGoesOn goes_on;
  FakeRelay relay;
  auto [a, b] = direct_pair(relay);
  char x = 'x';
  ASSERT_EQ(relay.data_from(0), 0u) << "the pair went direct";
  char buf[8];
  auto waiting = a->recv(buf, sizeof buf, 1, 0, 7);
  b.reset();  // rank 1 goes away: its direct connection with rank 0 closes
  ASSERT_TRUE(eventually([&] { return !relay.reports().empty(); }));
  const auto reports = relay.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].rfind("rank 0: cluster 1: direct connection with rank 1 (", 0), 0u) << reports[0];
  EXPECT_NO_THROW(a->wait(a->send(1, 0, 1, &x, 1))) << "dropped, not failed";
  EXPECT_FALSE(a->test(waiting));
  wire::Frame lost = wire::make_frame(wire::Type::kClusterLost, "cut off from cluster c0", 1);
  lost.header.tag = 1;
  relay.tell(0, lost);
  try {
    a->wait(waiting);
    FAIL() << "expected the receive to fail";
  } catch (const std::runtime_error& e) { EXPECT_EQ(std::string(e.what()), "cluster c1 lost: cut off from cluster c0"); }
  EXPECT_THROW(a->wait(a->send(1, 0, 2, &x, 1)), std::runtime_error);
  EXPECT_EQ(a->lost_clusters().size(), 1u);
}

// A process in finalize takes a peer hanging up as the end of the job, not a loss.
TEST(Transport, APeerHangingUpDuringFinalizeIsNotReported) {
  JobGoesOn goes_on;
  FakeRelay relay;
  auto [a, b] = direct_pair(relay);
  a->finalizing();
  b.reset();
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(relay.reports().empty()) << relay.reports()[0];
}

// The peer's first frames may come before this process has the topology: a request to call
// back, or a direct connection dialled to it. Both wait for the topology rather than being
// taken for "no direct path" (the pair would fall back to the relays after the caller's
// timeout) or refused (the caller's connection would close under it). Each way, the pair
// goes direct and nothing is lost.
// A process knows the topology (its I/O thread) a moment before its rank (its application
// thread takes it from the topology); on a loaded machine the moment is long. A peer's
// direct connection or call-back request in between waits for the rank, instead of being
// refused as meant for someone else (which a job going on without lost clusters took for a
// lost cluster).
TEST(Transport, ARankLearnedAfterTheTopologyStillMeetsItsDirectPeers) {
  for (const bool peer_listens : {false, true}) {
    FakeRelay relay;
    relay.publish_topology_after(2, {true, true});
    auto a = peer_listens ? connect(relay, 0) : connect(relay, 0, ListenSpec::parse("any"));
    auto b = peer_listens ? connect(relay, 1, ListenSpec::parse("any"), Receiver::kUnexpectedBudget, false)
                          : connect(relay, 1, {}, Receiver::kUnexpectedBudget, false);
    a->wait_topology(std::chrono::seconds(5));
    b->wait_topology(std::chrono::seconds(5));
    const std::string m = pattern(5000, 2);
    auto s = a->send(1, 0, 0, m.data(), m.size());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a's hello or call-back request is at b
    b->set_rank(1);
    std::string got(m.size(), '\0');
    auto r = b->recv(got.data(), got.size(), 0, 0, 0);
    b->wait(r);
    a->wait(s);
    EXPECT_TRUE(got == m) << (peer_listens ? "0 dials" : "1 calls back");
    EXPECT_EQ(relay.data_from(0) + relay.data_from(1), 0u) << (peer_listens ? "0 dials" : "1 calls back") << ": went through the relay";
  }
}

TEST(Transport, FirstFramesBeforeTheTopologyWaitForIt) {
  for (const bool peer_listens : {false, true}) {
    FakeRelay relay;
    // Rank 0 listens and rank 1 may dial out (0 asks 1 to call back), or the other way
    // round (0 dials 1); rank 1 hears the topology 300 ms late.
    relay.publish_topology_after(2, {true, true});
    relay.delay_topology(1, std::chrono::milliseconds(300));
    auto a = peer_listens ? connect(relay, 0) : connect(relay, 0, ListenSpec::parse("any"));
    auto b = peer_listens ? connect(relay, 1, ListenSpec::parse("any")) : connect(relay, 1);
    a->wait_topology(std::chrono::seconds(5));
    const auto t0 = std::chrono::steady_clock::now();
    const std::string m = pattern(5000, 1);
    auto s = a->send(1, 0, 0, m.data(), m.size());
    b->wait_topology(std::chrono::seconds(5));
    std::string got(m.size(), '\0');
    auto r = b->recv(got.data(), got.size(), 0, 0, 0);
    b->wait(r);
    a->wait(s);
    EXPECT_TRUE(got == m) << (peer_listens ? "0 dials" : "1 calls back");
    auto back = b->send(0, 0, 1, m.data(), 10);
    auto r2 = a->recv(got.data(), got.size(), 1, 0, 1);
    a->wait(r2);
    b->wait(back);
    EXPECT_EQ(relay.data_from(0) + relay.data_from(1), 0u) << (peer_listens ? "0 dials" : "1 calls back") << ": went through the relay";
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3)) << (peer_listens ? "0 dials" : "1 calls back");
  }
}
