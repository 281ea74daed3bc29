#include "common/tls_stream.h"

#include <openssl/err.h>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace gridrt {
namespace {

constexpr std::size_t kRecord = 16 * 1024;       // TLS's largest record payload
constexpr std::size_t kSocketRead = 256 * 1024;  // ciphertext taken from the socket at once
// Until the handshake is done the peer is unauthenticated: one record at a time, so that a
// connection that says nothing (or garbage) costs a few KiB, not kSocketRead.
constexpr std::size_t kHandshakeRead = kRecord + 512;

// Where TLS reads its ciphertext: the buffer the socket is read into, so that a record's bytes
// are copied once, into OpenSSL's record buffer. (A memory BIO took them in a copy of its
// own first: one more pass over every byte a relay receives.) Empty means "wait for more",
// not end of stream.
struct Ciphertext {
  std::vector<char> bytes;
  std::size_t begin = 0, end = 0;  // what TLS has not read yet
};
Ciphertext& input_of(BIO* b) { return *static_cast<Ciphertext*>(BIO_get_data(b)); }
BIO_METHOD* input_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "gridrt ciphertext in");
    if (!m) throw std::bad_alloc();
    BIO_meth_set_create(m, [](BIO* b) {
      BIO_set_data(b, new Ciphertext());
      BIO_set_init(b, 1);
      return 1;
    });
    BIO_meth_set_destroy(m, [](BIO* b) {
      delete static_cast<Ciphertext*>(BIO_get_data(b));
      BIO_set_data(b, nullptr);
      return 1;
    });
    BIO_meth_set_read_ex(m, [](BIO* b, char* out, std::size_t size, std::size_t* read) {
      BIO_clear_retry_flags(b);
      Ciphertext& in = input_of(b);
      const std::size_t n = std::min(size, in.end - in.begin);
      *read = n;
      if (n == 0) {
        BIO_set_retry_read(b);
        return 0;
      }
      std::memcpy(out, in.bytes.data() + in.begin, n);
      in.begin += n;
      return 1;
    });
    BIO_meth_set_ctrl(m, [](BIO* b, int cmd, long, void*) -> long {
      switch (cmd) {
        case BIO_CTRL_PENDING: return static_cast<long>(input_of(b).end - input_of(b).begin);
        case BIO_CTRL_FLUSH: return 1;
        default: return 0;
      }
    });
    return m;
  }();
  return method;
}
BIO* new_input_bio() {
  BIO* b = BIO_new(input_method());
  if (!b) throw std::bad_alloc();
  return b;
}

// Where TLS writes its ciphertext: a string that keeps its capacity when emptied. (A memory
// BIO zeroes its whole buffer each time it is reset: on a relay link that memset took 8.6% of
// a relay's CPU, measured with perf.)
std::string& output_of(BIO* b) { return *static_cast<std::string*>(BIO_get_data(b)); }
BIO_METHOD* output_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "gridrt ciphertext out");
    if (!m) throw std::bad_alloc();
    BIO_meth_set_create(m, [](BIO* b) {
      BIO_set_data(b, new std::string());
      BIO_set_init(b, 1);
      return 1;
    });
    BIO_meth_set_destroy(m, [](BIO* b) {
      delete static_cast<std::string*>(BIO_get_data(b));
      BIO_set_data(b, nullptr);
      return 1;
    });
    BIO_meth_set_write_ex(m, [](BIO* b, const char* data, std::size_t size, std::size_t* written) {
      output_of(b).append(data, size);
      *written = size;
      return 1;
    });
    BIO_meth_set_ctrl(m, [](BIO* b, int cmd, long, void*) -> long {
      switch (cmd) {
        case BIO_CTRL_PENDING:
        case BIO_CTRL_WPENDING: return static_cast<long>(output_of(b).size());
        case BIO_CTRL_FLUSH: return 1;
        case BIO_CTRL_RESET: output_of(b).clear(); return 1;
        default: return 0;
      }
    });
    return m;
  }();
  return method;
}
BIO* new_output_bio() {
  BIO* b = BIO_new(output_method());
  if (!b) throw std::bad_alloc();
  return b;
}

// OpenSSL's reason for the last failure, in Asio's ssl category (so that its message is
// OpenSSL's own text, as with Asio's streams).
boost::system::error_code last_tls_error() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return asio::error::connection_aborted;
  return {static_cast<int>(e), asio::error::get_ssl_category()};
}

}  // namespace

TlsStream::TlsStream(tcp::socket socket) : socket_(std::move(socket)), socket_read_(kSocketRead) {}

TlsStream::TlsStream(tcp::socket socket, asio::ssl::context& ctx) : socket_(std::move(socket)), socket_read_(kHandshakeRead) {
  ssl_ = SSL_new(ctx.native_handle());
  if (!ssl_) throw std::bad_alloc();
  SSL_set_bio(ssl_, new_input_bio(), new_output_bio());
  spare_output_ = new_output_bio();
}

TlsStream::TlsStream(TlsStream&& o) noexcept
    : socket_(std::move(o.socket_)),
      ssl_(std::exchange(o.ssl_, nullptr)),
      spare_output_(std::exchange(o.spare_output_, nullptr)),
      staging_(std::move(o.staging_)),
      socket_read_(o.socket_read_) {}

TlsStream::~TlsStream() {
  if (ssl_) SSL_free(ssl_);  // frees its BIOs too
  if (spare_output_) BIO_free(spare_output_);
}

bool TlsStream::has_output() const { return ssl_ && BIO_ctrl_pending(SSL_get_wbio(ssl_)) > 0; }

asio::awaitable<boost::system::error_code> TlsStream::handshake(HandshakeType type) {
  if (!ssl_) co_return boost::system::error_code{};
  if (type == asio::ssl::stream_base::client) SSL_set_connect_state(ssl_);
  else SSL_set_accept_state(ssl_);
  boost::system::error_code ec;
  for (;;) {
    ERR_clear_error();
    const int r = SSL_do_handshake(ssl_);
    const int why = r == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl_, r);
    // What OpenSSL has to say goes out first, an alert about a refused certificate included.
    const boost::system::error_code failure =
        why == SSL_ERROR_NONE || why == SSL_ERROR_WANT_READ ? boost::system::error_code{} : last_tls_error();
    co_await flush(ec);
    if (failure) co_return failure;
    if (ec) co_return ec;
    if (why == SSL_ERROR_NONE) {
      socket_read_ = kSocketRead;
      co_return ec;
    }
    if (!co_await fill(ec)) co_return ec;
  }
}

asio::awaitable<bool> TlsStream::fill(boost::system::error_code& ec) {
  // TLS asks for more only when what is left cannot make a record: at most a record's start
  // moves to the front.
  Ciphertext& in = input_of(SSL_get_rbio(ssl_));
  if (in.begin > 0) {
    std::memmove(in.bytes.data(), in.bytes.data() + in.begin, in.end - in.begin);
    in.end -= std::exchange(in.begin, 0);
  }
  if (in.bytes.size() < in.end + socket_read_) in.bytes.resize(in.end + socket_read_);
  const std::size_t n =
      co_await socket_.async_read_some(asio::buffer(in.bytes.data() + in.end, socket_read_), asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return false;
  in.end += n;
  co_return true;
}

asio::awaitable<std::size_t> TlsStream::read_some(asio::mutable_buffer space, boost::system::error_code& ec) {
  if (!ssl_) co_return co_await gridrt::read_some(socket_, space, ec);
  char* out = static_cast<char*>(space.data());
  std::size_t got = 0;
  for (;;) {
    while (got < space.size()) {
      ERR_clear_error();
      std::size_t n = 0;
      const int r = SSL_read_ex(ssl_, out + got, space.size() - got, &n);
      if (r == 1) {
        got += n;
        continue;
      }
      const int why = SSL_get_error(ssl_, r);
      if (why == SSL_ERROR_WANT_READ) break;
      if (got > 0) co_return got;  // the error comes back on the next call
      ec = why == SSL_ERROR_ZERO_RETURN ? boost::system::error_code(asio::error::eof) : last_tls_error();
      co_return 0;
    }
    if (got > 0) co_return got;
    if (!co_await fill(ec)) co_return 0;
  }
}

// Plaintext goes to TLS in full records where it can: small buffers (frame headers, short
// frames) are gathered first, large ones go straight through.
bool TlsStream::encrypt(const void* data, std::size_t size) {
  ERR_clear_error();
  std::size_t written = 0;
  return SSL_write_ex(ssl_, data, size, &written) == 1;
}

bool TlsStream::encrypt_all(const std::vector<asio::const_buffer>& buffers, boost::system::error_code& ec) {
  staging_.clear();
  for (const auto& b : buffers) {
    const char* p = static_cast<const char*>(b.data());
    std::size_t left = b.size();
    if (staging_.size() + left < kRecord) {
      staging_.insert(staging_.end(), p, p + left);
      continue;
    }
    // Complete the gathered record with this buffer's head, then whole records straight
    // from the buffer; its tail starts the next gathered record.
    const std::size_t head = staging_.empty() ? 0 : kRecord - staging_.size();
    if (head > 0) {
      staging_.insert(staging_.end(), p, p + head);
      p += head;
      left -= head;
      if (!encrypt(staging_.data(), staging_.size())) {
        ec = last_tls_error();
        return false;
      }
      staging_.clear();
    }
    const std::size_t whole = left / kRecord * kRecord;
    if (whole > 0 && !encrypt(p, whole)) {
      ec = last_tls_error();
      return false;
    }
    staging_.insert(staging_.end(), p + whole, p + left);
  }
  if (!staging_.empty() && !encrypt(staging_.data(), staging_.size())) {
    ec = last_tls_error();
    return false;
  }
  return true;
}

asio::awaitable<void> TlsStream::write(const std::vector<asio::const_buffer>& buffers, boost::system::error_code& ec) {
  if (!ssl_) co_return co_await gridrt::write(socket_, buffers, ec);
  if (encrypt_all(buffers, ec)) co_await flush(ec);
}

bool TlsStream::write_now(const std::vector<asio::const_buffer>& buffers, boost::system::error_code& ec) {
  if (!ssl_) return false;
  if (!encrypt_all(buffers, ec)) return true;
  std::string& data = output_of(SSL_get_wbio(ssl_));
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(socket_.native_handle(), data.data() + sent, data.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) sent += static_cast<std::size_t>(n);
    else if (n < 0 && errno == EINTR) continue;
    else break;  // full, or failed: write() sends the rest (and meets the error)
  }
  data.erase(0, sent);
  return true;
}

// Sends what TLS has written. The full output BIO is swapped for an empty one and sent
// from where it lies (no copy); reading may meanwhile write to the fresh one.
asio::awaitable<void> TlsStream::flush(boost::system::error_code& ec) {
  while (!ec && has_output()) {
    BIO* full = SSL_get_wbio(ssl_);
    BIO_up_ref(full);
    SSL_set0_wbio(ssl_, std::exchange(spare_output_, nullptr));  // drops the SSL's reference to `full`
    std::string& data = output_of(full);
    co_await asio::async_write(socket_, asio::buffer(data), asio::redirect_error(asio::use_awaitable, ec));
    data.clear();  // its capacity stays, unzeroed
    spare_output_ = full;
  }
}

asio::awaitable<std::size_t> read_some(tcp::socket& s, asio::mutable_buffer space, boost::system::error_code& ec) {
  return s.async_read_some(space, asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<void> write(tcp::socket& s, const std::vector<asio::const_buffer>& buffers, boost::system::error_code& ec) {
  co_await asio::async_write(s, buffers, asio::redirect_error(asio::use_awaitable, ec));
}

}  // namespace gridrt
