/* Collectives across clusters, as an unmodified MPI program sees them: every blocking
 * collective against references worked out here, with MPI_IN_PLACE where MPI allows it,
 * a user-defined non-commutative operation (rank order), derived datatypes, on
 * MPI_COMM_WORLD and on a communicator whose clusters do not hold runs of its ranks; then
 * the non-blocking collectives, several in flight at once; persistent ones; and a sparse
 * exchange ending with MPI_Ibarrier (NBX), which deadlocks unless non-blocking collectives
 * move while the program waits on other things. */
#include <string.h>

#include "check.h"

static int world_rank;

/* 2x2 matrices modulo a prime: their product does not commute. */
enum { kPrime = 10007 };
typedef struct {
  int a, b, c, d;
} Mat;
static Mat mat_of(int r) { return (Mat){r + 2, 1, 1, r % 3}; }
static Mat mul(Mat x, Mat y) {
  return (Mat){(x.a * y.a + x.b * y.c) % kPrime, (x.a * y.b + x.b * y.d) % kPrime, (x.c * y.a + x.d * y.c) % kPrime,
               (x.c * y.b + x.d * y.d) % kPrime};
}
static int mat_eq(Mat x, Mat y) { return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d; }
/* inout = in * inout: `in` comes from lower ranks (MPI 4.0 §6.9.5). */
static void mat_mul_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)type;
  Mat* x = in;
  Mat* y = inout;
  for (int i = 0; i < *len; ++i) y[i] = mul(x[i], y[i]);
}
static MPI_Datatype mat_type;
static MPI_Op mat_op;

/* The product of members [from, to) in rank order, for members whose world ranks are given. */
static Mat product(const int* world_of, int from, int to) {
  Mat p = {1, 0, 0, 1};
  for (int i = from; i < to; ++i) p = mul(p, mat_of(world_of[i]));
  return p;
}

static int v(int r, int i) { return 1000 * r + i; }

static void blocking(MPI_Comm comm, const char* label) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int world_of[64];
  MPI_Allgather(&world_rank, 1, MPI_INT, world_of, 1, MPI_INT, comm);
  MPI_Barrier(comm);
  for (int root = 0; root < size; root += size - 1) {
    /* bcast, of a derived datatype too */
    int b[6] = {0};
    if (rank == root)
      for (int i = 0; i < 6; ++i) b[i] = v(root, i);
    MPI_Bcast(b, 6, MPI_INT, root, comm);
    CHECK(b[5] == v(root, 5), "%s bcast from %d: %d", label, root, b[5]);
    MPI_Datatype pairs;
    MPI_Type_vector(3, 1, 2, MPI_INT, &pairs);
    MPI_Type_commit(&pairs);
    int s[6] = {-1, -1, -1, -1, -1, -1};
    if (rank == root) memcpy(s, b, sizeof s);
    MPI_Bcast(s, 1, pairs, root, comm);
    CHECK(s[4] == v(root, 4) && (rank == root || s[1] == -1), "%s bcast of a vector type from %d", label, root);
    MPI_Type_free(&pairs);
    /* reduce: sum, and the rank-order product, in place at the root too */
    int sum = -1, mine = rank + 1;
    MPI_Reduce(&mine, &sum, 1, MPI_INT, MPI_SUM, root, comm);
    if (rank == root) CHECK(sum == size * (size + 1) / 2, "%s reduce sum at %d: %d", label, root, sum);
    Mat m = mat_of(world_rank), p = {0, 0, 0, 0};
    MPI_Reduce(&m, &p, 1, mat_type, mat_op, root, comm);
    if (rank == root) CHECK(mat_eq(p, product(world_of, 0, size)), "%s non-commutative reduce at %d", label, root);
    Mat q = m;
    MPI_Reduce(rank == root ? MPI_IN_PLACE : &q, &q, 1, mat_type, mat_op, root, comm);
    if (rank == root) CHECK(mat_eq(q, product(world_of, 0, size)), "%s non-commutative reduce in place at %d", label, root);
    /* gather(v), scatter(v), in place at the root too */
    int all[128], one = v(rank, 0);
    MPI_Gather(&one, 1, MPI_INT, all, 1, MPI_INT, root, comm);
    if (rank == root)
      for (int r = 0; r < size; ++r) CHECK(all[r] == v(r, 0), "%s gather at %d: [%d] = %d", label, root, r, all[r]);
    if (rank == root) all[root] = v(root, 0);
    MPI_Gather(rank == root ? MPI_IN_PLACE : &one, 1, MPI_INT, all, 1, MPI_INT, root, comm);
    if (rank == root)
      for (int r = 0; r < size; ++r) CHECK(all[r] == v(r, 0), "%s gather in place at %d: [%d]", label, root, r);
    int counts[64], displs[64], at = 0, mineblock[64];
    for (int r = 0; r < size; ++r) counts[r] = r % 3, displs[r] = at, at += r % 3 + 1;
    for (int i = 0; i < rank % 3; ++i) mineblock[i] = v(rank, i);
    int gv[256];
    MPI_Gatherv(mineblock, rank % 3, MPI_INT, gv, counts, displs, MPI_INT, root, comm);
    if (rank == root)
      for (int r = 0; r < size; ++r)
        for (int i = 0; i < r % 3; ++i) CHECK(gv[displs[r] + i] == v(r, i), "%s gatherv at %d: %d[%d]", label, root, r, i);
    int sc[128], got = -1;
    for (int r = 0; r < size; ++r) sc[r] = v(root, r);
    MPI_Scatter(sc, 1, MPI_INT, &got, 1, MPI_INT, root, comm);
    CHECK(got == v(root, rank), "%s scatter from %d: %d", label, root, got);
    MPI_Scatter(sc, 1, MPI_INT, rank == root ? MPI_IN_PLACE : &got, 1, MPI_INT, root, comm);
    CHECK(got == v(root, rank), "%s scatter in place from %d", label, root);
    int sv[256], gotv[4] = {0};
    for (int r = 0; r < size; ++r)
      for (int i = 0; i < r % 3; ++i) sv[displs[r] + i] = v(r, i + 10);
    MPI_Scatterv(sv, counts, displs, MPI_INT, gotv, rank % 3, MPI_INT, root, comm);
    for (int i = 0; i < rank % 3; ++i) CHECK(gotv[i] == v(rank, i + 10), "%s scatterv from %d [%d]", label, root, i);
  }
  /* allreduce */
  int mine = rank + 1, sum = 0, max = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm);
  MPI_Allreduce(&mine, &max, 1, MPI_INT, MPI_MAX, comm);
  CHECK(sum == size * (size + 1) / 2 && max == size, "%s allreduce %d %d", label, sum, max);
  Mat p = mat_of(world_rank);
  MPI_Allreduce(MPI_IN_PLACE, &p, 1, mat_type, mat_op, comm);
  CHECK(mat_eq(p, product(world_of, 0, size)), "%s non-commutative allreduce in place", label);
  /* allgather(v) */
  int all[128], one = v(rank, 1);
  MPI_Allgather(&one, 1, MPI_INT, all, 1, MPI_INT, comm);
  for (int r = 0; r < size; ++r) CHECK(all[r] == v(r, 1), "%s allgather [%d] = %d", label, r, all[r]);
  all[rank] = v(rank, 2);
  MPI_Allgather(MPI_IN_PLACE, 1, MPI_INT, all, 1, MPI_INT, comm);
  for (int r = 0; r < size; ++r) CHECK(all[r] == v(r, 2), "%s allgather in place [%d]", label, r);
  int counts[64], displs[64], at = 0, block[4], gv[256];
  for (int r = 0; r < size; ++r) counts[r] = (r + 1) % 3, displs[r] = at, at += 3;
  for (int i = 0; i < (rank + 1) % 3; ++i) block[i] = v(rank, i + 20);
  MPI_Allgatherv(block, (rank + 1) % 3, MPI_INT, gv, counts, displs, MPI_INT, comm);
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < (r + 1) % 3; ++i) CHECK(gv[displs[r] + i] == v(r, i + 20), "%s allgatherv %d[%d]", label, r, i);
  /* alltoall(v, w) */
  int out[128], in[128];
  for (int r = 0; r < size; ++r) out[r] = v(rank, r);
  MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, comm);
  for (int r = 0; r < size; ++r) CHECK(in[r] == v(r, rank), "%s alltoall from %d: %d", label, r, in[r]);
  for (int r = 0; r < size; ++r) in[r] = v(rank, r + 1);
  MPI_Alltoall(MPI_IN_PLACE, 1, MPI_INT, in, 1, MPI_INT, comm);
  for (int r = 0; r < size; ++r) CHECK(in[r] == v(r, rank + 1), "%s alltoall in place from %d", label, r);
  int scounts[64], sdispls[64], rcounts[64], rdispls[64], big_out[512], big_in[512];
  for (int r = 0, s = 0, t = 0; r < size; ++r) {
    scounts[r] = (rank + r) % 3, sdispls[r] = s, s += scounts[r];
    rcounts[r] = (r + rank) % 3, rdispls[r] = t, t += rcounts[r];
    for (int i = 0; i < scounts[r]; ++i) big_out[sdispls[r] + i] = v(rank, 10 * r + i);
  }
  MPI_Alltoallv(big_out, scounts, sdispls, MPI_INT, big_in, rcounts, rdispls, MPI_INT, comm);
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < rcounts[r]; ++i) CHECK(big_in[rdispls[r] + i] == v(r, 10 * rank + i), "%s alltoallv from %d [%d]", label, r, i);
  MPI_Datatype stypes[64], rtypes[64];
  int wsd[64], wrd[64];
  for (int r = 0; r < size; ++r) {
    stypes[r] = rtypes[r] = MPI_INT;
    wsd[r] = (int)(sdispls[r] * sizeof(int));
    wrd[r] = (int)(rdispls[r] * sizeof(int));
  }
  memset(big_in, 0, sizeof big_in);
  MPI_Alltoallw(big_out, scounts, wsd, stypes, big_in, rcounts, wrd, rtypes, comm);
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < rcounts[r]; ++i) CHECK(big_in[rdispls[r] + i] == v(r, 10 * rank + i), "%s alltoallw from %d [%d]", label, r, i);
  /* reduce_scatter(_block): element i of member r's block is the sum of everyone's */
  int rs_counts[64], contrib[256], res[8];
  for (int r = 0, k = 0; r < size; ++r) {
    rs_counts[r] = r % 2 + 1;
    for (int i = 0; i < rs_counts[r]; ++i) contrib[k++] = rank + 100 * r + i;
  }
  MPI_Reduce_scatter(contrib, res, rs_counts, MPI_INT, MPI_SUM, comm);
  for (int i = 0; i < rs_counts[rank]; ++i)
    CHECK(res[i] == size * (size - 1) / 2 + size * (100 * rank + i), "%s reduce_scatter [%d] = %d", label, i, res[i]);
  for (int r = 0; r < size; ++r) contrib[r] = rank * r;
  MPI_Reduce_scatter_block(contrib, res, 1, MPI_INT, MPI_SUM, comm);
  CHECK(res[0] == rank * size * (size - 1) / 2, "%s reduce_scatter_block: %d", label, res[0]);
  /* scan, exscan: sums and the rank-order product */
  int s = 0;
  MPI_Scan(&mine, &s, 1, MPI_INT, MPI_SUM, comm);
  CHECK(s == (rank + 1) * (rank + 2) / 2, "%s scan: %d", label, s);
  if (rank > 0) s = -1;
  MPI_Exscan(&mine, &s, 1, MPI_INT, MPI_SUM, comm);
  if (rank > 0) CHECK(s == rank * (rank + 1) / 2, "%s exscan: %d", label, s);
  Mat m = mat_of(world_rank), sp;
  MPI_Scan(&m, &sp, 1, mat_type, mat_op, comm);
  CHECK(mat_eq(sp, product(world_of, 0, rank + 1)), "%s non-commutative scan", label);
  MPI_Exscan(&m, &sp, 1, mat_type, mat_op, comm);
  if (rank > 0) CHECK(mat_eq(sp, product(world_of, 0, rank)), "%s non-commutative exscan", label);
  sp = m;
  MPI_Scan(MPI_IN_PLACE, &sp, 1, mat_type, mat_op, comm);
  CHECK(mat_eq(sp, product(world_of, 0, rank + 1)), "%s non-commutative scan in place", label);
}

/* Non-blocking collectives, several in flight on one communicator, completed together;
 * then persistent ones started three times. */
static void nonblocking(MPI_Comm comm, const char* label) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Request r[12];
  int b = rank == size - 1 ? 77 : 0, mine = rank + 1, sum = 0, rsum = 0, all[64], one = v(rank, 3), gat[64], sc[64], got = 0;
  int out[64], in[64], s = 0, xs = -1, rsb[64], rsb_out = 0;
  for (int i = 0; i < size; ++i) sc[i] = v(0, i), out[i] = v(rank, i), rsb[i] = i;
  int n = 0;
  MPI_Ibarrier(comm, &r[n++]);
  MPI_Ibcast(&b, 1, MPI_INT, size - 1, comm, &r[n++]);
  MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm, &r[n++]);
  MPI_Ireduce(&mine, &rsum, 1, MPI_INT, MPI_SUM, 0, comm, &r[n++]);
  MPI_Iallgather(&one, 1, MPI_INT, all, 1, MPI_INT, comm, &r[n++]);
  MPI_Igather(&one, 1, MPI_INT, gat, 1, MPI_INT, size - 1, comm, &r[n++]);
  MPI_Iscatter(sc, 1, MPI_INT, &got, 1, MPI_INT, 0, comm, &r[n++]);
  MPI_Ialltoall(out, 1, MPI_INT, in, 1, MPI_INT, comm, &r[n++]);
  MPI_Iscan(&mine, &s, 1, MPI_INT, MPI_SUM, comm, &r[n++]);
  MPI_Iexscan(&mine, &xs, 1, MPI_INT, MPI_SUM, comm, &r[n++]);
  MPI_Ireduce_scatter_block(rsb, &rsb_out, 1, MPI_INT, MPI_SUM, comm, &r[n++]);
  MPI_Iallreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_MAX, comm, &r[n++]);
  /* (completed in the opposite order: each moves whatever is waited on) */
  for (int i = n - 1; i >= 0; --i) MPI_Wait(&r[i], MPI_STATUS_IGNORE);
  CHECK(b == 77 && sum == size * (size + 1) / 2 && mine == size, "%s ibcast %d, iallreduce %d, in place %d", label, b, sum, mine);
  if (rank == 0) CHECK(rsum == size * (size + 1) / 2, "%s ireduce %d", label, rsum);
  for (int i = 0; i < size; ++i) CHECK(all[i] == v(i, 3) && in[i] == v(i, rank), "%s iallgather/ialltoall [%d]", label, i);
  if (rank == size - 1)
    for (int i = 0; i < size; ++i) CHECK(gat[i] == v(i, 3), "%s igather [%d]", label, i);
  CHECK(got == v(0, rank), "%s iscatter: %d", label, got);
  CHECK(s == (rank + 1) * (rank + 2) / 2 && (rank == 0 || xs == rank * (rank + 1) / 2), "%s iscan %d, iexscan %d", label, s, xs);
  CHECK(rsb_out == rank * size, "%s ireduce_scatter_block %d", label, rsb_out);
  /* persistent */
  MPI_Request p[2];
  int pb = 0, pin = 0, pout = 0;
  MPI_Bcast_init(&pb, 1, MPI_INT, 0, comm, MPI_INFO_NULL, &p[0]);
  MPI_Allreduce_init(&pin, &pout, 1, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL, &p[1]);
  for (int round = 1; round <= 3; ++round) {
    if (rank == 0) pb = 100 + round;
    pin = round * (rank + 1);
    MPI_Startall(2, p);
    MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
    CHECK(pb == 100 + round && pout == round * size * (size + 1) / 2, "%s persistent round %d: %d %d", label, round, pb, pout);
  }
  MPI_Request_free(&p[0]);
  MPI_Request_free(&p[1]);
}

/* A datatype and an op freed by the program while non-blocking collectives that use them
 * are still in flight: MPI 4.0 §5.1 lets it, the collectives must still use them. */
static void handles_freed_in_flight(void) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Datatype mat;
  MPI_Op op;
  MPI_Type_contiguous(4, MPI_INT, &mat);
  MPI_Type_commit(&mat);
  MPI_Op_create(mat_mul_op, 0, &op);
  Mat mine = mat_of(rank), all = {0, 0, 0, 0}, gathered[64];
  MPI_Request r[2];
  MPI_Iallreduce(&mine, &all, 1, mat, op, MPI_COMM_WORLD, &r[0]);
  MPI_Igather(&mine, 1, mat, gathered, 1, mat, 0, MPI_COMM_WORLD, &r[1]);
  MPI_Type_free(&mat);
  MPI_Op_free(&op);
  CHECK(mat == MPI_DATATYPE_NULL && op == MPI_OP_NULL, "the freed handles were not set to null");
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  int world_of[64];
  for (int i = 0; i < size; ++i) world_of[i] = i;
  CHECK(mat_eq(all, product(world_of, 0, size)), "iallreduce with a freed op and type");
  if (rank == 0)
    for (int i = 0; i < size; ++i) CHECK(mat_eq(gathered[i], mat_of(i)), "igather with a freed type [%d]", i);
}

/* The NBX sparse exchange (Hoefler, Siebert, Lumsdaine, 2010): each process sends a few
 * messages with MPI_Issend to processes that do not know they will get them, receives
 * whatever comes (MPI_Iprobe), and once its own sends are matched joins an MPI_Ibarrier;
 * when the barrier completes, every message has been received. */
static void sparse_exchange(void) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  enum { kTag = 33 };
  const int targets[2] = {(rank * 7 + 1) % size, (rank * 3 + 2) % size};
  int payload[2] = {v(rank, 0), v(rank, 1)}, received = 0, sent = 2;
  MPI_Request sends[2], barrier = MPI_REQUEST_NULL;
  for (int i = 0; i < 2; ++i) MPI_Issend(&payload[i], 1, MPI_INT, targets[i], kTag, MPI_COMM_WORLD, &sends[i]);
  int barrier_started = 0, done = 0;
  while (!done) {
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &flag, &st);
    if (flag) {
      int x;
      MPI_Recv(&x, 1, MPI_INT, st.MPI_SOURCE, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      CHECK(x / 1000 == st.MPI_SOURCE, "NBX: %d from %d", x, st.MPI_SOURCE);
      ++received;
    }
    if (!barrier_started) {
      int all_sent = 0;
      MPI_Testall(2, sends, &all_sent, MPI_STATUSES_IGNORE);
      if (all_sent) {
        MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
        barrier_started = 1;
      }
    } else {
      MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
    }
  }
  int total = 0;
  MPI_Allreduce(&received, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(total == sent * size, "NBX: %d messages received of %d", total, sent * size);
}

int main(int argc, char** argv) {
  int size;
  if (!start(&argc, &argv, "coll", 2, &world_rank, &size)) return 2;
  MPI_Type_contiguous(4, MPI_INT, &mat_type);
  MPI_Type_commit(&mat_type);
  MPI_Op_create(mat_mul_op, 0, &mat_op);
  blocking(MPI_COMM_WORLD, "world");
  /* Every other rank, backwards: clusters hold no runs of its ranks. */
  MPI_Comm shuffled;
  MPI_Comm_split(MPI_COMM_WORLD, 0, world_rank % 2 ? world_rank : 1000 - world_rank, &shuffled);
  blocking(shuffled, "shuffled");
  nonblocking(MPI_COMM_WORLD, "world");
  nonblocking(shuffled, "shuffled");
  MPI_Comm_free(&shuffled);
  sparse_exchange();
  handles_freed_in_flight();
  MPI_Op_free(&mat_op);
  MPI_Type_free(&mat_type);
  return finish("coll");
}
