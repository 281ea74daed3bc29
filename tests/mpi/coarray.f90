! A Fortran coarray program (gfortran -fcoarray=lib, OpenCoarrays for MPICH: `caf`): coarray
! puts and gets, sync all and sync images, co_sum and co_max, atomics, and a lock variable
! guarding a read-modify-write at image 1. Each image says whether all it saw was right.
program coarray_check
  use iso_fortran_env, only: lock_type
  implicit none
  type(lock_type) :: lck[*]
  integer :: shared_count[*]
  integer :: me, n, i, total
  integer :: a(4)[*]
  integer :: counter[*]
  real(8) :: s
  integer(kind=4) :: atom[*]
  logical :: ok
  me = this_image()
  n = num_images()
  a = me * 10 + [(i, i = 1, 4)]
  counter = 0
  call atomic_define(atom, 0)
  sync all
  ! puts and gets
  a(2)[mod(me, n) + 1] = me * 100
  sync all
  ok = a(2) == (mod(me - 2 + n, n) + 1) * 100
  i = a(3)[mod(me, n) + 1]
  ok = ok .and. i == (mod(me, n) + 1) * 10 + 3
  ! co_sum
  total = me
  call co_sum(total)
  ok = ok .and. total == n * (n + 1) / 2
  s = real(me, 8)
  call co_max(s)
  ok = ok .and. s == real(n, 8)
  ! atomics
  do i = 1, 10
    call atomic_add(atom[1], 1)
  end do
  sync all
  if (me == 1) then
    call atomic_ref(i, atom)
    ok = ok .and. i == 10 * n
  end if
  ! a lock variable guarding a read-modify-write of a value at image 1
  shared_count = 0
  sync all
  do i = 1, 5
    lock(lck[1])
    shared_count[1] = shared_count[1] + 1
    unlock(lck[1])
  end do
  sync all
  if (me == 1) ok = ok .and. shared_count == 5 * n
  ! sync images with neighbours
  if (me > 1) sync images(me - 1)
  if (me < n) sync images(me + 1)
  if (ok) then
    print '(a,i0,a)', 'image ', me, ': ok'
  else
    print '(a,i0,a)', 'image ', me, ': WRONG'
  end if
end program
