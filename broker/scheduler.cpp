#include "broker/scheduler.h"

#include <algorithm>
#include <utility>

#include "common/ladder.h"
#include "common/xml.h"

namespace gridrt {

void Scheduler::relay_up(const std::string& cluster, std::string link_host, std::uint16_t link_port, bool reachable) {
  relays_[cluster] = Relay{std::move(link_host), link_port, reachable};
}

void Scheduler::relay_down(const std::string& cluster) { relays_.erase(cluster); }

void Scheduler::occupy(const Topology& job) {
  for (const auto& c : job.clusters) busy_[c.name] += c.count;
}

void Scheduler::release(const Topology& job) {
  for (const auto& c : job.clusters) {
    std::uint32_t& used = busy_[c.name];
    used -= std::min(used, c.count);
  }
}

std::uint32_t Scheduler::busy(const std::string& cluster) const {
  const auto it = busy_.find(cluster);
  return it == busy_.end() ? 0 : it->second;
}

std::vector<ClusterOffer> Scheduler::offers(bool free_slots_only) const {
  std::vector<ClusterOffer> out;
  for (const auto& c : grid_.clusters) {
    const auto relay = relays_.find(c.name);
    if (relay == relays_.end()) continue;
    const std::uint32_t used = free_slots_only ? busy(c.name) : 0;
    if (used >= c.slots) continue;
    out.push_back(offer_of(c, relay->second.link_host, relay->second.link_port, relay->second.reachable));
    out.back().slots = c.slots - used;
  }
  return out;
}

Scheduler::Placement Scheduler::place(const JobSpec& spec, bool dry_run) const {
  using Outcome = Placement::Outcome;
  Placement p;
  const std::vector<ClusterOffer> all = offers(false);
  try {
    p.topology = map_job(spec, all);
  } catch (const InputError& e) {
    // Too big for the whole grid: bad input. Too big for the clusters up now: the grid is
    // short of relays, not the job at fault.
    p.outcome = Outcome::kRefuse;
    p.why = e.what();
    p.status = 2;
    if (all.size() == grid_.clusters.size()) return p;
    std::string missing;
    for (const auto& c : grid_.clusters)
      if (!relays_.count(c.name)) missing += (missing.empty() ? "" : ", ") + c.name;
    p.why += "; the relays of cluster(s) " + missing + " have not registered";
    p.status = 1;
    return p;
  }
  if (!dry_run) {
    // The grid can hold the job, but maybe not beside the jobs running now.
    const std::vector<ClusterOffer> free = offers(true);
    try {
      p.topology = map_job(spec, free);
    } catch (const InputError&) {
      std::uint64_t slots = 0;
      for (const auto& o : free) slots += o.slots;
      p.outcome = Outcome::kWait;
      p.why = "waiting for free slots: the job needs " + std::to_string(spec.total_processes()) + ", " + std::to_string(slots) +
              " are free now";
      return p;
    }
  }
  // Checked on the clusters the job will really use: the grid's declared network must be
  // able to connect every pair of them (not the job's fault).
  if (const std::string why = unlinkable_pairs(p.topology); !why.empty()) {
    p.outcome = Outcome::kRefuse;
    p.why = "the job cannot run across these clusters: " + why;
    p.status = 1;
  }
  return p;
}

std::vector<Scheduler::Waiting> Scheduler::release_held(bool waited_enough) {
  if (!waited_enough && !every_relay_up()) return {};
  return std::exchange(held_, {});
}

std::optional<Scheduler::Waiting> Scheduler::next_that_fits() {
  if (queued_.empty()) return std::nullopt;
  try {
    map_job(queued_.front().spec, offers(true));
  } catch (const InputError&) { return std::nullopt; }
  Waiting next = std::move(queued_.front());
  queued_.erase(queued_.begin());
  return next;
}

void Scheduler::forget(Ticket t) {
  const auto is_it = [t](const Waiting& w) { return w.ticket == t; };
  std::erase_if(held_, is_it);
  std::erase_if(queued_, is_it);
}

}  // namespace gridrt
