// The jobs' parts on this cluster, launched and reaped: the launch command started as the
// submitter's local account with the job's environment, its own output forwarded, its
// exit awaited, the job stopped (SIGTERM, then SIGKILL) when the relay must, and the
// part's end told to the broker once the ranks' statuses are settled (relay/part_end.h
// decides those).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include "common/grid_map.h"
#include "common/process.h"
#include "relay/relay_parts.h"

namespace gridrt {

using wire::Frame;
using wire::Type;

void Relay::launch(Job& job) {
  const JobSpec& spec = job.start.spec;
  std::vector<std::string> argv;
  for (const auto& w : opt_.cluster.launch) argv.push_back(w == "{np}" ? std::to_string(job.count) : w);
  argv.push_back(opt_.gridproc);
  argv.push_back("--");
  argv.push_back(job.executable);
  argv.insert(argv.end(), spec.args.begin(), spec.args.end());
  SpawnOptions so;
  so.env = spec.env;
  // The relay's own settings are not the job's: its log level would have every process log
  // as much into the job's output (a job sets GRIDRT_LOG itself, in <environment> or --env).
  so.unset = {"GRIDRT_LOG"};
  const auto local = local_endpoint();
  so.env.emplace_back("GRIDRT_RELAY", local.address().to_string() + ":" + std::to_string(local.port()));
  so.env.emplace_back("GRIDRT_JOB", std::to_string(job.id()));
  so.env.emplace_back("GRIDRT_SECRET", job.start.secret);
  so.env.emplace_back("GRIDRT_CLUSTER", opt_.cluster.name);
  // The file systems the cluster mounts (the grid description's <fileSystem>): MPI-IO across
  // clusters opens a file that all of them share in each cluster directly.
  std::string file_systems;
  for (const auto& fs : opt_.cluster.file_systems) file_systems += (file_systems.empty() ? "" : ";") + fs.name + "=" + fs.path;
  so.env.emplace_back("GRIDRT_FILE_SYSTEMS", file_systems);
  // The runtime then reports a lost direct connection instead of failing (cannot_reach).
  if (spec.survive_cluster_loss) so.env.emplace_back("GRIDRT_ON_CLUSTER_LOSS", "continue");
  // Whether and where processes listen for direct connections from other sites.
  const NetworkPolicy& net = opt_.cluster.network;
  so.env.emplace_back("GRIDRT_LISTEN", !(net.nodes_public && net.inbound) ? "none"
                                       : net.port_min ? std::to_string(net.port_min) + "-" + std::to_string(net.port_max)
                                                      : "any");
  so.workdir = job.workdir;
  if (!job.node_dir.empty()) {
    // The launch command starts where every node has a directory; each process then starts
    // in its node's copy of the job's directory, which its monitor fills (gridproc).
    so.workdir = "/";
    so.env.emplace_back("GRIDRT_NODE_DIR", job.node_dir);
  }
  so.pipe_stdout = so.pipe_stderr = true;
  if (opt_.cgroups) try {
      so.cgroup_procs = opt_.cgroups->open_part(job.id());
      job.in_cgroup = true;
    } catch (const std::exception& e) { log::warn("job ", job.id(), ": its processes are contained by their monitors only: ", e.what()); }
  try {
    so.run_as = job.account;
    Child c = spawn(argv, so);
    job.mpiexec = c.pid;
    log::info("job ", job.id(), ": started ", job.count, " process(es) with ", argv[0], " (pid ", c.pid, ")");
    read_launcher_output(job, c.stdout_fd, kStdout);
    read_launcher_output(job, c.stderr_fd, kStderr);
  } catch (const std::exception& e) { fail_part(job, e.what()); }
  if (so.cgroup_procs >= 0) ::close(so.cgroup_procs);
}

// Whose account runs the job's part here: the one the grid map gives its submitter, read
// afresh for every job so that an administrator's edits apply without a restart; none (the
// relay's own) without a map. Throws, naming the user, the cluster and the map, when the
// submitter has no account here.
std::optional<LocalAccount> Relay::account_for(const Job& job) const {
  if (opt_.grid_map.empty()) return std::nullopt;
  const auto account = GridMap::load(opt_.grid_map).account_of(job.start.user);
  const std::string who = "grid user '" + job.start.user + "'";
  if (!account)
    throw std::runtime_error(who + " has no local account on cluster " + opt_.cluster.name + " (not in its grid map file " + opt_.grid_map +
                             ")");
  try {
    return local_account(*account);
  } catch (const std::runtime_error& e) { throw std::runtime_error(who + " cannot run on cluster " + opt_.cluster.name + ": " + e.what()); }
}

// The launch command's own output (e.g. mpiexec's errors), forwarded line by line as output
// of the cluster (rank -1). The processes' output comes through their gridproc monitors.
void Relay::read_launcher_output(Job& job, int fd, std::uint32_t stream) {
  ++job.open_pipes;
  job.launcher_pipes.push_back(std::make_shared<asio::posix::stream_descriptor>(io_, fd));
  asio::co_spawn(io_, forward_launcher_output(job.id(), job.launcher_pipes.back(), stream), asio::detached);
}

asio::awaitable<void> Relay::forward_launcher_output(std::uint64_t id, std::shared_ptr<asio::posix::stream_descriptor> pipe,
                                                     std::uint32_t stream) {
  std::string pending;
  std::array<char, 4096> chunk;
  boost::system::error_code ec;
  while (!ec) {
    const std::size_t n = co_await pipe->async_read_some(asio::buffer(chunk), asio::redirect_error(asio::use_awaitable, ec));
    pending.append(chunk.data(), n);
    std::size_t nl;
    // Whole lines as they come; at the end, what is left.
    while ((nl = pending.find('\n')) != std::string::npos || (ec && !pending.empty())) {
      const std::string line = pending.substr(0, nl);
      pending.erase(0, nl == std::string::npos ? nl : nl + 1);
      auto job = jobs_.find(id);
      if (job != jobs_.end() && job->second->end.stopped) {
        // After we stopped the job, the launch command only narrates its clean-up.
        log::debug("launch command: ", line);
        continue;
      }
      Frame f = wire::make_frame(Type::kOutput, line, id);
      f.header.flags = stream;
      f.header.src = -1;
      send_output(*job->second, f);
    }
  }
  auto it = jobs_.find(id);
  if (it == jobs_.end()) co_return;
  --it->second->open_pipes;
  maybe_finish(*it->second);
}

void Relay::on_child_signal() {
  child_signal_.async_wait([this](const boost::system::error_code& ec, int) {
    if (!ec) on_child_signal();
  });
  int st = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &st, WNOHANG)) > 0) {
    if (auto fetcher = fetcher_children_.find(pid); fetcher != fetcher_children_.end()) {
      auto done = std::move(fetcher->second);
      fetcher_children_.erase(fetcher);
      done(exit_code_of(st));
      continue;
    }
    for (auto& [id, job] : jobs_) {
      if (job->mpiexec != pid) continue;
      job->end.launch_exited = true;
      job->end.launch_status = exit_code_of(st);
      log::info("job ", id, ": launch command exited with status ", job->end.launch_status);
      // Monitors may still be handing over their ranks' last output and status.
      job->timer = std::make_unique<asio::steady_timer>(io_, wait_for_reports(job->end, opt_.authenticate, kExitGrace));
      job->timer->async_wait([this, id = id](const boost::system::error_code& e) {
        auto it = jobs_.find(id);
        if (e || it == jobs_.end()) return;
        it->second->end.grace_over = true;
        maybe_finish(*it->second);
      });
      maybe_finish(*job);
      break;
    }
  }
}

// This part of `job` cannot reach cluster `c` any more (a relay link or a direct connection
// is lost, and frames with it). A job that may go on without a cluster reports it to the
// broker, which weighs the reports of both ends and decides which of the two the job
// loses; any other job stops, and the broker learns why.
void Relay::cannot_reach(Job& job, std::uint32_t c, const std::string& why) {
  if (job.end.stopped) return;
  if (!job.start.spec.survive_cluster_loss) return kill_job(job, why, true);
  log::warn("job ", job.id(), ": ", why, "; reporting it to the broker");
  Frame f = wire::make_frame(Type::kClusterLost, why, job.id());
  f.header.tag = static_cast<std::int32_t>(c);
  report_to_broker(job, f);
}

void Relay::kill_job(Job& job, const std::string& why, bool tell_broker, int status) {
  if (job.end.stopped) return;
  job.end.stopped = true;
  // Stopped here, for a reason only this relay knows: the broker (and the user) learn it,
  // and the status the job is to end with (docs/protocol.md, Error).
  if (tell_broker) {
    Frame f = wire::make_frame(Type::kError, why, job.id());
    f.header.seq = wire::ending_status_seq(status);
    report_to_broker(job, f);
  }
  log::info("job ", job.id(), ": stopping (", why, ")");
  if (job.mpiexec > 0 && !job.end.launch_exited) {
    signal_tree(job.mpiexec, SIGTERM);
    const std::uint64_t id = job.id();
    auto t = std::make_shared<asio::steady_timer>(io_, kKillGrace);
    t->async_wait([this, t, id](const boost::system::error_code&) {
      auto it = jobs_.find(id);
      if (it == jobs_.end() || it->second->end.launch_exited) return;
      signal_tree(it->second->mpiexec, SIGKILL);
      signal_by_environment("GRIDRT_SECRET=" + it->second->start.secret, SIGKILL);
      kill_leftovers(*it->second);
    });
  } else if (job.mpiexec < 0) {  // still waiting for its files
    fail_part(job, "stopped before it started (" + why + ")");
  }
}

// The part is over when its ranks' statuses are settled (relay/part_end.h), its output
// pipes are drained and every monitor has hung up.
void Relay::maybe_finish(Job& job) {
  const bool settled = statuses_settled(job.end);
  if (settled && !held_open(job)) return finish(job);
  if (settled) watch_leftovers(job, kLeftoverGrace);
}

bool Relay::held_open(const Job& job) const {
  if (job.open_pipes > 0) return true;
  for (auto& m : job.monitors)
    if (m && !m->link->closed()) return true;
  return false;
}

// Nothing left of a part may hold it open for long once its ranks are over (whatever they
// started, kept the part's pipes or the launch command's): a while after the ranks'
// statuses are settled, or after a monitor hung up without its rank's report (killed: the
// launch command may then wait for what the rank left), what is left is ended.
void Relay::watch_leftovers(Job& job, std::chrono::steady_clock::duration after) {
  if (job.leftovers) return;
  job.leftovers = std::make_unique<asio::steady_timer>(io_, after);
  job.leftovers->async_wait([this, id = job.id()](const boost::system::error_code& ec) {
    auto it = jobs_.find(id);
    if (ec || it == jobs_.end()) return;
    it->second->leftovers.reset();  // may be armed again
    end_leftovers(*it->second);
  });
}

void Relay::end_leftovers(Job& job) {
  if (!statuses_settled(job.end)) {
    // A rank's monitor is gone without its report, and the launch command still runs.
    for (std::size_t r = 0; r < job.monitors.size(); ++r)
      if (job.monitors[r] && job.monitors[r]->link->closed() && job.end.rank_status[r] == -1)
        return kill_job(job, "rank " + std::to_string(job.first + r) + ": its monitor ended without reporting how the rank ended", true);
    return;
  }
  // In a cgroup, what holds the part open is killed, and its pipes close.
  if (kill_leftovers(job) > 0) return;
  // Elsewhere (or if nothing was left there), the part stops waiting for it.
  log::info("job ", job.id(), ": its output is held open by processes it left running; no longer waiting for them");
  for (auto& pipe : job.launcher_pipes) {
    boost::system::error_code ignored;
    pipe->close(ignored);  // the forwarding ends, aborted
  }
  std::vector<std::shared_ptr<TcpLink>> links;
  for (auto& m : job.monitors)
    if (m && !m->link->closed()) links.push_back(m->link);
  for (auto& l : links) l->close("job ended");  // may finish the job
}

// Kills what is left in the part's cgroup, saying so in the job's output; how many.
int Relay::kill_leftovers(Job& job) {
  if (!job.in_cgroup) return 0;
  const int killed = opt_.cgroups->kill(job.id());
  if (killed > 0 && !job.end.stopped) {
    log::info("job ", job.id(), ": killed ", killed, " process(es) left in its cgroup");
    Frame f = wire::make_frame(Type::kOutput,
                               "gridrelay: " + std::to_string(killed) + " process(es) of the job were left running on cluster " +
                                   opt_.cluster.name + "; they were killed",
                               job.id());
    f.header.flags = kStderr;
    f.header.src = -1;
    send_output(job, f);
  }
  return killed;
}

// A cgroup goes once the processes killed in it are gone: tried again a while, then given up
// with a warning (the next relay started here removes it).
void Relay::remove_cgroup(std::uint64_t id, int attempts_left) {
  if (opt_.cgroups->remove(id)) return;
  if (attempts_left == 0) return log::warn("job ", id, ": cannot remove its cgroup below ", opt_.cgroups->dir());
  auto t = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(20));
  t->async_wait([this, t, id, attempts_left](const boost::system::error_code& ec) {
    if (!ec && !stopped_) remove_cgroup(id, attempts_left - 1);
  });
}

void Relay::finish(Job& job) {
  // The outputs go first, so that the submitter has them when it learns the job ended.
  if (job.outputs == Job::Outputs::kSending) return;
  if (job.outputs == Job::Outputs::kNotSent && !job.workdir.empty() &&
      std::any_of(job.start.spec.files.begin(), job.start.spec.files.end(),
                  [](const StagedFile& f) { return f.role == StagedFile::Role::kOutput; })) {
    job.outputs = Job::Outputs::kSending;
    asio::co_spawn(io_, send_outputs(job.id()), asio::detached);
    return;
  }
  // Nothing of the part outlives it, whatever it did to leave (even kill its monitor).
  if (job.in_cgroup) {
    kill_leftovers(job);
    remove_cgroup(job.id(), 250);
  }
  Frame done = wire::make_frame(Type::kPartDone, part_done(job.end, opt_.cluster.launch[0]).encode(), job.id());
  to_broker(done);
  log::info("job ", job.id(), ": part done");
  // Kept a moment, or while the broker is away, should a restarted broker need it.
  forget_old_parts();
  const auto now = std::chrono::steady_clock::now();
  finished_[job.id()] = {std::move(done), std::move(job.output),
                         now + (registered_ ? kFinishedKept : std::chrono::steady_clock::duration(opt_.broker_grace))};
  for (auto& c : job.procs)
    if (c) c->link->close_after_flush("job ended");
  for (auto& c : job.monitors)
    if (c) c->link->close("job ended");
  if (job.timer) job.timer->cancel();
  if (job.leftovers) job.leftovers->cancel();
  if (!job.job_dir.empty()) remove_tree(job.job_dir);
  jobs_.erase(job.id());
}

}  // namespace gridrt
