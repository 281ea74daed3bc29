// gridproc: the monitor the relay starts under mpiexec in front of every process of a job.
//
//   <launch command> gridproc -- PROGRAM ARGS...
//
// It runs PROGRAM as its child (same MPI environment: PMI variables and fds are inherited),
// sends each line the program writes to stdout/stderr to the relay as an Output frame, and
// reports the program's exit status (128+N for signal N) in a ProcExit frame. This is how
// gridrun prefixes every line with cluster and rank and knows which rank failed and how,
// whatever the launch command (mpiexec, srun) does with output and statuses.
//
// It loads the MPI layer (libgridmpi, found among gridrt's libraries: ../lib from this
// program) into PROGRAM, and into nothing else (not the process manager's helpers): an
// unmodified MPI program then runs as one MPI job across the clusters (docs/mpi.md). The
// layer stays in the environment of what PROGRAM starts until a process initialises MPI, so
// that a launch wrapper (env, time, a shell script) hands it on to the MPI program. And it
// watches the process manager's PMI socket (pmi_proxy.h): a process that initialises MPI
// past gridrt is stopped before MPICH hears of it, and its ProcExit says so.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/link.h"
#include "common/messages.h"
#include "common/pmi_watch.h"
#include "common/process.h"
#include "common/settings.h"
#include "relay/node_files.h"
#include "pmi_proxy.h"

namespace {

pid_t g_child = -1;
void forward_signal(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}
// SIGCHLD wakes the poll loop through this pipe.
int g_wake = -1;
void on_child(int) {
  const int saved = errno;
  const char byte = 0;
  ssize_t ignored = ::write(g_wake, &byte, 1);
  (void)ignored;
  errno = saved;
}

// The rank of this process in its cluster's MPI job, from the process manager's environment.
int local_rank() {
  for (const char* var : {"PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return -1;
}

int connect_relay(const std::string& endpoint) {
  const auto ep = gridrt::parse_endpoint(endpoint);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(ep.port());
  sa.sin_addr.s_addr = htonl(ep.address().to_v4().to_uint());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    std::fprintf(stderr, "gridproc: cannot connect to the relay at %s: %s\n", endpoint.c_str(), std::strerror(errno));
    std::exit(1);
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// The MPI layer in this installation's libraries (bin/../lib in a build tree, the configured
// library directory once installed), or "" if there is none.
std::string mpi_layer() {
  char self[4096] = {0};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  std::string dir(self, static_cast<std::size_t>(n));
  dir = dir.substr(0, dir.rfind('/'));
  for (const char* libdir : {"../lib", GRIDRT_LIBDIR_FROM_BIN}) {
    const std::string path = dir + "/" + libdir + "/" + GRIDRT_MPI_LAYER_FILE;
    if (::access(path.c_str(), R_OK) == 0) return path;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gridrt;
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::puts(version_line("gridproc").c_str());
    return 0;
  }
  if (argc < 3 || std::strcmp(argv[1], "--") != 0) {
    std::fprintf(stderr,
                 "usage: gridproc -- PROGRAM [ARGS...]\n"
                 "Started by gridrelay under the cluster's launch command; not for direct use.\n");
    return 2;
  }
  std::vector<std::string> cmd(argv + 2, argv + argc);
  std::optional<std::string> relay, job_text, secret, wanted_layer, node_dir;
  try {
    relay = gridrt::settings::value("GRIDRT_RELAY"), job_text = gridrt::settings::value("GRIDRT_JOB");
    secret = gridrt::settings::value("GRIDRT_SECRET"), wanted_layer = gridrt::settings::value("GRIDRT_MPI_LAYER");
    node_dir = gridrt::settings::value("GRIDRT_NODE_DIR");
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "gridproc: %s\n", e.what());
    return 2;
  }
  const int rank = local_rank();
  if (!relay || !job_text || !secret || rank < 0) {
    std::fprintf(stderr, "gridproc: GRIDRT_RELAY, GRIDRT_JOB, GRIDRT_SECRET and a rank (PMI_RANK) must be set\n");
    return 2;
  }
  // If the process manager's helper above us dies, stop too (and so does our child).
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  const std::uint64_t job = std::strtoull(job_text->c_str(), nullptr, 10);
  const int sock = connect_relay(*relay);
  ProcHello hello{*secret, static_cast<std::uint32_t>(rank), "", ""};
  gridrt::send_all(sock, wire::encode(wire::make_frame(wire::Type::kMonitorHello, hello.encode(), job)));

  SpawnOptions so;
  so.pipe_stdout = so.pipe_stderr = true;
  // GRIDRT_MPI_LAYER=off leaves the application with MPICH alone (each cluster its own
  // MPI_COMM_WORLD): for measuring what the layer costs, and for programs that must not
  // have it.
  const std::string layer = wanted_layer == "off" ? "" : mpi_layer();
  std::unique_ptr<PmiProxy> pmi;
  if (!layer.empty()) {
    const char* before = std::getenv("LD_PRELOAD");
    so.env.emplace_back("LD_PRELOAD", before && *before ? layer + ":" + before : layer);
    pmi = PmiProxy::from_environment();
    if (pmi) {
      so.env.emplace_back("PMI_FD", std::to_string(pmi->program_end()));
      so.env.emplace_back(pmi_watch::kVariable, std::to_string(pmi->program_end()));
    }
  }
  so.new_process_group = false;  // stay in the launch command's group: one signal stops all
  // Whatever the program starts stays below this monitor, however it tries to leave (a
  // session of its own, a double fork): it is ended with the program (kill_descendants).
  become_subreaper();
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::fprintf(stderr, "gridproc: cannot make a pipe: %s\n", std::strerror(errno));
    return 1;
  }
  g_wake = wake[1];
  struct sigaction sc {};
  sc.sa_handler = on_child;
  sc.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  ::sigaction(SIGCHLD, &sc, nullptr);
  Child child;
  std::unique_ptr<NodeFiles> node;  // a node that sees none of the job's files: its own copy
  try {
    if (node_dir) {
      node = std::make_unique<NodeFiles>(sock, job, *node_dir, static_cast<std::uint32_t>(rank));
      so.workdir = node->dir();
    }
    child = spawn(cmd, so);
  } catch (const std::exception& e) {
    wire::Frame out = wire::make_frame(wire::Type::kOutput, std::string("gridproc: ") + e.what(), job);
    out.header.flags = kStderr;
    wire::Frame ex = wire::make_frame(wire::Type::kProcExit, {}, job);
    ex.header.tag = 127;
    gridrt::send_all(sock, wire::encode(out) + wire::encode(ex));
    return 127;
  }
  g_child = child.pid;
  if (pmi) pmi->close_program_end();
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGHUP, &sa, nullptr);

  // Forward output line by line until the program has ended and both pipes are closed, with
  // a heartbeat whenever nothing else went to the relay for a beat (Liveness: the relay
  // takes a silent monitor for hung). What the relay sends (its heartbeats) is read and dropped.
  pollfd fds[6] = {
      {child.stdout_fd, POLLIN, 0}, {child.stderr_fd, POLLIN, 0}, {sock, POLLIN, 0}, {wake[0], POLLIN, 0}, {-1, 0, 0}, {-1, 0, 0}};
  std::string partial[2];
  const std::uint32_t stream[2] = {kStdout, kStderr};
  bool relay_ok = true;
  const auto beat = Liveness::from_dead_peer_setting().beat;
  auto last_sent = std::chrono::steady_clock::now();
  auto send_frame = [&](const wire::Frame& f) {
    if (relay_ok) relay_ok = gridrt::send_all(sock, wire::encode(f));
    last_sent = std::chrono::steady_clock::now();
  };
  auto send_line = [&](int i, std::string line) {
    wire::Frame f = wire::make_frame(wire::Type::kOutput, std::move(line), job);
    f.header.flags = stream[i];
    send_frame(f);
  };
  int open = 2;
  int code = -1;             // the program's exit status, once it ended
  bool past_gridrt = false;  // it initialised MPI without gridrt: stopped
  char buf[65536];
  while (open > 0 || code < 0) {
    if (pmi) pmi->fill(&fds[4]);
    const int r = ::poll(fds, 6, static_cast<int>(beat.count()));
    if (r < 0 && errno == EINTR) continue;
    if (std::chrono::steady_clock::now() - last_sent >= beat) send_frame(wire::make_frame(wire::Type::kHeartbeat, {}, job));
    if (fds[2].fd >= 0 && (fds[2].revents & (POLLIN | POLLHUP | POLLERR)) && ::read(sock, buf, sizeof buf) <= 0)
      fds[2].fd = -1;  // the relay hung up: nothing more to read from it
    if (pmi && pmi->move(&fds[4]) == PmiProxy::Seen::kPastGridrt && !past_gridrt) {
      past_gridrt = true;  // (the relay stops the job and says why)
      if (g_child > 0) ::kill(g_child, SIGKILL);
    }
    if (fds[3].revents & POLLIN) {
      while (::read(wake[0], buf, sizeof buf) > 0) {}
      // Reap the program, and the orphans handed to us that ended meanwhile.
      int st = 0;
      for (pid_t p; (p = ::waitpid(-1, &st, WNOHANG)) > 0;)
        if (p == child.pid) code = exit_code_of(st);
      if (code >= 0 && fds[3].fd >= 0) {
        fds[3].fd = -1;
        g_child = -1;
        // The program is over, and so is anything it left running: nothing of the job may
        // outlive it, nor hold its output pipes (and with them the job) open. What the
        // program wrote is still in the pipes, read to the end below.
        if (const int left = kill_descendants(std::chrono::seconds(2)); left > 0)
          send_line(1, "gridproc: the program left " + std::to_string(left) + " process(es) running; they were killed");
      }
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (!partial[i].empty()) send_line(i, std::move(partial[i]));
        partial[i].clear();
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
        continue;
      }
      partial[i].append(buf, static_cast<std::size_t>(n));
      std::size_t nl;
      while ((nl = partial[i].find('\n')) != std::string::npos) {
        send_line(i, partial[i].substr(0, nl));
        partial[i].erase(0, nl + 1);
      }
      if (partial[i].size() > 65536) {  // a very long line goes in pieces
        send_line(i, std::move(partial[i]));
        partial[i].clear();
      }
    }
  }
  // The outputs of this node's copy of the job's directory (its last process sends them)
  // before the status, which tells the relay that this rank has nothing more to say.
  if (node && !node->finish()) relay_ok = false;
  wire::Frame ex = wire::make_frame(wire::Type::kProcExit, {}, job);
  ex.header.tag = past_gridrt ? 2 : code;
  if (past_gridrt) ex.header.flags = wire::kMpiPastGridrt;
  relay_ok = relay_ok && gridrt::send_all(sock, wire::encode(ex));
  ::shutdown(sock, SHUT_WR);
  ::close(sock);
  // Exiting 0 tells the relay (through the launch command's status) that this rank's output
  // and status are on their way: only when they are.
  if (!relay_ok) {
    std::fprintf(stderr, "gridproc: the relay's connection was lost; the program's output and status (%d) could not all be handed over\n",
                 code);
    return 255;
  }
  return code;
}
