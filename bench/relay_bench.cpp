// relay_bench: gridrt point-to-point across clusters (through the relays: process -> relay
// -> relay -> process, TLS between relays; or over a direct TLS connection, as the grid's
// declared network decides) against raw TCP between the same two processes over loopback,
// measured in the same run.
//
// Run it through gridrun with two groups of K processes (bench/relay.sh does): process i of
// the first group pairs with process i of the second; the K pairs run at once (K streams).
//
//   relay_bench [--sizes MIN:MAX] [--bytes-per-size N] [--latency-iters N] [--rounds R]
//   relay_bench --all-to-all SECONDS [--sizes S:S]
//
// --all-to-all: every process of the first group streams messages of size S to every
// process of the second for SECONDS (K x K concurrent streams), then rank 0 prints the
// aggregate rate and the relays' peak memory: flow control must keep it bounded.
//
// For each size (powers of two from MIN to MAX) and each path, a pair streams N bytes in
// messages of that size and the receiver acknowledges the end; the figure is the median of
// R rounds. Latency: 1 KiB ping-pong. Rank 0 prints one line per measurement and, last,
// the peak resident memory of the relays on this machine (VmHWM of every gridrelay).
#include "common/program_help.h"
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <string>
#include <vector>

#include "bench/loopback.h"
#include "gridrt/gridrt.hpp"

namespace {

using Clock = std::chrono::steady_clock;

// The raw TCP baseline: the second process of a pair listens, the first connects.
int raw_socket(bool listener, int peer) {
  int port = 0;
  if (listener) {
    const int l = bench::listen_loopback(port);
    gridrt::send(&port, sizeof port, peer, 90);
    const int s = ::accept(l, nullptr, nullptr);
    ::close(l);
    return s;
  }
  gridrt::recv(&port, sizeof port, peer, 90);
  return bench::connect_loopback(port);
}

// Peak resident memory of every gridrelay process on this machine, in KiB.
std::vector<long> relay_peak_kib() {
  std::vector<long> out;
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    std::ifstream comm(std::string("/proc/") + e->d_name + "/comm");
    std::string name;
    if (!(comm >> name) || name != "gridrelay") continue;
    std::ifstream status(std::string("/proc/") + e->d_name + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmHWM:", 0) == 0) out.push_back(std::atol(line.c_str() + 6));
  }
  if (d) ::closedir(d);
  return out;
}

}  // namespace

const char* kUsage = R"(usage: relay_bench [--sizes MIN:MAX] [--bytes-per-size N] [--latency-iters N] [--rounds R]
       relay_bench --all-to-all SECONDS [--sizes S:S]
gridrt point-to-point across clusters against raw TCP between the same processes, one run. A
job program: run it through gridrun with two groups of K processes (bench/relay.sh does);
process i of the first group pairs with process i of the second. Rank 0 prints one line per
measurement (bandwidth per size, 1 KiB latency; medians of R rounds) and the relays' peak
memory. --all-to-all: every process of the first group streams S-byte messages to every one
of the second for SECONDS, and the aggregate rate and the relays' memory are printed.
)";

int main(int argc, char** argv) {
  gridrt_help_if_asked(argc, argv, kUsage);
  std::size_t min_size = 1024, max_size = 4u << 20, bytes_per_size = 64u << 20;
  int latency_iters = 2000, rounds = 5;
  double all_to_all = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--sizes" && i + 1 < argc) {
      const std::string v = argv[++i];
      min_size = std::strtoull(v.c_str(), nullptr, 10);
      max_size = std::strtoull(v.substr(v.find(':') + 1).c_str(), nullptr, 10);
    } else if (a == "--bytes-per-size" && i + 1 < argc) bytes_per_size = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--latency-iters" && i + 1 < argc) latency_iters = std::atoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--all-to-all" && i + 1 < argc) all_to_all = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: relay_bench [--sizes MIN:MAX] [--bytes-per-size N] [--latency-iters N] [--rounds R]\n");
      return 2;
    }
  }
  // (A size of 0 doubled never passes MAX: the loop below would not end.)
  if (min_size == 0 || max_size < min_size || bytes_per_size == 0 || latency_iters <= 0 || rounds <= 0) {
    std::fprintf(stderr,
                 "relay_bench: --sizes takes MIN:MAX with 0 < MIN <= MAX, and --bytes-per-size, --latency-iters and --rounds "
                 "positive numbers\n");
    return 2;
  }
  gridrt::init(&argc, &argv);
  const int me = gridrt::rank(), n = gridrt::size(), pairs = n / 2;
  if (n % 2 || gridrt::level_color(gridrt::Level::kCluster, 0) == gridrt::level_color(gridrt::Level::kCluster, pairs)) {
    if (me == 0) std::fprintf(stderr, "relay_bench: needs two groups of equal size on two clusters\n");
    gridrt::finalize();
    return 2;
  }
  const bool sender = me < pairs;
  const int peer = sender ? me + pairs : me - pairs;
  if (all_to_all > 0) {
    // Sustained load on K x K streams: senders keep one message in flight to every
    // receiver until time is up; the last round carries a stop mark (tag 9).
    std::vector<char> msg(min_size, 'a');
    std::vector<std::vector<char>> in(pairs, std::vector<char>(min_size));
    std::size_t moved = 0;
    gridrt::barrier();
    const auto t0 = Clock::now();
    // Each sender stops on its own clock; a receiver goes on with those still sending.
    std::vector<bool> active(pairs, true);
    for (bool more = true; more;) {
      std::vector<gridrt::Request> reqs;
      std::vector<int> from;
      if (sender) {
        more = std::chrono::duration<double>(Clock::now() - t0).count() < all_to_all;
        for (int r = 0; r < pairs; ++r) reqs.push_back(gridrt::isend(msg.data(), min_size, pairs + r, more ? 8 : 9));
        moved += pairs * min_size;
      } else {
        for (int s = 0; s < pairs; ++s)
          if (active[s]) {
            reqs.push_back(gridrt::irecv(in[s].data(), min_size, s, gridrt::kAnyTag));
            from.push_back(s);
          }
      }
      gridrt::wait_all(reqs);
      if (!sender) {
        more = false;
        for (std::size_t i = 0; i < reqs.size(); ++i) {
          gridrt::Status st;
          gridrt::test(reqs[i], &st);
          if (st.tag == 9) active[from[i]] = false;
          more = more || active[from[i]];
        }
      }
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    double rate = sender ? moved / secs / 1e6 : 0;
    if (me == 0) {
      for (int p = 1; p < pairs; ++p) {
        double other = 0;
        gridrt::recv(&other, sizeof other, p, 4);
        rate += other;
      }
      std::printf("all-to-all: %d x %d streams of %zu-byte messages for %.1f s: %.1f MB/s aggregate\n", pairs, pairs, min_size, secs, rate);
      std::printf("relay peak resident memory (VmHWM):");
      for (long kib : relay_peak_kib()) std::printf(" %.1f MiB", kib / 1024.0);
      std::printf("\n");
    } else if (sender) {
      gridrt::send(&rate, sizeof rate, 0, 4);
    }
    gridrt::finalize();
    return 0;
  }
  const int tcp = raw_socket(!sender, peer);
  std::vector<char> buf(max_size, 'g');
  char ack = 0;

  // Latency: 1 KiB round trips, pair 0 only while the others wait.
  if (me == 0) std::printf("# %d stream(s); figures are medians of %d rounds\n", pairs, rounds);
  for (const bool relay : {true, false}) {
    std::vector<double> us, single;  // each round's mean; every round trip alone
    for (int r = 0; r < rounds; ++r) {
      gridrt::barrier();
      if (me != 0 && me != pairs) continue;
      const auto t0 = Clock::now();
      for (int i = 0; i < latency_iters; ++i) {
        const auto started = Clock::now();
        if (relay && sender) {
          gridrt::send(buf.data(), 1024, peer, 1);
          gridrt::recv(buf.data(), 1024, peer, 1);
        } else if (relay) {
          gridrt::recv(buf.data(), 1024, peer, 1);
          gridrt::send(buf.data(), 1024, peer, 1);
        } else if (sender) {
          bench::write_all(tcp, buf.data(), 1024);
          bench::read_exactly(tcp, buf.data(), 1024);
        } else {
          bench::read_exactly(tcp, buf.data(), 1024);
          bench::write_all(tcp, buf.data(), 1024);
        }
        single.push_back(std::chrono::duration<double, std::micro>(Clock::now() - started).count());
      }
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / latency_iters);
    }
    // The mean of a round (the rounds' median) counts the odd slow round trip; the median of
    // single round trips is the figure hop_bench gives for its paths.
    if (me == 0)
      std::printf("latency %-6s 1024 B round trip: %8.1f us  (median of single round trips %.1f us)\n", relay ? "gridrt" : "tcp",
                  bench::median(us), bench::median(single));
  }

  // Bandwidth: every pair streams at once.
  for (std::size_t size = min_size; size <= max_size; size *= 2) {
    const std::size_t count = std::max<std::size_t>(1, bytes_per_size / size);
    double mbps[2];
    for (const bool relay : {true, false}) {
      std::vector<double> rates;
      for (int r = 0; r < rounds; ++r) {
        gridrt::barrier();
        const auto t0 = Clock::now();
        for (std::size_t i = 0; i < count; ++i) {
          if (relay && sender) gridrt::send(buf.data(), size, peer, 2);
          else if (relay) gridrt::recv(buf.data(), size, peer, 2);
          else if (sender) bench::write_all(tcp, buf.data(), size);
          else bench::read_exactly(tcp, buf.data(), size);
        }
        if (relay && sender) gridrt::recv(&ack, 1, peer, 3);
        else if (relay) gridrt::send(&ack, 1, peer, 3);
        else if (sender) bench::read_exactly(tcp, &ack, 1);
        else bench::write_all(tcp, &ack, 1);
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        double rate = sender ? count * size / s / 1e6 : 0;  // MB/s of this pair
        // The aggregate over all pairs, gathered at rank 0.
        if (me == 0) {
          for (int p = 1; p < pairs; ++p) {
            double other = 0;
            gridrt::recv(&other, sizeof other, p, 4);
            rate += other;
          }
        } else if (sender) {
          gridrt::send(&rate, sizeof rate, 0, 4);
        }
        rates.push_back(rate);
      }
      mbps[relay ? 0 : 1] = bench::median(rates);
    }
    if (me == 0)
      std::printf("bandwidth %8zu B: gridrt %9.1f MB/s  tcp %9.1f MB/s  gridrt/tcp %5.1f%%\n", size, mbps[0], mbps[1],
                  100.0 * mbps[0] / mbps[1]);
    std::fflush(stdout);
  }
  gridrt::barrier();
  if (me == 0) {
    std::printf("relay peak resident memory (VmHWM):");
    for (long kib : relay_peak_kib()) std::printf(" %.1f MiB", kib / 1024.0);
    std::printf("\n");
  }
  ::close(tcp);
  gridrt::finalize();
  return 0;
}
