// The grid description: which clusters exist, where their relays listen and how processes
// start there (docs/grid.md). Read by the broker, the relays and gridrun --dry-run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/messages.h"
#include "common/wan.h"

namespace gridrt {

// How a cluster can be reached from other sites (the declared network policy; Coti,
// Herault, Cappello 2009, §3; docs/grid.md, "How clusters connect").
struct NetworkPolicy {
  bool frontend_reachable = true;  // other sites can connect to the relay's link address
  bool nodes_public = true;        // nodes have routable addresses (else private, behind NAT)
  bool inbound = true;             // nodes accept connections from other sites
  bool outbound = true;            // nodes can open connections to other sites
  std::uint16_t port_min = 0;      // if inbound: only ports in [port_min, port_max] (0: any)
  std::uint16_t port_max = 0;
};

struct ClusterDesc {
  std::string name;
  std::string site;
  std::uint32_t slots = 0;
  NetworkPolicy network;
  std::string link;   // HOST:PORT where this relay accepts relay-to-relay links (port 0: any)
  std::string local;  // HOST:PORT where this relay accepts its cluster's processes
  // The command that starts the cluster's part of a job; "{np}" is replaced with the number
  // of processes, and the program and its arguments are appended.
  std::vector<std::string> launch;
  // <cluster stageDir="DIR">: a directory of a file system every node of the cluster shares
  // but not the submitting machine: the job's files are carried into DIR/job-ID, where the
  // processes start. "": the nodes see the submitting machine's files at the same paths
  // (one machine, one shared file system): nothing is carried (docs/grid.md, "Files").
  std::string stage_dir;
  // <cluster nodeDir="DIR">: the nodes share no file system with the relay either (stageDir
  // is then the relay's own disk): DIR, on each node's own disk, receives the job's files
  // from the relay, carried by the first process that starts on the node (gridproc), and
  // sends the outputs back when the node's last process ends. "": stageDir is shared.
  std::string node_dir;
  // <fileSystem name="NAME" path="DIR"/>: a file system the cluster's nodes mount at DIR
  // (absolute). Clusters that declare the same NAME share it: a file under it that a job
  // opens with MPI-IO on processes of several clusters is opened by each cluster's MPICH
  // directly (docs/mpi.md, "Files"). Each cluster may mount it at a path of its own.
  struct FileSystem {
    std::string name, path;
  };
  std::vector<FileSystem> file_systems;
};

// <fetcher scheme="gsiftp" command="globus-url-copy {url} file://{file}"/>: how the relays
// fetch a job's file named by a URL of that scheme (docs/grid.md, "Files"); http and https
// they fetch themselves.
struct Fetcher {
  std::string scheme;
  std::vector<std::string> command;  // words; {url} and {file} replaced wherever they occur
};

struct Grid {
  std::string source;  // the file it came from, or "embedded default grid"
  std::vector<Fetcher> fetchers;
  std::vector<ClusterDesc> clusters;
  WanPlan wan;  // <wan>: the emulated WAN between its sites (a test facility; none by default)
  // <grid linkGrace="SECONDS">: how long a broken relay-to-relay link may stay down, its jobs
  // paused, before its clusters are cut off from each other (common/link_resume.h); unset:
  // the relay's own setting (gridrelay --link-grace, default 60).
  std::optional<int> link_grace_seconds;

  const ClusterDesc* find(const std::string& name) const;
  std::uint64_t total_slots() const;
};

// Throws InputError (file:line:column, element, what) on any bad input.
Grid load_grid(const std::string& path);
Grid parse_grid(const std::string& source, const std::string& text);

// The embedded default grid: `clusters` clusters of `slots` slots on this machine, each its
// own site, relays on 127.0.0.1 with kernel-chosen ports, processes started by MPICH's
// mpiexec with the fork launcher. Nodes are declared private, so that cross-cluster traffic
// goes through the relays as it would between real firewalled sites (and through whatever
// sits between the relays, such as a WAN emulator); a --grid file can declare otherwise.
std::string default_grid_xml(int clusters = 2, int slots = 3, bool shared_files = true);

// A cluster able to take part of a job: its description plus where its relay really listens.
struct ClusterOffer {
  std::string name;
  std::string site;
  std::uint32_t slots = 0;
  std::string link_host;
  std::uint16_t link_port = 0;
  bool reachable = true;
  bool outbound = true;
  bool accepts = false;
  std::string ports;
};

// What the broker offers of a registered cluster: its description, where its relay
// listens, and whether its front-end answered the broker's probe.
ClusterOffer offer_of(const ClusterDesc& c, const std::string& link_host, std::uint16_t link_port, bool reachable);

// Maps the job's groups onto clusters (in the given order), honouring slots:
//  - a group that fits whole on one cluster goes onto the cluster with the most free slots
//    (the first such in grid order): groups stay together, groups spread over clusters;
//  - a group that fits nowhere whole is split, filling the freest cluster first.
// Global ranks are contiguous per cluster, in group order inside a cluster (docs/grid.md).
// Clusters that get no process are left out. Throws InputError when slots do not suffice.
Topology map_job(const JobSpec& spec, const std::vector<ClusterOffer>& clusters);

// "group -> cluster -> ranks" lines, as gridrun --dry-run prints them.
std::string describe_mapping(const Topology& t);

}  // namespace gridrt
