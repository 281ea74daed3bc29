/* Whether a non-blocking write goes on while the program computes: each rank writes MIB MiB
 * of its own at its own offset, blocking (MPI_File_write_at) and non-blocking
 * (MPI_File_iwrite_at ... MPI_Wait), with COMPUTE_MS of computing (a sleep) between the
 * call and the wait; ROUNDS of each, the median of every rank's time said by that rank.
 * Across clusters with the file in one cluster (bench/io.sh; docs/benchmarks.md), a rank
 * of the other cluster computes while its data crosses the WAN only if the non-blocking
 * call overlaps.
 *   io_overlap FILE [MIB] [ROUNDS] [COMPUTE_MS]   (defaults 8, 5, 700) */
#include <string.h>
#include <time.h>

#include "io_timing.h"

static void compute(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

int main(int argc, char** argv) {
  int rank, size, rounds;
  long mib;
  if (!io_start(&argc, &argv, "io_overlap", &rank, &size, &mib, &rounds)) return 2;
  if (argc <= 2) mib = 8;
  if (argc <= 3) rounds = 5;
  const long compute_ms = argc > 4 ? atol(argv[4]) : 700;
  const MPI_Offset n = (MPI_Offset)mib << 20;
  char* buf = malloc((size_t)n);
  memset(buf, 'a' + rank % 26, (size_t)n);
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
  double took[2][64];
  for (int round = 0; round < rounds && round < 64; ++round)
    for (int blocking = 1; blocking >= 0; --blocking) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      MPI_Request r = MPI_REQUEST_NULL;
      if (blocking) MPI_File_write_at(fh, rank * n, buf, (int)n, MPI_CHAR, MPI_STATUS_IGNORE);
      else MPI_File_iwrite_at(fh, rank * n, buf, (int)n, MPI_CHAR, &r);
      compute(compute_ms);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
      took[blocking][round] = MPI_Wtime() - t0;
    }
  const int done = rounds < 64 ? rounds : 64;
  printf("rank %d: %ld MiB then %ld ms of computing: write_at %.3f s, iwrite_at %.3f s\n", rank, mib, compute_ms, io_median(took[1], done),
         io_median(took[0], done));
  MPI_File_close(&fh);
  free(buf);
  MPI_Finalize();
  return 0;
}
