#include "common/cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace gridrt {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRelayPrefix = "gridrelay-";

std::string why(int err) { return std::strerror(err); }

// The pids listed in `dir`/cgroup.procs and in every cgroup below it.
void collect_processes(const fs::path& dir, std::vector<pid_t>& out) {
  std::ifstream procs(dir / "cgroup.procs");
  for (long pid; procs >> pid;) out.push_back(static_cast<pid_t>(pid));
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec)) collect_processes(e.path(), out);
}

std::vector<pid_t> processes_in(const fs::path& dir) {
  std::vector<pid_t> out;
  collect_processes(dir, out);
  return out;
}

// Kills every process in `dir` and below: one write to cgroup.kill (Linux 5.14 and later)
// kills them all at once, including those forking meanwhile; without it, SIGKILL to each
// listed process until the list stays empty (a fork racing the listing is caught next round).
int kill_all_in(const fs::path& dir) {
  const int found = static_cast<int>(processes_in(dir).size());
  if (found == 0) return 0;
  const int fd = ::open((dir / "cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    const bool killed = ::write(fd, "1", 1) == 1;
    ::close(fd);
    if (killed) return found;
  }
  for (int round = 0; round < 100; ++round) {
    const std::vector<pid_t> left = processes_in(dir);
    if (left.empty()) break;
    for (pid_t p : left) ::kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return found;
}

// rmdir of `dir` and the cgroups below it, deepest first. True once it is gone.
bool remove_tree(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec)) remove_tree(e.path());
  return ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

// Kills what is in `dir`, then removes it once its processes are gone (within about a second).
bool end_and_remove(const fs::path& dir) {
  kill_all_in(dir);
  for (int i = 0; i < 100; ++i) {
    if (remove_tree(dir)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

std::string own_cgroup_dir() {
  // "0::/path" is this process's cgroup on the unified hierarchy.
  std::ifstream self("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(self, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty()) throw std::runtime_error("this process is in no cgroup v2 (/proc/self/cgroup has no '0::' line)");
  // mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER".
  std::ifstream mounts("/proc/self/mountinfo");
  while (std::getline(mounts, line)) {
    std::istringstream in(line);
    std::string id, parent, dev, root, point, word;
    in >> id >> parent >> dev >> root >> point;
    while (in >> word && word != "-") {}
    std::string type;
    in >> type;
    if (type != "cgroup2") continue;
    // A mount of part of the hierarchy (a container's) shows the cgroups below its root.
    if (root != "/" && path.rfind(root, 0) != 0) continue;
    const std::string below = root == "/" ? path : path.substr(root.size());
    return (fs::path(point) / fs::path(below).relative_path()).lexically_normal().string();
  }
  throw std::runtime_error("no cgroup v2 file system is mounted (no cgroup2 in /proc/self/mountinfo)");
}

JobCgroups::JobCgroups(std::string parent) {
  if (parent.empty()) parent = own_cgroup_dir();
  if (::access((fs::path(parent) / "cgroup.procs").c_str(), F_OK) != 0)
    throw std::runtime_error(parent + " is not a directory of the cgroup v2 hierarchy (it has no cgroup.procs)");
  sweep_dead(parent);
  dir_ = (fs::path(parent) / (kRelayPrefix + std::to_string(::getpid()))).string();
  // One left by a dead relay whose pid this process now has: not swept (the pid runs), ours to end.
  if (::access(dir_.c_str(), F_OK) == 0) end_and_remove(dir_);
  if (::mkdir(dir_.c_str(), 0755) != 0) {
    const int err = errno;
    throw std::runtime_error(
        "cannot make cgroup " + dir_ + ": " + why(err) +
        (err == EACCES || err == EPERM || err == EROFS ? " (the relay must run as root, or be delegated its cgroup)" : ""));
  }
}

JobCgroups::~JobCgroups() { end_and_remove(dir_); }

std::string JobCgroups::part_dir(std::uint64_t job) const { return dir_ + "/job-" + std::to_string(job); }

int JobCgroups::open_part(std::uint64_t job) {
  const std::string dir = part_dir(job);
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) throw std::runtime_error("cannot make cgroup " + dir + ": " + why(errno));
  const int fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    ::rmdir(dir.c_str());
    throw std::runtime_error("cannot open " + dir + "/cgroup.procs: " + why(err));
  }
  return fd;
}

std::vector<pid_t> JobCgroups::processes(std::uint64_t job) const { return processes_in(part_dir(job)); }

int JobCgroups::kill(std::uint64_t job) { return kill_all_in(part_dir(job)); }

bool JobCgroups::remove(std::uint64_t job) { return remove_tree(part_dir(job)); }

int JobCgroups::sweep_dead(const std::string& parent) {
  int removed = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename();
    if (name.rfind(kRelayPrefix, 0) != 0 || !e.is_directory(ec)) continue;
    const std::string digits = name.substr(std::strlen(kRelayPrefix));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // its relay runs (or is not ours to ask)
    if (end_and_remove(e.path())) ++removed;
  }
  return removed;
}

}  // namespace gridrt
