// A TLS 1.3 connection over a TCP socket, with OpenSSL working on memory buffers and this
// class doing the socket I/O. Why not Asio's ssl::stream: it moves every TLS record (at
// most 16 KiB) through a 17 KiB buffer pair with a system call of its own, and a frame's
// 48-byte header became a record of its own; on relay links the kernel took 61% of a
// relay's CPU (docs/benchmarks.md). Here a whole batch of frames is cut into full records
// and written with one system call, and a read takes up to 256 KiB of records at once.
//
// One reader and one writer may use a stream at the same time (Link's two loops), both on
// the stream's executor; only write() and write_now() write to the socket, never both at once. Reading can make TLS produce
// output of its own (the answer to a key update): has_output() then says so, and the next
// write() sends it.
#pragma once

#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <openssl/ssl.h>
#include <vector>

namespace gridrt {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class TlsStream {
 public:
  using executor_type = tcp::socket::executor_type;
  using HandshakeType = asio::ssl::stream_base::handshake_type;

  TlsStream(asio::io_context& io, asio::ssl::context& ctx) : TlsStream(tcp::socket(io), ctx) {}
  TlsStream(tcp::socket socket, asio::ssl::context& ctx);
  // Benchmarks only (GRIDRT_LINK_ENCRYPTION=none, docs/benchmarks.md): the same calls with
  // no TLS at all, so that the cost of encryption can be measured on the real path.
  static TlsStream unencrypted(tcp::socket socket) { return TlsStream(std::move(socket)); }
  TlsStream(TlsStream&& o) noexcept;
  TlsStream& operator=(TlsStream&&) = delete;
  ~TlsStream();

  tcp::socket& next_layer() { return socket_; }
  SSL* native_handle() { return ssl_; }
  bool encrypted() const { return ssl_ != nullptr; }
  executor_type get_executor() { return socket_.get_executor(); }

  // Shakes hands as `type`; returns what went wrong (OpenSSL's reason in the ssl category,
  // asio::error::eof when the peer hangs up).
  asio::awaitable<boost::system::error_code> handshake(HandshakeType type);
  // Decrypts at least one byte into `space` (as much as is at hand, up to its size).
  // asio::error::eof when the peer closed the connection.
  asio::awaitable<std::size_t> read_some(asio::mutable_buffer space, boost::system::error_code& ec);
  // Encrypts all of `buffers` in full records and sends them, with any output reading made,
  // in one system call where the kernel takes it.
  asio::awaitable<void> write(const std::vector<asio::const_buffer>& buffers, boost::system::error_code& ec);
  // The same without waiting, for a caller that knows no write() is under way: encrypts all
  // of `buffers` and sends what the socket takes now; the rest waits for the next write()
  // (has_output()). False, having taken nothing, on an unencrypted stream; `ec` set where
  // TLS failed.
  bool write_now(const std::vector<asio::const_buffer>& buffers, boost::system::error_code& ec);
  // Reading made TLS output that waits for write().
  bool has_output() const;

 private:
  explicit TlsStream(tcp::socket socket);
  bool encrypt(const void* data, std::size_t size);
  bool encrypt_all(const std::vector<asio::const_buffer>& buffers, boost::system::error_code& ec);
  asio::awaitable<void> flush(boost::system::error_code& ec);
  asio::awaitable<bool> fill(boost::system::error_code& ec);  // more ciphertext from the socket

  tcp::socket socket_;
  SSL* ssl_ = nullptr;           // none when unencrypted
  BIO* spare_output_ = nullptr;  // an empty memory BIO to swap in while the last one is sent
  std::vector<char> staging_;    // small buffers gathered into one full record
  std::size_t socket_read_;      // how much ciphertext one read takes (small before the handshake)
};

inline tcp::socket& lowest_layer(tcp::socket& s) { return s; }
inline tcp::socket& lowest_layer(TlsStream& s) { return s.next_layer(); }

// The same calls over a plain socket, so that Link serves both.
asio::awaitable<std::size_t> read_some(tcp::socket& s, asio::mutable_buffer space, boost::system::error_code& ec);
asio::awaitable<void> write(tcp::socket& s, const std::vector<asio::const_buffer>& buffers, boost::system::error_code& ec);
inline asio::awaitable<std::size_t> read_some(TlsStream& s, asio::mutable_buffer space, boost::system::error_code& ec) {
  return s.read_some(space, ec);
}
inline asio::awaitable<void> write(TlsStream& s, const std::vector<asio::const_buffer>& buffers, boost::system::error_code& ec) {
  return s.write(buffers, ec);
}
inline bool has_output(const tcp::socket&) { return false; }
inline bool has_output(const TlsStream& s) { return s.has_output(); }

}  // namespace gridrt
