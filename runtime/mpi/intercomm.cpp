// Intercommunicators under the MPI layer (MPI 4.0 §7.6): MPI_Intercomm_create and
// MPI_Intercomm_merge, the queries, duplicates and splits. When both groups sit in this cluster the
// intercommunicator is MPICH's own. Otherwise it is a grid communicator whose handle is an
// MPICH communicator of both groups' members in this cluster (names, attributes and error
// handlers live there; its point-to-point inside the cluster travels there), whose channel
// reaches the remote group by rank, and whose collectives are those of coll/intercomm.h.
// An intercommunicator takes two communicators' worth of contexts: its own, and its local
// group's as an intracommunicator of its own.
#include <algorithm>

#include "coll/intercomm.h"
#include "layer.h"

using gridmpi::GridComm;
using gridmpi::CommImpl;
using gridrt::detail::check_mpi;

namespace {

constexpr std::uint32_t kContextsPerInter = 2 * gridrt::detail::kContextsPerComm;

void reserve_contexts(std::uint32_t context, std::uint32_t n) {
  auto& next = gridrt::detail::state().next_context;
  next = std::max(next, context + n);
}

int tag_for(std::uint32_t context) { return static_cast<int>(context % (static_cast<std::uint32_t>(gridrt::detail::state().tag_ub) + 1)); }

// An MPICH communicator of the global ranks in `order` that sit in this cluster, in that
// order, made by those processes alone (over the cluster's own MPI_COMM_WORLD).
MPI_Comm cluster_comm_of(const std::vector<int>& order, int tag) {
  std::vector<int> ranks;
  for (int g : order)
    if (gridmpi::in_this_cluster(g)) ranks.push_back(g - gridmpi::first_rank());
  MPI_Group world = MPI_GROUP_NULL, part = MPI_GROUP_NULL;
  PMPI_Comm_group(MPI_COMM_WORLD, &world);
  PMPI_Group_incl(world, static_cast<int>(ranks.size()), ranks.data(), &part);
  MPI_Comm out = MPI_COMM_NULL;
  const int rc = PMPI_Comm_create_group(MPI_COMM_WORLD, part, tag, &out);
  PMPI_Group_free(&part);
  PMPI_Group_free(&world);
  check_mpi(rc, "MPI_Comm_create_group in the cluster");
  return out;
}

bool everyone_here(const std::vector<int>& members) { return std::all_of(members.begin(), members.end(), gridmpi::in_this_cluster); }

// Both groups in one order: the local one first or the remote one.
std::vector<int> both(const std::vector<int>& local, const std::vector<int>& remote, bool local_first) {
  std::vector<int> out = local_first ? local : remote;
  const std::vector<int>& second = local_first ? remote : local;
  out.insert(out.end(), second.begin(), second.end());
  return out;
}

// Registers an intercommunicator of groups `local` (this process is member `me`) and
// `remote` on `context` (and the next kContextsPerInter - 1). `handle`: the MPICH
// communicator of both groups' members in this cluster, in the order `local_first` says;
// `local_part`: one of the local group's members here, in rank order. It owns both.
MPI_Comm make_inter(std::vector<int> local, int me, std::vector<int> remote, bool local_first, std::uint32_t context, MPI_Comm handle,
                    MPI_Comm local_part) {
  auto& s = gridrt::detail::state();
  std::vector<int> here;  // both groups' members in this cluster, as `handle` orders them
  for (int g : both(local, remote, local_first))
    if (gridmpi::in_this_cluster(g)) here.push_back(g);
  std::vector<int> rank_here(remote.size(), -1);
  for (std::size_t i = 0; i < remote.size(); ++i) {
    const auto it = std::find(here.begin(), here.end(), remote[i]);
    if (it != here.end()) rank_here[i] = static_cast<int>(it - here.begin());
  }
  const MPI_Comm link = gridmpi::dup_in_cluster(handle), group_part = gridmpi::dup_in_cluster(local_part);
  PMPI_Comm_set_errhandler(link, MPI_ERRORS_RETURN);
  const int job_size = static_cast<int>(s.topo.size());
  auto g = std::make_shared<GridComm>();
  g->handle = handle;
  g->local_first = local_first;
  g->impl = CommImpl::make(local, me, context, local_part);
  auto r = std::make_unique<gridrt::detail::RemoteGroup>();
  r->members = remote;
  r->mpi = link;
  r->channel = std::make_shared<gridmpi::Channel>(remote, rank_here, link, s.messages, context + 2, job_size);
  r->group = CommImpl::make(std::move(local), me, context + gridrt::detail::kContextsPerComm, group_part);
  g->impl->remote = std::move(r);
  g->p2p = std::make_shared<gridmpi::Channel>(std::move(remote), std::move(rank_here), handle, s.messages, context + 1, job_size);
  gridmpi::enroll(g);
  return handle;
}

// What each group of an intercommunicator gives, reduced by `op` over the other group
// (an intercommunicator all-reduce), waited for in the communicator's order.
std::vector<unsigned> from_the_other_group(GridComm& g, std::vector<unsigned> mine, MPI_Op op) {
  std::vector<unsigned> theirs(mine.size());
  gridrt::detail::run_collective(g.impl, gridrt::detail::allreduce(*g.impl, mine.data(), theirs.data(), static_cast<int>(mine.size()),
                                                                   MPI_UNSIGNED, op, gridrt::Algo::kDefault));
  return theirs;
}

std::uint32_t agree_on_context(GridComm& g) {
  unsigned agreed = 0;
  gridrt::detail::run_collective(g.impl, gridmpi::agree_on_inter_context(*g.impl, gridrt::detail::state().next_context, &agreed));
  return agreed;
}

int create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader, int tag, MPI_Comm* newintercomm) {
  const std::vector<int> local = gridmpi::members_of(local_comm);
  int me = 0, n = static_cast<int>(local.size());
  gridmpi_Comm_rank(local_comm, &me);
  if (local_leader < 0 || local_leader >= n)
    throw gridrt::ArgumentError(
        "local_leader " + std::to_string(local_leader) + " is not a rank of local_comm (size " + std::to_string(n) + ")", MPI_ERR_RANK);
  unsigned offer = gridrt::detail::state().next_context, highest = 0;
  check_mpi(gridmpi_Allreduce(&offer, &highest, 1, MPI_UNSIGNED, MPI_MAX, local_comm), "the local group's contexts");
  // The leaders exchange {highest context, group size, leader's rank} and the members, and
  // tell their groups (MPI's rule: over peer_comm, with `tag`, between the leaders only).
  int header[3] = {static_cast<int>(highest), n, local_leader};
  std::vector<int> remote;
  if (me == local_leader) {
    int theirs[3];
    check_mpi(
        gridmpi_Sendrecv(header, 3, MPI_INT, remote_leader, tag, theirs, 3, MPI_INT, remote_leader, tag, peer_comm, MPI_STATUS_IGNORE),
        "the leaders' exchange over peer_comm");
    std::copy(theirs, theirs + 3, header);
    remote.resize(static_cast<std::size_t>(header[1]));
    check_mpi(gridmpi_Sendrecv(local.data(), n, MPI_INT, remote_leader, tag, remote.data(), header[1], MPI_INT, remote_leader, tag,
                               peer_comm, MPI_STATUS_IGNORE),
              "the leaders' exchange over peer_comm");
  }
  check_mpi(gridmpi_Bcast(header, 3, MPI_INT, local_leader, local_comm), "the local group's broadcast");
  remote.resize(static_cast<std::size_t>(header[1]));
  check_mpi(gridmpi_Bcast(remote.data(), header[1], MPI_INT, local_leader, local_comm), "the local group's broadcast");
  const std::uint32_t context = std::max(highest, static_cast<unsigned>(header[0]));
  reserve_contexts(context, kContextsPerInter);
  const int their_leader = remote.at(static_cast<std::size_t>(header[2]));
  if (everyone_here(local) && everyone_here(remote))  // MPICH's own, over the cluster's MPI_COMM_WORLD
    return PMPI_Intercomm_create(local_comm, local_leader, MPI_COMM_WORLD, their_leader - gridmpi::first_rank(), tag, newintercomm);
  const bool local_first = local[static_cast<std::size_t>(local_leader)] < their_leader;
  const MPI_Comm local_part = gridmpi::dup_in_cluster(local_comm);
  MPI_Comm handle = cluster_comm_of(both(local, remote, local_first), tag_for(context));
  *newintercomm = make_inter(local, me, std::move(remote), local_first, context, handle, local_part);
  return MPI_SUCCESS;
}

}  // namespace

int GRIDMPI(Intercomm_create)(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader, int tag,
                              MPI_Comm* newintercomm) {
  if (!gridmpi::active()) return PMPI_Intercomm_create(local_comm, local_leader, peer_comm, remote_leader, tag, newintercomm);
  if (local_comm == MPI_COMM_NULL) return gridmpi::bad_comm("MPI_Intercomm_create");
  if (gridmpi::grid_inter(local_comm))
    return gridmpi::fail(local_comm, MPI_ERR_COMM, "MPI_Intercomm_create: local_comm must be an intracommunicator");
  return gridmpi::call("MPI_Intercomm_create", local_comm,
                       [&] { return create(local_comm, local_leader, peer_comm, remote_leader, tag, newintercomm); });
}

// MPI 4's intercommunicator from two groups (MPI 4.0 §7.6.2), without sessions: each group
// one of MPI_COMM_WORLD's, so MPI_Intercomm_create between the local group's communicator
// and the remote leader, over the world.
int GRIDMPI(Intercomm_create_from_groups)(MPI_Group local_group, int local_leader, MPI_Group remote_group, int remote_leader,
                                          const char* stringtag, MPI_Info info, MPI_Errhandler errhandler, MPI_Comm* newintercomm) {
  if (!gridmpi::active())
    return PMPI_Intercomm_create_from_groups(local_group, local_leader, remote_group, remote_leader, stringtag, info, errhandler,
                                             newintercomm);
  const std::vector<int> remote = gridmpi::group_members(remote_group);
  if (remote_leader < 0 || remote_leader >= static_cast<int>(remote.size()))
    return gridmpi::fail(MPI_COMM_WORLD, MPI_ERR_RANK, "MPI_Intercomm_create_from_groups: remote_leader is not a rank of remote_group");
  MPI_Comm local = MPI_COMM_NULL;
  int rc = gridmpi_Comm_create_from_group(local_group, stringtag, info, MPI_ERRHANDLER_NULL, &local);
  if (rc != MPI_SUCCESS) return rc;
  rc = gridmpi_Intercomm_create(local, local_leader, MPI_COMM_WORLD, remote[static_cast<std::size_t>(remote_leader)],
                                gridmpi::tag_of(stringtag), newintercomm);
  gridmpi_Comm_free(&local);
  if (rc == MPI_SUCCESS && errhandler != MPI_ERRHANDLER_NULL) PMPI_Comm_set_errhandler(*newintercomm, errhandler);
  return rc;
}

int GRIDMPI(Intercomm_merge)(MPI_Comm intercomm, int high, MPI_Comm* newintracomm) {
  GridComm* g = gridmpi::grid_inter(intercomm);
  if (!g) return PMPI_Intercomm_merge(intercomm, high, newintracomm);
  return gridmpi::call("MPI_Intercomm_merge", intercomm, [&] {
    // Each group learns the other's `high` with the contexts (one value per group, MPI's rule).
    const std::vector<unsigned> theirs = from_the_other_group(*g, {gridrt::detail::state().next_context, high ? 1u : 0u}, MPI_MAX);
    const unsigned ours = from_the_other_group(*g, {theirs[0]}, MPI_MAX)[0];
    const std::uint32_t context = std::max(ours, theirs[0]);
    reserve_contexts(context, gridrt::detail::kContextsPerComm);
    const bool mine_high = high != 0, their_high = theirs[1] != 0;
    const bool local_first = mine_high == their_high ? g->local_first : !mine_high;
    const std::vector<int>& local = g->impl->members;
    std::vector<int> members = both(local, g->impl->remote->members, local_first);
    const int me = g->rank() + (local_first ? 0 : g->impl->remote->size());
    const MPI_Comm handle = cluster_comm_of(members, tag_for(context)), part = gridmpi::dup_in_cluster(handle);
    *newintracomm = gridmpi::adopt(std::move(members), me, context, handle, part);
    return MPI_SUCCESS;
  });
}

namespace gridmpi {
// Contexts for a new communicator over both groups, above every one any member uses: each
// group's highest goes to the other, then back. (The caller keeps `agreed` alive.)
gridrt::detail::Async<> agree_on_inter_context(CommImpl& c, unsigned offer, unsigned* agreed) {
  unsigned theirs = 0, ours = 0;
  co_await gridrt::detail::allreduce(c, &offer, &theirs, 1, MPI_UNSIGNED, MPI_MAX, gridrt::Algo::kDefault);
  co_await gridrt::detail::allreduce(c, &theirs, &ours, 1, MPI_UNSIGNED, MPI_MAX, gridrt::Algo::kDefault);
  *agreed = std::max(ours, theirs);
}

// The duplicate of a grid intercommunicator on agreed contexts, given MPICH's duplicates of
// its handle and of its local group's communicator.
MPI_Comm adopt_inter_dup(const GridComm& g, std::uint32_t context, MPI_Comm handle, MPI_Comm part) {
  reserve_contexts(context, kContextsPerInter);
  return make_inter(g.impl->members, g.rank(), g.impl->remote->members, g.local_first, context, handle, part);
}

// MPI_Comm_split of a grid intercommunicator (MPI 4.0 §7.4.2): each group splits by color
// and key as an intracommunicator would, and the members of one color in both groups make
// a new intercommunicator; a color that only one group has gives its members
// MPI_COMM_NULL. Every member of both groups takes part (MPI_UNDEFINED too): one all-gather
// in each group, one between them, and the contexts' agreement.
int split_inter(GridComm& g, int color, int key, MPI_Comm* newcomm) {
  if (color < 0 && color != MPI_UNDEFINED) throw gridrt::ArgumentError("color " + std::to_string(color) + " is negative", MPI_ERR_ARG);
  const auto& remote_group = *g.impl->remote;
  const int mine[2] = {color, key};
  std::vector<int> ours(2 * static_cast<std::size_t>(g.size())), theirs(2 * static_cast<std::size_t>(remote_group.size()));
  gridrt::detail::run_collective(remote_group.group, gridrt::detail::allgather(*remote_group.group, mine, 2, MPI_INT, ours.data(), 2,
                                                                               MPI_INT, gridrt::Algo::kDefault));
  gridrt::detail::run_collective(g.impl,
                                 gridrt::detail::allgather(*g.impl, mine, 2, MPI_INT, theirs.data(), 2, MPI_INT, gridrt::Algo::kDefault));
  const std::uint32_t context = agree_on_context(g);
  reserve_contexts(context, kContextsPerInter);
  *newcomm = MPI_COMM_NULL;
  if (color == MPI_UNDEFINED) return MPI_SUCCESS;
  // A group's members of this color, by key, then by rank in the group.
  const auto of_color = [color](const std::vector<int>& colors_keys, const std::vector<int>& members) {
    std::vector<int> chosen;
    for (std::size_t r = 0; r < members.size(); ++r)
      if (colors_keys[2 * r] == color) chosen.push_back(static_cast<int>(r));
    std::stable_sort(chosen.begin(), chosen.end(), [&](int a, int b) { return colors_keys[2 * a + 1] < colors_keys[2 * b + 1]; });
    std::vector<int> out;
    for (int r : chosen) out.push_back(members[static_cast<std::size_t>(r)]);
    return out;
  };
  std::vector<int> local = of_color(ours, g.impl->members), remote = of_color(theirs, remote_group.members);
  if (remote.empty()) return MPI_SUCCESS;
  const int me = static_cast<int>(std::find(local.begin(), local.end(), g.impl->members[g.rank()]) - local.begin());
  const int tag = tag_for(context);
  const MPI_Comm local_part = cluster_comm_of(local, tag);
  if (everyone_here(local) && everyone_here(remote)) {  // MPICH's own, over the cluster's MPI_COMM_WORLD
    const int rc = PMPI_Intercomm_create(local_part, 0, MPI_COMM_WORLD, remote.front() - gridmpi::first_rank(), tag, newcomm);
    MPI_Comm done = local_part;
    PMPI_Comm_free(&done);
    return rc;
  }
  const bool local_first = local.front() < remote.front();
  const MPI_Comm handle = cluster_comm_of(both(local, remote, local_first), tag);
  *newcomm = make_inter(std::move(local), me, std::move(remote), local_first, context, handle, local_part);
  return MPI_SUCCESS;
}

// A duplicate of a grid intercommunicator: MPICH's of its handle (copying its attributes),
// the same groups, new contexts.
int dup_inter(GridComm& g, MPI_Info info, MPI_Comm* newcomm) {
  const std::uint32_t context = agree_on_context(g);
  const MPI_Comm handle = gridmpi::dup_in_cluster(g.handle, info), part = gridmpi::dup_in_cluster(g.impl->local);
  *newcomm = adopt_inter_dup(g, context, handle, part);
  return MPI_SUCCESS;
}
}  // namespace gridmpi

int GRIDMPI(Comm_test_inter)(MPI_Comm comm, int* flag) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Comm_test_inter(comm, flag);
  *flag = g->inter() ? 1 : 0;
  return MPI_SUCCESS;
}

int GRIDMPI(Comm_remote_size)(MPI_Comm comm, int* size) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Comm_remote_size(comm, size);
  if (!g->inter()) return gridmpi::fail(comm, MPI_ERR_COMM, "MPI_Comm_remote_size: not an intercommunicator");
  *size = g->impl->remote->size();
  return MPI_SUCCESS;
}

int GRIDMPI(Comm_remote_group)(MPI_Comm comm, MPI_Group* group) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Comm_remote_group(comm, group);
  if (!g->inter()) return gridmpi::fail(comm, MPI_ERR_COMM, "MPI_Comm_remote_group: not an intercommunicator");
  return gridmpi::call("MPI_Comm_remote_group", comm, [&] {
    *group = gridmpi::make_group(g->impl->remote->members);
    return MPI_SUCCESS;
  });
}
