/* io_bench: a collective write and a collective read of one file by every rank, as MPI-IO
 * codes do them (bench/io.sh runs it under MPICH alone and across clusters, the file on a
 * file system every cluster shares). Plain MPI.
 *
 *   io_bench FILE [MIB] [ROUNDS]
 *     FILE    the file (made, written, read, deleted each round)
 *     MIB     its size in MiB (default 64)
 *     ROUNDS  rounds per figure; medians are printed (default 7)
 *
 * Two layouts: "contiguous", each rank a contiguous part of the file (MPI_File_write_at_all);
 * "interleaved", a 2-D array of ints whose columns are split among the ranks, each rank's
 * part a subarray view (every row holds a piece of every rank's). Timed from a barrier to
 * the end of the slowest rank's call (the page cache's speed: no sync, as a code that
 * checkpoints and goes on sees it). And first, MPI_File_open and MPI_File_close together. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io_timing.h"

/* The slowest rank's time of `what` from a barrier. */
static double timed(MPI_File fh, int write, int interleaved, char* buf, MPI_Offset bytes, int rank) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  int rc;
  if (interleaved)
    rc = write ? MPI_File_write_all(fh, buf, (int)(bytes / sizeof(int)), MPI_INT, MPI_STATUS_IGNORE)
               : MPI_File_read_all(fh, buf, (int)(bytes / sizeof(int)), MPI_INT, MPI_STATUS_IGNORE);
  else
    rc = write ? MPI_File_write_at_all(fh, (MPI_Offset)rank * bytes, buf, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE)
               : MPI_File_read_at_all(fh, (MPI_Offset)rank * bytes, buf, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int n = 0;
    MPI_Error_string(rc, text, &n);
    fprintf(stderr, "io_bench: rank %d: %s\n", rank, text);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return io_slowest_since(t0);
}

int main(int argc, char** argv) {
  int rank, size, rounds;
  long mib;
  if (!io_start(&argc, &argv, "io_bench", &rank, &size, &mib, &rounds)) return 2;
  const MPI_Offset total = (MPI_Offset)mib << 20, mine = total / size;
  /* The interleaved layout: rows of 1024 ints, each rank 1024 / size columns of every row. */
  const int cols = 1024, rows = (int)(total / sizeof(int) / cols), my_cols = cols / size;
  char* buf = malloc((size_t)mine);
  memset(buf, 'a' + rank % 26, (size_t)mine);
  double* samples = malloc(sizeof(double) * (size_t)rounds);
  /* What opening and closing the file costs, collective calls both. */
  for (int r = 0; r < rounds; ++r) {
    MPI_File fh;
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_close(&fh);
    samples[r] = io_slowest_since(t0);
  }
  if (rank == 0) printf("open+close  %.1f ms\n", io_median(samples, rounds) * 1e3);
  for (int interleaved = 0; interleaved < 2; ++interleaved) {
    MPI_Datatype view = MPI_DATATYPE_NULL;
    if (interleaved) {
      int sizes[2] = {rows, cols}, sub[2] = {rows, my_cols}, at[2] = {0, rank * my_cols};
      MPI_Type_create_subarray(2, sizes, sub, at, MPI_ORDER_C, MPI_INT, &view);
      MPI_Type_commit(&view);
    }
    double medians[2];
    for (int write = 1; write >= 0; --write) {
      for (int r = 0; r < rounds; ++r) {
        MPI_File fh;
        if (rank == 0 && write) MPI_File_delete(argv[1], MPI_INFO_NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
        if (interleaved) MPI_File_set_view(fh, 0, MPI_INT, view, "native", MPI_INFO_NULL);
        samples[r] = timed(fh, write, interleaved, buf, mine, rank);
        MPI_File_close(&fh);
      }
      medians[write] = io_median(samples, rounds);
    }
    if (rank == 0)
      printf("%-11s %ld MiB on %d ranks: write %8.1f MB/s (%.3f s)  read %8.1f MB/s (%.3f s)\n", interleaved ? "interleaved" : "contiguous",
             mib, size, total / medians[1] / 1e6, medians[1], total / medians[0] / 1e6, medians[0]);
    if (interleaved) MPI_Type_free(&view);
  }
  if (rank == 0) MPI_File_delete(argv[1], MPI_INFO_NULL);
  free(samples);
  free(buf);
  MPI_Finalize();
  return 0;
}
