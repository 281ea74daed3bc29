// How a cluster's part of a job ends, as its relay decides it: how long to wait for the
// ranks' own reports once the launch command (mpiexec) has exited, when the statuses are
// settled, and what each rank's status is then. Pure: relay/part_runner.cpp feeds it what
// it saw (exits, reports, its own decision to stop the job), and unit tests drive it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/messages.h"

namespace gridrt {

struct PartEnd {
  bool launch_exited = false;
  int launch_status = 0;         // the launch command's exit status, once it exited
  bool stopped = false;          // this relay stopped the job (SIGTERM, then SIGKILL)
  bool grace_over = false;       // the wait for reports after the launch command's exit ran out
  std::string failure;           // set when the part could not run at all
  std::vector<int> rank_status;  // per local rank, from its monitor; -1 while unknown

  explicit PartEnd(std::size_t ranks = 0) : rank_status(ranks, -1) {}
};

// After the launch command exited, how long to wait for monitors still handing over their
// ranks' last output and status. A launch command that exited 0 had every monitor exit 0,
// and a monitor exits 0 only after its connection took its report: the reports will come,
// even from a connection still queued behind others for accept (strangers flooding the
// local port, a burst of jobs), so wait as long as an unauthenticated connection may wait
// (`authenticate`). After a failure some may never come: `after_failure` only. The same
// after the relay stopped the job: mpiexec told to stop may exit 0 for monitors it killed.
std::chrono::steady_clock::duration wait_for_reports(const PartEnd& end, std::chrono::steady_clock::duration authenticate,
                                                     std::chrono::steady_clock::duration after_failure);

// Whether the ranks' statuses are settled: the launch command exited and every rank
// reported, or the wait for reports ran out, or the part never ran. (The part is over once,
// besides, its output is drained and its monitors have hung up: the runner's to check.)
bool statuses_settled(const PartEnd& end);

// The part's end as the broker is told it. A rank without a report never started or was
// killed with the part: if the relay stopped the job it counts as stopped (128 + SIGTERM);
// else the launch command's status is the best account of it, or 255 ("lost") if that
// was 0. A launch command that failed before any rank reported is named (`launch`, the
// program) as the reason.
PartDone part_done(const PartEnd& end, const std::string& launch);

}  // namespace gridrt
