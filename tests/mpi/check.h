/* Checks for the unmodified MPI programs of tests/mpi: plain MPI C, built against MPICH
 * alone. Each check that fails says where and what on stderr; finish() gathers the
 * failures of every process, rank 0 says how many checks passed, and the exit status is
 * 1 if any failed anywhere. */
#ifndef GRIDRT_TESTS_MPI_CHECK_H
#define GRIDRT_TESTS_MPI_CHECK_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int checks_done, checks_failed, check_rank = -1;

#define CHECK(cond, ...)                                                                 \
  do {                                                                                   \
    ++checks_done;                                                                       \
    if (!(cond)) {                                                                       \
      ++checks_failed;                                                                   \
      fprintf(stderr, "rank %d: %s:%d: check failed: ", check_rank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                                      \
      fputc('\n', stderr);                                                               \
    }                                                                                    \
  } while (0)

/* The error class of an MPI return code. */
static inline int error_class(int rc) {
  int c = rc;
  MPI_Error_class(rc, &c);
  return c;
}

/* MPI_Init, this process's rank and the world's size; false (having said why and ended MPI)
 * when the world's size is outside min..64: main then returns 2. */
static inline int start(int* argc, char*** argv, const char* program, int min_size, int* rank, int* size) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  check_rank = *rank;
  if (*size >= min_size && *size <= 64) return 1;
  if (*rank == 0) fprintf(stderr, "%s: run with %d to 64 processes\n", program, min_size);
  MPI_Finalize();
  return 0;
}

static inline int finish(const char* program) {
  int failed = 0, done = 0, size = 0;
  MPI_Allreduce(&checks_failed, &failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&checks_done, &done, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (check_rank == 0) {
    if (failed) printf("%s: %d of %d checks FAILED on %d processes\n", program, failed, done, size);
    else printf("%s: %d checks passed on %d processes\n", program, done, size);
  }
  MPI_Finalize();
  return failed ? 1 : 0;
}

#endif
