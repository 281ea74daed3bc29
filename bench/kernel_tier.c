/* The measurements of the kernel tier (bench/kernel_tier.py; docs/benchmarks.md, "Contention and
 * escalations on real TCP"). Plain MPI C, one process per emulated node, run by mpiexec
 * across network namespaces: every message crosses MPICH's TCP path, a rate-limited NIC and a
 * switch port with a short queue, where TCP can lose packets and wait for its timers.
 *
 *   kernel_tier pingpong --sizes S,S,...             ranks 0 and 1
 *   kernel_tier gather   --counts N,N,... --sizes S,S,... [--pieces K] [--paced 1]
 *   kernel_tier alltoall --counts N,N,... --sizes S,S,...
 *   common: [--reps R] (default 20) [--warmup W] (default 2)
 *
 * pingpong: per size, R round trips of S bytes each way and R eager sends of S bytes, each
 *   timed alone: {"op":"pingpong","m":S,"rtt_us":[...],"send_us":[...]} (send_us: how long
 *   a send took to complete at the sender, its overhead o_s(S) while the message is eager).
 * gather: the many-to-one operation of the many-to-one model, as a flat tree: ranks 1..N-1
 *   of the first N each send S bytes to rank 0, which receives them all (the time is the
 *   root's, from a common start). With --pieces K > 1 the same S bytes go as K gathers in
 *   sequence of about S/K bytes each, the split gather; --paced 1: a sender sends a piece
 *   only when the root says it has posted its receives for it. One line per repetition:
 *   {"op":"gather","n":N,"m":S,"pieces":K,"paced":0|1,"us":T}.
 * alltoall: MPI_Alltoall of the first N ranks, S bytes per pair; the time is the slowest
 *   member's. {"op":"alltoall","n":N,"m":S,"us":T}.
 *
 * Every wait is a loop of MPI_Test and a 20 us sleep, not MPICH's busy poll: more processes
 * than cores must not measure the scheduler. Ranks outside the N being measured wait in a
 * barrier meanwhile. Rank 0 prints. */
#include "common/program_help.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: kernel_tier pingpong|gather|alltoall [--counts N,...] [--sizes S,...] [--pieces K]\n"
    "                   [--paced 1] [--reps R] [--warmup W]\n"
    "Measures point-to-point, many-to-one and all-to-all over MPICH's TCP path, one process\n"
    "per node (bench/kernel_tier.py runs it across network namespaces). Prints JSON lines.\n";

static void nap(void) {
  const struct timespec ts = {0, 20000};
  nanosleep(&ts, NULL);
}

static void wait_all(int n, MPI_Request* reqs) {
  MPI_Status statuses[128]; /* n <= 128 (two per sender at most); not MPI_STATUSES_IGNORE, which gcc 12 warns of */
  int done = 0;
  for (;;) {
    MPI_Testall(n, reqs, &done, statuses);
    if (done) return;
    nap();
  }
}

static void barrier(MPI_Comm comm) {
  MPI_Request r;
  MPI_Ibarrier(comm, &r);
  wait_all(1, &r);
}

/* A common start: rank 0 names an instant 3 ms ahead and every member sleeps until then, so
 * that a time measured by one member counts from the start of all. The kernel tier's
 * namespaces share one machine's clock, so the instants agree. */
static double common_start(MPI_Comm comm) {
  double t = MPI_Wtime() + 0.003;
  MPI_Request r;
  MPI_Ibcast(&t, 1, MPI_DOUBLE, 0, comm, &r);
  wait_all(1, &r);
  while (MPI_Wtime() < t) nap();
  return t;
}

static int parse_list(const char* text, long* out, int max) {
  int n = 0;
  for (const char* p = text; *p && n < max;) {
    char* end;
    out[n++] = strtol(p, &end, 10);
    if (end == p) {
      fprintf(stderr, "kernel_tier: not a number list: %s\n", text);
      exit(2);
    }
    p = *end == ',' ? end + 1 : end;
  }
  return n;
}

static void print_series(const char* name, const double* v, int n) {
  printf("\"%s\":[", name);
  for (int i = 0; i < n; ++i) printf("%s%.1f", i ? "," : "", v[i]);
  printf("]");
}

static void pingpong(const long* sizes, int nsizes, int reps, int warmup, int rank, char* buf) {
  double* rtt = calloc((size_t)reps, sizeof(double));
  double* send = calloc((size_t)reps, sizeof(double));
  for (int s = 0; s < nsizes; ++s) {
    const int m = (int)sizes[s];
    for (int i = -warmup; i < reps; ++i) {
      barrier(MPI_COMM_WORLD);
      MPI_Request r;
      const double t0 = MPI_Wtime();
      if (rank == 0) {
        MPI_Isend(buf, m, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &r);
        wait_all(1, &r);
        MPI_Irecv(buf, m, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &r);
        wait_all(1, &r);
        if (i >= 0) rtt[i] = (MPI_Wtime() - t0) * 1e6;
      } else if (rank == 1) {
        MPI_Irecv(buf, m, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r);
        wait_all(1, &r);
        MPI_Isend(buf, m, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r);
        wait_all(1, &r);
      }
    }
    for (int i = -warmup; i < reps; ++i) {  // the sender's overhead: a send alone, until complete
      barrier(MPI_COMM_WORLD);
      if (rank == 0) {
        MPI_Request r;
        const double t0 = MPI_Wtime();
        MPI_Isend(buf, m, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &r);
        wait_all(1, &r);
        if (i >= 0) send[i] = (MPI_Wtime() - t0) * 1e6;
      } else if (rank == 1) {
        MPI_Request r;
        MPI_Irecv(buf, m, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r);
        wait_all(1, &r);
      }
    }
    if (rank == 0) {
      printf("{\"op\":\"pingpong\",\"m\":%d,", m);
      print_series("rtt_us", rtt, reps);
      printf(",");
      print_series("send_us", send, reps);
      printf("}\n");
      fflush(stdout);
    }
  }
  free(rtt);
  free(send);
}

/* One many-to-one operation of `m` bytes per sender, as `pieces` gathers in sequence; the
 * root's time in us (others return 0). Paced: a sender sends a piece only when the root,
 * its receives for that piece posted, says so (an empty message), so that no more than one
 * piece per sender is ever in flight towards the root. */
static double gather_once(MPI_Comm comm, int n, int m, int pieces, int paced, char* buf) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  MPI_Request* reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)n);
  const double t0 = common_start(comm);
  for (int p = 0, done = 0; p < pieces; ++p) {
    const int piece = m / pieces + (p < m % pieces);
    if (rank == 0) {
      for (int src = 1; src < n; ++src)
        MPI_Irecv(buf + (size_t)src * (size_t)m + (size_t)done, piece, MPI_BYTE, src, p, comm, &reqs[src - 1]);
      int posted = n - 1;
      if (paced)
        for (int src = 1; src < n; ++src) MPI_Isend(NULL, 0, MPI_BYTE, src, pieces + p, comm, &reqs[posted++]);
      wait_all(posted, reqs);
    } else {
      if (paced) {
        MPI_Irecv(NULL, 0, MPI_BYTE, 0, pieces + p, comm, &reqs[0]);
        wait_all(1, reqs);
      }
      MPI_Isend(buf + done, piece, MPI_BYTE, 0, p, comm, &reqs[0]);
      wait_all(1, reqs);
    }
    done += piece;
  }
  const double us = (MPI_Wtime() - t0) * 1e6;
  free(reqs);
  return rank == 0 ? us : 0;
}

static double alltoall_once(MPI_Comm comm, int n, int m, char* buf) {
  MPI_Request r;
  const double t0 = common_start(comm);
  MPI_Ialltoall(buf, m, MPI_BYTE, buf + (size_t)n * (size_t)m, m, MPI_BYTE, comm, &r);
  wait_all(1, &r);
  double us = (MPI_Wtime() - t0) * 1e6, slowest = 0;
  MPI_Ireduce(&us, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, comm, &r);
  wait_all(1, &r);
  return slowest;
}

int main(int argc, char** argv) {
  gridrt_help_if_asked(argc, argv, usage);
  prctl(PR_SET_TIMERSLACK, 1000UL); /* the 20 us naps are to be 20 us, not 70 */
  if (argc < 2) {
    fputs(usage, stderr);
    return 2;
  }
  const char* op = argv[1];
  long counts[64] = {2}, sizes[64] = {0};
  int ncounts = 1, nsizes = 1, reps = 20, warmup = 2, pieces = 1, paced = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--counts") == 0) ncounts = parse_list(argv[i + 1], counts, 64);
    else if (strcmp(argv[i], "--sizes") == 0) nsizes = parse_list(argv[i + 1], sizes, 64);
    else if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--warmup") == 0) warmup = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--pieces") == 0) pieces = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--paced") == 0) paced = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "kernel_tier: unknown option %s\n%s", argv[i], usage);
      return 2;
    }
  }
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long largest = 1, most = 2;
  for (int i = 0; i < nsizes; ++i) largest = sizes[i] > largest ? sizes[i] : largest;
  for (int i = 0; i < ncounts; ++i) most = counts[i] > most ? counts[i] : most;
  if (most > size || most > 64 || reps < 1 || pieces < 1) {
    if (rank == 0)
      fprintf(stderr, "kernel_tier: counts up to %ld need as many processes (have %d; at most 64); reps, pieces >= 1\n", most, size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char* buf = calloc((size_t)largest * (size_t)most * 2, 1);
  if (strcmp(op, "pingpong") == 0) {
    pingpong(sizes, nsizes, reps, warmup, rank, buf);
  } else if (strcmp(op, "gather") == 0 || strcmp(op, "alltoall") == 0) {
    const int gather = op[0] == 'g';
    for (int c = 0; c < ncounts; ++c) {
      const int n = (int)counts[c];
      MPI_Comm comm;
      MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &comm);
      for (int s = 0; s < nsizes; ++s) {
        const int m = (int)sizes[s];
        for (int i = -warmup; i < reps; ++i) {
          double us = 0;
          if (comm != MPI_COMM_NULL) us = gather ? gather_once(comm, n, m, pieces, paced, buf) : alltoall_once(comm, n, m, buf);
          barrier(MPI_COMM_WORLD);
          if (rank == 0 && i >= 0) {
            if (gather) printf("{\"op\":\"gather\",\"n\":%d,\"m\":%d,\"pieces\":%d,\"paced\":%d,\"us\":%.1f}\n", n, m, pieces, paced, us);
            else printf("{\"op\":\"alltoall\",\"n\":%d,\"m\":%d,\"us\":%.1f}\n", n, m, us);
            fflush(stdout);
          }
        }
      }
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
  } else {
    if (rank == 0) fprintf(stderr, "kernel_tier: unknown operation %s\n%s", op, usage);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  free(buf);
  /* Every figure is printed; the processes leave together without MPI_Finalize. MPICH 4.0's
   * UCX tcp transport hung in MPI_Finalize here in most runs that moved large messages
   * through the rate-limited ports (two processes spinning in UCX's endpoint flush, a known
   * UCX defect: its TCP transport stops progressing endpoints too early at clean-up);
   * mpiexec takes a zero exit status without it. */
  barrier(MPI_COMM_WORLD);
  fflush(stdout);
  _exit(0);
}
