// hop_bench: the ceiling that any two-relay path reaches on this machine, whatever the relay.
//
// A relayed message makes three TCP hops (process -> relay -> relay -> process) where raw
// TCP makes one, and on one machine every hop's copies and wake-ups share the same cores.
// hop_bench measures, in one run and over loopback:
//   direct      sender -> receiver
//   chain       sender -> forwarder -> forwarder -> receiver, every hop plain TCP
//   tls chain   the same with TLS 1.3 (AES-128-GCM, common/tls_stream) between the forwarders
// Each forwarder is a process of its own with one thread that does nothing but move bytes
// (256 KiB reads, one write each), as an ideal relay would. So "chain / direct" bounds what
// gridrt's relay path can reach against raw TCP here (bench/relay.sh), with and without TLS.
//
//   hop_bench [BYTES] [SIZE] [ROUNDS] [PLACEMENT]
//     bandwidth: the sender writes BYTES in SIZE-byte messages, the receiver acknowledges the
//     end (default 1 GiB of 1 MiB); latency: 1 KiB round trips. Medians of ROUNDS (default 5).
//     PLACEMENT: shared (default: the scheduler places every process), apart (each chain's
//     two forwarders held on two different cores, as two clusters' front-ends are) or
//     together (both held on one core); the ends stay free. bench/relay.sh takes the same
//     words for the relays, so that both paths can be compared placed alike.
#include "common/program_help.h"
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>
#include <vector>

#include "bench/loopback.h"
#include "common/tls.h"
#include "common/tls_stream.h"

using namespace gridrt;
using bench::connect_loopback;
using bench::die;
using bench::listen_loopback;
using bench::median;
using bench::read_all;
using bench::write_all;

namespace {

using Clock = std::chrono::steady_clock;

// What the sender asks of the receiver on a fresh connection.
struct Command {
  std::uint64_t bytes;  // bandwidth: read this many bytes, then answer one byte
  std::uint64_t echo;   // latency: echo this many 1 KiB messages
};

// One connection of the receiver: one command.
void serve(int fd) {
  std::vector<char> buf(1 << 20);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  Command c{};
  if (read_all(fd, &c, sizeof c)) {
    for (std::uint64_t left = c.bytes; left > 0;) {
      const ssize_t k = ::read(fd, buf.data(), std::min<std::uint64_t>(left, buf.size()));
      if (k <= 0) break;
      left -= static_cast<std::uint64_t>(k);
    }
    if (c.bytes) write_all(fd, "k", 1);
    for (std::uint64_t i = 0; i < c.echo && read_all(fd, buf.data(), 1024); ++i) write_all(fd, buf.data(), 1024);
  }
  ::close(fd);
}

// The receiver: a thread per connection (the latency runs keep one open per path).
[[noreturn]] void receive(int listener) {
  for (;;) {
    const int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0) die("accept");
    std::thread(serve, fd).detach();
  }
}

// A forwarder moves bytes both ways between what it accepts and what it dials, on one
// thread. `tls_in` / `tls_out`: that side speaks TLS (server / client).
template <typename In, typename Out> asio::awaitable<void> pump(In& in, Out& out) {
  std::vector<char> buf(256 * 1024);
  std::vector<asio::const_buffer> piece(1);
  for (;;) {
    boost::system::error_code ec;
    const std::size_t n = co_await gridrt::read_some(in, asio::buffer(buf), ec);
    if (ec) break;
    piece[0] = asio::const_buffer(buf.data(), n);
    co_await gridrt::write(out, piece, ec);
    if (ec) break;
  }
  boost::system::error_code ignored;
  lowest_layer(in).close(ignored);
  lowest_layer(out).close(ignored);
}

struct ForwarderSpec {
  int listener;
  int next_port;
  asio::ssl::context* tls_in = nullptr;   // accept TLS with this context
  asio::ssl::context* tls_out = nullptr;  // dial TLS with this context
  int cpu = -1;                           // held on this core (PLACEMENT apart, together), or placed by the scheduler
};

// The first two cores this process may run on (PLACEMENT apart, together), or nothing with fewer.
std::vector<int> two_cores() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  std::vector<int> cores;
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cores;
  for (int c = 0; c < CPU_SETSIZE && cores.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cores.push_back(c);
  if (cores.size() < 2) cores.clear();
  return cores;
}

template <typename In, typename Out> void forward_pair(asio::io_context& io, In& in, Out& out) {
  asio::co_spawn(io, pump(in, out), asio::detached);
  asio::co_spawn(io, pump(out, in), asio::detached);
  io.run();
  io.restart();
}

asio::awaitable<void> shake(TlsStream& s, TlsStream::HandshakeType type) {
  if (const auto ec = co_await s.handshake(type)) {
    std::fprintf(stderr, "hop_bench: TLS handshake: %s\n", ec.message().c_str());
    std::exit(1);
  }
}

[[noreturn]] void forward(const ForwarderSpec& spec) {
  if (spec.cpu >= 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(spec.cpu, &one);
    if (::sched_setaffinity(0, sizeof one, &one) != 0) die("sched_setaffinity");
  }
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, asio::ip::tcp::v4(), spec.listener);
  for (;;) {
    tcp::socket a = acceptor.accept();
    tcp::socket b(io);
    b.connect(tcp::endpoint(asio::ip::address_v4::loopback(), static_cast<unsigned short>(spec.next_port)));
    a.set_option(tcp::no_delay(true));
    b.set_option(tcp::no_delay(true));
    if (spec.tls_in) {
      TlsStream in(std::move(a), *spec.tls_in);
      asio::co_spawn(io, shake(in, asio::ssl::stream_base::server), asio::detached);
      io.run();
      io.restart();
      forward_pair(io, in, b);
    } else if (spec.tls_out) {
      TlsStream out(std::move(b), *spec.tls_out);
      asio::co_spawn(io, shake(out, asio::ssl::stream_base::client), asio::detached);
      io.run();
      io.restart();
      forward_pair(io, a, out);
    } else {
      forward_pair(io, a, b);
    }
  }
}

// MB/s of one bandwidth run to `port`.
double bandwidth(int port, std::uint64_t bytes, std::size_t size) {
  std::vector<char> msg(size, 'x');
  const int fd = connect_loopback(port);
  const Command c{bytes, 0};
  const auto t0 = Clock::now();
  write_all(fd, &c, sizeof c);
  for (std::uint64_t sent = 0; sent < bytes; sent += size) write_all(fd, msg.data(), std::min<std::uint64_t>(size, bytes - sent));
  char ack;
  if (!read_all(fd, &ack, 1)) die("no acknowledgement");
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  ::close(fd);
  return bytes / s / 1e6;
}

// Median µs of 1 KiB round trips to each of `ports`, taken in turn (one of each, then the
// next), so that every path sees the same moments of this machine's load.
std::vector<double> round_trips(const std::vector<int>& ports, int iters) {
  std::vector<char> msg(1024, 'x');
  std::vector<int> fds;
  const Command c{0, static_cast<std::uint64_t>(iters)};
  for (int port : ports) {
    fds.push_back(connect_loopback(port));
    write_all(fds.back(), &c, sizeof c);
  }
  std::vector<std::vector<double>> us(ports.size());
  for (int i = 0; i < iters; ++i)
    for (std::size_t p = 0; p < fds.size(); ++p) {
      const auto t0 = Clock::now();
      write_all(fds[p], msg.data(), msg.size());
      if (!read_all(fds[p], msg.data(), msg.size())) die("no echo");
      us[p].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
  std::vector<double> medians;
  for (std::size_t p = 0; p < fds.size(); ++p) {
    ::close(fds[p]);
    medians.push_back(median(us[p]));
  }
  return medians;
}

}  // namespace

const char* kUsage = R"(usage: hop_bench [BYTES] [SIZE] [ROUNDS] [PLACEMENT]
The ceiling of any two-relay path on this machine: raw TCP sender -> receiver against a chain
sender -> forwarder -> forwarder -> receiver, plain and with TLS 1.3 between the forwarders.
Bandwidth: BYTES (default 1 GiB) in SIZE-byte messages (default 1 MiB); latency: 1 KiB round
trips. Medians of ROUNDS (default 5). PLACEMENT: shared (default; the scheduler places every
process), apart (each chain's two forwarders held on two different cores, as two clusters'
front-ends are) or together (both held on one core); apart and together need two cores.
)";

int main(int argc, char** argv) {
  gridrt_help_if_asked(argc, argv, kUsage);
  const std::uint64_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1ull << 30;
  const std::size_t size = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1 << 20;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  const std::string placement = argc > 4 ? argv[4] : "shared";
  if (argc > 5 || bytes == 0 || size == 0 || rounds <= 0) {
    std::fprintf(stderr, "hop_bench: BYTES, SIZE and ROUNDS must be positive numbers\n%s", kUsage);
    return 2;
  }
  // Each placement, and how the report names it.
  const std::map<std::string, const char*> placements = {
      {"shared", "placed by the scheduler"}, {"apart", "on two cores apart"}, {"together", "together on one core"}};
  if (!placements.count(placement)) {
    std::fprintf(stderr, "hop_bench: PLACEMENT must be shared, apart or together, not '%s'\n%s", placement.c_str(), kUsage);
    return 2;
  }
  std::vector<int> cores = {-1, -1};
  if (placement != "shared") {
    cores = two_cores();
    if (cores.empty()) {
      std::fprintf(stderr, "hop_bench: PLACEMENT %s needs two cores this process may run on\n", placement.c_str());
      return 2;
    }
    if (placement == "together") cores[1] = cores[0];
  }
  // Throw-away credentials for the TLS hop, made before any child exists.
  const std::string dir = "/tmp/hop-bench-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  tls::Authority ca("hop bench");
  const tls::Credentials server = ca.issue("relay b", dir, "b"), client = ca.issue("relay a", dir, "a");

  std::vector<pid_t> children;
  auto spawn = [&](auto body) {
    const pid_t pid = ::fork();
    if (pid < 0) die("fork");
    if (pid == 0) body();
    children.push_back(pid);
  };
  int receiver_port, f2_port, f1_port, t2_port, t1_port;
  const int receiver = listen_loopback(receiver_port);
  const int f2 = listen_loopback(f2_port), f1 = listen_loopback(f1_port);
  const int t2 = listen_loopback(t2_port), t1 = listen_loopback(t1_port);
  spawn([&] { receive(receiver); });
  spawn([&] { forward({f2, receiver_port, nullptr, nullptr, cores[1]}); });
  spawn([&] { forward({f1, f2_port, nullptr, nullptr, cores[0]}); });
  spawn([&] {
    auto ctx = tls::make_context(tls::Role::kServer, server);
    forward({t2, receiver_port, &ctx, nullptr, cores[1]});
  });
  spawn([&] {
    auto ctx = tls::make_context(tls::Role::kClient, client);
    forward({t1, t2_port, nullptr, &ctx, cores[0]});
  });

  struct Path {
    const char* name;
    int port;
    std::vector<double> mbs;
    double rtt;
  };
  std::vector<Path> paths = {{"direct", receiver_port, {}, 0}, {"chain", f1_port, {}, 0}, {"tls chain", t1_port, {}, 0}};
  for (int r = 0; r < rounds; ++r)
    for (auto& p : paths) p.mbs.push_back(bandwidth(p.port, bytes, size));
  std::vector<int> ports;
  for (const auto& p : paths) ports.push_back(p.port);
  const std::vector<double> rtts = round_trips(ports, 2000);
  for (std::size_t i = 0; i < paths.size(); ++i) paths[i].rtt = rtts[i];

  std::printf("# hop_bench: %llu bytes in %zu-byte messages, medians of %d rounds, forwarders %s\n", static_cast<unsigned long long>(bytes),
              size, rounds, placements.at(placement));
  const double direct_mbs = median(paths[0].mbs), direct_rtt = paths[0].rtt;
  for (const auto& p : paths)
    std::printf("%-10s bandwidth %8.1f MB/s (%5.1f%% of direct)   1 KiB round trip %7.1f us (%4.1fx direct)\n", p.name, median(p.mbs),
                100 * median(p.mbs) / direct_mbs, p.rtt, p.rtt / direct_rtt);

  for (pid_t pid : children) ::kill(pid, SIGKILL);
  for (pid_t pid : children) ::waitpid(pid, nullptr, 0);
  std::filesystem::remove_all(dir);
}
