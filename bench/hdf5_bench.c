/* hdf5_bench: io_bench's contiguous layout through parallel HDF5 (bench/io.sh builds it with
 * h5pcc.mpich when Debian's HDF5 for MPICH is installed): a 2-D dataset of ints, each rank a
 * block of rows, written and read collectively, the file created and closed each round.
 *
 *   hdf5_bench FILE [MIB] [ROUNDS]     (defaults 64 and 7; medians printed)
 *
 * Timed from a barrier to the slowest rank's return from H5Fclose (write: create, write,
 * close) or from H5Dread (read: the file opened before). */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double slowest_since(double t0) {
  double t = MPI_Wtime() - t0, max = 0;
  MPI_Allreduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return max;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: hdf5_bench FILE [MIB] [ROUNDS]\n");
    MPI_Finalize();
    return 2;
  }
  const long mib = argc > 2 ? atol(argv[2]) : 64;
  const int rounds = argc > 3 ? atoi(argv[3]) : 7;
  const hsize_t cols = 1024, rows = (hsize_t)(mib << 20) / sizeof(int) / cols, mine = rows / (hsize_t)size;
  int* buf = malloc(sizeof(int) * mine * cols);
  for (hsize_t i = 0; i < mine * cols; ++i) buf[i] = rank;
  double* w = malloc(sizeof(double) * (size_t)rounds);
  double* r = malloc(sizeof(double) * (size_t)rounds);
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
  hid_t xfer = H5Pcreate(H5P_DATASET_XFER);
  H5Pset_dxpl_mpio(xfer, H5FD_MPIO_COLLECTIVE);
  hsize_t dims[2] = {rows, cols}, start[2] = {(hsize_t)rank * mine, 0}, count[2] = {mine, cols};
  for (int k = 0; k < rounds; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t set = H5Dcreate2(file, "values", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t memory = H5Screate_simple(2, count, NULL);
    if (H5Dwrite(set, H5T_NATIVE_INT, memory, space, xfer, buf) < 0) MPI_Abort(MPI_COMM_WORLD, 1);
    H5Sclose(memory);
    H5Sclose(space);
    H5Dclose(set);
    H5Fclose(file);
    w[k] = slowest_since(t0);
    file = H5Fopen(argv[1], H5F_ACC_RDONLY, fapl);
    set = H5Dopen2(file, "values", H5P_DEFAULT);
    space = H5Dget_space(set);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    memory = H5Screate_simple(2, count, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (H5Dread(set, H5T_NATIVE_INT, memory, space, xfer, buf) < 0) MPI_Abort(MPI_COMM_WORLD, 1);
    r[k] = slowest_since(t0);
    H5Sclose(memory);
    H5Sclose(space);
    H5Dclose(set);
    H5Fclose(file);
  }
  qsort(w, (size_t)rounds, sizeof *w, compare);
  qsort(r, (size_t)rounds, sizeof *r, compare);
  const double total = (double)(mib << 20);
  if (rank == 0)
    printf("hdf5        %ld MiB on %d ranks: write %8.1f MB/s (%.3f s)  read %8.1f MB/s (%.3f s)\n", mib, size,
           total / w[rounds / 2] / 1e6, w[rounds / 2], total / r[rounds / 2] / 1e6, r[rounds / 2]);
  if (rank == 0) MPI_File_delete(argv[1], MPI_INFO_NULL);
  H5Pclose(xfer);
  H5Pclose(fapl);
  free(w);
  free(r);
  free(buf);
  MPI_Finalize();
  return 0;
}
