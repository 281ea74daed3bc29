#include "launcher/embedded.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/process.h"

namespace gridrt {
namespace fs = std::filesystem;

namespace {
// A gridrun killed outright (SIGKILL) cannot clean up after itself; the next one does:
// directories whose owner process is gone are removed.
void remove_stale_directories() {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/tmp", ec)) {
    if (e.path().filename().string().rfind("gridrun-", 0) != 0) continue;
    std::ifstream owner(e.path() / "owner");
    pid_t pid = 0;
    if (!(owner >> pid) || pid <= 0) continue;  // not ours to judge (or being created)
    if (::kill(pid, 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
  }
}
}  // namespace

EmbeddedGrid::EmbeddedGrid(Grid grid, const std::string& grid_xml, const std::string& bin_dir,
                           const std::vector<std::string>& relay_options)
    : grid_(std::move(grid)) {
  remove_stale_directories();
  char tmpl[] = "/tmp/gridrun-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("cannot create a private temporary directory in /tmp");
  dir_ = tmpl;  // mkdtemp makes it 0700: the keys inside are ours alone
  std::ofstream(dir_ + "/owner") << ::getpid() << "\n";
  try {
    const std::string grid_path = dir_ + "/grid.xml";
    std::ofstream(grid_path) << grid_xml;
    tls::Authority ca("gridrt embedded CA");
    const tls::Credentials broker = ca.issue("broker", dir_, "broker");
    user_ = ca.issue("user " + std::string(getenv("USER") ? getenv("USER") : "gridrun"), dir_, "user");
    const std::string port_file = dir_ + "/broker.port";
    broker_ = spawn({bin_dir + "/gridbroker", "--grid", grid_path, "--listen", "127.0.0.1:0", "--cert", broker.cert, "--key", broker.key,
                     "--ca", broker.ca, "--port-file", port_file, "--quiet"},
                    {})
                  .pid;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!fs::exists(port_file)) {
      int st = 0;
      if (::waitpid(broker_, &st, WNOHANG) == broker_) {
        broker_ = -1;
        throw std::runtime_error("the embedded broker exited with status " + std::to_string(exit_code_of(st)));
      }
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the embedded broker did not start within 10 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::ifstream(port_file) >> broker_port_;
    for (const auto& c : grid_.clusters) {
      const tls::Credentials relay = ca.issue("relay " + c.name, dir_, "relay-" + c.name);
      std::vector<std::string> argv = {bin_dir + "/gridrelay",
                                       "--grid",
                                       grid_path,
                                       "--cluster",
                                       c.name,
                                       "--broker",
                                       broker_endpoint(),
                                       "--cert",
                                       relay.cert,
                                       "--key",
                                       relay.key,
                                       "--ca",
                                       relay.ca,
                                       "--single-user",
                                       "--quiet"};
      argv.insert(argv.end(), relay_options.begin(), relay_options.end());
      relays_.push_back(spawn(argv, {}).pid);
    }
  } catch (...) {
    shutdown();
    throw;
  }
}

EmbeddedGrid::~EmbeddedGrid() { shutdown(); }

std::string EmbeddedGrid::dead_daemon() {
  auto exited = [](pid_t& pid) -> std::string {
    int st = 0;
    if (pid <= 0 || ::waitpid(pid, &st, WNOHANG) != pid) return "";
    pid = -1;
    return " exited with status " + std::to_string(exit_code_of(st));
  };
  if (auto how = exited(broker_); !how.empty()) return "the embedded broker" + how;
  for (std::size_t i = 0; i < relays_.size(); ++i)
    if (auto how = exited(relays_[i]); !how.empty()) return "the embedded relay of cluster " + grid_.clusters[i].name + how;
  return "";
}

void EmbeddedGrid::shutdown() {
  // Only live daemons: a pid of -1 (already reaped) would make kill() signal every process.
  std::vector<pid_t> all;
  for (pid_t p : relays_)
    if (p > 0) all.push_back(p);
  if (broker_ > 0) all.push_back(broker_);
  // Relays first stop their jobs' processes, then exit; the broker follows.
  for (pid_t p : all) ::kill(p, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (pid_t p : all) {
    int st;
    while (::waitpid(p, &st, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        signal_tree(p, SIGKILL);
        ::waitpid(p, &st, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  relays_.clear();
  broker_ = -1;
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    dir_.clear();
  }
}

}  // namespace gridrt
