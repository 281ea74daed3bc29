// Communicators under the MPI layer: queries, the constructors (dup, split, split_type,
// create, create_group), comparison and freeing. A constructor over a grid communicator
// agrees on the new members and contexts across clusters (one collective of the runtime)
// and makes the two MPICH communicators of the members in this cluster (the application's
// handle, and one for the collectives' own messages) from the parent's; a result whose
// members all sit in this cluster is MPICH's own from then on (layer.h, adopt).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "layer.h"

using gridmpi::GridComm;
using gridmpi::CommImpl;
using gridmpi::CollectiveOp;

namespace {

// MPI_Comm_split over a grid communicator.
int split_grid(GridComm& g, int color, int key, MPI_Comm* newcomm) {
  const gridrt::detail::SplitMembers m = gridrt::detail::split_members(g.impl, color, key);
  const int order = m.me < 0 ? 0 : m.me;  // (orders this cluster's members by their new rank)
  MPI_Comm handle = MPI_COMM_NULL;
  gridrt::detail::check_mpi(PMPI_Comm_split(g.handle, color, order, &handle), "MPI_Comm_split in the cluster");
  const MPI_Comm local = handle == MPI_COMM_NULL ? MPI_COMM_NULL : gridmpi::dup_in_cluster(handle);
  *newcomm = gridmpi::adopt(m.members, m.me, m.context, handle, local);
  return MPI_SUCCESS;
}

// A duplicate of a grid communicator: MPICH's of its handle (which copies its attributes,
// calling their copy functions) and of its collectives' communicator, on new contexts.
int dup_grid(GridComm& g, MPI_Info info, MPI_Comm* newcomm) {
  const std::uint32_t context = gridrt::detail::agree_on_context(g.impl);
  const MPI_Comm handle = gridmpi::dup_in_cluster(g.handle, info), local = gridmpi::dup_in_cluster(g.impl->local);
  *newcomm = gridmpi::adopt(g.impl->members, g.impl->me, context, handle, local);
  GridComm* copy = gridmpi::grid(*newcomm);
  copy->cart = g.cart;  // (a duplicate keeps its topology)
  copy->graph = g.graph;
  copy->dist_graph = g.dist_graph;
  return MPI_SUCCESS;
}

// The value of an info key, or "".
std::string info_value(MPI_Info info, const char* key) {
  if (info == MPI_INFO_NULL) return "";
  char value[MPI_MAX_INFO_VAL + 1] = {0};
  int len = MPI_MAX_INFO_VAL, flag = 0;
  PMPI_Info_get_string(info, key, &len, value, &flag);
  return flag ? std::string(value) : std::string();
}

// The levels of the grid a communicator may be split by (MPI_COMM_TYPE_HW_GUIDED with
// info "mpi_hw_resource_type"): a member's color at that level, or -1 for none known.
int level_color_of(const std::string& level, int global) {
  using gridrt::Level;
  const std::string name = level.rfind("gridrt:", 0) == 0 ? level.substr(7) : level;
  if (name == "site") return gridrt::level_color(Level::kSite, global);
  if (name == "cluster") return gridrt::level_color(Level::kCluster, global);
  if (name == "node" || name == "mpi_shared_memory") return gridrt::level_color(Level::kNode, global);
  return -1;
}

}  // namespace

int GRIDMPI(Comm_rank)(MPI_Comm comm, int* rank) {
  if (GridComm* g = gridmpi::grid(comm)) {
    *rank = g->rank();
    return MPI_SUCCESS;
  }
  return PMPI_Comm_rank(comm, rank);
}

int GRIDMPI(Comm_size)(MPI_Comm comm, int* size) {
  if (GridComm* g = gridmpi::grid(comm)) {
    *size = g->size();
    return MPI_SUCCESS;
  }
  return PMPI_Comm_size(comm, size);
}

int GRIDMPI(Comm_compare)(MPI_Comm a, MPI_Comm b, int* result) {
  if (!gridmpi::grid(a) && !gridmpi::grid(b)) return PMPI_Comm_compare(a, b, result);
  if (a == MPI_COMM_NULL || b == MPI_COMM_NULL) return gridmpi::bad_comm("MPI_Comm_compare");
  return gridmpi::call("MPI_Comm_compare", a, [&] {
    if (a == b) {
      *result = MPI_IDENT;
      return MPI_SUCCESS;
    }
    std::vector<int> ma = gridmpi::members_of(a), mb = gridmpi::members_of(b);
    if (ma == mb) {
      *result = MPI_CONGRUENT;
    } else {
      std::sort(ma.begin(), ma.end());
      std::sort(mb.begin(), mb.end());
      *result = ma == mb ? MPI_SIMILAR : MPI_UNEQUAL;
    }
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Comm_dup)(MPI_Comm comm, MPI_Comm* newcomm) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Comm_dup(comm, newcomm);
  return gridmpi::call("MPI_Comm_dup", comm,
                       [&] { return g->inter() ? gridmpi::dup_inter(*g, MPI_INFO_NULL, newcomm) : dup_grid(*g, MPI_INFO_NULL, newcomm); });
}

int GRIDMPI(Comm_dup_with_info)(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Comm_dup_with_info(comm, info, newcomm);
  return gridmpi::call("MPI_Comm_dup_with_info", comm,
                       [&] { return g->inter() ? gridmpi::dup_inter(*g, info, newcomm) : dup_grid(*g, info, newcomm); });
}

namespace {
// What a non-blocking duplicate waits for: MPICH's duplicate of the application's handle
// (asked for at the call: nothing of the layer's runs collectives on it), and, in the
// communicator's order of collectives, the new contexts' agreement (of both groups, for an
// intercommunicator) and then MPICH's duplicate of its collectives' communicator in the
// cluster (asked for only then, so that every member asks MPICH for it between the same
// two collectives of that communicator: MPICH matches its own non-blocking collectives by
// the order they are called in).
struct PendingDup {
  MPI_Comm handle = MPI_COMM_NULL, local = MPI_COMM_NULL;
  MPI_Request mine = MPI_REQUEST_NULL;
  unsigned offer = 0, agreed = 0;
  std::shared_ptr<CollectiveOp> agreement;
};

// `p` by reference: the coroutine lives in p.agreement, so p outlives it. (Holding p by
// shared_ptr made a cycle, p -> agreement -> coroutine -> p, that kept both, and the
// communicator with them, for good.)
gridrt::detail::Async<> agree_and_dup(CommImpl& c, bool inter, PendingDup& p) {
  if (inter) co_await gridmpi::agree_on_inter_context(c, p.offer, &p.agreed);
  else co_await gridrt::detail::allreduce(c, &p.offer, &p.agreed, 1, MPI_UNSIGNED, MPI_MAX, gridrt::Algo::kHier);
  gridrt::detail::Step dup;
  gridrt::detail::check_mpi(PMPI_Comm_idup(c.local, &p.local, &dup.mpi), "MPI_Comm_idup in the cluster");
  co_await gridrt::detail::one(dup);
}

// MPI_Comm_idup over a grid communicator: the new handle at once, the request complete
// once all of PendingDup is.
int idup_grid(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm, MPI_Request* request) {
  std::shared_ptr<GridComm> g = gridmpi::grid_shared(comm);
  auto p = std::make_shared<PendingDup>();
  if (info == MPI_INFO_NULL) gridrt::detail::check_mpi(PMPI_Comm_idup(g->handle, &p->handle, &p->mine), "MPI_Comm_idup in the cluster");
  else gridrt::detail::check_mpi(PMPI_Comm_idup_with_info(g->handle, info, &p->handle, &p->mine), "MPI_Comm_idup in the cluster");
  p->offer = gridrt::detail::state().next_context;
  p->agreement = gridrt::detail::start_collective(g->impl, agree_and_dup(*g->impl, g->inter(), *p));
  *newcomm = p->handle;
  auto r = std::make_unique<gridmpi::Request>();
  r->comm = g;
  r->custom = [p, g] {
    int a = 0;
    gridrt::detail::check_mpi(PMPI_Test(&p->mine, &a, MPI_STATUS_IGNORE), "MPI_Comm_idup in the cluster");
    if (!a || !p->agreement->poll()) return false;
    p->agreement->rethrow();
    if (g->inter()) {
      gridmpi::adopt_inter_dup(*g, p->agreed, p->handle, p->local);
      return true;
    }
    auto& next = gridrt::detail::state().next_context;
    next = std::max(next, p->agreed + gridrt::detail::kContextsPerComm);
    gridmpi::adopt(g->impl->members, g->impl->me, p->agreed, p->handle, p->local);
    if (GridComm* copy = gridmpi::grid(p->handle)) {
      copy->cart = g->cart;
      copy->graph = g->graph;
      copy->dist_graph = g->dist_graph;
    }
    return true;
  };
  *request = gridmpi::new_request(std::move(r));
  return MPI_SUCCESS;
}
}  // namespace

int GRIDMPI(Comm_idup)(MPI_Comm comm, MPI_Comm* newcomm, MPI_Request* request) {
  if (!gridmpi::grid(comm)) return PMPI_Comm_idup(comm, newcomm, request);
  return gridmpi::call("MPI_Comm_idup", comm, [&] { return idup_grid(comm, MPI_INFO_NULL, newcomm, request); });
}

int GRIDMPI(Comm_idup_with_info)(MPI_Comm comm, MPI_Info info, MPI_Comm* newcomm, MPI_Request* request) {
  if (!gridmpi::grid(comm)) return PMPI_Comm_idup_with_info(comm, info, newcomm, request);
  return gridmpi::call("MPI_Comm_idup_with_info", comm, [&] { return idup_grid(comm, info, newcomm, request); });
}

int GRIDMPI(Comm_split)(MPI_Comm comm, int color, int key, MPI_Comm* newcomm) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Comm_split(comm, color, key, newcomm);
  return gridmpi::call("MPI_Comm_split", comm,
                       [&] { return g->inter() ? gridmpi::split_inter(*g, color, key, newcomm) : split_grid(*g, color, key, newcomm); });
}

int GRIDMPI(Comm_split_type)(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm* newcomm) {
  GridComm* g = gridmpi::grid(comm);
  const std::string level = split_type == MPI_COMM_TYPE_HW_GUIDED ? info_value(info, "mpi_hw_resource_type") : "";
  if (!g) {
    // Inside one cluster a site or a cluster holds every member.
    if (gridmpi::active() && (level == "site" || level == "cluster" || level == "gridrt:site" || level == "gridrt:cluster"))
      return PMPI_Comm_split(comm, 0, key, newcomm);
    return PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
  }
  if (g->inter()) return gridmpi::fail(comm, MPI_ERR_COMM, "MPI_Comm_split_type: not defined on an intercommunicator");
  return gridmpi::call("MPI_Comm_split_type", comm, [&] {
    const int me = g->impl->members[g->rank()];
    switch (split_type) {
      case MPI_UNDEFINED: return split_grid(*g, MPI_UNDEFINED, key, newcomm);
      case MPI_COMM_TYPE_SHARED:  // a node is inside a cluster: MPICH's own
        return PMPI_Comm_split_type(g->handle, MPI_COMM_TYPE_SHARED, key, info, newcomm);
      case MPI_COMM_TYPE_HW_GUIDED: {
        const int color = level_color_of(level, me);
        if (color < 0) return split_grid(*g, MPI_UNDEFINED, key, newcomm);  // a resource type it does not know: MPI_COMM_NULL
        return split_grid(*g, color, key, newcomm);
      }
      case MPI_COMM_TYPE_HW_UNGUIDED: {
        // The next level down that splits it: sites, else clusters.
        const gridrt::Level next = g->impl->sites.size() > 1 ? gridrt::Level::kSite : gridrt::Level::kCluster;
        return split_grid(*g, gridrt::level_color(next, me), key, newcomm);
      }
      default: throw gridrt::ArgumentError("split type " + std::to_string(split_type) + " is not known across clusters", MPI_ERR_ARG);
    }
  });
}

namespace {
// This process's place in a group given to MPI_Comm_create on a grid communicator, as the
// color and key of a split: members of one group share its first member as color (groups
// given by different processes are disjoint, MPI 4.0 §7.4.2).
std::pair<int, int> place_in(MPI_Group group, int me) {
  const std::vector<int> members = gridmpi::group_members(group);
  const auto it = std::find(members.begin(), members.end(), me);
  if (it == members.end()) return {MPI_UNDEFINED, 0};
  return {members.front(), static_cast<int>(it - members.begin())};
}
}  // namespace

int GRIDMPI(Comm_create)(MPI_Comm comm, MPI_Group group, MPI_Comm* newcomm) {
  GridComm* g = gridmpi::grid(comm);
  if (!g && !gridmpi::is_layer_group(group)) return PMPI_Comm_create(comm, group, newcomm);
  if (!g)
    return gridmpi::fail(comm, MPI_ERR_GROUP, "MPI_Comm_create: the group holds processes of other clusters, the communicator does not");
  return gridmpi::call("MPI_Comm_create", comm, [&] {
    // (on an intercommunicator, each group gives a group of its own members, MPI 4.0 §7.4.2)
    const auto [color, key] = place_in(group, g->impl->members[g->rank()]);
    if (g->inter()) return gridmpi::split_inter(*g, color == MPI_UNDEFINED ? color : 0, key, newcomm);
    return split_grid(*g, color, key, newcomm);
  });
}

int GRIDMPI(Comm_create_group)(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm* newcomm) {
  GridComm* g = gridmpi::grid(comm);
  if (!g && !gridmpi::is_layer_group(group)) return PMPI_Comm_create_group(comm, group, tag, newcomm);
  if (!g)
    return gridmpi::fail(comm, MPI_ERR_GROUP,
                         "MPI_Comm_create_group: the group holds processes of other clusters, the communicator does not");
  if (g->inter()) return gridmpi::fail(comm, MPI_ERR_COMM, "MPI_Comm_create_group: not defined on an intercommunicator");
  return gridmpi::call("MPI_Comm_create_group", comm, [&] {
    // Only the group's members call: they agree on contexts among themselves, over a
    // communicator of theirs on the parent's third context, its tags offset by `tag`.
    const std::vector<int> members = gridmpi::group_members(group);
    const int me = g->impl->members[g->rank()];
    const auto it = std::find(members.begin(), members.end(), me);
    if (it == members.end()) throw gridrt::ArgumentError("this process is not in the group", MPI_ERR_GROUP);
    const int my_index = static_cast<int>(it - members.begin());
    std::vector<int> here;  // the group's members in this cluster, as ranks of the parent's
    for (int m : members)
      if (gridmpi::in_this_cluster(m))
        here.push_back(static_cast<int>(std::find(g->impl->members.begin(), g->impl->members.end(), m) - g->impl->members.begin()));
    auto local_of = [&](MPI_Comm parent_local_or_handle) {
      MPI_Group all, part;
      PMPI_Comm_group(parent_local_or_handle, &all);
      std::vector<int> ranks;
      for (int r : here) ranks.push_back(g->impl->index_in_part[r]);
      PMPI_Group_incl(all, static_cast<int>(ranks.size()), ranks.data(), &part);
      MPI_Comm out = MPI_COMM_NULL;
      const int rc = PMPI_Comm_create_group(parent_local_or_handle, part, tag, &out);
      PMPI_Group_free(&part);
      PMPI_Group_free(&all);
      gridrt::detail::check_mpi(rc, "MPI_Comm_create_group in the cluster");
      return out;
    };
    auto among = CommImpl::make(members, my_index, g->impl->context + 2, local_of(g->impl->local));
    among->calls = static_cast<std::uint64_t>(tag) * 64;  // (concurrent calls on other groups differ by tag)
    const std::uint32_t context = gridrt::detail::agree_on_context(among);
    *newcomm = gridmpi::adopt(members, my_index, context, local_of(g->handle), local_of(g->impl->local));
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Comm_free)(MPI_Comm* comm) {
  if (!gridmpi::grid(*comm)) return PMPI_Comm_free(comm);
  if (*comm == MPI_COMM_WORLD) return gridmpi::fail(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_free: MPI_COMM_WORLD cannot be freed");
  const MPI_Comm handle = *comm;
  const int rc = PMPI_Comm_free(comm);  // (its attributes' delete functions see it still whole)
  gridmpi::forget(handle);
  return rc;
}

int GRIDMPI(Comm_group)(MPI_Comm comm, MPI_Group* group) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Comm_group(comm, group);
  return gridmpi::call("MPI_Comm_group", comm, [&] {
    *group = gridmpi::make_group(g->impl->members);
    return MPI_SUCCESS;
  });
}

namespace gridmpi {
// A tag for MPI_Comm_create_group from the string tag of the MPI 4 constructors: the same in
// every process (FNV-1a), within the tags every MPI allows.
int tag_of(const char* stringtag) {
  std::uint32_t h = 2166136261u;
  for (const char* c = stringtag ? stringtag : ""; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 16777619u;
  return static_cast<int>(h % 32768u);
}
}  // namespace gridmpi

// MPI 4's constructor from a group (MPI 4.0 §7.4.2), without sessions: in a grid job every
// group is one of MPI_COMM_WORLD's processes, so it is MPI_Comm_create_group over the world.
int GRIDMPI(Comm_create_from_group)(MPI_Group group, const char* stringtag, MPI_Info info, MPI_Errhandler errhandler, MPI_Comm* newcomm) {
  if (!gridmpi::active()) return PMPI_Comm_create_from_group(group, stringtag, info, errhandler, newcomm);
  const int rc = gridmpi_Comm_create_group(MPI_COMM_WORLD, group, gridmpi::tag_of(stringtag), newcomm);
  if (rc != MPI_SUCCESS) return rc;
  if (errhandler != MPI_ERRHANDLER_NULL) PMPI_Comm_set_errhandler(*newcomm, errhandler);
  return MPI_SUCCESS;
}
