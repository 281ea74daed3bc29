// The relay's local sessions: connections from the cluster's processes (their runtime) and
// their gridproc monitors, admitted by the job's secret; what they may send and where it goes.
#include <algorithm>

#include "common/acceptor.h"
#include "common/messages.h"
#include "relay/relay_parts.h"

namespace gridrt {

using wire::Frame;
using wire::Type;

// What a process may say of why it leaves (its Error frame's body), kept for the job's end.
constexpr std::size_t kLeavingReasonAtMost = 300;

// ---------------------------------------------------------------- local connections

asio::awaitable<void> Relay::accept_local() {
  while (!stopped_) {
    tcp::socket s(io_);
    if (co_await accept_next(
            local_acceptor_, s, [this] { return local_admission_.drop_oldest("out of file descriptors"); }, local_accept_failures_))
      co_return;
    boost::system::error_code ec;
    tune_socket(s);
    auto conn = std::make_shared<LocalConn>();
    const auto ep = s.remote_endpoint(ec);
    conn->link = std::make_shared<TcpLink>(std::move(s), "local " + ep.address().to_string() + ":" + std::to_string(ep.port()));
    // A stranger until its hello carries a job's secret: small frames, a deadline, a place
    // among a bounded number of such connections.
    conn->link->admit_untrusted(limits::kUntrustedBody, opt_.authenticate, local_admission_, ep.address());
    conn->link->keep_alive(false);  // watched once its hello names its rank
    std::weak_ptr<LocalConn> weak = conn;
    conn->link->start(
        [this, weak](Frame& f) {
          if (auto c = weak.lock()) on_local_frame(c, f);
        },
        [this, conn](const std::string& why) { on_local_closed(conn, why); });
  }
}

void Relay::on_local_frame(const LocalPtr& conn, Frame& f) {
  if (!conn->admitted) return on_local_hello(conn, f);
  auto it = jobs_.find(conn->job);
  if (it == jobs_.end()) return;
  Job& job = *it->second;
  const auto rank = static_cast<std::int32_t>(job.first + conn->local_rank);
  // A connection speaks only for its own job and rank.
  const bool traffic = is_process_traffic(f.header.type);
  if (f.header.job != conn->job || (traffic && f.header.src != rank)) {
    log::warn("refusing a frame from ", conn->link->peer(), " forged for job ", f.header.job, " rank ", f.header.src);
    return conn->link->fail("frames must carry this connection's own job and rank");
  }
  if (traffic) {
    if (f.header.dst < 0 || static_cast<std::uint32_t>(f.header.dst) >= job.topo().size())
      return conn->link->fail("destination rank " + std::to_string(f.header.dst) + " is not in the job");
    return route(job, f);
  }
  switch (f.header.type) {
    case Type::kOutput:
      if (!conn->monitor) break;
      f.header.src = rank;
      return send_output(job, f);
    case Type::kWanCount: {
      if (conn->monitor) break;
      const auto& [messages, bytes] = job.wan_sent[conn->local_rank];
      wire::Writer w;
      w.u64(messages).u64(bytes);
      Frame answer = wire::make_frame(Type::kWanCount, w.take(), job.id());
      answer.header.dst = rank;
      return conn->link->send(std::move(answer));
    }
    case Type::kClusterLost: {  // a process lost its direct connection with another cluster's
      const auto c = static_cast<std::uint32_t>(f.header.tag);
      if (conn->monitor || f.header.tag < 0 || c >= job.topo().clusters.size() || c == job.start.cluster) break;
      return cannot_reach(job, c, "lost rank " + std::to_string(rank) + "'s " + f.body);
    }
    case Type::kFileWanted:  // a node's first monitor asks for the part's files (a cluster with a nodeDir)
      if (!conn->monitor || job.node_dir.empty()) break;
      asio::co_spawn(io_, send_files_to_node(job.id(), conn), asio::detached);
      return;
    case Type::kFileData:  // a node's last monitor sends its outputs back
      if (!conn->monitor || job.node_dir.empty()) break;
      return take_node_output(job, *conn, f);
    case Type::kFinalizing:  // this part's leader: all its processes are in finalize
      if (conn->monitor || !job.start.spec.survive_cluster_loss) break;
      return report_to_broker(job, wire::make_frame(Type::kFinalizing, {}, job.id()));
    case Type::kProcExit:
      if (!conn->monitor) break;
      job.end.rank_status[conn->local_rank] = f.header.tag;
      // A program that initialised MPI past gridrt would have run as an MPI job of its
      // cluster alone: whatever the job allows, it stops, naming the likely cause (before
      // the exit status reaches the broker, so that the reason is what the user hears).
      if (f.header.flags & wire::kMpiPastGridrt)
        kill_job(job,
                 "rank " + std::to_string(rank) +
                     " initialised MPI without gridrt's MPI layer and was stopped (it would have run as an MPI job of its "
                     "cluster alone): did a launch wrapper take LD_PRELOAD out of the environment (sudo, a setuid program, "
                     "env -u LD_PRELOAD), or is the program statically linked, or built against another MPI than this "
                     "machine's MPICH? (docs/mpi.md, \"Launch wrappers\")",
                 true);
      f.header.type = Type::kProcExitRank;
      f.header.src = rank;
      to_broker(f);
      return stop_if_left_early(job);
    case Type::kError:  // the runtime leaving without finalize, and why (RelayTransport::leaving_unfinalized)
      if (conn->monitor) break;
      job.unfinalized[conn->local_rank] = {f.body.empty() ? "without calling gridrt::finalize" : f.body.substr(0, kLeavingReasonAtMost),
                                           wire::ending_status(f.header.seq)};
      return;
    default: break;
  }
  conn->link->fail(std::string("unexpected ") + wire::type_name(f.header.type) + " frame from a process");
}

void Relay::on_local_hello(const LocalPtr& conn, const Frame& f) {
  const bool monitor = f.header.type == Type::kMonitorHello;
  if (f.header.type != Type::kProcHello && !monitor) return conn->link->fail("the first frame must be a hello");
  ProcHello hello;
  try {
    hello = ProcHello::decode(f.body);
  } catch (const wire::BadBody& e) { return conn->link->fail(std::string("bad hello: ") + e.what()); }
  auto it = jobs_.find(f.header.job);
  // The same answer for an unknown job and a wrong secret: nothing to learn by probing.
  if (it == jobs_.end() || hello.secret != it->second->start.secret) {
    refused_locals_.warn("refusing ", conn->link->peer(), ": unknown job ", f.header.job, " or wrong job secret");
    return conn->link->fail("unknown job or wrong job secret");
  }
  Job& job = *it->second;
  if (hello.local_rank >= job.count) return conn->link->fail("local rank " + std::to_string(hello.local_rank) + " is not in this part");
  auto& slot = monitor ? job.monitors[hello.local_rank] : job.procs[hello.local_rank];
  if (slot) return conn->link->fail("local rank " + std::to_string(hello.local_rank) + " is already connected");
  conn->admitted = true;
  conn->link->trust();
  conn->link->keep_alive(true);
  conn->monitor = monitor;
  conn->job = job.id();
  conn->local_rank = hello.local_rank;
  conn->link->set_peer("job " + std::to_string(job.id()) + (monitor ? " monitor " : " rank ") +
                       std::to_string(job.first + hello.local_rank));
  slot = conn;
  if (monitor) return;
  job.hostnames[hello.local_rank] = hello.hostname;
  job.endpoints[hello.local_rank] = hello.listen;
  if (!job.topology.empty()) conn->link->send(wire::make_frame(Type::kTopology, job.topology, job.id()));
  auto pend = job.pending.find(hello.local_rank);
  if (pend != job.pending.end()) {
    for (auto& pf : pend->second) {
      job.pending_bytes -= pf.body.size();
      conn->link->send(std::move(pf));
    }
    job.pending.erase(pend);
  }
  if (++job.hellos == job.count) {
    PartReady ready{job.hostnames, job.endpoints};
    to_broker(wire::make_frame(Type::kPartReady, ready.encode(), job.id()));
  }
  stop_if_left_early(job);
}

// A rank that ended without finalize, or before it joined while others of the part joined,
// leaves them waiting for it (in a collective, in finalize, in init) until a timeout: the
// job stops at once, naming it and its exit status. (A part none of whose processes ever
// joins runs programs that do not use gridrt: nothing waits.) A job that may go on without
// a cluster is left to the broker's rules for failed parts.
void Relay::stop_if_left_early(Job& job) {
  if (job.end.stopped || job.start.spec.survive_cluster_loss) return;
  for (std::uint32_t r = 0; r < job.count; ++r) {
    const int status = job.end.rank_status[r];
    if (status == -1) continue;
    const std::string who = "rank " + std::to_string(job.first + r) + " exited with status " + std::to_string(status);
    const auto& leaving = job.unfinalized[r];
    if (!leaving.why.empty()) return kill_job(job, who + " " + leaving.why, true, leaving.job_status);
    if (!job.procs[r] && job.hellos > 0)
      return kill_job(job, who + " before it joined the job (it never called gridrt::init or MPI_Init) while others waited for it", true);
  }
}

void Relay::on_local_closed(const LocalPtr& conn, const std::string& why) {
  if (!conn->admitted) return;
  auto it = jobs_.find(conn->job);
  if (it == jobs_.end()) return;
  Job& job = *it->second;
  // A hung process (stopped, or its runtime's thread stalled) would hold every other rank
  // that waits for it: the job stops, naming it. (A process that hangs up is not hung: it
  // finalized, or it ended and its monitor reports how.)
  if (conn->link->silent()) {
    kill_job(job, "rank " + std::to_string(job.first + conn->local_rank) + (conn->monitor ? "'s monitor: " : ": ") + why, true);
  }
  if (!conn->monitor) return;
  // A monitor gone without its rank's report was killed: what its rank left may hold the
  // launch command, and with it the part, open.
  if (job.end.rank_status[conn->local_rank] == -1 && !job.end.stopped) watch_leftovers(job, kMonitorLostGrace);
  maybe_finish(job);
}

}  // namespace gridrt
