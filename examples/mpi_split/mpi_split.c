/* An unmodified MPI program that uses the grid's topology the way QCG-OMPI's applications
 * do: MPI_COMM_WORLD split by JobProfile group and by cluster, collectives on each.
 * Built with plain mpicc (it links against MPICH alone); run by gridrun, MPI_COMM_WORLD
 * spans every cluster and the topology is there; run by mpiexec, it is one cluster.
 *
 *   gridrun jobprofiles/mpi-split.xml          (two groups, one per cluster)
 *   gridrun -n 5 build/bin/mpi_split           (one group over the grid's clusters)
 *
 * What it does, in the three communicators it makes:
 *   - per group (GRIDRT_GROUP_COLORS): each group sums its members' world ranks;
 *   - per cluster (MPI_COMM_TYPE_HW_GUIDED, "cluster"): each cluster's rank 0 broadcasts
 *     its host name; these communicators never leave their cluster;
 *   - the clusters' rank 0s: they add up their clusters' sizes, which must make the world. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "gridrt/mpichx.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  /* This process's JobProfile group, and its name: one group without gridrun. */
  int group = 0;
  char group_name[MPI_MAX_OBJECT_NAME] = "(no grid)";
  if (GRIDRT_HAS_TOPOLOGY) {
    int *groups, flag, len;
    MPI_Comm_get_attr(MPI_COMM_WORLD, GRIDRT_GROUP_COLORS, &groups, &flag);
    if (flag) group = groups[rank];
    GRIDRT_Group_name(group, group_name, &len);
  }
  MPI_Comm by_group;
  MPI_Comm_split(MPI_COMM_WORLD, group, rank, &by_group);
  int group_rank, group_size, group_sum = 0;
  MPI_Comm_rank(by_group, &group_rank);
  MPI_Comm_size(by_group, &group_size);
  MPI_Allreduce(&rank, &group_sum, 1, MPI_INT, MPI_SUM, by_group);

  /* This process's cluster (under plain MPICH, which knows no such level: its node). */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "mpi_hw_resource_type", "cluster");
  MPI_Comm cluster;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &cluster);
  MPI_Info_free(&info);
  if (cluster == MPI_COMM_NULL) MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &cluster);
  int cluster_rank, cluster_size, len;
  MPI_Comm_rank(cluster, &cluster_rank);
  MPI_Comm_size(cluster, &cluster_size);
  char host[MPI_MAX_PROCESSOR_NAME] = "";
  MPI_Get_processor_name(host, &len);
  MPI_Bcast(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, cluster);

  /* The clusters' first processes, one per cluster. */
  MPI_Comm leaders;
  MPI_Comm_split(MPI_COMM_WORLD, cluster_rank == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
  int clusters = 0, counted = 0;
  if (leaders != MPI_COMM_NULL) {
    MPI_Comm_size(leaders, &clusters);
    MPI_Allreduce(&cluster_size, &counted, 1, MPI_INT, MPI_SUM, leaders);
  }
  MPI_Bcast(&clusters, 1, MPI_INT, 0, MPI_COMM_WORLD); /* world rank 0 leads its cluster */
  MPI_Bcast(&counted, 1, MPI_INT, 0, MPI_COMM_WORLD);

  if (group_rank == 0) printf("group %d '%s': %d processes, their world ranks add up to %d\n", group, group_name, group_size, group_sum);
  if (cluster_rank == 0) printf("world rank %d leads a cluster of %d processes on %s\n", rank, cluster_size, host);
  if (rank == 0) printf("%d processes in MPI_COMM_WORLD, %d clusters holding %d of them\n", size, clusters, counted);

  if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
  MPI_Comm_free(&cluster);
  MPI_Comm_free(&by_group);
  MPI_Finalize();
  return counted == size ? 0 : 1;
}
