#include "common/ladder.h"

#include <sstream>

namespace gridrt {

namespace {
// Whether rank r accepts direct connections: its listener once the processes reported them,
// before that (a dry run) its cluster's declared policy.
bool has_endpoint(const Topology& t, std::uint32_t r) {
  if (t.rank_endpoint.empty()) return t.clusters[t.cluster_of(r)].accepts;
  return r < t.rank_endpoint.size() && !t.rank_endpoint[r].empty();
}
// Whether rank `from` can open a connection to rank `to`.
bool can_dial(const Topology& t, std::uint32_t from, std::uint32_t to) {
  return has_endpoint(t, to) && t.clusters[t.cluster_of(from)].outbound;
}
}  // namespace

PairPlan plan_pair(const Topology& t, std::uint32_t a, std::uint32_t b) {
  if (t.cluster_of(a) == t.cluster_of(b)) return {Technique::kLocal, -1};
  const bool ab = can_dial(t, a, b), ba = can_dial(t, b, a);
  if (ab && ba) return {Technique::kDirect, static_cast<int>(std::min(a, b))};
  if (ab) return {Technique::kDirect, static_cast<int>(a)};
  if (ba) return {Technique::kDirect, static_cast<int>(b)};
  return {Technique::kRelayed, -1};
}

int relay_link_dialer(const Topology& t, std::uint32_t a, std::uint32_t b) {
  const ClusterPart& x = t.clusters[a];
  const ClusterPart& y = t.clusters[b];
  if (x.reachable && y.reachable) return x.name < y.name ? static_cast<int>(a) : static_cast<int>(b);
  if (y.reachable) return static_cast<int>(a);  // only y accepts: x dials
  if (x.reachable) return static_cast<int>(b);  // only x accepts: y dials (reverse)
  return -1;
}

std::string explain_links(const Topology& t) {
  std::ostringstream os;
  const bool known = !t.rank_endpoint.empty();
  for (std::uint32_t a = 0; a < t.clusters.size(); ++a)
    for (std::uint32_t b = a + 1; b < t.clusters.size(); ++b) {
      const ClusterPart& x = t.clusters[a];
      const ClusterPart& y = t.clusters[b];
      os << x.name << " <-> " << y.name << ": ";
      {
        const PairPlan plan = plan_pair(t, x.first_rank, y.first_rank);
        if (plan.technique == Technique::kDirect) {
          const bool x_dials = plan.dialer == static_cast<int>(x.first_rank);
          const ClusterPart& dialer = x_dials ? x : y;
          const ClusterPart& other = x_dials ? y : x;
          const bool both = can_dial(t, x.first_rank, y.first_rank) && can_dial(t, y.first_rank, x.first_rank);
          os << "direct, dialled by " << dialer.name << "'s processes ("
             << (both ? "both accept connections; the lower rank dials"
                      : other.name + "'s processes accept connections" +
                            (known                 ? " (" + t.rank_endpoint[other.first_rank] + ", ...)"
                             : other.ports.empty() ? std::string()
                                                   : " in ports " + other.ports) +
                            ", " + dialer.name + "'s do not; when " + other.name + " speaks first it asks " + dialer.name +
                            " to connect back")
             << ")\n";
          continue;
        }
        os << "relayed (neither side's processes can open a connection to the other's) through ";
      }
      const int d = relay_link_dialer(t, a, b);
      if (d < 0) {
        os << "no connection possible (neither relay accepts connections from other sites)\n";
        continue;
      }
      const ClusterPart& dialer = t.clusters[d];
      const ClusterPart& other = t.clusters[d == static_cast<int>(a) ? b : a];
      os << "the relays' link, dialled by " << dialer.name << " ("
         << (x.reachable && y.reachable ? "both relays accept connections; the first by name dials"
                                        : other.name + " accepts connections, " + dialer.name + " does not")
         << ")\n";
    }
  return os.str();
}

std::string unlinkable_pairs(const Topology& t) {
  std::string why;
  for (std::uint32_t a = 0; a < t.clusters.size(); ++a)
    for (std::uint32_t b = a + 1; b < t.clusters.size(); ++b)
      if (relay_link_dialer(t, a, b) < 0)
        why += (why.empty() ? "" : "; ") + std::string("the relays of ") + t.clusters[a].name + " and " + t.clusters[b].name +
               " both accept no connection from other sites";
  return why;
}

}  // namespace gridrt
