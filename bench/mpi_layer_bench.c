/* What gridrt's MPI layer costs (bench/mpi_layer.sh; docs/benchmarks.md). Plain MPI C.
 *
 *   mpi_layer_bench pingpong [SIZES...] [--rounds R]
 *     Between two clusters, the same two processes, the same run: MPI_Send and MPI_Recv on
 *     MPI_COMM_WORLD (through the layer, as an unmodified program gets them) against
 *     gridrt's own gridrt_send and gridrt_recv (weak symbols, found in the layer's
 *     libgridrt). For each size, alternately R rounds of each, a round N ping-pongs; the
 *     median round's one-way time and bandwidth. Needs gridrun, 2 processes in 2 clusters.
 *   mpi_layer_bench allreduce [--rounds R]
 *     An 8-byte MPI_Allreduce loop on this process's cluster's communicator (MPI's split by
 *     "cluster", or by node without gridrun): the median round's time per call, the first
 *     cluster's processes timing, the others waiting in a barrier meanwhile.
 *
 * Rank 0 prints the figures. */
#include "common/program_help.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridrt/gridrt.h"
#pragma weak gridrt_send
#pragma weak gridrt_recv

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* One round: `n` ping-pongs of `bytes`; returns the one-way time in us. */
static double round_of(int use_mpi, char* buf, size_t bytes, int n, int rank, int peer) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (int i = 0; i < n; ++i) {
    if (rank == 0) {
      if (use_mpi) {
        MPI_Send(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        gridrt_send(buf, bytes, peer, 1);
        gridrt_recv(buf, bytes, peer, 1, NULL);
      }
    } else {
      if (use_mpi) {
        MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
      } else {
        gridrt_recv(buf, bytes, peer, 1, NULL);
        gridrt_send(buf, bytes, peer, 1);
      }
    }
  }
  return (MPI_Wtime() - t0) * 1e6 / (2.0 * n);
}

/* 8-byte all-reduces on the cluster's communicator: R rounds of 20000 calls. */
static int allreduce_loop(int rank, int rounds) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_hw_resource_type", "cluster");
  MPI_Comm cluster;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &cluster);
  MPI_Info_free(&info);
  if (cluster == MPI_COMM_NULL) MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &cluster);
  int first = 0, n = 0;
  MPI_Comm_size(cluster, &n);
  int crank;
  MPI_Comm_rank(cluster, &crank);
  /* The cluster holding world rank 0 times; the others wait (the layer's waits yield). */
  int with_zero = rank == 0;
  MPI_Allreduce(&with_zero, &first, 1, MPI_INT, MPI_MAX, cluster);
  double t[99];
  if (first) {
    long long in[1] = {rank}, out[1];
    for (int i = 0; i < 1000; ++i) MPI_Allreduce(in, out, 1, MPI_LONG_LONG, MPI_SUM, cluster);
    for (int r = 0; r < rounds; ++r) {
      MPI_Barrier(cluster);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < 20000; ++i) MPI_Allreduce(in, out, 1, MPI_LONG_LONG, MPI_SUM, cluster);
      t[r] = (MPI_Wtime() - t0) * 1e6 / 20000;
    }
    qsort(t, (size_t)rounds, sizeof(double), cmp);
    if (rank == 0) printf("allreduce 8 bytes on a cluster of %d: %.3f us per call (median of %d rounds)\n", n, t[rounds / 2], rounds);
  }
  fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm_free(&cluster);
  MPI_Finalize();
  return 0;
}

static const char kUsage[] =
    "usage: mpi_layer_bench pingpong [SIZES...] [--rounds R] | allreduce [--rounds R]\n"
    "What gridrt's MPI layer costs (bench/mpi_layer.sh). Plain MPI. pingpong: between two clusters,\n"
    "MPI_Send/MPI_Recv through the layer against gridrt's own send and receive (run by gridrun, 2\n"
    "processes in 2 clusters). allreduce: an 8-byte MPI_Allreduce on the cluster's communicator.\n";

int main(int argc, char** argv) {
  gridrt_help_if_asked(argc, argv, kUsage);
  MPI_Init(&argc, &argv);
  int rank, size, rounds = 7;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  size_t sizes[64];
  int nsizes = 0;
  const int allreduce = argc > 1 && strcmp(argv[1], "allreduce") == 0;
  if (argc < 2 || (!allreduce && strcmp(argv[1], "pingpong") != 0)) {
    if (rank == 0) fprintf(stderr, "usage: mpi_layer_bench pingpong [SIZES...] [--rounds R] | allreduce [--rounds R]\n");
    MPI_Finalize();
    return 2;
  }
  for (int i = 2; i < argc; ++i) {
    if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = atoi(argv[++i]);
    else if (nsizes < 64) sizes[nsizes++] = strtoull(argv[i], NULL, 10);
  }
  if (nsizes == 0) {
    const size_t d[] = {8, 1024, 65536, 1048576, 4194304};
    for (nsizes = 0; nsizes < 5; ++nsizes) sizes[nsizes] = d[nsizes];
  }
  if (rounds < 1 || rounds > 99) {
    if (rank == 0) fprintf(stderr, "mpi_layer_bench: --rounds takes 1..99\n");
    MPI_Finalize();
    return 2;
  }
  if (allreduce) return allreduce_loop(rank, rounds);
  if (size != 2 || !gridrt_send) {
    if (rank == 0) fprintf(stderr, "mpi_layer_bench pingpong: run it by gridrun with 2 processes in 2 clusters\n");
    MPI_Finalize();
    return 2;
  }
  const int peer = 1 - rank;
  if (rank == 0) printf("# %9s %12s %12s %12s %12s %8s\n", "bytes", "mpi_us", "gridrt_us", "mpi_MB/s", "gridrt_MB/s", "ratio");
  for (int s = 0; s < nsizes; ++s) {
    const size_t bytes = sizes[s];
    char* buf = calloc(bytes ? bytes : 1, 1);
    /* About 0.2 s of traffic per round at 100 MB/s; at least 5, at most 1000 ping-pongs. */
    int n = (int)(20000000 / (bytes + 1));
    n = n < 5 ? 5 : n > 1000 ? 1000 : n;
    double mpi[99], own[99];
    round_of(1, buf, bytes, 2, rank, peer); /* warm-up */
    round_of(0, buf, bytes, 2, rank, peer);
    for (int r = 0; r < rounds; ++r) {
      mpi[r] = round_of(1, buf, bytes, n, rank, peer);
      own[r] = round_of(0, buf, bytes, n, rank, peer);
    }
    qsort(mpi, (size_t)rounds, sizeof(double), cmp);
    qsort(own, (size_t)rounds, sizeof(double), cmp);
    const double m = mpi[rounds / 2], g = own[rounds / 2];
    if (rank == 0) printf("  %9zu %12.1f %12.1f %12.1f %12.1f %8.3f\n", bytes, m, g, bytes / m, bytes / g, m / g);
    free(buf);
  }
  fflush(stdout);
  MPI_Finalize();
  return 0;
}
