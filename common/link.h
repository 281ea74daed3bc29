// A framed connection: one read loop, one write queue, over a TCP socket or a TLS stream.
// The session piece of every daemon (asio's server examples: listener, session, manager).
// All its callbacks run on the executor the stream was made on; each daemon runs one thread,
// so a Link needs no strand. A peer that sends a frame the codec rejects gets an Error frame
// naming what was wrong and is dropped; nothing else is disturbed.
#pragma once

#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>
#include <sys/socket.h>

#include <cerrno>
#include <deque>
#include <functional>
#include <iomanip>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>

#include "common/admission.h"
#include "common/log.h"
#include "common/tls_stream.h"
#include "common/wire.h"

namespace gridrt {

// GRIDRT_DEAD_PEER_SECONDS (default 30, at least 3): how long a peer may be silent, vanished or
// hung before its connection is given up (tune_socket, Liveness).
int dead_peer_seconds();

// How a link tells a hung peer from a quiet one. A stopped process or a stalled event loop
// keeps its connections open and its kernel still answers TCP's keepalives, so only the peer
// itself can say that it is alive: each end sends a Heartbeat frame when it has had nothing
// else to send for `beat`, and a peer heard nothing from for `silence` is taken for hung.
// From the dead-peer setting T: a beat every T/6 and silence of 5T/6, checked every beat,
// so a hung peer is noticed within T; five beats in a row must go missing first.
struct Liveness {
  std::chrono::milliseconds beat;
  std::chrono::milliseconds silence;
  static Liveness from_dead_peer_setting() {
    const std::chrono::milliseconds t(dead_peer_seconds() * 1000);
    return {t / 6, t * 5 / 6};
  }
};

// Frames handed on together. While a link's reader hands on the frames that one read brought
// (Link::read_loop), a daemon's link given one of them holds it, and when the reader is done
// each such link writes all it holds in one system call from the same thread. A relay's
// forwarded frames came in a read of their own and went out one write each (a ping-pong's
// answer and the credit before it: two writes on each relay, the second after a turn of the
// event loop that woke the link's write loop); now what one read brought leaves in one write.
namespace held_writes {
struct Holder {
  virtual ~Holder() = default;
  virtual void write_held() = 0;
};
inline thread_local int depth = 0;  // readers handing frames on, on this thread (one, or none)
inline thread_local std::vector<std::shared_ptr<Holder>> holders;
// For the duration of one read's frames: links hold what they are given, and write it at the end.
class Scope {
 public:
  Scope() { ++depth; }
  ~Scope() {
    if (--depth > 0) return;
    for (auto& h : std::exchange(holders, {})) h->write_held();
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};
}  // namespace held_writes

template <typename Stream> class Link : public held_writes::Holder, public std::enable_shared_from_this<Link<Stream>> {
 public:
  using FrameHandler = std::function<void(wire::Frame&)>;
  using CloseHandler = std::function<void(const std::string& why)>;

  Link(Stream stream, std::string peer)
      : stream_(std::move(stream)),
        peer_(std::move(peer)),
        wake_(stream_.get_executor(), std::chrono::steady_clock::time_point::max()),
        trust_deadline_(stream_.get_executor()),
        heartbeat_(stream_.get_executor()) {}

  // Starts the read and write loops. on_frame sees every good frame; on_closed runs once,
  // when the connection ends for any reason (peer gone, bad frame, close()).
  void start(FrameHandler on_frame, CloseHandler on_closed) {
    on_frame_ = std::move(on_frame);
    on_closed_ = std::move(on_closed);
    // Each loop owns the link from its creation (a coroutine's parameters live in its
    // frame; a lazily started coroutine taking shared_from_this() in its body would be too
    // late if the caller drops its pointer first).
    asio::co_spawn(stream_.get_executor(), read_loop(this->shared_from_this()), asio::detached);
    asio::co_spawn(stream_.get_executor(), write_loop(this->shared_from_this()), asio::detached);
  }

  void send(const wire::Frame& f) {
    wire::Frame copy = f;
    send(std::move(copy));
  }
  // Takes the body over: forwarding a frame copies only its 48-byte header.
  void send(wire::Frame&& f) {
    Outbound o;
    o.head.resize(wire::kHeaderSize);
    wire::Header h = f.header;
    h.length = static_cast<std::uint32_t>(f.body.size());
    wire::encode_header(h, reinterpret_cast<unsigned char*>(o.head.data()));
    o.body = std::move(f.body);
    enqueue(std::move(o));
  }
  // A frame whose body is shared with whoever keeps it for sending again (a relay link's
  // session, common/link_resume.h): written without a copy, released once written.
  void send_shared(const wire::Header& h, std::shared_ptr<const std::string> body) {
    Outbound o;
    o.head.resize(wire::kHeaderSize);
    wire::Header header = h;
    header.length = static_cast<std::uint32_t>(body->size());
    wire::encode_header(header, reinterpret_cast<unsigned char*>(o.head.data()));
    o.shared = std::move(body);
    enqueue(std::move(o));
  }
  // Already encoded frames; or shared with whoever keeps them for sending again.
  void send_bytes(std::string bytes) { enqueue(Outbound{std::move(bytes), {}, {}}); }

  // A link of a plain TCP socket that threads other than its own write to (a job's process:
  // its application thread and its I/O thread; a daemon's links have one thread).
  // After share_writing(), write_from_any_thread() may be called from any thread; the
  // link's own frames (heartbeats, fail) are ordered with those by the same lock.
  // Before start().
  void share_writing() { shared_ = std::make_unique<std::mutex>(); }
  // Already encoded frames from any thread (share_writing): written at once by the calling
  // thread when nothing is queued or being written and the link was quiet for kBurstGap —
  // a lone frame (a ping-pong's, a collective step's) no longer waits for the link's thread
  // to wake (an eventfd write and a reactor turn, which on two cores cost a process about as
  // much as the frame's own system calls); otherwise, or for what the socket would not take
  // now, queued behind what is, for the link's thread, which writes a burst's frames
  // together (4 streams of 1 KiB messages through the relays: 60 MB/s, median of six runs,
  // when each went alone; 64 when all went through the link's thread; 66 so, of three).
  // A frame of kLargeFrame or more goes at once even in a burst: it fills a system call on its
  // own, so writing it together with others saves nothing, and the hand-off would cost the
  // link's thread a wake-up per frame (a stream of 1 MiB messages through the relays, nine
  // alternations: median 364 MB/s against 326, 0.55 against 0.49 of hop_bench's TLS chain).
  void write_from_any_thread(std::string bytes) {
    static_assert(std::is_same_v<Stream, tcp::socket>, "a TLS stream's state belongs to one thread");
    std::unique_lock<std::mutex> lock(*shared_);
    if (closed_) return;
    const auto now = std::chrono::steady_clock::now();
    const bool lone = now - last_write_ >= kBurstGap || bytes.size() >= kLargeFrame;
    last_write_ = now;
    if (!writing_ && queue_.empty() && lone) {
      std::size_t done = 0;
      while (done < bytes.size()) {
        const ssize_t n = ::send(stream_.native_handle(), bytes.data() + done, bytes.size() - done, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) done += static_cast<std::size_t>(n);
        else if (n < 0 && errno == EINTR) continue;
        else break;  // full, or failed: the link's thread writes the rest (and meets the error)
      }
      if (done == bytes.size()) {
        sent_since_beat_ = true;
        if (recycle_) recycle_(std::move(bytes));
        return;
      }
      bytes.erase(0, done);
    }
    push(Outbound{std::move(bytes), {}, {}});
    if (writing_) return;  // the link's thread looks at the queue before it sleeps
    writing_ = true;       // (about to: woken once)
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] { self->wake_.cancel(); });
  }
  void send_shared_bytes(std::shared_ptr<const std::string> bytes) { enqueue(Outbound{{}, {}, std::move(bytes)}); }
  // Whole frames written (write_from_any_thread's) are handed to `keep` rather than freed, for
  // the next ones to be encoded into (common/frame_pool.h). Before start().
  void recycle_written(std::function<void(std::string&&)> keep) { recycle_ = std::move(keep); }
  // Sends an Error frame, then closes once it is written.
  void fail(const std::string& why) {
    send(wire::make_frame(wire::Type::kError, why));
    close_after_flush(why);
  }
  void close_after_flush(const std::string& why) {
    closing_ = true;
    close_reason_ = why;
    wake_.cancel();
  }
  void close(const std::string& why) {
    {
      const auto lock = writers_lock();  // (no thread is in the middle of writing its socket)
      if (closed_) return;
      closed_ = true;
      boost::system::error_code ec;
      lowest_layer(stream_).shutdown(tcp::socket::shutdown_both, ec);
      lowest_layer(stream_).close(ec);
    }
    wake_.cancel();
    trust_deadline_.cancel();
    heartbeat_.cancel();
    if (on_closed_) {
      auto cb = std::move(on_closed_);
      on_closed_ = nullptr;
      on_frame_ = nullptr;  // break cycles: handlers often capture this link
      cb(why);
    }
  }

  // Until trust() is called the peer is a stranger (limits hold before authentication): its
  // frames may hold at most `max_body` bytes, are read in small pieces, it must earn trust
  // within `deadline`, and it is one of `port`'s unauthenticated connections (dropped should
  // the caps need its place). A link that breaks a limit fails with a reason naming it.
  // Call before start().
  void admit_untrusted(std::uint32_t max_body, std::chrono::steady_clock::duration deadline, Admission& port,
                       const asio::ip::address& from) {
    trusted_ = false;
    decoder_.set_max_body(max_body);
    const std::weak_ptr<Link> weak = this->weak_from_this();
    stranger_ = port.admit(from, [weak] {
      if (auto self = weak.lock()) self->fail("too many unauthenticated connections on this port: the oldest is dropped");
    });
    trust_deadline_.expires_after(deadline);
    trust_deadline_.async_wait([weak, deadline](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self || self->closed_) return;
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline).count();
      dropped_strangers().warn("dropping ", self->peer_, ": not authenticated within ", ms, " ms");
      self->fail("not authenticated within " + std::to_string(ms) + " ms");
    });
  }
  // The peer has shown who it is: full-size frames and reads, no deadline, no longer counted.
  void trust() {
    trusted_ = true;
    decoder_.set_max_body(wire::kMaxBody);
    stranger_.release();
    trust_deadline_.cancel();
  }

  // Heartbeats (see Liveness, from the dead-peer setting unless given): from now on this end
  // sends one whenever it had nothing else to send for `l.beat`; with `watch_peer`, a peer
  // heard nothing from (no byte at all) for `l.silence` is taken for hung and the link
  // closes, saying so (silent() is then true). Called again, it only changes `watch_peer`
  // (a peer earns watching once it is known).
  void keep_alive(bool watch_peer, const Liveness& l = Liveness::from_dead_peer_setting()) {
    watch_peer_ = watch_peer;
    last_heard_ = std::chrono::steady_clock::now();
    if (liveness_) return;
    liveness_ = l;
    last_beat_ = last_heard_;
    beat(this->weak_from_this());
  }
  // Says (a warning) when the peer is heard again after missing two beats or more: for links
  // across a wide-area network, whose pauses nothing else would show.
  void report_pauses() { report_pauses_ = true; }
  // The link closed because the peer fell silent (keep_alive).
  bool silent() const { return silent_; }

  bool closed() const { return closed_; }
  const std::string& peer() const { return peer_; }
  void set_peer(std::string p) { peer_ = std::move(p); }
  std::size_t queued_bytes() const { return queued_bytes_; }
  Stream& stream() { return stream_; }

 private:
  asio::awaitable<void> read_loop(std::shared_ptr<Link> /*keeps the link alive*/) {
    wire::Frame frame;
    while (!closed_) {
      boost::system::error_code ec;
      const std::size_t want = trusted_ ? kTrustedReadSize : kUntrustedReadSize;
      const std::span<char> space = decoder_.prepare(want);  // read straight into the decoder
      const std::size_t n = co_await gridrt::read_some(stream_, asio::buffer(space.data(), space.size()), ec);
      if (ec) {
        close(ec == asio::error::eof ? "connection closed by peer" : ec.message());
        co_return;
      }
      if (has_output(stream_)) wake_.cancel();            // TLS answers something: the writer sends it
      const auto now = std::chrono::steady_clock::now();  // any byte: a long frame coming slowly is life too
      // A peer heard again after missing beats: the line paused (packets dropped a while,
      // which TCP's retransmissions then carried through); said, as nothing else would.
      if (report_pauses_ && liveness_ && now - last_heard_ > 2 * liveness_->beat)
        log::warn(peer_, ": heard again after ", std::chrono::duration_cast<std::chrono::milliseconds>(now - last_heard_).count() / 1000.0,
                  " s of silence");
      last_heard_ = now;
      decoder_.commit(n);
      const held_writes::Scope together;  // (no co_await within: it ends before the next read)
      for (;;) {
        const auto st = decoder_.next(frame);
        if (st == wire::Decoder::Status::kNeedMore) break;
        if (st == wire::Decoder::Status::kBad) {
          // Strangers can send garbage as fast as they can connect: their drops are summarised.
          if (trusted_) log::warn("dropping ", peer_, ": ", decoder_.error());
          else dropped_strangers().warn("dropping ", peer_, ": ", decoder_.error());
          fail("protocol error: " + decoder_.error());
          co_return;
        }
        if (closed_ || closing_) co_return;
        if (frame.header.type == wire::Type::kHeartbeat) continue;  // its arrival was the message
        if (on_frame_) on_frame_(frame);
      }
    }
  }

  asio::awaitable<void> write_loop(std::shared_ptr<Link> /*keeps the link alive*/) {
    // `buffers` point into `batch`: reserved once so that it never moves its elements (a
    // moved short string would move its bytes too).
    std::vector<Outbound> batch;
    batch.reserve(kBatchBuffers);
    std::vector<asio::const_buffer> buffers;
    while (!closed_) {
      auto lock = writers_lock();
      if (queue_.empty() && has_output(stream_)) {  // (TLS: never shared)
        boost::system::error_code ec;
        writing_ = true;  // (may_write_at_once and write_held wait for this)
        co_await gridrt::write(stream_, {}, ec);
        if (ec) {
          close(ec.message());
          co_return;
        }
        continue;
      }
      if (queue_.empty()) {
        writing_ = false;  // other threads may write the socket themselves now (share_writing)
        if (lock) lock.unlock();
        if (closing_) break;
        boost::system::error_code ec;
        wake_.expires_at(std::chrono::steady_clock::time_point::max());
        co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      // What is queued goes in one gathering write, without copying it together: fewer
      // system calls and fuller TLS records.
      writing_ = true;
      batch.clear();
      buffers.clear();
      std::size_t bytes = 0;
      while (!queue_.empty() && bytes < kBatchBytes && buffers.size() + 2 <= kBatchBuffers) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
        const Outbound& o = batch.back();
        if (!o.head.empty()) buffers.push_back(asio::buffer(o.head));
        const std::string& body = o.shared ? *o.shared : o.body;
        if (!body.empty()) buffers.push_back(asio::buffer(body));
        bytes += o.head.size() + body.size();
      }
      if (lock) lock.unlock();
      boost::system::error_code ec;
      co_await gridrt::write(stream_, buffers, ec);
      {
        const auto relock = writers_lock();
        queued_bytes_ -= bytes;
      }
      if (recycle_)
        for (auto& o : batch) recycle_(std::move(o.head));
      if (ec) {
        close(ec.message());
        co_return;
      }
    }
    if (!closed_) close(close_reason_);
  }

  struct Outbound {
    std::string head;  // an encoded header, or a whole encoded frame
    std::string body;
    std::shared_ptr<const std::string> shared;  // the body instead, when shared
  };
  static constexpr std::size_t kBatchBytes = 1u << 20;
  static constexpr std::chrono::microseconds kBurstGap{100};  // write_from_any_thread
  static constexpr std::size_t kLargeFrame = 16 * 1024;       // written at once even in a burst
  static constexpr std::size_t kBatchBuffers = 64;
  static constexpr std::size_t kTrustedReadSize = 256 * 1024;  // bulk traffic: few, large reads
  static constexpr std::size_t kUntrustedReadSize = 4 * 1024;  // a hello fits; a stranger costs little
  static log::Repeated& dropped_strangers() {
    static log::Repeated warning("unauthenticated peers dropped");
    return warning;
  }

  // One tick of keep_alive: beat if this end has been quiet, and check that the peer was not.
  void beat(std::weak_ptr<Link> weak) {
    heartbeat_.expires_after(liveness_->beat);
    heartbeat_.async_wait([weak](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self || self->closed_) return;
      const auto now = std::chrono::steady_clock::now();
      // A tick this late means that this end was not running (stopped, its loop stalled):
      // the peer's silence may be ours, so it gets a fresh allowance.
      if (now - self->last_beat_ > 2 * self->liveness_->beat) self->last_heard_ = now;
      self->last_beat_ = now;
      const auto quiet = now - self->last_heard_;
      if (self->watch_peer_ && quiet > self->liveness_->silence) {
        const auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count() / 1000.0; };
        std::ostringstream why;
        why << std::fixed << std::setprecision(1) << "silent for " << ms(quiet) << " s, so hung or stopped (a heartbeat is due every "
            << ms(self->liveness_->beat) << " s; GRIDRT_DEAD_PEER_SECONDS=" << dead_peer_seconds() << ")";
        self->silent_ = true;
        log::warn(self->peer_, ": ", why.str());
        self->close(why.str());
        return;
      }
      bool quiet_end = false;
      {
        const auto lock = self->writers_lock();
        quiet_end = !self->sent_since_beat_ && self->queue_.empty();
        self->sent_since_beat_ = false;
      }
      if (quiet_end) self->send(wire::make_frame(wire::Type::kHeartbeat));
      self->beat(weak);
    });
  }

  void enqueue(Outbound o) {
    {
      const auto lock = writers_lock();
      if (closed_) return;
      if (!shared_ && held_writes::depth > 0) {  // (a daemon's link: its thread is the reader's)
        push(std::move(o));
        if (!holding_) {
          holding_ = true;
          held_writes::holders.push_back(this->shared_from_this());
        }
        return;
      }
      const bool at_once = !shared_ && may_write_at_once(all_bytes(o));
      push(std::move(o));
      if (at_once) write_queue_now();
      if (queue_.empty() && !has_output(stream_)) return;
    }
    wake_.cancel();
  }
  // The reader is done (held_writes): what this link holds goes in one write, unless one is under
  // way; what the socket does not take, the write loop sends.
  void write_held() override {
    holding_ = false;
    if (closed_) return;
    if (!writing_ && !closing_ && !has_output(stream_)) write_queue_now();
    if (!queue_.empty() || has_output(stream_) || closing_) wake_.cancel();
  }
  static std::size_t all_bytes(const Outbound& o) { return o.head.size() + (o.shared ? o.shared->size() : o.body.size()); }

  // A link of one thread writes a lone or large frame from the caller (a relay forwarding what
  // it just read) when nothing is queued or being written and it was quiet for kBurstGap (or
  // the frame is kLargeFrame or more), as write_from_any_thread does: no wake-up of the write loop, whose resumption, and the
  // handlers around it, cost more than the write itself (the relay polled its reactor three
  // times per forwarded frame, against one and a half for a bare forwarder). A burst's frames
  // still go to the write loop, together.
  bool may_write_at_once(std::size_t bytes) {
    const auto now = std::chrono::steady_clock::now();
    const bool lone = now - last_write_ >= kBurstGap || bytes >= kLargeFrame;
    last_write_ = now;
    return lone && !writing_ && !closing_ && queue_.empty() && !has_output(stream_);
  }
  // What is queued, written by the calling thread in one gathering write (no write under way):
  // what the socket takes now leaves the queue; the rest stays for the write loop (a TLS
  // stream takes it all and keeps what the socket did not, has_output()).
  void write_queue_now() {
    std::vector<asio::const_buffer> buffers;
    std::size_t bytes = 0;
    for (const Outbound& o : queue_) {
      if (buffers.size() + 2 > kBatchBuffers) break;
      if (!o.head.empty()) buffers.push_back(asio::buffer(o.head));
      const std::string& body = o.shared ? *o.shared : o.body;
      if (!body.empty()) buffers.push_back(asio::buffer(body));
      bytes += all_bytes(o);
    }
    std::size_t sent = 0;
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      boost::system::error_code ec;
      if (!stream_.write_now(buffers, ec)) return;
      sent = bytes;
      if (ec)  // (closed from the executor: the caller may be iterating over its links)
        asio::post(stream_.get_executor(), [self = this->shared_from_this(), why = ec.message()] { self->close(why); });
    } else {
      std::vector<iovec> parts;
      parts.reserve(buffers.size());
      for (const auto& b : buffers) parts.push_back({const_cast<void*>(b.data()), b.size()});
      msghdr m{};
      m.msg_iov = parts.data();
      m.msg_iovlen = parts.size();
      ssize_t n;
      do n = ::sendmsg(stream_.native_handle(), &m, MSG_DONTWAIT | MSG_NOSIGNAL);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return;  // full, or failed: the write loop tries (and meets the error)
      sent = static_cast<std::size_t>(n);
    }
    sent_since_beat_ = true;
    queued_bytes_ -= sent;
    for (; sent > 0 && !queue_.empty(); queue_.pop_front()) {
      Outbound& o = queue_.front();
      const std::size_t size = all_bytes(o);
      if (sent < size) {  // (a plain socket's) the rest of this frame stays queued
        if (sent < o.head.size()) {
          o.head.erase(0, sent);
        } else {
          const std::string& body = o.shared ? *o.shared : o.body;
          o.body = body.substr(sent - o.head.size());
          o.shared.reset();
          o.head.clear();
        }
        return;
      }
      sent -= size;
      if (recycle_) recycle_(std::move(o.head));
    }
  }
  // Queues a frame for the write loop (the writers' lock held).
  void push(Outbound o) {
    sent_since_beat_ = true;
    queued_bytes_ += o.head.size() + (o.shared ? o.shared->size() : o.body.size());
    queue_.push_back(std::move(o));
  }
  // The lock of the writing state (queue, writing, closed) where other threads write too
  // (share_writing); none, and no cost, where only the link's thread does.
  std::unique_lock<std::mutex> writers_lock() { return shared_ ? std::unique_lock<std::mutex>(*shared_) : std::unique_lock<std::mutex>(); }

  Stream stream_;
  std::string peer_;
  asio::steady_timer wake_;
  asio::steady_timer trust_deadline_;
  asio::steady_timer heartbeat_;
  std::optional<Liveness> liveness_;  // set by keep_alive
  bool watch_peer_ = false;
  bool report_pauses_ = false;
  bool silent_ = false;
  bool sent_since_beat_ = false;
  std::chrono::steady_clock::time_point last_heard_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_beat_;  // when the previous tick ran
  Admission::Ticket stranger_;                       // while not trusted
  bool trusted_ = true;
  wire::Decoder decoder_;
  std::deque<Outbound> queue_;
  std::size_t queued_bytes_ = 0;
  std::function<void(std::string&&)> recycle_;        // recycle_written
  std::unique_ptr<std::mutex> shared_;                // share_writing
  bool writing_ = false;                              // the link's thread has a batch out, or is about to
  bool holding_ = false;                              // among held_writes::holders
  std::chrono::steady_clock::time_point last_write_;  // the last frame given to write (kBurstGap)
  bool closing_ = false;
  bool closed_ = false;
  std::string close_reason_;
  FrameHandler on_frame_;
  CloseHandler on_closed_;
};

using TlsLink = Link<TlsStream>;
using TcpLink = Link<tcp::socket>;

// Bounds a connect or a handshake: closes `socket` when `timeout` passes first, which makes
// the pending operation fail. Disarmed when it goes out of scope. (The state is shared with
// the timer's handler: an expiry already queued when the deadline goes away must not touch
// a socket that may be gone too.)
class Deadline {
 public:
  template <typename Duration>
  Deadline(tcp::socket& socket, Duration timeout) : state_(std::make_shared<State>()), timer_(socket.get_executor(), timeout) {
    state_->socket = &socket;
    timer_.async_wait([state = state_](const boost::system::error_code& ec) {
      if (ec || !state->socket) return;  // disarmed: the operation finished in time
      state->fired = true;
      boost::system::error_code ignored;
      state->socket->close(ignored);
    });
  }
  ~Deadline() {
    state_->socket = nullptr;
    timer_.cancel();
  }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;
  bool fired() const { return state_->fired; }

 private:
  struct State {
    tcp::socket* socket = nullptr;
    bool fired = false;
  };
  std::shared_ptr<State> state_;
  asio::steady_timer timer_;
};

// Tunes a connected socket of the grid (every daemon, relay-link, local and direct
// connection): no Nagle delay (small frames are latency), and a peer that vanishes without
// closing — a crashed host, a cut line whose packets are dropped — is noticed within
// GRIDRT_DEAD_PEER_SECONDS (default 30, at least 3): keepalive probes on an idle connection,
// and a limit on how long sent data may go unacknowledged (TCP_USER_TIMEOUT). The connection
// then fails as if the peer had closed it, and what depends on it is handled as for a close.
void tune_socket(tcp::socket& s);

// Connects `stream` to `ep` and shakes hands as the TLS client, all within `timeout`
// (a firewall that drops packets would otherwise hold a connect for minutes). Returns
// what went wrong, if anything.
inline asio::awaitable<boost::system::error_code> connect_tls(TlsStream& stream, tcp::endpoint ep,
                                                              std::chrono::steady_clock::duration timeout) {
  boost::system::error_code ec;
  Deadline deadline(stream.next_layer(), timeout);
  co_await stream.next_layer().async_connect(ep, asio::redirect_error(asio::use_awaitable, ec));
  if (!ec) tune_socket(stream.next_layer());
  if (!ec) ec = co_await stream.handshake(asio::ssl::stream_base::client);
  if (ec && deadline.fired()) ec = asio::error::timed_out;  // say what happened, not how we stopped it
  co_return ec;
}

// The server's side: shakes hands on an accepted connection within `timeout`, as one of
// `port`'s unauthenticated connections until it is done (closed should the caps need its
// place). Returns what went wrong, if anything.
inline asio::awaitable<boost::system::error_code> accept_tls(TlsStream& stream, Admission& port,
                                                             std::chrono::steady_clock::duration timeout) {
  boost::system::error_code ec;
  bool dropped = false;
  const Admission::Ticket stranger = port.admit(stream.next_layer().remote_endpoint(ec).address(), [&stream, &dropped] {
    dropped = true;
    boost::system::error_code ignored;
    stream.next_layer().close(ignored);
  });
  Deadline deadline(stream.next_layer(), timeout);
  ec = co_await stream.handshake(asio::ssl::stream_base::server);
  if (ec && deadline.fired()) ec = asio::error::timed_out;
  if (ec && dropped) ec = asio::error::connection_aborted;
  co_return ec;
}

// Parses "HOST:PORT"; throws std::invalid_argument naming the text on error.
tcp::endpoint parse_endpoint(const std::string& text);
// Installs SIGINT/SIGTERM handling on `io` that calls `stop` once.
void on_termination_signal(asio::io_context& io, std::function<void(int)> stop);

}  // namespace gridrt
