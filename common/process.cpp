#include "common/process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>

namespace gridrt {

namespace {
// Where a child failed before its program started (reported through the status pipe).
enum SpawnStage : int { kEnterCgroup = 1, kBecomeAccount, kEnterWorkdir, kExec };
}  // namespace

Child spawn(const std::vector<std::string>& argv, const SpawnOptions& opt) {
  if (argv.empty()) throw std::runtime_error("spawn: empty command");
  int out[2] = {-1, -1}, err[2] = {-1, -1}, status[2];
  if (::pipe2(status, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (opt.pipe_stdout && ::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (opt.pipe_stderr && ::pipe2(err, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The account's own HOME, USER and LOGNAME, unless the caller sets them.
  std::vector<std::pair<std::string, std::string>> env = opt.env;
  if (opt.run_as)
    for (const auto& entry :
         {std::pair<std::string, std::string>{"HOME", opt.run_as->home}, {"USER", opt.run_as->name}, {"LOGNAME", opt.run_as->name}})
      if (std::none_of(opt.env.begin(), opt.env.end(), [&](const auto& e) { return e.first == entry.first; })) env.push_back(entry);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    bool overridden = std::find(opt.unset.begin(), opt.unset.end(), key) != opt.unset.end();
    for (const auto& [k, v] : env) overridden = overridden || k == key;
    if (!overridden) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // What failed, for the parent's message: the account change or the start itself.
    auto report = [&](int stage) {
      const int failure[2] = {stage, errno};
      ssize_t ignored = ::write(status[1], failure, sizeof failure);
      (void)ignored;
      ::_exit(127);
    };
    if (opt.cgroup_procs >= 0 && ::write(opt.cgroup_procs, "0", 1) != 1) report(kEnterCgroup);
    // Groups before the user: once the user is changed, the groups can no longer be.
    if (opt.run_as && (::setgroups(opt.run_as->groups.size(), opt.run_as->groups.data()) != 0 || ::setgid(opt.run_as->gid) != 0 ||
                       ::setuid(opt.run_as->uid) != 0))
      report(kBecomeAccount);
    // After the account change, which clears a parent-death signal.
    if (opt.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // parent died before prctl took effect
    }
    if (opt.new_process_group) ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    if (opt.pipe_stdout) ::dup2(out[1], 1);
    if (opt.pipe_stderr) ::dup2(err[1], 2);
    if (!opt.workdir.empty() && ::chdir(opt.workdir.c_str()) != 0) report(kEnterWorkdir);
    ::execvpe(args[0], args.data(), envp.data());
    report(kExec);
  }
  ::close(status[1]);
  if (opt.pipe_stdout) ::close(out[1]);
  if (opt.pipe_stderr) ::close(err[1]);
  int failure[2] = {0, 0};
  ssize_t n;
  do n = ::read(status[0], failure, sizeof failure);
  while (n < 0 && errno == EINTR);
  ::close(status[0]);
  if (n == sizeof failure) {
    ::waitpid(pid, nullptr, 0);
    if (opt.pipe_stdout) ::close(out[0]);
    if (opt.pipe_stderr) ::close(err[0]);
    const std::string why = std::strerror(failure[1]);
    if (failure[0] == kEnterCgroup) throw std::runtime_error("cannot start '" + argv[0] + "' in the job's cgroup: " + why);
    if (failure[0] == kBecomeAccount)
      throw std::runtime_error("cannot start '" + argv[0] + "' as local account '" + opt.run_as->name + "': " + why);
    const std::string where = opt.workdir.empty() ? "" : " in " + opt.workdir;
    const std::string as = opt.run_as ? " as local account '" + opt.run_as->name + "'" : "";
    throw std::runtime_error("cannot start '" + argv[0] + "'" + where + as + ": " + why);
  }
  return Child{pid, out[0], err[0]};
}

std::string find_on_path(const std::string& program) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const char* dirs = std::getenv("PATH");
  const std::string all = dirs ? dirs : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t at = 0; at <= all.size();) {
    const std::size_t end = all.find(':', at);
    const std::string dir = all.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / program;
    if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate, ec)) return candidate.string();
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return "";
}

std::string output_of(const std::vector<std::string>& argv, std::chrono::milliseconds within) {
  SpawnOptions opt;
  opt.pipe_stdout = true;
  Child c;
  try {
    c = spawn(argv, opt);
  } catch (const std::exception&) { return ""; }
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + within;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{c.stdout_fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) break;
    char buf[4096];
    const ssize_t n = ::read(c.stdout_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() >= 64 * 1024) break;
  }
  ::close(c.stdout_fd);
  signal_tree(c.pid, SIGKILL);
  ::waitpid(c.pid, nullptr, 0);
  return out;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 255;
}

namespace {
// Calls f(pid, its /proc directory) for every process on this machine but the caller.
template <typename F> void for_each_other_process(F f) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid != ::getpid()) f(pid, e.path());
  }
}
}  // namespace

int signal_by_environment(const std::string& entry, int sig) {
  int n = 0;
  const std::string needle = entry + '\0';
  for_each_other_process([&](pid_t pid, const std::filesystem::path& dir) {
    std::ifstream in(dir / "environ", std::ios::binary);
    const std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if ((env.compare(0, needle.size(), needle) == 0 || env.find('\0' + needle) != std::string::npos) && ::kill(pid, sig) == 0) ++n;
  });
  return n;
}

void signal_tree(pid_t pid, int sig) {
  if (pid <= 0) return;
  if (::kill(-pid, sig) != 0) ::kill(pid, sig);
}

void become_subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> found;
  for_each_other_process([&](pid_t pid, const std::filesystem::path& dir) {
    std::ifstream in(dir / "stat");
    std::string stat;
    std::getline(in, stat);
    // "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses; the last ')' ends it.
    const auto close = stat.rfind(')');
    long ppid = 0;
    if (close != std::string::npos && std::sscanf(stat.c_str() + close + 1, " %*c %ld", &ppid) == 1 && ppid == parent) found.push_back(pid);
  });
  return found;
}

int kill_descendants(std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  std::set<pid_t> killed;
  for (;;) {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {}
    const std::vector<pid_t> children = children_of(::getpid());
    if (children.empty() || std::chrono::steady_clock::now() > deadline) return static_cast<int>(killed.size());
    for (pid_t c : children)
      if (::kill(c, SIGKILL) == 0) killed.insert(c);
    ::usleep(2000);  // their orphans are handed to us as they die
  }
}

FileAccessAs::FileAccessAs(const std::optional<LocalAccount>& account) {
  if (!account || ::geteuid() != 0) return;
  const int n = ::getgroups(0, nullptr);
  groups_.resize(static_cast<std::size_t>(std::max(n, 0)));
  if (n > 0 && ::getgroups(n, groups_.data()) != n) groups_.clear();
  if (::syscall(SYS_setgroups, account->groups.size(), account->groups.data()) != 0)
    throw std::runtime_error("cannot take the groups of " + account->name + ": " + std::strerror(errno));
  gid_ = static_cast<gid_t>(::setfsgid(account->gid));
  uid_ = static_cast<uid_t>(::setfsuid(account->uid));
  active_ = true;
}

FileAccessAs::~FileAccessAs() {
  if (!active_) return;
  ::setfsuid(uid_);
  ::setfsgid(gid_);
  ::syscall(SYS_setgroups, groups_.size(), groups_.data());
}

bool send_all(int fd, std::string_view bytes) {
  for (std::size_t off = 0; off < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace gridrt
