/* Point-to-point across clusters, as an unmodified MPI program sees it: every send mode
 * and its non-blocking and persistent forms, derived datatypes, statuses, wildcards fed
 * from several clusters at once, MPI's ordering, probes and matched probes, truncation,
 * synchronous sends, cancellation, mixed completion arrays, MPI_BOTTOM, large counts, MPI_PROC_NULL. Run with at
 * least 3 processes. */
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static int rank, size;

/* A message's content from `from` for `to`, number `i`. */
static int value(int from, int to, int i) { return 1000000 * from + 1000 * to + i; }

static void ring_in_every_mode(void) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  char bsend_buffer[4 * (MPI_BSEND_OVERHEAD + sizeof(int))];
  MPI_Buffer_attach(bsend_buffer, sizeof bsend_buffer);
  for (int mode = 0; mode < 4; ++mode) {
    int got = -1, out = value(rank, right, mode);
    MPI_Request r;
    MPI_Irecv(&got, 1, MPI_INT, left, mode, MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted: a ready send may go */
    switch (mode) {
      case 0: MPI_Send(&out, 1, MPI_INT, right, mode, MPI_COMM_WORLD); break;
      case 1: MPI_Ssend(&out, 1, MPI_INT, right, mode, MPI_COMM_WORLD); break;
      case 2: MPI_Bsend(&out, 1, MPI_INT, right, mode, MPI_COMM_WORLD); break;
      case 3: MPI_Rsend(&out, 1, MPI_INT, right, mode, MPI_COMM_WORLD); break;
    }
    MPI_Status st;
    MPI_Wait(&r, &st);
    CHECK(got == value(left, rank, mode), "mode %d: got %d", mode, got);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == mode, "mode %d: status says %d/%d", mode, st.MPI_SOURCE, st.MPI_TAG);
  }
  void* detached;
  int detached_size;
  MPI_Buffer_detach(&detached, &detached_size);
  /* The non-blocking forms, then persistent requests started three times. */
  int in[4], out[4];
  MPI_Request rs[8];
  for (int mode = 0; mode < 4; ++mode) {
    out[mode] = value(rank, right, 10 + mode);
    MPI_Irecv(&in[mode], 1, MPI_INT, left, 10 + mode, MPI_COMM_WORLD, &rs[mode]);
  }
  MPI_Buffer_attach(bsend_buffer, sizeof bsend_buffer);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Isend(&out[0], 1, MPI_INT, right, 10, MPI_COMM_WORLD, &rs[4]);
  MPI_Issend(&out[1], 1, MPI_INT, right, 11, MPI_COMM_WORLD, &rs[5]);
  MPI_Ibsend(&out[2], 1, MPI_INT, right, 12, MPI_COMM_WORLD, &rs[6]);
  MPI_Irsend(&out[3], 1, MPI_INT, right, 13, MPI_COMM_WORLD, &rs[7]);
  MPI_Waitall(8, rs, MPI_STATUSES_IGNORE);
  MPI_Buffer_detach(&detached, &detached_size);
  for (int mode = 0; mode < 4; ++mode) CHECK(in[mode] == value(left, rank, 10 + mode), "I-form %d: got %d", mode, in[mode]);
  int pin = -1, pout = 0;
  MPI_Request p[2];
  MPI_Recv_init(&pin, 1, MPI_INT, left, 20, MPI_COMM_WORLD, &p[0]);
  MPI_Send_init(&pout, 1, MPI_INT, right, 20, MPI_COMM_WORLD, &p[1]);
  for (int round = 0; round < 3; ++round) {
    pout = value(rank, right, 20 + round);
    MPI_Startall(2, p);
    MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
    CHECK(pin == value(left, rank, 20 + round), "persistent round %d: got %d", round, pin);
  }
  MPI_Request_free(&p[0]);
  MPI_Request_free(&p[1]);
  CHECK(p[0] == MPI_REQUEST_NULL, "a freed request is MPI_REQUEST_NULL");
  /* Sendrecv_replace around the ring. */
  int x = value(rank, right, 30);
  MPI_Sendrecv_replace(&x, 1, MPI_INT, right, 30, left, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  CHECK(x == value(left, rank, 30), "Sendrecv_replace: got %d", x);
}

/* A vector of every other int, and a struct with a gap, each received as what it packs to. */
static void derived_datatypes(void) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Datatype every_other, pair;
  MPI_Type_vector(5, 1, 2, MPI_INT, &every_other);
  MPI_Type_commit(&every_other);
  struct item {
    int i;
    double d;
  };
  int lengths[2] = {1, 1};
  MPI_Aint displs[2] = {offsetof(struct item, i), offsetof(struct item, d)};
  MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
  MPI_Type_create_struct(2, lengths, displs, types, &pair);
  MPI_Type_commit(&pair);
  int out[10], in[5];
  for (int i = 0; i < 10; ++i) out[i] = i % 2 ? -1 : value(rank, right, i);
  struct item items_out[3], items_in[3];
  for (int i = 0; i < 3; ++i) items_out[i] = (struct item){rank * 10 + i, rank + 0.5 * i};
  MPI_Status st;
  MPI_Sendrecv(out, 1, every_other, right, 40, in, 5, MPI_INT, left, 40, MPI_COMM_WORLD, &st);
  int count = -1;
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK(count == 5, "vector of 5: count %d", count);
  for (int i = 0; i < 5; ++i) CHECK(in[i] == value(left, rank, 2 * i), "vector element %d: %d", i, in[i]);
  MPI_Sendrecv(items_out, 3, pair, right, 41, items_in, 3, pair, left, 41, MPI_COMM_WORLD, &st);
  MPI_Get_count(&st, pair, &count);
  int elements = -1;
  MPI_Get_elements(&st, pair, &elements);
  CHECK(count == 3 && elements == 6, "struct: count %d, elements %d", count, elements);
  for (int i = 0; i < 3; ++i) CHECK(items_in[i].i == left * 10 + i && items_in[i].d == left + 0.5 * i, "struct item %d", i);
  MPI_Type_free(&every_other);
  MPI_Type_free(&pair);
}

/* Every other process sends rank 0 its messages at once; rank 0 takes them all with
 * MPI_ANY_SOURCE and MPI_ANY_TAG: each once, each source's in the order it sent them. */
static void wildcards_from_every_cluster(void) {
  enum { kEach = 8 };
  if (rank == 0) {
    int next[64] = {0};
    for (int k = 0; k < kEach * (size - 1); ++k) {
      int v = -1;
      MPI_Status st;
      MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      const int from = st.MPI_SOURCE;
      CHECK(from > 0 && from < size && v == value(from, 0, next[from]) && st.MPI_TAG == next[from] % 3,
            "wildcard: %d (tag %d) from %d, expected message %d", v, st.MPI_TAG, from, next[from]);
      ++next[from];
    }
    for (int r = 1; r < size; ++r) CHECK(next[r] == kEach, "%d messages from %d", next[r], r);
  } else {
    for (int i = 0; i < kEach; ++i) {
      const int v = value(rank, 0, i);
      MPI_Send(&v, 1, MPI_INT, 0, i % 3, MPI_COMM_WORLD);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD); /* (rank 0's wildcards above must not see what follows) */
  /* A large message and a small one behind it, same tag: received in that order. */
  enum { kLarge = 300000 };
  static int large[kLarge];
  if (rank == size - 1) {
    for (int i = 0; i < kLarge; ++i) large[i] = i;
    const int small = 42;
    MPI_Send(large, kLarge, MPI_INT, 0, 50, MPI_COMM_WORLD);
    MPI_Send(&small, 1, MPI_INT, 0, 50, MPI_COMM_WORLD);
  } else if (rank == 0) {
    static int got[kLarge];
    int small = 0;
    MPI_Status st;
    MPI_Recv(got, kLarge, MPI_INT, MPI_ANY_SOURCE, 50, MPI_COMM_WORLD, &st);
    int count = 0;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == kLarge && got[kLarge - 1] == kLarge - 1, "the large one first: count %d", count);
    MPI_Recv(&small, 1, MPI_INT, size - 1, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(small == 42, "then the small one: %d", small);
  }
}

/* Every other process sends rank 0 a message of its own size; rank 0 probes, allocates what
 * the probe said, and receives exactly that message. Then the same with matched probes. */
static void probes(void) {
  if (rank != 0) {
    int buf[64];
    for (int i = 0; i < 64; ++i) buf[i] = rank;
    MPI_Send(buf, rank * 3, MPI_INT, 0, 60, MPI_COMM_WORLD);
    MPI_Send(buf, rank * 2, MPI_INT, 0, 61, MPI_COMM_WORLD);
    return;
  }
  for (int k = 1; k < size; ++k) {
    MPI_Status st;
    MPI_Probe(MPI_ANY_SOURCE, 60, MPI_COMM_WORLD, &st);
    int count = 0;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == st.MPI_SOURCE * 3, "probe: %d ints from %d", count, st.MPI_SOURCE);
    int* buf = malloc(sizeof(int) * (count + 1));
    MPI_Status rst;
    MPI_Recv(buf, count, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &rst);
    CHECK(rst.MPI_SOURCE == st.MPI_SOURCE && (count == 0 || buf[count - 1] == st.MPI_SOURCE), "the probed message came");
    free(buf);
  }
  for (int k = 1; k < size; ++k) {
    MPI_Message m;
    MPI_Status st;
    if (k % 2) {
      MPI_Mprobe(MPI_ANY_SOURCE, 61, MPI_COMM_WORLD, &m, &st);
    } else {
      int flag = 0;
      while (!flag) MPI_Improbe(MPI_ANY_SOURCE, 61, MPI_COMM_WORLD, &flag, &m, &st);
    }
    int count = 0, buf[64];
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == st.MPI_SOURCE * 2, "matched probe: %d ints from %d", count, st.MPI_SOURCE);
    MPI_Status rst;
    if (k % 2) {
      MPI_Mrecv(buf, count, MPI_INT, &m, &rst);
    } else {
      MPI_Request r;
      MPI_Imrecv(buf, count, MPI_INT, &m, &r);
      MPI_Wait(&r, &rst);
    }
    CHECK(m == MPI_MESSAGE_NULL && rst.MPI_SOURCE == st.MPI_SOURCE, "received the matched message");
  }
  int flag = 1;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
  CHECK(!flag, "nothing left to probe");
}

/* An MPI_Issend completes only once its receive is posted, on either path. */
static void synchronous_sends(void) {
  const int peer_far = size - 1, peer_near = 1;
  if (rank == peer_far || rank == peer_near) {
    int v = rank, flag = 0;
    MPI_Request r;
    MPI_Issend(&v, 1, MPI_INT, 0, 70, MPI_COMM_WORLD, &r);
    for (int i = 0; i < 50; ++i) {
      MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
      if (flag) break;
      usleep(1000);
    }
    CHECK(!flag, "an MPI_Issend to 0 completed before 0 posted its receive");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      int v = -1;
      MPI_Recv(&v, 1, MPI_INT, peer_far, 70, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (peer_near != peer_far) MPI_Recv(&v, 1, MPI_INT, peer_near, 70, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
}

/* Rank 0 waits on one receive from every other process, mixed with null requests: each
 * index it is given is that of the request that completed, its status that request's. */
static void mixed_completion(void) {
  enum { kMax = 64 };
  if (rank != 0) {
    usleep(2000 * (size - rank)); /* (the last ranks first) */
    MPI_Send(&rank, 1, MPI_INT, 0, 80, MPI_COMM_WORLD);
    MPI_Send(&rank, 1, MPI_INT, 0, 81, MPI_COMM_WORLD);
    return;
  }
  MPI_Request rs[kMax];
  int got[kMax], n = 0, seen[kMax] = {0};
  rs[n++] = MPI_REQUEST_NULL;
  for (int r = 1; r < size; ++r) MPI_Irecv(&got[n], 1, MPI_INT, r, 80, MPI_COMM_WORLD, &rs[n]), ++n;
  for (int k = 1; k < n; ++k) {
    int index = -1;
    MPI_Status st;
    MPI_Waitany(n, rs, &index, &st);
    CHECK(index >= 1 && index < n && !seen[index] && st.MPI_SOURCE == index && got[index] == index,
          "Waitany gave index %d, source %d, value %d", index, st.MPI_SOURCE, index >= 0 ? got[index] : -1);
    if (index >= 0 && index < kMax) seen[index] = 1;
  }
  int index = 0;
  MPI_Waitany(n, rs, &index, MPI_STATUS_IGNORE);
  CHECK(index == MPI_UNDEFINED, "Waitany over inactive requests: %d", index);
  for (int r = 1; r < size; ++r) MPI_Irecv(&got[r], 1, MPI_INT, r, 81, MPI_COMM_WORLD, &rs[r]);
  int left = size - 1;
  memset(seen, 0, sizeof seen);
  while (left > 0) {
    int outcount = 0, indices[kMax];
    MPI_Status sts[kMax];
    MPI_Waitsome(size, rs, &outcount, indices, sts);
    for (int i = 0; i < outcount; ++i) {
      const int k = indices[i];
      CHECK(k >= 1 && k < size && !seen[k] && sts[i].MPI_SOURCE == k && got[k] == k, "Waitsome gave index %d, source %d", k,
            sts[i].MPI_SOURCE);
      if (k >= 0 && k < kMax) seen[k] = 1;
    }
    left -= outcount;
  }
}

/* A ring over absolute addresses (MPI_BOTTOM with a type that holds them), with the large-count
 * forms (MPI_Send_c, MPI_Recv_c, MPI_Get_count_c); and a status's MPI_ERROR field, which only
 * the multiple-completion calls write (MPI 4.0 §3.2.5), left as it was by a receive and a
 * matched probe. */
static void bottom_large_counts_and_status_error(void) {
  const int to = (rank + 1) % size, from = (rank + size - 1) % size;
  int out[3] = {value(rank, to, 0), value(rank, to, 1), value(rank, to, 2)}, in[3] = {0, 0, 0};
  MPI_Aint where_out, where_in;
  MPI_Get_address(out, &where_out);
  MPI_Get_address(in, &where_in);
  int three = 3;
  MPI_Datatype at_out, at_in;
  MPI_Type_create_hindexed(1, &three, &where_out, MPI_INT, &at_out);
  MPI_Type_create_hindexed(1, &three, &where_in, MPI_INT, &at_in);
  MPI_Type_commit(&at_out);
  MPI_Type_commit(&at_in);
  MPI_Status st;
  st.MPI_ERROR = -7;
  MPI_Sendrecv(MPI_BOTTOM, 1, at_out, to, 95, MPI_BOTTOM, 1, at_in, from, 95, MPI_COMM_WORLD, &st);
  CHECK(in[0] == value(from, rank, 0) && in[2] == value(from, rank, 2), "MPI_BOTTOM ring from %d: %d %d", from, in[0], in[2]);
  CHECK(st.MPI_ERROR == -7, "MPI_Sendrecv wrote MPI_ERROR (%d)", st.MPI_ERROR);
  MPI_Type_free(&at_out);
  MPI_Type_free(&at_in);

  MPI_Request r;
  MPI_Isend_c(out, (MPI_Count)3, MPI_INT, to, 96, MPI_COMM_WORLD, &r);
  st.MPI_ERROR = -7;
  MPI_Recv_c(in, (MPI_Count)3, MPI_INT, from, 96, MPI_COMM_WORLD, &st);
  MPI_Count count = -1;
  MPI_Get_count_c(&st, MPI_INT, &count);
  CHECK(count == 3 && in[1] == value(from, rank, 1) && st.MPI_ERROR == -7, "MPI_Recv_c: %lld ints, error field %d", (long long)count,
        st.MPI_ERROR);
  MPI_Wait(&r, MPI_STATUS_IGNORE);

  MPI_Send(out, 1, MPI_INT, to, 97, MPI_COMM_WORLD);
  MPI_Message m;
  st.MPI_ERROR = -7;
  MPI_Mprobe(from, 97, MPI_COMM_WORLD, &m, &st);
  CHECK(st.MPI_ERROR == -7, "MPI_Mprobe wrote MPI_ERROR (%d)", st.MPI_ERROR);
  MPI_Mrecv(in, 1, MPI_INT, &m, &st);
  CHECK(st.MPI_ERROR == -7 && in[0] == value(from, rank, 0), "MPI_Mrecv: %d, error field %d", in[0], st.MPI_ERROR);
}

static void cancel_nulls_and_errors(void) {
  /* A receive nothing will match is cancelled, from this cluster and from another. */
  int x;
  for (int k = 0; k < 2; ++k) {
    const int from = k == 0 ? (rank + 1) % size : (rank + size - 1) % size;
    MPI_Request r;
    MPI_Status st;
    MPI_Irecv(&x, 1, MPI_INT, from, 999, MPI_COMM_WORLD, &r);
    MPI_Cancel(&r);
    MPI_Wait(&r, &st);
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(cancelled, "the receive from %d was not cancelled", from);
  }
  /* MPI_PROC_NULL: at once, with its status. */
  MPI_Status st;
  MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &st);
  int count = -1;
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && count == 0, "receive from MPI_PROC_NULL");
  MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD);
  /* Errors returned, not fatal: a bad rank, and a message longer than the buffer. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rc = MPI_Send(&x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
  CHECK(error_class(rc) == MPI_ERR_RANK, "a bad rank gave class %d", error_class(rc));
  rc = MPI_Send(&x, 1, MPI_INT, 0, -5, MPI_COMM_WORLD);
  CHECK(error_class(rc) == MPI_ERR_TAG, "a bad tag gave class %d", error_class(rc));
  const int near = (rank % 2 == 0) ? rank + 1 : rank - 1; /* pairs, some inside a cluster, some across */
  if (near < size) {
    int big[4] = {1, 2, 3, 4}, small[2];
    MPI_Request r;
    MPI_Isend(big, 4, MPI_INT, near, 90, MPI_COMM_WORLD, &r);
    rc = MPI_Recv(small, 2, MPI_INT, near, 90, MPI_COMM_WORLD, &st);
    CHECK(error_class(rc) == MPI_ERR_TRUNCATE, "a truncated message from %d gave class %d", near, error_class(rc));
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char** argv) {
  if (!start(&argc, &argv, "p2p", 3, &rank, &size)) return 2;
  ring_in_every_mode();
  derived_datatypes();
  wildcards_from_every_cluster();
  MPI_Barrier(MPI_COMM_WORLD);
  probes();
  MPI_Barrier(MPI_COMM_WORLD);
  synchronous_sends();
  mixed_completion();
  bottom_large_counts_and_status_error();
  MPI_Barrier(MPI_COMM_WORLD);
  cancel_nulls_and_errors();
  return finish("p2p");
}
