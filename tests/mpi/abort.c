/* MPI_Abort across clusters: the last rank aborts with the error code given as argument
 * while the others wait for a message that never comes; the whole job must end, with that
 * code, naming the rank. */
#include <stdlib.h>

#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, x;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == size - 1) MPI_Abort(MPI_COMM_WORLD, argc > 1 ? atoi(argv[1]) : 1);
  MPI_Recv(&x, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Finalize();
  return 0;
}
