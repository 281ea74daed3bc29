/* One-sided communication over MPI_COMM_WORLD, as programs use it: every synchronisation
 * mode with puts, gets and accumulates through derived datatypes at both ends; a counter of
 * MPI_Fetch_and_op; a mutex of MPI_Compare_and_swap; exclusive locks; concurrent
 * accumulates on one element; dynamic windows with addresses exchanged; a distributed
 * array as the target's datatype; a target that computes without calling MPI while others
 * read from it; errors (out of range, no epoch).
 * Plain MPI: the same checks pass under mpiexec alone.
 * With "strict", also what MPI requires but MPICH alone does not give here: a put beyond the
 * window detected, and the get from a computing target done before the computation ends.
 *   rma [ROUNDS] [COMPUTE_SECONDS] [strict] */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"

static int rank, size, rounds = 50;
static double compute_seconds = 2.0;
static int strict = 0;

static double now(void) { return MPI_Wtime(); }

/* Fence: a column of a matrix put into the right neighbour's row (vector type at the
 * origin, contiguous at the target), read back as a row into a column, and everyone's rank
 * summed into rank 0's element through MPI_Accumulate. */
static void fence_mode(void) {
  enum { N = 8 };
  int mine[N][N], back[N][N];
  int* base;
  MPI_Win win;
  MPI_Win_allocate((N + 1) * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  for (int i = 0; i <= N; ++i) base[i] = -1;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j) mine[i][j] = rank * 1000 + i * N + j, back[i][j] = -7;
  MPI_Datatype column;
  MPI_Type_vector(N, 1, N, MPI_INT, &column);
  MPI_Type_commit(&column);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Win_fence(0, win);
  MPI_Put(&mine[0][2], 1, column, right, 0, N, MPI_INT, win);
  MPI_Win_fence(0, win);
  for (int i = 0; i < N; ++i) CHECK(base[i] == left * 1000 + i * N + 2, "fence put: element %d is %d", i, base[i]);
  MPI_Get(&back[0][5], 1, column, right, 0, N, MPI_INT, win);
  int one = rank + 1;
  base[N] = 0;
  MPI_Win_fence(0, win);
  MPI_Accumulate(&one, 1, MPI_INT, 0, N, 1, MPI_INT, MPI_SUM, win);
  MPI_Win_fence(0, win);
  for (int i = 0; i < N; ++i) CHECK(back[i][5] == rank * 1000 + i * N + 2, "fence get: element %d is %d", i, back[i][5]);
  CHECK(back[0][4] == -7 && back[N - 1][6] == -7, "fence get wrote outside its column");
  if (rank == 0) CHECK(base[N] == size * (size + 1) / 2, "fence accumulate: %d, not %d", base[N], size * (size + 1) / 2);
  MPI_Type_free(&column);
  MPI_Win_free(&win);
}

/* Post-start-complete-wait around a ring: each exposes to its left neighbour and accesses
 * its right one, putting a strided block (every other double) with a struct type at the
 * target. */
static void pscw_mode(void) {
  double mem[16], src[8];
  for (int i = 0; i < 16; ++i) mem[i] = -1;
  for (int i = 0; i < 8; ++i) src[i] = rank + i / 10.0;
  MPI_Win win;
  MPI_Win_create(mem, sizeof mem, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  MPI_Group world, left_g, right_g;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  MPI_Group_incl(world, 1, &left, &left_g);
  MPI_Group_incl(world, 1, &right, &right_g);
  MPI_Datatype every_other;
  MPI_Type_vector(8, 1, 2, MPI_DOUBLE, &every_other);
  MPI_Type_commit(&every_other);
  for (int round = 0; round < 3; ++round) {
    MPI_Win_post(left_g, 0, win);
    MPI_Win_start(right_g, 0, win);
    for (int i = 0; i < 8; ++i) src[i] = rank + i / 10.0 + round;
    MPI_Put(src, 8, MPI_DOUBLE, right, 0, 1, every_other, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    int ok = 1;
    for (int i = 0; i < 16; ++i) ok &= i % 2 ? mem[i] == -1 : mem[i] == left + (i / 2) / 10.0 + round;
    CHECK(ok, "pscw round %d: the strided block from %d is not as it was put", round, left);
  }
  MPI_Type_free(&every_other);
  MPI_Group_free(&left_g);
  MPI_Group_free(&right_g);
  MPI_Group_free(&world);
  MPI_Win_free(&win);
}

/* A counter at rank 0 that every rank increments `rounds` times with MPI_Fetch_and_op
 * inside one lock_all epoch (as ARMCI-MPI does): the total is exact and every value is
 * fetched by exactly one increment. */
static void fetch_and_op_counter(void) {
  long* counter;
  MPI_Win win;
  MPI_Win_allocate(sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &counter, &win);
  *counter = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  long* got = calloc((size_t)rounds, sizeof(long));
  const long one = 1;
  MPI_Win_lock_all(0, win);
  for (int i = 0; i < rounds; ++i) {
    MPI_Fetch_and_op(&one, &got[i], MPI_LONG, 0, 0, MPI_SUM, win);
    MPI_Win_flush(0, win);
  }
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  const int total = size * rounds;
  int* seen = calloc((size_t)total, sizeof(int));
  long* all = malloc(sizeof(long) * (size_t)total);
  MPI_Gather(got, rounds, MPI_LONG, all, rounds, MPI_LONG, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    CHECK(*counter == total, "counter: %ld after %d increments", *counter, total);
    int twice = 0, outside = 0;
    for (int i = 0; i < total; ++i) {
      if (all[i] < 0 || all[i] >= total) ++outside;
      else if (seen[all[i]]++) ++twice;
    }
    CHECK(!twice && !outside, "counter: %d values fetched twice, %d out of range", twice, outside);
  }
  for (int i = 1; i < rounds; ++i) CHECK(got[i] > got[i - 1], "counter: fetched %ld after %ld", got[i], got[i - 1]);
  free(got);
  free(seen);
  free(all);
  MPI_Win_free(&win);
}

/* A mutex of MPI_Compare_and_swap at the last rank guarding a critical section entered by
 * every rank: inside, a value at rank 0 is read, incremented and written back (a plain get
 * and put), and a second value counts who is inside (must be 1 when read). */
static void cas_mutex(void) {
  long* mem;
  MPI_Win win;
  MPI_Win_allocate(3 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  mem[0] = mem[1] = mem[2] = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const int holder = size - 1, enter = rounds / 5 + 1;
  const long free_ = 0, taken = rank + 1, one = 1, minus_one = -1;
  int crowded = 0;
  MPI_Win_lock_all(0, win);
  for (int i = 0; i < enter; ++i) {
    long was = -1;
    do {
      MPI_Compare_and_swap(&taken, &free_, &was, MPI_LONG, holder, 2, win);
      MPI_Win_flush(holder, win);
    } while (was != 0);
    long inside = 0, value = 0;
    MPI_Fetch_and_op(&one, &inside, MPI_LONG, 0, 1, MPI_SUM, win);
    MPI_Get(&value, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
    MPI_Win_flush(0, win);
    if (inside != 0) ++crowded;
    ++value;
    MPI_Put(&value, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
    MPI_Fetch_and_op(&minus_one, &inside, MPI_LONG, 0, 1, MPI_SUM, win);
    MPI_Win_flush(0, win);
    MPI_Compare_and_swap(&free_, &taken, &was, MPI_LONG, holder, 2, win);
    MPI_Win_flush(holder, win);
    CHECK(was == taken, "mutex: released a lock held by %ld", was);
  }
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(crowded == 0, "mutex: %d times someone else was inside", crowded);
  if (rank == 0) CHECK(mem[0] == (long)size * enter, "mutex: the guarded value is %ld, not %ld", mem[0], (long)size * enter);
  MPI_Win_free(&win);
}

/* Exclusive locks: every rank increments a value at rank 1 % size with get and put inside
 * an exclusive lock; no update is lost whatever cluster the origins sit in. Then shared
 * locks with MPI_Accumulate on one element from everyone at once. The target's window is
 * made over memory of MPI_Alloc_mem (MPI_Win_create), as ARMCI-MPI makes its windows; the
 * others expose nothing (as MPICH's fetchandadd_am). */
static void exclusive_and_accumulate(void) {
  int* mem = NULL;
  MPI_Win win;
  const int target = 1 % size, one = 1;
  if (rank == target) {
    MPI_Alloc_mem(4 * sizeof(int), MPI_INFO_NULL, &mem);
    mem += 1;
    mem[0] = mem[1] = 0;
    MPI_Win_create(mem, 2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  } else {
    MPI_Win_create(NULL, 0, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < rounds; ++i) {
    int v = -1;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
    MPI_Get(&v, 1, MPI_INT, target, 0, 1, MPI_INT, win);
    MPI_Win_flush(target, win);
    ++v;
    MPI_Put(&v, 1, MPI_INT, target, 0, 1, MPI_INT, win);
    MPI_Win_unlock(target, win);
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
    MPI_Accumulate(&one, 1, MPI_INT, target, 1, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_unlock(target, win);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == target) {
    CHECK(mem[0] == size * rounds, "exclusive lock: %d, not %d (updates lost)", mem[0], size * rounds);
    CHECK(mem[1] == size * rounds, "accumulate: %d, not %d (updates lost)", mem[1], size * rounds);
  }
  MPI_Win_free(&win);
  if (mem) MPI_Free_mem(mem - 1);
}

/* Get_accumulate with MPI_NO_OP (an atomic read) and MPI_MAXLOC on MPI_DOUBLE_INT; MPI_Rget
 * and MPI_Rput; MPI_Get_accumulate with MPI_REPLACE (an atomic swap). */
static void atomics_and_requests(void) {
  struct {
    double value;
    int index;
  } * best;
  MPI_Win win;
  MPI_Win_allocate(sizeof *best + 0, sizeof *best, MPI_INFO_NULL, MPI_COMM_WORLD, &best, &win);
  best->value = -1;
  best->index = -1;
  MPI_Barrier(MPI_COMM_WORLD);
  struct {
    double value;
    int index;
  } mine = {(double)((rank * 7) % size), rank}, before;
  MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
  MPI_Accumulate(&mine, 1, MPI_DOUBLE_INT, 0, 0, 1, MPI_DOUBLE_INT, MPI_MAXLOC, win);
  MPI_Win_unlock(0, win);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
  MPI_Get_accumulate(NULL, 0, MPI_DOUBLE_INT, &before, 1, MPI_DOUBLE_INT, 0, 0, 1, MPI_DOUBLE_INT, MPI_NO_OP, win);
  MPI_Win_unlock(0, win);
  /* The largest (rank*7) % size, at the smallest rank that has it. */
  double top = -1;
  int at = -1;
  for (int r = 0; r < size; ++r)
    if ((r * 7) % size > top) top = (r * 7) % size, at = r;
  CHECK(before.value == top && before.index == at, "maxloc: (%g, %d), not (%g, %d)", before.value, before.index, top, at);
  MPI_Win_free(&win);

  int* cells;
  MPI_Win_allocate(size * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &cells, &win);
  for (int i = 0; i < size; ++i) cells[i] = -1;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Request req[2];
  const int right = (rank + 1) % size;
  int value = rank * 3, got = -5, swapped = -5;
  MPI_Win_lock_all(0, win);
  MPI_Rput(&value, 1, MPI_INT, right, rank, 1, MPI_INT, win, &req[0]);
  MPI_Waitall(1, req, MPI_STATUSES_IGNORE);
  MPI_Win_flush(right, win);
  MPI_Rget(&got, 1, MPI_INT, right, rank, 1, MPI_INT, win, &req[1]);
  MPI_Wait(&req[1], MPI_STATUS_IGNORE);
  CHECK(got == rank * 3, "rget after rput: %d, not %d", got, rank * 3);
  const int again = rank * 5;
  MPI_Get_accumulate(&again, 1, MPI_INT, &swapped, 1, MPI_INT, right, rank, 1, MPI_INT, MPI_REPLACE, win);
  MPI_Win_flush(right, win);
  CHECK(swapped == rank * 3, "swap: got %d, not %d", swapped, rank * 3);
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  const int left = (rank + size - 1) % size;
  CHECK(cells[left] == left * 5, "swap: cell %d is %d, not %d", left, cells[left], left * 5);
  MPI_Win_free(&win);
}

/* A dynamic window: each rank attaches memory, the addresses go round with MPI_Allgather,
 * each puts into its right neighbour's, then detaches. */
static void dynamic_window(void) {
  MPI_Win win;
  MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
  int* mem;
  MPI_Alloc_mem(4 * sizeof(int), MPI_INFO_NULL, &mem);
  for (int i = 0; i < 4; ++i) mem[i] = -1;
  MPI_Win_attach(win, mem, 4 * sizeof(int));
  MPI_Aint mine, *addrs = malloc(sizeof(MPI_Aint) * (size_t)size);
  MPI_Get_address(mem, &mine);
  MPI_Allgather(&mine, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  const int data[2] = {rank, rank * rank};
  MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
  MPI_Put(data, 2, MPI_INT, right, MPI_Aint_add(addrs[right], sizeof(int)), 2, MPI_INT, win);
  MPI_Win_unlock(right, win);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(mem[0] == -1 && mem[1] == left && mem[2] == left * left && mem[3] == -1, "dynamic: %d %d %d %d", mem[0], mem[1], mem[2], mem[3]);
  /* A request's error goes through the window's handler: a get from memory not attached
   * (strict only: MPICH alone reads whatever lies there). */
  if (strict) {
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int outside = 0;
    MPI_Request req;
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    int rc = MPI_Rget(&outside, 1, MPI_INT, right, MPI_Aint_add(addrs[right], 1 << 20), 1, MPI_INT, win, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(error_class(rc) == MPI_ERR_RMA_RANGE, "a get beyond the attached memory: class %d", error_class(rc));
    MPI_Win_unlock(right, win);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_detach(win, mem);
  MPI_Free_mem(mem);
  free(addrs);
  MPI_Win_free(&win);
}

/* Rank 0 computes for `compute_seconds` without calling MPI while the last rank reads from
 * its window, with lock, get, unlock, and so does rank 1: each is done long before the
 * computation ends. */
static void progress_without_target(void) {
  double* mem;
  MPI_Win win;
  MPI_Win_allocate(sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  *mem = 42.5;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    const double until = now() + compute_seconds;
    volatile double x = 0;
    while (now() < until)
      for (int i = 0; i < 100000; ++i) x += i * 0.5;
  } else if (rank == size - 1 || rank == 1) { /* (from another cluster, and from the target's where it holds 2) */
    double got = 0;
    const double start_ = now();
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Get(&got, 1, MPI_DOUBLE, 0, 0, 1, MPI_DOUBLE, win);
    MPI_Win_unlock(0, win);
    const double took = now() - start_;
    CHECK(got == 42.5, "progress: got %g", got);
    CHECK(!strict || took < compute_seconds / 2, "progress: the get took %.3f s while the target computed for %.1f s", took,
          compute_seconds);
    printf("rma: a get from a computing target took %.1f ms at rank %d\n", took * 1e3, rank);
  }
  MPI_Win_free(&win);
}

/* Errors, returned: a put beyond the target's window (MPI_ERR_RMA_RANGE) and one outside
 * any epoch (MPI_ERR_RMA_SYNC); the window's attributes and group. */
/* A distributed array as the target's datatype (MPI_Type_create_darray: cyclic rows, block
 * columns, C and Fortran order): each rank puts its share of a 6 x 5 global array into its
 * right neighbour's window and gets it back. The target's memory must be what MPI_Unpack
 * through the same type makes of the same data. */
static void distributed_array(void) {
  enum { ROWS = 6, COLS = 5, N = ROWS * COLS };
  int* mem;
  MPI_Win win;
  MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  const int gsizes[2] = {ROWS, COLS}, distribs[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK}, dargs[2] = {2, MPI_DISTRIBUTE_DFLT_DARG},
            psizes[2] = {2, 2};
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (int order = 0; order < 2; ++order) {
    const int o = order ? MPI_ORDER_FORTRAN : MPI_ORDER_C;
    MPI_Datatype mine, lefts; /* this rank's share (its type at the target), its left neighbour's */
    MPI_Type_create_darray(4, rank % 4, 2, gsizes, distribs, dargs, psizes, o, MPI_INT, &mine);
    MPI_Type_create_darray(4, left % 4, 2, gsizes, distribs, dargs, psizes, o, MPI_INT, &lefts);
    MPI_Type_commit(&mine);
    MPI_Type_commit(&lefts);
    int n = 0, nl = 0;
    MPI_Type_size(mine, &n);
    MPI_Type_size(lefts, &nl);
    n /= (int)sizeof(int);
    nl /= (int)sizeof(int);
    int data[N], ldata[N], expect[N], back[N];
    for (int i = 0; i < N; ++i) {
      data[i] = rank * 1000 + order * 100 + i;
      ldata[i] = left * 1000 + order * 100 + i;
      expect[i] = -1;
    }
    int pos = 0;
    MPI_Unpack(ldata, nl * (int)sizeof(int), &pos, expect, 1, lefts, MPI_COMM_SELF);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    for (int i = 0; i < N; ++i) mem[i] = -1;
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Put(data, n, MPI_INT, right, 0, 1, mine, win);
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    int wrong = 0, first = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    for (int i = 0; i < N; ++i)
      if (mem[i] != expect[i] && wrong++ == 0) first = i;
    MPI_Win_unlock(rank, win);
    CHECK(wrong == 0, "darray put (%s order): %d of %d elements differ from MPI_Unpack's, the first at %d", order ? "Fortran" : "C", wrong,
          N, first);
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    MPI_Get(back, n, MPI_INT, right, 0, 1, mine, win);
    MPI_Win_unlock(right, win);
    CHECK(memcmp(back, data, (size_t)n * sizeof(int)) == 0, "darray get (%s order) gave other data", order ? "Fortran" : "C");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_free(&mine);
    MPI_Type_free(&lefts);
  }
  MPI_Win_free(&win);
}

static void errors_and_attributes(void) {
  int* mem;
  MPI_Win win;
  MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  const int v[2] = {1, 2};
  const int target = (rank + 1) % size;
  int rc = MPI_Put(v, 1, MPI_INT, target, 0, 1, MPI_INT, win);
  CHECK(error_class(rc) == MPI_ERR_RMA_SYNC, "a put outside any epoch returned class %d", error_class(rc));
  MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
  rc = MPI_Put(v, 2, MPI_INT, target, 3, 2, MPI_INT, win);
  CHECK(!strict || error_class(rc) == MPI_ERR_RMA_RANGE, "a put beyond the window returned class %d", error_class(rc));
  MPI_Win_unlock(target, win);
  MPI_Aint qsize = -1, qunit = -1;
  int qunit_int = -1;
  void* qbase = NULL;
  rc = MPI_Win_shared_query(win, target, &qsize, &qunit_int, &qbase);
  CHECK(error_class(rc) == MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query on an allocated window returned class %d", error_class(rc));
  rc = MPI_Win_shared_query_c(win, target, &qsize, &qunit, &qbase);
  CHECK(error_class(rc) == MPI_ERR_RMA_FLAVOR, "MPI_Win_shared_query_c on an allocated window returned class %d", error_class(rc));
  void* base = NULL;
  MPI_Aint* wsize = NULL;
  int* unit = NULL;
  int* flavor = NULL;
  int flag = 0;
  MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
  CHECK(flag && base == mem, "MPI_WIN_BASE");
  MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag);
  CHECK(flag && *wsize == 4 * sizeof(int), "MPI_WIN_SIZE");
  MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag);
  CHECK(flag && *unit == sizeof(int), "MPI_WIN_DISP_UNIT");
  MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
  CHECK(flag && *flavor == MPI_WIN_FLAVOR_ALLOCATE, "MPI_WIN_CREATE_FLAVOR");
  MPI_Group g;
  int gsize = 0, grank = -1;
  MPI_Win_get_group(win, &g);
  MPI_Group_size(g, &gsize);
  MPI_Group_rank(g, &grank);
  CHECK(gsize == size && grank == rank, "MPI_Win_get_group: size %d rank %d", gsize, grank);
  MPI_Group_free(&g);
  MPI_Win_set_name(win, "counters");
  char name[MPI_MAX_OBJECT_NAME];
  int len = 0;
  MPI_Win_get_name(win, name, &len);
  CHECK(strcmp(name, "counters") == 0, "MPI_Win_get_name: %s", name);
  MPI_Win_free(&win);
}

int main(int argc, char** argv) {
  if (!start(&argc, &argv, "rma", 2, &rank, &size)) return 2;
  if (argc > 1) rounds = atoi(argv[1]);
  if (argc > 2) compute_seconds = atof(argv[2]);
  strict = argc > 3 && strcmp(argv[3], "strict") == 0;
  fence_mode();
  pscw_mode();
  fetch_and_op_counter();
  cas_mutex();
  exclusive_and_accumulate();
  atomics_and_requests();
  dynamic_window();
  distributed_array();
  errors_and_attributes();
  progress_without_target();
  return finish("rma");
}
