#include "broker/broker.h"
#include "broker/broker_jobs.h"

#include <openssl/rand.h>

#include <signal.h>

#include <algorithm>
#include <sstream>

#include "common/acceptor.h"
#include "common/messages.h"
#include "common/xml.h"

namespace gridrt {

using wire::Frame;
using wire::Type;

// How long a job submitted with wire::kSubmitWaitForGrid waits for missing clusters before it is
// mapped onto the clusters that did register.
constexpr auto kGridWait = std::chrono::seconds(15);
// How long the broker waits for a relay's link address to accept its probe connection.
constexpr auto kProbeTimeout = std::chrono::seconds(2);
// How long reports that clusters of a job cannot reach each other are gathered before the
// broker decides which cluster the job loses: long enough for the other ends of a broken
// link, and the broker's own connection to a relay that died, to say so too.
constexpr auto kUnreachableGrace = std::chrono::seconds(1);

namespace {
std::string random_secret() {
  unsigned char b[16];
  RAND_bytes(b, sizeof b);
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned char c : b) {
    s += hex[c >> 4];
    s += hex[c & 15];
  }
  return s;
}

// `text` in double quotes, its quotes and backslashes escaped (the journal escapes control
// characters): each argument reads back as it was, whatever it holds.
std::string quoted_argument(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// "0-2,5" from a sorted list of ranks.
std::string rank_ranges(const std::vector<std::uint32_t>& ranks) {
  std::ostringstream os;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    os << (i ? "," : "") << ranks[i];
    if (j > i) os << "-" << ranks[j];
    i = j + 1;
  }
  return os.str();
}
}  // namespace

Broker::Broker(asio::io_context& io, Grid grid, const tls::Credentials& creds, const tcp::endpoint& listen)
    : io_(io),
      grid_(std::move(grid)),
      tls_(tls::make_context(tls::Role::kServer, creds)),
      acceptor_(io, listen),
      held_deadline_(io),
      recovery_(io) {
  asio::co_spawn(io_, accept_loop(), asio::detached);
}

Broker::~Broker() { stop(); }

void Broker::prepare_for_strangers() {
  const std::size_t connections = limits::kDaemonPort.total + limits::kOtherConnections;
  raise_open_file_limit(connections);
  reserve_socket_state(io_, connections);
}

void Broker::set_journal(const std::string& path) {
  journal_ = Journal(path);
  next_job_ = std::max(next_job_, journal_.next_job_id());
  std::set<std::uint64_t> taken_back;
  for (const auto& [id, job] : jobs_) taken_back.insert(id);
  const auto cut_off =
      std::count_if(journal_.cut_off().begin(), journal_.cut_off().end(), [&](std::uint64_t id) { return !taken_back.count(id); });
  if (cut_off > 0)
    log::warn("the journal ", path, " holds ", cut_off,
              " job(s) that never ended (the broker stopped while they ran): they get their end line now");
  journal_.end_cut_off("the broker stopped while it ran (recorded when the broker started again)", taken_back);
}

void Broker::refuse_peer(const PeerPtr& peer, const std::string& what) {
  log::warn("refusing ", peer->link->peer(), ": ", what);
  journal_.record("refused " + peer->link->peer() + ": " + what);
  peer->link->fail(what);
}

bool Broker::flushed() const {
  return std::all_of(closing_.begin(), closing_.end(), [](const auto& l) { return l->closed(); });
}

void Broker::stop() {
  if (stopped_) return;
  stopped_ = true;
  boost::system::error_code ec;
  acceptor_.close(ec);
  held_deadline_.cancel();
  recovery_.cancel();
  dirty_.clear();
  for (auto& [id, job] : jobs_) {
    for (auto& p : job->parts)
      if (p.relay) p.relay->link->send(wire::make_frame(Type::kKillJob, "broker shutting down", id));
    journal_.record(Journal::ended(id) + "without a status: the broker was stopped while it ran (its relays were told to kill it)");
    job->end_journaled = true;  // whatever the relays report in the last moments
    store_.remove(id);          // not to be taken back: it is being killed
  }
  std::vector<PeerPtr> peers;
  for (auto& [name, p] : relays_) peers.push_back(p);
  for (auto& j : jobs_)
    if (j.second->launcher) peers.push_back(j.second->launcher);
  for (auto& p : peers) {
    p->link->close_after_flush("broker shutting down");
    closing_.push_back(p->link);
  }
}

asio::awaitable<void> Broker::accept_loop() {
  while (!stopped_) {
    tcp::socket socket(io_);
    if (co_await accept_next(
            acceptor_, socket, [this] { return strangers_.drop_oldest("out of file descriptors"); }, accept_failures_))
      co_return;
    tune_socket(socket);
    asio::co_spawn(io_, handshake(std::move(socket)), asio::detached);
  }
}

asio::awaitable<void> Broker::handshake(tcp::socket socket) {
  boost::system::error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  std::string who = remote.address().to_string() + ":" + std::to_string(remote.port());
  TlsStream stream(std::move(socket), tls_);
  // A peer that connects and says nothing must not hold a session forever, nor may many
  // such peers hold many.
  ec = co_await accept_tls(stream, strangers_, authenticate_);
  if (ec) {
    failed_handshakes_.warn("TLS handshake with ", who, " failed: ", ec.message());
    co_return;
  }
  const std::string cn = tls::peer_common_name(stream.native_handle());
  auto peer = std::make_shared<Peer>();
  peer->name = cn;
  peer->link = std::make_shared<TlsLink>(std::move(stream), who + " (" + cn + ")");
  log::info("connection from ", peer->link->peer());
  // Every peer hears that the broker is alive; relays are watched in turn once registered
  // (a launcher is not: a gridrun suspended with Ctrl-Z must not cost its user the job).
  peer->link->keep_alive(false);
  std::weak_ptr<Peer> weak = peer;
  peer->link->start(
      [this, weak](Frame& f) {
        if (auto p = weak.lock()) on_frame(p, f);
      },
      [this, peer](const std::string& why) { on_closed(peer, why); });
}

void Broker::on_frame(const PeerPtr& peer, Frame& f) {
  try {
    switch (f.header.type) {
      case Type::kRelayRegister: return handle_register(peer, f);
      case Type::kSubmit: return handle_submit(peer, f);
      case Type::kPartReady: return handle_part_ready(peer, f);
      case Type::kOutput: return handle_output(peer, f);
      case Type::kProcExitRank: return handle_rank_exit(peer, f);
      case Type::kPartDone: return handle_part_done(peer, f);
      case Type::kKillJob: return handle_cancel(peer, f);
      case Type::kStatus: return handle_status(peer);
      case Type::kClusterLost: return handle_unreachable(peer, f);
      case Type::kFinalizing: return handle_finalizing(peer, f);
      case Type::kAttachJob: return handle_attach(peer, f);
      case Type::kReplayOutput: return handle_replayed(peer, f);
      case Type::kFileWanted: return handle_file_wanted(peer, f);
      case Type::kFileData: return handle_file_data(peer, f);
      case Type::kError:
        if (peer->kind == Peer::Kind::kRelay && f.header.job != 0) return handle_relay_failure(peer, f);
        log::warn(peer->link->peer(), " reported an error: ", f.body);
        return;
      default: peer->link->fail(std::string("unexpected ") + wire::type_name(f.header.type) + " frame at the broker");
    }
  } catch (const wire::BadBody& e) {
    log::warn("dropping ", peer->link->peer(), ": bad ", wire::type_name(f.header.type), " body: ", e.what());
    peer->link->fail(std::string("bad ") + wire::type_name(f.header.type) + " body: " + e.what());
  }
}

void Broker::handle_register(const PeerPtr& peer, const Frame& f) {
  if (peer->kind != Peer::Kind::kUnknown) return peer->link->fail("RelayRegister on a connection already identified");
  RelayRegistration reg = RelayRegistration::decode(f.body);
  // Only the holder of "relay <cluster>" may speak for a cluster (docs/security.md).
  if (peer->name != tls::relay_name(reg.cluster))
    return refuse_peer(peer, "certificate '" + peer->name + "' may not register cluster '" + reg.cluster +
                                 "' (a relay's certificate must be named '" + tls::relay_name(reg.cluster) + "')");
  const ClusterDesc* desc = grid_.find(reg.cluster);
  if (!desc) return peer->link->fail("cluster '" + reg.cluster + "' is not in the broker's grid (" + grid_.source + ")");
  if (relays_.count(reg.cluster) || probing_.count(reg.cluster))
    return peer->link->fail("cluster '" + reg.cluster + "' already has a registered relay" +
                            (relays_.count(reg.cluster) ? " (" + relays_[reg.cluster]->link->peer() + ")" : std::string()));
  // The grid description says the rest of the cluster; the relay says where it listens.
  peer->kind = Peer::Kind::kRelay;
  peer->registration = reg;
  peer->link->keep_alive(true);  // a hung relay is a lost cluster
  peer->link->set_peer("relay " + reg.cluster + " [" + peer->link->peer() + "]");
  probing_.insert(reg.cluster);
  asio::co_spawn(io_, probe_and_register(peer), asio::detached);
}

// Before a relay joins, the broker checks the declared reachability of its link address
// by trying to connect to it, and trusts what it sees over the declaration: a
// front-end declared reachable that does not answer is treated as unreachable (other
// relays will not dial it; it dials them), and the other way round.
asio::awaitable<void> Broker::probe_and_register(PeerPtr peer) {
  const RelayRegistration& reg = peer->registration;
  const bool declared = grid_.find(reg.cluster)->network.frontend_reachable;
  boost::system::error_code ec;
  tcp::socket probe(io_);
  const tcp::endpoint ep(asio::ip::make_address(reg.link_host, ec), reg.link_port);
  if (!ec) {
    Deadline deadline(probe, kProbeTimeout);
    co_await probe.async_connect(ep, asio::redirect_error(asio::use_awaitable, ec));
  }
  const bool answered = !ec;
  probing_.erase(reg.cluster);
  if (peer->link->closed() || stopped_) co_return;
  if (answered != declared)
    log::warn("cluster ", reg.cluster, " is declared ", declared ? "reachable" : "unreachable", " but its relay's link address ", ep,
              answered ? " answers" : " does not answer", " the broker's probe: treating it as ", answered ? "reachable" : "unreachable");
  relays_[reg.cluster] = peer;
  scheduler_.relay_up(reg.cluster, reg.link_host, reg.link_port, answered);
  log::info("registered ", peer->link->peer(), " links at ", reg.link_host, ":", reg.link_port,
            answered ? " (answers probes)" : " (does not answer probes)");
  Frame registered = wire::make_frame(Type::kRegistered);
  if (store_.enabled()) registered.header.flags = wire::kTakesJobsBack;
  peer->link->send(registered);
  claim_parts(peer);
  try_held_submits(false);
}

void Broker::handle_submit(const PeerPtr& peer, const Frame& f) {
  if (peer->kind == Peer::Kind::kRelay || !tls::is_user_name(peer->name))
    return refuse_peer(peer, "only user certificates ('user NAME') may submit jobs; this one is '" + peer->name + "'");
  peer->kind = Peer::Kind::kLauncher;
  JobSpec spec = JobSpec::decode(f.body);
  const bool dry_run = f.header.flags & wire::kSubmitDryRun;
  if (const std::string why = staging_refusal(peer->name, spec); !why.empty()) return refuse(peer, spec, why, 2);
  if ((f.header.flags & wire::kSubmitWaitForGrid) && !scheduler_.every_relay_up()) {
    scheduler_.hold_for_grid({ticket_for(peer), std::move(spec), dry_run});
    if (scheduler_.held() == 1) {
      held_deadline_.expires_after(kGridWait);
      held_deadline_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) try_held_submits(true);
      });
    }
    return;
  }
  start_job(peer, std::move(spec), dry_run);
}

void Broker::try_held_submits(bool deadline_passed) {
  auto released = scheduler_.release_held(deadline_passed);
  if (released.empty()) return;
  held_deadline_.cancel();
  for (auto& w : released)
    if (const PeerPtr launcher = launcher_of(w.ticket)) start_job(launcher, std::move(w.spec), w.dry_run);
}

Scheduler::Ticket Broker::ticket_for(const PeerPtr& launcher) {
  waiting_[next_ticket_] = launcher;
  return next_ticket_++;
}

Broker::PeerPtr Broker::launcher_of(Scheduler::Ticket t) {
  const auto it = waiting_.find(t);
  if (it == waiting_.end()) return nullptr;
  PeerPtr launcher = std::move(it->second);
  waiting_.erase(it);
  return launcher->link->closed() ? nullptr : launcher;
}

// Refuses a job: tells the launcher why (it exits with `status`: 2 when the job is at fault,
// 1 when the grid is) and journals it.
void Broker::refuse(const PeerPtr& launcher, const JobSpec& spec, const std::string& why, int status) {
  Frame err = wire::make_frame(Type::kError, why);
  err.header.tag = status;
  journal_.record("refused job of " + launcher->name + " (" + spec.app_id + "): " + why);
  launcher->link->send(err);
  launcher->link->close_after_flush(why);
}

void Broker::start_job(const PeerPtr& launcher, JobSpec spec, bool dry_run) {
  Scheduler::Placement placed = scheduler_.place(spec, dry_run);
  if (placed.outcome == Scheduler::Placement::Outcome::kRefuse) return refuse(launcher, spec, placed.why, placed.status);
  if (placed.outcome == Scheduler::Placement::Outcome::kWait) {
    launcher->link->send(wire::make_frame(Type::kNotice, placed.why));
    scheduler_.queue({ticket_for(launcher), std::move(spec), false});
    return;
  }
  auto job = std::make_unique<Job>();
  job->topology = std::move(placed.topology);
  job->id = dry_run ? 0 : next_job_++;  // a dry run is not a job: it gets no id
  const std::string topo = [&] {
    wire::Writer w;
    job->topology.encode(w);
    return w.take();
  }();
  Frame accepted = wire::make_frame(Type::kJobAccepted, topo, job->id);
  if (store_.enabled()) accepted.header.flags = wire::kTakesJobsBack;
  launcher->link->send(accepted);
  if (dry_run) return;

  job->spec = std::move(spec);
  job->secret = random_secret();
  job->launcher = launcher;
  job->submitter = launcher->name;
  job->status.assign(job->topology.size(), -1);
  launcher->jobs.push_back(job->id);
  {  // journaled before any relay hears of it: a crash from here on leaves a started line
    std::ostringstream os;
    os << Journal::started(job->id) << "for " << launcher->name << " (" << launcher->link->peer() << "): app " << job->spec.app_id << ", "
       << job->topology.size() << " processes of " << job->spec.executable << " on";
    for (const auto& c : job->topology.clusters) os << ' ' << c.name << ':' << c.count;
    // Arguments in full; of the environment only the names (values may hold secrets).
    os << "; arguments [";
    for (std::size_t i = 0; i < job->spec.args.size(); ++i) os << (i ? ", " : "") << quoted_argument(job->spec.args[i]);
    os << "]; environment names [";
    for (std::size_t i = 0; i < job->spec.env.size(); ++i) os << (i ? ", " : "") << job->spec.env[i].first;
    os << "]";
    journal_.record(os.str());
  }
  for (std::uint32_t c = 0; c < job->topology.clusters.size(); ++c) {
    Part part;
    part.cluster = job->topology.clusters[c].name;
    part.relay = relays_.at(part.cluster);
    job->parts.push_back(std::move(part));
  }
  job->printed.assign(job->parts.size(), 0);
  try {
    store_.save_next_id(next_job_);
  } catch (const std::exception& e) { log::error(e.what(), " (job ids could repeat after a restart of the broker without its journal)"); }
  job->topology.model = model_;
  persist(*job, true);  // before any relay hears of it
  for (std::uint32_t c = 0; c < job->parts.size(); ++c) {
    PartStart start{job->id, job->secret, job->submitter, c, job->topology, job->spec};
    job->parts[c].relay->link->send(wire::make_frame(Type::kStartPart, start.encode(), job->id));
  }
  scheduler_.occupy(job->topology);
  log::info("job ", job->id, " (", job->spec.app_id, ") from ", launcher->link->peer(), ": ", job->topology.size(), " processes on ",
            job->topology.clusters.size(), " cluster(s)");
  jobs_[job->id] = std::move(job);
}

// Starts queued jobs in arrival order while the first fits (Scheduler::next_that_fits).
void Broker::start_queued() {
  while (auto next = scheduler_.next_that_fits())
    if (const PeerPtr launcher = launcher_of(next->ticket)) start_job(launcher, std::move(next->spec), false);
}

Broker::Job* Broker::job_of_relay_frame(const PeerPtr& peer, const Frame& f, Part** part) {
  if (peer->kind != Peer::Kind::kRelay) {
    refuse_peer(peer, std::string(wire::type_name(f.header.type)) + " is only accepted from a relay");
    return nullptr;
  }
  auto it = jobs_.find(f.header.job);
  if (it == jobs_.end()) return nullptr;  // a job that ended already: late frames are harmless
  bool on_its_cluster = false;
  for (auto& p : it->second->parts) {
    if (p.relay == peer) {
      *part = &p;
      return it->second.get();
    }
    on_its_cluster = on_its_cluster || p.cluster == peer->registration.cluster;
  }
  // Its cluster's part was given up when its earlier connection was lost: what it says again
  // now (resync_with_broker) comes too late to count.
  if (on_its_cluster) return nullptr;
  // A relay speaking for a job it has no part in is refused, and only it is dropped.
  refuse_peer(peer, std::string(wire::type_name(f.header.type)) + " for job " + std::to_string(f.header.job) +
                        ", which has no part on cluster " + peer->registration.cluster);
  return nullptr;
}

void Broker::handle_part_ready(const PeerPtr& peer, const Frame& f) {
  Part* part = nullptr;
  Job* job = job_of_relay_frame(peer, f, &part);
  if (!job) return;
  PartReady ready = PartReady::decode(f.body);
  const auto& cp = job->topology.clusters[static_cast<std::size_t>(part - job->parts.data())];
  if (ready.hostnames.size() != cp.count || ready.endpoints.size() != cp.count)
    return peer->link->fail("PartReady with a wrong number of hostnames or endpoints");
  // Said again to a broker that restarted: the topology was complete already, but this
  // part may not have received it.
  if (std::all_of(job->parts.begin(), job->parts.end(), [](const Part& p) { return p.ready; })) {
    wire::Writer w;
    job->topology.encode(w);
    return peer->link->send(wire::make_frame(Type::kTopology, w.take(), job->id));
  }
  part->ready = true;
  part->hostnames = std::move(ready.hostnames);
  part->endpoints = std::move(ready.endpoints);
  for (const auto& p : job->parts)
    if (!p.ready) return stop_if_stuck(*job);
  // Every process said hello: node colors can now be assigned, one per (cluster, host) --
  // a node belongs to one cluster, even where two emulated clusters share a machine.
  Topology& t = job->topology;
  std::vector<std::pair<std::string, std::string>> seen;  // (cluster, host) by node color
  t.nodes.clear();
  t.rank_node.clear();
  t.rank_endpoint.clear();
  for (const auto& p : job->parts) t.rank_endpoint.insert(t.rank_endpoint.end(), p.endpoints.begin(), p.endpoints.end());
  for (const auto& p : job->parts)
    for (const auto& host : p.hostnames) {
      const auto key = std::make_pair(p.cluster, host);
      auto it = std::find(seen.begin(), seen.end(), key);
      if (it == seen.end()) {
        it = seen.insert(seen.end(), key);
        t.nodes.push_back(host);
      }
      t.rank_node.push_back(static_cast<std::uint32_t>(it - seen.begin()));
    }
  persist(*job, true);
  wire::Writer w;
  t.encode(w);
  const Frame topo = wire::make_frame(Type::kTopology, w.take(), job->id);
  for (auto& p : job->parts)
    if (p.relay) p.relay->link->send(topo);
  if (job->launcher) job->launcher->link->send(topo);  // for gridrun --explain
}

// A part that ended without all its processes joining (gridrt::init), or one of whose
// processes ended before joining, while another part's processes all joined and wait for
// the topology: they would wait until their timeout. Stop them, naming who left. Checked
// when a part gets ready, when one ends and when a rank's exit is reported.
void Broker::stop_if_stuck(Job& job) {
  if (job.killed) return;
  bool waiting = false;
  for (const auto& p : job.parts) waiting = waiting || (p.ready && !p.done);
  if (!waiting) return;
  for (std::size_t i = 0; i < job.parts.size(); ++i) {
    const Part& p = job.parts[i];
    if (p.ready) continue;
    std::string why;
    if (p.done) why = "the processes of cluster " + p.cluster + " ended before all of them joined the job (gridrt::init)";
    const ClusterPart& cp = job.topology.clusters[i];
    for (std::uint32_t r = cp.first_rank; r < cp.first_rank + cp.count && why.empty(); ++r)
      if (job.status[r] != -1)
        why = "rank " + std::to_string(r) + " (cluster " + p.cluster + ") exited with status " + std::to_string(job.status[r]) +
              " before it joined the job (it never called gridrt::init or MPI_Init) while others waited for it";
    if (why.empty()) continue;
    if (job.first_failure == 0) job.first_failure = 1;
    return fail_job(job, why);
  }
}

// A relay stopped its part of a job for a reason of its own (a lost relay link, ...): the
// whole job stops, and that reason is what the user is told.
void Broker::handle_relay_failure(const PeerPtr& peer, const Frame& f) {
  Part* part = nullptr;
  Job* job = job_of_relay_frame(peer, f, &part);
  if (!job) return;
  log::warn("job ", job->id, ": cluster ", part->cluster, " stopped it: ", f.body);
  // The status the relay asks the job to end with (a rank's MPI_Abort(comm, 0) asks for 0,
  // so that the job ends as its program said).
  if (job->first_failure == 0) job->first_failure = wire::ending_status(f.header.seq);
  fail_job(*job, "cluster " + part->cluster + ": " + f.body);
  persist(*job);
}

// A relay reports that its cluster's part of a job cannot reach cluster `tag` any more: the
// relay link between them, or a direct connection between their processes, was lost. A job
// that may go on without a cluster loses one of the two (settle_unreachable); any other job
// stops, as on any failure.
void Broker::handle_unreachable(const PeerPtr& peer, const Frame& f) {
  Part* part = nullptr;
  Job* job = job_of_relay_frame(peer, f, &part);
  if (!job) return;
  const auto from = static_cast<std::size_t>(part - job->parts.data());
  const auto to = static_cast<std::size_t>(f.header.tag);
  if (f.header.tag < 0 || to >= job->parts.size() || to == from)
    return peer->link->fail("ClusterLost for job " + std::to_string(job->id) + " names cluster index " + std::to_string(f.header.tag) +
                            ", not another cluster of the job");
  const std::string what = "cluster " + part->cluster + " " + f.body;  // "cluster a lost the link to cluster c (...)"
  if (!job->spec.survive_cluster_loss) {
    if (job->first_failure == 0) job->first_failure = 1;
    return fail_job(*job, what);
  }
  log::warn("job ", job->id, ": ", what);
  job->unreachable.push_back({from, to, what});
  if (job->unreachable_pending) return;
  job->unreachable_pending = true;
  if (!job->unreachable_timer) job->unreachable_timer = std::make_unique<asio::steady_timer>(io_);
  job->unreachable_timer->expires_after(kUnreachableGrace);
  job->unreachable_timer->async_wait([this, id = job->id](const boost::system::error_code& ec) {
    if (ec) return;  // the job ended (its timer went with it), or the broker stopped
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return;
    it->second->unreachable_pending = false;
    settle_unreachable(*it->second);
  });
}

// The reports of a grace period weighed together (broker/cluster_loss.h). A cluster whose
// relay is gone was lost already (on_closed), and a part that finished has nothing more to
// send: reports about those are settled, and all are once the job is stopping.
void Broker::settle_unreachable(Job& job) {
  const auto settled = [&](std::size_t p) { return job.killed || job.parts[p].lost || job.parts[p].done; };
  while (const auto loss = next_cluster_to_lose(job.unreachable, job.parts.size(), settled))
    lose_part(job, loss->lose, "cut off from cluster " + job.parts[loss->other].cluster + " (" + loss->what + ")");
}

// Finalize's barrier in a job that goes on without lost clusters. A barrier among the
// processes cannot end well when a cluster is lost while others wait in it (some may have
// passed it, some not: they cannot agree among themselves which clusters took part), so the
// broker, which decides which clusters are lost, decides here too: each part's leader says
// when all its processes are in finalize, and once every part not lost has (or has ended),
// every part is told to leave.
void Broker::handle_finalizing(const PeerPtr& peer, const Frame& f) {
  Part* part = nullptr;
  Job* job = job_of_relay_frame(peer, f, &part);
  if (!job) return;
  if (!job->spec.survive_cluster_loss)
    return peer->link->fail("Finalizing for job " + std::to_string(job->id) + ", which does not go on without lost clusters");
  part->finalizing = true;
  release_finalize(*job);
  persist(*job);
}

void Broker::release_finalize(Job& job) {
  if (job.killed || job.finalize_released) return;
  for (const auto& p : job.parts)
    if (!p.finalizing && !p.lost && !p.done) return;
  if (std::none_of(job.parts.begin(), job.parts.end(), [](const Part& p) { return p.finalizing; })) return;
  job.finalize_released = true;
  for (auto& p : job.parts)
    if (p.finalizing && !p.lost && !p.done && p.relay) p.relay->link->send(wire::make_frame(Type::kFinalizing, {}, job.id));
}

void Broker::handle_output(const PeerPtr& peer, Frame& f) {
  Part* part = nullptr;
  Job* job = job_of_relay_frame(peer, f, &part);
  if (!job || !job->launcher) return;
  f.header.context = static_cast<std::uint32_t>(part - job->parts.data());  // the cluster, for rank -1 lines
  job->launcher->link->send(f);
}

void Broker::handle_rank_exit(const PeerPtr& peer, const Frame& f) {
  Part* part = nullptr;
  Job* job = job_of_relay_frame(peer, f, &part);
  if (!job) return;
  const auto& cp = job->topology.clusters[static_cast<std::size_t>(part - job->parts.data())];
  const auto rank = static_cast<std::uint32_t>(f.header.src);
  if (rank < cp.first_rank || rank >= cp.first_rank + cp.count) return peer->link->fail("exit status for a rank of another cluster");
  record_exit(*job, rank, f.header.tag);
  persist(*job);
}

void Broker::record_exit(Job& job, std::uint32_t rank, int status) {
  if (job.status[rank] != -1) return;
  job.status[rank] = status;
  const std::size_t part = job.topology.cluster_of(rank);
  if (status == 0 && !job.parts[part].ready) stop_if_stuck(job);
  if (status == 0 || job.parts[part].lost) return;
  const std::string what = "rank " + std::to_string(rank) + " (cluster " + job.parts[part].cluster + ")" +
                           (status > 128 && status < 160 ? " killed by signal " + std::to_string(status - 128)
                                                         : " exited with status " + std::to_string(status));
  if (job.spec.survive_cluster_loss && !job.killed) return lose_part(job, part, what);
  // (Once the job is being stopped, its status is decided: the ranks killed now do not
  // change it, also when it is 0 as a rank's MPI_Abort(comm, 0) asked.)
  if (job.first_failure == 0 && !job.killed) {
    job.first_failure = status;
    job.first_failed_rank = rank;
    // As mpiexec does: one failed process ends the job, so that no rank waits forever on it.
    fail_job(job, what);
  }
}

// A job whose profile lets it go on without a failed cluster: that cluster's part is
// stopped, the other parts are told (their runtimes fail what waits on it, and a task queue
// hands its tasks to the others), the user is told; the job's status is then that of the
// other parts. With every part lost there is nothing to go on with: the job fails.
void Broker::lose_part(Job& job, std::size_t part, const std::string& why) {
  Part& lost = job.parts[part];
  lost.lost = true;
  job.lost_notes.push_back(why);
  const bool all_lost = std::all_of(job.parts.begin(), job.parts.end(), [](const Part& p) { return p.lost; });
  if (all_lost) {
    job.first_failure = job.first_failure ? job.first_failure : 1;
    return fail_job(job, "every cluster was lost, the last: " + why);
  }
  log::warn("job ", job.id, ": lost cluster ", lost.cluster, ": ", why, "; going on without it");
  if (job.launcher)
    job.launcher->link->send(
        wire::make_frame(Type::kNotice, "lost cluster " + lost.cluster + ": " + why + "; the job goes on without it", job.id));
  if (!lost.done && lost.relay) lost.relay->link->send(wire::make_frame(Type::kKillJob, "cluster lost: " + why, job.id));
  for (auto& p : job.parts) {
    if (&p == &lost || p.done || !p.relay) continue;
    Frame f = wire::make_frame(Type::kClusterLost, why, job.id);
    f.header.tag = static_cast<std::int32_t>(part);
    p.relay->link->send(f);
  }
  release_finalize(job);  // the others may all be waiting in finalize for this one
}

void Broker::fail_job(Job& job, const std::string& why) {
  if (job.killed) return;
  job.killed = true;
  job.failure_note = why;
  log::info("job ", job.id, " stopping: ", why);
  for (auto& p : job.parts)
    if (!p.done && p.relay) p.relay->link->send(wire::make_frame(Type::kKillJob, why, job.id));
}

// A user cancels their own job — from the connection that submitted it (gridrun's Ctrl-C) or
// from any other holding the same user certificate: the job stops everywhere and ends as
// usual, with JobEnd to its launcher once every part is done. Anyone else is refused.
void Broker::handle_cancel(const PeerPtr& peer, const Frame& f) {
  auto it = jobs_.find(f.header.job);
  // (A submitter's name is a user's: a relay's certificate never matches it.)
  const bool owner = it != jobs_.end() && peer->name == it->second->submitter;
  const bool admin = tls::is_admin_name(peer->name);
  if (!owner && !(admin && it != jobs_.end()))
    return refuse_peer(peer, "KillJob: no job " + std::to_string(f.header.job) + (admin ? "" : " of yours") + " is running");
  Job& job = *it->second;
  if (job.first_failure == 0) job.first_failure = 128 + SIGINT;
  const std::string by = peer == job.launcher ? "the user"
                         : owner              ? peer->name + " from another connection"
                                              : "the grid's administrator " + peer->name;
  journal_.record("job " + std::to_string(job.id) + " cancelled by " + peer->name + " (" + peer->link->peer() + ")");
  // A cancel from elsewhere (gridrun cancel) is answered; the job's own gridrun learns of it
  // from the job's end.
  if (peer != job.launcher)
    peer->link->send(wire::make_frame(Type::kNotice, "job " + std::to_string(job.id) + " is being cancelled on every cluster", job.id));
  fail_job(job, "cancelled by " + by + (f.body.empty() ? std::string() : " (" + f.body + ")"));
  persist(job);
}

// The grid as it stands (gridrun status): clusters, their relays and slots, the running jobs
// with their owners, as a batch system shows its queue to all its users. Users only.
void Broker::handle_status(const PeerPtr& peer) {
  if (peer->kind == Peer::Kind::kRelay || !(tls::is_user_name(peer->name) || tls::is_admin_name(peer->name)))
    return refuse_peer(peer, "only user and admin certificates ('user NAME', 'admin NAME') may ask for the grid's status; this one is '" +
                                 peer->name + "'");
  const auto now = std::chrono::steady_clock::now();
  auto seconds = [&](std::chrono::steady_clock::time_point since) {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(now - since).count());
  };
  GridStatus st;
  for (const auto& c : grid_.clusters) {
    GridStatus::Cluster out;
    out.name = c.name;
    out.site = c.site;
    out.slots = c.slots;
    out.busy = scheduler_.busy(c.name);
    if (auto r = relays_.find(c.name); r != relays_.end()) {
      out.relay_up = true;
      out.relay = r->second->link->peer();
    }
    st.clusters.push_back(std::move(out));
  }
  for (const auto& [id, job] : jobs_) {
    GridStatus::Job out;
    out.id = id;
    out.owner = job->submitter;
    out.application = job->spec.app_id;
    out.processes = job->topology.size();
    for (const auto& c : job->topology.clusters) out.clusters.push_back(c.name);
    out.age_s = seconds(job->since);
    st.jobs.push_back(std::move(out));
  }
  st.waiting = static_cast<std::uint32_t>(scheduler_.waiting());
  st.up_s = seconds(started_);
  st.takes_jobs_back = store_.enabled();
  peer->link->send(wire::make_frame(Type::kStatus, st.encode()));
  peer->link->close_after_flush("status sent");
}

void Broker::handle_part_done(const PeerPtr& peer, const Frame& f) {
  Part* part = nullptr;
  Job* job = job_of_relay_frame(peer, f, &part);
  if (!job) return;
  PartDone done = PartDone::decode(f.body);
  const auto& cp = job->topology.clusters[static_cast<std::size_t>(part - job->parts.data())];
  if (done.statuses.size() != cp.count) return peer->link->fail("PartDone with a wrong number of statuses");
  if (!done.message.empty() && job->launcher)
    job->launcher->link->send(wire::make_frame(Type::kError, "cluster " + cp.name + ": " + done.message, job->id));
  for (std::uint32_t i = 0; i < cp.count; ++i) record_exit(*job, cp.first_rank + i, static_cast<int>(done.statuses[i]));
  part->done = true;
  stop_if_stuck(*job);
  persist(*job);
  maybe_finish(*job);
}

void Broker::maybe_finish(Job& job) {
  for (const auto& p : job.parts)
    if (!p.done || p.replay_pending) return;
  // A job taken back ends once its launcher is back to hear it, with the output of every
  // part whose relay may still come back (or once the recovery grace is over).
  if (job.restored && recovering_ &&
      (!job.launcher || std::any_of(job.parts.begin(), job.parts.end(), [](const Part& p) { return !p.relay && !p.given_up; })))
    return;
  JobEnd end;
  end.status = job.first_failure;
  if (end.status != 0) {
    // "job 3 failed: rank 2 exited with status 7; then rank(s) 0-1 killed by signal 15"
    std::map<int, std::vector<std::uint32_t>> others;
    for (std::uint32_t r = 0; r < job.status.size(); ++r)
      if (job.status[r] != 0 && r != job.first_failed_rank) others[job.status[r]].push_back(r);
    std::ostringstream os;
    os << "job " << job.id << " failed: " << job.failure_note;
    const char* sep = "; then";
    for (const auto& [st, ranks] : others) {
      os << sep << " rank" << (ranks.size() > 1 ? "s " : " ") << rank_ranges(ranks);
      if (st > 128 && st < 160) os << " killed by signal " << st - 128;
      else os << " exited with status " << st;
      sep = ",";
    }
    end.summary = os.str();
  } else if (!job.lost_notes.empty()) {
    std::ostringstream os;
    os << "job " << job.id << " finished without the cluster" << (job.lost_notes.size() > 1 ? "s it lost: " : " it lost: ");
    for (std::size_t i = 0; i < job.lost_notes.size(); ++i) os << (i ? "; " : "") << job.lost_notes[i];
    end.summary = os.str();
  }
  log::info("job ", job.id, " ended with status ", end.status);
  if (!job.end_journaled)
    journal_.record(Journal::ended(job.id) + "with status " + std::to_string(end.status) + (end.summary.empty() ? "" : ": " + end.summary));
  if (job.launcher) job.launcher->link->send(wire::make_frame(Type::kJobEnd, end.encode(), job.id));
  scheduler_.release(job.topology);
  store_.remove(job.id);
  dirty_.erase(job.id);
  jobs_.erase(job.id);
  start_queued();
}

// A part's relay is gone (lost, or not back after a restart): its ranks not yet accounted
// for count as lost (255); the job goes on without the cluster if it may, else it stops, so
// that nobody waits for a cluster that is gone.
void Broker::relay_gone(Job& job, std::size_t part, const std::string& what) {
  Part& p = job.parts[part];
  const auto& cp = job.topology.clusters[part];
  for (std::uint32_t r = cp.first_rank; r < cp.first_rank + cp.count; ++r)
    if (job.status[r] == -1) job.status[r] = 255;
  p.done = true;
  p.relay.reset();
  p.given_up = true;
  p.replay_pending = false;
  if (p.lost) return;
  if (job.spec.survive_cluster_loss && !job.killed) return lose_part(job, part, what);
  if (job.first_failure == 0) job.first_failure = 255;
  fail_job(job, what);
}

void Broker::on_closed(const PeerPtr& peer, const std::string& why) {
  log::info("connection ", peer->link->peer(), " closed: ", why);
  if (peer->kind == Peer::Kind::kRelay) {
    auto it = relays_.find(peer->registration.cluster);
    if (it != relays_.end() && it->second == peer) {
      relays_.erase(it);
      scheduler_.relay_down(peer->registration.cluster);
    }
    // Every job with a part on that cluster has lost it: its ranks count as failed, and the
    // job goes on without it if it may, else the other parts are stopped, so that nobody
    // waits for a cluster that is gone.
    std::vector<std::uint64_t> ids;
    for (auto& [id, job] : jobs_) ids.push_back(id);
    for (auto id : ids) {
      auto jt = jobs_.find(id);
      if (jt == jobs_.end()) continue;
      Job& job = *jt->second;
      for (std::size_t c = 0; c < job.parts.size(); ++c) {
        Part& p = job.parts[c];
        if (p.relay != peer) continue;
        if (p.done) {  // nothing more to hear from it but what it owed a replay
          p.relay.reset();
          p.given_up = true;
          p.replay_pending = false;
          continue;
        }
        relay_gone(job, c, "lost the relay of cluster " + p.cluster + " (" + why + ")");
      }
      persist(job);
      maybe_finish(job);
    }
  } else if (peer->kind == Peer::Kind::kLauncher) {
    for (auto id : peer->jobs) {
      auto jt = jobs_.find(id);
      if (jt == jobs_.end()) continue;
      if (jt->second->launcher != peer) continue;  // it came back on another connection
      jt->second->launcher.reset();
      if (jt->second->first_failure == 0) jt->second->first_failure = 255;
      fail_job(*jt->second, "the submitting launcher disconnected");
      persist(*jt->second);
    }
  }
  for (auto it = waiting_.begin(); it != waiting_.end();)
    if (it->second == peer) {
      scheduler_.forget(it->first);
      it = waiting_.erase(it);
    } else {
      ++it;
    }
}

}  // namespace gridrt
