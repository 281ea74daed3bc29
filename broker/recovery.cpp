// Taking jobs back after a restart (gridbroker --state-dir; docs/architecture.md, "When the
// broker restarts"): the write-ahead state, the jobs loaded from it, the relays and
// launchers that come back for them, the replay of their output, and the grace after which
// what did not come back is lost.
#include <algorithm>
#include <set>

#include "broker/broker_jobs.h"

namespace gridrt {

using wire::Frame;
using wire::Type;

void Broker::set_state_dir(const std::string& dir, std::chrono::steady_clock::duration grace) {
  store_ = JobStore(dir);
  std::vector<std::string> unreadable;
  std::vector<JobStore::Saved> saved = store_.load(unreadable);
  next_job_ = std::max(next_job_, store_.next_id());
  for (const auto& u : unreadable) log::error("cannot take a job back from its state file ", u);
  for (auto& s : saved) {
    auto job = std::make_unique<Job>();
    static_cast<JobRecord&>(*job) = std::move(s.job);
    for (auto& p : s.parts) {
      Part part;
      static_cast<PartRecord&>(part) = std::move(p);
      job->parts.push_back(std::move(part));
    }
    job->restored = true;
    job->printed.assign(job->parts.size(), 0);
    scheduler_.occupy(job->topology);
    next_job_ = std::max(next_job_, job->id + 1);
    const std::uint64_t id = job->id;
    jobs_[id] = std::move(job);
  }
  if (saved.empty()) return;
  recovering_ = true;
  log::warn("took back ", saved.size(), " running job(s) from ", dir, ": waiting up to ",
            std::chrono::duration_cast<std::chrono::seconds>(grace).count(), " s for their relays and launchers to reconnect");
  recovery_.expires_after(grace);
  recovery_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) end_recovery();
  });
}

void Broker::persist(Job& job, bool now) {
  if (!store_.enabled() || stopped_) return;  // (a stopped broker's jobs are being killed: not to be taken back)
  if (!now) {
    if (dirty_.insert(job.id).second && dirty_.size() == 1) asio::post(io_, [this] { write_dirty_states(); });
    return;
  }
  std::vector<const PartRecord*> parts;
  for (const auto& p : job.parts) parts.push_back(&p);
  try {
    store_.save(job, parts);
  } catch (const std::exception& e) { log::error("job ", job.id, ": ", e.what(), " (the job would not survive a restart of the broker)"); }
}

void Broker::write_dirty_states() {
  for (const std::uint64_t id : std::exchange(dirty_, {}))
    if (auto it = jobs_.find(id); it != jobs_.end()) persist(*it->second, true);
}

void Broker::each_restored_job(const std::function<void(Job&)>& fn) {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, job] : jobs_)
    if (job->restored) ids.push_back(id);
  for (const std::uint64_t id : ids)
    if (auto it = jobs_.find(id); it != jobs_.end()) fn(*it->second);
}

// The recovery grace ran out: what did not come back is lost. A part whose relay did not
// return failed; a job whose launcher did not return is stopped (nobody would see its end).
void Broker::end_recovery() {
  recovering_ = false;
  each_restored_job([this](Job& job) {
    job.restored = false;
    for (std::size_t c = 0; c < job.parts.size(); ++c)
      if (!job.parts[c].relay && !job.parts[c].done)
        relay_gone(job, c, "the relay of cluster " + job.parts[c].cluster + " did not come back after the broker restarted");
    if (!job.launcher) {
      if (job.first_failure == 0) job.first_failure = 255;
      fail_job(job, "its launcher did not come back after the broker restarted");
    }
    persist(job);
    maybe_finish(job);
  });
}

// A relay registered: the parts it still runs of jobs taken back from the state directory
// are its again. Parts it does not hold any more are lost; jobs it holds that this broker
// does not know (they ended, or were not taken back) are stopped.
void Broker::claim_parts(const PeerPtr& relay) {
  const RelayRegistration& reg = relay->registration;
  std::set<std::uint64_t> unknown(reg.jobs.begin(), reg.jobs.end());
  each_restored_job([&](Job& job) {
    const std::uint64_t id = job.id;
    for (std::size_t c = 0; c < job.parts.size(); ++c) {
      Part& p = job.parts[c];
      if (p.cluster != reg.cluster || p.relay || p.given_up) continue;
      if (unknown.erase(id)) {
        p.relay = relay;
        log::info("job ", id, ": the relay of cluster ", p.cluster, " is back");
        if (job.launcher) request_replay(job, c);
      } else if (!p.done) {
        relay_gone(job, c, "the relay of cluster " + p.cluster + " came back without the job (it restarted)");
      }
    }
    persist(job);
    maybe_finish(job);
  });
  for (const std::uint64_t id : unknown) {
    log::info("job ", id, " on cluster ", reg.cluster, " is not one this broker runs: telling its relay to stop it");
    relay->link->send(wire::make_frame(
        Type::kKillJob, "the broker has no record of job " + std::to_string(id) + " (it restarted without the job's state)", id));
  }
}

void Broker::request_replay(Job& job, std::size_t part) {
  Frame f = wire::make_frame(Type::kReplayOutput, {}, job.id);
  f.header.seq = job.printed[part];
  job.parts[part].relay->link->send(f);
  job.parts[part].replay_pending = true;
}

void Broker::handle_replayed(const PeerPtr& peer, const Frame& f) {
  Part* part = nullptr;
  Job* job = job_of_relay_frame(peer, f, &part);
  if (!job) return;
  part->replay_pending = false;
  maybe_finish(*job);
}

// The submitter of a job taken back reconnects (gridrun does, with back-off): it is the
// job's launcher again, and each part's output is replayed from after the last line it
// printed. Anyone else, or a job not running here, is refused.
void Broker::handle_attach(const PeerPtr& peer, const Frame& f) {
  if (peer->kind == Peer::Kind::kRelay || !tls::is_user_name(peer->name))
    return refuse_peer(peer, "only user certificates ('user NAME') may take a job back; this one is '" + peer->name + "'");
  auto it = jobs_.find(f.header.job);
  if (it == jobs_.end() || it->second->submitter != peer->name)
    return refuse_peer(peer, "AttachJob: no job " + std::to_string(f.header.job) + " of yours is running");
  Job& job = *it->second;
  if (job.launcher && !job.launcher->link->closed())
    return refuse_peer(peer, "AttachJob: job " + std::to_string(job.id) + " has its launcher connected");
  wire::Reader r(f.body);
  const std::uint32_t n = r.u32();
  if (n != job.parts.size())
    throw wire::BadBody("output positions for " + std::to_string(n) + " clusters, the job has " + std::to_string(job.parts.size()));
  for (std::uint32_t c = 0; c < n; ++c) job.printed[c] = r.u64();
  r.end();
  peer->kind = Peer::Kind::kLauncher;
  peer->jobs.push_back(job.id);
  job.launcher = peer;
  log::info("job ", job.id, ": its launcher is back (", peer->link->peer(), ")");
  peer->link->send(wire::make_frame(Type::kNotice, "job " + std::to_string(job.id) + " taken back by the restarted broker", job.id));
  ask_files_again(job);
  for (std::size_t c = 0; c < job.parts.size(); ++c)
    if (job.parts[c].relay) request_replay(job, c);
  maybe_finish(job);
}

}  // namespace gridrt
