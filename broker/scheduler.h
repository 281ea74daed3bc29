// The broker's scheduling, apart from its sessions: which clusters it offers a job (those
// whose relay registered, reachable as the broker's probe found them, less the slots of the
// jobs running there), where a job goes (map_job, common/grid.h), and the jobs that wait,
// in order. A pure core, as the cluster-loss arbiter is: no connection, no timer; the broker
// (broker.cpp) tells it what happened and does what it answers. A waiting job is known by a
// ticket the broker gives it.
//
// Two kinds of waiting. A job submitted with wire::kSubmitWaitForGrid before every cluster's
// relay registered is held until they all did, or until the broker has waited long enough
// (its kGridWait), then placed like any other. A job that the grid can hold but not beside
// the jobs running now is queued for free slots, first come first served: the first that
// does not fit keeps its place and holds back those behind it, so that no large job starves
// behind a stream of small ones (the FCFS discipline of batch systems, without backfilling).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/grid.h"
#include "common/messages.h"

namespace gridrt {

class Scheduler {
 public:
  using Ticket = std::uint64_t;

  explicit Scheduler(const Grid& grid) : grid_(grid) {}  // `grid` outlives it

  // A cluster's relay registered: where it takes relay links, and whether that address
  // answered the broker's probe. And gone (its connection closed).
  void relay_up(const std::string& cluster, std::string link_host, std::uint16_t link_port, bool reachable);
  void relay_down(const std::string& cluster);
  bool every_relay_up() const { return relays_.size() == grid_.clusters.size(); }

  // The slots a job holds from its start (or from being taken back after a restart) to its end.
  void occupy(const Topology& job);
  void release(const Topology& job);
  std::uint32_t busy(const std::string& cluster) const;

  // The registered clusters in grid order, with all their slots or only those free now.
  std::vector<ClusterOffer> offers(bool free_slots_only) const;

  // Where a job submitted now goes: it runs (on `topology`: for a dry run, the mapping over
  // all the slots of the registered clusters), waits for free slots (`why`: what its
  // submitter is told), or is refused (`why`; `status` 2 where the job is at fault, too big
  // for the whole grid; 1 where the grid is: relays missing, or clusters that cannot link).
  struct Placement {
    enum class Outcome { kRun, kWait, kRefuse } outcome = Outcome::kRun;
    Topology topology;
    std::string why;
    int status = 0;
  };
  Placement place(const JobSpec& spec, bool dry_run) const;

  struct Waiting {
    Ticket ticket = 0;
    JobSpec spec;
    bool dry_run = false;
  };
  // Held until every relay is up. release_held gives them all back, in arrival order, once
  // every relay is up or `waited_enough`; none before.
  void hold_for_grid(Waiting w) { held_.push_back(std::move(w)); }
  std::vector<Waiting> release_held(bool waited_enough);
  std::size_t held() const { return held_.size(); }
  // Queued for free slots (place said kWait). next_that_fits takes the first queued job out
  // if it fits in the slots free now; none while it does not (those behind it wait too).
  void queue(Waiting w) { queued_.push_back(std::move(w)); }
  std::optional<Waiting> next_that_fits();
  // Its submitter is gone: it no longer waits, held or queued.
  void forget(Ticket t);
  std::size_t waiting() const { return held_.size() + queued_.size(); }

 private:
  struct Relay {
    std::string link_host;
    std::uint16_t link_port = 0;
    bool reachable = false;
  };
  const Grid& grid_;
  std::map<std::string, Relay> relays_;        // cluster -> its registered relay
  std::map<std::string, std::uint32_t> busy_;  // cluster -> slots held by running jobs
  std::vector<Waiting> held_, queued_;
};

}  // namespace gridrt
