// The broker's inside, shared by its translation units (broker.cpp: the server, sessions
// and the jobs' life; recovery.cpp: taking jobs back after a restart). Not for other users.
#pragma once

#include "broker/broker.h"
#include "broker/cluster_loss.h"
#include "common/messages.h"

#include <algorithm>
#include <map>
#include <set>

namespace gridrt {

struct Broker::Peer {
  std::shared_ptr<TlsLink> link;
  std::string name;  // the common name of its certificate: who it is
  enum class Kind { kUnknown, kRelay, kLauncher } kind = Kind::kUnknown;
  RelayRegistration registration;   // relays
  std::vector<std::uint64_t> jobs;  // launchers: jobs they submitted
};

// What the broker writes ahead (PartRecord, JobRecord: broker/job_store.h) and what lives
// only as long as this broker: connections, timers.
struct Broker::Part : PartRecord {
  PeerPtr relay;
  bool replay_pending = false;  // asked its relay for output again, not all of it here yet
  bool given_up = false;        // its relay is gone for good (relay_gone)
};

struct Broker::Job : JobRecord {
  PeerPtr launcher;
  std::vector<Part> parts;     // parallel to topology.clusters
  bool end_journaled = false;  // stop() wrote its end line already
  // When this broker accepted it (or took it back after a restart): its age in gridrun status.
  std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now();
  // Taken back from the state directory: parts wait for their relays, the job for its
  // launcher, until they come back or the recovery grace runs out.
  bool restored = false;
  // Output numbers the launcher printed last, per part, when it came back (AttachJob).
  std::vector<std::uint64_t> printed;
  // Reports, not yet weighed, that one part cannot reach another (settle_unreachable).
  std::vector<UnreachableReport> unreachable;
  std::unique_ptr<asio::steady_timer> unreachable_timer;  // runs while reports are gathered
  bool unreachable_pending = false;
  // Its files on their way (broker/stage_files.cpp): by SHA-256, the parts a content goes to
  // and how much of it has passed; parts that asked while it was under way; output bytes
  // brought back, and the outputs refused (part, name).
  struct Sending {
    std::set<std::size_t> to;
    std::uint64_t forwarded = 0;
  };
  std::map<std::string, Sending> files_sending;
  std::map<std::string, std::set<std::size_t>> files_later;
  std::uint64_t output_bytes = 0;
  std::set<std::pair<std::size_t, std::string>> outputs_refused;
};

}  // namespace gridrt
