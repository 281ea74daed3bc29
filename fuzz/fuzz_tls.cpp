// libFuzzer target: the TLS record layer as a daemon's listening port meets it (TlsStream
// over OpenSSL, with the grid's server context: TLS 1.3, client certificate required).
//
// Input: byte 0 bit 0 picks the phase.
//  - 0, before authentication: the rest is what a stranger sends on connecting (records,
//    a ClientHello, garbage, in any pieces): the handshake must fail cleanly.
//  - 1, after it: a real client completes the handshake first, then the rest arrives as
//    if from the client's socket (forged or broken records): reading must fail cleanly,
//    never yield bytes the client did not encrypt.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>

#include "common/tls.h"
#include "common/tls_stream.h"

namespace {

namespace asio = boost::asio;
using namespace gridrt;

struct Contexts {
  asio::ssl::context server, client;
};

Contexts& contexts() {
  static Contexts* c = [] {
    char dir[] = "/tmp/gridrt-fuzz-tls-XXXXXX";
    if (!::mkdtemp(dir)) std::abort();
    tls::Authority ca("fuzz");
    auto* made = new Contexts{tls::make_context(tls::Role::kServer, ca.issue(tls::kBrokerName, dir, "broker")),
                              tls::make_context(tls::Role::kClient, ca.issue("user fuzz", dir, "user"))};
    std::filesystem::remove_all(dir);  // the contexts hold what they read
    return made;
  }();
  return *c;
}

// A connected pair of stream sockets as Asio TCP sockets (only read and write are used).
std::pair<tcp::socket, tcp::socket> socket_pair(asio::io_context& io) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) std::abort();
  tcp::socket a(io), b(io);
  a.assign(tcp::v4(), fds[0]);
  b.assign(tcp::v4(), fds[1]);
  return {std::move(a), std::move(b)};
}

asio::awaitable<void> stranger(TlsStream& server, tcp::socket& peer, const std::uint8_t* data, std::size_t size) {
  boost::system::error_code ec;
  co_await asio::async_write(peer, asio::buffer(data, size), asio::redirect_error(asio::use_awaitable, ec));
  peer.shutdown(tcp::socket::shutdown_send, ec);
  ec = co_await server.handshake(asio::ssl::stream_base::server);
  if (!ec) std::abort();  // no certificate, no handshake
}

asio::awaitable<void> forged_records(TlsStream& server, TlsStream& client, const std::uint8_t* data, std::size_t size) {
  boost::system::error_code ec, cec;
  auto client_side = [&]() -> asio::awaitable<void> { cec = co_await client.handshake(asio::ssl::stream_base::client); };
  asio::co_spawn(server.get_executor(), client_side(), asio::detached);
  ec = co_await server.handshake(asio::ssl::stream_base::server);
  if (ec) std::abort();  // a real client with a real certificate
  co_await asio::async_write(client.next_layer(), asio::buffer(data, size), asio::redirect_error(asio::use_awaitable, ec));
  client.next_layer().shutdown(tcp::socket::shutdown_send, ec);
  char buf[4096];
  for (;;) {
    const std::size_t n = co_await server.read_some(asio::buffer(buf), ec);
    if (ec) break;
    if (n > 0) std::abort();  // the client encrypted nothing: forged records must not decrypt
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 64 * 1024) return 0;  // within what one socket buffer holds
  const bool after_handshake = data[0] & 1;
  asio::io_context io;
  auto [server_socket, peer_socket] = socket_pair(io);
  TlsStream server(std::move(server_socket), contexts().server);
  if (after_handshake) {
    TlsStream client(std::move(peer_socket), contexts().client);
    asio::co_spawn(io, forged_records(server, client, data + 1, size - 1), asio::detached);
    io.run();
  } else {
    asio::co_spawn(io, stranger(server, peer_socket, data + 1, size - 1), asio::detached);
    io.run();
  }
  return 0;
}
