/* coll_c: the C API of grid communicators and collectives, checked against references this
 * program computes itself (run as a job by tests/test_end_to_end.cpp). Exit 0 with
 * "coll_c: N checks passed" from rank 0; 1 naming the first failed check otherwise. */
#include "common/program_help.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridrt/gridrt.h"

static int checks = 0;

static void expect(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "coll_c: rank %d: FAILED: %s (%s)\n", gridrt_rank(), what, gridrt_last_error());
    exit(1);
  }
  ++checks;
}

static const char kUsage[] =
    "usage: coll_c\n"
    "A test program run as a job by tests/test_end_to_end.cpp: the C API of grid communicators\n"
    "and collectives against references it computes itself.\n";

int main(int argc, char** argv) {
  gridrt_help_if_asked(argc, argv, kUsage);
  if (gridrt_init(&argc, &argv) != GRIDRT_SUCCESS) {
    fprintf(stderr, "coll_c: %s\n", gridrt_last_error());
    return 1;
  }
  gridrt_comm world = NULL, odd_first = NULL, none = NULL;
  expect(gridrt_comm_world(&world) == GRIDRT_SUCCESS, "comm_world");
  int n = 0, me = 0;
  expect(gridrt_comm_size(world, &n) == GRIDRT_SUCCESS && n == gridrt_size(), "comm_size");
  expect(gridrt_comm_rank(world, &me) == GRIDRT_SUCCESS && me == gridrt_rank(), "comm_rank");
  expect(gridrt_comm_split(world, 0, me % 2 ? me : n + me, &odd_first) == GRIDRT_SUCCESS, "comm_split");
  expect(gridrt_comm_split(world, MPI_UNDEFINED, 0, &none) == GRIDRT_SUCCESS && none == NULL, "split with MPI_UNDEFINED gives NULL");

  const int algos[] = {GRIDRT_ALGO_HIER, GRIDRT_ALGO_FLAT, GRIDRT_ALGO_DEFAULT};
  gridrt_comm comms[] = {world, odd_first};
  for (int k = 0; k < 2; ++k)
    for (int a = 0; a < 3; ++a) {
      gridrt_comm c = comms[k];
      const int algo = algos[a];
      int cn = 0, cr = 0;
      gridrt_comm_size(c, &cn);
      gridrt_comm_rank(c, &cr);
      int g = 0;
      gridrt_comm_global_rank(c, cr, &g);
      expect(g == me, "global rank of self");

      long sum = 0, want = 0;
      long mine = 1000 + g;
      for (int r = 0; r < cn; ++r) want += 1000 + r; /* every global rank is a member */
      expect(gridrt_allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, c, algo) == GRIDRT_SUCCESS && sum == want, "allreduce sum");

      int value = cr == cn - 1 ? 4242 : -1;
      expect(gridrt_bcast(&value, 1, MPI_INT, cn - 1, c, algo) == GRIDRT_SUCCESS && value == 4242, "bcast from the last rank");

      int* all = malloc(sizeof(int) * (size_t)cn);
      int* back = malloc(sizeof(int) * (size_t)cn);
      expect(gridrt_allgather(&g, all, 1, MPI_INT, c, algo) == GRIDRT_SUCCESS, "allgather");
      for (int r = 0; r < cn; ++r) {
        int gr = 0;
        gridrt_comm_global_rank(c, r, &gr);
        expect(all[r] == gr, "allgather: every member's global rank in its place");
        all[r] = g * 100 + gr; /* to member r: from me */
      }
      expect(gridrt_alltoall(all, back, 1, MPI_INT, c, algo) == GRIDRT_SUCCESS, "alltoall");
      for (int r = 0; r < cn; ++r) {
        int gr = 0;
        gridrt_comm_global_rank(c, r, &gr);
        expect(back[r] == gr * 100 + g, "alltoall: each block from its sender");
      }
      int got = -1;
      expect(gridrt_scatter(all, &got, 1, MPI_INT, 0, c, algo) == GRIDRT_SUCCESS, "scatter");
      int root_g = 0;
      gridrt_comm_global_rank(c, 0, &root_g);
      expect(got == root_g * 100 + g, "scatter: the root's block for me");
      expect(gridrt_gather(&got, back, 1, MPI_INT, 0, c, algo) == GRIDRT_SUCCESS, "gather");
      if (cr == 0)
        for (int r = 0; r < cn; ++r) expect(back[r] == all[r], "gather: the scattered blocks back at the root");
      /* reduce_scatter_block: block r of every member's vector is r + its global rank; member
         r gets the sum, and the v form with one int each the same. */
      for (int r = 0; r < cn; ++r) all[r] = r + g;
      int block = -1;
      const long everyone = want - 1000L * cn; /* the sum of the global ranks */
      expect(gridrt_reduce_scatter_block(all, &block, 1, MPI_INT, MPI_SUM, c, algo) == GRIDRT_SUCCESS && block == cn * cr + everyone,
             "reduce_scatter_block sum");
      int* ones = malloc(sizeof(int) * (size_t)cn);
      for (int r = 0; r < cn; ++r) ones[r] = 1;
      block = -1;
      expect(gridrt_reduce_scatter(all, &block, ones, MPI_INT, MPI_SUM, c, algo) == GRIDRT_SUCCESS && block == cn * cr + everyone,
             "reduce_scatter sum");
      free(ones);
      expect(gridrt_comm_barrier(c, algo) == GRIDRT_SUCCESS, "barrier");
      free(all);
      free(back);
    }
  /* Bad arguments are refused as such, and nothing is lost. */
  int x = 0;
  expect(gridrt_bcast(&x, 1, MPI_INT, n, world, GRIDRT_ALGO_HIER) == GRIDRT_ERR_ARG, "a root out of range is GRIDRT_ERR_ARG");
  expect(strstr(gridrt_last_error(), "root") != NULL, "the message names the root");
  expect(gridrt_bcast(&x, 1, MPI_INT, 0, world, 99) == GRIDRT_ERR_ARG, "an unknown algorithm is GRIDRT_ERR_ARG");
  expect(gridrt_bcast(&x, 1, MPI_INT, 0, NULL, GRIDRT_ALGO_HIER) == GRIDRT_ERR_ARG, "a NULL communicator is GRIDRT_ERR_ARG");
  expect(gridrt_bcast(&x, -1, MPI_INT, 0, world, GRIDRT_ALGO_HIER) == GRIDRT_ERR_ARG, "a negative count is GRIDRT_ERR_ARG");
  expect(gridrt_comm_dup(world, NULL) == GRIDRT_ERR_ARG && strstr(gridrt_last_error(), "gridrt_comm_dup: out is NULL") != NULL,
         "a NULL out is GRIDRT_ERR_ARG, named");
  expect(gridrt_comm_split(world, -5, 0, &none) == GRIDRT_ERR_ARG, "a negative color is GRIDRT_ERR_ARG");

  int total = 0;
  gridrt_allreduce(&checks, &total, 1, MPI_INT, MPI_SUM, world, GRIDRT_ALGO_DEFAULT);
  if (me == 0) printf("coll_c: %d checks passed on %d processes\n", total, n);
  gridrt_comm_free(&odd_first);
  gridrt_comm_free(&world);
  expect(world == NULL, "comm_free clears the handle");
  gridrt_finalize();
  return 0;
}
