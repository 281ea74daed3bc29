/* One-sided communication against two-sided, between ranks 0 and 1 (put them in two
 * clusters), in one run (docs/benchmarks.md, "One-sided communication"): medians of ROUNDS
 * rounds of REPS operations each.
 *   pingpong        8-byte MPI_Send/MPI_Recv round trip
 *   lock_get        MPI_Win_lock, 8-byte MPI_Get, MPI_Win_unlock
 *   flush_get       inside one MPI_Win_lock_all epoch: MPI_Get, MPI_Win_flush
 *   put_flush       MPI_Put, MPI_Win_flush
 *   fetch_and_op    MPI_Fetch_and_op, MPI_Win_flush
 *   send_stream     1 MiB MPI_Send x 16, then a 1-byte answer (MB/s)
 *   put_stream      1 MiB MPI_Put x 16, then MPI_Win_flush (MB/s)
 *   busy_target     a lock/get/unlock while the target computes for 1 s without MPI calls
 *   busy_epoch      the same inside an MPI_Win_lock_all(MPI_MODE_NOCHECK) epoch, as coarray
 *                   programs hold one: MPI_Get, MPI_Win_flush (no lock to ask for)
 * Plain MPI; prints "NAME VALUE" lines at rank 1 (microseconds per operation, or MB/s).
 * With "fence": MPI_Win_fence against MPI_Barrier instead (fence_vs_barrier).
 *   onesided_bench [ROUNDS] [REPS] [fence] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* MPI_Win_fence against MPI_Barrier on the same processes, all of them: REPS barriers on
 * MPI_COMM_WORLD, REPS fences with nothing to complete, and REPS fences each after every
 * rank put 8 bytes into its right neighbour (the fence then also completes the puts);
 * milliseconds per call, printed by rank 0. */
/* The median over rounds of each of `tests` figures (t[round * tests + test]), one line each. */
static void print_medians(const char* const* names, int tests, const double* t, int rounds) {
  double* col = malloc(sizeof(double) * (size_t)rounds);
  for (int k = 0; k < tests; ++k) {
    for (int r = 0; r < rounds; ++r) col[r] = t[r * tests + k];
    qsort(col, (size_t)rounds, sizeof(double), cmp);
    printf("%s %.2f\n", names[k], col[rounds / 2]);
  }
  free(col);
}

static void fence_vs_barrier(int rank, int size, int rounds, int reps) {
  long* mem;
  MPI_Win win;
  MPI_Win_allocate(sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  double* t = calloc((size_t)(3 * rounds), sizeof(double));
  const long value = rank;
  MPI_Win_fence(0, win);
  for (int r = 0; r < rounds; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int i = 0; i < reps; ++i) MPI_Barrier(MPI_COMM_WORLD);
    t[3 * r] = (MPI_Wtime() - start) / reps * 1e3;
    start = MPI_Wtime();
    for (int i = 0; i < reps; ++i) MPI_Win_fence(0, win);
    t[3 * r + 1] = (MPI_Wtime() - start) / reps * 1e3;
    start = MPI_Wtime();
    for (int i = 0; i < reps; ++i) {
      MPI_Put(&value, 1, MPI_LONG, (rank + 1) % size, 0, 1, MPI_LONG, win);
      MPI_Win_fence(0, win);
    }
    t[3 * r + 2] = (MPI_Wtime() - start) / reps * 1e3;
  }
  const char* const names[3] = {"barrier", "fence", "put_fence"};
  if (rank == 0) print_medians(names, 3, t, rounds);
  free(t);
  MPI_Win_free(&win);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rounds = argc > 1 ? atoi(argv[1]) : 5, reps = argc > 2 ? atoi(argv[2]) : 200;
  if (argc > 3 && strcmp(argv[3], "fence") == 0) {
    fence_vs_barrier(rank, size, rounds, reps);
    MPI_Finalize();
    return 0;
  }
  enum { MB = 1 << 20, STREAM = 16, TESTS = 9 };
  const char* names[TESTS] = {"pingpong",    "lock_get",   "flush_get",   "put_flush", "fetch_and_op",
                              "send_stream", "put_stream", "busy_target", "busy_epoch"};
  double* t = calloc((size_t)(rounds * TESTS), sizeof(double));
  char* mem;
  MPI_Win win;
  MPI_Win_allocate(MB, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
  char* buf = malloc(MB);
  memset(buf, 1, MB);
  long value = 0, one = 1, got = 0;
  for (int r = 0; r < rounds && size >= 2; ++r) {
    double start;
    MPI_Barrier(MPI_COMM_WORLD);
    /* two-sided round trips */
    start = MPI_Wtime();
    for (int i = 0; i < reps; ++i) {
      if (rank == 1) {
        MPI_Send(&value, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD);
        MPI_Recv(&value, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 0) {
        MPI_Recv(&value, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&value, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD);
      }
    }
    t[r * TESTS + 0] = (MPI_Wtime() - start) / reps * 1e6;
    MPI_Barrier(MPI_COMM_WORLD);
    /* The target waits idle in MPI_Recv meanwhile, as the receiver of the two-sided tests does
     * (not in a collective, whose waiting would take a core of this small machine). */
    if (rank == 0) MPI_Recv(&value, 1, MPI_LONG, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 1) {
      start = MPI_Wtime();
      for (int i = 0; i < reps; ++i) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(&got, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
        MPI_Win_unlock(0, win);
      }
      t[r * TESTS + 1] = (MPI_Wtime() - start) / reps * 1e6;
      MPI_Win_lock_all(0, win);
      start = MPI_Wtime();
      for (int i = 0; i < reps; ++i) {
        MPI_Get(&got, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
        MPI_Win_flush(0, win);
      }
      t[r * TESTS + 2] = (MPI_Wtime() - start) / reps * 1e6;
      start = MPI_Wtime();
      for (int i = 0; i < reps; ++i) {
        MPI_Put(&value, 1, MPI_LONG, 0, 8, 1, MPI_LONG, win);
        MPI_Win_flush(0, win);
      }
      t[r * TESTS + 3] = (MPI_Wtime() - start) / reps * 1e6;
      start = MPI_Wtime();
      for (int i = 0; i < reps; ++i) {
        MPI_Fetch_and_op(&one, &got, MPI_LONG, 0, 16, MPI_SUM, win);
        MPI_Win_flush(0, win);
      }
      t[r * TESTS + 4] = (MPI_Wtime() - start) / reps * 1e6;
      MPI_Win_unlock_all(win);
      MPI_Send(&value, 1, MPI_LONG, 0, 3, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* streams of 1 MiB */
    start = MPI_Wtime();
    if (rank == 1) {
      for (int i = 0; i < STREAM; ++i) MPI_Send(buf, MB, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
      MPI_Recv(&value, 1, MPI_LONG, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      t[r * TESTS + 5] = STREAM * (double)MB / (MPI_Wtime() - start) / 1e6;
    } else if (rank == 0) {
      for (int i = 0; i < STREAM; ++i) MPI_Recv(buf, MB, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&value, 1, MPI_LONG, 1, 2, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) MPI_Recv(&value, 1, MPI_LONG, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 1) {
      MPI_Win_lock_all(0, win);
      start = MPI_Wtime();
      for (int i = 0; i < STREAM; ++i) MPI_Put(buf, MB, MPI_CHAR, 0, 0, MB, MPI_CHAR, win);
      MPI_Win_flush(0, win);
      t[r * TESTS + 6] = STREAM * (double)MB / (MPI_Wtime() - start) / 1e6;
      MPI_Win_unlock_all(win);
      MPI_Send(&value, 1, MPI_LONG, 0, 3, MPI_COMM_WORLD);
    }
    /* a target that computes: a lock, get, unlock; then a get and flush inside an epoch (each
     * after one barrier: the computation begun right after two in a row made the target's
     * I/O thread wait for the computing thread's time slice, 1.5-3.5 ms instead of 0.25) */
    for (int epoch = 0; epoch < 2; ++epoch) {
      if (rank == 1 && epoch) MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 0) {
        const double until = MPI_Wtime() + 1.0;
        volatile double x = 0;
        while (MPI_Wtime() < until)
          for (int i = 0; i < 10000; ++i) x += i;
      } else if (rank == 1) {
        start = MPI_Wtime();
        if (!epoch) MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(&got, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win);
        if (!epoch) MPI_Win_unlock(0, win);
        else MPI_Win_flush(0, win);
        t[r * TESTS + 7 + epoch] = (MPI_Wtime() - start) * 1e6;
        if (epoch) MPI_Win_unlock_all(win);
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  if (rank == 1) print_medians(names, TESTS, t, rounds);
  free(buf);
  free(t);
  MPI_Win_free(&win);
  MPI_Finalize();
  return 0;
}
