// Hierarchical prefix reduction, for communicators whose clusters hold runs of consecutive
// ranks (so that cluster order is rank order): 1. MPICH's scan (or exclusive scan) inside
// each cluster; 2. each cluster's last member sends its cluster's total to the leader of
// every later cluster (one WAN hop, C(C-1)/2 small messages for C clusters), which folds
// those of the clusters before its own in order; 3. the leader broadcasts that prefix
// inside its cluster (MPICH) and every member puts it on the left of its own result.
// Cost: two MPICH collectives and one WAN latency, whatever the number of processes.
#include <optional>

#include "algorithms.h"
#include "costs.h"
#include "cluster_steps.h"

namespace gridrt::detail {

Async<> scan_hier(CommImpl& c, const void* sendbuf, void* recvbuf, Layout l, MPI_Op op, bool exclusive) {
  const int tag = c.next_tag();
  const int p = c.my_part();
  const std::vector<int>& part = c.parts[p];
  const bool last = part.back() == c.me, first_in_part = part.front() == c.me;
  // An exclusive scan in place overwrites the input its cluster's total needs: kept aside.
  std::optional<Scratch> aside;
  const void* input = sendbuf;
  if (sendbuf == MPI_IN_PLACE) {
    aside.emplace(l);
    copy_elements(l, recvbuf, aside->get());
    input = aside->get();
  }
  // 1. Inside the cluster.
  MPI_Request r;
  if (exclusive) check_mpi(MPI_Iexscan(input, recvbuf, l.count, l.type, op, c.local, &r), kMpiInCluster);
  else check_mpi(MPI_Iscan(input, recvbuf, l.count, l.type, op, c.local, &r), kMpiInCluster);
  co_await one(local_step(r));
  if (c.parts.size() == 1) co_return;
  // 2. Clusters' totals to every later cluster's leader.
  std::vector<Step> steps;
  std::vector<char> total;
  if (last && p + 1 < static_cast<int>(c.parts.size())) {
    Scratch t(l);
    copy_elements(l, input, t.get());
    if (exclusive && !first_in_part) combine(l, op, recvbuf, t.get());  // (the exclusive result, then mine)
    if (!exclusive) copy_elements(l, recvbuf, t.get());
    total = packed_copy(l, t.get());
    for (int q = p + 1; q < static_cast<int>(c.parts.size()); ++q)
      steps.push_back(send_to(c, c.leader(q), tag, total.data(), total.size()));
  }
  std::vector<std::vector<char>> from(p);
  if (first_in_part)
    for (int q = 0; q < p; ++q) {
      from[q].resize(l.packed);
      steps.push_back(receive_from(c, c.parts[q].back(), tag, from[q].data(), from[q].size()));
    }
  co_await all(steps);
  if (p == 0) co_return;  // nothing comes before the first cluster
  // 3. The prefix of the clusters before this one, to every member, on the left.
  Scratch prefix(l), value(l);
  if (first_in_part) {
    unpack(l, from[0].data(), prefix.get());
    for (int q = 1; q < p; ++q) {
      unpack(l, from[q].data(), value.get());
      combine(l, op, prefix.get(), value.get());
      copy_elements(l, value.get(), prefix.get());
    }
  }
  if (part.size() > 1) co_await one(cluster_bcast(c, prefix.get(), l.count, l.type, 0));
  if (exclusive && first_in_part) copy_elements(l, prefix.get(), recvbuf);  // its own exclusive result was undefined
  else combine(l, op, prefix.get(), recvbuf);
}

// Cost: MPICH's scan in every part, each part's total to the leader of every later part,
// MPICH's bcast of the prefix.
double scan_hier_cost(const CostShape& s, double m) {
  const int C = s.parts();
  std::vector<double> ready(C), got(C, 0);
  for (int p = 0; p < C; ++p) ready[p] = got[p] = s.local(Coll::kScan, p, m);
  Timeline tl(s);
  for (int p = 0; p < C; ++p)
    for (int q = p + 1; q < C; ++q) got[q] = std::max(got[q], tl.send(s.member(p, s.part_size[p] - 1), p, q, m, ready[p]));
  double done = 0;
  for (int p = 0; p < C; ++p) done = std::max(done, got[p] + (p > 0 ? s.local(Coll::kBcast, p, m, got[p]) : 0));
  return done;
}

}  // namespace gridrt::detail
