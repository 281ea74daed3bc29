// coll_check: every grid collective, with each algorithm, against references this program
// computes on its own from formulas (never with a collective). Run as a job by
// tests/test_end_to_end.cpp on grids of 1, 2 and 3 clusters of unequal sizes.
//
// On the world communicator, a duplicate, a split (parity of the rank, keys reversed) and
// one whose members interleave clusters (odd ranks first): bcast from every root at sizes 0 B to 1 MiB across
// slice boundaries and with a derived datatype whose holes must stay untouched; reduce to
// every root, allreduce and reduce_scatter(_block) with sums, a maximum, and a
// user-defined non-commutative operation (composition of affine maps, whose only right
// answer is the rank-order one), also in place; gather, scatter, allgather and alltoall of ints and of the derived type,
// from every root, also in place; their v forms with uneven counts (zeros included), gaps
// and blocks in reverse rank order; barrier.
//
// Exit 0 and "coll_check: N checks passed on P processes in C clusters (K nodes in the
// first)" from rank 0; exit 1 with the first failed check named otherwise.
//
// coll_check --mismatch: the last rank passes a larger count to a broadcast than the others
// (an erroneous program); it must fail with an error naming the sizes, exit 3.
#include "common/program_help.h"
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <string>
#include <vector>

#include "gridrt/gridrt.hpp"

namespace {

using gridrt::Algo;
using gridrt::Comm;

int checks = 0;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "coll_check: rank %d: FAILED: %s\n", gridrt::rank(), what.c_str());
  std::fflush(stderr);
  std::exit(1);
}
void expect(bool ok, const std::string& what) {
  if (!ok) fail(what);
  ++checks;
}

const char* name(Algo a) { return a == Algo::kHier ? "hier" : "flat"; }

// Contents every member can compute for any member.
unsigned char byte_of(int root, std::size_t i, std::size_t size) { return static_cast<unsigned char>((root * 131 + i * 7 + size) % 251); }
int int_of(int r, int i) { return (r + 1) * 1000 + i; }

// An affine map x -> a x + b (mod p). "f op g" applies f first, then g: not commutative.
struct Affine {
  std::int64_t a, b;
};
constexpr std::int64_t kP = 1000003;
Affine then(Affine f, Affine g) { return {g.a * f.a % kP, (g.a * f.b + g.b) % kP}; }
Affine affine_of(int r, int i) { return {(r + 2 + i) % kP, (3 * r + 1 + 5 * i) % kP}; }
// MPI's convention: inout = in op inout, with `in` the earlier (lower-ranked) operand.
void compose(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* x = static_cast<Affine*>(in);
  auto* y = static_cast<Affine*>(inout);
  for (int i = 0; i < *len; ++i) y[i] = then(x[i], y[i]);
}

struct Types {
  MPI_Datatype affine;   // two int64
  MPI_Datatype strided;  // 3 blocks of 2 ints, stride 3, extent 9 ints: a hole after every block
  MPI_Op compose;
};

void check_bcast(const Comm& c, Algo algo, const std::string& label, const Types& t) {
  const std::size_t slice = 64 * 1024;
  const std::size_t sizes[] = {0, 1, 7, 1000, slice - 1, slice, slice + 1, 3 * slice + 5, 1 << 20};
  for (int root = 0; root < c.size(); ++root) {
    for (std::size_t size : sizes) {
      if (size > 100000 && root > 1) continue;  // the large sizes from two roots suffice
      std::vector<unsigned char> buf(size);
      for (std::size_t i = 0; i < size; ++i) buf[i] = c.rank() == root ? byte_of(root, i, size) : 0xEE;
      c.bcast(buf.data(), static_cast<int>(size), MPI_BYTE, root, algo);
      bool ok = true;
      for (std::size_t i = 0; i < size && ok; ++i) ok = buf[i] == byte_of(root, i, size);
      expect(ok, label + " bcast " + name(algo) + " root " + std::to_string(root) + " " + std::to_string(size) + " B");
    }
    // Two elements of the strided type: 9 ints span each, 6 of them data, holes untouched.
    std::vector<int> v(2 * 9, -7);
    for (int e = 0; e < 2; ++e)
      for (int blk = 0; blk < 3; ++blk)
        for (int j = 0; j < 2; ++j) v[e * 9 + blk * 3 + j] = c.rank() == root ? int_of(root, e * 6 + blk * 2 + j) : 0;
    c.bcast(v.data(), 2, t.strided, root, algo);
    bool ok = true;
    for (int e = 0; e < 2; ++e)
      for (int blk = 0; blk < 3; ++blk) {
        for (int j = 0; j < 2; ++j) ok &= v[e * 9 + blk * 3 + j] == int_of(root, e * 6 + blk * 2 + j);
        ok &= v[e * 9 + blk * 3 + 2] == -7;  // the holes
      }
    expect(ok, label + " bcast " + name(algo) + " derived type root " + std::to_string(root));
  }
}

void check_reduce(const Comm& c, Algo algo, const std::string& label, const Types& t) {
  const int n = c.size(), me = c.rank();
  for (int root = 0; root < n; ++root) {
    for (int count : {0, 1, 1000, 300000}) {
      if (count > 1000 && root > 1) continue;
      std::vector<int> in(count), out(count, -1);
      for (int i = 0; i < count; ++i) in[i] = int_of(me, i);
      c.reduce(in.data(), out.data(), count, MPI_INT, MPI_SUM, root, algo);
      if (me == root) {
        bool ok = true;
        for (int i = 0; i < count && ok; ++i) {
          long long sum = 0;
          for (int r = 0; r < n; ++r) sum += int_of(r, i);
          ok = out[i] == sum;
        }
        expect(ok, label + " reduce sum " + name(algo) + " root " + std::to_string(root) + " count " + std::to_string(count));
      }
    }
    // Non-commutative, 3 elements, and in place at the root.
    std::vector<Affine> mine(3), got(3, Affine{-1, -1}), want(3);
    for (int i = 0; i < 3; ++i) {
      mine[i] = affine_of(me, i);
      want[i] = affine_of(0, i);
      for (int r = 1; r < n; ++r) want[i] = then(want[i], affine_of(r, i));
    }
    c.reduce(mine.data(), got.data(), 3, t.affine, t.compose, root, algo);
    if (me == root) {
      bool ok = true;
      for (int i = 0; i < 3; ++i) ok &= got[i].a == want[i].a && got[i].b == want[i].b;
      expect(ok, label + " reduce non-commutative " + name(algo) + " root " + std::to_string(root));
    }
    std::vector<Affine> place = mine;
    c.reduce(me == root ? MPI_IN_PLACE : mine.data(), place.data(), 3, t.affine, t.compose, root, algo);
    if (me == root) {
      bool ok = true;
      for (int i = 0; i < 3; ++i) ok &= place[i].a == want[i].a && place[i].b == want[i].b;
      expect(ok, label + " reduce in place " + name(algo) + " root " + std::to_string(root));
    }
  }
}

// reduce_scatter_block: member r gets the sums of everyone's r-th block (0, 1, 1000 and
// 20,000 ints each, the last a vector of several slices, also in place), and of the non-commutative composition (a derived datatype) the
// rank-order fold; reduce_scatter: uneven counts, zeros included.
void check_reduce_scatter(const Comm& c, Algo algo, const std::string& label, const Types& t) {
  const int n = c.size(), me = c.rank();
  auto sum_at = [&](int i) {
    long long sum = 0;
    for (int r = 0; r < n; ++r) sum += int_of(r, i);
    return sum;
  };
  for (int count : {0, 1, 1000, 20000}) {
    std::vector<int> in(static_cast<std::size_t>(count) * n), out(count, -1);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = int_of(me, static_cast<int>(i));
    c.reduce_scatter_block(in.data(), out.data(), count, MPI_INT, MPI_SUM, algo);
    bool ok = true;
    for (int i = 0; i < count && ok; ++i) ok = out[i] == sum_at(me * count + i);
    expect(ok, label + " reduce_scatter_block sum " + name(algo) + " count " + std::to_string(count));
    c.reduce_scatter_block(MPI_IN_PLACE, in.data(), count, MPI_INT, MPI_SUM, algo);
    ok = true;
    for (int i = 0; i < count && ok; ++i) ok = in[i] == out[i];
    expect(ok, label + " reduce_scatter_block sum in place " + name(algo) + " count " + std::to_string(count));
  }
  std::vector<int> counts(n), displs(n, 0);
  for (int r = 0; r < n; ++r) counts[r] = (r * 7) % 5 * 300;
  for (int r = 1; r < n; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<int> in(displs[n - 1] + counts[n - 1]), out(counts[me], -1);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = int_of(me, static_cast<int>(i));
  c.reduce_scatter(in.data(), out.data(), counts.data(), MPI_INT, MPI_SUM, algo);
  bool ok = true;
  for (int i = 0; i < counts[me] && ok; ++i) ok = out[i] == sum_at(displs[me] + i);
  expect(ok, label + " reduce_scatter uneven counts " + name(algo));

  std::vector<Affine> mine(2 * n), got(2), want(2);
  for (int i = 0; i < 2 * n; ++i) mine[i] = affine_of(me, i);
  for (int j = 0; j < 2; ++j) {
    want[j] = affine_of(0, 2 * me + j);
    for (int r = 1; r < n; ++r) want[j] = then(want[j], affine_of(r, 2 * me + j));
  }
  c.reduce_scatter_block(mine.data(), got.data(), 2, t.affine, t.compose, algo);
  ok = true;
  for (int j = 0; j < 2; ++j) ok &= got[j].a == want[j].a && got[j].b == want[j].b;
  expect(ok, label + " reduce_scatter_block non-commutative " + name(algo));
}

void check_allreduce(const Comm& c, Algo algo, const std::string& label, const Types& t) {
  const int n = c.size(), me = c.rank();
  for (int count : {0, 1, 1000, 100000}) {
    std::vector<int> in(count), out(count, -1);
    for (int i = 0; i < count; ++i) in[i] = int_of(me, i);
    c.allreduce(in.data(), out.data(), count, MPI_INT, MPI_SUM, algo);
    bool ok = true;
    for (int i = 0; i < count && ok; ++i) {
      long long sum = 0;
      for (int r = 0; r < n; ++r) sum += int_of(r, i);
      ok = out[i] == sum;
    }
    expect(ok, label + " allreduce sum " + name(algo) + " count " + std::to_string(count));
    // In place, the same sums.
    c.allreduce(MPI_IN_PLACE, in.data(), count, MPI_INT, MPI_SUM, algo);
    expect(ok && in == out, label + " allreduce sum in place " + name(algo) + " count " + std::to_string(count));
  }
  double x = 0.5 * ((me * 7) % n), top = 0;
  c.allreduce(&x, &top, 1, MPI_DOUBLE, MPI_MAX, algo);
  double want_top = 0;
  for (int r = 0; r < n; ++r) want_top = std::max(want_top, 0.5 * ((r * 7) % n));
  expect(top == want_top, label + " allreduce max " + name(algo));

  std::vector<Affine> mine(4), got(4), want(4);
  for (int i = 0; i < 4; ++i) {
    mine[i] = affine_of(me, i);
    want[i] = affine_of(0, i);
    for (int r = 1; r < n; ++r) want[i] = then(want[i], affine_of(r, i));
  }
  c.allreduce(mine.data(), got.data(), 4, t.affine, t.compose, algo);
  bool ok = true;
  for (int i = 0; i < 4; ++i) ok &= got[i].a == want[i].a && got[i].b == want[i].b;
  expect(ok, label + " allreduce non-commutative " + name(algo));
  c.allreduce(MPI_IN_PLACE, mine.data(), 4, t.affine, t.compose, algo);
  ok = true;
  for (int i = 0; i < 4; ++i) ok &= mine[i].a == want[i].a && mine[i].b == want[i].b;
  expect(ok, label + " allreduce in place " + name(algo));
}

void check_allgather(const Comm& c, Algo algo, const std::string& label, const Types& t) {
  const int n = c.size(), me = c.rank();
  for (int count : {0, 1, 1000}) {
    std::vector<int> in(count), out(static_cast<std::size_t>(count) * n, -1);
    for (int i = 0; i < count; ++i) in[i] = int_of(c.global_rank(me), i);
    c.allgather(in.data(), out.data(), count, MPI_INT, algo);
    bool ok = true;
    for (int r = 0; r < n && ok; ++r)
      for (int i = 0; i < count && ok; ++i) ok = out[static_cast<std::size_t>(r) * count + i] == int_of(c.global_rank(r), i);
    expect(ok, label + " allgather " + name(algo) + " count " + std::to_string(count));
    // In place: the contribution is already at this member's place.
    std::vector<int> all(static_cast<std::size_t>(count) * n, -1);
    for (int i = 0; i < count; ++i) all[static_cast<std::size_t>(me) * count + i] = int_of(c.global_rank(me), i);
    c.allgather(MPI_IN_PLACE, all.data(), count, MPI_INT, algo);
    expect(all == out, label + " allgather in place " + name(algo) + " count " + std::to_string(count));
  }
  // One strided element each: member r's 6 ints land in its 9-int slot, holes untouched.
  std::vector<int> mine(9, -7), all(9 * n, -7);
  for (int blk = 0; blk < 3; ++blk)
    for (int j = 0; j < 2; ++j) mine[blk * 3 + j] = int_of(me, blk * 2 + j);
  c.allgather(mine.data(), all.data(), 1, t.strided, algo);
  bool ok = true;
  for (int r = 0; r < n; ++r)
    for (int blk = 0; blk < 3; ++blk) {
      for (int j = 0; j < 2; ++j) ok &= all[r * 9 + blk * 3 + j] == int_of(r, blk * 2 + j);
      ok &= all[r * 9 + blk * 3 + 2] == -7;
    }
  expect(ok, label + " allgather derived type " + name(algo));
}

// Uneven counts with gaps and blocks in reverse rank order: what v-collectives must honour.
struct Uneven {
  std::vector<int> counts, displs;
  int span = 0;
  explicit Uneven(int n, int salt) : counts(n), displs(n) {
    for (int r = 0; r < n; ++r) counts[r] = (r * 3 + salt) % 5 + (r == 1 ? 0 : 1) * (r % 2);  // zeros included
    for (int r = n - 1; r >= 0; --r) {
      displs[r] = span;
      span += counts[r] + 1;  // one element of gap after every block
    }
  }
};
int code(int from, int to, int i) { return from * 100000 + to * 1000 + i; }

void check_gather_scatter(const Comm& c, Algo algo, const std::string& label, const Types& t) {
  const int n = c.size(), me = c.rank(), g = c.global_rank(me);
  for (int root = 0; root < n; ++root) {
    const std::string at = " " + std::string(name(algo)) + " root " + std::to_string(root);
    for (int count : {0, 1, 1000, 20000}) {
      if (count > 1000 && root > 1) continue;
      const std::string what = at + " count " + std::to_string(count);
      std::vector<int> in(count), all(static_cast<std::size_t>(count) * n, -1);
      for (int i = 0; i < count; ++i) in[i] = int_of(g, i);
      c.gather(in.data(), all.data(), count, MPI_INT, root, algo);
      if (me == root) {
        bool ok = true;
        for (int r = 0; r < n; ++r)
          for (int i = 0; i < count; ++i) ok &= all[static_cast<std::size_t>(r) * count + i] == int_of(c.global_rank(r), i);
        expect(ok, label + " gather" + what);
        // In place at the root: its block is already there.
        std::vector<int> place(static_cast<std::size_t>(count) * n, -1);
        std::copy(in.begin(), in.end(), place.begin() + static_cast<std::ptrdiff_t>(me) * count);
        c.gather(MPI_IN_PLACE, place.data(), count, MPI_INT, root, algo);
        expect(place == all, label + " gather in place" + what);
      } else {
        c.gather(in.data(), nullptr, count, MPI_INT, root, algo);
      }
      // Scatter back what was gathered: every member gets its own block.
      std::vector<int> mine(count, -1);
      c.scatter(all.data(), mine.data(), count, MPI_INT, root, algo);
      expect(mine == in, label + " scatter" + what);
      if (me == root) {
        c.scatter(all.data(), MPI_IN_PLACE, count, MPI_INT, root, algo);
      } else {
        std::fill(mine.begin(), mine.end(), -1);
        c.scatter(nullptr, mine.data(), count, MPI_INT, root, algo);
        expect(mine == in, label + " scatter (root in place)" + what);
      }
    }
    // v forms: uneven counts, gaps, reverse order.
    const Uneven u(n, root);
    std::vector<int> in(u.counts[me]);
    for (int i = 0; i < u.counts[me]; ++i) in[i] = int_of(g, i);
    std::vector<int> all(u.span, -7);
    c.gatherv(in.data(), u.counts[me], all.data(), u.counts.data(), u.displs.data(), MPI_INT, root, algo);
    if (me == root) {
      bool ok = true;
      std::vector<int> want(u.span, -7);
      for (int r = 0; r < n; ++r)
        for (int i = 0; i < u.counts[r]; ++i) want[u.displs[r] + i] = int_of(c.global_rank(r), i);
      ok = all == want;
      expect(ok, label + " gatherv" + at);
    } else {
      // The root's buffer is the truth for the scatterv below.
      for (int r = 0; r < n; ++r)
        for (int i = 0; i < u.counts[r]; ++i) all[u.displs[r] + i] = int_of(c.global_rank(r), i);
    }
    std::vector<int> mine(u.counts[me], -1);
    c.scatterv(all.data(), u.counts.data(), u.displs.data(), mine.data(), u.counts[me], MPI_INT, root, algo);
    expect(mine == in, label + " scatterv" + at);
    // A derived type: one strided element each.
    std::vector<int> one(9, -7), gathered(9 * n, -7);
    for (int blk = 0; blk < 3; ++blk)
      for (int j = 0; j < 2; ++j) one[blk * 3 + j] = int_of(g, blk * 2 + j);
    c.gather(one.data(), gathered.data(), 1, t.strided, root, algo);
    if (me == root) {
      bool ok = true;
      for (int r = 0; r < n; ++r)
        for (int k = 0; k < 9; ++k) ok &= gathered[r * 9 + k] == (k % 3 == 2 ? -7 : int_of(c.global_rank(r), (k / 3) * 2 + k % 3));
      expect(ok, label + " gather derived type" + at);
    }
  }
}

void check_allgatherv_alltoall(const Comm& c, Algo algo, const std::string& label, const Types& t) {
  const int n = c.size(), me = c.rank(), g = c.global_rank(me);
  const std::string how = " " + std::string(name(algo));
  const Uneven u(n, 2);
  std::vector<int> in(u.counts[me]), all(u.span, -7), want(u.span, -7);
  for (int i = 0; i < u.counts[me]; ++i) in[i] = int_of(g, i);
  for (int r = 0; r < n; ++r)
    for (int i = 0; i < u.counts[r]; ++i) want[u.displs[r] + i] = int_of(c.global_rank(r), i);
  c.allgatherv(in.data(), u.counts[me], all.data(), u.counts.data(), u.displs.data(), MPI_INT, algo);
  expect(all == want, label + " allgatherv" + how);
  std::vector<int> place(u.span, -7);
  std::copy(in.begin(), in.end(), place.begin() + u.displs[me]);
  c.allgatherv(MPI_IN_PLACE, 0, place.data(), u.counts.data(), u.displs.data(), MPI_INT, algo);
  expect(place == want, label + " allgatherv in place" + how);

  for (int count : {0, 1, 500}) {
    std::vector<int> send(static_cast<std::size_t>(count) * n), recv(send.size(), -1), expected(send.size());
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < count; ++i) {
        send[static_cast<std::size_t>(j) * count + i] = code(g, c.global_rank(j), i);
        expected[static_cast<std::size_t>(j) * count + i] = code(c.global_rank(j), g, i);
      }
    c.alltoall(send.data(), recv.data(), count, MPI_INT, algo);
    expect(recv == expected, label + " alltoall" + how + " count " + std::to_string(count));
    c.alltoall(MPI_IN_PLACE, send.data(), count, MPI_INT, algo);
    expect(send == expected, label + " alltoall in place" + how + " count " + std::to_string(count));
  }
  // v: member a sends (a + 2 b) % 4 ints to member b, blocks with gaps.
  auto f = [](int a, int b) { return (a + 2 * b) % 4; };
  std::vector<int> sc(n), sd(n), rc(n), rd(n);
  int sspan = 0, rspan = 0;
  for (int j = 0; j < n; ++j) {
    sc[j] = f(me, j);
    sd[j] = sspan;
    sspan += sc[j] + 1;
    rc[j] = f(j, me);
    rd[j] = rspan;
    rspan += rc[j] + 2;
  }
  std::vector<int> send(sspan, -3), recv(rspan, -7), expected(rspan, -7);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < sc[j]; ++i) send[sd[j] + i] = code(g, c.global_rank(j), i);
    for (int i = 0; i < rc[j]; ++i) expected[rd[j] + i] = code(c.global_rank(j), g, i);
  }
  c.alltoallv(send.data(), sc.data(), sd.data(), recv.data(), rc.data(), rd.data(), MPI_INT, algo);
  expect(recv == expected, label + " alltoallv" + how);
  // In place (MPI's rule: what goes to member b is recvbuf's block b, so counts must be
  // symmetric): a and b exchange (a + b) % 3 ints, blocks with gaps.
  auto h = [](int a, int b) { return (a + b) % 3; };
  std::vector<int> pc(n), pd(n);
  int pspan = 0;
  for (int j = 0; j < n; ++j) {
    pc[j] = h(me, j);
    pd[j] = pspan;
    pspan += pc[j] + 1;
  }
  std::vector<int> swapped(pspan, -5), swapped_want(pspan, -5);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < pc[j]; ++i) {
      swapped[pd[j] + i] = code(g, c.global_rank(j), i);
      swapped_want[pd[j] + i] = code(c.global_rank(j), g, i);
    }
  c.alltoallv(MPI_IN_PLACE, nullptr, nullptr, swapped.data(), pc.data(), pd.data(), MPI_INT, algo);
  expect(swapped == swapped_want, label + " alltoallv in place" + how);
  // A derived type: one strided element to every member.
  std::vector<int> ds(9 * n, -7), dr(9 * n, -7);
  for (int j = 0; j < n; ++j)
    for (int k = 0; k < 9; ++k)
      if (k % 3 != 2) ds[j * 9 + k] = code(g, c.global_rank(j), k);
  c.alltoall(ds.data(), dr.data(), 1, t.strided, algo);
  bool ok = true;
  for (int j = 0; j < n; ++j)
    for (int k = 0; k < 9; ++k) ok &= dr[j * 9 + k] == (k % 3 == 2 ? -7 : code(c.global_rank(j), g, k));
  expect(ok, label + " alltoall derived type" + how);
}

}  // namespace

// --predictions: with GRIDRT_MODEL set, every member's predictions (so auto's choices) for
// every operation, size, algorithm and root, on the world and on an interleaved split,
// gathered and compared: all members must agree bit for bit.
int check_predictions() {
  const std::vector<std::string> ops = {"barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall", "scan"};
  const Comm world = Comm::world();
  const Comm interleaved = world.split(0, (gridrt::rank() * 7) % gridrt::size());
  int values = 0;
  bool agree = true, known = true;
  for (const Comm* c : {&world, &interleaved}) {
    std::vector<double> mine;
    for (const auto& op : ops)
      for (std::size_t bytes : {std::size_t{0}, std::size_t{8}, std::size_t{65536}, std::size_t{4} << 20})
        for (gridrt::Algo algo : {gridrt::Algo::kHier, gridrt::Algo::kFlat, gridrt::Algo::kAuto})
          for (int root = 0; root < c->size(); ++root) mine.push_back(c->predicted_us(op, bytes, algo, root));
    std::vector<double> all(mine.size() * c->size());
    c->allgather(mine.data(), all.data(), static_cast<int>(mine.size()), MPI_DOUBLE, gridrt::Algo::kHier);
    for (int r = 0; r < c->size(); ++r) agree &= std::memcmp(all.data() + r * mine.size(), mine.data(), mine.size() * sizeof(double)) == 0;
    for (double v : mine) known &= v >= 0;
    values += static_cast<int>(mine.size());
  }
  if (!known) std::fprintf(stderr, "coll_check: rank %d: no prediction (is GRIDRT_MODEL set?)\n", gridrt::rank());
  if (!agree) std::fprintf(stderr, "coll_check: rank %d: the members' predictions differ\n", gridrt::rank());
  if (gridrt::rank() == 0 && agree && known) std::printf("coll_check: %d predictions agree on %d members\n", values, gridrt::size());
  gridrt::finalize();
  return agree && known ? 0 : 1;
}

const char* kUsage = R"(usage: coll_check [--mismatch | --predictions]
A test program run as a job by tests/test_end_to_end.cpp: every grid collective with each
algorithm against references it computes itself; exit 0 with "coll_check: N checks passed".
--mismatch: the last rank passes a larger count to a broadcast, which must fail (exit 3).
--predictions: every member's model predictions (GRIDRT_MODEL) must agree (exit 1 if not).
)";

int main(int argc, char** argv) {
  gridrt_help_if_asked(argc, argv, kUsage);
  try {
    gridrt::init(&argc, &argv);
    if (argc > 1 && std::string(argv[1]) == "--predictions") return check_predictions();
    if (argc > 1 && std::string(argv[1]) == "--mismatch") {
      std::vector<char> buf(1024 + 8, 'x');
      const bool last = gridrt::rank() == gridrt::size() - 1;
      try {
        Comm::world().bcast(buf.data(), last ? 1024 + 8 : 1024, MPI_BYTE, 0);
      } catch (const gridrt::Error& e) {
        std::fprintf(stderr, "coll_check: rank %d: %s\n", gridrt::rank(), e.what());
        return 3;
      }
      gridrt::finalize();
      return 0;
    }
    Types t{};
    MPI_Type_contiguous(2, MPI_INT64_T, &t.affine);
    MPI_Type_commit(&t.affine);
    MPI_Datatype vector;
    MPI_Type_vector(3, 2, 3, MPI_INT, &vector);  // ends after its last block: resized to 9 ints
    MPI_Type_create_resized(vector, 0, 9 * sizeof(int), &t.strided);
    MPI_Type_commit(&t.strided);
    MPI_Type_free(&vector);
    MPI_Op_create(compose, /*commute=*/0, &t.compose);

    const Comm world = Comm::world();
    const Comm copy = world.dup();
    // Even ranks in one, odd in the other, keys reversed.
    const Comm interleaved = world.split(gridrt::rank() % 2, -gridrt::rank());
    // Everyone, odd ranks first: a cluster's members no longer follow each other (the
    // hierarchical reductions must then keep rank order some other way).
    const int n = gridrt::size(), me = gridrt::rank();
    const Comm shuffled = world.split(7, me % 2 == 1 ? me : n + me);
    expect(shuffled.size() == n && shuffled.global_rank(0) == (n > 1 ? 1 : 0), "split reorders by key");
    expect(copy.size() == world.size() && copy.rank() == world.rank(), "dup keeps ranks");
    expect(interleaved.global_rank(interleaved.rank()) == gridrt::rank(), "split: global rank of self");
    for (int r = 1; r < interleaved.size(); ++r)
      expect(interleaved.global_rank(r) < interleaved.global_rank(r - 1) && interleaved.global_rank(r) % 2 == gridrt::rank() % 2,
             "split orders by key, keeps the color");
    const Comm none = world.split(gridrt::rank() == 0 ? 0 : MPI_UNDEFINED, 0);
    expect(none.valid() == (gridrt::rank() == 0), "split with MPI_UNDEFINED gives the null communicator");

    struct Case {
      const Comm* comm;
      const char* label;
    };
    for (const Case& k : {Case{&world, "world"}, Case{&copy, "dup"}, Case{&interleaved, "split"}, Case{&shuffled, "shuffled"}}) {
      for (Algo algo : {Algo::kHier, Algo::kFlat}) {
        check_bcast(*k.comm, algo, k.label, t);
        k.comm->barrier(algo);
        check_reduce(*k.comm, algo, k.label, t);
        check_allreduce(*k.comm, algo, k.label, t);
        check_reduce_scatter(*k.comm, algo, k.label, t);
        check_allgather(*k.comm, algo, k.label, t);
        check_gather_scatter(*k.comm, algo, k.label, t);
        check_allgatherv_alltoall(*k.comm, algo, k.label, t);
        k.comm->barrier(algo);
      }
    }
    int total = 0;
    world.allreduce(&checks, &total, 1, MPI_INT, MPI_SUM);
    if (gridrt::rank() == 0)
      std::printf("coll_check: %d checks passed on %d processes in %d clusters (%d nodes in the first)\n", total, world.size(),
                  world.num_clusters(), world.nodes_in_cluster());
    MPI_Op_free(&t.compose);
    MPI_Type_free(&t.affine);
    MPI_Type_free(&t.strided);
    gridrt::finalize();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coll_check: %s\n", e.what());
    return 1;
  }
  return 0;
}
