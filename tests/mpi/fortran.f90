! An unmodified Fortran MPI program (use mpi) across clusters: ranks, a ring of sends and
! receives with statuses, collectives with MPI_IN_PLACE, a split communicator. libmpichfort
! calls MPICH's C functions, which the MPI layer defines.
program fortran_across_clusters
  use mpi
  implicit none
  character(len=*), parameter :: test_name = 'fortran'
  integer :: ierr, rank, size, left, right, got, total, half, hrank, hsize, failed, all_failed
  integer :: status(MPI_STATUS_SIZE), values(4)
  failed = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)
  call MPI_Sendrecv(rank, 1, MPI_INTEGER, right, 3, got, 1, MPI_INTEGER, left, 3, MPI_COMM_WORLD, status, ierr)
  if (got /= left .or. status(MPI_SOURCE) /= left .or. status(MPI_TAG) /= 3) then
    print *, 'rank', rank, ': sendrecv got', got, 'from', status(MPI_SOURCE)
    failed = failed + 1
  end if
  total = rank + 1
  call MPI_Allreduce(MPI_IN_PLACE, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (total /= size * (size + 1) / 2) then
    print *, 'rank', rank, ': allreduce in place gave', total
    failed = failed + 1
  end if
  values = 0
  if (rank == size - 1) values = (/ 1, 2, 3, 4 /)
  call MPI_Bcast(values, 4, MPI_INTEGER, size - 1, MPI_COMM_WORLD, ierr)
  if (values(4) /= 4) failed = failed + 1
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierr)
  call MPI_Comm_rank(half, hrank, ierr)
  call MPI_Comm_size(half, hsize, ierr)
  if (hrank /= rank / 2) failed = failed + 1
  call MPI_Recv(got, 1, MPI_INTEGER, MPI_PROC_NULL, 0, half, MPI_STATUS_IGNORE, ierr)
  call MPI_Comm_free(half, ierr)
  include 'report_checks.inc'
end program fortran_across_clusters
