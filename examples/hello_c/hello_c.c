/* hello_c: the hello example through the C API, with non-blocking point-to-point.
 * Prints  rank=R size=N group=G color=C cluster=K colors=a,b,c,d  for every process, then
 * every rank sends its rank to rank 0 with gridrt_isend; rank 0 receives them all with
 * gridrt_irecv and checks the sum; then a grid barrier. */
#include <gridrt/gridrt.h>
#include <stdio.h>
#include <stdlib.h>

static void check(int rc, const char* what) {
  if (rc != GRIDRT_SUCCESS) {
    fprintf(stderr, "hello_c: %s: %s\n", what, gridrt_last_error());
    exit(1);
  }
}

int main(int argc, char** argv) {
  check(gridrt_init(&argc, &argv), "init");
  const int me = gridrt_rank(), n = gridrt_size();
  int colors[8];
  check(gridrt_colors(me, colors, 8), "colors");
  const char* group = gridrt_group_name();
  printf("rank=%d size=%d group=%s color=%d cluster=%s depth=%d colors=%d,%d,%d,%d name_of_color=%s\n", me, n, group,
         gridrt_group_color(group), gridrt_level_name(GRIDRT_LEVEL_CLUSTER, me), gridrt_depth(me), colors[0], colors[1], colors[2],
         colors[3], gridrt_color_group_name(gridrt_group_color(group)));
  fflush(stdout);

  gridrt_request send_req;
  check(gridrt_isend(&me, sizeof me, 0, 5, &send_req), "isend");
  if (me == 0) {
    int* got = calloc((size_t)n, sizeof(int));
    gridrt_request* reqs = calloc((size_t)n, sizeof(gridrt_request));
    for (int r = 0; r < n; ++r) check(gridrt_irecv(&got[r], sizeof(int), r, GRIDRT_ANY_TAG, &reqs[r]), "irecv");
    long sum = 0;
    for (int r = 0; r < n; ++r) {
      gridrt_status st;
      check(gridrt_wait(&reqs[r], &st), "wait");
      if (st.source != r || st.tag != 5 || st.bytes != sizeof(int) || got[r] != r) {
        fprintf(stderr, "hello_c: bad message from rank %d\n", r);
        return 1;
      }
      sum += got[r];
    }
    printf("gathered ranks by isend/irecv: sum=%ld expected=%ld\n", sum, (long)n * (n - 1) / 2);
    free(got);
    free(reqs);
  }
  check(gridrt_wait(&send_req, NULL), "wait send");
  check(gridrt_barrier(), "barrier");
  check(gridrt_finalize(), "finalize");
  return 0;
}
