// hello: one line per process with where it landed, a ping-pong between the first rank of
// each cluster (through the relays) and a grid barrier.
//
//   hello [--fail-rank R (--exit-code E | --signal S)] [--pingpong-bytes N] [--quit-on-cluster C]
//         [--rounds N --round-ms M]
//
// --fail-rank R --exit-code E: rank R exits with status E after the barrier; with --signal S
// it kills itself with signal S instead (tests use these to check that gridrun reports the
// failed rank and its status). --quit-on-cluster C: the processes of cluster C exit 0 at
// once, without joining the job (tests use it for a part that ends before init).
// --rounds N --round-ms M: repeat the ping-pong N times, M ms apart (a job that keeps
// traffic crossing sites for a while, for tests that disturb it).
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gridrt/gridrt.hpp"

int main(int argc, char** argv) {
  int fail_rank = -1, exit_code = 1, fail_signal = 0;
  std::size_t bytes = 8;
  int rounds = 1, round_ms = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fail-rank" && i + 1 < argc) fail_rank = std::atoi(argv[++i]);
    else if (a == "--exit-code" && i + 1 < argc) exit_code = std::atoi(argv[++i]);
    else if (a == "--quit-on-cluster" && i + 1 < argc) {
      const char* mine = std::getenv("GRIDRT_CLUSTER");
      if (mine && std::string(mine) == argv[++i]) return 0;
    } else if (a == "--signal" && i + 1 < argc) fail_signal = std::atoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--round-ms" && i + 1 < argc) round_ms = std::atoi(argv[++i]);
    else if (a == "--pingpong-bytes" && i + 1 < argc) bytes = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr,
                   "usage: hello [--fail-rank R (--exit-code E | --signal S)] [--pingpong-bytes N] [--quit-on-cluster C] "
                   "[--rounds N --round-ms M]\n");
      return 2;
    }
  }
  try {
    gridrt::init(&argc, &argv);
    using gridrt::Level;
    const int me = gridrt::rank();
    std::printf("rank=%d size=%d group=%s color=%d cluster=%s node=%s site=%s\n", me, gridrt::size(), gridrt::group_name().c_str(),
                gridrt::group_color(), gridrt::level_name(Level::kCluster, me).c_str(), gridrt::level_name(Level::kNode, me).c_str(),
                gridrt::level_name(Level::kSite, me).c_str());
    std::fflush(stdout);

    // Ping-pong: rank 0 with the first rank of every other cluster, payload checked both ways.
    const int first = gridrt::cluster_first_rank();
    std::vector<unsigned char> buf(bytes), back(bytes);
    for (int round = 0; round < rounds; ++round) {
      if (round > 0) std::this_thread::sleep_for(std::chrono::milliseconds(round_ms));
      if (me == 0) {
        for (int r = 1; r < gridrt::size(); ++r) {
          if (gridrt::level_color(Level::kCluster, r) == gridrt::level_color(Level::kCluster, r - 1)) continue;
          for (std::size_t i = 0; i < bytes; ++i) buf[i] = static_cast<unsigned char>(i * 7 + r + round);
          const auto t0 = std::chrono::steady_clock::now();
          gridrt::send(buf.data(), bytes, r, 1);
          const gridrt::Status st = gridrt::recv(back.data(), bytes, r, 2);
          const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
          for (std::size_t i = 0; i < bytes; ++i)
            if (back[i] != static_cast<unsigned char>(buf[i] ^ 0xff)) {
              std::fprintf(stderr, "ping-pong with rank %d: byte %zu is wrong\n", r, i);
              return 3;
            }
          if (round == 0 || round == rounds - 1)
            std::printf("pingpong rank 0 <-> rank %d (cluster %s): %zu bytes, round trip %.0f us%s\n", st.source,
                        gridrt::level_name(Level::kCluster, r).c_str(), st.bytes, us,
                        rounds > 1 ? (round ? " (last round)" : " (first round)") : "");
          std::fflush(stdout);  // seen as it happens, not when the buffer fills
        }
      } else if (me == first) {
        gridrt::recv(buf.data(), bytes, 0, 1);
        for (auto& b : buf) b ^= 0xff;
        gridrt::send(buf.data(), bytes, 0, 2);
      }
    }
    gridrt::barrier();
    if (me == 0) std::printf("barrier passed by %d processes\n", gridrt::size());
    std::fflush(stdout);
    if (me == fail_rank && fail_signal > 0) {
      std::fprintf(stderr, "rank %d raising signal %d as asked\n", me, fail_signal);
      std::fflush(stderr);
      std::signal(fail_signal, SIG_DFL);
      std::raise(fail_signal);
    }
    if (me == fail_rank) {
      std::fprintf(stderr, "rank %d exiting with status %d as asked\n", me, exit_code);
      std::_Exit(exit_code);
    }
    gridrt::finalize();
  } catch (const gridrt::Error& e) {
    std::fprintf(stderr, "hello: %s\n", e.what());
    return 1;
  }
  return 0;
}
