// Job cgroups (common/cgroup.h) on this machine's real cgroup v2 hierarchy: whatever a
// process started in a part's cgroup does to leave it, it is found there and killed with
// it; a dead relay's directory is ended and removed by the next one. Needs root (or a
// delegated cgroup) and a cgroup2 mount; skips itself otherwise.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "common/cgroup.h"
#include "common/process.h"

namespace {

using namespace gridrt;
using namespace std::chrono_literals;

// The job cgroups this test may make, or a skip saying why not.
std::unique_ptr<JobCgroups> make_or_skip(std::string& why) {
  try {
    return std::make_unique<JobCgroups>();
  } catch (const std::exception& e) {
    why = e.what();
    return nullptr;
  }
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

// A pid that ran and is gone (a child, reaped).
pid_t dead_pid() {
  const pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  ::waitpid(p, nullptr, 0);
  return p;
}

template <typename F> bool eventually(F f, std::chrono::milliseconds within = 5000ms) {
  for (auto end = std::chrono::steady_clock::now() + within; std::chrono::steady_clock::now() < end; std::this_thread::sleep_for(10ms))
    if (f()) return true;
  return f();
}

TEST(Cgroup, WhatAPartStartsStaysInItsCgroupHoweverItLeavesAndDiesWithIt) {
  std::string why;
  auto cgroups = make_or_skip(why);
  if (!cgroups) GTEST_SKIP() << "no job cgroups here: " << why;
  EXPECT_TRUE(std::filesystem::is_directory(cgroups->dir())) << cgroups->dir();
  SpawnOptions so;
  so.cgroup_procs = cgroups->open_part(7);
  so.die_with_parent = false;
  // A session of its own, a double fork, an empty environment, every descriptor closed.
  const Child c =
      spawn({"/bin/sh", "-c", "setsid env -i /bin/sh -c '(exec /bin/sleep 61.5 </dev/null >/dev/null 2>&1 &)'; exec /bin/sleep 61.25"}, so);
  ::close(so.cgroup_procs);
  std::vector<pid_t> in;
  // Until both sleeps run and the shells between have gone (a shell that is forking counts
  // too: waiting for two processes alone raced with it on a loaded machine).
  const auto comm = [](pid_t p) {
    std::ifstream in("/proc/" + std::to_string(p) + "/comm");
    std::string name;
    std::getline(in, name);
    return name;
  };
  ASSERT_TRUE(eventually([&] {
    in = cgroups->processes(7);
    return in.size() == 2 && comm(in[0]) == "sleep" && comm(in[1]) == "sleep";
  })) << in.size()
      << " processes in the part's cgroup";
  EXPECT_NE(std::find(in.begin(), in.end(), c.pid), in.end());
  EXPECT_EQ(cgroups->kill(7), 2);
  int status = 0;
  ASSERT_EQ(::waitpid(c.pid, &status, 0), c.pid);
  EXPECT_EQ(exit_code_of(status), 128 + SIGKILL);
  for (pid_t p : in) EXPECT_TRUE(eventually([&] { return !alive(p); })) << "pid " << p << " outlived its cgroup";
  EXPECT_TRUE(eventually([&] { return cgroups->remove(7); }));
  EXPECT_FALSE(std::filesystem::exists(cgroups->dir() + "/job-7"));
  EXPECT_EQ(cgroups->kill(7), 0) << "a removed part has nothing to kill";
}

TEST(Cgroup, ADeadRelaysDirectoryIsEndedAndRemovedByTheNextAndALiveOnesIsLeftAlone) {
  std::string why;
  auto first = make_or_skip(why);
  if (!first) GTEST_SKIP() << "no job cgroups here: " << why;
  const std::string parent = std::filesystem::path(first->dir()).parent_path();
  // What a relay killed outright leaves: its directory, a part, a process still in it.
  const std::string dead = parent + "/gridrelay-" + std::to_string(dead_pid());
  ASSERT_TRUE(std::filesystem::create_directories(dead + "/job-3")) << dead;
  SpawnOptions so;
  so.die_with_parent = false;
  so.cgroup_procs = ::open((dead + "/job-3/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(so.cgroup_procs, 0);
  const Child orphan = spawn({"/bin/sleep", "61.75"}, so);
  ::close(so.cgroup_procs);
  EXPECT_EQ(JobCgroups::sweep_dead(parent), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(orphan.pid, &status, 0), orphan.pid);
  EXPECT_EQ(exit_code_of(status), 128 + SIGKILL);
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::is_directory(first->dir())) << "the directory of a relay that runs (this test) is not swept";
  const std::string mine = first->dir();
  first.reset();
  EXPECT_FALSE(std::filesystem::exists(mine)) << "a relay's directory goes with it";
}

TEST(Cgroup, ADirectoryThatIsNoCgroupIsRefusedByName) {
  const std::string not_cgroup = ::testing::TempDir() + "/not-a-cgroup";
  std::filesystem::create_directories(not_cgroup);
  try {
    JobCgroups made(not_cgroup);
    ADD_FAILURE() << "a plain directory was taken for a cgroup: " << made.dir();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), not_cgroup + " is not a directory of the cgroup v2 hierarchy (it has no cgroup.procs)");
  }
}

}  // namespace
