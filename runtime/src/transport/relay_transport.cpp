#include "relay_transport.h"

#include <atomic>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/acceptor.h"
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
// What a one-sided message's first fragment may make this process set aside for the rest
// at once (a larger one grows as it comes).
constexpr std::uint64_t kOneSidedReserveAtMost = std::uint64_t{64} << 20;

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

RelayTransport::RelayTransport(const std::string& relay, std::uint64_t job, const std::string& secret,
                               std::uint32_t local_rank, const std::string& hostname, std::size_t window, ListenSpec listen,
                               std::size_t unexpected_budget)
    : job_(job),
      window_(std::max(window, kMinWindow)),
      receiver_({[this](const Envelope& from, std::size_t bytes) { grant(from, bytes); },
                 [this](const Envelope& from, std::uint64_t number) { tell_matched(from, number); }},
                unexpected_budget),
      sender_([this](std::int32_t dst, std::string frame) { write(dst, std::move(frame)); }, window_) {
  const char* direct = std::getenv("GRIDRT_DIRECT");
  direct_allowed_ = !(direct && std::string(direct) == "off");
  const char* on_loss = std::getenv("GRIDRT_ON_CLUSTER_LOSS");
  survive_cluster_loss_ = on_loss && std::string(on_loss) == "continue";
  // OpenSSL frees its global state in an atexit handler of its own. A process that exits
  // without gridrt::finalize runs that handler while this transport's I/O thread may still
  // be decrypting a record (halt() comes later, registered by gridrt::init): OpenSSL stays
  // up until the process is gone. (Asked for before the first TLS context of the process.)
  OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr);
  tcp::socket socket(io_);
  boost::system::error_code ec;
  socket.connect(parse_endpoint(relay), ec);
  if (ec) throw std::runtime_error("cannot connect to the relay at " + relay + ": " + ec.message());
  tune_socket(socket);
  if (listen.enabled) {
    // On the address this node reaches its relay from: the node's address on the cluster's
    // network, which the declared policy says other sites can reach.
    const auto host = socket.local_endpoint(ec).address();
    acceptor_ = std::make_unique<tcp::acceptor>(io_);
    const unsigned span = listen.port_min ? listen.port_max - listen.port_min + 1u : 1u;
    const unsigned start = listen.port_min ? static_cast<unsigned>(::getpid()) % span : 0;
    for (unsigned i = 0; i < span && listening_.empty(); ++i) {
      const unsigned port = listen.port_min ? listen.port_min + (start + i) % span : 0;
      boost::system::error_code bec;
      acceptor_->open(tcp::v4(), bec);
      acceptor_->bind(tcp::endpoint(host, static_cast<unsigned short>(port)), bec);
      if (!bec) acceptor_->listen(asio::socket_base::max_listen_connections, bec);
      if (!bec) listening_ = host.to_string() + ":" + std::to_string(acceptor_->local_endpoint(bec).port());
      else acceptor_->close(bec);
    }
    if (listening_.empty()) {
      log::warn("no free port in ", listen.port_min, "-", listen.port_max, " for direct connections: using the relays");
      acceptor_.reset();
    } else {
      psk_server_ = std::make_unique<asio::ssl::context>(tls::make_psk_context(tls::Role::kServer, secret));
    }
  }
  psk_client_ = std::make_unique<asio::ssl::context>(tls::make_psk_context(tls::Role::kClient, secret));
  link_ = std::make_shared<TcpLink>(std::move(socket), "relay");
  ProcHello hello{secret, local_rank, hostname, listening_};
  link_->send(wire::make_frame(Type::kProcHello, hello.encode(), job));
  link_->keep_alive(true);  // a hung relay cannot carry the job
  link_->start([this](Frame& f) { on_frame(f); }, [this](const std::string& why) { on_closed(why); });
  if (acceptor_) asio::co_spawn(io_, accept_loop(), asio::detached);
  thread_ = std::thread([this] { io_.run(); });
}

void RelayTransport::halt() {
  io_.stop();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void RelayTransport::leaving_unfinalized(std::chrono::milliseconds within) {
  if (!thread_.joinable() || thread_.get_id() == std::this_thread::get_id()) return;
  Frame f = wire::make_frame(Type::kError, "exited without calling gridrt::finalize (MPI_Finalize)", job_);
  f.header.src = rank_;
  auto gone = std::make_shared<std::atomic<bool>>(false);
  asio::post(io_, [link = link_, bytes = wire::encode(f), gone]() mutable {
    if (link->closed()) return gone->store(true);
    link->send_bytes(std::move(bytes));
    link->close_after_flush("exited without finalize");
  });
  // Out once the link has closed (flushed): asked on the I/O thread, now and then.
  const auto until = std::chrono::steady_clock::now() + within;
  while (!gone->load() && std::chrono::steady_clock::now() < until) {
    asio::post(io_, [link = link_, gone] {
      if (link->closed()) gone->store(true);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

RelayTransport::~RelayTransport() {
  if (!thread_.joinable()) return;  // halted
  // Let queued frames out before hanging up (close_after_flush), then stop.
  asio::post(io_, [this] {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    if (acceptor_) acceptor_->close();
    for (auto& [rank, p] : peers_) {
      if (p.timer) p.timer->cancel();
      if (p.link) p.link->close_after_flush("finalize");
    }
    link_->close_after_flush("finalize");
  });
  thread_.join();
}

Topology RelayTransport::wait_topology(std::chrono::seconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return topology_.has_value() || !failure_.empty(); }))
    throw std::runtime_error("the job's other processes did not all join within " + std::to_string(timeout.count()) +
                             " s (GRIDRT_INIT_TIMEOUT); did every process call gridrt::init?");
  if (!topology_) throw std::runtime_error(failure_);
  return *topology_;
}

RelayTransport::WanCount RelayTransport::wan_count() {
  wire::Header h;
  h.type = Type::kWanCount;
  h.job = job_;
  h.src = rank_;
  wire::Frame f{h, {}};
  std::unique_lock<std::mutex> lock(mu_);
  wan_answer_.reset();
  write_relay(wire::encode(f));
  cv_.wait(lock, [&] { return wan_answer_.has_value() || !failure_.empty(); });
  if (!wan_answer_) throw std::runtime_error(failure_);
  return *wan_answer_;
}

// ---------------------------------------------------------------- sending

std::shared_ptr<RemoteOp> RelayTransport::send(std::int32_t dst, std::uint32_t context, std::int32_t tag, const void* buf,
                                               std::size_t bytes, bool synchronous) {
  // A very large message goes as rendezvous: one fragment now, the rest once the receiver
  // matched it, so that while it is unmatched it holds up nothing behind it (receiver.h).
  // One-sided messages never: the target's engine takes every one as it comes.
  const bool rendezvous = bytes > kRendezvousAbove && !(context & kOneSidedContext);
  auto op = std::make_shared<RemoteOp>();
  op->synchronous = synchronous;
  Sender::Slot slot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.empty()) throw std::runtime_error(failure_);
    if (const std::string* why = lost_locked(dst)) {
      op->error = *why;
      return op;
    }
    slot = sender_.slot(dst, context);
  }
  wire::Header h;
  h.job = job_;
  h.src = rank_;
  h.dst = dst;
  h.context = context;
  h.tag = tag;
  Sender::Frames frames = Sender::encode(h, slot, buf, bytes, synchronous, rendezvous, op);  // (no lock: the only copy)
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.empty()) throw std::runtime_error(failure_);
  if (sender_.queue(dst, context, std::move(frames), op, synchronous, rendezvous)) notify();
  return op;
}

void RelayTransport::set_window(std::size_t window) {
  std::lock_guard<std::mutex> lock(mu_);
  window_ = std::max(window, kMinWindow);
  sender_.set_window(window_);
}

void RelayTransport::write_relay(std::string bytes) {
  // Always through the I/O thread's queue, also from the I/O thread itself: frames leave in
  // the order they were written, whichever thread wrote them.
  asio::post(io_, [link = link_, b = std::move(bytes)]() mutable { link->send_bytes(std::move(b)); });
}

void RelayTransport::write(std::int32_t dst, std::string bytes) {
  Peer& p = peers_[dst];
  if (p.path == Peer::Path::kUndecided) decide(dst, p);
  switch (p.path) {
    case Peer::Path::kRelay:
      return write_relay(std::move(bytes));
    case Peer::Path::kDirect:
      asio::post(io_, [link = p.link, b = std::move(bytes)]() mutable { link->send_bytes(std::move(b)); });
      return;
    case Peer::Path::kClosed:
      // In a job that goes on without lost clusters the loss was reported (on_direct_closed):
      // either the peer's cluster is marked lost soon, or this process is stopped.
      if (survive_cluster_loss_) return;
      return fail_all("the direct connection to rank " + std::to_string(dst) + " is closed");
    default:  // a direct connection is on its way
      p.held.push_back(std::move(bytes));
  }
}

// The first frame for `dst`: choose the path (common/ladder.h), start a direct connection
// if there is to be one. Ranks in this cluster never get here (they use MPI).
void RelayTransport::decide(std::int32_t dst, Peer& p) {
  const PairPlan plan = topology_ && direct_allowed_
                            ? plan_pair(*topology_, static_cast<std::uint32_t>(rank_), static_cast<std::uint32_t>(dst))
                            : PairPlan{};
  if (plan.technique != Technique::kDirect) {
    p.path = Peer::Path::kRelay;
    return;
  }
  if (plan.dialer == rank_) {
    p.path = Peer::Path::kDialling;
    tcp::endpoint ep;
    try {
      ep = parse_endpoint(topology_->rank_endpoint[dst]);
    } catch (const std::invalid_argument&) {
      return fall_back(dst, p, "bad endpoint '" + topology_->rank_endpoint[dst] + "'");
    }
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

// `peer` asked us to connect to it (ConnectBack): we dial, unless the pair already took the
// relays, which the peer is then told.
void RelayTransport::call_back(std::int32_t peer) {
  if (peer < 0 || !topology_ || static_cast<std::uint32_t>(peer) >= topology_->size()) return;
  Peer& p = peers_[peer];
  if (p.path == Peer::Path::kUndecided) decide(peer, p);
  else if (p.path == Peer::Path::kRelay) signal_peer(Type::kDirectFailed, peer);
}

void RelayTransport::fall_back(std::int32_t dst, Peer& p, const std::string& why) {
  log::info("rank ", rank_, ": no direct connection to rank ", dst, " (", why, "); using the relays");
  p.path = Peer::Path::kRelay;
  while (!p.held.empty()) {
    write_relay(std::move(p.held.front()));
    p.held.pop_front();
  }
}

void RelayTransport::go_direct(std::int32_t dst, Peer& p, const std::shared_ptr<TlsLink>& link) {
  log::debug("rank ", rank_, ": direct connection with rank ", dst, " up");
  p.link = link;
  if (p.timer) p.timer->cancel();
  // A pair already sending through the relays stays there (its frames must not overtake
  // each other); the connection still carries what the peer sends.
  if (p.path == Peer::Path::kRelay || p.path == Peer::Path::kDirect) return;
  p.path = Peer::Path::kDirect;
  while (!p.held.empty()) {
    asio::post(io_, [link, b = std::move(p.held.front())]() mutable { link->send_bytes(std::move(b)); });
    p.held.pop_front();
  }
}

void RelayTransport::signal_peer(Type t, std::int32_t dst) {
  Frame f = wire::make_frame(t, {}, job_);
  f.header.src = rank_;
  f.header.dst = dst;
  write_relay(wire::encode(f));
}

// ---------------------------------------------------------------- direct connections

asio::awaitable<void> RelayTransport::dial(std::int32_t rank, tcp::endpoint ep) {
  TlsStream stream(io_, *psk_client_);
  const boost::system::error_code ec = co_await connect_tls(stream, ep, kDialTimeout);
  std::lock_guard<std::mutex> lock(mu_);
  Peer& p = peers_[rank];
  if (ec || closing_) {
    fall_back(rank, p, ec ? "connecting to " + ep.address().to_string() + ":" + std::to_string(ep.port()) + ": " + ec.message()
                          : "closing");
    signal_peer(Type::kDirectFailed, rank);  // it may be waiting for our call
    co_return;
  }
  auto link = std::make_shared<TlsLink>(std::move(stream), "rank " + std::to_string(rank));
  Frame hello = wire::make_frame(Type::kDirectHello, {}, job_);
  hello.header.src = rank_;
  hello.header.dst = rank;
  link->send(hello);
  start_direct(rank, link);
  go_direct(rank, p, link);
  log::info("rank ", rank_, ": direct connection to rank ", rank, " at ", ep);
}

asio::awaitable<void> RelayTransport::accept_loop() {
  for (;;) {
    tcp::socket s(io_);
    if (co_await accept_next(*acceptor_, s, [this] { return strangers_.drop_oldest("out of file descriptors"); }, accept_failures_))
      co_return;  // closed
    tune_socket(s);
    asio::co_spawn(io_, serve_direct(std::move(s)), asio::detached);
  }
}

// One accepted direct connection. (A member coroutine, not a capturing lambda: a lambda's
// captures die with the lambda object, before the coroutine resumes.)
asio::awaitable<void> RelayTransport::serve_direct(tcp::socket s) {
  boost::system::error_code ec;
  TlsStream stream(std::move(s), *psk_server_);
  // Only a process holding the job's secret completes this handshake (TLS-PSK); until then
  // it is one of the port's bounded strangers.
  ec = co_await accept_tls(stream, strangers_, kDialTimeout);
  if (ec) {
    refused_direct_.warn("rank ", rank_, ": refused a direct connection: ", ec.message());
    co_return;
  }
  // The dialler had the topology before us (each process hears it through its own relay),
  // or our application's thread has not yet taken our rank from it: its hello is checked
  // against both, so it waits in the socket until they are here.
  for (auto waited = std::chrono::milliseconds(0); waited < kTopologyWait; waited += kTopologyPoll) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (planned() || closing_) break;
    }
    asio::steady_timer t(io_, kTopologyPoll);
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  auto link = std::make_shared<TlsLink>(std::move(stream), "a direct connection");
  auto who = std::make_shared<std::int32_t>(-1);
  std::weak_ptr<TlsLink> weak = link;
  link->keep_alive(true);
  link->start(
      [this, who, weak](Frame& f) {
        auto l = weak.lock();
        if (!l) return;
        if (*who >= 0) return on_peer_frame(*who, f);
        // The first frame names the dialler, which must be the one the ladder says dials.
        std::lock_guard<std::mutex> lock(mu_);
        const std::int32_t r = f.header.src;
        const bool valid = f.header.type == Type::kDirectHello && f.header.job == job_ && planned() && f.header.dst == rank_ &&
                           r >= 0 && static_cast<std::uint32_t>(r) < topology_->size() &&
                           plan_pair(*topology_, static_cast<std::uint32_t>(rank_), static_cast<std::uint32_t>(r)).dialer == r;
        if (!valid || (peers_[r].link && !peers_[r].link->closed())) return l->fail("not a direct connection expected here");
        *who = r;
        l->set_peer("rank " + std::to_string(r));
        go_direct(r, peers_[r], l);
      },
      [this, who](const std::string& why) {
        if (*who >= 0) on_direct_closed(*who, why);
      });
}

// Handlers of a direct connection we dialled.
void RelayTransport::start_direct(std::int32_t rank, const std::shared_ptr<TlsLink>& link) {
  link->keep_alive(true);  // a hung peer process
  link->start([this, rank](Frame& f) { on_peer_frame(rank, f); },
              [this, rank](const std::string& why) { on_direct_closed(rank, why); });
}

// A pair sending directly cannot switch to the relays (its frames would overtake each
// other, and some may be lost with the connection): once its connection is gone, sending to
// that peer fails. In a job that goes on without lost clusters, the loss is reported to the
// relay instead, as a relay link's is: the broker then decides which of the two clusters the
// job loses. Not once this process is in finalize: the peer passed the last barrier and
// hung up as it should.
void RelayTransport::on_direct_closed(std::int32_t rank, const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closing_) return;
  Peer& p = peers_[rank];
  if (p.path != Peer::Path::kDirect) return;
  p.path = Peer::Path::kClosed;
  log::info("rank ", rank_, ": direct connection with rank ", rank, " closed: ", why);
  if (!survive_cluster_loss_ || finalizing_ || !topology_ || lost_locked(rank)) return;
  Frame f = wire::make_frame(Type::kClusterLost, "direct connection with rank " + std::to_string(rank) + " (" + why + ")", job_);
  f.header.src = rank_;
  f.header.tag = static_cast<std::int32_t>(topology_->cluster_of(static_cast<std::uint32_t>(rank)));
  write_relay(wire::encode(f));
}

void RelayTransport::finalizing() {
  std::lock_guard<std::mutex> lock(mu_);
  finalizing_ = true;
}

void RelayTransport::part_in_finalize() {
  Frame f = wire::make_frame(Type::kFinalizing, {}, job_);
  f.header.src = rank_;
  std::lock_guard<std::mutex> lock(mu_);
  write_relay(wire::encode(f));
}

void RelayTransport::wait_finalize_release() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return finalize_released_ || !failure_.empty(); });
  if (!finalize_released_) throw std::runtime_error(failure_);
}

void RelayTransport::on_peer_frame(std::int32_t rank, Frame& f) {
  // A direct connection carries its peer's traffic and nothing else.
  if (f.header.job != job_ || f.header.src != rank || f.header.dst != rank_ ||
      (f.header.type != Type::kData && f.header.type != Type::kRest && f.header.type != Type::kCredit &&
       f.header.type != Type::kMatched)) {
    log::warn("rank ", rank_, ": dropping a ", wire::type_name(f.header.type), " frame from rank ", rank,
              " that is not its traffic to us");
    return;
  }
  on_frame(f);
}

// Called with mu_ held (activity_ is read under it by waiters in other threads).
void RelayTransport::notify() {
  ++activity_;
  cv_.notify_all();
}

// A synchronous message of `from` was matched here: its sender may complete it.
void RelayTransport::tell_matched(const Envelope& from, std::uint64_t number) {
  if (!failure_.empty()) return;
  Frame f = wire::make_frame(Type::kMatched, {}, job_);
  f.header.src = rank_;
  f.header.dst = from.source;
  f.header.context = from.context;
  f.header.seq = number;
  write(from.source, wire::encode(f));
}

// The receiver matched a synchronous message (it may complete) or a rendezvous one (its
// rest goes now).
void RelayTransport::on_matched(const Frame& f) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sender_.matched(f.header.src, f.header.context, f.header.seq)) notify();
}

void RelayTransport::set_rank(std::int32_t rank) {
  std::lock_guard<std::mutex> lock(mu_);
  rank_ = rank;
  for (const auto& [from, bytes] : std::exchange(owed_, {})) grant(from, bytes);
  answer_callbacks_waiting();
}

// A pair can be planned (plan_pair) once both the topology and this process's global rank
// are known: the topology arrives on the I/O thread, the rank is set by the application's
// thread after it (set_rank), a moment later, or much later on a loaded machine.
bool RelayTransport::planned() const { return topology_ && rank_ >= 0; }

void RelayTransport::answer_callbacks_waiting() {
  if (!planned()) return;
  for (const std::int32_t peer : std::exchange(callbacks_waiting_, {})) call_back(peer);
}

void RelayTransport::grant(const Envelope& from, std::size_t bytes) {
  if (bytes == 0 || !failure_.empty()) return;
  if (rank_ < 0) {  // a peer faster than our topology
    owed_.emplace_back(from, bytes);
    return;
  }
  Frame f = wire::make_frame(Type::kCredit, {}, job_);
  f.header.src = rank_;
  f.header.dst = from.source;
  f.header.context = from.context;
  f.header.seq = bytes;
  write(from.source, wire::encode(f));
}

// ---------------------------------------------------------------- receiving

std::shared_ptr<RemoteOp> RelayTransport::recv(void* buf, std::size_t capacity, std::int32_t src, std::uint32_t context,
                                               std::int32_t tag) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.empty()) {
    auto op = std::make_shared<RemoteOp>();
    op->error = failure_;
    return op;
  }
  auto op = receiver_.post(buf, capacity, {context, src, tag});
  if (src != kAnySource)
    if (const std::string* why = lost_locked(src); why && receiver_.cancel(op)) op->error = *why;  // nothing more comes from it
  return op;
}

std::shared_ptr<Arrival> RelayTransport::improbe(std::int32_t src, std::uint32_t context, std::int32_t tag) {
  std::lock_guard<std::mutex> lock(mu_);
  return receiver_.take({context, src, tag});
}

bool RelayTransport::iprobe(std::int32_t src, std::uint32_t context, std::int32_t tag, Envelope* env, std::size_t* total) {
  std::lock_guard<std::mutex> lock(mu_);
  const Arrival* a = receiver_.peek({context, src, tag});
  if (!a) return false;
  *env = a->env;
  *total = a->total;
  return true;
}

std::shared_ptr<RemoteOp> RelayTransport::mrecv(const std::shared_ptr<Arrival>& message, void* buf, std::size_t capacity) {
  std::lock_guard<std::mutex> lock(mu_);
  return receiver_.receive(message, buf, capacity);
}

bool RelayTransport::cancel(const std::shared_ptr<RemoteOp>& op) {
  std::lock_guard<std::mutex> lock(mu_);
  return receiver_.cancel(op);
}

void RelayTransport::set_one_sided_sink(OneSidedSink sink, LossSink lost) {
  std::lock_guard<std::mutex> lock(mu_);
  one_sided_ = std::move(sink);
  one_sided_lost_ = std::move(lost);
}

// A one-sided message is served as soon as it is whole (rma/engine.h): its credit goes back
// as its fragments come, since nothing here holds them for a receive.
void RelayTransport::on_one_sided(Frame& f) {
  std::string whole;
  OneSidedSink sink;
  {
    std::lock_guard<std::mutex> lock(mu_);
    grant({f.header.context, f.header.src, f.header.tag}, f.body.size() + kFrameCost);
    const bool last = !(f.header.flags & kMore);
    auto it = one_sided_parts_.find({f.header.src, f.header.context});
    if (it == one_sided_parts_.end()) {
      if (last) {
        whole = std::move(f.body);
      } else {  // a first fragment: it names the message's size (at most what can come)
        std::string& parts = one_sided_parts_[{f.header.src, f.header.context}];
        parts.reserve(std::min<std::uint64_t>(f.header.seq, kOneSidedReserveAtMost));
        parts += f.body;
        return;
      }
    } else {
      it->second += f.body;
      if (!last) return;
      whole = std::move(it->second);
      one_sided_parts_.erase(it);
    }
    sink = one_sided_;
  }
  if (sink) sink(f.header.src, f.header.context, whole);
  std::lock_guard<std::mutex> lock(mu_);
  notify();
}

void RelayTransport::on_data(Frame& f) {
  if (f.header.context & kOneSidedContext) return on_one_sided(f);
  Receiver::Fragment fragment;
  fragment.env = {f.header.context, f.header.src, f.header.tag};
  fragment.data = f.body.data();
  fragment.size = f.body.size();
  fragment.last = !(f.header.flags & kMore);
  fragment.cost = f.body.size() + kFrameCost;
  if (f.header.type == Type::kRest) {
    fragment.rest = true;
    fragment.number = f.header.seq;
  } else {
    fragment.total = static_cast<std::size_t>(f.header.seq);
    fragment.synchronous = (f.header.flags & kSynchronous) != 0;
    fragment.rendezvous = (f.header.flags & kRendezvous) != 0;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (receiver_.on_fragment(fragment)) notify();
}

void RelayTransport::on_frame(Frame& f) {
  switch (f.header.type) {
    case Type::kData:
    case Type::kRest:
      return on_data(f);
    case Type::kMatched:
      return on_matched(f);
    case Type::kCredit: {
      std::lock_guard<std::mutex> lock(mu_);
      if (sender_.credit(f.header.src, f.header.context, static_cast<std::size_t>(f.header.seq))) notify();
      return;
    }
    case Type::kConnectBack: {  // the peer wants to talk and only we can dial: do it now
      std::lock_guard<std::mutex> lock(mu_);
      // Each process hears the topology through its own relay: the peer may have it before
      // us. Without it we cannot plan the pair, so the call waits for it.
      if (!planned()) return callbacks_waiting_.push_back(f.header.src);
      call_back(f.header.src);
      return;
    }
    case Type::kDirectFailed: {
      std::lock_guard<std::mutex> lock(mu_);
      Peer& p = peers_[f.header.src];
      if (p.path == Peer::Path::kAwaitingCallBack) fall_back(f.header.src, p, "it could not connect to us");
      return;
    }
    case Type::kTopology: {
      std::optional<Topology> t;
      std::string bad;
      try {
        wire::Reader r(f.body);
        t = Topology::decode(r);
      } catch (const wire::BadBody& e) {
        bad = std::string("bad topology from the relay: ") + e.what();
      }
      std::lock_guard<std::mutex> lock(mu_);  // (notify() too: what waiters read is mu_'s)
      if (t) {
        topology_ = std::move(*t);
        answer_callbacks_waiting();
      } else {
        failure_ = bad;
      }
      notify();
      return;
    }
    case Type::kClusterLost:
      mark_lost(static_cast<std::uint32_t>(f.header.tag), f.body);
      return;
    case Type::kFinalizing: {
      std::lock_guard<std::mutex> lock(mu_);
      finalize_released_ = true;
      notify();
      return;
    }
    case Type::kWanCount: {
      std::lock_guard<std::mutex> lock(mu_);  // (notify() too: what waiters read is mu_'s)
      try {
        wire::Reader r(f.body);
        WanCount c;
        c.messages = r.u64();
        c.bytes = r.u64();
        r.end();
        wan_answer_ = c;
      } catch (const wire::BadBody& e) {
        failure_ = std::string("bad WanCount from the relay: ") + e.what();
      }
      notify();
      return;
    }
    case Type::kError: {
      std::lock_guard<std::mutex> lock(mu_);
      if (failure_.empty()) failure_ = "the relay refused this process: " + f.body;
      return;
    }
    default:
      return;
  }
}

// ---------------------------------------------------------------- waiting and failure

void RelayTransport::wait(const std::shared_ptr<RemoteOp>& op) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return op->done || !op->error.empty(); });
  if (!op->error.empty()) throw std::runtime_error(op->error);
}

bool RelayTransport::test(const std::shared_ptr<RemoteOp>& op) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!op->error.empty()) throw std::runtime_error(op->error);
  return op->done;
}

std::uint64_t RelayTransport::activity() {
  std::lock_guard<std::mutex> lock(mu_);
  return activity_;
}

void RelayTransport::await_activity(std::uint64_t seen, std::chrono::microseconds at_most) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, at_most, [&] { return activity_ != seen || !failure_.empty(); });
}

void RelayTransport::fail_all(const std::string& why) {
  if (failure_.empty()) failure_ = why;
  receiver_.fail_all(failure_);
  sender_.fail(failure_);
  notify();
}

void RelayTransport::mark_lost(std::uint32_t cluster, const std::string& why) {
  LossSink tell;
  std::function<bool(std::int32_t)> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!topology_ || cluster >= topology_->clusters.size() || lost_.count(cluster)) return;
    lost_[cluster] = "cluster " + topology_->clusters[cluster].name + " lost: " + why;
    fail_lost(cluster);
    notify();
    tell = one_sided_lost_;
    gone = [topology = *topology_, cluster](std::int32_t r) {
      return r >= 0 && static_cast<std::uint32_t>(r) < topology.size() && topology.cluster_of(static_cast<std::uint32_t>(r)) == cluster;
    };
  }
  if (tell) tell(gone);  // (locks its lost origins held at this process's windows go on)
}

std::map<std::uint32_t, std::string> RelayTransport::lost_clusters() {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_;
}

std::optional<std::string> RelayTransport::lost(std::int32_t rank) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string* why = lost_locked(rank);
  return why ? std::optional<std::string>(*why) : std::nullopt;
}

const std::string* RelayTransport::lost_locked(std::int32_t rank) const {
  if (lost_.empty() || !topology_ || rank < 0) return nullptr;
  const auto it = lost_.find(topology_->cluster_of(static_cast<std::uint32_t>(rank)));
  return it == lost_.end() ? nullptr : &it->second;
}

// What waits on the ranks of a lost cluster fails: receives posted for them (messages they
// sent in full before are delivered as usual), messages from them cut short, and sends to
// them, which would otherwise wait for credit that never comes.
void RelayTransport::fail_lost(std::uint32_t cluster) {
  const std::string& why = lost_[cluster];
  auto gone = [&](std::int32_t rank) { return rank >= 0 && topology_->cluster_of(static_cast<std::uint32_t>(rank)) == cluster; };
  receiver_.fail_from(gone, why);
  sender_.fail_to(gone, why);
}

void RelayTransport::on_closed(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_all("lost the connection to the relay: " + why);
}

}  // namespace gridrt::detail
