#include "broker/cluster_loss.h"

#include <algorithm>
#include <set>
#include <utility>

namespace gridrt {

std::optional<ClusterLoss> next_cluster_to_lose(std::vector<UnreachableReport>& reports, std::size_t parts,
                                                const std::function<bool(std::size_t)>& settled) {
  std::erase_if(reports, [&](const UnreachableReport& u) { return u.from >= parts || u.to >= parts || settled(u.from) || settled(u.to); });
  if (reports.empty()) return std::nullopt;
  std::set<std::pair<std::size_t, std::size_t>> cut;  // each pair once, whichever end said it
  for (const auto& u : reports) cut.insert(std::minmax(u.from, u.to));
  std::vector<int> cuts(parts, 0);
  for (const auto& [a, b] : cut) ++cuts[a], ++cuts[b];
  std::size_t lose = 0;
  for (std::size_t p = 0; p < parts; ++p)
    if (cuts[p] >= cuts[lose]) lose = p;  // >=: the higher index on a tie
  const auto report =
      std::find_if(reports.begin(), reports.end(), [&](const UnreachableReport& u) { return u.from == lose || u.to == lose; });
  return ClusterLoss{lose, report->from == lose ? report->to : report->from, report->what};
}

}  // namespace gridrt
