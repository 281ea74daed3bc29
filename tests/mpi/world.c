/* The life cycle and the environment of an MPI program run across clusters: MPI_Init_thread
 * (MPI_THREAD_MULTIPLE is refused as MPI allows, by providing less), the queries of the
 * environment, MPI_COMM_WORLD's attributes, MPI_Finalize. */
#include <string.h>

#include "check.h"

int main(int argc, char** argv) {
  int provided = -1, flag = 0;
  MPI_Initialized(&flag);
  CHECK(!flag, "initialized before MPI_Init_thread");
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank, size, level = -1, main_thread = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  check_rank = rank;
  MPI_Initialized(&flag);
  CHECK(flag, "not initialized after MPI_Init_thread");
  MPI_Query_thread(&level);
  MPI_Is_thread_main(&main_thread);
  CHECK(level == provided && provided >= MPI_THREAD_FUNNELED && main_thread, "thread level %d, queried %d", provided, level);
  int version = 0, subversion = 0, len = 0;
  MPI_Get_version(&version, &subversion);
  CHECK(version >= 3, "MPI version %d.%d", version, subversion);
  char library[MPI_MAX_LIBRARY_VERSION_STRING], host[MPI_MAX_PROCESSOR_NAME];
  MPI_Get_library_version(library, &len);
  CHECK(len > 0, "a library version");
  MPI_Get_processor_name(host, &len);
  CHECK(len > 0, "a processor name");
  const double t0 = MPI_Wtime();
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(MPI_Wtime() >= t0 && MPI_Wtick() > 0, "MPI_Wtime and MPI_Wtick");
  int *tag_ub, *universe;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
  CHECK(flag && *tag_ub >= 32767, "MPI_TAG_UB");
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &universe, &flag);
  CHECK(!flag || *universe >= size, "MPI_UNIVERSE_SIZE %d below the job's %d processes", flag ? *universe : -1, size);
  if (rank == 0) printf("world: %d processes, thread level %d, on %s\n", size, provided, host);
  MPI_Finalized(&flag);
  CHECK(!flag, "finalized before MPI_Finalize");
  const int status = finish("world");
  MPI_Finalized(&flag);
  if (!flag) {
    fprintf(stderr, "rank %d: not finalized after MPI_Finalize\n", rank);
    return 1;
  }
  return status;
}
