// Topology under the MPI layer: the grid's, as MPICH-G2 published it (Karonis, Toonen,
// Foster, 2003) and as gridrt/mpichx.h declares it, in attributes of every communicator;
// and the virtual topologies of MPI (Cartesian, graph; MPI 4.0 chapter 8) on grid
// communicators, worked out here (MPICH's own on its communicators).
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>

#define GRIDRT_MPICHX_DEFINED_HERE
#include "gridrt/mpichx.h"
#include "layer.h"

// The keyvals of the topology attributes: MPI_KEYVAL_INVALID until a grid job begins.
extern "C" {
__attribute__((visibility("default"))) int MPICHX_TOPOLOGY_DEPTHS = MPI_KEYVAL_INVALID;
__attribute__((visibility("default"))) int MPICHX_TOPOLOGY_COLORS = MPI_KEYVAL_INVALID;
__attribute__((visibility("default"))) int GRIDRT_GROUP_COLORS = MPI_KEYVAL_INVALID;

__attribute__((visibility("default"))) int GRIDRT_Group_name(int color, char* name, int* resultlen) {
  if (!gridmpi::active()) return MPI_ERR_OTHER;
  try {
    const std::string& n = gridrt::group_name_of(color);
    std::strncpy(name, n.c_str(), MPI_MAX_OBJECT_NAME - 1);
    name[MPI_MAX_OBJECT_NAME - 1] = '\0';
    *resultlen = static_cast<int>(std::min<std::size_t>(n.size(), MPI_MAX_OBJECT_NAME - 1));
    return MPI_SUCCESS;
  } catch (const gridrt::Error& e) { return gridmpi::fail(MPI_COMM_WORLD, MPI_ERR_ARG, std::string("GRIDRT_Group_name: ") + e.what()); }
}
}

namespace {

// What the attributes point at, owned by the attribute (freed with it).
struct Depths {
  std::vector<int> depth;
};
struct Colors {
  std::vector<int> all;    // member r's colors at levels 0..3 from all[4 r]
  std::vector<int*> rows;  // rows[r] = &all[4 r]: MPICH-G2's colors[r][level]
};
struct GroupColors {
  std::vector<int> color;
};

template <typename T> int free_attribute(MPI_Comm, int, void* value, void*) {
  delete static_cast<T*>(value);
  return MPI_SUCCESS;
}

// Colors at a level numbered, for this communicator, by the first member that has them.
std::vector<int> renumbered(const std::vector<int>& members, gridrt::Level level) {
  std::map<int, int> number;
  std::vector<int> out;
  for (int m : members) out.push_back(number.emplace(gridrt::level_color(level, m), static_cast<int>(number.size())).first->second);
  return out;
}

// The topology attributes of a communicator, set on it when first asked for.
void ensure_topology(MPI_Comm comm) {
  void* value = nullptr;
  int flag = 0;
  PMPI_Comm_get_attr(comm, MPICHX_TOPOLOGY_DEPTHS, &value, &flag);
  if (flag) return;
  const std::vector<int> members = gridmpi::members_of(comm);
  const std::size_t n = members.size();
  auto* depths = new Depths{std::vector<int>(n, MPICHX_LEVELS)};
  auto* colors = new Colors;
  colors->all.resize(MPICHX_LEVELS * n, 0);
  const std::vector<int> site = renumbered(members, gridrt::Level::kSite), cluster = renumbered(members, gridrt::Level::kCluster),
                         node = renumbered(members, gridrt::Level::kNode);
  for (std::size_t r = 0; r < n; ++r) {
    int* row = &colors->all[MPICHX_LEVELS * r];
    row[MPICHX_LEVEL_GRID] = 0;
    row[MPICHX_LEVEL_SITE] = site[r];
    row[MPICHX_LEVEL_CLUSTER] = cluster[r];
    row[MPICHX_LEVEL_NODE] = node[r];
  }
  for (std::size_t r = 0; r < n; ++r) colors->rows.push_back(&colors->all[MPICHX_LEVELS * r]);
  auto* groups = new GroupColors;
  for (int m : members) groups->color.push_back(gridrt::group_of(m));
  PMPI_Comm_set_attr(comm, MPICHX_TOPOLOGY_DEPTHS, depths);
  PMPI_Comm_set_attr(comm, MPICHX_TOPOLOGY_COLORS, colors);
  PMPI_Comm_set_attr(comm, GRIDRT_GROUP_COLORS, groups);
}

// What MPI_Comm_get_attr answers for the layer's keyvals: the arrays, not their holders.
void* exposed(int keyval, void* holder) {
  if (keyval == MPICHX_TOPOLOGY_DEPTHS) return static_cast<Depths*>(holder)->depth.data();
  if (keyval == MPICHX_TOPOLOGY_COLORS) return static_cast<Colors*>(holder)->rows.data();
  return static_cast<GroupColors*>(holder)->color.data();
}

bool ours(int keyval) {
  return keyval != MPI_KEYVAL_INVALID &&
         (keyval == MPICHX_TOPOLOGY_DEPTHS || keyval == MPICHX_TOPOLOGY_COLORS || keyval == GRIDRT_GROUP_COLORS);
}

int get_attr(MPI_Comm comm, int keyval, void* attribute_val, int* flag) {
  if (gridmpi::active()) {
    if (ours(keyval)) {
      return gridmpi::call("MPI_Comm_get_attr", comm, [&] {
        ensure_topology(comm);
        void* holder = nullptr;
        PMPI_Comm_get_attr(comm, keyval, &holder, flag);
        *static_cast<void**>(attribute_val) = *flag ? exposed(keyval, holder) : nullptr;
        return MPI_SUCCESS;
      });
    }
    if (keyval == MPI_UNIVERSE_SIZE && comm == MPI_COMM_WORLD) {  // the whole job's, not this cluster's
      static int universe = 0;
      universe = gridrt::size();
      *static_cast<int**>(attribute_val) = &universe;
      *flag = 1;
      return MPI_SUCCESS;
    }
  }
  return PMPI_Comm_get_attr(comm, keyval, attribute_val, flag);
}

}  // namespace

namespace gridmpi {
void forget_topology_keyvals() {  // (MPI is finalised: MPICH's keyvals went with it)
  MPICHX_TOPOLOGY_DEPTHS = MPICHX_TOPOLOGY_COLORS = GRIDRT_GROUP_COLORS = MPI_KEYVAL_INVALID;
}

void make_topology_keyvals() {
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &free_attribute<Depths>, &MPICHX_TOPOLOGY_DEPTHS, nullptr);
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &free_attribute<Colors>, &MPICHX_TOPOLOGY_COLORS, nullptr);
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &free_attribute<GroupColors>, &GRIDRT_GROUP_COLORS, nullptr);
}
}  // namespace gridmpi

int GRIDMPI(Comm_get_attr)(MPI_Comm comm, int comm_keyval, void* attribute_val, int* flag) {
  return get_attr(comm, comm_keyval, attribute_val, flag);
}
int GRIDMPI(Attr_get)(MPI_Comm comm, int keyval, void* attribute_val, int* flag) { return get_attr(comm, keyval, attribute_val, flag); }

// ---------------------------------------------------------------- virtual topologies

namespace {

using gridmpi::GridComm;

std::vector<int> coords_of(const GridComm::Cart& cart, int rank) {
  std::vector<int> c(cart.dims.size());
  for (std::size_t d = cart.dims.size(); d-- > 0;) {
    c[d] = rank % cart.dims[d];
    rank /= cart.dims[d];
  }
  return c;
}

// The rank at `coords` (periodic dimensions wrap), or -1 outside the grid.
int rank_at(const GridComm::Cart& cart, std::vector<int> coords) {
  int rank = 0;
  for (std::size_t d = 0; d < cart.dims.size(); ++d) {
    int c = coords[d];
    if (cart.periods[d]) c = ((c % cart.dims[d]) + cart.dims[d]) % cart.dims[d];
    else if (c < 0 || c >= cart.dims[d]) return -1;
    rank = rank * cart.dims[d] + c;
  }
  return rank;
}

GridComm::Cart& cart_of(MPI_Comm comm) {
  GridComm* g = gridmpi::grid(comm);
  if (!g->cart) throw gridrt::ArgumentError("the communicator has no Cartesian topology", MPI_ERR_TOPOLOGY);
  return *g->cart;
}

GridComm::Graph& graph_of(MPI_Comm comm) {
  GridComm* g = gridmpi::grid(comm);
  if (!g->graph) throw gridrt::ArgumentError("the communicator has no graph topology", MPI_ERR_TOPOLOGY);
  return *g->graph;
}

// The first `n` members of a grid communicator, as a new one; `attach` gives it its
// topology (on a grid result) or makes MPICH's (on a result inside one cluster).
int first_members(GridComm& g, int n, MPI_Comm* newcomm, const std::function<void(GridComm&)>& attach,
                  const std::function<int(MPI_Comm, MPI_Comm*)>& native) {
  if (n > g.size())
    throw gridrt::ArgumentError("the topology has more processes (" + std::to_string(n) + ") than the communicator", MPI_ERR_ARG);
  MPI_Comm made = MPI_COMM_NULL;
  gridrt::detail::check_mpi(gridmpi_Comm_split(g.handle, g.rank() < n ? 0 : MPI_UNDEFINED, g.rank(), &made), "MPI_Comm_split");
  *newcomm = made;
  if (made == MPI_COMM_NULL) return MPI_SUCCESS;
  if (GridComm* result = gridmpi::grid(made)) {
    attach(*result);
    return MPI_SUCCESS;
  }
  const int rc = native(made, newcomm);  // all in this cluster: MPICH's topology, MPICH's communicator
  PMPI_Comm_free(&made);
  return rc;
}

}  // namespace

int GRIDMPI(Cart_create)(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm* comm_cart) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Cart_create(comm, ndims, dims, periods, reorder, comm_cart);
  if (g->inter()) return gridmpi::fail(comm, MPI_ERR_COMM, "MPI_Cart_create: not defined on an intercommunicator");
  return gridmpi::call("MPI_Cart_create", comm, [&] {
    if (ndims < 0) throw gridrt::ArgumentError("a negative number of dimensions", MPI_ERR_DIMS);
    GridComm::Cart cart{std::vector<int>(dims, dims + ndims), std::vector<int>(periods, periods + ndims)};
    int n = 1;
    for (int d : cart.dims) {
      if (d <= 0) throw gridrt::ArgumentError("a dimension of " + std::to_string(d) + " processes", MPI_ERR_DIMS);
      n *= d;
    }
    // (reorder is allowed, not required: ranks stay as they are)
    return first_members(
        *g, n, comm_cart, [&](GridComm& r) { r.cart = cart; },
        [&](MPI_Comm made, MPI_Comm* out) { return PMPI_Cart_create(made, ndims, dims, periods, 0, out); });
  });
}

int GRIDMPI(Graph_create)(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder, MPI_Comm* comm_graph) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Graph_create(comm, nnodes, index, edges, reorder, comm_graph);
  if (g->inter()) return gridmpi::fail(comm, MPI_ERR_COMM, "MPI_Graph_create: not defined on an intercommunicator");
  return gridmpi::call("MPI_Graph_create", comm, [&] {
    if (nnodes < 0) throw gridrt::ArgumentError("a negative number of nodes", MPI_ERR_ARG);
    GridComm::Graph graph{std::vector<int>(index, index + nnodes), std::vector<int>(edges, edges + (nnodes ? index[nnodes - 1] : 0))};
    for (int e : graph.edges)
      if (e < 0 || e >= nnodes) throw gridrt::ArgumentError("an edge to " + std::to_string(e) + ", not a node", MPI_ERR_ARG);
    return first_members(
        *g, nnodes, comm_graph, [&](GridComm& r) { r.graph = graph; },
        [&](MPI_Comm made, MPI_Comm* out) { return PMPI_Graph_create(made, nnodes, index, edges, 0, out); });
  });
}

int GRIDMPI(Topo_test)(MPI_Comm comm, int* status) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Topo_test(comm, status);
  *status = g->cart ? MPI_CART : g->graph ? MPI_GRAPH : g->dist_graph ? MPI_DIST_GRAPH : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int GRIDMPI(Cartdim_get)(MPI_Comm comm, int* ndims) {
  if (!gridmpi::grid(comm)) return PMPI_Cartdim_get(comm, ndims);
  return gridmpi::call("MPI_Cartdim_get", comm, [&] {
    *ndims = static_cast<int>(cart_of(comm).dims.size());
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Cart_get)(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Cart_get(comm, maxdims, dims, periods, coords);
  return gridmpi::call("MPI_Cart_get", comm, [&] {
    const GridComm::Cart& cart = cart_of(comm);
    const std::vector<int> mine = coords_of(cart, g->rank());
    for (int d = 0; d < maxdims && d < static_cast<int>(cart.dims.size()); ++d) {
      dims[d] = cart.dims[d];
      periods[d] = cart.periods[d];
      coords[d] = mine[d];
    }
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Cart_rank)(MPI_Comm comm, const int coords[], int* rank) {
  if (!gridmpi::grid(comm)) return PMPI_Cart_rank(comm, coords, rank);
  return gridmpi::call("MPI_Cart_rank", comm, [&] {
    const GridComm::Cart& cart = cart_of(comm);
    *rank = rank_at(cart, std::vector<int>(coords, coords + cart.dims.size()));
    if (*rank < 0) throw gridrt::ArgumentError("coordinates outside the grid in a dimension that is not periodic", MPI_ERR_ARG);
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Cart_coords)(MPI_Comm comm, int rank, int maxdims, int coords[]) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Cart_coords(comm, rank, maxdims, coords);
  return gridmpi::call("MPI_Cart_coords", comm, [&] {
    const GridComm::Cart& cart = cart_of(comm);
    if (rank < 0 || rank >= g->size()) throw gridrt::ArgumentError(std::to_string(rank) + " is not a rank", MPI_ERR_RANK);
    const std::vector<int> c = coords_of(cart, rank);
    for (int d = 0; d < maxdims && d < static_cast<int>(c.size()); ++d) coords[d] = c[d];
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Cart_shift)(MPI_Comm comm, int direction, int disp, int* rank_source, int* rank_dest) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Cart_shift(comm, direction, disp, rank_source, rank_dest);
  return gridmpi::call("MPI_Cart_shift", comm, [&] {
    const GridComm::Cart& cart = cart_of(comm);
    if (direction < 0 || direction >= static_cast<int>(cart.dims.size()))
      throw gridrt::ArgumentError("direction " + std::to_string(direction) + " is not a dimension", MPI_ERR_ARG);
    std::vector<int> c = coords_of(cart, g->rank());
    const int here = c[direction];
    c[direction] = here + disp;
    const int dest = rank_at(cart, c);
    c[direction] = here - disp;
    const int source = rank_at(cart, c);
    *rank_dest = dest < 0 ? MPI_PROC_NULL : dest;
    *rank_source = source < 0 ? MPI_PROC_NULL : source;
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Cart_sub)(MPI_Comm comm, const int remain_dims[], MPI_Comm* newcomm) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Cart_sub(comm, remain_dims, newcomm);
  return gridmpi::call("MPI_Cart_sub", comm, [&] {
    const GridComm::Cart cart = cart_of(comm);
    const std::vector<int> c = coords_of(cart, g->rank());
    // Members that share the dropped coordinates form one; ranked by the kept ones.
    GridComm::Cart sub;
    int color = 0, key = 0;
    for (std::size_t d = 0; d < cart.dims.size(); ++d) {
      if (remain_dims[d]) {
        sub.dims.push_back(cart.dims[d]);
        sub.periods.push_back(cart.periods[d]);
        key = key * cart.dims[d] + c[d];
      } else {
        color = color * cart.dims[d] + c[d];
      }
    }
    // No dimension kept: a zero-dimensional topology, of one process (MPI 4.0 §8.5.5, as
    // for MPI_Cart_create with no dimensions): the first one; the others get MPI_COMM_NULL.
    if (sub.dims.empty()) color = g->rank() == 0 ? 0 : MPI_UNDEFINED;
    gridrt::detail::check_mpi(gridmpi_Comm_split(comm, color, key, newcomm), "MPI_Comm_split");
    if (GridComm* r = gridmpi::grid(*newcomm)) {
      r->cart = sub;
    } else if (*newcomm != MPI_COMM_NULL) {  // inside one cluster: MPICH's Cartesian communicator
      MPI_Comm plain = *newcomm;
      if (sub.dims.empty()) sub = {{1}, {0}};
      PMPI_Cart_create(plain, static_cast<int>(sub.dims.size()), sub.dims.data(), sub.periods.data(), 0, newcomm);
      PMPI_Comm_free(&plain);
    }
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Cart_map)(MPI_Comm comm, int ndims, const int dims[], const int periods[], int* newrank) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Cart_map(comm, ndims, dims, periods, newrank);
  int n = 1;
  for (int d = 0; d < ndims; ++d) n *= dims[d];
  *newrank = g->rank() < n ? g->rank() : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int GRIDMPI(Graph_map)(MPI_Comm comm, int nnodes, const int index[], const int edges[], int* newrank) {
  GridComm* g = gridmpi::grid(comm);
  if (!g) return PMPI_Graph_map(comm, nnodes, index, edges, newrank);
  *newrank = g->rank() < nnodes ? g->rank() : MPI_UNDEFINED;
  return MPI_SUCCESS;
}

int GRIDMPI(Graphdims_get)(MPI_Comm comm, int* nnodes, int* nedges) {
  if (!gridmpi::grid(comm)) return PMPI_Graphdims_get(comm, nnodes, nedges);
  return gridmpi::call("MPI_Graphdims_get", comm, [&] {
    const GridComm::Graph& graph = graph_of(comm);
    *nnodes = static_cast<int>(graph.index.size());
    *nedges = static_cast<int>(graph.edges.size());
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Graph_get)(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[]) {
  if (!gridmpi::grid(comm)) return PMPI_Graph_get(comm, maxindex, maxedges, index, edges);
  return gridmpi::call("MPI_Graph_get", comm, [&] {
    const GridComm::Graph& graph = graph_of(comm);
    std::copy_n(graph.index.begin(), std::min<std::size_t>(maxindex, graph.index.size()), index);
    std::copy_n(graph.edges.begin(), std::min<std::size_t>(maxedges, graph.edges.size()), edges);
    return MPI_SUCCESS;
  });
}

namespace {
std::pair<int, int> neighbours_span(const GridComm::Graph& graph, int rank) {
  if (rank < 0 || rank >= static_cast<int>(graph.index.size()))
    throw gridrt::ArgumentError(std::to_string(rank) + " is not a node", MPI_ERR_RANK);
  return {rank == 0 ? 0 : graph.index[rank - 1], graph.index[rank]};
}
}  // namespace

int GRIDMPI(Graph_neighbors_count)(MPI_Comm comm, int rank, int* nneighbors) {
  if (!gridmpi::grid(comm)) return PMPI_Graph_neighbors_count(comm, rank, nneighbors);
  return gridmpi::call("MPI_Graph_neighbors_count", comm, [&] {
    const auto [from, to] = neighbours_span(graph_of(comm), rank);
    *nneighbors = to - from;
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Graph_neighbors)(MPI_Comm comm, int rank, int maxneighbors, int neighbors[]) {
  if (!gridmpi::grid(comm)) return PMPI_Graph_neighbors(comm, rank, maxneighbors, neighbors);
  return gridmpi::call("MPI_Graph_neighbors", comm, [&] {
    const GridComm::Graph& graph = graph_of(comm);
    const auto [from, to] = neighbours_span(graph, rank);
    for (int i = from; i < to && i - from < maxneighbors; ++i) neighbors[i - from] = graph.edges[i];
    return MPI_SUCCESS;
  });
}

// ---------------------------------------------------------------- distributed graphs

namespace {

std::vector<int> weights_or_none(const int* weights, int n) {
  if (weights == MPI_UNWEIGHTED || weights == MPI_WEIGHTS_EMPTY || n == 0) return {};
  return std::vector<int>(weights, weights + n);
}

void check_ranks(const std::vector<int>& ranks, int size, const char* what) {
  for (int r : ranks)
    if (r < 0 || r >= size)
      throw gridrt::ArgumentError(std::string(what) + " " + std::to_string(r) + " is not a rank of the communicator", MPI_ERR_ARG);
}

// A duplicate of `comm` carrying `graph`: a grid communicator's, or MPICH's own distributed
// graph when the duplicate holds this cluster's processes alone.
int with_dist_graph(MPI_Comm comm, GridComm::DistGraph graph, MPI_Comm* out) {
  gridrt::detail::check_mpi(gridmpi_Comm_dup(comm, out), "MPI_Comm_dup");
  if (GridComm* r = gridmpi::grid(*out)) {
    r->dist_graph = std::move(graph);
    return MPI_SUCCESS;
  }
  MPI_Comm plain = *out;
  const int* sw = graph.weighted ? (graph.sourceweights.empty() ? MPI_WEIGHTS_EMPTY : graph.sourceweights.data()) : MPI_UNWEIGHTED;
  const int* dw = graph.weighted ? (graph.destweights.empty() ? MPI_WEIGHTS_EMPTY : graph.destweights.data()) : MPI_UNWEIGHTED;
  const int rc =
      PMPI_Dist_graph_create_adjacent(plain, static_cast<int>(graph.sources.size()), graph.sources.data(), sw,
                                      static_cast<int>(graph.destinations.size()), graph.destinations.data(), dw, MPI_INFO_NULL, 0, out);
  PMPI_Comm_free(&plain);
  return rc;
}

GridComm::DistGraph& dist_graph_of(MPI_Comm comm) {
  GridComm* g = gridmpi::grid(comm);
  if (!g->dist_graph) throw gridrt::ArgumentError("the communicator has no distributed graph topology", MPI_ERR_TOPOLOGY);
  return *g->dist_graph;
}

}  // namespace

int GRIDMPI(Dist_graph_create_adjacent)(MPI_Comm comm_old, int indegree, const int sources[], const int sourceweights[], int outdegree,
                                        const int destinations[], const int destweights[], MPI_Info info, int reorder,
                                        MPI_Comm* comm_dist_graph) {
  GridComm* g = gridmpi::grid(comm_old);
  if (!g)
    return PMPI_Dist_graph_create_adjacent(comm_old, indegree, sources, sourceweights, outdegree, destinations, destweights, info, reorder,
                                           comm_dist_graph);
  if (g->inter()) return gridmpi::fail(comm_old, MPI_ERR_COMM, "MPI_Dist_graph_create_adjacent: not defined on an intercommunicator");
  return gridmpi::call("MPI_Dist_graph_create_adjacent", comm_old, [&] {
    if (indegree < 0 || outdegree < 0) throw gridrt::ArgumentError("a negative degree", MPI_ERR_ARG);
    GridComm::DistGraph graph;
    graph.sources.assign(sources, sources + indegree);
    graph.destinations.assign(destinations, destinations + outdegree);
    graph.weighted = sourceweights != MPI_UNWEIGHTED;
    graph.sourceweights = weights_or_none(sourceweights, indegree);
    graph.destweights = weights_or_none(destweights, outdegree);
    check_ranks(graph.sources, g->size(), "source");
    check_ranks(graph.destinations, g->size(), "destination");
    // (reorder is allowed, not required: ranks stay as they are)
    return with_dist_graph(comm_old, std::move(graph), comm_dist_graph);
  });
}

// Each edge given anywhere reaches both its ends: one all-to-all of the edge counts, one of
// the edges (source, destination, weight), each to its source's and its destination's
// process; each process then lists its edges in the order of the ranks that gave them.
int GRIDMPI(Dist_graph_create)(MPI_Comm comm_old, int n, const int sources[], const int degrees[], const int destinations[],
                               const int weights[], MPI_Info info, int reorder, MPI_Comm* comm_dist_graph) {
  GridComm* g = gridmpi::grid(comm_old);
  if (!g) return PMPI_Dist_graph_create(comm_old, n, sources, degrees, destinations, weights, info, reorder, comm_dist_graph);
  if (g->inter()) return gridmpi::fail(comm_old, MPI_ERR_COMM, "MPI_Dist_graph_create: not defined on an intercommunicator");
  return gridmpi::call("MPI_Dist_graph_create", comm_old, [&] {
    if (n < 0) throw gridrt::ArgumentError("a negative number of sources", MPI_ERR_ARG);
    const int size = g->size();
    std::vector<std::vector<int>> to(static_cast<std::size_t>(size));  // triples for each process
    const bool weighted = weights != MPI_UNWEIGHTED;
    for (int i = 0, e = 0; i < n; ++i) {
      if (degrees[i] < 0) throw gridrt::ArgumentError("a negative degree", MPI_ERR_ARG);
      for (int k = 0; k < degrees[i]; ++k, ++e) {
        const int s = sources[i], d = destinations[e], w = weighted && weights != MPI_WEIGHTS_EMPTY ? weights[e] : 1;
        check_ranks({s, d}, size, "an edge's end");
        to[static_cast<std::size_t>(s)].insert(to[static_cast<std::size_t>(s)].end(), {s, d, w});
        if (d != s) to[static_cast<std::size_t>(d)].insert(to[static_cast<std::size_t>(d)].end(), {s, d, w});
      }
    }
    std::vector<int> counts(static_cast<std::size_t>(size)), their(static_cast<std::size_t>(size));
    for (int p = 0; p < size; ++p) counts[p] = static_cast<int>(to[p].size());
    gridrt::detail::check_mpi(gridmpi_Alltoall(counts.data(), 1, MPI_INT, their.data(), 1, MPI_INT, comm_old), "MPI_Alltoall");
    std::vector<int> sdispls(size, 0), rdispls(size, 0), out, in;
    for (int p = 0; p < size; ++p) {
      sdispls[p] = static_cast<int>(out.size());
      out.insert(out.end(), to[p].begin(), to[p].end());
      rdispls[p] = p ? rdispls[p - 1] + their[p - 1] : 0;
    }
    in.resize(static_cast<std::size_t>(rdispls[size - 1] + their[size - 1]));
    gridrt::detail::check_mpi(
        gridmpi_Alltoallv(out.data(), counts.data(), sdispls.data(), MPI_INT, in.data(), their.data(), rdispls.data(), MPI_INT, comm_old),
        "MPI_Alltoallv");
    GridComm::DistGraph graph;
    graph.weighted = weighted;
    const int me = g->rank();
    for (std::size_t i = 0; i + 2 < in.size(); i += 3) {
      const int s = in[i], d = in[i + 1], w = in[i + 2];
      if (d == me) {
        graph.sources.push_back(s);
        if (weighted) graph.sourceweights.push_back(w);
      }
      if (s == me) {
        graph.destinations.push_back(d);
        if (weighted) graph.destweights.push_back(w);
      }
    }
    return with_dist_graph(comm_old, std::move(graph), comm_dist_graph);
  });
}

int GRIDMPI(Dist_graph_neighbors_count)(MPI_Comm comm, int* indegree, int* outdegree, int* weighted) {
  if (!gridmpi::grid(comm)) return PMPI_Dist_graph_neighbors_count(comm, indegree, outdegree, weighted);
  return gridmpi::call("MPI_Dist_graph_neighbors_count", comm, [&] {
    const GridComm::DistGraph& graph = dist_graph_of(comm);
    *indegree = static_cast<int>(graph.sources.size());
    *outdegree = static_cast<int>(graph.destinations.size());
    *weighted = graph.weighted ? 1 : 0;
    return MPI_SUCCESS;
  });
}

int GRIDMPI(Dist_graph_neighbors)(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[], int maxoutdegree, int destinations[],
                                  int destweights[]) {
  if (!gridmpi::grid(comm))
    return PMPI_Dist_graph_neighbors(comm, maxindegree, sources, sourceweights, maxoutdegree, destinations, destweights);
  return gridmpi::call("MPI_Dist_graph_neighbors", comm, [&] {
    const GridComm::DistGraph& graph = dist_graph_of(comm);
    const auto copy = [](const std::vector<int>& from, int max, int* to) {
      if (to && to != MPI_UNWEIGHTED && to != MPI_WEIGHTS_EMPTY)
        std::copy_n(from.begin(), std::min<std::size_t>(static_cast<std::size_t>(std::max(max, 0)), from.size()), to);
    };
    copy(graph.sources, maxindegree, sources);
    copy(graph.destinations, maxoutdegree, destinations);
    if (graph.weighted) {
      copy(graph.sourceweights, maxindegree, sourceweights);
      copy(graph.destweights, maxoutdegree, destweights);
    }
    return MPI_SUCCESS;
  });
}

// ---------------------------------------------------------------- neighbourhoods

namespace gridmpi {
Neighborhood neighborhood(const GridComm& g) {
  Neighborhood n;
  if (g.cart) {
    const int dims = static_cast<int>(g.cart->dims.size());
    n.slots = 2 * std::max(dims, 1);
    std::vector<int> c = coords_of(*g.cart, g.rank());
    for (int d = 0; d < dims; ++d) {
      const int here = c[static_cast<std::size_t>(d)];
      for (int step : {-1, +1}) {
        c[static_cast<std::size_t>(d)] = here + step;
        const int peer = rank_at(*g.cart, c);
        n.sources.push_back(peer);
        n.destinations.push_back(peer);
        // Slot 2d: sent downwards; 2d + 1: sent upwards. From below comes what was sent upwards.
        n.destination_slots.push_back(step < 0 ? 2 * d : 2 * d + 1);
        n.source_slots.push_back(step < 0 ? 2 * d + 1 : 2 * d);
      }
      c[static_cast<std::size_t>(d)] = here;
    }
    return n;
  }
  if (g.graph) {
    const auto [from, to] = neighbours_span(*g.graph, g.rank());
    n.sources.assign(g.graph->edges.begin() + from, g.graph->edges.begin() + to);
    n.destinations = n.sources;
  } else if (g.dist_graph) {
    n.sources = g.dist_graph->sources;
    n.destinations = g.dist_graph->destinations;
  } else {
    throw gridrt::ArgumentError("the communicator has no Cartesian, graph or distributed graph topology", MPI_ERR_TOPOLOGY);
  }
  n.source_slots.assign(n.sources.size(), 0);
  n.destination_slots.assign(n.destinations.size(), 0);
  return n;
}
}  // namespace gridmpi
