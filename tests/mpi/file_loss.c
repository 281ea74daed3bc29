/* A cluster lost while it holds a file open, in a job that goes on without it
 * (<onClusterLoss>continue). file_loss DIR [holder-lost]: every rank writes its record to
 * one file and syncs it, then the last rank kills itself (taking its cluster with it). The
 * survivors' next calls on the file must fail, naming the loss; what was synced before is
 * in the file, the lost rank's record too. The file lives where the grid puts it (a shared
 * file system, or rank 0's cluster); with "holder-lost" the info key gridrt_file_cluster
 * puts it in the cluster that is lost, and only the error is checked. Every survivor says
 * "file_loss: rank R: N checks passed" (the world has lost a cluster: no collective end). */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

int main(int argc, char** argv) {
  int rank, size;
  if (!start(&argc, &argv, "file_loss", 2, &rank, &size)) return 2;
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: file_loss DIR [holder-lost]\n");
    MPI_Finalize();
    return 2;
  }
  const int holder_lost = argc > 2 && strcmp(argv[2], "holder-lost") == 0;
  char path[4096];
  snprintf(path, sizeof path, "%s/loss.dat", argv[1]);
  char cluster[64] = "";
  const char* mine = getenv("GRIDRT_CLUSTER");
  if (rank == size - 1 && mine) snprintf(cluster, sizeof cluster, "%s", mine);
  MPI_Bcast(cluster, sizeof cluster, MPI_CHAR, size - 1, MPI_COMM_WORLD);
  MPI_Info info;
  MPI_Info_create(&info);
  if (holder_lost) MPI_Info_set(info, "gridrt_file_cluster", cluster);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "MPI_File_open: class %d", error_class(rc));
  MPI_Info_free(&info);
  const int record = rank * 7 + 1;
  rc = MPI_File_write_at(fh, (MPI_Offset)rank * (MPI_Offset)sizeof(int), &record, 1, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "MPI_File_write_at: class %d", error_class(rc));
  rc = MPI_File_sync(fh);
  CHECK(rc == MPI_SUCCESS, "MPI_File_sync: class %d", error_class(rc));
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == size - 1) raise(SIGKILL);
  /* The survivors: their calls fail once the loss is known here (within seconds). */
  char text[MPI_MAX_ERROR_STRING] = "";
  int length = 0, tries = 0;
  for (rc = MPI_SUCCESS; rc == MPI_SUCCESS && tries < 600; ++tries) {
    usleep(50000);
    rc = MPI_File_write_at(fh, (MPI_Offset)rank * (MPI_Offset)sizeof(int), &record, 1, MPI_INT, MPI_STATUS_IGNORE);
  }
  CHECK(rc != MPI_SUCCESS, "no call on the file failed after its cluster was lost (%d tries)", tries);
  MPI_Error_string(rc, text, &length);
  CHECK(strstr(text, "lost") != NULL && strstr(text, "loss.dat") != NULL, "the error does not say the loss and the file: %s", text);
  printf("file_loss: rank %d: %s\n", rank, text);
  rc = MPI_File_sync(fh);
  CHECK(rc != MPI_SUCCESS, "MPI_File_sync after the loss succeeded");
  if (!holder_lost) {
    /* What was synced before the loss is in the file: read it as a file of this machine. */
    FILE* in = fopen(path, "rb");
    CHECK(in != NULL, "%s cannot be read", path);
    int all[64] = {0};
    if (in) {
      const size_t got = fread(all, sizeof(int), (size_t)size, in);
      CHECK(got == (size_t)size, "%s holds %zu records of %d", path, got, size);
      fclose(in);
    }
    for (int r = 0; r < size && r < 64; ++r) CHECK(all[r] == r * 7 + 1, "record %d is %d after the loss", r, all[r]);
  }
  MPI_File_close(&fh);
  if (checks_failed) printf("file_loss: rank %d: %d of %d checks FAILED\n", rank, checks_failed, checks_done);
  else printf("file_loss: rank %d: %d checks passed\n", rank, checks_done);
  MPI_Finalize();
  return checks_failed ? 1 : 0;
}
