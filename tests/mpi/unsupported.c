/* A program that calls what the MPI layer does not cover across clusters with
 * MPI_ERRORS_RETURN, or an error handler of its own, and goes on regardless (as ARMCI-MPI
 * does at its first window): the calls fail with MPI_ERR_UNSUPPORTED_OPERATION, and the
 * layer says so on stderr once per function, whatever the handler (the test counts the
 * lines). Partitioned communication on MPI_COMM_WORLD, three times, then on a duplicate
 * with a handler that ignores errors. */
#include "check.h"
#include "gridrt/mpichx.h"

static int handler_calls;
static void ignore_errors(MPI_Comm* comm, int* code, ...) {
  (void)comm;
  (void)code;
  ++handler_calls;
}

static int partitioned_send(MPI_Comm comm, int dest) {
  static int buf[4];
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Psend_init(buf, 2, 2, MPI_INT, dest, 0, comm, MPI_INFO_NULL, &r);
  if (rc == MPI_SUCCESS) MPI_Request_free(&r); /* (MPICH's own, outside a grid job) */
  return rc;
}

int main(int argc, char** argv) {
  int rank, size;
  if (!start(&argc, &argv, "unsupported", 2, &rank, &size)) return 2;
  const int across = GRIDRT_HAS_TOPOLOGY;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  for (int i = 0; i < 3; ++i) {
    const int rc = partitioned_send(MPI_COMM_WORLD, (rank + 1) % size);
    if (across) CHECK(error_class(rc) == MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Psend_init across clusters: class %d", error_class(rc));
  }
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Errhandler mine;
  MPI_Comm_create_errhandler(ignore_errors, &mine);
  MPI_Comm_set_errhandler(dup, mine);
  partitioned_send(dup, (rank + 1) % size);
  if (across) CHECK(handler_calls == 1, "the program's handler ran %d times", handler_calls);
  MPI_Errhandler_free(&mine);
  MPI_Comm_free(&dup);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  return finish("unsupported");
}
