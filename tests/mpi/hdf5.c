/* A parallel HDF5 program as its users write them (built with Debian's h5pcc for MPICH):
 * every rank writes its block of rows of one 2-D dataset collectively, with an attribute,
 * then the file is opened again and each rank reads a column through another hyperslab.
 * hdf5 FILE: writes FILE; the test compares its h5dump with that of the same program run by
 * MPICH alone. */
#include <hdf5.h>
#include <stdio.h>

#include "check.h"

enum { kRowsPerRank = 4, kCols = 6 };

int main(int argc, char** argv) {
  int rank, size;
  if (!start(&argc, &argv, "hdf5", 1, &rank, &size)) return 2;
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: hdf5 FILE\n");
    MPI_Finalize();
    return 2;
  }
  const hsize_t rows = (hsize_t)kRowsPerRank * (hsize_t)size;
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL);
  hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  CHECK(file >= 0, "H5Fcreate %s", argv[1]);
  hsize_t dims[2] = {rows, kCols};
  hid_t space = H5Screate_simple(2, dims, NULL);
  hid_t set = H5Dcreate2(file, "values", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const int ranks = size;
  hid_t scalar = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(set, "ranks", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(attr, H5T_NATIVE_INT, &ranks);
  H5Aclose(attr);
  H5Sclose(scalar);

  int mine[kRowsPerRank][kCols];
  for (int r = 0; r < kRowsPerRank; ++r)
    for (int c = 0; c < kCols; ++c) mine[r][c] = (rank * kRowsPerRank + r) * 100 + c;
  hsize_t start_at[2] = {(hsize_t)rank * kRowsPerRank, 0}, count[2] = {kRowsPerRank, kCols};
  H5Sselect_hyperslab(space, H5S_SELECT_SET, start_at, NULL, count, NULL);
  hid_t memory = H5Screate_simple(2, count, NULL);
  hid_t collective = H5Pcreate(H5P_DATASET_XFER);
  H5Pset_dxpl_mpio(collective, H5FD_MPIO_COLLECTIVE);
  herr_t e = H5Dwrite(set, H5T_NATIVE_INT, memory, space, collective, mine);
  CHECK(e >= 0, "H5Dwrite of rows %d-%d", rank * kRowsPerRank, rank * kRowsPerRank + kRowsPerRank - 1);
  H5Sclose(memory);
  H5Sclose(space);
  H5Dclose(set);
  H5Fclose(file);

  /* Again, read on another decomposition: rank r reads column r % kCols, every row. */
  file = H5Fopen(argv[1], H5F_ACC_RDONLY, fapl);
  CHECK(file >= 0, "H5Fopen %s", argv[1]);
  set = H5Dopen2(file, "values", H5P_DEFAULT);
  space = H5Dget_space(set);
  const int col = rank % kCols;
  hsize_t col_at[2] = {0, (hsize_t)col}, col_count[2] = {rows, 1};
  H5Sselect_hyperslab(space, H5S_SELECT_SET, col_at, NULL, col_count, NULL);
  memory = H5Screate_simple(2, col_count, NULL);
  int column[64 * kRowsPerRank];
  e = H5Dread(set, H5T_NATIVE_INT, memory, space, collective, column);
  CHECK(e >= 0, "H5Dread of column %d", col);
  int wrong = 0;
  for (hsize_t r = 0; r < rows; ++r) wrong += column[r] != (int)r * 100 + col;
  CHECK(wrong == 0, "%d values of column %d read back wrong", wrong, col);
  int read_ranks = 0;
  attr = H5Aopen(set, "ranks", H5P_DEFAULT);
  H5Aread(attr, H5T_NATIVE_INT, &read_ranks);
  CHECK(read_ranks == size, "attribute ranks = %d", read_ranks);
  H5Aclose(attr);
  H5Sclose(memory);
  H5Sclose(space);
  H5Dclose(set);
  H5Pclose(collective);
  H5Fclose(file);
  H5Pclose(fapl);
  return finish("hdf5");
}
