/* MPI-IO on MPI_COMM_WORLD, whatever clusters it spans: one file that every process reads
 * and writes. files DIR [in-c1 DIR1]: the files are made in DIR (which must exist). With
 * "in-c1 DIR1", the processes of cluster c1 name the same directory DIR1 (where c1 mounts
 * the file system: MPI lets processes name one file differently; or, where the files live
 * in one cluster other than c1, a directory c1 does not have at all). */
#include <string.h>
#include <unistd.h>

#include "check.h"

static char path[4096];
static const char* in_dir(const char* dir, const char* name) {
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

enum { kRowsPerRank = 3 };

/* A collective write through a subarray view of row blocks, read back through column blocks. */
static void subarray_views(const char* dir, int rank, int size) {
  const int rows = kRowsPerRank * size, cols = 2 * size;
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "array.dat"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "MPI_File_open array.dat: class %d", error_class(rc));
  if (rc != MPI_SUCCESS) return;
  int sizes[2] = {rows, cols}, sub[2] = {kRowsPerRank, cols}, at[2] = {rank * kRowsPerRank, 0};
  MPI_Datatype rows_of_mine, cols_of_mine;
  MPI_Type_create_subarray(2, sizes, sub, at, MPI_ORDER_C, MPI_INT, &rows_of_mine);
  MPI_Type_commit(&rows_of_mine);
  int mine[kRowsPerRank * 128];
  for (int r = 0; r < kRowsPerRank; ++r)
    for (int c = 0; c < cols; ++c) mine[r * cols + c] = (rank * kRowsPerRank + r) * 1000 + c;
  MPI_File_set_view(fh, 0, MPI_INT, rows_of_mine, "native", MPI_INFO_NULL);
  rc = MPI_File_write_all(fh, mine, kRowsPerRank * cols, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "MPI_File_write_all: class %d", error_class(rc));
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  MPI_Offset bytes = 0;
  MPI_File_get_size(fh, &bytes);
  CHECK(bytes == (MPI_Offset)rows * cols * (MPI_Offset)sizeof(int), "file size %lld, expected %lld", (long long)bytes,
        (long long)rows * cols * (long long)sizeof(int));
  int sub_cols[2] = {rows, 2}, at_cols[2] = {0, 2 * rank};
  MPI_Type_create_subarray(2, sizes, sub_cols, at_cols, MPI_ORDER_C, MPI_INT, &cols_of_mine);
  MPI_Type_commit(&cols_of_mine);
  MPI_File_set_view(fh, 0, MPI_INT, cols_of_mine, "native", MPI_INFO_NULL);
  int got[128 * kRowsPerRank * 2];
  memset(got, 0xff, sizeof got);
  rc = MPI_File_read_all(fh, got, rows * 2, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "MPI_File_read_all: class %d", error_class(rc));
  int wrong = 0;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < 2; ++c) wrong += got[r * 2 + c] != r * 1000 + 2 * rank + c;
  CHECK(wrong == 0, "%d elements of columns %d-%d read back wrong (first: %d)", wrong, 2 * rank, 2 * rank + 1, got[0]);
  /* Now every cluster's data interleaves with the others' in the file: written through the
   * column view collectively, read back through the rows. */
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < 2; ++c) got[r * 2 + c] = -(r * 1000 + 2 * rank + c);
  rc = MPI_File_write_at_all(fh, 0, got, rows * 2, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "MPI_File_write_at_all through the columns: class %d", error_class(rc));
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  MPI_File_set_view(fh, 0, MPI_INT, rows_of_mine, "native", MPI_INFO_NULL);
  MPI_File_read_all(fh, mine, kRowsPerRank * cols, MPI_INT, MPI_STATUS_IGNORE);
  wrong = 0;
  for (int r = 0; r < kRowsPerRank; ++r)
    for (int c = 0; c < cols; ++c) wrong += mine[r * cols + c] != -((rank * kRowsPerRank + r) * 1000 + c);
  CHECK(wrong == 0, "%d elements of rows %d-%d written through the columns read back wrong", wrong, rank * kRowsPerRank,
        rank * kRowsPerRank + kRowsPerRank - 1);
  MPI_Type_free(&rows_of_mine);
  MPI_Type_free(&cols_of_mine);
  MPI_Group file_group, world_group;
  MPI_File_get_group(fh, &file_group);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int same = MPI_UNEQUAL;
  MPI_Group_compare(file_group, world_group, &same);
  CHECK(same == MPI_IDENT, "the file's group is not the communicator's (%d)", same);
  MPI_Group_free(&file_group);
  MPI_Group_free(&world_group);
  MPI_File_close(&fh);
  CHECK(fh == MPI_FILE_NULL, "the handle is not MPI_FILE_NULL after MPI_File_close");
}

/* Every int of a region interleaved among all ranks (rank r has every size-th, from the
 * r-th), written collectively: no cluster's writing may undo another's. */
static void interleaved(const char* dir, int rank, int size) {
  enum { kEach = 16384 };
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "interleaved.dat"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_Datatype every, every_resized;
  MPI_Type_vector(kEach, 1, size, MPI_INT, &every);
  MPI_Type_create_resized(every, 0, (MPI_Aint)kEach * size * sizeof(int), &every_resized);
  MPI_Type_commit(&every_resized);
  MPI_File_set_view(fh, (MPI_Offset)rank * sizeof(int), MPI_INT, every_resized, "native", MPI_INFO_NULL);
  static int mine[kEach];
  int* all = rank == 0 ? malloc(sizeof(int) * kEach * size) : NULL;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kEach; ++i) mine[i] = (round * 64 + rank) * kEach + i;
    const int rc = MPI_File_write_at_all(fh, 0, mine, kEach, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "round %d: MPI_File_write_at_all interleaved: class %d", round, error_class(rc));
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    if (rank == 0) {
      MPI_File rawfh;
      MPI_File_open(MPI_COMM_SELF, in_dir(dir, "interleaved.dat"), MPI_MODE_RDONLY, MPI_INFO_NULL, &rawfh);
      MPI_File_read_at(rawfh, 0, all, kEach * size, MPI_INT, MPI_STATUS_IGNORE);
      MPI_File_close(&rawfh);
      int wrong = 0;
      for (int i = 0; i < kEach * size; ++i) wrong += all[i] != (round * 64 + i % size) * kEach + i / size;
      CHECK(wrong == 0, "round %d: %d of %d interleaved ints lost or wrong", round, wrong, kEach * size);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  free(all);
  MPI_Type_free(&every);
  MPI_Type_free(&every_resized);
  MPI_File_close(&fh);
}

/* write_ordered: rank r writes r+1 ints of value r, in rank order whatever the clusters. */
static void ordered(const char* dir, int rank, int size) {
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "ordered.dat"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  int values[64];
  for (int i = 0; i <= rank; ++i) values[i] = rank;
  for (int round = 0; round < 2; ++round) {
    const int rc = MPI_File_write_ordered(fh, values, rank + 1, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "MPI_File_write_ordered: class %d", error_class(rc));
  }
  const int per_round = size * (size + 1) / 2;
  MPI_Offset where = -1;
  MPI_File_get_position_shared(fh, &where);
  CHECK(where == (MPI_Offset)(2 * per_round * sizeof(int)), "shared pointer at %lld after two ordered rounds", (long long)where);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  int all[2 * 64 * 65 / 2];
  MPI_File_read_at(fh, 0, all, 2 * per_round, MPI_INT, MPI_STATUS_IGNORE);
  int at = 0, wrong = 0;
  for (int round = 0; round < 2; ++round)
    for (int r = 0; r < size; ++r)
      for (int i = 0; i <= r; ++i) wrong += all[at++] != r;
  CHECK(wrong == 0, "%d ints of the ordered file out of rank order", wrong);
  /* read_ordered gives each rank its own part back; seek_shared moves the pointer for all. */
  MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
  int back[64];
  MPI_File_read_ordered(fh, back, rank + 1, MPI_INT, MPI_STATUS_IGNORE);
  wrong = 0;
  for (int i = 0; i <= rank; ++i) wrong += back[i] != rank;
  CHECK(wrong == 0, "MPI_File_read_ordered gave rank %d %d wrong ints", rank, wrong);
  MPI_File_seek_shared(fh, 0, MPI_SEEK_END);
  MPI_File_get_position_shared(fh, &where);
  CHECK(where == (MPI_Offset)(2 * per_round * sizeof(int)), "MPI_SEEK_END put the shared pointer at %lld", (long long)where);
  MPI_File_close(&fh);
  /* Sequential mode: the shared pointer alone; a view displaced where it stands. */
  int rc = MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "ordered.dat"), MPI_MODE_RDONLY | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "MPI_File_open MPI_MODE_SEQUENTIAL: class %d", error_class(rc));
  int amode = 0;
  MPI_File_get_amode(fh, &amode);
  CHECK(amode == (MPI_MODE_RDONLY | MPI_MODE_SEQUENTIAL), "MPI_File_get_amode: %d", amode);
  MPI_File_read_ordered(fh, back, rank + 1, MPI_INT, MPI_STATUS_IGNORE);
  rc = MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "MPI_File_set_view(MPI_DISPLACEMENT_CURRENT): class %d", error_class(rc));
  MPI_File_get_position_shared(fh, &where);
  CHECK(where == 0, "the shared pointer at %lld after MPI_File_set_view", (long long)where);
  memset(back, 0xff, sizeof back);
  MPI_File_read_ordered(fh, back, rank + 1, MPI_INT, MPI_STATUS_IGNORE);
  wrong = 0;
  for (int i = 0; i <= rank; ++i) wrong += back[i] != rank;
  CHECK(wrong == 0, "the second round read through the displaced view gave rank %d %d wrong ints", rank, wrong);
  MPI_File_close(&fh);
}

/* write_shared from every rank: every record once, wherever it landed. */
static void shared(const char* dir, int rank, int size) {
  enum { kRecords = 5 };
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "shared.dat"), MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
  MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  for (int i = 0; i < kRecords; ++i) {
    int record[2] = {rank, i};
    MPI_Request req;
    const int rc =
        i % 2 ? MPI_File_write_shared(fh, record, 2, MPI_INT, MPI_STATUS_IGNORE) : MPI_File_iwrite_shared(fh, record, 2, MPI_INT, &req);
    if (i % 2 == 0 && rc == MPI_SUCCESS) MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "MPI_File_(i)write_shared: class %d", error_class(rc));
  }
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  if (rank == 0) {
    int all[64 * kRecords * 2], seen[64][kRecords];
    memset(seen, 0, sizeof seen);
    MPI_Status st;
    MPI_File_read_at(fh, 0, all, size * kRecords * 2, MPI_INT, &st);
    int count = 0;
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == size * kRecords * 2, "the shared file holds %d ints, expected %d", count, size * kRecords * 2);
    for (int k = 0; k + 1 < count; k += 2)
      if (all[k] >= 0 && all[k] < size && all[k + 1] >= 0 && all[k + 1] < kRecords) ++seen[all[k]][all[k + 1]];
    int wrong = 0;
    for (int r = 0; r < size; ++r)
      for (int i = 0; i < kRecords; ++i) wrong += seen[r][i] != 1;
    CHECK(wrong == 0, "%d records not written exactly once", wrong);
  }
  MPI_File_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(access(in_dir(dir, "shared.dat"), F_OK) != 0, "MPI_MODE_DELETE_ON_CLOSE left the file");
}

/* Non-blocking and split collectives overlapping computation, then set_size and get_size. */
static void nonblocking(const char* dir, int rank, int size) {
  enum { kInts = 1024 };
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "nonblocking.dat"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  static int a[kInts], b[kInts], back[kInts];
  for (int i = 0; i < kInts; ++i) a[i] = rank * kInts + i, b[i] = -a[i];
  MPI_Request req;
  int rc = MPI_File_iwrite_at_all(fh, (MPI_Offset)rank * kInts * sizeof(int), a, kInts, MPI_INT, &req);
  CHECK(rc == MPI_SUCCESS, "MPI_File_iwrite_at_all: class %d", error_class(rc));
  volatile double x = 0;
  for (int i = 0; i < 100000; ++i) x += i * 0.5; /* (computation meanwhile) */
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  const MPI_Offset second = (MPI_Offset)(size + rank) * kInts * sizeof(int);
  rc = MPI_File_write_at_all_begin(fh, second, b, kInts, MPI_INT);
  CHECK(rc == MPI_SUCCESS, "MPI_File_write_at_all_begin: class %d", error_class(rc));
  MPI_File_write_at_all_end(fh, b, MPI_STATUS_IGNORE);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  const int other = (rank + 1) % size; /* (a process of another cluster, for some) */
  MPI_File_read_at(fh, (MPI_Offset)other * kInts * sizeof(int), back, kInts, MPI_INT, MPI_STATUS_IGNORE);
  int wrong = 0;
  for (int i = 0; i < kInts; ++i) wrong += back[i] != other * kInts + i;
  CHECK(wrong == 0, "%d ints of rank %d's non-blocking write read back wrong", wrong, other);
  MPI_File_read_at(fh, (MPI_Offset)(size + other) * kInts * sizeof(int), back, kInts, MPI_INT, MPI_STATUS_IGNORE);
  wrong = 0;
  for (int i = 0; i < kInts; ++i) wrong += back[i] != -(other * kInts + i);
  CHECK(wrong == 0, "%d ints of rank %d's split collective write read back wrong", wrong, other);
  MPI_Barrier(MPI_COMM_WORLD);
  rc = MPI_File_set_size(fh, 12345);
  CHECK(rc == MPI_SUCCESS, "MPI_File_set_size: class %d", error_class(rc));
  MPI_Offset bytes = 0;
  MPI_File_get_size(fh, &bytes);
  CHECK(bytes == 12345, "MPI_File_get_size after MPI_File_set_size(12345): %lld", (long long)bytes);
  MPI_File_close(&fh);
}

/* Atomic mode: the first and the last rank (two clusters) write the same region at once;
 * what is there after is one of them whole, never a mix. */
static void atomic_mode(const char* dir, int rank, int size) {
  enum { kBytes = 1 << 20 };
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "atomic.dat"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_set_atomicity(fh, 1);
  int flag = 0;
  MPI_File_get_atomicity(fh, &flag);
  CHECK(flag == 1, "MPI_File_get_atomicity: %d after setting it", flag);
  static char mine[kBytes], there[kBytes];
  for (int round = 0; round < 4; ++round) {
    memset(mine, 'a' + rank % 26, kBytes);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 || rank == size - 1) MPI_File_write_at(fh, 0, mine, kBytes, MPI_CHAR, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_read_at(fh, 0, there, kBytes, MPI_CHAR, MPI_STATUS_IGNORE);
    int mixed = 0;
    for (int i = 1; i < kBytes; ++i) mixed += there[i] != there[0];
    CHECK(mixed == 0 && (there[0] == 'a' || there[0] == 'a' + (size - 1) % 26), "round %d: %d bytes differ from the first ('%c')", round,
          mixed, there[0]);
  }
  MPI_File_close(&fh);
}

/* Errors name the file, with MPI's classes; files' errors are returned by default. */
/* The text of error `rc` names `what` and, unless NULL, `also`. */
static void error_names(int rc, const char* what, const char* also) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int length = 0;
  MPI_Error_string(rc, text, &length);
  CHECK(strstr(text, what) != NULL && (!also || strstr(text, also) != NULL), "the error does not name %s%s%s: %s", what,
        also ? " and " : "", also ? also : "", text);
}

/* A write to `fh`, opened MPI_MODE_RDONLY, fails as ROMIO's, naming the function and `name`. */
static void read_only_write_fails(MPI_File fh, const char* name) {
  const int value = 0;
  const int rc = MPI_File_write_at(fh, 0, &value, 1, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(error_class(rc) == MPI_ERR_READ_ONLY, "writing %s, opened MPI_MODE_RDONLY: class %d", name, error_class(rc));
  error_names(rc, name, "MPI_File_write_at");
}

static void errors(const char* dir, int rank) {
  MPI_File fh = MPI_FILE_NULL;
  int rc = MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "missing.dat"), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(error_class(rc) == MPI_ERR_NO_SUCH_FILE, "opening a missing file: class %d", error_class(rc));
  error_names(rc, "missing.dat", NULL);
  CHECK(fh == MPI_FILE_NULL, "a failed open gave a handle");
  /* ROMIO's errors on the open file name it and the function (whichever cluster holds it). */
  rc = MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "array.dat"), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "opening array.dat read-only: class %d", error_class(rc));
  if (rc == MPI_SUCCESS) {
    read_only_write_fails(fh, "array.dat");
    MPI_File_close(&fh);
  }
  rc = MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "array.dat"), MPI_MODE_RDONLY | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  CHECK(error_class(rc) == MPI_ERR_AMODE, "MPI_MODE_RDONLY | MPI_MODE_RDWR: class %d", error_class(rc));
  rc = MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "array.dat"), MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  CHECK(error_class(rc) == MPI_ERR_FILE_EXISTS, "MPI_MODE_EXCL on a file that exists: class %d", error_class(rc));
  /* MPI_MODE_EXCL on a new file: created once, by one cluster, and opened by all. */
  rc = MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "exclusive.dat"), MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "MPI_MODE_EXCL on a new file: class %d", error_class(rc));
  if (rc == MPI_SUCCESS) MPI_File_close(&fh);
  /* ROMIO's driver prefix before the name. */
  char prefixed[4200];
  snprintf(prefixed, sizeof prefixed, "ufs:%s", in_dir(dir, "exclusive.dat"));
  rc = MPI_File_open(MPI_COMM_WORLD, prefixed, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "opening %s: class %d", prefixed, error_class(rc));
  if (rc == MPI_SUCCESS) MPI_File_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) CHECK(MPI_File_delete(in_dir(dir, "exclusive.dat"), MPI_INFO_NULL) == MPI_SUCCESS, "MPI_File_delete");
}

/* MPI_MODE_APPEND: both file pointers start at the end of the file. */
static void append_mode(const char* dir, int rank, int size) {
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "append.dat"), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "opening append.dat: class %d", error_class(rc));
  if (rc != MPI_SUCCESS) return;
  if (rank == 0) MPI_File_write_at(fh, 0, "0123456789", 10, MPI_CHAR, MPI_STATUS_IGNORE);
  MPI_File_close(&fh);
  rc = MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "append.dat"), MPI_MODE_RDWR | MPI_MODE_APPEND, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "opening append.dat MPI_MODE_APPEND: class %d", error_class(rc));
  if (rc != MPI_SUCCESS) return;
  MPI_Offset individual = -1, shared = -1, bytes = 0;
  MPI_File_get_position(fh, &individual);
  MPI_File_get_position_shared(fh, &shared);
  CHECK(individual == 10 && shared == 10, "MPI_MODE_APPEND: the pointers start at %lld and %lld, not 10", (long long)individual,
        (long long)shared);
  MPI_Barrier(MPI_COMM_WORLD); /* (everyone read the shared pointer before it moves) */
  MPI_File_write_shared(fh, &rank, 1, MPI_INT, MPI_STATUS_IGNORE);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  MPI_File_get_size(fh, &bytes);
  CHECK(bytes == 10 + (MPI_Offset)(size * sizeof(int)), "append.dat has %lld bytes after the appends", (long long)bytes);
  MPI_File_close(&fh);
}

/* A file the info key gridrt_file_cluster puts in the cluster of the last rank (in a grid
 * job): the other clusters' processes, rank 0's among them, reach it through that cluster. */
static void placed(const char* dir, int rank, int size) {
  char cluster[64] = "";
  const char* mine = getenv("GRIDRT_CLUSTER");
  if (rank == size - 1 && mine) snprintf(cluster, sizeof cluster, "%s", mine);
  MPI_Bcast(cluster, sizeof cluster, MPI_CHAR, size - 1, MPI_COMM_WORLD);
  if (!cluster[0]) return;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "gridrt_file_cluster", cluster);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "placed.dat"), MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "opening placed.dat in cluster %s: class %d", cluster, error_class(rc));
  if (rc == MPI_SUCCESS) {
    const int value = rank * 7 + 1;
    rc = MPI_File_write_at(fh, (MPI_Offset)rank * (MPI_Offset)sizeof(int), &value, 1, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(rc == MPI_SUCCESS, "MPI_File_write_at to placed.dat: class %d", error_class(rc));
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
    int all[64] = {0};
    MPI_Status status;
    rc = MPI_File_read_at(fh, 0, all, size, MPI_INT, &status);
    int got = 0;
    MPI_Get_count(&status, MPI_INT, &got);
    CHECK(rc == MPI_SUCCESS && got == size, "MPI_File_read_at of placed.dat: class %d, %d of %d", error_class(rc), got, size);
    for (int r = 0; r < size && r < 64; ++r) CHECK(all[r] == r * 7 + 1, "placed.dat holds %d for rank %d", all[r], r);
    MPI_Offset bytes = 0;
    MPI_File_get_size(fh, &bytes);
    CHECK(bytes == (MPI_Offset)(size * sizeof(int)), "placed.dat has %lld bytes", (long long)bytes);
    MPI_File_close(&fh);
  }
  /* What the served processes cannot do is refused as ROMIO refuses it. */
  rc = MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "placed.dat"), MPI_MODE_RDONLY, info, &fh);
  CHECK(rc == MPI_SUCCESS, "opening placed.dat read-only: class %d", error_class(rc));
  if (rc == MPI_SUCCESS) {
    read_only_write_fails(fh, "placed.dat");
    MPI_File_close(&fh);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) MPI_File_delete(in_dir(dir, "placed.dat"), MPI_INFO_NULL);
  /* A name of no cluster: every process fails alike, naming it. */
  MPI_Info_set(info, "gridrt_file_cluster", "no-such-cluster");
  rc = MPI_File_open(MPI_COMM_WORLD, in_dir(dir, "nowhere.dat"), MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(error_class(rc) == MPI_ERR_INFO_VALUE, "gridrt_file_cluster naming no cluster: class %d", error_class(rc));
  error_names(rc, "no-such-cluster", NULL);
  MPI_Info_free(&info);
}

int main(int argc, char** argv) {
  int rank, size;
  if (!start(&argc, &argv, "files", 2, &rank, &size)) return 2;
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: files DIR [in-c1 DIR1]\n");
    MPI_Finalize();
    return 2;
  }
  const char* dir = argv[1];
  const char* cluster = getenv("GRIDRT_CLUSTER");
  if (argc > 3 && strcmp(argv[2], "in-c1") == 0 && cluster && strcmp(cluster, "c1") == 0) dir = argv[3];
  if (rank == 0) /* (what an earlier run left) */
    for (const char** name = (const char*[]){"array.dat", "ordered.dat", "shared.dat", "nonblocking.dat", "atomic.dat", "exclusive.dat",
                                             "interleaved.dat", "append.dat", "placed.dat", NULL};
         *name; ++name)
      MPI_File_delete(in_dir(dir, *name), MPI_INFO_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  subarray_views(dir, rank, size);
  interleaved(dir, rank, size);
  ordered(dir, rank, size);
  shared(dir, rank, size);
  nonblocking(dir, rank, size);
  atomic_mode(dir, rank, size);
  errors(dir, rank);
  append_mode(dir, rank, size);
  placed(dir, rank, size);
  return finish("files");
}
