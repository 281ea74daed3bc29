/* Intercommunicators across clusters, as an unmodified MPI program uses them: the world's
 * even and odd ranks as two groups (each spanning clusters when the job does), joined by
 * MPI_Intercomm_create over MPI_COMM_WORLD; point-to-point between the groups, every
 * collective MPI defines on intercommunicators, dup, split, create, merge; and an intercommunicator inside
 * one cluster (MPICH's own). Run with at least 3 processes over at least 2 clusters. */
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int rank, size;

/* The world ranks of the group of parity p, in rank order. */
static int group_size(int p) { return (size - p + 1) / 2; }
static int world_rank_of(int p, int r) { return 2 * r + p; }

static void point_to_point(MPI_Comm inter, int color, int me, int n, int remote_n) {
  /* Local rank r sends its world rank to remote rank r % remote_n, tag r. */
  MPI_Request req;
  MPI_Isend(&rank, 1, MPI_INT, me % remote_n, me, inter, &req);
  for (int q = 0; q < remote_n; ++q) {
    if (q % n != me) continue;
    int got = -1;
    MPI_Status st;
    MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, q, inter, &st);
    CHECK(st.MPI_SOURCE == q, "a message of tag %d came from remote rank %d", q, st.MPI_SOURCE);
    CHECK(got == world_rank_of(1 - color, q), "remote rank %d sent %d", q, got);
  }
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  /* Probe, then receive, between the leaders. */
  if (me == 0) {
    double x = 1.5 + color;
    MPI_Send(&x, 1, MPI_DOUBLE, 0, 99, inter);
    MPI_Status st;
    MPI_Probe(0, 99, inter, &st);
    int count = 0;
    MPI_Get_count(&st, MPI_DOUBLE, &count);
    CHECK(count == 1 && st.MPI_SOURCE == 0, "probe: count %d from %d", count, st.MPI_SOURCE);
    MPI_Recv(&x, 1, MPI_DOUBLE, 0, 99, inter, MPI_STATUS_IGNORE);
    CHECK(x == 1.5 + (1 - color), "the other leader sent %g", x);
  }
}

static void collectives(MPI_Comm inter, int color, int me, int n, int remote_n) {
  const int other = 1 - color;
  int expected_sum = 0;
  for (int q = 0; q < remote_n; ++q) expected_sum += world_rank_of(other, q);

  MPI_Barrier(inter);

  /* Broadcast from group 0's rank 0, then from group 1's last rank. */
  for (int from = 0; from < 2; ++from) {
    const int root_local = from == 0 ? 0 : group_size(1) - 1;
    int value = -1;
    int root = color == from ? (me == root_local ? MPI_ROOT : MPI_PROC_NULL) : root_local;
    if (root == MPI_ROOT) value = 1000 + from;
    MPI_Bcast(&value, 1, MPI_INT, root, inter);
    if (color != from) CHECK(value == 1000 + from, "bcast from group %d gave %d", from, value);
    else if (root == MPI_PROC_NULL) CHECK(value == -1, "bcast changed a non-root's buffer of the root's group");
  }

  /* All-reduce: each group gets the other's sum. */
  int sum = -1;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, inter);
  CHECK(sum == expected_sum, "allreduce gave %d, the other group's ranks add up to %d", sum, expected_sum);

  /* Reduce to group 1's rank 0 of group 0's ranks, with a non-commutative view: MPI_MAX here. */
  int max = -1;
  MPI_Reduce(&rank, &max, 1, MPI_INT, MPI_MAX, color == 1 ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter);
  if (color == 1 && me == 0) CHECK(max == world_rank_of(0, group_size(0) - 1), "reduce gave %d", max);

  /* Gather at group 0's rank 0, and gatherv with each block its sender's rank + 1 ints long. */
  int* all = calloc((size_t)remote_n * (size_t)(remote_n + 1), sizeof(int));
  const int groot = color == 0 ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  MPI_Gather(&rank, 1, MPI_INT, all, 1, MPI_INT, groot, inter);
  if (groot == MPI_ROOT)
    for (int q = 0; q < remote_n; ++q) CHECK(all[q] == world_rank_of(1, q), "gather: block %d is %d", q, all[q]);
  int mine[64];
  for (int i = 0; i <= me && i < 64; ++i) mine[i] = rank * 100 + i;
  int* counts = malloc(sizeof(int) * (size_t)remote_n);
  int* displs = malloc(sizeof(int) * (size_t)remote_n);
  for (int q = 0, at = 0; q < remote_n; ++q) counts[q] = q + 1, displs[q] = at, at += q + 1;
  MPI_Gatherv(mine, me + 1, MPI_INT, all, counts, displs, MPI_INT, groot, inter);
  if (groot == MPI_ROOT)
    for (int q = 0; q < remote_n; ++q)
      for (int i = 0; i <= q; ++i)
        CHECK(all[displs[q] + i] == world_rank_of(1, q) * 100 + i, "gatherv: block %d element %d is %d", q, i, all[displs[q] + i]);

  /* Scatter from group 1's rank 0 to group 0, and scatterv. */
  const int sroot = color == 1 ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  int* out = malloc(sizeof(int) * (size_t)remote_n * (size_t)(remote_n + 1));
  for (int q = 0; q < remote_n * (remote_n + 1); ++q) out[q] = 7000 + q;
  int got[64] = {0};
  MPI_Scatter(out, 1, MPI_INT, got, 1, MPI_INT, sroot, inter);
  if (color == 0) CHECK(got[0] == 7000 + me, "scatter gave %d", got[0]);
  MPI_Scatterv(out, counts, displs, MPI_INT, got, me + 1, MPI_INT, sroot, inter);
  if (color == 0)
    for (int i = 0; i <= me; ++i) CHECK(got[i] == 7000 + me * (me + 1) / 2 + i, "scatterv element %d is %d", i, got[i]);

  /* All-gather: every remote world rank, in remote rank order; allgatherv likewise. */
  MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, inter);
  for (int q = 0; q < remote_n; ++q) CHECK(all[q] == world_rank_of(other, q), "allgather: block %d is %d", q, all[q]);
  MPI_Allgatherv(mine, me + 1, MPI_INT, all, counts, displs, MPI_INT, inter);
  for (int q = 0; q < remote_n; ++q) CHECK(all[displs[q] + q] == world_rank_of(other, q) * 100 + q, "allgatherv: block %d", q);

  /* All-to-all: to remote rank q, rank*1000 + q. */
  int* to = malloc(sizeof(int) * (size_t)remote_n);
  int* from = malloc(sizeof(int) * (size_t)remote_n);
  for (int q = 0; q < remote_n; ++q) to[q] = rank * 1000 + q;
  MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, inter);
  for (int q = 0; q < remote_n; ++q) CHECK(from[q] == world_rank_of(other, q) * 1000 + me, "alltoall: from %d got %d", q, from[q]);

  /* Reduce-scatter-block: the groups' totals match when each takes the other's size. */
  int* vec = malloc(sizeof(int) * (size_t)(n * remote_n));
  for (int i = 0; i < n * remote_n; ++i) vec[i] = rank + i;
  int part[64];
  MPI_Reduce_scatter_block(vec, part, remote_n, MPI_INT, MPI_SUM, inter);
  for (int i = 0; i < remote_n; ++i) {
    int want = 0;
    for (int q = 0; q < remote_n; ++q) want += world_rank_of(other, q) + me * remote_n + i;
    CHECK(part[i] == want, "reduce_scatter_block: element %d is %d, not %d", i, part[i], want);
  }

  /* Non-blocking, completed while the other group is still on its way. */
  MPI_Request r;
  sum = -1;
  MPI_Iallreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, inter, &r);
  MPI_Wait(&r, MPI_STATUS_IGNORE);
  CHECK(sum == expected_sum, "iallreduce gave %d", sum);

  /* Scans are not defined on intercommunicators. */
  MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
  const int rc = MPI_Scan(&rank, &sum, 1, MPI_INT, MPI_SUM, inter);
  CHECK(rc != MPI_SUCCESS, "MPI_Scan on an intercommunicator succeeded");
  free(all), free(counts), free(displs), free(out), free(to), free(from), free(vec);
}

/* MPI_Comm_split of the intercommunicator: each group splits into its members of world rank
 * below size / 2 and the rest, ordered backwards, and each half meets the other group's
 * same half (a half the other group lacks gets MPI_COMM_NULL). Then MPI_Comm_create with
 * each group's members but its rank 0 (all get MPI_COMM_NULL where a group is left empty). */
static void split_and_create(MPI_Comm inter, int color, int me, int n, int remote_n) {
  const int low = rank < size / 2;
  MPI_Comm part;
  MPI_Comm_split(inter, low, -rank, &part);
  int local_n = 0, their_n = 0, my_rank = -1, their_sum = 0;
  for (int w = size - 1; w >= 0; --w) {
    if ((w < size / 2) != low) continue;
    if (w % 2 == color) {
      if (w == rank) my_rank = local_n;
      ++local_n;
    } else {
      ++their_n;
      their_sum += w;
    }
  }
  if (their_n == 0) {
    CHECK(part == MPI_COMM_NULL, "a split half without a match in the other group is not MPI_COMM_NULL");
  } else {
    int r = -1, s = 0, rs = 0, flag = 0, sum = -1;
    MPI_Comm_rank(part, &r);
    MPI_Comm_size(part, &s);
    MPI_Comm_remote_size(part, &rs);
    MPI_Comm_test_inter(part, &flag);
    CHECK(flag && r == my_rank && s == local_n && rs == their_n, "split: rank %d of %d, remote size %d (expected %d of %d, %d)", r, s, rs,
          my_rank, local_n, their_n);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, part);
    CHECK(sum == their_sum, "allreduce on the split intercommunicator gave %d, expected %d", sum, their_sum);
    MPI_Comm_free(&part);
  }

  MPI_Group all, but_first;
  MPI_Comm_group(inter, &all);
  const int zero = 0;
  MPI_Group_excl(all, 1, &zero, &but_first);
  MPI_Comm created;
  MPI_Comm_create(inter, but_first, &created);
  MPI_Group_free(&but_first);
  MPI_Group_free(&all);
  if (me == 0 || n == 1 || remote_n == 1) {
    CHECK(created == MPI_COMM_NULL, "MPI_Comm_create gave a communicator to a process it leaves out");
  } else {
    int r = -1, rs = 0, sum = -1, expected = 0;
    MPI_Comm_rank(created, &r);
    MPI_Comm_remote_size(created, &rs);
    for (int q = 1; q < remote_n; ++q) expected += world_rank_of(1 - color, q);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, created);
    CHECK(r == me - 1 && rs == remote_n - 1 && sum == expected, "created: rank %d, remote size %d, allreduce %d (expected %d)", r, rs, sum,
          expected);
    MPI_Comm_free(&created);
  }
}

int main(int argc, char** argv) {
  if (!start(&argc, &argv, "intercomm", 3, &rank, &size)) return 2;
  const int color = rank % 2;
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 7, &inter);

  int flag = 0, me = -1, n = 0, remote_n = 0;
  MPI_Comm_test_inter(inter, &flag);
  CHECK(flag, "MPI_Comm_test_inter says it is not an intercommunicator");
  MPI_Comm_rank(inter, &me);
  MPI_Comm_size(inter, &n);
  MPI_Comm_remote_size(inter, &remote_n);
  CHECK(me == rank / 2 && n == group_size(color), "rank %d of %d in the local group", me, n);
  CHECK(remote_n == group_size(1 - color), "remote size %d", remote_n);
  MPI_Group remote, world;
  MPI_Comm_remote_group(inter, &remote);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  for (int q = 0; q < remote_n; ++q) {
    int w = -1;
    MPI_Group_translate_ranks(remote, 1, &q, world, &w);
    CHECK(w == world_rank_of(1 - color, q), "remote rank %d is world rank %d", q, w);
  }
  MPI_Group_free(&remote);
  MPI_Group_free(&world);

  point_to_point(inter, color, me, n, remote_n);
  collectives(inter, color, me, n, remote_n);
  split_and_create(inter, color, me, n, remote_n);

  /* A duplicate keeps both groups, on its own contexts; so does a non-blocking one, made
   * while a non-blocking all-reduce on the original is in flight. */
  MPI_Comm dup, idup;
  MPI_Comm_dup(inter, &dup);
  int dup_remote = 0, sum = -1, expected = 0, isum = -1;
  MPI_Comm_remote_size(dup, &dup_remote);
  CHECK(dup_remote == remote_n, "the dup's remote size is %d", dup_remote);
  for (int q = 0; q < remote_n; ++q) expected += world_rank_of(1 - color, q);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dup);
  CHECK(sum == expected, "allreduce on the dup gave %d", sum);
  MPI_Request rs[2];
  MPI_Comm_idup(inter, &idup, &rs[0]);
  MPI_Iallreduce(&rank, &isum, 1, MPI_INT, MPI_SUM, inter, &rs[1]);
  MPI_Waitall(2, rs, MPI_STATUSES_IGNORE);
  MPI_Comm_remote_size(idup, &dup_remote);
  sum = -1;
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, idup);
  CHECK(dup_remote == remote_n && sum == expected && isum == expected, "the idup: remote size %d, allreduce %d and %d", dup_remote, sum,
        isum);
  MPI_Comm_free(&idup);

  /* Merged with the odd ranks high: the even ones first. Merged with the same `high`
   * everywhere: the group of world rank 0 first, in this implementation. */
  MPI_Comm merged;
  MPI_Intercomm_merge(inter, color, &merged);
  int mrank = -1, msize = 0;
  MPI_Comm_rank(merged, &mrank);
  MPI_Comm_size(merged, &msize);
  CHECK(msize == size, "merged size %d", msize);
  CHECK(mrank == (color == 0 ? me : group_size(0) + me), "merged rank %d", mrank);
  int total = 0;
  MPI_Allreduce(&rank, &total, 1, MPI_INT, MPI_SUM, merged);
  CHECK(total == size * (size - 1) / 2, "allreduce on the merged communicator gave %d", total);
  MPI_Comm_test_inter(merged, &flag);
  CHECK(!flag, "the merged communicator is an intercommunicator");
  MPI_Comm high_first;
  MPI_Intercomm_merge(dup, 1 - color, &high_first);
  MPI_Comm_rank(high_first, &mrank);
  CHECK(mrank == (color == 1 ? me : group_size(1) + me), "merged with the odd ranks low: rank %d", mrank);
  MPI_Comm_free(&high_first);
  MPI_Comm_free(&merged);
  MPI_Comm_free(&dup);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);

  /* MPI 4's constructor from groups: the same two groups, from MPI_COMM_WORLD's group. */
  MPI_Group everyone, mine, theirs;
  MPI_Comm_group(MPI_COMM_WORLD, &everyone);
  int range_mine[1][3] = {{color, size - 1, 2}}, range_theirs[1][3] = {{1 - color, size - 1, 2}};
  MPI_Group_range_incl(everyone, 1, range_mine, &mine);
  MPI_Group_range_incl(everyone, 1, range_theirs, &theirs);
  MPI_Comm from_groups;
  MPI_Intercomm_create_from_groups(mine, 0, theirs, 0, "gridrt-test", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &from_groups);
  int fg_remote = 0, fg_sum = -1;
  MPI_Comm_remote_size(from_groups, &fg_remote);
  MPI_Allreduce(&rank, &fg_sum, 1, MPI_INT, MPI_SUM, from_groups);
  CHECK(fg_remote == remote_n && fg_sum == expected, "from groups: remote size %d, allreduce %d", fg_remote, fg_sum);
  MPI_Comm_free(&from_groups);
  MPI_Group_free(&mine);
  MPI_Group_free(&theirs);
  MPI_Group_free(&everyone);

  /* Inside one cluster (MPICH's own): halves of a cluster's processes, where it has two. */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_hw_resource_type", "cluster");
  MPI_Comm cluster;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &cluster);
  MPI_Info_free(&info);
  int crank = 0, csize = 1;
  if (cluster != MPI_COMM_NULL) {
    MPI_Comm_rank(cluster, &crank);
    MPI_Comm_size(cluster, &csize);
  }
  if (csize >= 2) {
    MPI_Comm half, inside;
    const int c = crank % 2;
    MPI_Comm_split(cluster, c, crank, &half);
    MPI_Intercomm_create(half, 0, cluster, 1 - c, 8, &inside);
    MPI_Comm_test_inter(inside, &flag);
    CHECK(flag, "the cluster's intercommunicator is not one");
    int s = -1, ones = 1;
    MPI_Allreduce(&ones, &s, 1, MPI_INT, MPI_SUM, inside);
    CHECK(s == (csize - (1 - c) + 1) / 2, "allreduce inside the cluster gave %d", s);
    MPI_Comm_free(&inside);
    MPI_Comm_free(&half);
  }
  if (cluster != MPI_COMM_NULL) MPI_Comm_free(&cluster);
  return finish("intercomm");
}
