// Broker and relays in-process on 127.0.0.1 port 0 with a CA made for the test: registration,
// refusals, a relay that disconnects, garbage on every socket. After each misbehaving peer
// the daemons must keep serving the others.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <boost/asio/ssl.hpp>  // Asio's own TLS: independent test clients

#include "broker/broker.h"
#include "common/messages.h"
#include "relay/relay.h"
#include "run_support.h"

using namespace gridrt;
using namespace std::chrono_literals;

namespace {

// Reads frames from a blocking stream until the peer closes it (or `most` have come).
template <typename Stream> std::vector<wire::Frame> read_until_closed(Stream& s, std::size_t most = SIZE_MAX) {
  std::vector<wire::Frame> frames;
  wire::Decoder d;
  char buf[4096];
  boost::system::error_code ec;
  while (frames.size() < most) {
    const std::size_t n = s.read_some(asio::buffer(buf), ec);
    if (ec) break;
    d.feed(buf, n);
    wire::Frame f;
    while (d.next(f) == wire::Decoder::Status::kFrame) frames.push_back(f);
  }
  return frames;
}

class Daemons : public ::testing::Test {
 protected:
  // Runs f on the daemons' thread and returns its result (the daemons are single-threaded).
  template <typename F> auto on_io(F f) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto fut = task.get_future();
    asio::post(io_, [&task] { task(); });
    return fut.get();
  }
  template <typename F> bool eventually(F cond) {
    for (int i = 0; i < 500; ++i) {
      if (on_io(cond)) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  void SetUp() override {
    dir_ = ::testing::TempDir() + "/gridrt-daemons-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
    grid_ = parse_grid("test grid", default_grid_xml(2, 1));
    broker_ =
        std::make_unique<Broker>(io_, grid_, ca_.issue("broker", dir_, "broker"), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    broker_ep_ = broker_->endpoint();
    work_.emplace(io_.get_executor());
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    on_io([this] {
      for (auto& r : relays_) r->stop();
      broker_->stop();
      return 0;
    });
    work_.reset();
    io_.stop();
    thread_.join();
    relays_.clear();
    broker_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A relay for `cluster`; `fatal` receives the broker's refusal, if any.
  // `cert_name` overrides the certificate's name (default "relay <cluster>").
  Relay* add_relay(const std::string& cluster, std::shared_ptr<std::string> fatal = nullptr, const tls::Authority* ca = nullptr,
                   const std::string& cert_name = "") {
    ClusterDesc d = grid_.clusters[0];
    d.name = cluster;
    const std::string cn = cert_name.empty() ? "relay " + cluster : cert_name;
    Relay::Options o;
    o.cluster = d;
    o.creds = (ca ? *ca : ca_).issue(cn, dir_, "relay-" + cluster + std::to_string(relays_.size()));
    o.broker = broker_ep_;
    o.gridproc = "/bin/false";
    o.authenticate = authenticate_;
    return on_io([&] {
      relays_.push_back(std::make_unique<Relay>(io_, o));
      Relay* r = relays_.back().get();
      r->on_fatal = [fatal](const std::string& why) {
        if (fatal) *fatal = why;
      };
      r->start();
      return r;
    });
  }
  // The broker journals to a file in the test's directory from now on; returns its path.
  std::string journal() {
    const std::string path = dir_ + "/journal";
    on_io([&] {
      broker_->set_journal(path);
      return 0;
    });
    return path;
  }
  std::size_t registered() {
    return on_io([this] { return broker_->registered_relays(); });
  }
  struct Client;
  // A client holding a certificate named `cert_name` (written as `file`), connected to the
  // broker.
  std::unique_ptr<Client> connected(const std::string& cert_name, const std::string& file) {
    auto c = std::make_unique<Client>(ca_.issue(cert_name, dir_, file));
    EXPECT_FALSE(c->connect(broker_ep_)) << cert_name;
    return c;
  }

  // A blocking TLS client, as a launcher or a stranger would be.
  struct Client {
    asio::io_context io;
    asio::ssl::context ctx;
    asio::ssl::stream<tcp::socket> stream;  // Asio's own TLS: an independent client
    Client(const tls::Credentials& c) : ctx(tls::make_context(tls::Role::kClient, c)), stream(io, ctx) {}
    boost::system::error_code connect(const tcp::endpoint& ep) {
      boost::system::error_code ec;
      stream.next_layer().connect(ep, ec);
      if (!ec) stream.handshake(asio::ssl::stream_base::client, ec);
      return ec;
    }
    // Reads frames until the connection closes; returns them.
    std::vector<wire::Frame> read_all(std::size_t most = SIZE_MAX) { return read_until_closed(stream, most); }
    // Submits `spec` and returns the broker's first answer: a refusal (then it hangs up), or
    // the mapping. A broker that does not answer hangs the test until ctest's timeout.
    std::vector<wire::Frame> submit(const JobSpec& spec, std::uint32_t flags) {
      wire::Frame f = wire::make_frame(wire::Type::kSubmit, spec.encode());
      f.header.flags = flags;
      asio::write(stream, asio::buffer(wire::encode(f)));
      return read_all(1);
    }
  };

  std::string dir_;
  Grid grid_;
  tls::Authority ca_{"test CA"};
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::unique_ptr<Broker> broker_;
  tcp::endpoint broker_ep_;
  std::vector<std::unique_ptr<Relay>> relays_;
  std::chrono::steady_clock::duration authenticate_ = limits::kAuthenticate;  // for relays made next
};

// A plain TCP connection whose reads give up after 5 s (a limit that does not hold would
// otherwise hang the test instead of failing it).
tcp::socket connect_with_read_timeout(asio::io_context& io, const tcp::endpoint& ep) {
  tcp::socket s(io);
  s.connect(ep);
  timeval tv{5, 0};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return s;
}

}  // namespace

TEST_F(Daemons, RelaysRegister) {
  Relay* c0 = add_relay("c0");
  Relay* c1 = add_relay("c1");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 2; }));
  // The broker counts a relay once it has answered it; the relay, once the answer arrives.
  EXPECT_TRUE(eventually([&] { return c0->registered() && c1->registered(); }));
}

TEST_F(Daemons, UnknownClusterAndDuplicateAreRefused) {
  add_relay("c0");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 1; }));
  auto unknown = std::make_shared<std::string>();
  auto duplicate = std::make_shared<std::string>();
  add_relay("nowhere", unknown);
  add_relay("c0", duplicate);
  ASSERT_TRUE(eventually([&] { return !unknown->empty() && !duplicate->empty(); }));
  EXPECT_NE(unknown->find("'nowhere' is not in the broker's grid"), std::string::npos) << *unknown;
  EXPECT_NE(duplicate->find("'c0' already has a registered relay"), std::string::npos) << *duplicate;
  EXPECT_EQ(registered(), 1u);  // the first c0 is undisturbed
  // A job that needs the cluster whose relay is missing is refused naming that cluster.
  Client user(ca_.issue("user alice", dir_, "alice"));
  ASSERT_FALSE(user.connect(broker_ep_));
  JobSpec both;
  both.groups = {{"g", 2}};
  const auto frames = user.submit(both, wire::kSubmitDryRun);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_NE(frames[0].body.find("the relays of cluster(s) c1 have not registered"), std::string::npos) << frames[0].body;
}

TEST_F(Daemons, RelayThatDisconnectsIsForgottenAndMayComeBack) {
  Relay* c0 = add_relay("c0");
  add_relay("c1");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 2; }));
  on_io([&] {
    c0->stop();
    return 0;
  });
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 1; }));
  add_relay("c0");
  EXPECT_TRUE(eventually([&] { return broker_->registered_relays() == 2; }));
}

TEST_F(Daemons, GarbageBeforeTlsIsDroppedAndOthersAreServed) {
  add_relay("c0");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 1; }));
  asio::io_context io;
  tcp::socket raw(io);
  raw.connect(broker_ep_);
  const std::string junk(4096, '\x5a');
  boost::system::error_code ec;
  asio::write(raw, asio::buffer(junk), ec);
  char c;
  raw.read_some(asio::buffer(&c, 1), ec);  // the broker hangs up
  EXPECT_TRUE(ec);
  add_relay("c1");
  EXPECT_TRUE(eventually([&] { return broker_->registered_relays() == 2; }));
}

TEST_F(Daemons, GarbageInsideTlsGetsAnErrorFrameAndOnlyThatConnectionDrops) {
  add_relay("c0");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 1; }));
  const auto client = connected("user test", "user");
  const std::string junk = "GET / HTTP/1.1\r\nHost: broker\r\n\r\n" + std::string(64, '\0');
  asio::write(client->stream, asio::buffer(junk));
  const auto frames = client->read_all();
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].header.type, wire::Type::kError);
  EXPECT_NE(frames[0].body.find("bad magic"), std::string::npos) << frames[0].body;
  EXPECT_EQ(registered(), 1u);
}

TEST_F(Daemons, WellFramedButWrongMessagesAreRefused) {
  const auto client = connected("user test", "user");
  // A launcher may not report a part's end; a truncated Submit body is refused too.
  std::string bytes = wire::encode(wire::make_frame(wire::Type::kSubmit, "\x05\x00"));
  asio::write(client->stream, asio::buffer(bytes));
  const auto frames = client->read_all();
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].header.type, wire::Type::kError);
  EXPECT_NE(frames[0].body.find("bad Submit body"), std::string::npos) << frames[0].body;
  // Only a relay may report that its part of a job cannot reach another cluster.
  const auto other = connected("user test", "user2");
  wire::Frame report = wire::make_frame(wire::Type::kClusterLost, "lost the link to cluster c0", 1);
  report.header.tag = 0;
  bytes = wire::encode(report);
  asio::write(other->stream, asio::buffer(bytes));
  const auto refused = other->read_all();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].header.type, wire::Type::kError);
  EXPECT_NE(refused[0].body.find("ClusterLost is only accepted from a relay"), std::string::npos) << refused[0].body;
  add_relay("c0");
  EXPECT_TRUE(eventually([&] { return broker_->registered_relays() == 1; }));
}

TEST_F(Daemons, CertificateFromAnotherCaIsRefused) {
  tls::Authority other("other CA");
  tls::Credentials creds = other.issue("user evil", dir_, "evil");
  creds.ca = ca_.write_ca(dir_);  // trusts the grid CA, but its own certificate is foreign
  Client client(creds);
  // Under TLS 1.3 the client may finish its side before the server rejects its certificate;
  // either way nothing it sends is ever answered.
  if (!client.connect(broker_ep_)) {
    boost::system::error_code ec;
    asio::write(client.stream, asio::buffer(wire::encode(wire::make_frame(wire::Type::kSubmit, JobSpec{}.encode()))), ec);
    EXPECT_TRUE(client.read_all().empty());
  }
  // And a relay with a foreign certificate never registers.
  auto fatal = std::make_shared<std::string>();
  add_relay("c1", fatal, &other);
  add_relay("c0");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 1; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(registered(), 1u);
}

TEST_F(Daemons, RelayLocalPortRefusesGarbageAndStrangers) {
  Relay* c0 = add_relay("c0");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 1; }));
  const tcp::endpoint local = on_io([&] { return c0->local_endpoint(); });
  auto exchange = [&](const std::string& bytes) {
    asio::io_context io;
    tcp::socket s(io);
    s.connect(local);
    asio::write(s, asio::buffer(bytes));
    return read_until_closed(s);
  };
  auto frames = exchange(std::string(200, '\x01'));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_NE(frames[0].body.find("protocol error"), std::string::npos);
  ProcHello hello{"not-the-secret", 0, "host", ""};
  frames = exchange(wire::encode(wire::make_frame(wire::Type::kProcHello, hello.encode(), 77)));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].body, "unknown job or wrong job secret");
  EXPECT_TRUE(on_io([&] { return c0->registered(); }));
}

TEST_F(Daemons, CertificateNamesAreRoles) {
  // A relay may only register the cluster its certificate names.
  auto fatal = std::make_shared<std::string>();
  add_relay("c0", fatal, nullptr, "relay c1");
  ASSERT_TRUE(eventually([&] { return !fatal->empty(); }));
  EXPECT_NE(fatal->find("certificate 'relay c1' may not register cluster 'c0'"), std::string::npos) << *fatal;
  // Only users submit jobs.
  const auto relay_as_user = connected("relay c1", "relay-c1-client");
  JobSpec spec;
  spec.groups = {{"g", 1}};
  asio::write(relay_as_user->stream, asio::buffer(wire::encode(wire::make_frame(wire::Type::kSubmit, spec.encode()))));
  auto frames = relay_as_user->read_all();
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_NE(frames[0].body.find("only user certificates ('user NAME') may submit jobs; this one is 'relay c1'"), std::string::npos)
      << frames[0].body;
  // A relay link may only speak for the cluster its certificate names.
  Relay* c0 = add_relay("c0");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 1; }));
  Client impostor(ca_.issue("relay c1", dir_, "relay-c1-impostor"));
  ASSERT_FALSE(impostor.connect(on_io([&] { return c0->link_endpoint(); })));
  asio::write(impostor.stream, asio::buffer(wire::encode(wire::make_frame(wire::Type::kLinkHello, LinkHello{"c7", 42, 0, 0}.encode()))));
  frames = impostor.read_all();
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].body, "certificate 'relay c1' may not speak for cluster 'c7'");
}

TEST_F(Daemons, JournalRecordsWhoSubmittedWhat) {
  const std::string path = journal();
  add_relay("c0");
  add_relay("c1");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 2; }));
  const auto alice = connected("user alice", "alice");
  JobSpec spec;
  spec.app_id = "too-big";
  spec.groups = {{"g", 9}};  // the grid has 2 slots
  asio::write(alice->stream, asio::buffer(wire::encode(wire::make_frame(wire::Type::kSubmit, spec.encode()))));
  const auto frames = alice->read_all();
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].header.tag, 2);  // bad input: gridrun exits 2
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  EXPECT_NE(line.find("refused job of user alice (too-big): the job needs 9 processes but the grid has 2 slots"), std::string::npos)
      << line;
  // A job from a certificate that is not a user's is refused and journaled too.
  const auto relay = connected("relay c1", "relay-c1-submits");
  spec.groups = {{"g", 1}};
  asio::write(relay->stream, asio::buffer(wire::encode(wire::make_frame(wire::Type::kSubmit, spec.encode()))));
  ASSERT_EQ(relay->read_all().size(), 1u);
  std::getline(in, line);
  EXPECT_NE(line.find("(relay c1): only user certificates ('user NAME') may submit jobs; this one is 'relay c1'"), std::string::npos)
      << line;
}

// A user cancels their job from a second connection (another terminal, a script); another
// user cannot, and the attempt is refused and journaled. The journal records the job's
// arguments exactly and its environment's names, not their values.
TEST_F(Daemons, OnlyTheSubmittingUserCancelsAJobFromAnyConnection) {
  const std::string path = journal();
  grid_.clusters[0].launch = {"/bin/sh", "-c", "sleep 30", "sh"};  // a part that runs until stopped
  add_relay("c0");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 1; }));
  const auto alice = connected("user alice", "alice");
  JobSpec spec;
  spec.app_id = "long";
  spec.groups = {{"g", 1}};
  spec.executable = "/bin/sleep";
  spec.args = {"30", "two words", "a \"quote\""};
  spec.env = {{"API_TOKEN", "s3cret"}};
  const auto accepted = alice->submit(spec, 0);
  ASSERT_EQ(accepted.size(), 1u);
  ASSERT_EQ(accepted[0].header.type, wire::Type::kJobAccepted);
  const std::uint64_t id = accepted[0].header.job;

  auto cancel_from = [&](const std::string& user) {
    auto c = connected("user " + user, user + "2");
    asio::write(c->stream, asio::buffer(wire::encode(wire::make_frame(wire::Type::kKillJob, {}, id))));
    return c;
  };
  auto bob = cancel_from("bob");
  const auto refused = bob->read_all();
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].header.type, wire::Type::kError);
  EXPECT_NE(refused[0].body.find("no job " + std::to_string(id) + " of yours is running"), std::string::npos) << refused[0].body;

  // The owner's cancel from another connection is answered there.
  auto alice_again = cancel_from("alice");
  const auto answer = alice_again->read_all(1);
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_EQ(answer[0].header.type, wire::Type::kNotice);
  EXPECT_EQ(answer[0].body, "job " + std::to_string(id) + " is being cancelled on every cluster");
  std::vector<wire::Frame> next;
  for (int i = 0; i < 10 && (next.empty() || next[0].header.type != wire::Type::kJobEnd); ++i) next = alice->read_all(1);
  ASSERT_EQ(next.size(), 1u);
  ASSERT_EQ(next[0].header.type, wire::Type::kJobEnd);
  const JobEnd end = JobEnd::decode(next[0].body);
  EXPECT_EQ(end.status, 128 + SIGINT);
  EXPECT_NE(end.summary.find("cancelled by user alice from another connection"), std::string::npos) << end.summary;

  const std::string text = slurp(path);
  EXPECT_NE(text.find("job " + std::to_string(id) + " started for user alice"), std::string::npos) << text;
  EXPECT_NE(text.find("arguments [\"30\", \"two words\", \"a \\\"quote\\\"\"]; environment names [API_TOKEN]"), std::string::npos) << text;
  EXPECT_EQ(text.find("s3cret"), std::string::npos) << text;
  EXPECT_NE(text.find("(user bob)"), std::string::npos) << text;
  EXPECT_NE(text.find(": KillJob: no job " + std::to_string(id) + " of yours is running"), std::string::npos) << text;
  EXPECT_NE(text.find("job " + std::to_string(id) + " cancelled by user alice (127.0.0.1:"), std::string::npos) << text;
  EXPECT_NE(text.find("job " + std::to_string(id) + " ended with status 130"), std::string::npos) << text;
}

// Counts that wrap, groups of no process, a job of no group: each is refused with a reason
// at once, and the broker goes on serving (a wrapped 32-bit sum once sent the mapping into an
// endless loop: the broker spun at full CPU and served nobody).
TEST_F(Daemons, HostileCountsAreRefusedAndTheBrokerStaysResponsive) {
  add_relay("c0");
  add_relay("c1");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 2; }));
  const tls::Credentials mallory = ca_.issue("user mallory", dir_, "mallory");
  auto submit = [&](const JobSpec& spec, std::uint32_t flags) {
    Client user(mallory);
    EXPECT_FALSE(user.connect(broker_ep_));
    return user.submit(spec, flags);
  };
  JobSpec wraps;  // 4,295 x 1,000,000 = 4,295,000,000: 32-bit sums give 32,704
  wraps.groups.assign(4295, {"g", 1'000'000});
  JobSpec empty_group;
  empty_group.groups = {{"g", 1}, {"nobody", 0}};
  const std::vector<std::pair<JobSpec, std::string>> hostile = {
      {wraps, "job: 4295000000 processes, more than MPI can number"},
      {JobSpec{}, "job: no process group"},
      {empty_group, "job: group 'nobody' has no processes"},
  };
  for (const auto& [spec, why] : hostile)
    for (std::uint32_t flags : {wire::kSubmitDryRun, 0u}) {
      const auto frames = submit(spec, flags);
      ASSERT_EQ(frames.size(), 1u);
      EXPECT_EQ(frames[0].header.type, wire::Type::kError);
      EXPECT_NE(frames[0].body.find(why), std::string::npos) << frames[0].body;
    }
  // Within the limit of MPI but far beyond the grid's 2 slots: refused as too big, in 64 bits.
  JobSpec huge;
  huge.groups.assign(2147, {"g", 1'000'000});
  auto frames = submit(huge, wire::kSubmitDryRun);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_NE(frames[0].body.find("the job needs 2147000000 processes but the grid has 2 slots"), std::string::npos) << frames[0].body;
  // And a job that fits is still mapped.
  JobSpec fits;
  fits.groups = {{"g", 2}};
  frames = submit(fits, wire::kSubmitDryRun);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].header.type, wire::Type::kJobAccepted);
}

// Limits hold before authentication on a relay's local port: a stranger may not announce a
// frame larger than a hello (refused on its header, the body never buffered; 40 such
// strangers once took a relay to 1.57 GB), must say hello within the deadline, and many
// silent strangers from one address cost a bounded number of connections, oldest dropped.
TEST_F(Daemons, StrangersOnTheLocalPortAreBounded) {
  authenticate_ = 1s;
  Relay* c0 = add_relay("c0");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 1; }));
  const tcp::endpoint local = on_io([&] { return c0->local_endpoint(); });
  asio::io_context io;
  {
    tcp::socket s = connect_with_read_timeout(io, local);
    wire::Header h;
    h.type = wire::Type::kProcHello;
    h.length = wire::kMaxBody - 1;
    std::string head(wire::kHeaderSize, '\0');
    wire::encode_header(h, reinterpret_cast<unsigned char*>(head.data()));
    asio::write(s, asio::buffer(head));
    const auto frames = read_until_closed(s);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_NE(frames[0].body.find("frame body of 16777215 bytes exceeds the maximum of 65536 before the peer is authenticated"),
              std::string::npos)
        << frames[0].body;
  }
  {
    tcp::socket s = connect_with_read_timeout(io, local);
    const auto start = std::chrono::steady_clock::now();
    const auto frames = read_until_closed(s);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].body, "not authenticated within 1000 ms");
    EXPECT_GE(std::chrono::steady_clock::now() - start, 900ms);
  }
  {
    const std::size_t extra = 8;
    std::vector<tcp::socket> silent;
    for (std::size_t i = 0; i < limits::kLocalPort.per_address + extra; ++i) silent.push_back(connect_with_read_timeout(io, local));
    for (std::size_t i = 0; i < extra; ++i) {
      const auto frames = read_until_closed(silent[i]);
      ASSERT_EQ(frames.size(), 1u) << "connection " << i;
      EXPECT_NE(frames[0].body.find("too many unauthenticated connections on this port: the oldest is dropped"), std::string::npos)
          << frames[0].body;
    }
  }
  EXPECT_TRUE(on_io([&] { return c0->registered(); }));
}

// On the broker's port: connections that never finish a TLS handshake are dropped at the
// deadline, and past the cap the oldest make room, so a real client still gets in at once.
TEST_F(Daemons, StalledHandshakesAreBoundedAndOthersStillGetIn) {
  on_io([&] {
    broker_->set_authentication_deadline(2s);
    return 0;
  });
  add_relay("c0");
  add_relay("c1");
  ASSERT_TRUE(eventually([&] { return broker_->registered_relays() == 2; }));
  asio::io_context io;
  std::vector<tcp::socket> silent;
  const std::size_t extra = 20;
  for (std::size_t i = 0; i < limits::kDaemonPort.per_address + extra; ++i) silent.push_back(connect_with_read_timeout(io, broker_ep_));
  // Every connection is accepted in its turn (the kernel's backlog holds the last ones a
  // while): wait until all were, the cap kept and the oldest dropped.
  EXPECT_TRUE(eventually([&] {
    return broker_->unauthenticated_connections() == limits::kDaemonPort.per_address && broker_->dropped_unauthenticated() == extra;
  })) << on_io([&] { return broker_->unauthenticated_connections(); })
      << " unauthenticated, " << on_io([&] { return broker_->dropped_unauthenticated(); }) << " dropped";
  Client user(ca_.issue("user alice", dir_, "alice"));
  // A liveness bound, not a performance figure: the handshake and the mapping take
  // milliseconds; blocked behind the strangers they would take their 2 s deadline.
  const auto start = std::chrono::steady_clock::now();
  ASSERT_FALSE(user.connect(broker_ep_));
  JobSpec fits;
  fits.groups = {{"g", 2}};
  const auto frames = user.submit(fits, wire::kSubmitDryRun);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].header.type, wire::Type::kJobAccepted);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  // And the rest go at the deadline.
  ASSERT_TRUE(eventually([&] { return broker_->unauthenticated_connections() == 0; }));
}
