/* The baseline of bench/startup.sh: an MPI hello world that does not use gridrt. */
#include "common/program_help.h"
#include <mpi.h>
#include <stdio.h>

static const char kUsage[] =
    "usage: mpi_hello\n"
    "An MPI hello world that does not use gridrt: the baseline of bench/startup.sh.\n";

int main(int argc, char** argv) {
  gridrt_help_if_asked(argc, argv, kUsage);
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  printf("rank=%d size=%d\n", rank, size);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
