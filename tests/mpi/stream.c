/* A job that keeps every pair of processes streaming checksummed messages both ways and
 * runs collectives between them, for a link that breaks underneath to be seen through:
 * each round, every rank sends every other rank one message whose every byte is a function
 * of (round, source, destination, position) and receives theirs, checks each byte and the
 * round it carries (a lost, duplicated or reordered message shows), then an all-reduce of
 * the round's checksums and a broadcast from a rotating root, both checked.
 *
 *   stream ROUNDS BYTES ROUND_MS   (rank 0 says "round N" every 10 rounds, to follow it)
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "check.h"

static unsigned char expected(int round, int src, int dst, size_t i) { return (unsigned char)(round * 131 + src * 31 + dst * 7 + i); }

int main(int argc, char** argv) {
  int rank, size;
  if (!start(&argc, &argv, "stream", 2, &rank, &size)) return 2;
  const int rounds = argc > 1 ? atoi(argv[1]) : 50;
  const size_t bytes = argc > 2 ? (size_t)atol(argv[2]) : 65536;
  const int round_ms = argc > 3 ? atoi(argv[3]) : 100;
  if (bytes < sizeof(int)) {
    if (rank == 0) fprintf(stderr, "stream: BYTES must be at least %zu\n", sizeof(int));
    MPI_Finalize();
    return 2;
  }
  unsigned char* out = malloc(bytes * size);
  unsigned char* in = malloc(bytes * size);
  MPI_Request* reqs = malloc(sizeof(MPI_Request) * 2 * size);
  long messages = 0;
  for (int round = 0; round < rounds; ++round) {
    int n = 0;
    for (int p = 0; p < size; ++p) {
      if (p == rank) continue;
      unsigned char* o = out + bytes * p;
      for (size_t i = 0; i < bytes; ++i) o[i] = expected(round, rank, p, i);
      memcpy(o, &round, sizeof round);
      MPI_Irecv(in + bytes * p, (int)bytes, MPI_BYTE, p, 7, MPI_COMM_WORLD, &reqs[n++]);
      MPI_Isend(o, (int)bytes, MPI_BYTE, p, 7, MPI_COMM_WORLD, &reqs[n++]);
    }
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    long sum = 0;
    for (int p = 0; p < size; ++p) {
      if (p == rank) continue;
      const unsigned char* m = in + bytes * p;
      int carried;
      memcpy(&carried, m, sizeof carried);
      CHECK(carried == round, "the message from rank %d in round %d carries round %d", p, round, carried);
      size_t wrong = 0;
      for (size_t i = sizeof(int); i < bytes; ++i) wrong += m[i] != expected(round, p, rank, i);
      CHECK(wrong == 0, "%zu of %zu bytes from rank %d in round %d are wrong", wrong, bytes, p, round);
      for (size_t i = 0; i < bytes; ++i) sum += m[i];
      ++messages;
    }
    long total = 0, want = 0;
    MPI_Allreduce(&sum, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int s = 0; s < size; ++s)
      for (int d = 0; d < size; ++d) {
        if (s == d) continue;
        for (size_t i = sizeof(int); i < bytes; ++i) want += expected(round, s, d, i);
        for (size_t i = 0; i < sizeof(int); ++i) want += ((const unsigned char*)&round)[i];
      }
    CHECK(total == want, "round %d: the all-reduce of checksums gives %ld, not %ld", round, total, want);
    int token = rank == round % size ? round * 1000 + 17 : -1;
    MPI_Bcast(&token, 1, MPI_INT, round % size, MPI_COMM_WORLD);
    CHECK(token == round * 1000 + 17, "round %d: the broadcast from rank %d gives %d", round, round % size, token);
    if (rank == 0 && round % 10 == 0) {
      printf("round %d\n", round);
      fflush(stdout);
    }
    if (round_ms > 0) {
      const struct timespec pause = {round_ms / 1000, (long)(round_ms % 1000) * 1000000L};
      nanosleep(&pause, NULL);
    }
  }
  if (rank == 0) printf("stream: %d rounds, %ld messages of %zu bytes received here\n", rounds, messages, bytes);
  free(out);
  free(in);
  free(reqs);
  return finish("stream");
}
