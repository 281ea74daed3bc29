// gridbroker: the grid's only central service (docs/architecture.md). It knows the relays,
// maps jobs onto clusters, assigns global ranks, publishes the topology, and tracks every job
// to its end. It is not on the data path.
//
// Shape (c10d TCPStoreBackend): a listener, one TLS session per connection, one handler per
// request type, waiting kept as state (jobs waiting for clusters, parts waiting for peers).
// A connection that misbehaves is dropped alone; other relays and jobs carry on.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "broker/job_store.h"
#include "broker/journal.h"
#include "broker/scheduler.h"
#include "common/admission.h"
#include "common/grid.h"
#include "common/link.h"
#include "common/tls.h"

namespace gridrt {

class Broker {
 public:
  Broker(asio::io_context& io, Grid grid, const tls::Credentials& creds, const tcp::endpoint& listen);
  ~Broker();
  tcp::endpoint endpoint() const { return acceptor_.local_endpoint(); }
  void stop();           // kills every running job and closes every connection
  bool flushed() const;  // after stop(): every connection's last frames are out, and it closed
  // What the standing daemon does before it serves (not the grid gridrun embeds): the open
  // files it may need, and the sockets' state made up front (common/acceptor.h).
  void prepare_for_strangers();
  std::size_t registered_relays() const { return relays_.size(); }
  // Writes every job's state ahead to `dir` (broker/job_store.h) and takes back the jobs a
  // broker killed on it left there: they wait up to `grace` for their relays and launchers
  // to reconnect. Call before set_journal.
  void set_state_dir(const std::string& dir, std::chrono::steady_clock::duration grace = std::chrono::seconds(60));
  // Appends one line per job started, refused and ended to `path`: who submitted what.
  // Job ids continue after the last one it holds; jobs it saw start and never end (a
  // crash cut them off) get their end line now, unless they were taken back.
  void set_journal(const std::string& path);
  // The grid's performance model (JSON, docs/models.md; checked by the caller): handed to
  // every job with its topology, so that every process predicts and chooses alike.
  void set_model(std::string json) { model_ = std::move(json); }
  // How long a connection may take to authenticate (its TLS handshake); tests shorten it.
  void set_authentication_deadline(std::chrono::steady_clock::duration d) { authenticate_ = d; }
  std::size_t unauthenticated_connections() const { return strangers_.pending(); }
  std::size_t dropped_unauthenticated() const { return strangers_.dropped(); }
  std::size_t active_jobs() const { return jobs_.size(); }
  // What the files of a job may hold that travel from the submitting machine: one job's, and
  // a user's running jobs' together (docs/jobprofile.md, "Files that travel with the job").
  struct StageLimits {
    std::uint64_t per_job = 4ull << 30;
    std::uint64_t per_user = 16ull << 30;
  };
  void set_stage_limits(StageLimits l) { stage_limits_ = l; }

 private:
  struct Peer;
  struct Part;
  struct Job;
  using PeerPtr = std::shared_ptr<Peer>;

  asio::awaitable<void> accept_loop();
  asio::awaitable<void> handshake(tcp::socket socket);
  void on_frame(const PeerPtr& peer, wire::Frame& f);
  void on_closed(const PeerPtr& peer, const std::string& why);

  // One handler per request type.
  void handle_register(const PeerPtr& peer, const wire::Frame& f);
  asio::awaitable<void> probe_and_register(PeerPtr peer);
  void handle_submit(const PeerPtr& peer, const wire::Frame& f);
  void handle_part_ready(const PeerPtr& peer, const wire::Frame& f);
  void handle_output(const PeerPtr& peer, wire::Frame& f);
  void handle_rank_exit(const PeerPtr& peer, const wire::Frame& f);
  void handle_part_done(const PeerPtr& peer, const wire::Frame& f);
  void handle_cancel(const PeerPtr& peer, const wire::Frame& f);
  void handle_status(const PeerPtr& peer);
  void handle_relay_failure(const PeerPtr& peer, const wire::Frame& f);
  void handle_unreachable(const PeerPtr& peer, const wire::Frame& f);
  void handle_finalizing(const PeerPtr& peer, const wire::Frame& f);
  void handle_attach(const PeerPtr& peer, const wire::Frame& f);
  void handle_replayed(const PeerPtr& peer, const wire::Frame& f);
  // Files that travel with jobs (broker/stage_files.cpp).
  std::string staging_refusal(const std::string& user, const JobSpec& spec) const;
  void handle_file_wanted(const PeerPtr& peer, const wire::Frame& f);
  void handle_file_data(const PeerPtr& peer, wire::Frame& f);
  void ask_files_again(Job& job);
  void handle_output_file(const PeerPtr& peer, wire::Frame& f);

  // Taking jobs back after a restart (set_state_dir).
  void claim_parts(const PeerPtr& relay);
  void request_replay(Job& job, std::size_t part);
  void end_recovery();
  // Runs `fn` on each job taken back and not yet settled, by id: `fn` may end the job
  // (maybe_finish erases it).
  void each_restored_job(const std::function<void(Job&)>& fn);
  // Writes the job's state (JobStore): at once, or once this turn of the loop is over (a
  // burst of exits is one write).
  void persist(Job& job, bool now = false);
  void write_dirty_states();
  void relay_gone(Job& job, std::size_t part, const std::string& what);

  // Places the job (Scheduler::place) and starts it, queues it or refuses it.
  void start_job(const PeerPtr& launcher, JobSpec spec, bool dry_run);
  void refuse(const PeerPtr& launcher, const JobSpec& spec, const std::string& why, int status);
  void start_queued();
  void try_held_submits(bool deadline_passed);
  // A waiting job's ticket for the scheduler, and back (none: its launcher is gone).
  Scheduler::Ticket ticket_for(const PeerPtr& launcher);
  PeerPtr launcher_of(Scheduler::Ticket t);
  Job* job_of_relay_frame(const PeerPtr& peer, const wire::Frame& f, Part** part);
  void record_exit(Job& job, std::uint32_t rank, int status);
  void fail_job(Job& job, const std::string& why);
  void lose_part(Job& job, std::size_t part, const std::string& why);
  void settle_unreachable(Job& job);
  void release_finalize(Job& job);
  void maybe_finish(Job& job);
  void stop_if_stuck(Job& job);

  // Refuses what `peer` attempted and drops it: a warning in the log and a line in the
  // journal (who, from where, what), then an Error frame saying `what`.
  void refuse_peer(const PeerPtr& peer, const std::string& what);

  asio::io_context& io_;
  Grid grid_;
  Journal journal_;
  std::string model_;  // set_model
  StageLimits stage_limits_;
  JobStore store_;
  asio::ssl::context tls_;
  tcp::acceptor acceptor_;
  Admission strangers_{io_.get_executor(), "broker's port", limits::kDaemonPort};  // connections still shaking hands
  log::Repeated accept_failures_{"failed accepts on the broker's port"};
  std::chrono::steady_clock::duration authenticate_ = limits::kAuthenticate;
  log::Repeated failed_handshakes_{"failed TLS handshakes"};
  std::map<std::string, PeerPtr> relays_;          // cluster name -> its registered relay
  std::vector<std::shared_ptr<TlsLink>> closing_;  // what stop() closes after its last frames
  std::set<std::string> probing_;                  // clusters whose relay is being probed
  std::map<std::uint64_t, std::unique_ptr<Job>> jobs_;
  Scheduler scheduler_{grid_};                    // which clusters are offered, where jobs go, which wait
  std::map<Scheduler::Ticket, PeerPtr> waiting_;  // the launchers of the jobs that wait
  Scheduler::Ticket next_ticket_ = 1;
  asio::steady_timer held_deadline_;  // a job held for the grid waits up to kGridWait
  asio::steady_timer recovery_;       // runs while jobs taken back wait for their relays and launchers
  bool recovering_ = false;
  std::set<std::uint64_t> dirty_;  // jobs whose state changed this turn (persist)
  std::uint64_t next_job_ = 1;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool stopped_ = false;
};

}  // namespace gridrt
