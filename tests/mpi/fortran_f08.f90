! A program using the mpi_f08 module, which the MPI layer does not cover across clusters:
! under gridrun its MPI_Init must refuse, saying so, rather than answer for one cluster.
program t
  use mpi_f08
  integer :: rank, size
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  print *, 'f08 rank', rank, 'of', size
  call MPI_Finalize()
end program
