// Containing each job's part in a cgroup of its own (Linux cgroup v2, the unified
// hierarchy): every process the launch command starts, and everything those start in turn,
// is in the part's cgroup from its first instruction on, whatever it does afterwards (its
// own session, a double fork, an empty environment, closed descriptors, killing its
// monitor). At the part's end the relay kills what is left there (cgroup.kill) and removes
// the cgroup, so nothing of a job survives it. A monitor that is its rank's child subreaper
// (relay/gridproc.cpp) does the same for each rank where no cgroup can be made, except when
// the monitor itself is killed outright.
//
// Layout: <the relay's own cgroup>/gridrelay-<pid>/job-<id>. A relay that died without
// removing its directory (SIGKILL) leaves it behind; the next relay started under the same
// cgroup kills what is left in it and removes it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gridrt {

// The directory of the cgroup this process is in, on the unified (v2) hierarchy, from
// /proc/self/mountinfo and /proc/self/cgroup. Throws std::runtime_error saying why when there
// is none (no cgroup2 file system mounted).
std::string own_cgroup_dir();

class JobCgroups {
 public:
  // Makes this process's directory of job cgroups under `parent` (own_cgroup_dir() when
  // empty), after ending what dead relays left there. Throws std::runtime_error naming the
  // directory and the reason when it cannot (no cgroup v2; not root and not delegated).
  explicit JobCgroups(std::string parent = "");
  // Kills what is left of every part and removes the directories.
  ~JobCgroups();
  JobCgroups(const JobCgroups&) = delete;
  JobCgroups& operator=(const JobCgroups&) = delete;

  const std::string& dir() const { return dir_; }
  // Makes the part's cgroup and returns its cgroup.procs opened for writing (close-on-exec),
  // for spawn (SpawnOptions::cgroup_procs) to put the child in before it runs anything.
  // The caller closes it. Throws std::runtime_error naming the cgroup when it cannot.
  int open_part(std::uint64_t job);
  // The processes in the part's cgroup now.
  std::vector<pid_t> processes(std::uint64_t job) const;
  // Kills (SIGKILL) every process in the part's cgroup; returns how many there were.
  int kill(std::uint64_t job);
  // Removes the part's cgroup; false while processes are still in it (dying).
  bool remove(std::uint64_t job);

  // Ends and removes what relays that are gone left under `parent`: directories
  // gridrelay-<pid> whose pid no longer runs. Returns how many it removed.
  static int sweep_dead(const std::string& parent);

 private:
  std::string part_dir(std::uint64_t job) const;
  std::string dir_;
};

}  // namespace gridrt
