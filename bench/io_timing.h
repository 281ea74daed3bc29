/* What io_bench and hdf5_bench share: their start and arguments (FILE [MIB] [ROUNDS]), the
 * slowest rank's time since a moment, the median of a round's samples. Plain C, MPI. */
#ifndef GRIDRT_BENCH_IO_TIMING_H
#define GRIDRT_BENCH_IO_TIMING_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* MPI_Init, this rank, the size, and MIB (default 64) and ROUNDS (default 7); 0 (having said
 * how to call `program` and ended MPI) without a FILE: main then returns 2. */
static inline int io_start(int* argc, char*** argv, const char* program, int* rank, int* size, long* mib, int* rounds) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  if (*argc < 2) {
    if (*rank == 0) fprintf(stderr, "usage: %s FILE [MIB] [ROUNDS]\n", program);
    MPI_Finalize();
    return 0;
  }
  *mib = *argc > 2 ? atol((*argv)[2]) : 64;
  *rounds = *argc > 3 ? atoi((*argv)[3]) : 7;
  return 1;
}

static inline int io_compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* The median of n samples (sorted in place). */
static inline double io_median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, io_compare);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The slowest rank's time since t0 (collective over MPI_COMM_WORLD). */
static inline double io_slowest_since(double t0) {
  double t = MPI_Wtime() - t0, slowest = 0;
  MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

#endif
