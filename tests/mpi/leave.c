/* A rank that leaves the job early, as erroneous MPI programs do, while the others wait
 * for it: the whole job must end within seconds, naming the rank and its exit status,
 * not after a timeout.
 *   mpi_leave no-finalize R   rank R returns from main right after MPI_Init, without
 *                             MPI_Finalize; the others wait in a barrier for it
 *   mpi_leave no-init         local rank 1 of the last cluster (GRIDRT_CLUSTER) exits 0
 *                             before MPI_Init; the others wait in MPI_Init and a barrier */
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "no-init") == 0) {
    const char* cluster = getenv("GRIDRT_CLUSTER");
    const char* local = getenv("PMI_RANK");
    if (cluster && strcmp(cluster, argc > 2 ? argv[2] : "c1") == 0 && local && strcmp(local, "1") == 0) return 0;
  }
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc > 2 && strcmp(argv[1], "no-finalize") == 0 && rank == atoi(argv[2])) return 0;
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
