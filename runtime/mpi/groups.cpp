// Groups under the MPI layer (MPI 4.0 §7.3): a group holding processes of other clusters
// is the layer's, a list of global ranks; the operations work on those lists (in MPI's
// orders) whenever one of their groups is the layer's, and are MPICH's own otherwise.
#include <algorithm>

#include "layer.h"

namespace {

using Members = std::vector<int>;

bool contains(const Members& m, int r) { return std::find(m.begin(), m.end(), r) != m.end(); }

void check_rank(const Members& m, int r) {
  if (r < 0 || r >= static_cast<int>(m.size()))
    throw gridrt::ArgumentError(std::to_string(r) + " is not a rank of the group (size " + std::to_string(m.size()) + ")", MPI_ERR_RANK);
}

// The ranks MPI_Group_range_incl/excl's triplets (first, last, stride) name, in order.
Members expand(const Members& m, int n, int ranges[][3]) {
  Members out;
  for (int i = 0; i < n; ++i) {
    const int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
    if (stride == 0) throw gridrt::ArgumentError("a range with stride 0", MPI_ERR_ARG);
    for (int r = first; stride > 0 ? r <= last : r >= last; r += stride) {
      check_rank(m, r);
      out.push_back(r);
    }
  }
  return out;
}

template <typename F> int group_call(const char* function, F&& body) {
  return gridmpi::call(function, MPI_COMM_WORLD, [&] {
    body();
    return MPI_SUCCESS;
  });
}

}  // namespace

int GRIDMPI(Group_size)(MPI_Group group, int* size) {
  if (!gridmpi::is_layer_group(group)) return PMPI_Group_size(group, size);
  return group_call("MPI_Group_size", [&] { *size = static_cast<int>(gridmpi::group_members(group).size()); });
}

int GRIDMPI(Group_rank)(MPI_Group group, int* rank) {
  if (!gridmpi::is_layer_group(group)) return PMPI_Group_rank(group, rank);
  return group_call("MPI_Group_rank", [&] {
    const Members m = gridmpi::group_members(group);
    const auto it = std::find(m.begin(), m.end(), gridrt::rank());
    *rank = it == m.end() ? MPI_UNDEFINED : static_cast<int>(it - m.begin());
  });
}

int GRIDMPI(Group_translate_ranks)(MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[]) {
  if (!gridmpi::is_layer_group(group1) && !gridmpi::is_layer_group(group2))
    return PMPI_Group_translate_ranks(group1, n, ranks1, group2, ranks2);
  return group_call("MPI_Group_translate_ranks", [&] {
    const Members a = gridmpi::group_members(group1), b = gridmpi::group_members(group2);
    for (int i = 0; i < n; ++i) {
      if (ranks1[i] == MPI_PROC_NULL) {
        ranks2[i] = MPI_PROC_NULL;
        continue;
      }
      check_rank(a, ranks1[i]);
      const auto it = std::find(b.begin(), b.end(), a[ranks1[i]]);
      ranks2[i] = it == b.end() ? MPI_UNDEFINED : static_cast<int>(it - b.begin());
    }
  });
}

int GRIDMPI(Group_compare)(MPI_Group group1, MPI_Group group2, int* result) {
  if (!gridmpi::is_layer_group(group1) && !gridmpi::is_layer_group(group2)) return PMPI_Group_compare(group1, group2, result);
  return group_call("MPI_Group_compare", [&] {
    Members a = gridmpi::group_members(group1), b = gridmpi::group_members(group2);
    if (a == b) {
      *result = MPI_IDENT;
      return;
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    *result = a == b ? MPI_SIMILAR : MPI_UNEQUAL;
  });
}

int GRIDMPI(Group_union)(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
  if (!gridmpi::is_layer_group(group1) && !gridmpi::is_layer_group(group2)) return PMPI_Group_union(group1, group2, newgroup);
  return group_call("MPI_Group_union", [&] {
    Members out = gridmpi::group_members(group1);  // the first's, then the second's not in it
    for (int r : gridmpi::group_members(group2))
      if (!contains(out, r)) out.push_back(r);
    *newgroup = gridmpi::make_group(out);
  });
}

int GRIDMPI(Group_intersection)(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
  if (!gridmpi::is_layer_group(group1) && !gridmpi::is_layer_group(group2)) return PMPI_Group_intersection(group1, group2, newgroup);
  return group_call("MPI_Group_intersection", [&] {
    const Members b = gridmpi::group_members(group2);
    Members out;  // in the first's order
    for (int r : gridmpi::group_members(group1))
      if (contains(b, r)) out.push_back(r);
    *newgroup = gridmpi::make_group(out);
  });
}

int GRIDMPI(Group_difference)(MPI_Group group1, MPI_Group group2, MPI_Group* newgroup) {
  if (!gridmpi::is_layer_group(group1) && !gridmpi::is_layer_group(group2)) return PMPI_Group_difference(group1, group2, newgroup);
  return group_call("MPI_Group_difference", [&] {
    const Members b = gridmpi::group_members(group2);
    Members out;
    for (int r : gridmpi::group_members(group1))
      if (!contains(b, r)) out.push_back(r);
    *newgroup = gridmpi::make_group(out);
  });
}

int GRIDMPI(Group_incl)(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup) {
  if (!gridmpi::is_layer_group(group)) return PMPI_Group_incl(group, n, ranks, newgroup);
  return group_call("MPI_Group_incl", [&] {
    const Members m = gridmpi::group_members(group);
    Members out;
    for (int i = 0; i < n; ++i) {
      check_rank(m, ranks[i]);
      if (contains(out, m[ranks[i]])) throw gridrt::ArgumentError("rank " + std::to_string(ranks[i]) + " named twice", MPI_ERR_RANK);
      out.push_back(m[ranks[i]]);
    }
    *newgroup = gridmpi::make_group(out);
  });
}

int GRIDMPI(Group_excl)(MPI_Group group, int n, const int ranks[], MPI_Group* newgroup) {
  if (!gridmpi::is_layer_group(group)) return PMPI_Group_excl(group, n, ranks, newgroup);
  return group_call("MPI_Group_excl", [&] {
    const Members m = gridmpi::group_members(group);
    std::vector<bool> gone(m.size(), false);
    for (int i = 0; i < n; ++i) {
      check_rank(m, ranks[i]);
      gone[ranks[i]] = true;
    }
    Members out;
    for (std::size_t r = 0; r < m.size(); ++r)
      if (!gone[r]) out.push_back(m[r]);
    *newgroup = gridmpi::make_group(out);
  });
}

int GRIDMPI(Group_range_incl)(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup) {
  if (!gridmpi::is_layer_group(group)) return PMPI_Group_range_incl(group, n, ranges, newgroup);
  return group_call("MPI_Group_range_incl", [&] {
    const Members m = gridmpi::group_members(group);
    Members out;
    for (int r : expand(m, n, ranges)) out.push_back(m[r]);
    *newgroup = gridmpi::make_group(out);
  });
}

int GRIDMPI(Group_range_excl)(MPI_Group group, int n, int ranges[][3], MPI_Group* newgroup) {
  if (!gridmpi::is_layer_group(group)) return PMPI_Group_range_excl(group, n, ranges, newgroup);
  return group_call("MPI_Group_range_excl", [&] {
    const Members m = gridmpi::group_members(group);
    std::vector<bool> gone(m.size(), false);
    for (int r : expand(m, n, ranges)) gone[r] = true;
    Members out;
    for (std::size_t r = 0; r < m.size(); ++r)
      if (!gone[r]) out.push_back(m[r]);
    *newgroup = gridmpi::make_group(out);
  });
}

int GRIDMPI(Group_free)(MPI_Group* group) {
  if (!gridmpi::is_layer_group(*group)) return PMPI_Group_free(group);
  gridmpi::free_layer_group(group);
  return MPI_SUCCESS;
}
