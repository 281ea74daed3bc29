// The connection ladder (Coti, Herault, Cappello 2009 §3, SmartSockets, QCG-OMPI; docs/grid.md, "The cross-site
// transport"): how two processes of a job in different clusters reach each other.
//
//   1. direct: one dials the other's listener (inside its cluster's declared port range),
//      whichever can: the process whose peer accepts connections and whose own nodes may
//      open connections to other sites. When only the other side can dial, the one that
//      wants to talk first asks it to (a reverse connection, through the relays).
//   2. relayed: through the two clusters' relays, when neither can dial the other, or when
//      a direct attempt failed (within a bounded time; the process remembers it).
// Relay links themselves are dialled by whichever relay can (relay_link_dialer).
// Everything here is a pure function of the topology the broker publishes, so both ends
// of a pair reach the same decision without talking.
#pragma once

#include <string>

#include "common/messages.h"

namespace gridrt {

enum class Technique { kLocal, kDirect, kRelayed };

struct PairPlan {
  Technique technique = Technique::kRelayed;
  int dialer = -1;  // kDirect: the rank that opens the connection
};

// How ranks a and b connect: kLocal inside one cluster (MPI), else as above.
PairPlan plan_pair(const Topology& t, std::uint32_t a, std::uint32_t b);

// The relay link between clusters a and b (indices into t.clusters) is dialled by the
// returned cluster: by the one whose peer accepts connections; when both do, by the one
// whose name sorts first; when neither does, there is none (returns -1).
int relay_link_dialer(const Topology& t, std::uint32_t a, std::uint32_t b);

// For every pair of the job's clusters: how their processes reach each other, and why
// (gridrun --explain). Decided on each cluster's first rank once endpoints are known;
// before that (a dry run), from the declared policy alone.
std::string explain_links(const Topology& t);
// "" when every pair of the job's clusters can link; else why not.
std::string unlinkable_pairs(const Topology& t);

}  // namespace gridrt
