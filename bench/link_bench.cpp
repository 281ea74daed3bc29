// link_bench: how fast one framed Link moves data, over plain TCP and over TLS 1.3, on
// loopback, in one process with one thread per side. Isolates the relay's per-hop cost.
//
//   link_bench [MB] [FRAME_BYTES]
#include "common/program_help.h"
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "common/link.h"
#include "common/tls.h"

using namespace gridrt;

namespace {

template <typename Stream>
double run(Stream client, Stream server, std::size_t total, std::size_t frame_bytes, asio::io_context& cio, asio::io_context& sio) {
  auto rx = std::make_shared<Link<Stream>>(std::move(server), "rx");
  auto tx = std::make_shared<Link<Stream>>(std::move(client), "tx");
  std::size_t got = 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point t1;
  rx->start(
      [&](wire::Frame& f) {
        got += f.body.size();
        if (got >= total) {
          t1 = std::chrono::steady_clock::now();
          rx->close("done");
        }
      },
      [](const std::string&) {});
  tx->start([](wire::Frame&) {}, [](const std::string&) {});
  std::thread sender([&] {
    // Keep at most 8 MiB queued, as flow control would.
    std::size_t sent = 0;
    while (sent < total) {
      std::promise<std::size_t> q;
      asio::post(cio, [&] { q.set_value(tx->queued_bytes()); });
      if (q.get_future().get() > (8u << 20)) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
        continue;
      }
      for (int i = 0; i < 16 && sent < total; ++i) {
        wire::Frame f = wire::make_frame(wire::Type::kData, std::string(frame_bytes, 'x'), 1);
        asio::post(cio, [tx, f = std::move(f)]() mutable { tx->send(std::move(f)); });
        sent += frame_bytes;
      }
    }
  });
  std::thread server_thread([&] { sio.run(); });
  std::thread client_thread([&] { cio.run_for(std::chrono::seconds(60)); });
  server_thread.join();
  sender.join();
  asio::post(cio, [tx] { tx->close("done"); });
  client_thread.join();
  return total / std::chrono::duration<double>(t1 - t0).count() / 1e6;
}

// (A function, not a capturing lambda: a lambda's captures die before the coroutine runs.)
asio::awaitable<void> shake(TlsStream& s, TlsStream::HandshakeType type, boost::system::error_code& result) {
  result = co_await s.handshake(type);
}

}  // namespace

const char* kUsage = R"(usage: link_bench [MB] [FRAME_BYTES]
How fast one framed link moves MB megabytes (default 1024) in FRAME_BYTES frames (default
65536) over plain TCP and over TLS 1.3, on loopback, in one process with one thread per side:
the relay's cost per hop. Prints MB/s for each.
)";

int main(int argc, char** argv) {
  gridrt_help_if_asked(argc, argv, kUsage);
  const std::size_t total = (argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024) << 20;
  const std::size_t frame = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 65536;
  if (argc > 3 || total == 0 || frame == 0 || frame > (16u << 20)) {
    std::fprintf(stderr, "link_bench: MB and FRAME_BYTES must be positive numbers (frames up to 16 MiB)\n%s", kUsage);
    return 2;
  }
  {
    asio::io_context cio, sio;
    tcp::acceptor acc(sio, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    tcp::socket c(cio), s(sio);
    c.connect(acc.local_endpoint());
    acc.accept(s);
    std::printf("tcp link: %.0f MB/s (%zu-byte frames)\n", run(std::move(c), std::move(s), total, frame, cio, sio), frame);
  }
  {
    const std::string dir = "/tmp/link-bench-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    tls::Authority ca("bench");
    auto sctx = tls::make_context(tls::Role::kServer, ca.issue("relay a", dir, "a"));
    auto cctx = tls::make_context(tls::Role::kClient, ca.issue("relay b", dir, "b"));
    asio::io_context cio, sio;
    tcp::acceptor acc(sio, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    TlsStream c(cio, cctx), s(sio, sctx);
    c.next_layer().connect(acc.local_endpoint());
    acc.accept(s.next_layer());
    boost::system::error_code cec, sec;
    asio::co_spawn(cio, shake(c, asio::ssl::stream_base::client, cec), asio::detached);
    asio::co_spawn(sio, shake(s, asio::ssl::stream_base::server, sec), asio::detached);
    std::thread hs([&] { sio.run(); });
    cio.run();
    hs.join();
    cio.restart();
    sio.restart();
    if (cec || sec) {
      std::fprintf(stderr, "link_bench: TLS handshake failed: %s\n", (cec ? cec : sec).message().c_str());
      return 1;
    }
    std::printf("tls link: %.0f MB/s (%zu-byte frames)\n", run(std::move(c), std::move(s), total, frame, cio, sio), frame);
    std::filesystem::remove_all(dir);
  }
}
