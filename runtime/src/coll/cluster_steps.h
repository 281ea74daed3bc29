// The steps of a hierarchical collective inside one cluster part of a grid communicator:
// MPICH non-blocking collectives on `local`, or, when the part spans several nodes, the
// same operation composed over the node level (Coti, Herault, Cappello 2009 §3.1: levels node, cluster, site):
// each node's members meet on their node's communicator (shared memory, MPI_Comm_split_type),
// and one process per node, its leader, speaks for the node to the others. Data enters every
// node once, as it enters every cluster and site once higher up.
//
// A composed operation is a Chain of MPI stages run one after the other (e.g. a broadcast:
// between node leaders, then inside each node). Chains are steps like any other, so a
// pipeline keeps many in flight; MPI wants the collectives on one communicator started in
// the same order everywhere, so every stage takes a ticket in its communicator's order when
// its chain is made (the same order in every member: collectives make their steps in the
// same order) and starts only when its turn has come.
#pragma once

#include <deque>
#include <functional>

#include "coll_support.h"

namespace gridrt::detail {

struct Chain {
  struct Stage {
    int on;  // NodeLevel::kNode or NodeLevel::kLeaders
    std::uint64_t ticket;
    std::function<int(MPI_Request*)> start;  // starts it, returns MPI's code
  };
  CollState* level = nullptr;  // its communicator's: the chains in flight there
  std::vector<Stage> stages;
  std::size_t next = 0;  // the stage to start when the current one has completed
  MPI_Request current = MPI_REQUEST_NULL;
  bool done = false;
  std::deque<Scratch> scratch;  // partial results held between stages
};

// Each returns a step that completes when this member's part is done; the arguments mean
// what they mean for the MPI call named, on `local` (roots are ranks in `local`).
Step cluster_bcast(CommImpl& c, void* buf, int count, MPI_Datatype type, int root);
// MPI_Ireduce; sendbuf may be MPI_IN_PLACE at the root.
Step cluster_reduce(CommImpl& c, const void* sendbuf, void* recvbuf, const Layout& l, MPI_Op op, int root);
Step cluster_allreduce(CommImpl& c, const void* sendbuf, void* recvbuf, const Layout& l, MPI_Op op);
// A barrier in two halves, for a grid barrier that does its wide-area part in between:
// after `arrive` completes at the part's leader (local rank 0), every member has arrived;
// `release` completes at a member once the leader has joined it.
Step cluster_arrive(CommImpl& c);
Step cluster_release(CommImpl& c);
Async<> cluster_barrier(CommImpl& c);
// MPI_Igatherv of bytes at `root`: every member's `mine`, returned at the root in local rank
// order (empty elsewhere). `known`: every member's size, when everyone knows them (else
// they are gathered first); `block`: every member's size when all are alike and every member
// knows it (else kSizeNotShared), on which composing or not depends. `into`: where the root
// wants the blocks, `room` bytes, MPICH gathering straight there where the blocks fill it
// exactly; the result is then empty (else the blocks, as above).
Async<std::vector<char>> cluster_gatherv(CommImpl& c, const std::vector<char>& mine, int root, const std::vector<std::size_t>* known,
                                         std::size_t block, char* into = nullptr, std::size_t room = 0);
// MPI_Iallgatherv of bytes: every member's `mine` (sizes[m] bytes for member m, known to
// all), returned to every member in local rank order. MPICH's own algorithm over the whole
// part, also when it spans several nodes. `into`: where every member wants them (room for
// all), MPICH gathering straight there; the result is then empty.
Async<std::vector<char>> cluster_allgatherv(CommImpl& c, const std::vector<char>& mine, const std::vector<std::size_t>& sizes,
                                            char* into = nullptr);
// MPI_Iscatterv of bytes from `root`: member m gets sizes[m] bytes of `blob` (both in local
// rank order, at the root only; blob may go on beyond them), into `got`, which holds what
// this member expects (got_bytes); `block` as cluster_gatherv's. Both may be the caller's
// own buffers: MPICH scatters from and into them without a copy of ours.
Async<> cluster_scatterv(CommImpl& c, const char* blob, const std::vector<std::size_t>& sizes, int root, char* got, std::size_t got_bytes,
                         std::size_t block);

// Phase one of the Local Group all-to-alls (alltoallv_local_group*.cpp): every member of
// the part parks on each member a of the part its blocks for the ranks parked(k, a), k and
// a being indices in the part (the same lists in every member), in one MPI_Ialltoallv
// (after one of the blocks' sizes, unless all blocks are `equal`). What was parked here,
// by member k, as its t-th block: block(k, t), size(k, t) bytes, for rank ranks[k][t].
struct Parked {
  std::vector<char> data;
  std::vector<std::vector<std::size_t>> at;  // at[k][t] .. at[k][t + 1] in data
  std::vector<std::vector<int>> ranks;       // parked(k, this member)
  const char* block(int k, std::size_t t) const { return data.data() + at[k][t]; }
  std::size_t size(int k, std::size_t t) const { return at[k][t + 1] - at[k][t]; }
};
using ParkedOn = std::function<std::vector<int>(int k, int a)>;
Async<Parked> park_in_part(CommImpl& c, const Blocks& in, bool equal, const ParkedOn& parked);

// Chain steps are advanced here (comm.cpp's wait loops call it, `pass` counting their passes
// over the steps waited on): once per pass, starts the stages whose turn has come across
// every chain in flight on the level. True when `chain` is done.
bool advance(Chain& chain, std::uint64_t pass);

}  // namespace gridrt::detail
