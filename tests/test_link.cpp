// common/link.h's forwarding: frames a daemon's link is given while a reader hands on the
// frames of one read wait in it until that read's frames are all handed on, and then leave
// together, in order, nothing lost; a frame read alone leaves without waiting for more; a
// link that closes while it holds frames sends none of them.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/link.h"
#include "socket_pair.h"

using namespace gridrt;
using test_support::socket_pair;

namespace {

wire::Frame data(int i, std::size_t size) {
  wire::Frame f = wire::make_frame(wire::Type::kData, std::string(size, static_cast<char>('a' + i)));
  f.header.seq = static_cast<std::uint64_t>(i);
  return f;
}

// in_peer -> [in] -> forwards each frame to [out] -> out_peer, all on one io_context (a
// relay's one thread). `after_send` runs after each frame is handed to `out`.
struct Forwarder {
  asio::io_context io;
  tcp::socket in_peer{io}, out_peer{io};
  std::shared_ptr<TcpLink> in, out;
  std::vector<std::size_t> held_when_handed;  // what `out` had queued as each frame was handed on
  std::function<void()> after_send = [] {};

  Forwarder() {
    auto [a, b] = socket_pair(io);
    auto [c, d] = socket_pair(io);
    in_peer = std::move(a);
    out_peer = std::move(d);
    // A frame that never leaves fails the test instead of hanging it (read_frames).
    const timeval limit{2, 0};
    ::setsockopt(out_peer.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    in = std::make_shared<TcpLink>(std::move(b), "in");
    out = std::make_shared<TcpLink>(std::move(c), "out");
    out->start([](wire::Frame&) {}, [](const std::string&) {});
    in->start(
        [this](wire::Frame& f) {
          held_when_handed.push_back(out->queued_bytes());
          out->send(std::move(f));
          after_send();
        },
        [](const std::string&) {});
  }

  // Writes `bytes` to the forwarder, runs it for `run`, and returns the frames that came out
  // at the far end: `n` of them, or fewer where none came for two seconds, or the
  // connection ended.
  std::vector<wire::Frame> forward(const std::string& bytes, std::size_t n, std::chrono::milliseconds run) {
    asio::write(in_peer, asio::buffer(bytes));
    std::vector<wire::Frame> got;
    std::thread reader([&] { got = read_frames(n); });
    io.run_for(run);
    reader.join();
    return got;
  }

 private:
  std::vector<wire::Frame> read_frames(std::size_t n) {
    wire::Decoder d;
    std::vector<wire::Frame> out;
    char buf[65536];
    while (out.size() < n) {
      const ssize_t k = ::recv(out_peer.native_handle(), buf, sizeof buf, 0);
      if (k <= 0) break;  // ended, or the time limit passed
      d.feed(buf, static_cast<std::size_t>(k));
      wire::Frame f;
      while (d.next(f) == wire::Decoder::Status::kFrame) out.push_back(std::move(f));
    }
    return out;
  }
};

TEST(HeldWrites, TheFramesOfOneReadLeaveTogetherInOrderOnceAllAreHandedOn) {
  Forwarder fw;
  // Four frames in one write, all there before the link reads: one read brings them all
  // (bodies under 16 KiB, which the decoder would read into a string of their own).
  const std::vector<std::size_t> sizes = {100, 5000, 48, 12000};
  std::string burst;
  for (std::size_t i = 0; i < sizes.size(); ++i) burst += wire::encode(data(static_cast<int>(i), sizes[i]));
  const std::vector<wire::Frame> got = fw.forward(burst, sizes.size(), std::chrono::milliseconds(500));

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
    // Nothing more comes in while it runs: the frame must leave on its own read's end.
    const std::vector<wire::Frame> got = fw.forward(wire::encode(data(i, 1000)), 1, std::chrono::milliseconds(200));
    ASSERT_EQ(got.size(), 1u) << "frame " << i;
    EXPECT_EQ(got[0].header.seq, static_cast<std::uint64_t>(i));
    EXPECT_EQ(fw.held_when_handed.back(), 0u);
    EXPECT_EQ(fw.out->queued_bytes(), 0u);
  }
}

TEST(HeldWrites, ALinkClosedWhileHoldingSendsNoneOfIt) {
  Forwarder fw;
  fw.after_send = [&] {
    if (fw.held_when_handed.size() == 2) fw.out->close("closed by the test");  // holding both
  };
  const std::vector<wire::Frame> got = fw.forward(wire::encode(data(0, 10)) + wire::encode(data(1, 10)), 2, std::chrono::milliseconds(300));
  EXPECT_EQ(fw.held_when_handed.size(), 2u);
  EXPECT_TRUE(fw.out->closed());
  EXPECT_TRUE(got.empty()) << got.size() << " frames came out of a link closed while it held them";
}

}  // namespace
