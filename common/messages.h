// Bodies of the control messages (docs/protocol.md lists which frame type carries which).
// Each struct has encode() into a frame body and a decode() that throws wire::BadBody on a
// malformed body, so a handler either gets a whole message or drops the peer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/wire.h"

namespace gridrt {

// One process group of a JobProfile: the logical topology (Coti, Herault, Cappello 2009 §3.1).
struct GroupSpec {
  std::string name;
  std::uint32_t count = 0;
};

// A file that travels with a job (docs/jobprofile.md, "Files that travel with the job"): the
// executable and the inputs, carried from the submitting machine (source: an absolute path
// there, content named by its SHA-256) or fetched by each relay (source: an http(s) URL);
// the outputs, brought back from each cluster into a directory of the submitting machine.
struct StagedFile {
  enum class Role : std::uint32_t { kExecutable = 0, kInput = 1, kOutput = 2 };
  Role role = Role::kInput;
  std::string name;    // in the job's directory at each cluster: a relative path that stays
                       // inside it (safe_relative_name), checked where it enters
  std::string source;  // inputs, executable: a path on the submitting machine or a URL;
                       // outputs: the directory on the submitting machine they come back to
  std::string sha256;  // carried files: the content's digest (hex); "" otherwise
  std::uint64_t size = 0;
  bool executable = false;  // its mode carries the execute bits

  // Fetched by the relays (http, https, or a scheme the grid declares a fetcher for); a
  // carried file's source is an absolute path.
  bool is_url() const { return role != Role::kOutput && !source.empty() && source[0] != '/'; }
  bool carried() const { return role != Role::kOutput && !is_url(); }  // from the submitting machine
};

// What the launcher submits: a validated JobProfile with every variable filled in.
struct JobSpec {
  std::string app_id;
  std::string task_id;
  std::vector<GroupSpec> groups;  // JobProfile order: a group's color is its index here
  std::string executable;         // absolute path on the grid's nodes
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string workdir;  // empty: the relay's working directory
  // A cluster whose part fails (a process exits non-zero or is killed) is lost and the job
  // goes on with the others, which are told (JobProfile <onClusterLoss>continue); by
  // default one failed process stops the whole job, as mpiexec does.
  bool survive_cluster_loss = false;
  // gridrun -n: `workdir` is the directory gridrun ran in, used on clusters that see the
  // submitting machine's files (no stageDir); the others start processes in the job directory.
  bool workdir_is_submitters = false;
  // The executable (role kExecutable, when it travels) and the profile's <stageInOut> files.
  std::vector<StagedFile> files;

  // Bytes that travel from the submitting machine (what a user's size limit counts).
  std::uint64_t carried_bytes() const;
  // Summed in 64 bits: groups of up to a million processes each must not wrap a 32-bit sum.
  std::uint64_t total_processes() const;
  std::string encode() const;
  // Refuses (wire::BadBody) a job with no group, a group of no process, or more processes
  // than MPI can number (ranks are ints): every count is checked where it enters.
  static JobSpec decode(std::string_view body);
};

// A file name that stays inside the directory it is relative to: not empty, not absolute, no
// empty, "." or ".." component, at most 255 bytes.
bool safe_relative_name(std::string_view name);

// MPI numbers ranks with an int.
inline constexpr std::uint64_t kMaxJobProcesses = 0x7fffffff;

// Relay -> broker. The grid description tells the broker the rest (site, slots, policy).
struct RelayRegistration {
  std::string cluster;
  std::string link_host;  // where other relays dial this one (relay-to-relay links)
  std::uint16_t link_port = 0;
  // The jobs this relay runs, or finished while it had no broker: a broker that restarted
  // takes them back (docs/architecture.md, "When the broker restarts").
  std::vector<std::uint64_t> jobs;

  std::string encode() const;
  static RelayRegistration decode(std::string_view body);
};

// One cluster's share of a job: global ranks [first_rank, first_rank + count).
struct ClusterPart {
  std::string name;
  std::uint32_t site = 0;  // index into Topology::sites
  std::uint32_t first_rank = 0;
  std::uint32_t count = 0;
  std::string link_host;
  std::uint16_t link_port = 0;
  bool reachable = true;  // other sites can open connections to its relay's link address
  bool outbound = true;   // its nodes can open connections to other sites
  bool accepts = false;   // its nodes accept connections from other sites (public, inbound)
  std::string ports;      // if they do: the port range they listen in ("" for any)
};

// Where every process of a job runs, and the names behind the colors. Built by the broker,
// published to every process through the relays.
struct Topology {
  std::vector<std::string> groups;    // group color = index
  std::vector<std::string> sites;     // site color = index
  std::vector<ClusterPart> clusters;  // cluster color = index; ranks contiguous, grid order
  std::vector<std::uint32_t> rank_group;
  std::vector<std::string> nodes;  // node color = index; filled when every part is ready
  std::vector<std::uint32_t> rank_node;
  std::vector<std::string> rank_endpoint;  // "HOST:PORT" where a rank accepts direct connections, or ""
  std::string model;                       // the grid's performance model its broker keeps (JSON, docs/models.md), or ""

  std::uint32_t size() const { return static_cast<std::uint32_t>(rank_group.size()); }
  // Index of the cluster holding `rank`; size() is not a rank (returns clusters.size()).
  std::uint32_t cluster_of(std::uint32_t rank) const;
  std::optional<std::uint32_t> index_of(const std::string& cluster) const;  // by name
  void encode(wire::Writer& w) const;
  static Topology decode(wire::Reader& r);
};

// Broker -> relay: start this cluster's part of a job.
struct PartStart {
  std::uint64_t job = 0;
  std::string secret;         // processes prove membership of the job with it
  std::string user;           // the submitter's certificate name: whose account runs the part
  std::uint32_t cluster = 0;  // index of the receiving relay's cluster in topology.clusters
  Topology topology;          // without nodes yet
  JobSpec spec;

  std::string encode() const;
  static PartStart decode(std::string_view body);
};

// Runtime or gridproc -> relay, first frame of the connection.
struct ProcHello {
  std::string secret;
  std::uint32_t local_rank = 0;  // rank in the cluster's MPI_COMM_WORLD
  std::string hostname;
  std::string listen;  // "HOST:PORT" where it accepts direct connections, or ""

  std::string encode() const;
  static ProcHello decode(std::string_view body);
};

// Relay -> broker: every local process said hello; their hostnames by local rank.
struct PartReady {
  std::vector<std::string> hostnames;
  std::vector<std::string> endpoints;  // by local rank: where each accepts direct connections, or ""
  std::string encode() const;
  static PartReady decode(std::string_view body);
};

// Relay -> broker: the part is over. Exit statuses by local rank (0..255; 128+N for signal N).
struct PartDone {
  std::vector<std::uint32_t> statuses;
  std::string message;  // why, when the part could not run at all (e.g. mpiexec missing)
  std::string encode() const;
  static PartDone decode(std::string_view body);
};

// Broker -> launcher (gridrun status): the grid as the broker sees it now.
struct GridStatus {
  struct Cluster {
    std::string name;
    std::string site;
    std::uint32_t slots = 0;
    std::uint32_t busy = 0;  // slots held by running jobs
    bool relay_up = false;
    std::string relay;  // where its relay connected from, when up
  };
  struct Job {
    std::uint64_t id = 0;
    std::string owner;  // the submitter's certificate name
    std::string application;
    std::uint32_t processes = 0;
    std::vector<std::string> clusters;
    std::uint64_t age_s = 0;  // since it was accepted
  };
  std::vector<Cluster> clusters;
  std::vector<Job> jobs;
  std::uint32_t waiting = 0;  // jobs waiting for free slots
  std::uint64_t up_s = 0;     // the broker's time up
  bool takes_jobs_back = false;
  std::string encode() const;
  static GridStatus decode(std::string_view body);
};

// Broker -> launcher: the job is over.
struct JobEnd {
  std::int32_t status = 0;  // what gridrun exits with
  std::string summary;      // one line: which ranks failed and how
  std::string encode() const;
  static JobEnd decode(std::string_view body);
};

// Relay <-> relay, the first frame each end of a relay link sends (the dialler first; the
// other answers once it has accepted the link). A link that broke is resumed by the next one
// between the same two relays: each says how many frames it has received so far from the
// other, which sends the rest again (common/link_resume.h).
struct LinkHello {
  std::string cluster;              // the sender's cluster
  std::uint64_t instance = 0;       // the sender relay's life (random at start, never 0)
  std::uint64_t peer_instance = 0;  // the other relay's life as the sender knew it, 0: none
  std::uint64_t received = 0;       // frames the sender has received from that life
  std::string encode() const;
  static LinkHello decode(std::string_view body);
};

// A piece of a file (FileData): which file (a staged file's SHA-256, or an output's name),
// its whole size, where the piece goes in it, and the bytes.
struct FilePiece {
  std::string file;
  std::uint64_t size = 0;
  std::uint64_t offset = 0;
  std::string data;
  std::string encode() const;
  static FilePiece decode(std::string_view body);
};
inline constexpr std::size_t kFilePieceBytes = 256 * 1024;

// Output frames carry one line of a process's output; the stream is in header.flags.
inline constexpr std::uint32_t kStdout = 1;
inline constexpr std::uint32_t kStderr = 2;

}  // namespace gridrt
