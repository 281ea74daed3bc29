#include "transport.h"

#include <algorithm>
#include <cstring>

namespace gridrt::detail {

using wire::Frame;
using wire::Type;

RelayTransport::RelayTransport(const std::string& relay, std::uint64_t job, const std::string& secret,
                               std::uint32_t local_rank, const std::string& hostname, std::size_t window)
    : job_(job), window_(std::max(window, kMinWindow)) {
  tcp::socket socket(io_);
  boost::system::error_code ec;
  socket.connect(parse_endpoint(relay), ec);
  if (ec) throw std::runtime_error("cannot connect to the relay at " + relay + ": " + ec.message());
  socket.set_option(tcp::no_delay(true), ec);
  link_ = std::make_shared<TcpLink>(std::move(socket), "relay");
  ProcHello hello{secret, local_rank, hostname, ""};
  link_->send(wire::make_frame(Type::kProcHello, hello.encode(), job));
  link_->start([this](Frame& f) { on_frame(f); }, [this](const std::string& why) { on_closed(why); });
  thread_ = std::thread([this] { io_.run(); });
}

RelayTransport::~RelayTransport() {
  // Let queued frames reach the relay before hanging up (close_after_flush), then stop.
  asio::post(io_, [link = link_] { link->close_after_flush("finalize"); });
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

// ---------------------------------------------------------------- sending

std::shared_ptr<RemoteOp> RelayTransport::send(std::int32_t dst, std::uint32_t context, std::int32_t tag, const void* buf,
                                               std::size_t bytes) {
  // Relays store and forward whole frames, so small fragments let the hops work at once
  // (a pipeline); a window holds several, so the stream flows while credit comes back.
  const std::size_t fragment = std::min<std::size_t>(kMaxFragment, window_ / 4 - kFrameCost);
  auto op = std::make_shared<RemoteOp>();
  std::vector<Outgoing> frames;
  const char* p = static_cast<const char*>(buf);
  std::size_t off = 0;
  do {  // encoded here, in the caller's thread: its buffer is free once we return
    const std::size_t n = std::min(bytes - off, fragment);
    wire::Header h;
    h.type = Type::kData;
    h.job = job_;
    h.src = rank_;
    h.dst = dst;
    h.context = context;
    h.tag = tag;
    h.length = static_cast<std::uint32_t>(n);
    h.flags = off + n < bytes ? kMore : 0;
    h.seq = seq_++;
    // Header and payload straight into one buffer: the only copy of the caller's data.
    std::string encoded(wire::kHeaderSize + n, '\0');
    wire::encode_header(h, reinterpret_cast<unsigned char*>(encoded.data()));
    if (n) std::memcpy(encoded.data() + wire::kHeaderSize, p + off, n);
    off += n;
    frames.push_back({std::move(encoded), n + kFrameCost, off < bytes ? nullptr : op});
  } while (off < bytes);
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.empty()) throw std::runtime_error(failure_);
  auto [it, fresh] = out_.try_emplace({dst, context});
  if (fresh) it->second.credit = static_cast<std::int64_t>(window_);
  for (auto& o : frames) it->second.queue.push_back(std::move(o));
  pump(it->second);
  return op;
}

void RelayTransport::pump(Stream& s) {
  bool completed = false;
  while (!s.queue.empty() && s.credit >= static_cast<std::int64_t>(s.queue.front().cost)) {
    Outgoing& o = s.queue.front();
    s.credit -= static_cast<std::int64_t>(o.cost);
    write(std::move(o.bytes));
    if (o.completes) {
      o.completes->done = true;
      completed = true;
    }
    s.queue.pop_front();
  }
  if (completed) cv_.notify_all();
}

void RelayTransport::write(std::string bytes) {
  // Always through the I/O thread's queue, also from the I/O thread itself: frames leave in
  // the order they were written, whichever thread wrote them.
  asio::post(io_, [link = link_, b = std::move(bytes)]() mutable { link->send_bytes(std::move(b)); });
}

void RelayTransport::grant(const Envelope& from, std::size_t bytes) {
  if (bytes == 0 || !failure_.empty()) return;
  Frame f = wire::make_frame(Type::kCredit, {}, job_);
  f.header.src = rank_;
  f.header.dst = from.source;
  f.header.context = from.context;
  f.header.seq = bytes;
  write(wire::encode(f));
}

// ---------------------------------------------------------------- receiving

std::shared_ptr<RemoteOp> RelayTransport::recv(void* buf, std::size_t capacity, std::int32_t src, std::uint32_t context,
                                               std::int32_t tag) {
  auto op = std::make_shared<RemoteOp>();
  op->pattern = {context, src, tag};
  op->buf = buf;
  op->capacity = capacity;
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.empty()) {
    op->error = failure_;
    return op;
  }
  if (auto in = queue_.post(op)) bind(in, op);
  return op;
}

void RelayTransport::bind(const std::shared_ptr<Incoming>& in, const std::shared_ptr<RemoteOp>& op) {
  in->bound = op;
  op->got = in->env;
  const std::string held = std::move(in->data);
  in->data.clear();
  deliver(*in, held.data(), held.size());
  grant(in->env, std::exchange(in->withheld, 0));
  finish_if_complete(*in);
}

void RelayTransport::deliver(Incoming& in, const char* data, std::size_t n) {
  RemoteOp& op = *in.bound;
  if (!op.error.empty()) return;  // truncated already: the rest is consumed and dropped
  if (in.filled + n > op.capacity) {
    op.error = "message from rank " + std::to_string(in.env.source) + " (tag " + std::to_string(in.env.tag) +
               ") truncated: the receive buffer holds " + std::to_string(op.capacity) + " bytes";
    cv_.notify_all();
    return;
  }
  if (n) std::memcpy(static_cast<char*>(op.buf) + in.filled, data, n);
  in.filled += n;
}

void RelayTransport::finish_if_complete(Incoming& in) {
  if (!in.complete || !in.bound) return;
  in.bound->bytes = in.filled;
  if (in.bound->error.empty()) in.bound->done = true;
  cv_.notify_all();
}

void RelayTransport::on_data(Frame& f) {
  const Envelope env{f.header.context, f.header.src, f.header.tag};
  const StreamKey key{f.header.src, f.header.context};
  const std::size_t cost = f.body.size() + kFrameCost;
  std::lock_guard<std::mutex> lock(mu_);
  auto& in = current_[key];
  if (!in) {  // the first fragment of a message: match it now
    in = std::make_shared<Incoming>();
    in->env = env;
    if (auto op = queue_.arrive(in)) {
      in->bound = op;
      op->got = env;
    }
  }
  if (in->bound) {
    deliver(*in, f.body.data(), f.body.size());
    grant(env, cost);
  } else {
    in->data += f.body;
    in->withheld += cost;
  }
  if (!(f.header.flags & kMore)) {
    in->complete = true;
    finish_if_complete(*in);
    current_.erase(key);
  }
}

void RelayTransport::on_frame(Frame& f) {
  switch (f.header.type) {
    case Type::kData:
      return on_data(f);
    case Type::kCredit: {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = out_.find({f.header.src, f.header.context});
      if (it == out_.end()) return;  // credit for a stream never used: nothing waits on it
      it->second.credit += static_cast<std::int64_t>(f.header.seq);
      return pump(it->second);
    }
    case Type::kTopology:
      try {
        wire::Reader r(f.body);
        Topology t = Topology::decode(r);
        std::lock_guard<std::mutex> lock(mu_);
        topology_ = std::move(t);
      } catch (const wire::BadBody& e) {
        std::lock_guard<std::mutex> lock(mu_);
        failure_ = std::string("bad topology from the relay: ") + e.what();
      }
      cv_.notify_all();
      return;
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

void RelayTransport::fail_all(const std::string& why) {
  if (failure_.empty()) failure_ = why;
  for (auto& op : queue_.take_posted()) op->error = failure_;
  for (auto& [key, in] : current_)
    if (in->bound && !in->bound->done) in->bound->error = failure_;
  for (auto& [key, s] : out_)
    for (auto& o : s.queue)
      if (o.completes) o.completes->error = failure_;
  cv_.notify_all();
}

void RelayTransport::on_closed(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_all("lost the connection to the relay: " + why);
}

}  // namespace gridrt::detail
