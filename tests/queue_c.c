/* queue_c: the task queue through the C API (run as a job by tests/test_end_to_end.cpp):
 * the super-master puts N tasks (an integer each), everyone squares them, the results'
 * sum is checked at the super-master; with a boss per cluster, then one queue for the
 * grid; a done() for the wrong task is refused. Exit 0 with "queue_c: checks passed". */
#include "common/program_help.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gridrt/gridrt.h"

struct tally {
  long long sum;
  int results;
};

static void on_result(uint64_t id, const void* data, size_t bytes, void* arg) {
  struct tally* t = (struct tally*)arg;
  long long v = 0;
  (void)id;
  if (bytes == sizeof v) memcpy(&v, data, sizeof v);
  t->sum += v;
  ++t->results;
}

static int fail(const char* what) {
  fprintf(stderr, "queue_c: rank %d: FAILED: %s (%s)\n", gridrt_rank(), what, gridrt_last_error());
  return 1;
}

static int run(gridrt_comm world, int num_levels, int n) {
  gridrt_queue_options o;
  gridrt_queue_options_init(&o);
  o.num_levels = num_levels;
  gridrt_queue q = NULL;
  if (gridrt_queue_create(world, &o, &q) != GRIDRT_SUCCESS) return fail("queue_create");
  int master = 0;
  gridrt_queue_is_master(q, &master);
  struct tally t = {0, 0};
  if (master) {
    gridrt_queue_on_result(q, on_result, &t);
    for (long long i = 1; i <= n; ++i)
      if (gridrt_queue_put(q, &i, sizeof i, NULL) != GRIDRT_SUCCESS) return fail("queue_put");
  }
  gridrt_task task;
  int got = 0;
  while (gridrt_queue_next(q, &task, &got) == GRIDRT_SUCCESS && got) {
    long long v = 0;
    memcpy(&v, task.data, sizeof v);
    v *= v;
    gridrt_task wrong = task;
    ++wrong.id;
    if (gridrt_queue_done(q, &wrong, &v, sizeof v) != GRIDRT_ERR_ARG) return fail("done for the wrong task is refused");
    if (gridrt_queue_done(q, &task, &v, sizeof v) != GRIDRT_SUCCESS) return fail("queue_done");
  }
  if (got) return fail("queue_next");
  const long long expected = (long long)n * (n + 1) * (2 * n + 1) / 6;
  if (master && (t.results != n || t.sum != expected)) return fail("the sum of the squares at the super-master");
  gridrt_queue_free(&q);
  return 0;
}

static const char kUsage[] =
    "usage: queue_c\n"
    "A test program run as a job by tests/test_end_to_end.cpp: the task queue through the C API.\n";

int main(int argc, char** argv) {
  gridrt_help_if_asked(argc, argv, kUsage);
  if (gridrt_init(&argc, &argv) != GRIDRT_SUCCESS) return fail("init");
  gridrt_comm world = NULL;
  gridrt_comm_world(&world);
  if (run(world, 1, 500) || run(world, 0, 200)) return 1;
  if (gridrt_rank() == 0) printf("queue_c: checks passed\n");
  gridrt_comm_free(&world);
  gridrt_finalize();
  return 0;
}
