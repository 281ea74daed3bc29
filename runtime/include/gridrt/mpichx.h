/* The grid's topology to an MPI program run by gridrun (docs/mpi.md, "Topology"), as
 * MPICH-G2 published it: attributes of every communicator, read with MPI_Comm_get_attr.
 *
 *   int *depths, **colors, *groups, flag;
 *   MPI_Comm_get_attr(comm, MPICHX_TOPOLOGY_DEPTHS, &depths, &flag);  // depths[r]: levels of member r
 *   MPI_Comm_get_attr(comm, MPICHX_TOPOLOGY_COLORS, &colors, &flag);  // colors[r][level]
 *   MPI_Comm_get_attr(comm, GRIDRT_GROUP_COLORS, &groups, &flag);     // groups[r]: its JobProfile group
 *
 * Two members share a color at a level when they are in the same grid (level 0), site,
 * cluster or node; colors are numbered per communicator from 0, in rank order of first
 * appearance. A group's color is its index in the JobProfile; GRIDRT_Group_name names it.
 *
 * The symbols are weak: a program built with plain mpicc links without gridrt's libraries,
 * and finds them (GRIDRT_HAS_TOPOLOGY) only when run by gridrun, which loads the MPI layer.
 * From Fortran, bind(C) to the same names. */
#ifndef GRIDRT_MPICHX_H
#define GRIDRT_MPICHX_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef GRIDRT_MPICHX_DEFINED_HERE /* (the MPI layer, which defines them) */
#define GRIDRT_MPICHX_WEAK
#else
#define GRIDRT_MPICHX_WEAK __attribute__((weak))
#endif

enum { MPICHX_LEVEL_GRID = 0, MPICHX_LEVEL_SITE = 1, MPICHX_LEVEL_CLUSTER = 2, MPICHX_LEVEL_NODE = 3, MPICHX_LEVELS = 4 };

extern int MPICHX_TOPOLOGY_DEPTHS GRIDRT_MPICHX_WEAK;
extern int MPICHX_TOPOLOGY_COLORS GRIDRT_MPICHX_WEAK;
extern int GRIDRT_GROUP_COLORS GRIDRT_MPICHX_WEAK;
/* The name of the JobProfile group of color `color` (at most MPI_MAX_OBJECT_NAME bytes with its NUL). */
int GRIDRT_Group_name(int color, char *name, int *resultlen) GRIDRT_MPICHX_WEAK;

/* Whether the program runs under gridrun's MPI layer (else the attributes are not there). */
#define GRIDRT_HAS_TOPOLOGY (&MPICHX_TOPOLOGY_DEPTHS != 0 && MPICHX_TOPOLOGY_DEPTHS != MPI_KEYVAL_INVALID)

#ifdef __cplusplus
}
#endif

#endif
