/* libgridrt C API: the same runtime as gridrt.hpp for C (and Fortran via C interop).
 * Every function returns GRIDRT_SUCCESS (0) or an error code; gridrt_last_error() then holds
 * a message naming what failed. */
#ifndef GRIDRT_GRIDRT_H
#define GRIDRT_GRIDRT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GRIDRT_SUCCESS 0
#define GRIDRT_ERR_ARG 1   /* a bad argument: unknown group, color, rank or level */
#define GRIDRT_ERR_STATE 2 /* not initialised, or initialised twice */
#define GRIDRT_ERR_COMM 3  /* the relay or a peer is gone, or a message was truncated */
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
int gridrt_level_color(int level, int rank); /* -1 for a bad level or rank */
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
/* What this process has sent to other sites through the relays so far (gridrt::wan_traffic). */
int gridrt_wan_traffic(unsigned long long* messages, unsigned long long* bytes);

/* Grid communicators and their collectives (gridrt::Comm; docs/algorithms.md). A handle is
 * freed with gridrt_comm_free; gridrt_comm_split gives NULL for color MPI_UNDEFINED. Counts
 * are in elements of the datatype; MPI_IN_PLACE follows MPI's rules. `algo` is one of: */
#define GRIDRT_ALGO_DEFAULT 0 /* what GRIDRT_COLL says (auto when unset) */
#define GRIDRT_ALGO_AUTO 1
#define GRIDRT_ALGO_HIER 2 /* hierarchical: the WAN crossed once on every path */
#define GRIDRT_ALGO_FLAT 3 /* topology-unaware, the baseline */
typedef struct gridrt_comm_s* gridrt_comm;
int gridrt_comm_world(gridrt_comm* out);
int gridrt_comm_split(gridrt_comm comm, int color, int key, gridrt_comm* out);
int gridrt_comm_dup(gridrt_comm comm, gridrt_comm* out);
int gridrt_comm_free(gridrt_comm* comm);
int gridrt_comm_rank(gridrt_comm comm, int* rank);
int gridrt_comm_size(gridrt_comm comm, int* size);
int gridrt_comm_global_rank(gridrt_comm comm, int rank, int* global_rank);
int gridrt_comm_barrier(gridrt_comm comm, int algo);
int gridrt_bcast(void* buf, int count, MPI_Datatype type, int root, gridrt_comm comm, int algo);
int gridrt_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, gridrt_comm comm, int algo);
int gridrt_allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, gridrt_comm comm, int algo);
int gridrt_gather(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, int root, gridrt_comm comm, int algo);
int gridrt_gatherv(const void* sendbuf, int sendcount, void* recvbuf, const int* recvcounts, const int* displs, MPI_Datatype type, int root,
                   gridrt_comm comm, int algo);
int gridrt_scatter(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, int root, gridrt_comm comm, int algo);
int gridrt_scatterv(const void* sendbuf, const int* sendcounts, const int* displs, void* recvbuf, int recvcount, MPI_Datatype type,
                    int root, gridrt_comm comm, int algo);
int gridrt_allgather(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, gridrt_comm comm, int algo);
int gridrt_allgatherv(const void* sendbuf, int sendcount, void* recvbuf, const int* recvcounts, const int* displs, MPI_Datatype type,
                      gridrt_comm comm, int algo);
int gridrt_alltoall(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, gridrt_comm comm, int algo);
int gridrt_alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, void* recvbuf, const int* recvcounts,
                     const int* rdispls, MPI_Datatype type, gridrt_comm comm, int algo);
int gridrt_reduce_scatter_block(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, gridrt_comm comm, int algo);
int gridrt_reduce_scatter(const void* sendbuf, void* recvbuf, const int* counts, MPI_Datatype type, MPI_Op op, gridrt_comm comm, int algo);

/* The multi-level task queue (gridrt::TaskQueue, gridrt/queue.hpp; docs/queues.md).
 * gridrt_queue_create is collective over `comm`; options NULL takes the defaults (a boss
 * per cluster, everyone working). A task from gridrt_queue_next stays valid until it is
 * passed to gridrt_queue_done. */
#define GRIDRT_QUEUE_MAX_LEVELS 3
typedef struct {
  int num_levels;                      /* 0: one queue for the whole grid (classic) */
  int levels[GRIDRT_QUEUE_MAX_LEVELS]; /* GRIDRT_LEVEL_*, outermost first */
  int root;                            /* the super-master, a member of comm */
  int bosses_work, master_works;       /* non-zero: they run tasks too */
  int worker_window;                   /* 0: 2 under a boss, 1 in a single queue */
  int requeue_lost;                    /* non-zero: a lost cluster's tasks go to the others */
} gridrt_queue_options;
typedef struct {
  uint64_t id;
  const void* data;
  size_t bytes;
} gridrt_task;
typedef struct gridrt_queue_s* gridrt_queue;
typedef void (*gridrt_result_fn)(uint64_t id, const void* data, size_t bytes, void* arg);
void gridrt_queue_options_init(gridrt_queue_options* options); /* the defaults */
int gridrt_queue_create(gridrt_comm comm, const gridrt_queue_options* options, gridrt_queue* out);
int gridrt_queue_free(gridrt_queue* queue);
int gridrt_queue_is_master(gridrt_queue queue, int* is_master);
int gridrt_queue_on_result(gridrt_queue queue, gridrt_result_fn fn, void* arg);         /* at the super-master */
int gridrt_queue_put(gridrt_queue queue, const void* data, size_t bytes, uint64_t* id); /* id may be NULL */
/* *got is 1 with *task filled, or 0 once every task of the job is done. */
int gridrt_queue_next(gridrt_queue queue, gridrt_task* task, int* got);
int gridrt_queue_done(gridrt_queue queue, const gridrt_task* task, const void* result, size_t bytes);
int gridrt_queue_poll(gridrt_queue queue);

#ifdef __cplusplus
}
#endif
#endif
