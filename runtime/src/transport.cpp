#include "transport.h"

#include <algorithm>
#include <cstring>

namespace gridrt::detail {

using wire::Frame;
using wire::Type;

RelayTransport::RelayTransport(const std::string& relay, std::uint64_t job, const std::string& secret,
                               std::uint32_t local_rank, const std::string& hostname)
    : job_(job) {
  tcp::socket socket(io_);
  boost::system::error_code ec;
  socket.connect(parse_endpoint(relay), ec);
  if (ec) throw std::runtime_error("cannot connect to the relay at " + relay + ": " + ec.message());
  socket.set_option(tcp::no_delay(true), ec);
  link_ = std::make_shared<TcpLink>(std::move(socket), "relay");
  ProcHello hello{secret, local_rank, hostname};
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

void RelayTransport::send(std::int32_t src, std::int32_t dst, std::uint32_t context, std::int32_t tag, const void* buf,
                          std::size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.empty()) throw std::runtime_error(failure_);
  }
  // Encoded here, in the application thread: the caller's buffer is free once we return.
  std::string out;
  const char* p = static_cast<const char*>(buf);
  std::size_t off = 0;
  do {
    const std::size_t n = std::min<std::size_t>(bytes - off, wire::kMaxBody);
    Frame f = wire::make_frame(Type::kData, std::string(p + off, n), job_);
    f.header.src = src;
    f.header.dst = dst;
    f.header.context = context;
    f.header.tag = tag;
    f.header.seq = seq_++;
    off += n;
    f.header.flags = off < bytes ? kMore : 0;
    out += wire::encode(f);
  } while (off < bytes);
  asio::post(io_, [link = link_, out = std::move(out)]() mutable { link->send_bytes(std::move(out)); });
}

void RelayTransport::post_recv(const std::shared_ptr<RemoteRecv>& r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.empty()) {
    r->error = failure_;
    return;
  }
  if (auto a = queue_.post(r)) complete(r, *a);
}

void RelayTransport::complete(const std::shared_ptr<RemoteRecv>& r, Arrival& a) {
  r->got = a.env;
  r->bytes = a.data.size();
  if (a.data.size() > r->capacity) {
    r->error = "message of " + std::to_string(a.data.size()) + " bytes from rank " + std::to_string(a.env.source) +
               " (tag " + std::to_string(a.env.tag) + ") truncated: the receive buffer holds " + std::to_string(r->capacity);
  } else {
    if (!a.data.empty()) std::memcpy(r->buf, a.data.data(), a.data.size());
    r->done = true;
  }
  cv_.notify_all();
}

void RelayTransport::wait(const std::shared_ptr<RemoteRecv>& r) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return r->done || !r->error.empty(); });
  if (!r->error.empty()) throw std::runtime_error(r->error);
}

bool RelayTransport::test(const std::shared_ptr<RemoteRecv>& r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!r->error.empty()) throw std::runtime_error(r->error);
  return r->done;
}

void RelayTransport::on_frame(Frame& f) {
  if (f.header.type == Type::kTopology) {
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
  }
  if (f.header.type == Type::kError) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.empty()) failure_ = "the relay refused this process: " + f.body;
    return;
  }
  if (f.header.type != Type::kData) return;
  const auto key = std::make_pair(f.header.src, f.header.context);
  Arrival a;
  auto part = partial_.find(key);
  if (part != partial_.end()) {
    a = std::move(part->second);
    partial_.erase(part);
    a.data += f.body;
  } else {
    a.env = {f.header.context, f.header.src, f.header.tag};
    a.data = std::move(f.body);
  }
  if (f.header.flags & kMore) {
    partial_[key] = std::move(a);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (auto r = queue_.arrive(a)) complete(*r, a);
}

void RelayTransport::on_closed(const std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failure_.empty()) failure_ = "lost the connection to the relay: " + why;
  for (auto& r : queue_.take_posted()) r->error = failure_;
  cv_.notify_all();
}

}  // namespace gridrt::detail
