/* Communicators, groups, attributes, topology and errors across clusters, as an unmodified
 * MPI program sees them. Run with at least 3 processes over at least 2 clusters. Under
 * gridrun it also reads the grid's topology (gridrt/mpichx.h, weak symbols) and checks
 * that communicators of one cluster never send through the relays (gridrt_wan_traffic, a
 * weak symbol too; meaningful with GRIDRT_DIRECT=off). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gridrt/mpichx.h"

int gridrt_wan_traffic(unsigned long long* messages, unsigned long long* bytes) __attribute__((weak));

static int rank, size;

/* ---------------------------------------------------------------- attributes */

static int copies, deletes;
static int copy_plus_one(MPI_Comm comm, int keyval, void* extra, void* in, void* out, int* flag) {
  (void)comm, (void)keyval, (void)extra;
  ++copies;
  *(void**)out = (void*)((char*)in + 1);
  *flag = 1;
  return MPI_SUCCESS;
}
static int count_delete(MPI_Comm comm, int keyval, void* value, void* extra) {
  (void)comm, (void)keyval, (void)value, (void)extra;
  ++deletes;
  return MPI_SUCCESS;
}

static void attributes_and_dup(void) {
  int keyval, flag = 0;
  void* value = NULL;
  MPI_Comm_create_keyval(copy_plus_one, count_delete, &keyval, NULL);
  MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, (void*)(char*)100);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  CHECK(copies == 1, "the copy callback ran %d times on dup", copies);
  MPI_Comm_get_attr(dup, keyval, &value, &flag);
  CHECK(flag && value == (void*)(char*)101, "the dup's attribute is the copy's");
  int result;
  MPI_Comm_compare(MPI_COMM_WORLD, dup, &result);
  CHECK(result == MPI_CONGRUENT, "world and its dup compare %d", result);
  MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &result);
  CHECK(result == MPI_IDENT, "world and world compare %d", result);
  MPI_Comm_set_name(dup, "the dup");
  char name[MPI_MAX_OBJECT_NAME];
  int len;
  MPI_Comm_get_name(dup, name, &len);
  CHECK(strcmp(name, "the dup") == 0, "name %s", name);
  int sum = 0, one = 1;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup);
  CHECK(sum == size, "allreduce on the dup: %d", sum);
  MPI_Comm_free(&dup);
  CHECK(deletes == 1 && dup == MPI_COMM_NULL, "freeing the dup ran the delete callback %d times", deletes);
  MPI_Comm_delete_attr(MPI_COMM_WORLD, keyval);
  CHECK(deletes == 2, "deleting the attribute ran the callback");
  MPI_Comm_free_keyval(&keyval);
  /* Non-blocking dup, used once complete. */
  MPI_Request r;
  MPI_Comm idup;
  MPI_Comm_idup(MPI_COMM_WORLD, &idup, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, idup);
  int idup_size = 0;
  MPI_Comm_size(idup, &idup_size);
  CHECK(sum == size && idup_size == size, "the idup: allreduce %d, size %d", sum, idup_size);
  MPI_Comm_free(&idup);
}

/* ---------------------------------------------------------------- splitting */

static void wan_traffic(unsigned long long* messages) {
  unsigned long long bytes = 0;
  *messages = 0;
  if (gridrt_wan_traffic) gridrt_wan_traffic(messages, &bytes);
}

static void splits(void) {
  MPI_Comm parity;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &parity); /* ordered backwards */
  int prank, psize;
  MPI_Comm_rank(parity, &prank);
  MPI_Comm_size(parity, &psize);
  const int expect_size = (size + 1 - rank % 2) / 2;
  CHECK(psize == expect_size, "parity size %d", psize);
  int top = rank; /* the highest rank of my parity comes first */
  MPI_Bcast(&top, 1, MPI_INT, 0, parity);
  const int first = size - 1 - ((size - 1) % 2 != rank % 2);
  CHECK(top == first && prank == (first - rank) / 2, "parity: rank %d of %d, first %d", prank, psize, top);
  int result;
  MPI_Comm_compare(MPI_COMM_WORLD, parity, &result);
  CHECK(result == MPI_UNEQUAL, "world and a half compare %d", result);
  MPI_Comm reversed;
  MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &reversed);
  MPI_Comm_compare(MPI_COMM_WORLD, reversed, &result);
  CHECK(result == MPI_SIMILAR, "world and its reverse compare %d", result);
  MPI_Comm_free(&reversed);
  MPI_Comm_free(&parity);
  MPI_Comm none;
  MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, 0, &none);
  CHECK((rank == 0) == (none == MPI_COMM_NULL), "MPI_UNDEFINED gives MPI_COMM_NULL");
  if (none != MPI_COMM_NULL) MPI_Comm_free(&none);

  /* By the grid's levels: a cluster's communicator holds this cluster's processes only, and
   * its collectives never leave the cluster. */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_hw_resource_type", "cluster");
  MPI_Comm cluster;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &cluster);
  CHECK(cluster != MPI_COMM_NULL, "a cluster communicator");
  MPI_Comm shared;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
  int csize, ssize;
  MPI_Comm_size(cluster, &csize);
  MPI_Comm_size(shared, &ssize);
  CHECK(ssize <= csize && csize < size, "a node (%d) within a cluster (%d) within the job (%d)", ssize, csize, size);
  if (GRIDRT_HAS_TOPOLOGY) {
    int *depths, **colors, flag;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPICHX_TOPOLOGY_DEPTHS, &depths, &flag);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPICHX_TOPOLOGY_COLORS, &colors, &flag);
    CHECK(flag && depths[rank] == MPICHX_LEVELS, "depth %d", depths[rank]);
    int mine = colors[rank][MPICHX_LEVEL_CLUSTER], others = 0;
    for (int r = 0; r < size; ++r) others += colors[r][MPICHX_LEVEL_CLUSTER] == mine;
    CHECK(others == csize, "%d processes share my cluster color, the cluster communicator has %d", others, csize);
    int* groups;
    MPI_Comm_get_attr(MPI_COMM_WORLD, GRIDRT_GROUP_COLORS, &groups, &flag);
    char group[MPI_MAX_OBJECT_NAME];
    int len = 0;
    CHECK(flag && GRIDRT_Group_name(groups[rank], group, &len) == MPI_SUCCESS && len > 0, "my JobProfile group has a name");
    int* cluster_depths;
    MPI_Comm_get_attr(cluster, MPICHX_TOPOLOGY_DEPTHS, &cluster_depths, &flag);
    CHECK(flag && cluster_depths[0] == MPICHX_LEVELS, "every communicator has the attributes");
  }
  unsigned long long before, after;
  wan_traffic(&before);
  for (int i = 0; i < 10; ++i) {
    int x = i, sum = 0;
    MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, cluster);
    MPI_Bcast(&x, 1, MPI_INT, 0, cluster);
    MPI_Barrier(cluster);
    CHECK(sum == i * csize, "cluster allreduce %d", sum);
  }
  wan_traffic(&after);
  unsigned long long inside = after - before, total_inside = 0;
  MPI_Allreduce(&inside, &total_inside, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  CHECK(total_inside == 0, "a cluster's collectives sent %llu messages to other sites", total_inside);
  wan_traffic(&before);
  int one = 1, sum = 0;
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  wan_traffic(&after);
  unsigned long long across = after - before, total_across = 0;
  MPI_Allreduce(&across, &total_across, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (gridrt_wan_traffic && getenv("GRIDRT_DIRECT") && strcmp(getenv("GRIDRT_DIRECT"), "off") == 0)
    CHECK(total_across > 0, "the world's allreduce crossed no site: the counting sees nothing");
  MPI_Comm_free(&shared);
  MPI_Comm_free(&cluster);
  /* A resource type nobody knows: MPI_COMM_NULL. */
  MPI_Info_set(info, "mpi_hw_resource_type", "no such thing");
  MPI_Comm nothing;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &nothing);
  CHECK(nothing == MPI_COMM_NULL, "an unknown resource type gives MPI_COMM_NULL");
  MPI_Info_free(&info);
}

/* ---------------------------------------------------------------- groups, create */

static void groups_and_create(void) {
  MPI_Group world, evens, odds, firsts, both, common, rest, ranged;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int gsize, grank;
  MPI_Group_size(world, &gsize);
  MPI_Group_rank(world, &grank);
  CHECK(gsize == size && grank == rank, "world group: %d of %d", grank, gsize);
  int even[64], odd[64], ne = 0, no = 0;
  for (int r = 0; r < size; ++r) {
    if (r % 2) odd[no++] = r;
    else even[ne++] = r;
  }
  MPI_Group_incl(world, ne, even, &evens);
  MPI_Group_excl(world, ne, even, &odds);
  int ranges[1][3] = {{0, size - 2, 1}};
  MPI_Group_range_incl(world, 1, ranges, &firsts);
  MPI_Group_range_excl(world, 1, ranges, &ranged); /* the last one alone */
  MPI_Group_union(evens, odds, &both);
  MPI_Group_intersection(evens, firsts, &common);
  MPI_Group_difference(world, evens, &rest);
  int n;
  MPI_Group_size(odds, &n);
  CHECK(n == no, "excl: %d", n);
  MPI_Group_size(ranged, &n);
  CHECK(n == 1, "range_excl: %d", n);
  MPI_Group_size(common, &n);
  CHECK(n == (size - 1 + 1) / 2, "intersection: %d", n);
  int result;
  MPI_Group_compare(both, world, &result);
  CHECK(result == MPI_SIMILAR || (size <= 2 && result == MPI_IDENT), "union of evens and odds vs world: %d", result);
  MPI_Group_compare(rest, odds, &result);
  CHECK(result == MPI_IDENT, "difference vs excl: %d", result);
  int in[2] = {0, no > 0 ? no - 1 : 0}, out[2];
  MPI_Group_translate_ranks(odds, 2, in, world, out);
  CHECK(out[0] == 1 && out[1] == odd[no - 1], "translate: %d %d", out[0], out[1]);
  MPI_Group_translate_ranks(world, 1, &rank, evens, out);
  CHECK(out[0] == (rank % 2 ? MPI_UNDEFINED : rank / 2), "translate into evens: %d", out[0]);
  /* MPI_Comm_create over evens; MPI_Comm_create_group, called by the odd ones alone. */
  MPI_Comm ec;
  MPI_Comm_create(MPI_COMM_WORLD, evens, &ec);
  CHECK((rank % 2 == 0) == (ec != MPI_COMM_NULL), "comm_create membership");
  if (ec != MPI_COMM_NULL) {
    int er, sum = 0;
    MPI_Comm_rank(ec, &er);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, ec);
    CHECK(er == rank / 2 && sum == (ne - 1) * ne, "comm_create: rank %d, sum %d", er, sum);
    MPI_Group eg;
    MPI_Comm_group(ec, &eg);
    MPI_Group_compare(eg, evens, &result);
    CHECK(result == MPI_IDENT, "the created communicator's group: %d", result);
    MPI_Group_free(&eg);
    MPI_Comm_free(&ec);
  }
  if (rank % 2) {
    MPI_Comm oc;
    MPI_Comm_create_group(MPI_COMM_WORLD, odds, 5, &oc);
    int orank = -1, sum = 0;
    MPI_Comm_rank(oc, &orank);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, oc);
    CHECK(orank == rank / 2 && sum == no * no, "comm_create_group: rank %d, sum %d", orank, sum);
    MPI_Comm_free(&oc);
  }
  MPI_Group all[] = {world, evens, odds, firsts, both, common, rest, ranged};
  for (unsigned i = 0; i < sizeof all / sizeof *all; ++i) MPI_Group_free(&all[i]);
}

/* ---------------------------------------------------------------- virtual topologies */

static void cartesian_and_graph(void) {
  int dims[2] = {0, 0}, periods[2] = {1, 0};
  MPI_Dims_create(size, 2, dims);
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  int crank, coords[2], back = -1, status;
  MPI_Topo_test(cart, &status);
  CHECK(status == MPI_CART, "topo_test: %d", status);
  MPI_Comm_rank(cart, &crank);
  MPI_Cart_coords(cart, crank, 2, coords);
  MPI_Cart_rank(cart, coords, &back);
  CHECK(back == crank && coords[0] == crank / dims[1] && coords[1] == crank % dims[1], "cart coords of %d: %d %d", crank, coords[0],
        coords[1]);
  int up, down;
  MPI_Cart_shift(cart, 0, 1, &up, &down);
  int got = -1;
  MPI_Sendrecv(&crank, 1, MPI_INT, down, 0, &got, 1, MPI_INT, up, 0, cart, MPI_STATUS_IGNORE);
  CHECK(got == up, "shifted along the periodic dimension: got %d from %d", got, up);
  MPI_Cart_shift(cart, 1, 1, &up, &down);
  CHECK((coords[1] == dims[1] - 1) == (down == MPI_PROC_NULL), "the non-periodic edge is MPI_PROC_NULL");
  int remain[2] = {0, 1};
  MPI_Comm row;
  MPI_Cart_sub(cart, remain, &row);
  int rsize, rdims = 0;
  MPI_Comm_size(row, &rsize);
  MPI_Cartdim_get(row, &rdims);
  CHECK(rsize == dims[1] && rdims == 1, "a row: %d processes, %d dimension", rsize, rdims);
  MPI_Comm_free(&row);
  MPI_Comm_free(&cart);
  /* A ring graph over every process. */
  int index[64], edges[128];
  for (int r = 0; r < size; ++r) {
    index[r] = 2 * (r + 1);
    edges[2 * r] = (r + 1) % size;
    edges[2 * r + 1] = (r + size - 1) % size;
  }
  MPI_Comm graph;
  MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph);
  int count = 0, neighbours[2];
  MPI_Graph_neighbors_count(graph, rank, &count);
  MPI_Graph_neighbors(graph, rank, 2, neighbours);
  CHECK(count == 2 && neighbours[0] == (rank + 1) % size, "graph neighbours: %d, %d", count, neighbours[0]);
  MPI_Comm_free(&graph);
}

/* ---------------------------------------------------------------- errors */

static int handler_calls, handler_class;
static void handler(MPI_Comm* comm, int* code, ...) {
  (void)comm;
  ++handler_calls;
  handler_class = error_class(*code);
}

static void errors(void) {
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  int x = 0;
  int rc = MPI_Send(&x, 1, MPI_INT, size, 0, dup);
  CHECK(error_class(rc) == MPI_ERR_RANK, "a bad rank: class %d", error_class(rc));
  rc = MPI_Bcast(&x, 1, MPI_INT, size + 1, dup);
  CHECK(error_class(rc) == MPI_ERR_ROOT, "a bad root: class %d", error_class(rc));
  MPI_Errhandler mine;
  MPI_Comm_create_errhandler(handler, &mine);
  MPI_Comm_set_errhandler(dup, mine);
  MPI_Send(&x, 1, MPI_INT, -7, 0, dup);
  CHECK(handler_calls == 1 && handler_class == MPI_ERR_RANK, "the user's handler ran %d times (class %d)", handler_calls, handler_class);
  MPI_Errhandler_free(&mine);
  MPI_Comm_free(&dup);
  /* A file on MPI_COMM_WORLD opens whatever the clusters share (where they declare no
   * file system, it lives in the cluster of rank 0); a window on a communicator of one
   * cluster is MPICH's. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_File file;
  rc = MPI_File_open(MPI_COMM_WORLD, "/tmp/gridrt-comms-test-file", MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE,
                     MPI_INFO_NULL, &file);
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  CHECK(rc == MPI_SUCCESS, "MPI_File_open on MPI_COMM_WORLD: class %d, \"%s\"", error_class(rc), text);
  if (rc == MPI_SUCCESS) MPI_File_close(&file);
  MPI_Win win;
  rc = MPI_Win_create(&x, sizeof x, sizeof x, MPI_INFO_NULL, MPI_COMM_SELF, &win);
  CHECK(rc == MPI_SUCCESS, "a window on MPI_COMM_SELF is MPICH's: %d", rc);
  if (rc == MPI_SUCCESS) MPI_Win_free(&win);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char** argv) {
  if (!start(&argc, &argv, "comms", 3, &rank, &size)) return 2;
  attributes_and_dup();
  splits();
  groups_and_create();
  cartesian_and_graph();
  errors();
  return finish("comms");
}
