// The relay's inside, shared by its translation units (relay.cpp: life, the broker session;
// part_runner.cpp: the jobs' parts, launched and reaped; local_sessions.cpp: the cluster's
// processes and monitors; links.cpp: routing and the links to other relays). Not for other
// users.
#pragma once

#include <deque>
#include <map>

#include "common/messages.h"
#include "common/link_resume.h"
#include "common/staging.h"
#include "relay/emulated_path.h"
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
// What a relay link may hold for the other side, kept until acknowledged, while it is down:
// flow control keeps it to a window per stream; past this the link is given up at once.
inline constexpr std::size_t kMaxLinkBacklog = 1u << 30;
// Redialling a broken relay link: the first attempt after this, then twice as long each time,
// up to kRedialMost (within the grace).
inline constexpr auto kRedialFirst = std::chrono::milliseconds(200);
inline constexpr auto kRedialMost = std::chrono::milliseconds(5000);
// A part's end and output are kept this long after it ended with the broker there: a broker
// that dies just after may not have taken them in.
inline constexpr auto kFinishedKept = std::chrono::seconds(10);

// Frames one process sends another through the relays.
inline bool is_process_traffic(wire::Type t) {
  using wire::Type;
  return t == Type::kData || t == Type::kRest || t == Type::kCredit || t == Type::kMatched || t == Type::kConnectBack ||
         t == Type::kDirectFailed || t == Type::kDirectResume;
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
  pid_t mpiexec = -1;              // the launch command
  PartEnd end;                     // its exit, the ranks' reports (relay/part_end.h)
  std::vector<LocalPtr> procs;     // runtime connections, by local rank
  std::vector<LocalPtr> monitors;  // gridproc connections, by local rank
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
  std::map<std::uint32_t, std::vector<wire::Frame>> pending;      // data for ranks not yet connected
  std::size_t pending_bytes = 0;
  std::string topology;              // the Topology frame body, once the broker sent it
  OutputLog output;                  // every line printed, numbered (relay/output_log.h)
  bool output_live = true;           // lines go to the broker as they come (not while it is away)
  std::vector<wire::Frame> reports;  // Error, ClusterLost, Finalizing sent: said again after a restart
  std::unique_ptr<asio::steady_timer> timer;
  std::unique_ptr<asio::steady_timer> leftovers;                                // armed once the ranks are over (watch_leftovers)
  std::vector<std::shared_ptr<asio::posix::stream_descriptor>> launcher_pipes;  // its stdout and stderr
  int open_pipes = 0;
  bool in_cgroup = false;  // its processes are in a cgroup of their own (Options::cgroups)
  // Its files (relay/stage_files.cpp): the directory they are put in ("": none), what the
  // launch command runs, where the processes start, whose account they run as; the files
  // asked of the submitter and arriving (by SHA-256), and how many are not in place yet.
  std::string job_dir;
  std::string executable;
  std::string workdir;
  std::optional<LocalAccount> account;
  std::map<std::string, std::unique_ptr<IncomingFile>> incoming;
  std::size_t awaited = 0;
  // A cluster with a nodeDir: the job's directory on each node (where the executable is and
  // the processes start); the outputs coming back from the nodes, by the sending monitor's
  // local rank and name; and for each output in job_dir, the lowest rank of its node.
  std::string node_dir;
  std::map<std::pair<std::uint32_t, std::string>, std::unique_ptr<IncomingFile>> node_outputs;
  std::map<std::string, std::int32_t> node_output_from;
  enum class Outputs { kNotSent, kSending, kSent } outputs = Outputs::kNotSent;

  std::uint64_t id() const { return start.job; }
  const Topology& topo() const { return start.topology; }
  bool is_local(std::int32_t rank) const {
    return rank >= 0 && static_cast<std::uint32_t>(rank) >= first && static_cast<std::uint32_t>(rank) < first + count;
  }
};

// The link to one other cluster's relay: a session of numbered frames (LinkResume) over a
// succession of connections, one at a time.
struct Relay::PeerLink {
  std::shared_ptr<TlsLink> link;  // the connection, from its hello on (up: both hellos went)
  bool up = false;
  bool dialling = false;
  LinkResume session{random_instance()};
  // This relay dials the link (relay_link_dialer), there; set by the first dial.
  std::optional<tcp::endpoint> dial_to;
  // After a connection broke: since when, why, and the grace (Options::link_grace) and
  // redial timers; the jobs across it then, which a peer that restarted takes with it.
  std::optional<std::chrono::steady_clock::time_point> down_since;
  std::string down_why;
  std::unique_ptr<asio::steady_timer> grace, redial;
  std::chrono::milliseconds redial_after{0};
  std::vector<std::uint64_t> jobs_when_lost;
  // Up again, or given up: no longer waiting, nor redialling. (The grace timer goes, so that
  // the next break starts one of its own.)
  void no_longer_down() {
    down_since.reset();
    jobs_when_lost.clear();
    redial_after = std::chrono::milliseconds(0);
    grace.reset();
    if (redial) redial->cancel();
  }
  // WAN emulation (Options::wan): frames to a cluster of another site take this path first.
  std::unique_ptr<EmulatedPath> emulated;
};

}  // namespace gridrt
