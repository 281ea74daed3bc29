/* MPI_Win_fence against MPI_Barrier on the same processes (docs/benchmarks.md, "One-sided
 * communication"): REPS fences, each after every rank put 8 bytes into its right neighbour
 * (the fence then also completes the puts), and REPS fences with nothing to complete,
 * against REPS barriers on MPI_COMM_WORLD; medians of ROUNDS rounds, milliseconds per call,
 * printed by rank 0.
 *   fence_bench [ROUNDS] [REPS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rounds = argc > 1 ? atoi(argv[1]) : 5, reps = argc > 2 ? atoi(argv[2]) : 20;
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
  if (rank == 0) {
    const char* names[3] = {"barrier", "fence", "put_fence"};
    double* col = malloc(sizeof(double) * (size_t)rounds);
    for (int k = 0; k < 3; ++k) {
      for (int r = 0; r < rounds; ++r) col[r] = t[3 * r + k];
      qsort(col, (size_t)rounds, sizeof(double), cmp);
      printf("%s %.2f\n", names[k], col[rounds / 2]);
    }
    free(col);
  }
  free(t);
  MPI_Win_free(&win);
  MPI_Finalize();
  return 0;
}
