// What the tests that run real jobs share: starting gridrun (or another program of the
// build) and collecting its status and output, grids of given sites and sizes, and the
// check that a run leaves no process and no private directory behind.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {

const std::string kBin = GRIDRT_BIN_DIR;
const std::string kSrc = GRIDRT_SOURCE_DIR;

struct Outcome {
  int status = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Private directories gridrun made under /tmp (there may be others' from other runs).
std::set<std::string> gridrun_dirs() {
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

// Starts build/bin/`program` with `args`, its output going to files named after `name`.
Running start_program(const std::string& program, const std::vector<std::string>& args, const std::string& name) {
  Running run{-1, ::testing::TempDir() + "/" + name + ".out", ::testing::TempDir() + "/" + name + ".err"};
  run.pid = ::fork();
  if (run.pid == 0) {
    std::freopen(run.out_path.c_str(), "w", stdout);
    std::freopen(run.err_path.c_str(), "w", stderr);
    std::vector<char*> argv;
    const std::string prog = kBin + "/" + program;
    argv.push_back(const_cast<char*>(prog.c_str()));
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(prog.c_str(), argv.data());
    ::_exit(127);
  }
  return run;
}

Running start_gridrun(const std::vector<std::string>& args, const std::string& name = "gridrun") {
  return start_program("gridrun", args, name);
}

// Runs gridrun with `args`; `interrupt_after_ms` > 0 sends SIGINT after that many ms.
Outcome gridrun(const std::vector<std::string>& args, int interrupt_after_ms = 0) {
  dirs_before = gridrun_dirs();
  Running run = start_gridrun(args);
  if (interrupt_after_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(interrupt_after_ms));
    ::kill(run.pid, SIGINT);
  }
  return run.finish();
}

// Processes that belong to a gridrt run: programs from the build's bin directory (except
// the test binaries) and anything whose command line names them (mpiexec, hydra proxies).
std::vector<std::string> gridrt_processes() {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos || std::stoi(pid) == ::getpid()) continue;
    std::error_code ec;
    const std::string exe = fs::read_symlink(e.path() / "exe", ec).string();
    std::string cmd = slurp(e.path() / "cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    const bool ours = (exe.rfind(kBin, 0) == 0 || cmd.find(kBin + "/gridproc") != std::string::npos ||
                       cmd.find("hydra_pmi_proxy") != std::string::npos) &&
                      exe.find("/test_") == std::string::npos && cmd.find("/test_") == std::string::npos;
    const std::string state = slurp(e.path() / "stat");
    const bool zombie = state.find(") Z ") != std::string::npos;
    if (ours && !zombie) found.push_back(pid + ": " + cmd);
  }
  return found;
}

void expect_nothing_left() {
  // Daemons get a moment to exit after gridrun returns (they are reaped by then; this is
  // only for processes that would have escaped).
  std::vector<std::string> left;
  for (int i = 0; i < 50; ++i) {
    left = gridrt_processes();
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(left.empty()) << "left behind:\n" << [&] {
    std::string s;
    for (auto& l : left) s += l + "\n";
    return s;
  }();
  for (const auto& d : gridrun_dirs()) EXPECT_TRUE(dirs_before.count(d)) << "left behind: " << d;
}

// A grid description of clusters c0, c1, ... at the given sites with the given slots, all
// on this machine, written to the test's directory; returns its path.
std::string grid_with_sites(const std::vector<std::pair<std::string, int>>& clusters) {
  std::string xml = "<grid>\n";
  for (std::size_t i = 0; i < clusters.size(); ++i)
    xml += "  <cluster name=\"c" + std::to_string(i) + "\" site=\"" + clusters[i].first + "\" slots=\"" +
           std::to_string(clusters[i].second) +
           "\"><relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/><network nodes=\"private\" inbound=\"no\"/>"
           "<launch>mpiexec -launcher fork -n {np}</launch></cluster>\n";
  xml += "</grid>\n";
  std::string name;
  for (const auto& [site, slots] : clusters) name += site + std::to_string(slots);
  const std::string path = ::testing::TempDir() + "/grid-" + name + ".xml";
  std::ofstream(path) << xml;
  return path;
}

}  // namespace
