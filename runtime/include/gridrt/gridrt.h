/* libgridrt C API: the same runtime as gridrt.hpp for C (and Fortran via C interop).
 * Every function returns GRIDRT_SUCCESS (0) or an error code; gridrt_last_error() then holds
 * a message naming what failed. */
#ifndef GRIDRT_GRIDRT_H
#define GRIDRT_GRIDRT_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GRIDRT_SUCCESS 0
#define GRIDRT_ERR_ARG 1     /* a bad argument: unknown group, color, rank or level */
#define GRIDRT_ERR_STATE 2   /* not initialised, or initialised twice */
#define GRIDRT_ERR_COMM 3    /* the relay or a peer is gone, or a message was truncated */
#define GRIDRT_ANY_TAG (-1)

#define GRIDRT_LEVEL_SITE 0
#define GRIDRT_LEVEL_CLUSTER 1
#define GRIDRT_LEVEL_NODE 2

typedef struct {
  int source;
  int tag;
  size_t bytes;
} gridrt_status;

typedef struct gridrt_request_s* gridrt_request;

int gridrt_init(int* argc, char*** argv);
int gridrt_finalize(void);
const char* gridrt_last_error(void);

int gridrt_rank(void);
int gridrt_size(void);
const char* gridrt_group_name(void);
int gridrt_group_color(const char* name);       /* -1 for an unknown group */
const char* gridrt_color_group_name(int color); /* NULL for an unknown color */
int gridrt_group_of(int rank);
int gridrt_level_color(int level, int rank);    /* -1 for a bad level or rank */
const char* gridrt_level_name(int level, int rank);
int gridrt_depth(int rank);
int gridrt_colors(int rank, int* colors, int capacity); /* fills depth colors */

int gridrt_send(const void* buf, size_t bytes, int dst, int tag);
int gridrt_recv(void* buf, size_t capacity, int src, int tag, gridrt_status* status);
int gridrt_isend(const void* buf, size_t bytes, int dst, int tag, gridrt_request* req);
int gridrt_irecv(void* buf, size_t capacity, int src, int tag, gridrt_request* req);
int gridrt_wait(gridrt_request* req, gridrt_status* status);
int gridrt_test(gridrt_request* req, int* done, gridrt_status* status);
int gridrt_barrier(void);

#ifdef __cplusplus
}
#endif
#endif
