// The broker's scheduler (broker/scheduler.h) on its own: which clusters it offers, where a
// job goes, which jobs wait and in what order. The broker around it is tested end to end in
// test_daemons (jobs that wait for slots, for the grid, refused).
#include <gtest/gtest.h>

#include "broker/scheduler.h"

namespace gridrt {
namespace {

// Clusters a (4 slots), b (2) and c (3), at sites of their own.
Grid three_clusters() {
  std::string xml = "<grid>\n";
  for (const auto& [name, slots] : {std::pair{"a", 4}, {"b", 2}, {"c", 3}})
    xml += std::string("<cluster name=\"") + name + "\" slots=\"" + std::to_string(slots) +
           "\"><relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/><launch>mpiexec -n {np}</launch></cluster>\n";
  return parse_grid("grid.xml", xml + "</grid>\n");
}

JobSpec job_of(std::uint32_t processes) {
  JobSpec spec;
  spec.app_id = "app";
  spec.groups = {{"g", processes}};
  return spec;
}

void all_up(Scheduler& s) {
  s.relay_up("a", "10.0.0.1", 7001, true);
  s.relay_up("b", "10.0.0.2", 7002, true);
  s.relay_up("c", "10.0.0.3", 7003, true);
}

using Outcome = Scheduler::Placement::Outcome;

// Every relay up, and a job of `processes` placed and running (its slots busy).
Scheduler::Placement run_on_all_up(Scheduler& s, std::uint32_t processes) {
  all_up(s);
  Scheduler::Placement running = s.place(job_of(processes), false);
  EXPECT_EQ(running.outcome, Outcome::kRun);
  s.occupy(running.topology);
  return running;
}

std::vector<std::string> names(const std::vector<ClusterOffer>& offers) {
  std::vector<std::string> out;
  for (const auto& o : offers) out.push_back(o.name + ":" + std::to_string(o.slots));
  return out;
}

}  // namespace

TEST(Scheduler, OffersTheRegisteredClustersInGridOrderLessTheBusySlots) {
  const Grid grid = three_clusters();
  Scheduler s(grid);
  EXPECT_TRUE(s.offers(false).empty());
  s.relay_up("c", "10.0.0.3", 7003, false);
  s.relay_up("a", "10.0.0.1", 7001, true);
  EXPECT_FALSE(s.every_relay_up());
  const auto offers = s.offers(false);
  EXPECT_EQ(names(offers), (std::vector<std::string>{"a:4", "c:3"}));
  EXPECT_EQ(offers[0].link_host, "10.0.0.1");
  EXPECT_EQ(offers[0].link_port, 7001);
  EXPECT_TRUE(offers[0].reachable);
  EXPECT_FALSE(offers[1].reachable);  // as its probe found it

  s.relay_up("b", "10.0.0.2", 7002, true);
  EXPECT_TRUE(s.every_relay_up());
  const Scheduler::Placement p = s.place(job_of(5), false);
  ASSERT_EQ(p.outcome, Outcome::kRun);
  s.occupy(p.topology);
  std::uint32_t busy = 0;
  for (const char* c : {"a", "b", "c"}) busy += s.busy(c);
  EXPECT_EQ(busy, 5u);
  EXPECT_EQ(names(s.offers(false)), (std::vector<std::string>{"a:4", "b:2", "c:3"}));
  // A cluster all of whose slots are held is not offered.
  // (A group too large for any cluster fills the freest first: 4 on a, then 1 on c.)
  EXPECT_EQ(s.busy("a"), 4u);
  EXPECT_EQ(names(s.offers(true)), (std::vector<std::string>{"b:2", "c:2"}));
  s.release(p.topology);
  s.release(p.topology);  // twice (a broker's mistake) holds no slot below zero
  EXPECT_EQ(names(s.offers(true)), (std::vector<std::string>{"a:4", "b:2", "c:3"}));

  s.relay_down("b");
  EXPECT_FALSE(s.every_relay_up());
  EXPECT_EQ(names(s.offers(false)), (std::vector<std::string>{"a:4", "c:3"}));
}

TEST(Scheduler, RefusesWhatTheGridCannotHoldAndSaysWhoseFaultItIs) {
  const Grid grid = three_clusters();
  Scheduler s(grid);
  s.relay_up("a", "10.0.0.1", 7001, true);
  // More than the whole grid: the job's fault.
  s.relay_up("b", "10.0.0.2", 7002, true);
  s.relay_up("c", "10.0.0.3", 7003, true);
  Scheduler::Placement p = s.place(job_of(10), false);
  EXPECT_EQ(p.outcome, Outcome::kRefuse);
  EXPECT_EQ(p.status, 2);
  EXPECT_NE(p.why.find("needs 10 processes but the grid has 9 slots"), std::string::npos) << p.why;
  // More than the clusters up: the grid's, naming the relays missing.
  s.relay_down("b");
  s.relay_down("c");
  p = s.place(job_of(5), false);
  EXPECT_EQ(p.outcome, Outcome::kRefuse);
  EXPECT_EQ(p.status, 1);
  EXPECT_NE(p.why.find("the relays of cluster(s) b, c have not registered"), std::string::npos) << p.why;
  // Clusters whose relays can reach each other in no way (neither accepts a connection).
  s.relay_up("a", "10.0.0.1", 7001, false);
  s.relay_up("b", "10.0.0.2", 7002, false);
  p = s.place(job_of(5), false);
  EXPECT_EQ(p.outcome, Outcome::kRefuse);
  EXPECT_EQ(p.status, 1);
  EXPECT_NE(p.why.find("the job cannot run across these clusters"), std::string::npos) << p.why;
  // On one of them alone it runs.
  p = s.place(job_of(4), false);
  ASSERT_EQ(p.outcome, Outcome::kRun) << p.why;
  ASSERT_EQ(p.topology.clusters.size(), 1u);
  EXPECT_EQ(p.topology.clusters[0].name, "a");
}

TEST(Scheduler, AJobThatFitsTheGridButNotBesideTheRunningOnesWaitsAndADryRunDoesNot) {
  const Grid grid = three_clusters();
  Scheduler s(grid);
  run_on_all_up(s, 7);
  const Scheduler::Placement p = s.place(job_of(3), false);
  EXPECT_EQ(p.outcome, Outcome::kWait);
  EXPECT_EQ(p.why, "waiting for free slots: the job needs 3, 2 are free now");
  // A dry run maps onto all the slots: it says where the job would go on an idle grid.
  const Scheduler::Placement dry = s.place(job_of(9), true);
  ASSERT_EQ(dry.outcome, Outcome::kRun);
  EXPECT_EQ(dry.topology.size(), 9u);
}

TEST(Scheduler, QueuedJobsStartFirstComeFirstServedAndTheFirstHoldsBackTheOthers) {
  const Grid grid = three_clusters();
  Scheduler s(grid);
  const Scheduler::Placement first = run_on_all_up(s, 8);
  // 1 slot free: a job of 6, then one of 1 and one of 2 queue behind it.
  s.queue({1, job_of(6), false});
  s.queue({2, job_of(1), false});
  s.queue({3, job_of(2), false});
  EXPECT_EQ(s.waiting(), 3u);
  // The job of 1 would fit, but the first in the queue does not: nobody starts.
  EXPECT_FALSE(s.next_that_fits());
  s.release(first.topology);
  auto next = s.next_that_fits();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->ticket, 1u);
  s.occupy(s.place(next->spec, false).topology);  // 6 of 9 held now
  next = s.next_that_fits();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->ticket, 2u);
  s.occupy(s.place(next->spec, false).topology);  // 7
  next = s.next_that_fits();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->ticket, 3u);
  EXPECT_EQ(s.waiting(), 0u);
  EXPECT_FALSE(s.next_that_fits());
}

TEST(Scheduler, AJobWhoseSubmitterIsGoneNoLongerWaits) {
  const Grid grid = three_clusters();
  Scheduler s(grid);
  const Scheduler::Placement full = run_on_all_up(s, 9);
  s.queue({1, job_of(9), false});
  s.queue({2, job_of(1), false});
  s.hold_for_grid({3, job_of(1), false});
  s.forget(1);
  s.forget(3);
  EXPECT_EQ(s.waiting(), 1u);
  s.release(full.topology);
  const auto next = s.next_that_fits();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->ticket, 2u);
}

TEST(Scheduler, JobsHeldForTheGridComeBackInOrderOnceEveryRelayIsUpOrTheWaitIsOver) {
  const Grid grid = three_clusters();
  Scheduler s(grid);
  s.relay_up("a", "10.0.0.1", 7001, true);
  s.hold_for_grid({1, job_of(1), false});
  s.hold_for_grid({2, job_of(2), true});
  EXPECT_EQ(s.held(), 2u);
  EXPECT_TRUE(s.release_held(false).empty());  // b and c not up yet
  s.relay_up("b", "10.0.0.2", 7002, true);
  EXPECT_TRUE(s.release_held(false).empty());
  s.relay_up("c", "10.0.0.3", 7003, true);
  auto released = s.release_held(false);
  ASSERT_EQ(released.size(), 2u);
  EXPECT_EQ(released[0].ticket, 1u);
  EXPECT_EQ(released[1].ticket, 2u);
  EXPECT_TRUE(released[1].dry_run);
  EXPECT_EQ(s.held(), 0u);
  // Past the wait, held jobs go to the clusters that are up.
  s.relay_down("c");
  s.hold_for_grid({4, job_of(1), false});
  EXPECT_TRUE(s.release_held(false).empty());
  released = s.release_held(true);
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].ticket, 4u);
}

}  // namespace gridrt
