#include "peer_paths.h"

#include <cstdio>
#include <unistd.h>

#include "common/acceptor.h"
#include "common/ladder.h"
#include "common/tls.h"

namespace gridrt::detail {

using wire::Frame;
using wire::Type;

// How long a direct connection may take before the pair falls back to the relays, and how
// long the side that asked to be called back waits for the call.
constexpr auto kDialTimeout = std::chrono::seconds(3);
constexpr auto kCallBackTimeout = std::chrono::seconds(6);
// An accepted direct connection whose dialler had the topology before us waits this long
// for ours and our rank, looking every kTopologyPoll.
constexpr auto kTopologyWait = std::chrono::milliseconds(10000);
constexpr auto kTopologyPoll = std::chrono::milliseconds(10);

ListenSpec ListenSpec::parse(const char* text) {
  ListenSpec l;
  const std::string v = text ? text : "none";
  if (v == "none") return l;
  l.enabled = true;
  if (v == "any") return l;
  unsigned lo = 0, hi = 0;
  char dash = 0, extra = 0;
  if (std::sscanf(v.c_str(), "%u%c%u%c", &lo, &dash, &hi, &extra) != 3 || dash != '-' || lo == 0 || lo > hi || hi > 65535)
    throw std::runtime_error("GRIDRT_LISTEN='" + v + "' is not none, any or LOW-HIGH");
  l.port_min = static_cast<std::uint16_t>(lo);
  l.port_max = static_cast<std::uint16_t>(hi);
  return l;
}

PeerPaths::PeerPaths(asio::io_context& io, std::mutex& mu, const ControlPlane& control, std::uint64_t job, const std::string& secret,
                     bool allowed, bool survive_loss, Host host)
    : io_(io),
      mu_(mu),
      control_(control),
      job_(job),
      secret_(secret),
      allowed_(allowed),
      survive_loss_(survive_loss),
      host_(std::move(host)),
      strangers_(io.get_executor(), "direct port", limits::kLocalPort, false) {}

void PeerPaths::open(const ListenSpec& spec, const asio::ip::address& host) {
  psk_client_ = std::make_unique<asio::ssl::context>(tls::make_psk_context(tls::Role::kClient, secret_));
  if (!spec.enabled) return;
  acceptor_ = std::make_unique<tcp::acceptor>(io_);
  const unsigned span = spec.port_min ? spec.port_max - spec.port_min + 1u : 1u;
  const unsigned start = spec.port_min ? static_cast<unsigned>(::getpid()) % span : 0;
  for (unsigned i = 0; i < span && listening_.empty(); ++i) {
    const unsigned port = spec.port_min ? spec.port_min + (start + i) % span : 0;
    boost::system::error_code ec;
    acceptor_->open(tcp::v4(), ec);
    acceptor_->bind(tcp::endpoint(host, static_cast<unsigned short>(port)), ec);
    if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) listening_ = host.to_string() + ":" + std::to_string(acceptor_->local_endpoint(ec).port());
    else acceptor_->close(ec);
  }
  if (listening_.empty()) {
    log::warn("no free port in ", spec.port_min, "-", spec.port_max, " for direct connections: using the relays");
    acceptor_.reset();
    return;
  }
  psk_server_ = std::make_unique<asio::ssl::context>(tls::make_psk_context(tls::Role::kServer, secret_));
  asio::co_spawn(io_, accept_loop(), asio::detached);
}

void PeerPaths::close() {
  closing_ = true;
  if (acceptor_) acceptor_->close();
  for (auto& [rank, p] : peers_) {
    if (p.timer) p.timer->cancel();
    if (p.link) p.link->fail("finalize");  // says bye: the peer must not take it for a break
  }
}

// ---------------------------------------------------------------- deciding and writing

void PeerPaths::write(std::int32_t dst, std::string bytes) {
  Peer& p = peers_[dst];
  if (p.path == Peer::Path::kUndecided) decide(dst, p);
  switch (p.path) {
    case Peer::Path::kRelay: return host_.write_relay(std::move(bytes));
    case Peer::Path::kDirect: {
      // Kept until the peer acknowledges it: should the connection break, it goes again.
      const KeptFrames::Kept& k = p.sent.keep_encoded(std::move(bytes));
      asio::post(io_, [link = p.link, b = k.body]() mutable { link->send_shared_bytes(std::move(b)); });
      return;
    }
    case Peer::Path::kClosed:
      // In a job that goes on without lost clusters the loss was reported (on_direct_closed):
      // either the peer's cluster is marked lost soon, or this process is stopped.
      if (survive_loss_) return;
      return host_.fail("the direct connection to rank " + std::to_string(dst) + " is closed");
    default:  // a direct connection is on its way
      p.held.push_back(std::move(bytes));
  }
}

bool PeerPaths::relayed(std::int32_t dst) {
  Peer& p = peers_[dst];
  if (p.path == Peer::Path::kUndecided) decide(dst, p);
  return p.path == Peer::Path::kRelay;
}

// The first frame for `dst`: choose the path (common/ladder.h), start a direct connection
// if there is to be one. Ranks in this cluster never get here (they use MPI).
void PeerPaths::decide(std::int32_t dst, Peer& p) {
  const auto& topology = control_.topology();
  const std::int32_t me = control_.rank();
  const PairPlan plan =
      topology && allowed_ ? plan_pair(*topology, static_cast<std::uint32_t>(me), static_cast<std::uint32_t>(dst)) : PairPlan{};
  if (plan.technique != Technique::kDirect) {
    p.path = Peer::Path::kRelay;
    return;
  }
  if (plan.dialer == me) {
    p.path = Peer::Path::kDialling;
    tcp::endpoint ep;
    try {
      ep = parse_endpoint(topology->rank_endpoint[dst]);
    } catch (const std::invalid_argument&) { return fall_back(dst, p, "bad endpoint '" + topology->rank_endpoint[dst] + "'"); }
    asio::co_spawn(io_, dial(dst, ep), asio::detached);
    return;
  }
  // Only the peer can dial: ask it to, through the relays (a reverse connection).
  p.path = Peer::Path::kAwaitingCallBack;
  signal_peer(Type::kConnectBack, dst);
  p.timer = std::make_unique<asio::steady_timer>(io_, kCallBackTimeout);
  p.timer->async_wait([this, dst](const boost::system::error_code& ec) {
    if (ec) return;
    std::lock_guard<std::mutex> lock(mu_);
    Peer& peer = peers_[dst];
    if (peer.path == Peer::Path::kAwaitingCallBack) fall_back(dst, peer, "rank " + std::to_string(dst) + " did not call back");
  });
}

// The peer wants to talk and only we can dial: we do it now, unless the pair already took
// the relays, which the peer is then told. Each process hears the topology through its own
// relay: the peer may have it before us, and without it the call waits (planned()).
void PeerPaths::connect_back(std::int32_t peer) {
  if (!control_.planned()) return callbacks_waiting_.push_back(peer);
  call_back(peer);
}

void PeerPaths::planned() {
  for (const std::int32_t peer : std::exchange(callbacks_waiting_, {})) call_back(peer);
}

void PeerPaths::call_back(std::int32_t peer) {
  const auto& topology = control_.topology();
  if (peer < 0 || !topology || static_cast<std::uint32_t>(peer) >= topology->size()) return;
  Peer& p = peers_[peer];
  if (p.path == Peer::Path::kUndecided) decide(peer, p);
  else if (p.path == Peer::Path::kRelay) signal_peer(Type::kDirectFailed, peer);
}

void PeerPaths::direct_failed(std::int32_t peer) {
  Peer& p = peers_[peer];
  if (p.path == Peer::Path::kAwaitingCallBack) fall_back(peer, p, "it could not connect to us");
}

void PeerPaths::fall_back(std::int32_t dst, Peer& p, const std::string& why) {
  log::info("rank ", control_.rank(), ": no direct connection to rank ", dst, " (", why, "); using the relays");
  p.path = Peer::Path::kRelay;
  while (!p.held.empty()) {
    host_.write_relay(std::move(p.held.front()));
    p.held.pop_front();
  }
}

void PeerPaths::go_direct(std::int32_t dst, Peer& p, const std::shared_ptr<TlsLink>& link) {
  log::debug("rank ", control_.rank(), ": direct connection with rank ", dst, " up");
  p.link = link;
  if (p.timer) p.timer->cancel();
  // A pair already sending through the relays stays there (its frames must not overtake
  // each other); the connection still carries what the peer sends.
  if (p.path == Peer::Path::kRelay || p.path == Peer::Path::kDirect) return;
  p.path = Peer::Path::kDirect;
  while (!p.held.empty()) {
    const KeptFrames::Kept& k = p.sent.keep_encoded(std::move(p.held.front()));
    asio::post(io_, [link, b = k.body]() mutable { link->send_shared_bytes(std::move(b)); });
    p.held.pop_front();
  }
}

void PeerPaths::signal_peer(Type t, std::int32_t dst) {
  Frame f = wire::make_frame(t, {}, job_);
  f.header.src = control_.rank();
  f.header.dst = dst;
  host_.write_relay(wire::encode(f));
}

// ---------------------------------------------------------------- direct connections

asio::awaitable<void> PeerPaths::dial(std::int32_t rank, tcp::endpoint ep) {
  TlsStream stream(io_, *psk_client_);
  const boost::system::error_code ec = co_await connect_tls(stream, ep, kDialTimeout);
  std::lock_guard<std::mutex> lock(mu_);
  Peer& p = peers_[rank];
  if (ec || closing_) {
    fall_back(rank, p,
              ec ? "connecting to " + ep.address().to_string() + ":" + std::to_string(ep.port()) + ": " + ec.message() : "closing");
    signal_peer(Type::kDirectFailed, rank);  // it may be waiting for our call
    co_return;
  }
  auto link = std::make_shared<TlsLink>(std::move(stream), "rank " + std::to_string(rank));
  Frame hello = wire::make_frame(Type::kDirectHello, {}, job_);
  hello.header.src = control_.rank();
  hello.header.dst = rank;
  link->send(hello);
  start_direct(rank, link);
  go_direct(rank, p, link);
  log::info("rank ", control_.rank(), ": direct connection to rank ", rank, " at ", ep);
}

asio::awaitable<void> PeerPaths::accept_loop() {
  for (;;) {
    tcp::socket s(io_);
    if (co_await accept_next(
            *acceptor_, s, [this] { return strangers_.drop_oldest("out of file descriptors"); }, accept_failures_))
      co_return;  // closed
    tune_socket(s);
    asio::co_spawn(io_, serve_direct(std::move(s)), asio::detached);
  }
}

// One accepted direct connection. (A member coroutine, not a capturing lambda: a lambda's
// captures die with the lambda object, before the coroutine resumes.)
asio::awaitable<void> PeerPaths::serve_direct(tcp::socket s) {
  boost::system::error_code ec;
  TlsStream stream(std::move(s), *psk_server_);
  // Only a process holding the job's secret completes this handshake (TLS-PSK); until then
  // it is one of the port's bounded strangers.
  ec = co_await accept_tls(stream, strangers_, kDialTimeout);
  if (ec) {
    refused_direct_.warn("rank ", control_.rank(), ": refused a direct connection: ", ec.message());
    co_return;
  }
  // The dialler had the topology before us (each process hears it through its own relay),
  // or our application's thread has not yet taken our rank from it: its hello is checked
  // against both, so it waits in the socket until they are here.
  for (auto waited = std::chrono::milliseconds(0); waited < kTopologyWait; waited += kTopologyPoll) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (control_.planned() || closing_) break;
    }
    asio::steady_timer t(io_, kTopologyPoll);
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  auto link = std::make_shared<TlsLink>(std::move(stream), "a direct connection");
  auto who = std::make_shared<std::int32_t>(-1);
  auto received = std::make_shared<ReceivedCount>();  // I/O thread only
  std::weak_ptr<TlsLink> weak = link;
  link->keep_alive(true);
  link->start(
      [this, who, weak, received](Frame& f) {
        auto l = weak.lock();
        if (!l) return;
        if (*who >= 0) return on_peer_frame(*who, f, *l, *received);
        // The first frame names the dialler, which must be the one the ladder says dials.
        std::lock_guard<std::mutex> lock(mu_);
        const std::int32_t r = f.header.src, me = control_.rank();
        const auto& topology = control_.topology();
        const bool valid = f.header.type == Type::kDirectHello && f.header.job == job_ && control_.planned() && f.header.dst == me &&
                           r >= 0 && static_cast<std::uint32_t>(r) < topology->size() &&
                           plan_pair(*topology, static_cast<std::uint32_t>(me), static_cast<std::uint32_t>(r)).dialer == r;
        if (!valid || (peers_[r].link && !peers_[r].link->closed())) return l->fail("not a direct connection expected here");
        *who = r;
        l->set_peer("rank " + std::to_string(r));
        go_direct(r, peers_[r], l);
      },
      [this, who, received](const std::string& why) {
        if (*who >= 0) on_direct_closed(*who, why, *received);
      });
}

// Handlers of a direct connection we dialled.
void PeerPaths::start_direct(std::int32_t rank, const std::shared_ptr<TlsLink>& link) {
  auto received = std::make_shared<ReceivedCount>();  // I/O thread only
  link->keep_alive(true);                             // a hung peer process
  link->start(
      [this, rank, weak = std::weak_ptr<TlsLink>(link), received](Frame& f) {
        if (auto l = weak.lock()) on_peer_frame(rank, f, *l, *received);
      },
      [this, rank, received](const std::string& why) { on_direct_closed(rank, why, *received); });
}

void PeerPaths::on_peer_frame(std::int32_t rank, Frame& f, TlsLink& link, ReceivedCount& received) {
  if (f.header.type == Type::kError) {  // the peer closes the connection on purpose
    std::lock_guard<std::mutex> lock(mu_);
    peers_[rank].said_bye = true;
    return;
  }
  if (f.header.type == Type::kLinkAck) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!peers_[rank].sent.acknowledged(f.header.seq))
      link.fail("LinkAck of " + std::to_string(f.header.seq) + " frames, which were not sent");
    return;
  }
  // Every other frame the peer sent counts, as the peer counted it.
  if (const auto count = received.received(f.body.size())) {
    Frame ack = wire::make_frame(Type::kLinkAck);
    ack.header.seq = *count;
    link.send(std::move(ack));
  }
  // A direct connection carries its peer's traffic and nothing else.
  if (f.header.job != job_ || f.header.src != rank || f.header.dst != control_.rank() ||
      (f.header.type != Type::kData && f.header.type != Type::kRest && f.header.type != Type::kCredit && f.header.type != Type::kMatched)) {
    log::warn("rank ", control_.rank(), ": dropping a ", wire::type_name(f.header.type), " frame from rank ", rank,
              " that is not its traffic to us");
    return;
  }
  host_.deliver(f);
}

// A direct connection that breaks (a reset, an end without the peer's goodbye, silence: the
// line between the sites, not the peer) is not the end of the pair: each side tells the other
// through the relays how many of its frames came (DirectResume), and sends the rest again
// through the relays, which the pair keeps to from then on: nothing lost, duplicated or
// reordered. (Not the end of file alone: when a reset meets a socket that both loops use,
// one of them may see only an end of file.) One the peer closed saying goodbye (an Error
// frame: it leaves, or finalizes), or that breaks in finalize, ends the pair as before: in
// a job that goes on without lost clusters its loss is reported to the relay, as a relay
// link's is (the broker then decides which of the two clusters the job loses); otherwise
// sending to that peer fails.
void PeerPaths::on_direct_closed(std::int32_t rank, const std::string& why, const ReceivedCount& received) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closing_) return;
  Peer& p = peers_[rank];
  if (p.path != Peer::Path::kDirect) return;
  p.link.reset();
  if (p.said_bye || finalizing_ || !control_.topology() || control_.lost(rank)) {
    log::info("rank ", control_.rank(), ": direct connection with rank ", rank, " closed: ", why);
    p.path = Peer::Path::kClosed;
    if (survive_loss_ && !finalizing_ && control_.topology() && !control_.lost(rank)) host_.write_relay(control_.direct_lost(rank, why));
    return;
  }
  p.path = Peer::Path::kResuming;
  p.broke = why;
  Frame resume = wire::make_frame(Type::kDirectResume, {}, job_);
  resume.header.src = control_.rank();
  resume.header.dst = rank;
  resume.header.seq = received.count();
  host_.write_relay(wire::encode(resume));
  if (p.peer_received) return finish_resume(rank, p);
  // The peer's count comes through the relays (which may themselves be pausing a while); a
  // peer that never answers is lost as a closed connection's would be.
  p.timer = std::make_unique<asio::steady_timer>(io_, std::chrono::seconds(2 * dead_peer_seconds()));
  p.timer->async_wait([this, rank](const boost::system::error_code& ec) {
    if (ec) return;
    std::lock_guard<std::mutex> lock(mu_);
    Peer& peer = peers_[rank];
    if (peer.path == Peer::Path::kResuming && !closing_)
      give_up_direct(rank, peer, peer.broke + "; rank " + std::to_string(rank) + " did not answer through the relays");
  });
}

void PeerPaths::direct_resume(std::int32_t peer, std::uint64_t count) {
  Peer& p = peers_[peer];
  p.peer_received = count;
  if (p.path == Peer::Path::kResuming) return finish_resume(peer, p);
  // Our side of the connection has not broken yet: it is closed now, and what it brought is
  // final (on_direct_closed, on the I/O thread, then says so and finishes).
  if (p.path == Peer::Path::kDirect && p.link)
    asio::post(io_, [link = p.link, peer] { link->close("rank " + std::to_string(peer) + " lost this connection"); });
}

void PeerPaths::finish_resume(std::int32_t rank, Peer& p) {
  if (p.timer) p.timer->cancel();
  if (!p.sent.acknowledged(*p.peer_received))
    return give_up_direct(rank, p,
                          "rank " + std::to_string(rank) + " says it received " + std::to_string(*p.peer_received) + " frames of the " +
                              std::to_string(p.sent.sent()) + " sent");
  const std::size_t again = p.sent.kept().size();
  for (const auto& k : p.sent.kept()) host_.write_relay(std::string(*k.body));
  p.sent.clear();
  log::warn("rank ", control_.rank(), ": the direct connection with rank ", rank, " broke (", p.broke, "); ", again,
            " frames that had not arrived sent again through the relays, which the pair now uses");
  p.path = Peer::Path::kRelay;
  while (!p.held.empty()) {
    host_.write_relay(std::move(p.held.front()));
    p.held.pop_front();
  }
}

void PeerPaths::give_up_direct(std::int32_t rank, Peer& p, const std::string& why) {
  log::warn("rank ", control_.rank(), ": direct connection with rank ", rank, " lost: ", why);
  p.path = Peer::Path::kClosed;
  p.held.clear();
  p.sent.clear();
  if (survive_loss_) host_.write_relay(control_.direct_lost(rank, why));
  else host_.fail("the direct connection to rank " + std::to_string(rank) + " is closed (" + why + ")");
}

}  // namespace gridrt::detail
