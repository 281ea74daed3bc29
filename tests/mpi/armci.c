/* A program of the Global Arrays family, written to ARMCI and linked with Debian's ARMCI-MPI
 * for MPICH (libarmci-mpich.a), which builds it on MPI's one-sided communication: memory
 * allocated across all processes, contiguous and strided puts and gets, accumulates with a
 * scale, a shared counter of read-modify-write, and ARMCI's mutexes guarding a
 * read-modify-write at one process. Each check that fails says so; rank 0 says how many
 * passed.
 *   armci [ROUNDS] */
#include <armci.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed, done, rank;
#define CHECK(cond, ...)                                     \
  do {                                                       \
    ++done;                                                  \
    if (!(cond)) {                                           \
      ++failed;                                              \
      fprintf(stderr, "rank %d: line %d: ", rank, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                          \
      fputc('\n', stderr);                                   \
    }                                                        \
  } while (0)

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ARMCI_Init();
  int size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rounds = argc > 1 ? atoi(argv[1]) : 20;
  enum { N = 64 };
  void** base = malloc(sizeof(void*) * (size_t)size);
  ARMCI_Malloc(base, N * sizeof(double));
  double* mine = base[rank];
  for (int i = 0; i < N; ++i) mine[i] = -1;
  ARMCI_Barrier();

  /* Contiguous put to the right neighbour, get back. */
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  double src[N], back[N];
  for (int i = 0; i < N; ++i) src[i] = rank * 100 + i;
  ARMCI_Put(src, base[right], 16 * sizeof(double), right);
  ARMCI_Fence(right);
  ARMCI_Barrier();
  for (int i = 0; i < 16; ++i) CHECK(mine[i] == left * 100 + i, "put: element %d is %g", i, mine[i]);
  ARMCI_Get(base[right], back, 16 * sizeof(double), right);
  for (int i = 0; i < 16; ++i) CHECK(back[i] == rank * 100 + i, "get: element %d is %g", i, back[i]);
  ARMCI_Barrier();

  /* Strided: a 4 x 4 block (rows 8 apart at the target, 4 apart at the source). */
  int src_stride[1] = {4 * sizeof(double)}, dst_stride[1] = {8 * sizeof(double)}, count[2] = {4 * sizeof(double), 4};
  ARMCI_PutS(src, src_stride, (double*)base[right] + 16, dst_stride, count, 1, right);
  ARMCI_Fence(right);
  ARMCI_Barrier();
  int ok = 1;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) ok &= mine[16 + r * 8 + c] == left * 100 + r * 4 + c;
  CHECK(ok, "strided put: the block is not as put");
  ARMCI_Barrier();

  /* Accumulate with a scale: everyone adds 2 * (rank + 1) into element 0 of rank 0. */
  double scale = 2.0;
  if (rank == 0) mine[63] = 0;
  ARMCI_Barrier();
  double contribution = rank + 1;
  ARMCI_Acc(ARMCI_ACC_DBL, &scale, &contribution, (double*)base[0] + 63, sizeof(double), 0);
  ARMCI_Fence(0);
  ARMCI_Barrier();
  if (rank == 0) CHECK(mine[63] == size * (size + 1), "acc: %g, not %d", mine[63], size * (size + 1));

  /* A shared counter: fetch-and-add at the last rank, `rounds` times each. */
  void** counter = malloc(sizeof(void*) * (size_t)size);
  ARMCI_Malloc(counter, 2 * sizeof(int));
  ((int*)counter[rank])[0] = ((int*)counter[rank])[1] = 0;
  ARMCI_Barrier();
  int last = -1, increasing = 1;
  for (int i = 0; i < rounds; ++i) {
    int got = -1;
    ARMCI_Rmw(ARMCI_FETCH_AND_ADD, &got, counter[size - 1], 1, size - 1);
    increasing &= got > last;
    last = got;
  }
  CHECK(increasing, "fetch-and-add: values did not increase");

  /* ARMCI's mutexes: a read-modify-write of the second int at the last rank. */
  ARMCI_Create_mutexes(1);
  ARMCI_Barrier();
  for (int i = 0; i < rounds; ++i) {
    ARMCI_Lock(0, size - 1);
    int v = 0;
    ARMCI_Get((int*)counter[size - 1] + 1, &v, sizeof v, size - 1);
    ++v;
    ARMCI_Put(&v, (int*)counter[size - 1] + 1, sizeof v, size - 1);
    ARMCI_Fence(size - 1);
    ARMCI_Unlock(0, size - 1);
  }
  ARMCI_Barrier();
  if (rank == size - 1) {
    CHECK(((int*)counter[rank])[0] == size * rounds, "counter: %d, not %d", ((int*)counter[rank])[0], size * rounds);
    CHECK(((int*)counter[rank])[1] == size * rounds, "mutex: %d, not %d (updates lost)", ((int*)counter[rank])[1], size * rounds);
  }
  ARMCI_Destroy_mutexes();
  ARMCI_Free(counter[rank]);
  ARMCI_Free(mine);
  free(counter);
  free(base);
  int all_failed = 0, all_done = 0;
  MPI_Allreduce(&failed, &all_failed, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&done, &all_done, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    if (all_failed) printf("armci: %d of %d checks FAILED on %d processes\n", all_failed, all_done, size);
    else printf("armci: %d checks passed on %d processes\n", all_done, size);
  }
  ARMCI_Finalize();
  MPI_Finalize();
  return all_failed ? 1 : 0;
}
