// The cluster-loss arbiter: which cluster a job that goes on without lost clusters
// (JobSpec::survive_cluster_loss) loses when its clusters cannot all reach each other.
// A pure core: the broker gathers the reports of a grace period and applies the decisions.
//
// Each report says that a pair of clusters is cut apart, whichever end made it (one end may
// not notice, or notice late); reports about parts already settled (lost, or finished: they
// have nothing more to send) are dropped. The cluster in the most cut pairs goes — one cut
// off from all the others is in a pair with each of them. On a tie (one broken link) the one
// with the higher index goes, so that the job keeps its first ranks (rank 0 is where a task
// queue's super-master and the collectives' roots usually are). Asked again after each
// decision, as two links may have broken. Cost: O(reports + clusters) per decision.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gridrt {

struct UnreachableReport {
  std::size_t from, to;  // part indices: `from` reported that it cannot reach `to`
  std::string what;      // how, for the user ("cluster a lost the link to cluster c (...)")
};

struct ClusterLoss {
  std::size_t lose;   // the part to lose
  std::size_t other;  // the one it was cut from, in the report below
  std::string what;   // that report's account
};

// Drops from `reports` those about parts `settled` says are settled; returns the next part
// to lose, or nothing once no cut pair remains among the others.
std::optional<ClusterLoss> next_cluster_to_lose(std::vector<UnreachableReport>& reports, std::size_t parts,
                                                const std::function<bool(std::size_t)>& settled);

}  // namespace gridrt
