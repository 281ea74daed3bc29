/* Neighbourhood collectives across clusters, as an unmodified MPI program uses them: on a
 * periodic ring over the world (MPI_Cart_create), on a 2 x n torus (its first dimension of
 * two: each process has the same neighbour above and below, whose blocks MPI tells apart
 * by direction), on a graph and on distributed graphs (adjacent and not); blocking,
 * non-blocking and persistent. Also persistent collectives started in another order than
 * they were made in. Run with at least 3 processes. */
#include <string.h>

#include "check.h"

static int rank, size;

/* What process `from` sends in its block `i`. */
static int value(int from, int i) { return 1000 * from + i; }

/* The ring: neighbours below and above; allgather gets each one's rank, alltoall each
 * one's block meant for this process (below sends its block 1 up, above its block 0 down). */
static void ring(void) {
  const int periods[1] = {1};
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 1, &size, periods, 0, &cart);
  const int below = (rank + size - 1) % size, above = (rank + 1) % size;
  int got[2] = {-1, -1}, out[2] = {value(rank, 0), value(rank, 1)}, in[2] = {-1, -1};
  MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, cart);
  CHECK(got[0] == below && got[1] == above, "ring allgather gave %d %d", got[0], got[1]);
  MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, cart);
  CHECK(in[0] == value(below, 1) && in[1] == value(above, 0), "ring alltoall gave %d %d", in[0], in[1]);
  /* The v form: 1 int down, 2 up, received in the other order. */
  int counts[2] = {2, 1}, displs[2] = {3, 0}, outv[3] = {value(rank, 5), value(rank, 6), value(rank, 7)}, inv[5] = {-1, -1, -1, -1, -1};
  const int sdispls[2] = {0, 1}, scounts[2] = {1, 2};
  MPI_Neighbor_alltoallv(outv, scounts, sdispls, MPI_INT, inv, counts, displs, MPI_INT, cart);
  CHECK(inv[3] == value(below, 6) && inv[4] == value(below, 7) && inv[0] == value(above, 5) && inv[1] == -1, "ring alltoallv: %d %d %d %d",
        inv[3], inv[4], inv[0], inv[1]);
  MPI_Request r;
  int gi[2] = {-1, -1};
  MPI_Ineighbor_allgather(&rank, 1, MPI_INT, gi, 1, MPI_INT, cart, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  CHECK(gi[0] == below && gi[1] == above, "ring ineighbor_allgather gave %d %d", gi[0], gi[1]);
  MPI_Comm_free(&cart);
}

/* A 2 x m torus (m = size / 2): along the first dimension the neighbour below and above
 * are one process; what it sends down arrives as the block from above, and the other way. */
static void torus(void) {
  const int m = size / 2;
  int dims[2] = {2, m}, periods[2] = {1, 1};
  MPI_Comm cart;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
  if (cart == MPI_COMM_NULL) return; /* (an odd size leaves one process out) */
  int me, coords[2];
  MPI_Comm_rank(cart, &me);
  MPI_Cart_coords(cart, me, 2, coords);
  int out[4], in[4] = {-1, -1, -1, -1};
  for (int i = 0; i < 4; ++i) out[i] = value(me, i);
  MPI_Neighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, cart);
  const int other_row = ((1 - coords[0]) * m) + coords[1];
  const int left = coords[0] * m + (coords[1] + m - 1) % m, right = coords[0] * m + (coords[1] + 1) % m;
  CHECK(in[0] == value(other_row, 1) && in[1] == value(other_row, 0), "torus, first dimension: %d %d", in[0], in[1]);
  CHECK(in[2] == value(left, 3) && in[3] == value(right, 2), "torus, second dimension: %d %d", in[2], in[3]);
  MPI_Comm_free(&cart);
}

/* A star: process 0 is every other's neighbour. As a graph, and as a distributed graph made
 * by each process giving its own edges (adjacent) and by process 0 giving them all. */
static void star(void) {
  int index[64], edges[128], n = 0;
  for (int p = 0; p < size; ++p) {
    if (p == 0)
      for (int q = 1; q < size; ++q) edges[n++] = q;
    else edges[n++] = 0;
    index[p] = n;
  }
  MPI_Comm graph;
  MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph);
  int got[64];
  MPI_Neighbor_allgather(&rank, 1, MPI_INT, got, 1, MPI_INT, graph);
  if (rank == 0)
    for (int q = 1; q < size; ++q) CHECK(got[q - 1] == q, "graph allgather at the centre: %d from %d", got[q - 1], q);
  else CHECK(got[0] == 0, "graph allgather at a leaf: %d", got[0]);
  MPI_Comm_free(&graph);

  int peers[64], degree = 0;
  if (rank == 0)
    for (int q = 1; q < size; ++q) peers[degree++] = q;
  else peers[degree++] = 0;
  MPI_Comm adjacent, general;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, degree, peers, MPI_UNWEIGHTED, degree, peers, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &adjacent);
  int status = -1, in = -1, out = -1, weighted = -1;
  MPI_Topo_test(adjacent, &status);
  MPI_Dist_graph_neighbors_count(adjacent, &in, &out, &weighted);
  CHECK(status == MPI_DIST_GRAPH && in == degree && out == degree && !weighted, "adjacent graph: topology %d, degrees %d %d", status, in,
        out);
  /* Process 0 gives every edge, both ways, weighted by the leaf's rank. */
  int sources[128], degrees[128], dests[128], weights[128], ns = 0, ne = 0;
  if (rank == 0) {
    sources[ns] = 0, degrees[ns++] = size - 1;
    for (int q = 1; q < size; ++q) dests[ne] = q, weights[ne++] = q;
    for (int q = 1; q < size; ++q) sources[ns] = q, degrees[ns++] = 1, dests[ne] = 0, weights[ne++] = q;
  }
  MPI_Dist_graph_create(MPI_COMM_WORLD, ns, sources, degrees, dests, weights, MPI_INFO_NULL, 0, &general);
  MPI_Dist_graph_neighbors_count(general, &in, &out, &weighted);
  CHECK(in == degree && out == degree && weighted, "general graph: degrees %d %d, weighted %d", in, out, weighted);
  int srcs[64], sw[64], dsts[64], dw[64];
  MPI_Dist_graph_neighbors(general, 64, srcs, sw, 64, dsts, dw);
  if (rank != 0)
    CHECK(srcs[0] == 0 && dsts[0] == 0 && sw[0] == rank && dw[0] == rank, "a leaf's edges: %d %d w %d %d", srcs[0], dsts[0], sw[0], dw[0]);
  /* Leaves send the centre their rank squared; the centre sends each leaf its own value. */
  int send[64], recv[64];
  for (int i = 0; i < degree; ++i) send[i] = rank == 0 ? value(0, peers[i]) : rank * rank;
  MPI_Request r;
  MPI_Ineighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, adjacent, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  if (rank == 0)
    for (int i = 0; i < degree; ++i)
      CHECK(recv[i] == peers[i] * peers[i], "dist graph alltoall at the centre: %d from %d", recv[i], peers[i]);
  else CHECK(recv[0] == value(0, rank), "dist graph alltoall at a leaf: %d", recv[0]);
  /* Persistent, three rounds, on the general one (the centre lists its neighbours in the order given). */
  MPI_Request p;
  int round_value = 0, from_neighbours[64];
  MPI_Neighbor_allgather_init(&round_value, 1, MPI_INT, from_neighbours, 1, MPI_INT, general, MPI_INFO_NULL, &p);
  for (int round = 1; round <= 3; ++round) {
    round_value = 100 * round + rank;
    MPI_Start(&p);
    MPI_Wait(&p, MPI_STATUS_IGNORE);
    MPI_Dist_graph_neighbors(general, 64, srcs, sw, 64, dsts, dw);
    for (int i = 0; i < degree; ++i)
      CHECK(from_neighbours[i] == 100 * round + srcs[i], "persistent round %d: %d from %d", round, from_neighbours[i], srcs[i]);
  }
  MPI_Request_free(&p);
  MPI_Comm_free(&general);
  MPI_Comm_free(&adjacent);
}

/* Persistent collectives match by the order they were made in, whatever order each process
 * starts them in (MPI 4.0): a broadcast and a barrier started in opposite orders. */
static void persistent_order(void) {
  int a = -1, sum = 0, one = 1;
  MPI_Request rs[3];
  MPI_Bcast_init(&a, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[0]);
  MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &rs[1]);
  MPI_Allreduce_init(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rs[2]);
  if (rank == 0) a = 42;
  if (rank % 2 == 0) {
    MPI_Start(&rs[0]);
    MPI_Start(&rs[1]);
    MPI_Start(&rs[2]);
  } else {
    MPI_Start(&rs[2]);
    MPI_Start(&rs[1]);
    MPI_Start(&rs[0]);
  }
  /* A blocking collective meanwhile, on the same communicator. */
  int max = -1;
  MPI_Allreduce(&rank, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Waitall(3, rs, MPI_STATUSES_IGNORE);
  CHECK(a == 42 && sum == size && max == size - 1, "persistent out of order: bcast %d, allreduce %d, meanwhile %d", a, sum, max);
  for (int i = 0; i < 3; ++i) MPI_Request_free(&rs[i]);
}

int main(int argc, char** argv) {
  if (!start(&argc, &argv, "neighbors", 3, &rank, &size)) return 2;
  ring();
  torus();
  star();
  persistent_order();
  return finish("neighbors");
}
