// common/link.h's forwarding: frames a daemon's link is given while a reader hands on the
// frames of one read wait in it until that read's frames are all handed on, and then leave
// together, in order, nothing lost; a frame read alone leaves without waiting for more; a
// link that closes meanwhile drops what it held without writing it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/link.h"

using namespace gridrt;

namespace {

// A connected pair of sockets on `io`.
std::pair<tcp::socket, tcp::socket> socket_pair(asio::io_context& io) {
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket a(io), b(io);
  a.connect(acceptor.local_endpoint());
  acceptor.accept(b);
  return {std::move(a), std::move(b)};
}

wire::Frame data(int i, std::size_t size) {
  wire::Frame f = wire::make_frame(wire::Type::kData, std::string(size, static_cast<char>('a' + i)));
  f.header.seq = static_cast<std::uint64_t>(i);
  return f;
}

// Reads frames from a plain socket (the far end of the forwarding link) until `n` came.
std::vector<wire::Frame> read_frames(tcp::socket& s, std::size_t n) {
  wire::Decoder d;
  std::vector<wire::Frame> out;
  char buf[65536];
  while (out.size() < n) {
    boost::system::error_code ec;
    const std::size_t k = s.read_some(asio::buffer(buf), ec);
    if (ec) break;
    d.feed(buf, k);
    wire::Frame f;
    while (d.next(f) == wire::Decoder::Status::kFrame) out.push_back(std::move(f));
  }
  return out;
}

// in_peer -> [in] -> forwards to [out] -> out_peer, all on one io_context (a relay's thread).
struct Forwarder {
  asio::io_context io;
  tcp::socket in_peer{io}, out_peer{io};
  std::shared_ptr<TcpLink> in, out;
  std::vector<std::size_t> held_when_handed;  // what `out` had queued as each frame was handed on
  Forwarder() {
    auto [a, b] = socket_pair(io);
    auto [c, d] = socket_pair(io);
    in_peer = std::move(a);
    out_peer = std::move(d);
    in = std::make_shared<TcpLink>(std::move(b), "in");
    out = std::make_shared<TcpLink>(std::move(c), "out");
    out->start([](wire::Frame&) {}, [](const std::string&) {});
    in->start(
        [this](wire::Frame& f) {
          held_when_handed.push_back(out->queued_bytes());
          out->send(std::move(f));
        },
        [](const std::string&) {});
  }
};

TEST(HeldWrites, TheFramesOfOneReadLeaveTogetherInOrderOnceAllAreHandedOn) {
  Forwarder fw;
  // Four frames in one write, all there before the link reads: one read brings them all
  // (bodies under 16 KiB, which the decoder would read into a string of their own).
  const std::vector<std::size_t> sizes = {100, 5000, 48, 12000};
  std::string burst;
  for (std::size_t i = 0; i < sizes.size(); ++i) burst += wire::encode(data(static_cast<int>(i), sizes[i]));
  asio::write(fw.in_peer, asio::buffer(burst));
  std::vector<wire::Frame> got;
  std::thread reader([&] { got = read_frames(fw.out_peer, sizes.size()); });
  fw.io.run_for(std::chrono::milliseconds(500));
  reader.join();

  ASSERT_EQ(got.size(), sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(got[i].header.seq, i);
    EXPECT_EQ(got[i].body, std::string(sizes[i], static_cast<char>('a' + i)));
  }
  // Each frame found all those handed on before it still held, and none was left behind.
  ASSERT_EQ(fw.held_when_handed.size(), sizes.size());
  std::size_t before = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(fw.held_when_handed[i], before) << "frame " << i;
    before += wire::kHeaderSize + sizes[i];
  }
  EXPECT_EQ(fw.out->queued_bytes(), 0u);
}

TEST(HeldWrites, AFrameReadAloneLeavesWithoutWaitingForMore) {
  Forwarder fw;
  for (int i = 0; i < 3; ++i) {
    asio::write(fw.in_peer, asio::buffer(wire::encode(data(i, 1000))));
    std::vector<wire::Frame> got;
    std::thread reader([&] { got = read_frames(fw.out_peer, 1); });
    fw.io.run_for(std::chrono::milliseconds(200));  // nothing more comes in meanwhile
    reader.join();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].header.seq, static_cast<std::uint64_t>(i));
    EXPECT_EQ(fw.held_when_handed.back(), 0u);
    EXPECT_EQ(fw.out->queued_bytes(), 0u);
  }
}

TEST(HeldWrites, ALinkClosedWhileHoldingWritesNothingMore) {
  asio::io_context io;
  auto [a, b] = socket_pair(io);
  auto [c, d] = socket_pair(io);
  auto in = std::make_shared<TcpLink>(std::move(b), "in");
  auto out = std::make_shared<TcpLink>(std::move(c), "out");
  out->start([](wire::Frame&) {}, [](const std::string&) {});
  int handed = 0;
  in->start(
      [&](wire::Frame& f) {
        out->send(std::move(f));
        if (++handed == 2) out->close("closed by the test");  // the two it holds are dropped
      },
      [](const std::string&) {});
  std::string burst = wire::encode(data(0, 10)) + wire::encode(data(1, 10));
  asio::write(a, asio::buffer(burst));
  io.run_for(std::chrono::milliseconds(300));
  EXPECT_EQ(handed, 2);
  EXPECT_TRUE(out->closed());
  // The far end sees the connection end with nothing on it.
  char buf[64];
  boost::system::error_code ec;
  const std::size_t n = d.read_some(asio::buffer(buf), ec);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(ec, asio::error::eof);
}

}  // namespace
