// The relay's inside, shared by its translation units (relay.cpp: life, the broker session;
// part_runner.cpp: the jobs' parts, launched and reaped; local_sessions.cpp: the cluster's
// processes and monitors; links.cpp: routing and the links to other relays). Not for other
// users.
#pragma once

#include <deque>
#include <map>

#include "common/messages.h"
#include "relay/part_end.h"
#include "relay/relay.h"

namespace gridrt {

// After mpiexec exits with a failure, how long to wait for monitors still flushing their
// last frames (relay/part_end.h, wait_for_reports).
inline constexpr auto kExitGrace = std::chrono::milliseconds(300);
// After asking a job to stop (SIGTERM), when to stop asking (SIGKILL).
inline constexpr auto kKillGrace = std::chrono::seconds(2);
// Once the ranks' statuses are settled, how long what they left may hold the part open
// before it is ended (relay/part_runner.cpp, watch_leftovers); after a monitor hung up
// without its rank's report, how long the launch command has to notice and exit before
// the relay stops the job (longer: a loaded machine may take a while to end an mpiexec).
inline constexpr auto kLeftoverGrace = std::chrono::seconds(1);
inline constexpr auto kMonitorLostGrace = std::chrono::seconds(3);
// Connecting to and shaking hands with a broker or a relay: at most this long.
inline constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
// Frames held for a local rank that has not connected yet. Flow control keeps this to a
// window per stream; more means a misbehaving sender, and the job is stopped.
inline constexpr std::size_t kMaxPendingBytes = 64u << 20;
// A part's end and output are kept this long after it ended with the broker there: a broker
// that dies just after may not have taken them in.
inline constexpr auto kFinishedKept = std::chrono::seconds(10);

// Frames one process sends another through the relays.
inline bool is_process_traffic(wire::Type t) {
  using wire::Type;
  return t == Type::kData || t == Type::kRest || t == Type::kCredit || t == Type::kMatched || t == Type::kConnectBack ||
         t == Type::kDirectFailed;
}

struct Relay::LocalConn {
  std::shared_ptr<TcpLink> link;
  std::uint64_t job = 0;
  std::uint32_t local_rank = 0;
  bool admitted = false;
  bool monitor = false;
};

struct Relay::Job {
  PartStart start;
  std::uint32_t first = 0;
  std::uint32_t count = 0;
  pid_t mpiexec = -1;                  // the launch command
  PartEnd end;                         // its exit, the ranks' reports (relay/part_end.h)
  std::vector<LocalPtr> procs;         // runtime connections, by local rank
  std::vector<LocalPtr> monitors;      // gridproc connections, by local rank
  std::vector<std::string> hostnames;
  std::vector<std::string> endpoints;  // where each local rank accepts direct connections
  // By local rank: why it leaves without gridrt::finalize, as it said ("": it did not say so),
  // and the status it asked the job to end with.
  struct Leaving {
    std::string why;
    int job_status = 1;
  };
  std::vector<Leaving> unfinalized;
  std::uint32_t hellos = 0;
  // What each local rank has sent to other sites through the links (kWanCount).
  std::vector<std::pair<std::uint64_t, std::uint64_t>> wan_sent;  // messages, payload bytes
  std::map<std::uint32_t, std::vector<wire::Frame>> pending;  // data for ranks not yet connected
  std::size_t pending_bytes = 0;
  std::string topology;                // the Topology frame body, once the broker sent it
  OutputLog output;                    // every line printed, numbered (relay/output_log.h)
  bool output_live = true;             // lines go to the broker as they come (not while it is away)
  std::vector<wire::Frame> reports;          // Error, ClusterLost, Finalizing sent: said again after a restart
  std::unique_ptr<asio::steady_timer> timer;
  std::unique_ptr<asio::steady_timer> leftovers;  // armed once the ranks are over (watch_leftovers)
  std::vector<std::shared_ptr<asio::posix::stream_descriptor>> launcher_pipes;  // its stdout and stderr
  int open_pipes = 0;
  bool in_cgroup = false;              // its processes are in a cgroup of their own (Options::cgroups)

  std::uint64_t id() const { return start.job; }
  const Topology& topo() const { return start.topology; }
  bool is_local(std::int32_t rank) const {
    return rank >= 0 && static_cast<std::uint32_t>(rank) >= first && static_cast<std::uint32_t>(rank) < first + count;
  }
};

struct Relay::PeerLink {
  std::shared_ptr<TlsLink> link;
  bool up = false;
  bool dialling = false;
  std::vector<std::string> queue;  // encoded frames waiting for the link to come up
  // WAN emulation (Options::wan): frames wait here until the emulated line delivers them,
  // in order (arrival times never decrease).
  WanLine* line = nullptr;  // Relay::wan_line's, shared by the links to one site (or all)
  std::chrono::nanoseconds delay{0};
  std::deque<std::pair<WanLine::Clock::time_point, wire::Frame>> on_the_line;
  std::unique_ptr<asio::steady_timer> line_timer;
};

}  // namespace gridrt
