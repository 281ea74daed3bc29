// Inside a grid communicator: who its members are, the topology below it, and the
// point-to-point steps its collectives are made of (MPI inside a cluster, the relay
// transport across clusters; design.md, "Collectives").
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "state.h"

namespace gridrt::detail {

struct CommImpl {
  std::vector<int> members;  // global rank of each member, by rank here
  int me = -1;               // this process's rank here
  std::uint32_t context = 0; // its traffic through the relays (frame header context)
  MPI_Comm local = MPI_COMM_NULL;  // the members in this process's cluster, in rank order here

  // The topology below it (seed 001 §3.1), worked out once: the clusters holding members,
  // numbered by their first member ("parts"), the members of each in rank order, and each
  // member's part and rank in its part's `local`. A part's leader is its first member.
  std::vector<std::vector<int>> parts;
  std::vector<int> part_of;
  std::vector<int> index_in_part;
  bool parts_contiguous = true;  // every part is a run of consecutive ranks

  std::uint64_t calls = 0;  // collectives called so far: each one's messages carry its tag

  CommImpl() = default;
  CommImpl(const CommImpl&) = delete;
  ~CommImpl();

  int size() const { return static_cast<int>(members.size()); }
  int my_part() const { return part_of[me]; }
  int leader(int part) const { return parts[part].front(); }
  bool is_leader() const { return leader(my_part()) == me; }
  // A tag for the messages of the next collective, the same in every member (they call
  // collectives in the same order); within one collective, messages between two members
  // keep their order (MPI's non-overtaking rule, and the transport's per-stream order).
  int next_tag() { return static_cast<int>(calls++ % (static_cast<std::uint64_t>(std::min(state().tag_ub, kMaxTag)) + 1)); }

  // `members` in rank order, me and local set: the rest follows.
  void work_out_topology();
  static std::shared_ptr<CommImpl> make_world();
};

// One point-to-point step of a collective between two members: an MPI request on `local`
// when both are in this cluster, a remote operation through the relays otherwise.
struct Step {
  MPI_Request mpi = MPI_REQUEST_NULL;
  std::shared_ptr<RemoteOp> remote;
  bool done = false;
};
Step send_to(CommImpl& c, int dst, int tag, const void* data, std::size_t bytes);
Step receive_from(CommImpl& c, int src, int tag, void* data, std::size_t bytes);
// An MPI collective already started on `local`, as a step.
inline Step local_step(MPI_Request r) { return Step{r, nullptr, false}; }
// Waits for every step: MPI ones tested under the wait policy, remote ones completed by
// the transport's thread (blocking on it when nothing else is pending).
void wait_steps(std::vector<Step>& steps);
void wait_step(Step s);
// Waits for `s` while keeping the MPI steps of `background` moving (a pipeline's earlier
// stages must progress while a later slice is awaited).
void wait_step_amid(Step& s, std::vector<Step>& background);

}  // namespace gridrt::detail
