// What the tests that run real jobs share: starting gridrun (or another program of the
// build) and collecting its status and output, the processes of this machine, grids of
// given sites and sizes, and the check that a run leaves no process and no private
// directory behind. (Inline: each test program uses only some of it.)
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

const std::string kBin = GRIDRT_BIN_DIR;
#ifdef GRIDRT_TEST_BIN_DIR
const std::string kTestBin = GRIDRT_TEST_BIN_DIR;  // programs the tests run as jobs (coll_check, ...)
#endif
const std::string kSrc = GRIDRT_SOURCE_DIR;
#ifdef GRIDRT_MPI_TESTS_DIR
const std::string kMpiTests = GRIDRT_MPI_TESTS_DIR;  // the unmodified MPI programs of tests/mpi
#endif

// How many times `what` occurs in `text`.
inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

struct Outcome {
  int status = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Private directories gridrun made under /tmp (there may be others' from other runs).
inline std::set<std::string> gridrun_dirs() {
  std::set<std::string> dirs;
  for (const auto& e : fs::directory_iterator("/tmp"))
    if (e.path().filename().string().rfind("gridrun-", 0) == 0) dirs.insert(e.path());
  return dirs;
}
std::set<std::string> dirs_before;

// A gridrun started in the background; finish() waits for it and collects its output.
struct Running {
  pid_t pid;
  std::string out_path, err_path;
  Outcome finish() {
    int st = 0;
    ::waitpid(pid, &st, 0);
    Outcome r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    return r;
  }
};

// Starts build/bin/`program` (or `program` itself, given as a path) with `args`, its output
// going to files named after `name`.
inline Running start_program(const std::string& program, const std::vector<std::string>& args, const std::string& name) {
  Running run{-1, ::testing::TempDir() + "/" + name + ".out", ::testing::TempDir() + "/" + name + ".err"};
  run.pid = ::fork();
  if (run.pid == 0) {
    std::freopen(run.out_path.c_str(), "w", stdout);
    std::freopen(run.err_path.c_str(), "w", stderr);
    std::vector<char*> argv;
    const std::string prog = program.find('/') == std::string::npos ? kBin + "/" + program : program;
    argv.push_back(const_cast<char*>(prog.c_str()));
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(prog.c_str(), argv.data());
    ::_exit(127);
  }
  return run;
}

inline Running start_gridrun(const std::vector<std::string>& args, const std::string& name = "gridrun") {
  return start_program("gridrun", args, name);
}

// Runs gridrun with `args`; `interrupt_after_ms` > 0 sends `sig` after that many ms.
inline Outcome gridrun(const std::vector<std::string>& args, int interrupt_after_ms = 0, int sig = SIGINT) {
  dirs_before = gridrun_dirs();
  Running run = start_gridrun(args);
  if (interrupt_after_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(interrupt_after_ms));
    ::kill(run.pid, sig);
  }
  return run.finish();
}

// Every process this test program starts carries this mark in its environment, inherited
// through gridrun, the daemons, mpiexec, hydra's proxies and the ranks (hydra passes the
// environment on, srun too), so that the checks for processes left behind count this run's
// processes and never those of another job or test run on the same machine.
const std::string kRunMark = "GRIDRT_TEST_RUN=" + std::to_string(::getpid());
const bool kRunMarked = ::setenv("GRIDRT_TEST_RUN", std::to_string(::getpid()).c_str(), 1) == 0;

// A process of this machine as the tests see it: its program (the link in /proc/PID/exe),
// command line and environment with their NUL separators read as spaces; `ours` when it is
// this test program's: it carries the run's mark, or descends from a process that does (as
// what sshd or slurmd start for the test's own daemons does), or from this program.
struct SeenProcess {
  pid_t pid, parent;
  std::string exe, cmdline, environ;
  bool zombie, ours;
};
inline std::vector<SeenProcess> processes_now() {
  std::vector<SeenProcess> all;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    const std::string stat = slurp(e.path() / "stat");  // "pid (comm) state ppid ..."
    const auto after_name = stat.rfind(") ");
    SeenProcess p{std::stoi(pid),
                  after_name == std::string::npos ? 0 : std::atoi(stat.c_str() + after_name + 4),
                  fs::read_symlink(e.path() / "exe", ec).string(),
                  slurp(e.path() / "cmdline"),
                  slurp(e.path() / "environ"),
                  stat.find(") Z ") != std::string::npos,
                  false};
    std::replace(p.cmdline.begin(), p.cmdline.end(), '\0', ' ');
    std::replace(p.environ.begin(), p.environ.end(), '\0', ' ');
    p.ours = p.pid == ::getpid() || (" " + p.environ + " ").find(" " + kRunMark + " ") != std::string::npos;
    all.push_back(std::move(p));
  }
  // Descendants of ours are ours: parents are marked before their children, whatever the order.
  std::map<pid_t, std::size_t> at;
  for (std::size_t i = 0; i < all.size(); ++i) at[all[i].pid] = i;
  for (auto& p : all)
    for (pid_t up = p.parent; !p.ours && up > 1 && at.count(up); up = all[at[up]].parent) p.ours = all[at[up]].ours;
  return all;
}

// The first live process running build/bin/`program` whose command line or environment holds
// `words` as whole leading words ("--cluster c1 ", "GRIDRT_CLUSTER=c1 "), or -1.
inline pid_t find_process(const std::string& program, const std::string& words) {
  for (const auto& p : processes_now())
    if (!p.zombie && p.exe == kBin + "/" + program && (" " + p.cmdline + " " + p.environ).find(" " + words) != std::string::npos)
      return p.pid;
  return -1;
}

// Why network namespaces cannot be used here, or "" when they can: tests that build networks
// of them skip, saying why, without root, without iproute2, or where namespaces can be made
// but not entered (a chroot, a container without the privilege).
inline std::string netns_unusable() {
  if (::geteuid() != 0) return "network namespaces need root";
  const std::string ns = "gridrt-probe-" + std::to_string(::getpid());
  if (std::system(("ip netns add " + ns + " >/dev/null 2>&1").c_str()) != 0)
    return "`ip netns add` fails here (scripts/install-deps.sh installs iproute2)";
  const int entered = std::system(("ip -n " + ns + " link set lo up >/dev/null 2>&1").c_str());
  std::system(("ip netns del " + ns + " >/dev/null 2>&1").c_str());
  if (entered != 0) return "a network namespace can be made but not entered here (a chroot, or a container without the privilege)";
  return "";
}

// Live processes of this test run whose command line holds `words`.
inline std::vector<pid_t> processes_running(const std::string& words) {
  std::vector<pid_t> found;
  for (const auto& p : processes_now())
    if (p.ours && !p.zombie && p.cmdline.find(words) != std::string::npos) found.push_back(p.pid);
  return found;
}

// This run's processes that belong to a gridrt job: programs from the build's bin directory
// (except the test binaries) and anything whose command line names them (mpiexec, hydra
// proxies).
inline std::vector<std::string> gridrt_processes() {
  std::vector<std::string> found;
  for (const auto& p : processes_now()) {
    const bool ours = p.ours &&
                      (p.exe.rfind(kBin, 0) == 0 || p.cmdline.find(kBin + "/gridproc") != std::string::npos ||
                       p.cmdline.find("hydra_pmi_proxy") != std::string::npos) &&
                      p.exe.find("/test_") == std::string::npos && p.cmdline.find("/test_") == std::string::npos;
    if (ours && !p.zombie && p.pid != ::getpid()) found.push_back(std::to_string(p.pid) + ": " + p.cmdline);
  }
  return found;
}

inline void expect_nothing_left() {
  // Daemons get a moment to exit after gridrun returns (they are reaped by then; this is
  // only for processes that would have escaped).
  std::vector<std::string> left;
  for (int i = 0; i < 50; ++i) {
    left = gridrt_processes();
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(left.empty()) << "left behind:\n"
                            << [&] {
                                 std::string s;
                                 for (auto& l : left) s += l + "\n";
                                 return s;
                               }();
  for (const auto& d : gridrun_dirs()) EXPECT_TRUE(dirs_before.count(d)) << "left behind: " << d;
}

// A grid description of clusters c0, c1, ... at the given sites with the given slots, all
// on this machine, written to the test's directory; returns its path.
// `in_each`: more of every cluster's description (e.g. its <fileSystem>s), `tag` in its file's name.
inline std::string grid_with_sites(const std::vector<std::pair<std::string, int>>& clusters, const std::string& in_each = "",
                                   const std::string& tag = "") {
  std::string xml = "<grid>\n";
  for (std::size_t i = 0; i < clusters.size(); ++i)
    xml += "  <cluster name=\"c" + std::to_string(i) + "\" site=\"" + clusters[i].first + "\" slots=\"" +
           std::to_string(clusters[i].second) +
           "\"><relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/><network nodes=\"private\" inbound=\"no\"/>"
           "<launch>mpiexec -launcher fork -n {np}</launch>" +
           in_each + "</cluster>\n";
  xml += "</grid>\n";
  std::string name;
  for (const auto& [site, slots] : clusters) name += site + std::to_string(slots);
  const std::string path = ::testing::TempDir() + "/grid-" + name + tag + ".xml";
  std::ofstream(path) << xml;
  return path;
}

}  // namespace
