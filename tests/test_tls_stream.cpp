// common/tls_stream against Asio's own TLS stream (an independent implementation of the
// same protocol): every byte of gather writes of any shape arrives in order, both ways; a
// peer from another CA is refused with OpenSSL's reason; the unencrypted mode passes bytes.
#include <gtest/gtest.h>

#include <boost/asio/ssl.hpp>
#include <filesystem>
#include <random>
#include <thread>

#include "common/tls.h"
#include "common/tls_stream.h"
#include "socket_pair.h"

using namespace gridrt;

namespace {

using AsioTls = asio::ssl::stream<tcp::socket>;

class TlsStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tls-stream-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::pair<tcp::socket, tcp::socket> socket_pair() { return test_support::socket_pair(io_); }

  asio::io_context io_;
  std::filesystem::path dir_;
};

// Buffers of every size from empty to several records, many tiny (frame headers).
std::vector<std::string> mixed_buffers(unsigned seed, std::size_t count) {
  std::mt19937 rng(seed);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t size = rng() % 3 == 0 ? rng() % 70000 : rng() % 64;
    std::string s(size, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    out.push_back(std::move(s));
  }
  return out;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string all;
  for (const auto& p : parts) all += p;
  return all;
}

// Writes `parts` in gather writes of up to `per_write` buffers each.
asio::awaitable<void> write_parts(TlsStream& s, const std::vector<std::string>& parts, std::size_t per_write,
                                  boost::system::error_code& ec) {
  std::vector<asio::const_buffer> buffers;
  for (std::size_t i = 0; i < parts.size() && !ec; i += per_write) {
    buffers.clear();
    for (std::size_t j = i; j < std::min(parts.size(), i + per_write); ++j) buffers.push_back(asio::buffer(parts[j]));
    co_await s.write(buffers, ec);
  }
}

asio::awaitable<void> read_n(TlsStream& s, std::size_t n, std::string& out, boost::system::error_code& ec) {
  std::vector<char> buf(100000);
  while (out.size() < n && !ec) {
    const std::size_t got = co_await s.read_some(asio::buffer(buf), ec);
    out.append(buf.data(), got);
  }
}

asio::awaitable<void> asio_read_n(AsioTls& s, std::size_t n, std::string& out, boost::system::error_code& ec) {
  out.resize(n);
  co_await asio::async_read(s, asio::buffer(out), asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<void> asio_write(AsioTls& s, const std::string& data, boost::system::error_code& ec) {
  co_await asio::async_write(s, asio::buffer(data), asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<void> shake(TlsStream& s, TlsStream::HandshakeType type, boost::system::error_code& ec) { ec = co_await s.handshake(type); }

asio::awaitable<void> asio_shake(AsioTls& s, TlsStream::HandshakeType type, boost::system::error_code& ec) {
  co_await s.async_handshake(type, asio::redirect_error(asio::use_awaitable, ec));
}

}  // namespace

TEST_F(TlsStreamTest, GatherWritesOfAnyShapeArriveInOrderBothWaysWithAsiosTls) {
  tls::Authority ca("test");
  auto server_ctx = tls::make_context(tls::Role::kServer, ca.issue("relay a", dir_.string(), "a"));
  auto client_ctx = tls::make_context(tls::Role::kClient, ca.issue("relay b", dir_.string(), "b"));
  auto [a, b] = socket_pair();
  TlsStream ours(std::move(a), client_ctx);
  AsioTls theirs(std::move(b), server_ctx);
  boost::system::error_code e1, e2;
  asio::co_spawn(io_, shake(ours, asio::ssl::stream_base::client, e1), asio::detached);
  asio::co_spawn(io_, asio_shake(theirs, asio::ssl::stream_base::server, e2), asio::detached);
  io_.run();
  io_.restart();
  ASSERT_FALSE(e1) << e1.message();
  ASSERT_FALSE(e2) << e2.message();
  EXPECT_EQ(tls::peer_common_name(ours.native_handle()), "relay a");

  for (std::size_t per_write : {1u, 7u, 64u}) {
    SCOPED_TRACE("buffers per write: " + std::to_string(per_write));
    const auto parts = mixed_buffers(static_cast<unsigned>(per_write), 300);
    const std::string sent = joined(parts);
    std::string received;
    asio::co_spawn(io_, write_parts(ours, parts, per_write, e1), asio::detached);
    asio::co_spawn(io_, asio_read_n(theirs, sent.size(), received, e2), asio::detached);
    io_.run();
    io_.restart();
    ASSERT_FALSE(e1) << e1.message();
    ASSERT_FALSE(e2) << e2.message();
    EXPECT_TRUE(received == sent) << "ours -> Asio: " << received.size() << " of " << sent.size() << " bytes, differing";

    // And back: Asio writes, ours reads.
    std::string back;
    asio::co_spawn(io_, asio_write(theirs, sent, e2), asio::detached);
    asio::co_spawn(io_, read_n(ours, sent.size(), back, e1), asio::detached);
    io_.run();
    io_.restart();
    ASSERT_FALSE(e1) << e1.message();
    ASSERT_FALSE(e2) << e2.message();
    EXPECT_TRUE(back == sent) << "Asio -> ours: " << back.size() << " of " << sent.size() << " bytes, differing";
  }
}

TEST_F(TlsStreamTest, APeerFromAnotherCaIsRefusedWithOpenSslsReason) {
  tls::Authority ca("test"), other("someone else");
  std::filesystem::create_directories(dir_ / "x");
  auto server_ctx = tls::make_context(tls::Role::kServer, ca.issue("relay a", dir_.string(), "a"));
  auto client_ctx = tls::make_context(tls::Role::kClient, other.issue("relay b", (dir_ / "x").string(), "b"));
  auto [a, b] = socket_pair();
  TlsStream client(std::move(a), client_ctx), server(std::move(b), server_ctx);
  boost::system::error_code e1, e2;
  asio::co_spawn(io_, shake(client, asio::ssl::stream_base::client, e1), asio::detached);
  asio::co_spawn(io_, shake(server, asio::ssl::stream_base::server, e2), asio::detached);
  io_.run();
  ASSERT_TRUE(e1) << "the client accepted a server certificate from another CA";
  EXPECT_NE(e1.message().find("certificate verify failed"), std::string::npos) << e1.message();
  EXPECT_TRUE(e2) << "the server completed a handshake with a client that refused it";
}

TEST_F(TlsStreamTest, UnencryptedStreamsPassBytesAsTheyAre) {
  auto [a, b] = socket_pair();
  TlsStream writer = TlsStream::unencrypted(std::move(a));
  tcp::socket reader = std::move(b);
  EXPECT_FALSE(writer.encrypted());
  const auto parts = mixed_buffers(5, 50);
  boost::system::error_code ec;
  asio::co_spawn(io_, write_parts(writer, parts, 8, ec), asio::detached);
  std::thread writing([this] { io_.run(); });  // more than the socket holds: read meanwhile
  const std::string sent = joined(parts);
  std::string got(sent.size(), '\0');
  asio::read(reader, asio::buffer(got));
  writing.join();
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_TRUE(got == sent);
}
