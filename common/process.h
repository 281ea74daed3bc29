// Starting child processes the way every gridrt component needs: argv without a shell,
// extra environment, a working directory, optional pipes for stdout/stderr, its own process
// group (so the whole tree below it can be signalled), and death with its parent
// (PR_SET_PDEATHSIG) so that nothing outlives a killed launcher or relay.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gridrt {

// A local Unix account a child runs as (common/grid_map.h finds one by name).
struct LocalAccount {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, as at login
  std::string home;
};

struct SpawnOptions {
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) ours
  std::vector<std::string> unset;                        // of ours, left out (unless in env)
  std::string workdir;
  bool pipe_stdout = false;
  bool pipe_stderr = false;
  bool new_process_group = true;
  bool die_with_parent = true;
  // Set: the child takes this account's user, group and supplementary groups (the caller
  // must be root), then its HOME, USER and LOGNAME, before it enters `workdir` and execs,
  // so that the account's own permissions decide both.
  std::optional<LocalAccount> run_as;
  // Set (an open cgroup.procs, common/cgroup.h): the child moves itself into that cgroup
  // first, before it changes account or runs anything, so that nothing it starts is outside.
  int cgroup_procs = -1;
};

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;  // read ends, when piped
  int stderr_fd = -1;
};

// Throws std::runtime_error naming argv[0] when the program cannot be started (exec
// failure is reported through a close-on-exec pipe, so it is seen here, not as exit 127).
Child spawn(const std::vector<std::string>& argv, const SpawnOptions& opt);

// A wait status as a shell reports it: the exit code, or 128 + the signal number.
int exit_code_of(int wait_status);

// Where `program` (a name without a slash) lies on PATH, as a shell would find it (an
// executable file, not a directory); "" where it is nowhere.
std::string find_on_path(const std::string& program);

// What `argv` prints on its standard output (at most 64 KiB) before it exits or `within`
// passes (it is then killed); "" when it cannot be started.
std::string output_of(const std::vector<std::string>& argv, std::chrono::milliseconds within);

// While it lives, the calling thread reaches files as `account` would: its file-system user
// and group and its supplementary groups (setfsuid, setfsgid and the setgroups system call,
// all three per thread; glibc's setgroups would change every thread's). A relay running as
// root opens what a job's account controls (the job's directory, where the job may have put
// a symbolic link to anything) this way, so that it reaches nothing the account could not.
// No account, or not root: nothing changes.
class FileAccessAs {
 public:
  explicit FileAccessAs(const std::optional<LocalAccount>& account);
  ~FileAccessAs();
  FileAccessAs(const FileAccessAs&) = delete;
  FileAccessAs& operator=(const FileAccessAs&) = delete;

 private:
  bool active_ = false;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  std::vector<gid_t> groups_;
};

// Writes all of `bytes` to the socket `fd` (never raising SIGPIPE, going on after signals);
// false if the peer is gone.
bool send_all(int fd, std::string_view bytes);

// Sends `sig` to the child's process group (or the child alone if it has none).
void signal_tree(pid_t pid, int sig);

// Sends `sig` to every process on this machine whose environment holds exactly `entry`
// ("NAME=VALUE"); returns how many. Process managers put their helpers in process groups
// of their own (hydra's proxies do), and a killed mpiexec can leave them orphaned; a job's
// processes all inherit its secret, which finds them wherever they ended up.
int signal_by_environment(const std::string& entry, int sig);

// Containment for a process monitor (gridproc): once the caller is a child subreaper, every
// orphaned descendant — one that started a session of its own, double-forked, cleared its
// environment, closed its descriptors — becomes the caller's child instead of init's, so
// that nothing started below it can leave the job unseen.
void become_subreaper();
// The caller's children now, from /proc.
std::vector<pid_t> children_of(pid_t parent);
// Kills (SIGKILL) every child of the caller and, as their orphans become its children in
// turn, theirs, reaping each, until none is left or `within` passes. Returns how many it
// killed. Only for a subreaper whose own child is already reaped: it spares nobody.
int kill_descendants(std::chrono::milliseconds within);

}  // namespace gridrt
