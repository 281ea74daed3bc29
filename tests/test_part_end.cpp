// How a relay settles its part's end, without processes: the wait for the ranks' reports
// after the launch command's exit, when the statuses are settled, and what each rank's
// status is when its monitor never reported.
#include <gtest/gtest.h>
#include <signal.h>

#include "relay/part_end.h"

using namespace gridrt;
using namespace std::chrono_literals;

namespace {
const std::chrono::steady_clock::duration kAuthenticate = 10s, kAfterFailure = 300ms;

PartEnd exited(int launch_status, std::vector<int> reports) {
  PartEnd e(reports.size());
  e.rank_status = std::move(reports);
  e.launch_exited = true;
  e.launch_status = launch_status;
  return e;
}
}  // namespace

// A launch command that exited 0: every monitor reported, perhaps from the accept queue;
// wait as long as a connection may take to authenticate. Otherwise a moment.
TEST(PartEnd, ReportsAreAwaitedLongOnlyAfterASuccessTheRelayDidNotStop) {
  EXPECT_EQ(wait_for_reports(exited(0, {-1, -1}), kAuthenticate, kAfterFailure), kAuthenticate);
  EXPECT_EQ(wait_for_reports(exited(3, {-1, -1}), kAuthenticate, kAfterFailure), kAfterFailure);
  PartEnd stopped = exited(0, {-1, -1});
  stopped.stopped = true;  // mpiexec told to stop may exit 0 for monitors it killed
  EXPECT_EQ(wait_for_reports(stopped, kAuthenticate, kAfterFailure), kAfterFailure);
}

TEST(PartEnd, StatusesSettleWhenAllReportedOrTheWaitIsOverOrThePartNeverRan) {
  PartEnd running(2);
  running.rank_status = {0, 0};
  EXPECT_FALSE(statuses_settled(running)) << "the launch command still runs";
  EXPECT_TRUE(statuses_settled(exited(0, {0, 1})));
  PartEnd missing = exited(0, {0, -1});
  EXPECT_FALSE(statuses_settled(missing));
  missing.grace_over = true;
  EXPECT_TRUE(statuses_settled(missing));
  PartEnd never = exited(127, {-1, -1});
  never.failure = "cannot start 'mpiexec'";
  EXPECT_TRUE(statuses_settled(never));
}

TEST(PartEnd, RanksWithoutAReportAreAccountedForByWhatHappened) {
  // Reported statuses stand as they are.
  EXPECT_EQ(part_done(exited(0, {0, 3}), "mpiexec").statuses, (std::vector<std::uint32_t>{0, 3}));
  // Stopped by the relay: the silent ones were stopped with it.
  PartEnd stopped = exited(0, {0, -1});
  stopped.stopped = true;
  EXPECT_EQ(part_done(stopped, "mpiexec").statuses, (std::vector<std::uint32_t>{0, 128 + SIGTERM}));
  // Else the launch command's status, or 255 (lost) if that was 0.
  EXPECT_EQ(part_done(exited(9, {0, -1}), "mpiexec").statuses, (std::vector<std::uint32_t>{0, 9}));
  EXPECT_EQ(part_done(exited(0, {-1, 0}), "mpiexec").statuses, (std::vector<std::uint32_t>{255, 0}));
  EXPECT_EQ(part_done(exited(0, {-1, 0}), "mpiexec").message, "");
}

TEST(PartEnd, ALaunchCommandThatFailedBeforeAnyRankIsNamed) {
  EXPECT_EQ(part_done(exited(7, {-1, -1}), "srun").message, "launch command 'srun' exited with status 7 before any process started");
  EXPECT_EQ(part_done(exited(7, {0, -1}), "srun").message, "") << "a rank ran: its own account says more";
  PartEnd never = exited(127, {-1});
  never.failure = "cannot start 'srun': No such file or directory";
  EXPECT_EQ(part_done(never, "srun").message, never.failure) << "the reason it never ran comes first";
  PartEnd stopped = exited(143, {-1});
  stopped.stopped = true;
  EXPECT_EQ(part_done(stopped, "srun").message, "") << "stopped by the relay, which says why itself";
}
