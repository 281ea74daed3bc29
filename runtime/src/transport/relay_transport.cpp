#include "relay_transport.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include <openssl/crypto.h>

#include "common/settings.h"

namespace gridrt::detail {

using wire::Frame;
using wire::Type;

namespace {
flow::Window at_least_min(flow::Window w) {
  w.bytes = std::max(w.bytes, flow::kMinWindowBytes);
  return w;
}

// (Checked by gridrt::init before the transport is made: settings::value does not throw here.)
bool setting_is(const char* name, const char* value) { return settings::value(name) == std::optional<std::string>(value); }
}  // namespace

RelayTransport::RelayTransport(const std::string& relay, std::uint64_t job, const std::string& secret, std::uint32_t local_rank,
                               const std::string& hostname, flow::Window window, ListenSpec listen, std::size_t unexpected_budget)
    : job_(job),
      control_(job),
      receiver_({[this](const Envelope& from, std::size_t bytes, bool may_wait) { grant(from, bytes, may_wait); },
                 [this](const Envelope& from, std::uint64_t number) { tell_matched(from, number); }},
                unexpected_budget),
      sender_([this](std::int32_t dst, std::string frame) { write_to(dst, std::move(frame)); }, at_least_min(window)),
      survive_cluster_loss_(setting_is("GRIDRT_ON_CLUSTER_LOSS", "continue")),
      paths_(io_, mu_, control_, job, secret, !setting_is("GRIDRT_DIRECT", "off"), survive_cluster_loss_,
             {[this](std::string bytes) { write_relay(std::move(bytes)); }, [this](Frame& f) { on_frame(f); },
              [this](const std::string& why) { fail_all(why); }}) {
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
  paths_.open(listen, socket.local_endpoint(ec).address());
  link_ = std::make_shared<TcpLink>(std::move(socket), "relay");
  link_->share_writing();  // (write_relay, from this process's threads)
  link_->recycle_written([pool = frame_pool_](std::string&& written) { pool->give(std::move(written)); });
  ProcHello hello{secret, local_rank, hostname, paths_.listening()};
  link_->send(wire::make_frame(Type::kProcHello, hello.encode(), job));
  link_->keep_alive(true);  // a hung relay cannot carry the job
  link_->start([this](Frame& f) { on_frame(f); }, [this](const std::string& why) { on_closed(why); });
  thread_ = std::thread([this] { io_thread_loop(); });
}

void RelayTransport::halt() {
  {
    std::lock_guard<std::mutex> lock(turn_mu_);
    io_quit_ = true;
  }
  turn_cv_.notify_all();
  io_.stop();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

// ---------------------------------------------------------------- who runs io_

void RelayTransport::io_thread_loop() {
  std::unique_lock<std::mutex> lock(turn_mu_);
  for (;;) {
    while (app_has_io_ && !io_quit_) {
      if (!app_in_io_ && std::chrono::steady_clock::now() - app_left_io_ >= kTakeBack) {
        app_has_io_ = false;  // (the application computes: the connection is served here again)
        break;
      }
      turn_cv_.wait_for(lock, kTakeBack);
    }
    if (io_quit_) return;
    io_.restart();  // (under the lock: a stop asked from now on is not undone)
    io_thread_running_ = true;
    io_stop_asked_ = false;
    lock.unlock();
    io_.run();  // until an application thread takes io_ over, or no work is left (closed)
    lock.lock();
    io_thread_running_ = false;
    turn_cv_.notify_all();
    if (!io_stop_asked_) return;
  }
}

bool RelayTransport::take_io() {
  std::unique_lock<std::mutex> lock(turn_mu_);
  if (io_quit_ || app_in_io_) return false;
  app_in_io_ = true;  // (from now on: the I/O thread must not take io_ back while this waits for it)
  if (!app_has_io_) {
    app_has_io_ = true;
    io_stop_asked_ = true;
    io_.stop();  // the I/O thread leaves io_.run() after the handler it is in
    turn_cv_.wait(lock, [&] { return !io_thread_running_ || io_quit_; });
    if (io_thread_running_) {  // halted meanwhile
      app_in_io_ = false;
      return false;
    }
    io_.restart();
  }
  return true;
}

void RelayTransport::leave_io() {
  std::lock_guard<std::mutex> lock(turn_mu_);
  app_in_io_ = false;
  app_left_io_ = std::chrono::steady_clock::now();
}

bool RelayTransport::run_io_until(const std::function<bool()>& ready, std::chrono::steady_clock::time_point until) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ready()) return true;
  }
  if (!thread_.joinable() || !take_io()) return false;
  bool ran = true;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ready()) break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) break;
    io_.run_one_for(std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(100)));
    if (io_.stopped()) {  // no work left (the connection closed), or halted
      ran = false;
      break;
    }
  }
  leave_io();
  return ran;
}

void RelayTransport::leaving_unfinalized(std::chrono::milliseconds within, const std::string& why, int job_status) {
  if (!thread_.joinable() || thread_.get_id() == std::this_thread::get_id()) return;
  Frame f = wire::make_frame(Type::kError, why, job_);
  f.header.seq = wire::ending_status_seq(job_status);
  {
    std::lock_guard<std::mutex> lock(mu_);
    f.header.src = control_.rank();
  }
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
  {
    std::lock_guard<std::mutex> lock(turn_mu_);
    app_has_io_ = false;  // (no application thread waits here any more)
  }
  turn_cv_.notify_all();
  // Let queued frames out before hanging up (close_after_flush), then stop.
  asio::post(io_, [this] {
    std::lock_guard<std::mutex> lock(mu_);
    paths_.close();
    link_->close_after_flush("finalize");
  });
  thread_.join();
}

Topology RelayTransport::wait_topology(std::chrono::seconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return control_.topology().has_value() || !failure_.empty(); }))
    throw std::runtime_error("the job's other processes did not all join within " + std::to_string(timeout.count()) +
                             " s (GRIDRT_INIT_TIMEOUT); did every process call gridrt::init?");
  if (!control_.topology()) throw std::runtime_error(failure_);
  return *control_.topology();
}

RelayTransport::WanCount RelayTransport::wan_count() {
  std::unique_lock<std::mutex> lock(mu_);
  write_relay(control_.ask_wan_count());
  cv_.wait(lock, [&] { return control_.wan_count().has_value() || !failure_.empty(); });
  if (!control_.wan_count()) throw std::runtime_error(failure_);
  return *control_.wan_count();
}

// ---------------------------------------------------------------- sending

std::shared_ptr<RemoteOp> RelayTransport::send(std::int32_t dst, std::uint32_t context, std::int32_t tag, const void* buf,
                                               std::size_t bytes, bool synchronous) {
  return send_message(dst, context, tag, {}, buf, bytes, synchronous);
}

std::shared_ptr<RemoteOp> RelayTransport::send_with_head(std::int32_t dst, std::uint32_t context, std::string_view head, const void* buf,
                                                         std::size_t bytes) {
  return send_message(dst, context, 0, head, buf, bytes, false);
}

std::shared_ptr<RemoteOp> RelayTransport::send_message(std::int32_t dst, std::uint32_t context, std::int32_t tag, std::string_view head,
                                                       const void* buf, std::size_t bytes, bool synchronous) {
  // A very large message goes as rendezvous: one fragment now, the rest once the receiver
  // matched it, so that while it is unmatched it holds up nothing behind it (receiver.h).
  // One-sided messages never: the target's engine takes every one as it comes.
  const bool rendezvous = head.size() + bytes > kRendezvousAbove && !(context & kOneSidedContext);
  auto op = std::make_shared<RemoteOp>();
  op->synchronous = synchronous;
  Sender::Slot slot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.empty()) throw std::runtime_error(failure_);
    if (const std::string* why = control_.lost(dst)) {
      op->error = *why;
      return op;
    }
    slot = sender_.slot(dst, context);
  }
  wire::Header h;
  h.job = job_;
  h.src = control_.rank();
  h.dst = dst;
  h.context = context;
  h.tag = tag;
  Sender::Frames frames =
      Sender::encode(h, slot, head, buf, bytes, synchronous, rendezvous, op, frame_pool_.get());  // (no lock: the only copy)
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.empty()) throw std::runtime_error(failure_);
  if (sender_.queue(dst, context, std::move(frames), op, synchronous, rendezvous)) notify();
  return op;
}

void RelayTransport::set_window(flow::Window window) {
  std::lock_guard<std::mutex> lock(mu_);
  sender_.set_window(at_least_min(window));
}

void RelayTransport::write_relay(std::string bytes) {
  // A lone frame is written by the calling thread itself when nothing is queued before it,
  // the rest queued for the I/O thread (common/link.h, write_from_any_thread): frames leave
  // in the order they were written (under mu_), whichever thread wrote them.
  link_->write_from_any_thread(std::move(bytes));
}

void RelayTransport::finalizing() {
  std::lock_guard<std::mutex> lock(mu_);
  paths_.finalizing();
}

void RelayTransport::part_in_finalize() {
  std::lock_guard<std::mutex> lock(mu_);
  write_relay(control_.in_finalize());
}

void RelayTransport::wait_finalize_release() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return control_.released() || !failure_.empty(); });
  if (!control_.released()) throw std::runtime_error(failure_);
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
  f.header.src = control_.rank();
  f.header.dst = from.source;
  f.header.context = from.context;
  f.header.seq = number;
  write_to(from.source, wire::encode(f));
}

// The receiver matched a synchronous message (it may complete) or a rendezvous one (its
// rest goes now).
void RelayTransport::on_matched(const Frame& f) {
  bool changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed = sender_.matched(f.header.src, f.header.context, f.header.seq);
    if (changed) ++activity_;
  }
  if (changed) cv_.notify_all();  // (after the lock: see notify_unlocked)
}

void RelayTransport::set_rank(std::int32_t rank) {
  std::lock_guard<std::mutex> lock(mu_);
  control_.set_rank(rank);
  for (const auto& [from, bytes] : std::exchange(owed_, {})) grant(from, bytes, false);
  if (control_.planned()) paths_.planned();
}

// Credit that may wait (common/flow_control.h, credit_may_wait) stays here until this process next
// writes to its sender, or grants on that stream credit that may not.
void RelayTransport::grant(const Envelope& from, std::size_t bytes, bool may_wait) {
  if (bytes == 0 || !failure_.empty()) return;
  if (control_.rank() < 0) {  // a peer faster than our topology
    owed_.emplace_back(from, bytes);
    return;
  }
  held_credit_[from.source][from.context] += bytes;
  if (!may_wait) give_held_credit(from.source);
}

// Through the relays the held Credit frames go in one write, and in the same write as a small
// frame that follows them (`ahead_of`): a ping-pong's answer and the credit of the message it
// answers were two writes, and so two frames for each relay to read, forward and wake the
// other side for. A direct connection keeps and counts its frames one by one (KeptFrames), so
// there each goes alone.
void RelayTransport::give_held_credit(std::int32_t peer, std::string* ahead_of) {
  const auto held = held_credit_.find(peer);
  if (held == held_credit_.end()) return;
  const bool together = paths_.relayed(peer);
  std::string credit;
  for (const auto& [context, bytes] : held->second) {
    Frame f = wire::make_frame(Type::kCredit, {}, job_);
    f.header.src = control_.rank();
    f.header.dst = peer;
    f.header.context = context;
    f.header.seq = bytes;
    if (together) credit += wire::encode(f);
    else paths_.write(peer, wire::encode(f));
  }
  held_credit_.erase(held);
  if (credit.empty()) return;
  if (ahead_of && ahead_of->size() < kCreditRidesBelow) ahead_of->insert(0, credit);
  else paths_.write(peer, std::move(credit));
}

// Every frame to a peer goes this way: the credit held for it goes first, in the same batch.
void RelayTransport::write_to(std::int32_t dst, std::string frame) {
  give_held_credit(dst, &frame);
  paths_.write(dst, std::move(frame));
}

// ---------------------------------------------------------------- receiving

std::shared_ptr<RemoteOp> RelayTransport::recv(void* buf, std::size_t capacity, std::int32_t src, std::uint32_t context, std::int32_t tag) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.empty()) {
    auto op = std::make_shared<RemoteOp>();
    op->error = failure_;
    return op;
  }
  auto op = receiver_.post(buf, capacity, {context, src, tag});
  if (src != kAnySource)
    if (const std::string* why = control_.lost(src); why && receiver_.cancel(op)) op->error = *why;  // nothing more comes from it
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

// A one-sided message's fragments go to the sink as they come (the engine assembles them):
// their credit goes back at once, since nothing here holds them for a receive.
void RelayTransport::on_one_sided(Frame& f) {
  OneSidedSink sink;
  OneSidedPart part{f.body, f.header.seq, false, !(f.header.flags & kMore)};
  {
    std::lock_guard<std::mutex> lock(mu_);
    grant({f.header.context, f.header.src, f.header.tag}, f.body.size() + kFrameCost, (f.header.flags & wire::kCreditMayWait) != 0);
    bool& within = one_sided_within_[{f.header.src, f.header.context}];  // (a stream's messages come one after another)
    part.first = !within;
    within = !part.last;
    sink = one_sided_;
  }
  if (sink) sink(f.header.src, f.header.context, part);
  if (!part.last) return;  // (only a whole message can answer what a waiter waits for)
  std::lock_guard<std::mutex> lock(mu_);
  notify();
}

void RelayTransport::on_data(Frame& f) {
  if (f.header.context & kOneSidedContext) return on_one_sided(f);
  Receiver::Fragment fragment;
  fragment.env = {f.header.context, f.header.src, f.header.tag};
  fragment.data = f.body.data();
  fragment.size = f.body.size();
  fragment.owner = &f.body;
  fragment.last = !(f.header.flags & kMore);
  fragment.cost = f.body.size() + kFrameCost;
  fragment.credit_may_wait = (f.header.flags & wire::kCreditMayWait) != 0;
  if (f.header.type == Type::kRest) {
    fragment.rest = true;
    fragment.number = f.header.seq;
  } else {
    fragment.total = static_cast<std::size_t>(f.header.seq);
    fragment.synchronous = (f.header.flags & kSynchronous) != 0;
    fragment.rendezvous = (f.header.flags & kRendezvous) != 0;
  }
  bool changed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    changed = receiver_.on_fragment(fragment);
    if (changed) ++activity_;
  }
  if (changed) cv_.notify_all();
}

void RelayTransport::on_frame(Frame& f) {
  switch (f.header.type) {
    case Type::kData:
    case Type::kRest: return on_data(f);
    case Type::kMatched: return on_matched(f);
    case Type::kCredit: {
      bool changed;
      {
        std::lock_guard<std::mutex> lock(mu_);
        changed = sender_.credit(f.header.src, f.header.context, static_cast<std::size_t>(f.header.seq));
        if (changed) ++activity_;
      }
      if (changed) cv_.notify_all();
      return;
    }
    case Type::kConnectBack: {
      std::lock_guard<std::mutex> lock(mu_);
      paths_.connect_back(f.header.src);
      return;
    }
    case Type::kDirectFailed: {
      std::lock_guard<std::mutex> lock(mu_);
      paths_.direct_failed(f.header.src);
      return;
    }
    case Type::kDirectResume: {
      std::lock_guard<std::mutex> lock(mu_);
      paths_.direct_resume(f.header.src, f.header.seq);
      return;
    }
    default:
      if (ControlPlane::is_control(f.header.type)) on_control(f);
  }
}

void RelayTransport::on_control(const Frame& f) {
  using What = ControlPlane::Heard::What;
  std::unique_lock<std::mutex> lock(mu_);  // (notify() too: what waiters read is mu_'s)
  const ControlPlane::Heard heard = control_.hear(f);
  switch (heard.what) {
    case What::kTopology:
      if (control_.planned()) paths_.planned();
      break;
    case What::kLoss: lock.unlock(); return mark_lost(heard.cluster, heard.why);
    case What::kFailure:
      if (failure_.empty()) failure_ = heard.why;
      break;
    default: break;
  }
  notify();
}

// ---------------------------------------------------------------- waiting and failure

void RelayTransport::wait(const std::shared_ptr<RemoteOp>& op) {
  const auto finished = [&] { return op->done || !op->error.empty(); };
  run_io_until(finished, std::chrono::steady_clock::time_point::max());
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, finished);
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
  const auto until = std::chrono::steady_clock::now() + at_most;
  const auto moved = [&] { return activity_ != seen || !failure_.empty(); };
  if (run_io_until(moved, until)) return;
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, until, moved);
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
    if (!control_.lose(cluster, why)) return;
    fail_lost(cluster);
    notify();
    tell = one_sided_lost_;
    gone = control_.in_cluster(cluster);
  }
  if (tell) tell(gone);  // (locks its lost origins held at this process's windows go on)
}

std::map<std::uint32_t, std::string> RelayTransport::lost_clusters() {
  std::lock_guard<std::mutex> lock(mu_);
  return control_.lost_clusters();
}

std::optional<std::string> RelayTransport::lost(std::int32_t rank) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string* why = control_.lost(rank);
  return why ? std::optional<std::string>(*why) : std::nullopt;
}

// What waits on the ranks of a lost cluster fails: receives posted for them (messages they
// sent in full before are delivered as usual), messages from them cut short, and sends to
// them, which would otherwise wait for credit that never comes.
void RelayTransport::fail_lost(std::uint32_t cluster) {
  const std::string& why = control_.lost_clusters().at(cluster);
  const auto gone = control_.in_cluster(cluster);
  receiver_.fail_from(gone, why);
  sender_.fail_to(gone, why);
}

void RelayTransport::on_closed(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_all("lost the connection to the relay: " + why);
}

}  // namespace gridrt::detail
