/* Probe, then receive from any source: the receive must take the message the probe
 * returned, as in an MPI with one queue, while messages come from the prober's own cluster
 * and from others at once. Every other process sends a receiver many messages of varied
 * sizes and tags; the receiver probes from any source, allocates what the probe said, and
 * receives from any source (or with a matched probe every other time). Each message says
 * who sent it and its number: a receive that took another message than the probed one is
 * seen in its source, tag, size or contents, and every source's messages must come in the
 * order sent. Rounds: MPI_Probe, an MPI_Iprobe polling loop, probes mixed with matched
 * probes, on MPI_COMM_WORLD and on a duplicate with an error handler of its own (which
 * must never be called), with receivers in different clusters.
 *
 *   probe [MESSAGES]    each sender's messages per round (default 300)
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { kMaxInts = 48, kHeader = 3 };
enum Mode { kProbe, kIprobeLoop, kWithMatchedProbes, kModes };
static const char* mode_name[kModes] = {"MPI_Probe", "an MPI_Iprobe loop", "probes and matched probes"};

static int handler_calls;
static void count_errors(MPI_Comm* comm, int* code, ...) {
  (void)comm;
  (void)code;
  ++handler_calls;
}

/* The i-th message of `sender`: its size in ints, its tag, its contents. */
static int size_of(int sender, int i) { return kHeader + (sender * 7 + i * 13) % (kMaxInts - kHeader + 1); }
static int tag_of(int i) { return i % 3; }

static void send_all(MPI_Comm comm, int me, int receiver, int messages) {
  int buf[kMaxInts];
  for (int i = 0; i < messages; ++i) {
    const int n = size_of(me, i);
    buf[0] = me;
    buf[1] = i;
    for (int k = 2; k < n; ++k) buf[k] = me * 100000 + i + k;
    CHECK(MPI_Send(buf, n, MPI_INT, receiver, tag_of(i), comm) == MPI_SUCCESS, "send %d", i);
  }
}

/* Receives (size - 1) * messages messages as `mode` says; returns how many differed from
 * what the probe before them returned. */
static int receive_all(MPI_Comm comm, int size, int messages, enum Mode mode) {
  int* next = calloc((size_t)size, sizeof(int)); /* each source's next message number */
  int wrong = 0, out_of_order = 0, bad_contents = 0;
  for (int k = 0; k < (size - 1) * messages; ++k) {
    MPI_Status probed, got;
    MPI_Message message = MPI_MESSAGE_NULL;
    const int matched = mode == kWithMatchedProbes && k % 2 == 1;
    if (matched) {
      CHECK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &message, &probed) == MPI_SUCCESS, "MPI_Mprobe");
    } else if (mode == kIprobeLoop) {
      int flag = 0;
      while (!flag) CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &probed) == MPI_SUCCESS, "MPI_Iprobe");
    } else {
      CHECK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &probed) == MPI_SUCCESS, "MPI_Probe");
    }
    int count = -1;
    MPI_Get_count(&probed, MPI_INT, &count);
    int* buf = malloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
    const int rc =
        matched ? MPI_Mrecv(buf, count, MPI_INT, &message, &got) : MPI_Recv(buf, count, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &got);
    int got_count = -1;
    MPI_Get_count(&got, MPI_INT, &got_count);
    if (rc != MPI_SUCCESS || got.MPI_SOURCE != probed.MPI_SOURCE || got.MPI_TAG != probed.MPI_TAG || got_count != count) {
      if (++wrong <= 3)
        fprintf(stderr, "rank %d: probed %d ints from %d (tag %d), received %d from %d (tag %d), rc %d\n", check_rank, count,
                probed.MPI_SOURCE, probed.MPI_TAG, got_count, got.MPI_SOURCE, got.MPI_TAG, rc);
      free(buf);
      continue;
    }
    const int src = got.MPI_SOURCE, i = buf[0] == src ? buf[1] : -1;
    if (i != next[src]) ++out_of_order;
    next[src] = i + 1;
    if (i < 0 || count != size_of(src, i) || got.MPI_TAG != tag_of(i)) ++bad_contents;
    for (int x = 2; x < count && i >= 0; ++x)
      if (buf[x] != src * 100000 + i + x) {
        ++bad_contents;
        break;
      }
    free(buf);
  }
  CHECK(out_of_order == 0, "%d messages came out of their source's order", out_of_order);
  CHECK(bad_contents == 0, "%d messages had other sizes, tags or contents than sent", bad_contents);
  free(next);
  return wrong;
}

static void rounds(MPI_Comm comm, const char* name, int rank, int size, int messages) {
  const int receivers[2] = {0, size - 1}; /* in different clusters on every grid of the tests */
  for (int m = 0; m < kModes; ++m)
    for (int r = 0; r < 2; ++r) {
      const int receiver = receivers[r];
      if (rank == receiver) {
        const int wrong = receive_all(comm, size, messages, (enum Mode)m);
        CHECK(wrong == 0, "%s, %s, receiver %d: %d of %d receives took another message than the probe returned", name, mode_name[m],
              receiver, wrong, (size - 1) * messages);
      } else {
        send_all(comm, rank, receiver, messages);
      }
      MPI_Barrier(comm);
    }
}

int main(int argc, char** argv) {
  int rank, size;
  if (!start(&argc, &argv, "probe", 2, &rank, &size)) return 2;
  const int messages = argc > 1 ? atoi(argv[1]) : 300;
  rounds(MPI_COMM_WORLD, "MPI_COMM_WORLD", rank, size, messages);

  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Errhandler counting;
  MPI_Comm_create_errhandler(count_errors, &counting);
  MPI_Comm_set_errhandler(dup, counting);
  rounds(dup, "a duplicate with its own error handler", rank, size, messages);
  CHECK(handler_calls == 0, "the duplicate's error handler was called %d times", handler_calls);
  MPI_Errhandler_free(&counting);
  MPI_Comm_free(&dup);

  int flag = 1;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
  CHECK(!flag, "nothing left to probe");
  return finish("probe");
}
