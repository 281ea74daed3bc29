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

#include "io_timing.h"

int main(int argc, char** argv) {
  int rank, size, rounds;
  long mib;
  if (!io_start(&argc, &argv, "hdf5_bench", &rank, &size, &mib, &rounds)) return 2;
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
    w[k] = io_slowest_since(t0);
    file = H5Fopen(argv[1], H5F_ACC_RDONLY, fapl);
    set = H5Dopen2(file, "values", H5P_DEFAULT);
    space = H5Dget_space(set);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    memory = H5Screate_simple(2, count, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (H5Dread(set, H5T_NATIVE_INT, memory, space, xfer, buf) < 0) MPI_Abort(MPI_COMM_WORLD, 1);
    r[k] = io_slowest_since(t0);
    H5Sclose(memory);
    H5Sclose(space);
    H5Dclose(set);
    H5Fclose(file);
  }
  const double total = (double)(mib << 20), write = io_median(w, rounds), read = io_median(r, rounds);
  if (rank == 0)
    printf("hdf5        %ld MiB on %d ranks: write %8.1f MB/s (%.3f s)  read %8.1f MB/s (%.3f s)\n", mib, size, total / write / 1e6, write,
           total / read / 1e6, read);
  if (rank == 0) MPI_File_delete(argv[1], MPI_INFO_NULL);
  H5Pclose(xfer);
  H5Pclose(fapl);
  free(w);
  free(r);
  free(buf);
  MPI_Finalize();
  return 0;
}
