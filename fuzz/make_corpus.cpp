// make_corpus SOURCE_DIR: writes the fuzz targets' seed corpus to SOURCE_DIR/fuzz/corpus/,
// each seed made by the real encoders (or taken from the project's own example inputs), so
// that fuzzing starts from inputs that go deep: whole frames of every kind, every message
// body, JobProfiles and grid descriptions, a real TLS ClientHello. Run it again when the
// protocol changes; its output is committed.
#include <sys/socket.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/grid.h"
#include "common/messages.h"
#include "common/tls.h"
#include "common/tls_stream.h"

namespace fs = std::filesystem;
using namespace gridrt;

namespace {

fs::path corpus;
void seed(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(corpus / target);
  std::ofstream(corpus / target / name, std::ios::binary) << bytes;
}
std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

JobSpec sample_job() {
  JobSpec s;
  s.app_id = "app";
  s.task_id = "task";
  s.groups = {{"masters", 2}, {"workers", 3}};
  s.executable = "/bin/true";
  s.args = {"--x", "1"};
  s.env = {{"GRIDRT_WAIT", "yield"}};
  s.workdir = "/tmp";
  return s;
}

Topology sample_topology() {
  const Grid grid = parse_grid("corpus", default_grid_xml(2, 3));
  std::vector<ClusterOffer> offers;
  for (const auto& c : grid.clusters) offers.push_back(offer_of(c, "127.0.0.1", 7000, true));
  Topology t = map_job(sample_job(), offers);
  t.nodes = {"node-a", "node-b"};
  t.rank_node = {0, 0, 1, 1, 1};
  t.rank_endpoint = {"127.0.0.1:5000", "", "", "", ""};
  return t;
}

// What a TLS client sends first: its ClientHello, as it leaves a real TlsStream.
std::string client_hello() {
  char dir[] = "/tmp/gridrt-corpus-XXXXXX";
  if (!::mkdtemp(dir)) throw std::runtime_error("mkdtemp");
  tls::Authority ca("corpus");
  auto ctx = tls::make_context(tls::Role::kClient, ca.issue("user corpus", dir, "user"));
  fs::remove_all(dir);
  int fds[2];
  ::socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
  asio::io_context io;
  tcp::socket a(io);
  a.assign(tcp::v4(), fds[0]);
  TlsStream client(std::move(a), ctx);
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { co_await client.handshake(asio::ssl::stream_base::client); }, asio::detached);
  io.run_for(std::chrono::milliseconds(200));
  std::string hello(65536, '\0');
  const ssize_t n = ::recv(fds[1], hello.data(), hello.size(), MSG_DONTWAIT);
  hello.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  ::close(fds[1]);
  return hello;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_corpus SOURCE_DIR\n";
    return 2;
  }
  const fs::path src = argv[1];
  corpus = src / "fuzz" / "corpus";

  // Message bodies, byte 0 choosing the decoder as fuzz_messages does.
  const JobSpec job = sample_job();
  PartStart start{7, "0123456789abcdef0123456789abcdef", "user alice", 1, sample_topology(), job};
  wire::Writer topo;
  sample_topology().encode(topo);
  GridStatus status;
  status.clusters = {{"c0", "site0", 3, 2, true, "relay c0 [127.0.0.1:41000 (relay c0)]"}, {"c1", "site1", 3, 0, false, ""}};
  status.jobs = {{7, "user alice", "hello", 4, {"c0", "c1"}, 12}};
  const std::string bodies[10] = {job.encode(),
                                  RelayRegistration{"c0", "127.0.0.1", 7000, {7, 8}}.encode(),
                                  start.encode(),
                                  ProcHello{"0123456789abcdef0123456789abcdef", 1, "node-a", "127.0.0.1:5000"}.encode(),
                                  PartReady{{"node-a", "node-b"}, {"", "127.0.0.1:5000"}}.encode(),
                                  PartDone{{0, 0, 137}, "mpiexec exited"}.encode(),
                                  JobEnd{137, "rank 2 killed by signal 9"}.encode(),
                                  topo.take(),
                                  status.encode(),
                                  LinkHello{"c1", 0x1234567890abcdefULL, 0xfedcba0987654321ULL, 4096}.encode()};
  for (int i = 0; i < 10; ++i) seed("messages", "body-" + std::to_string(i), std::string(1, static_cast<char>(i)) + bodies[i]);
  JobSpec huge = job;
  huge.groups = {{"a", 0x7fffffff}, {"b", 1}};
  seed("messages", "body-0-too-many", std::string(1, '\0') + huge.encode());

  // Frame streams: flags byte, piece-size byte, then frames as a peer sends them.
  std::string stream;
  for (int i = 0; i < 8; ++i) {
    wire::Frame f = wire::make_frame(i == 3   ? wire::Type::kProcHello
                                     : i == 1 ? wire::Type::kRelayRegister
                                              : wire::Type::kSubmit,
                                     bodies[i], 7);
    stream += wire::encode(f);
  }
  wire::Frame data = wire::make_frame(wire::Type::kData, std::string(3000, 'x'), 7);
  data.header.src = 0;
  data.header.dst = 2;
  data.header.flags = wire::kMoreFragments;
  stream += wire::encode(data) + wire::encode(wire::make_frame(wire::Type::kHeartbeat));
  seed("frames", "trusted-whole", std::string("\x00\xff", 2) + stream);
  seed("frames", "stranger-small-pieces", std::string("\x01\x06", 2) + stream);

  // Users' and operators' files: the project's own examples.
  for (const auto& e : fs::directory_iterator(src / "jobprofiles")) seed("jobprofile", e.path().filename(), slurp(e.path()));
  for (const auto& e : fs::directory_iterator(src / "bench" / "grids")) seed("grid", e.path().filename(), slurp(e.path()));
  seed("grid", "default.xml", default_grid_xml(3, 4));

  // TLS: a stranger's real ClientHello; after the handshake, a record header and garbage.
  seed("tls", "client-hello", std::string(1, '\0') + client_hello());
  seed("tls", "forged-record", std::string("\x01\x17\x03\x03\x00\x20", 6) + std::string(32, '\xaa'));
  std::cout << "make_corpus: seeds written to " << corpus << "\n";
  return 0;
}
