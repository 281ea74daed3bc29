#include "relay/relay.h"
#include "relay/relay_parts.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "common/acceptor.h"
#include "common/ladder.h"
#include "common/messages.h"
#include "common/process.h"

namespace gridrt {

using wire::Frame;
using wire::Type;

Relay::Relay(asio::io_context& io, Options opt)
    : io_(io),
      own_link_io_(opt.link_thread ? std::make_unique<asio::io_context>() : nullptr),
      link_io_(own_link_io_ ? *own_link_io_ : io),
      opt_(std::move(opt)),
      tls_server_(tls::make_context(tls::Role::kServer, opt_.creds)),
      tls_client_(tls::make_context(tls::Role::kClient, opt_.creds)),
      link_acceptor_(io, parse_endpoint(opt_.cluster.link)),
      local_acceptor_(io, parse_endpoint(opt_.cluster.local)),
      child_signal_(io, SIGCHLD),
      broker_grace_(io) {}

Relay::~Relay() {
  stop();
  // Handlers still queued on the main loop may hold relay links, whose timers belong to the
  // link thread's loop, which goes with this object: they run now (all of them see a
  // stopped relay), so that no link outlives the loop it was made on.
  io_.restart();
  io_.poll();
}

void Relay::prepare_for_strangers() {
  const std::size_t local = limits::kLocalPort.total + limits::kOtherConnections,
                    link = limits::kDaemonPort.total + limits::kOtherConnections;
  raise_open_file_limit(local + link);
  reserve_socket_state(io_, local);      // local connections (and link ones, until moved)
  reserve_socket_state(link_io_, link);  // relay links
}

namespace {
// When the launch command's program is an mpiexec or mpirun that is not MPICH's hydra, what
// it is, from its own --version ("mpiexec (OpenRTE) 4.1.4" is Open MPI's, whose options
// differ: its every job would fail with "unknown option"); "" otherwise (hydra, a launcher
// of another name such as srun, or a program that cannot be started, reported at launch).
std::string other_mpis_mpiexec(const std::vector<std::string>& launch) {
  if (launch.empty()) return "";
  const std::string name = std::filesystem::path(launch[0]).filename();
  if (name.rfind("mpiexec", 0) != 0 && name.rfind("mpirun", 0) != 0) return "";
  const std::string said = output_of({launch[0], "--version"}, std::chrono::seconds(10));
  if (said.empty() || said.find("HYDRA") != std::string::npos) return "";
  std::string first = said.substr(0, said.find('\n'));
  if (first.size() > 120) first.resize(120);
  const std::string where = launch[0].find('/') == std::string::npos ? " (" + find_on_path(launch[0]) + ")" : "";
  return launch[0] + where + " is not MPICH's: it says \"" + first + "\"";
}
}  // namespace

void Relay::start() {
  log::set_component("relay " + opt_.cluster.name);
  // The bare word mpiexec in a launch command means MPICH's, which gridrt runs on: where
  // Debian's own name for it, mpiexec.mpich, is on PATH, that is what starts the parts.
  // Debian's `mpiexec` is an alternative that becomes Open MPI's once any package depending
  // on Open MPI is installed, and it then refuses MPICH's options (`unknown option
  // "-launcher"`). A launch command that names another path is run as written.
  std::vector<std::string>& launch = opt_.cluster.launch;
  if (!launch.empty() && launch[0] == "mpiexec") {
    if (const std::string mpich = find_on_path("mpiexec.mpich"); !mpich.empty()) {
      launch[0] = "mpiexec.mpich";
      log::info("launch: mpiexec is MPICH's ", mpich, " (Debian's mpiexec may be another MPI's)");
    }
  }
  if (const std::string other = other_mpis_mpiexec(launch); !other.empty())
    throw std::runtime_error("cluster " + opt_.cluster.name + ": the launch command's " + other +
                             "; gridrt runs on MPICH: name MPICH's mpiexec (Debian's mpiexec.mpich) in <launch>");
  child_signal_.async_wait([this](const boost::system::error_code& ec, int) {
    if (!ec) on_child_signal();
  });
  if (own_link_io_) {
    link_work_.emplace(link_io_.get_executor());
    link_thread_ = std::thread([this] { link_io_.run(); });
  }
  asio::co_spawn(io_, accept_local(), asio::detached);
  asio::co_spawn(io_, accept_links(), asio::detached);
  asio::co_spawn(io_, broker_loop(), asio::detached);
}

void Relay::stop() {
  if (stopped_) return;
  stopped_ = true;
  // Ask running jobs to stop (mpiexec cleans up its proxies on SIGTERM), give them a
  // moment, then kill whatever of theirs is left, wherever it is (signal_by_environment).
  bool running = false;
  for (auto& [id, job] : jobs_)
    if (job->mpiexec > 0 && !job->end.launch_exited) {
      signal_tree(job->mpiexec, SIGTERM);
      running = true;
    }
  for (int i = 0; running && i < 100; ++i) {
    running = false;
    for (auto& [id, job] : jobs_)
      if (job->mpiexec > 0 && !job->end.launch_exited) {
        if (::waitpid(job->mpiexec, nullptr, WNOHANG) == job->mpiexec) job->end.launch_exited = true;
        else running = true;
      }
    if (running) ::usleep(10000);
  }
  for (auto& [id, job] : jobs_) {
    if (job->mpiexec > 0 && !job->end.launch_exited) signal_tree(job->mpiexec, SIGKILL);
    signal_by_environment("GRIDRT_SECRET=" + job->start.secret, SIGKILL);
    if (job->in_cgroup) opt_.cgroups->kill(id);
  }
  boost::system::error_code ec;
  link_acceptor_.close(ec);
  local_acceptor_.close(ec);
  child_signal_.cancel();
  if (broker_) broker_->close("relay stopping");
  // Relay links close on their own thread, which stops right after: a handshake still
  // under way is abandoned, not waited for.
  std::vector<std::shared_ptr<TlsLink>> links;
  for (auto& [name, l] : links_) {
    if (l->link) links.push_back(l->link);
    if (l->emulated) l->emulated->stop();
    if (l->grace) l->grace->cancel();
    if (l->redial) l->redial->cancel();
  }
  if (!own_link_io_) {
    for (auto& l : links) l->close("relay stopping");
  } else {
    asio::post(link_io_, [this, links] {
      for (auto& l : links) l->close("relay stopping");
      link_io_.stop();
    });
  }
  link_work_.reset();
  if (link_thread_.joinable()) link_thread_.join();
  for (auto& [id, job] : jobs_) {
    for (auto& c : job->procs)
      if (c) c->link->close("relay stopping");
    for (auto& c : job->monitors)
      if (c) c->link->close("relay stopping");
    if (job->timer) job->timer->cancel();
  }
  broker_grace_.cancel();
}

// ---------------------------------------------------------------- broker

asio::awaitable<void> Relay::broker_loop() {
  bool warned = false;
  while (!stopped_) {
    boost::system::error_code ec;
    TlsStream stream(io_, tls_client_);
    ec = co_await connect_tls(stream, opt_.broker, kHandshakeTimeout);
    std::string why = ec ? ec.message() : "";
    // The grid CA signed it, but is it the broker? (docs/security.md: names are roles)
    if (!ec && tls::peer_common_name(stream.native_handle()) != tls::kBrokerName)
      why = "it presents a certificate named '" + tls::peer_common_name(stream.native_handle()) + "', not '" + tls::kBrokerName + "'";
    if (!why.empty()) {
      if (!warned) log::warn("cannot reach the broker at ", opt_.broker, ": ", why, "; retrying every second");
      warned = true;
      asio::steady_timer t(io_, std::chrono::seconds(1));
      co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    warned = false;
    auto link = std::make_shared<TlsLink>(std::move(stream), "broker");
    link->keep_alive(true);  // a hung broker is a lost broker
    broker_ = link;
    auto closed = std::make_shared<asio::steady_timer>(io_, std::chrono::steady_clock::time_point::max());
    link->start([this](Frame& f) { on_broker_frame(f); },
                [this, closed](const std::string& why) {
                  lost_broker(why);
                  closed->cancel();
                });
    RelayRegistration reg;
    reg.cluster = opt_.cluster.name;
    reg.link_host = link_endpoint().address().to_string();
    reg.link_port = link_endpoint().port();
    for (const auto& [id, job] : jobs_) reg.jobs.push_back(id);
    forget_old_parts();
    for (const auto& [id, done] : finished_) reg.jobs.push_back(id);
    link->send(wire::make_frame(Type::kRelayRegister, reg.encode()));
    co_await closed->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) co_return;
    asio::steady_timer t(io_, std::chrono::seconds(1));
    co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

// Frames for the broker go only to a broker that accepted this relay; while there is none,
// what it must learn is kept in the jobs' state and said again once one is back
// (resync_with_broker).
void Relay::to_broker(const Frame& f) {
  if (broker_ && registered_) broker_->send(f);
}

void Relay::report_to_broker(Job& job, const Frame& f) {
  job.reports.push_back(f);
  to_broker(f);
}

void Relay::send_output(Job& job, Frame& f) {
  job.output.append(f);
  if (job.output_live) to_broker(f);
}

// Jobs outlive a lost broker for a while (Options::broker_grace): a broker that restarts
// takes them back from the state it wrote ahead. Their processes carry on among themselves
// (nothing on the data path passes the broker); their output is kept (OutputLog) and what
// the broker must learn is said again when it is back.
void Relay::lost_broker(const std::string& why) {
  const bool was_registered = std::exchange(registered_, false);
  if (stopped_) return;
  if (jobs_.empty()) return log::info("lost the broker: ", why);
  if (was_registered && !broker_takes_jobs_back_) {
    // Nobody could take the jobs back (the broker keeps no state): they stop now rather
    // than run unobserved.
    log::warn("lost the broker: ", why);
    for (auto& [id, job] : jobs_) kill_job(*job, "lost the broker");
    return;
  }
  if (!was_registered && broker_grace_.expiry() > std::chrono::steady_clock::now()) return;  // already waiting
  const auto grace = std::chrono::duration_cast<std::chrono::seconds>(opt_.broker_grace).count();
  log::warn("lost the broker: ", why, "; its ", jobs_.size(), " job(s) here keep running for up to ", grace, " s while it comes back");
  for (auto& [id, job] : jobs_) job->output_live = false;
  broker_grace_.expires_after(opt_.broker_grace);
  broker_grace_.async_wait([this, grace](const boost::system::error_code& ec) {
    if (ec || registered_ || stopped_) return;
    for (auto& [id, job] : jobs_) kill_job(*job, "lost the broker for " + std::to_string(grace) + " s");
  });
}

void Relay::forget_old_parts() {
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(finished_, [&](const auto& e) { return e.second.until < now; });
}

// Registered again (with a broker that may have restarted and lost what was in flight): it
// hears again what it must know of each job still here, in an order it can take twice.
void Relay::resync_with_broker() {
  broker_grace_.cancel();
  forget_old_parts();
  for (auto& [id, job] : jobs_) {
    ask_files_again(*job);
    if (job->hellos == job->count && job->topology.empty())
      to_broker(wire::make_frame(Type::kPartReady, PartReady{job->hostnames, job->endpoints}.encode(), id));
    for (std::uint32_t i = 0; i < job->count; ++i)
      if (job->end.rank_status[i] != -1) {
        Frame f = wire::make_frame(Type::kProcExitRank, {}, id);
        f.header.src = static_cast<std::int32_t>(job->first + i);
        f.header.tag = job->end.rank_status[i];
        to_broker(f);
      }
    for (const auto& r : job->reports) to_broker(r);
  }
  for (const auto& [id, done] : finished_) to_broker(done.part_done);
}

// The broker asks for a job's output again, from after the last line its launcher printed
// (it restarted, or the launcher reconnected); then this part's lines flow as they come.
void Relay::handle_replay(const Frame& f) {
  const OutputLog* log = nullptr;
  Job* job = nullptr;
  if (auto it = jobs_.find(f.header.job); it != jobs_.end()) {
    job = it->second.get();
    log = &job->output;
  } else if (auto ft = finished_.find(f.header.job); ft != finished_.end()) {
    log = &ft->second.output;
  }
  if (log) {
    std::uint64_t dropped = 0;
    const auto frames = log->after(f.header.seq, &dropped);
    if (dropped > 0) {
      Frame note = wire::make_frame(Type::kOutput,
                                    std::to_string(dropped) + " line(s) of this cluster's output were not kept while the broker was away",
                                    f.header.job);
      note.header.flags = kStderr;
      note.header.src = -1;
      note.header.seq = 0;  // not a numbered line: printed whatever was printed before
      to_broker(note);
    }
    for (const auto& o : frames) to_broker(o);
  }
  if (job) job->output_live = true;
  to_broker(wire::make_frame(Type::kReplayOutput, {}, f.header.job));
}

void Relay::on_broker_frame(Frame& f) {
  try {
    switch (f.header.type) {
      case Type::kRegistered:
        registered_ = true;
        broker_takes_jobs_back_ = (f.header.flags & wire::kTakesJobsBack) != 0;
        log::notice("cluster ", opt_.cluster.name, " registered with the broker at ", opt_.broker);
        return resync_with_broker();
      case Type::kError:
        log::error("the broker refused this relay: ", f.body);
        if (!registered_ && on_fatal) on_fatal(f.body);
        return;
      case Type::kStartPart: return handle_start(f);
      case Type::kTopology: return handle_topology(f);
      case Type::kClusterLost:
      case Type::kFinalizing: return tell_processes(f);
      case Type::kKillJob: return handle_kill(f);
      case Type::kReplayOutput: return handle_replay(f);
      case Type::kFileData: return handle_file_data(f);
      default: log::warn("ignoring unexpected ", wire::type_name(f.header.type), " frame from the broker");
    }
  } catch (const wire::BadBody& e) {
    log::error("bad ", wire::type_name(f.header.type), " from the broker: ", e.what());
    broker_->fail(std::string("bad body: ") + e.what());
  }
}

void Relay::handle_start(const Frame& f) {
  auto job = std::make_unique<Job>();
  job->start = PartStart::decode(f.body);
  const ClusterPart& me = job->topo().clusters[job->start.cluster];
  if (me.name != opt_.cluster.name) {
    log::error("StartPart for cluster ", me.name, " sent to ", opt_.cluster.name);
    return;
  }
  if (jobs_.count(job->id())) return;
  job->first = me.first_rank;
  job->count = me.count;
  job->procs.resize(me.count);
  job->monitors.resize(me.count);
  job->hostnames.resize(me.count);
  job->endpoints.resize(me.count);
  job->unfinalized.assign(me.count, {});
  job->end.rank_status.assign(me.count, -1);
  job->wan_sent.assign(me.count, {0, 0});
  // Output is kept for a replay only where a broker may come back for it.
  job->output = OutputLog(broker_takes_jobs_back_ ? OutputLog::kDefaultBudget : 0);
  Job& j = *job;
  jobs_[j.id()] = std::move(job);
  ensure_links(j);
  prepare_part(j);
}

void Relay::handle_topology(const Frame& f) {
  auto it = jobs_.find(f.header.job);
  // A restarted broker may publish it again: the processes have it already.
  if (it == jobs_.end() || !it->second->topology.empty()) return;
  it->second->topology = f.body;
  tell_processes(f);
}

// A frame from the broker for every process of the job here (those not connected yet get
// the topology when they say hello; a lost cluster they learn from their peers' errors; none
// can be in finalize).
void Relay::tell_processes(const Frame& f) {
  auto it = jobs_.find(f.header.job);
  if (it == jobs_.end()) return;
  for (auto& c : it->second->procs)
    if (c) c->link->send(f);
}

void Relay::handle_kill(const Frame& f) {
  auto it = jobs_.find(f.header.job);
  if (it != jobs_.end()) kill_job(*it->second, f.body);
}

}  // namespace gridrt
