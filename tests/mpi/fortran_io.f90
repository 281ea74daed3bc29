! MPI-IO from Fortran (use mpi) on MPI_COMM_WORLD across clusters: every rank's integers
! in rank order through the shared file pointer (MPI_File_write_ordered), read back by
! every rank at explicit offsets. fortran_io DIR: the file is made in DIR, a directory on a
! file system that every cluster declares, and deleted on close.
program fortran_io
  use mpi
  implicit none
  character(len=*), parameter :: test_name = 'fortran_io'
  integer :: ierr, rank, size, fh, failed, all_failed, r, i, k
  integer :: mine(64), all(64 * 65 / 2)
  integer(kind=MPI_OFFSET_KIND) :: where
  integer :: status(MPI_STATUS_SIZE)
  character(len=4096) :: dir

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call get_command_argument(1, dir)
  failed = 0
  mine = rank
  call MPI_File_open(MPI_COMM_WORLD, trim(dir) // '/fortran.dat', &
                     ior(MPI_MODE_CREATE, ior(MPI_MODE_RDWR, MPI_MODE_DELETE_ON_CLOSE)), MPI_INFO_NULL, fh, ierr)
  if (ierr /= MPI_SUCCESS) then
    print *, 'rank', rank, ': MPI_File_open failed', ierr
    failed = failed + 1
  end if
  call MPI_File_write_ordered(fh, mine, rank + 1, MPI_INTEGER, status, ierr)
  call MPI_File_get_position_shared(fh, where, ierr)
  if (where /= int(size * (size + 1) / 2 * 4, MPI_OFFSET_KIND)) then
    print *, 'rank', rank, ': the shared pointer at', where
    failed = failed + 1
  end if
  call MPI_File_sync(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_File_sync(fh, ierr)
  all = -1
  call MPI_File_read_at(fh, 0_MPI_OFFSET_KIND, all, size * (size + 1) / 2, MPI_INTEGER, status, ierr)
  k = 0
  do r = 0, size - 1
    do i = 0, r
      k = k + 1
      if (all(k) /= r) failed = failed + 1
    end do
  end do
  call MPI_File_close(fh, ierr)
  if (fh /= MPI_FILE_NULL) failed = failed + 1
  include 'report_checks.inc'
end program fortran_io
