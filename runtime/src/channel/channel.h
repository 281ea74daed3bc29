// The point-to-point traffic of one communicator: a grid communicator's user messages (the
// MPI layer's MPI_Send and friends), its collectives' own messages, a task queue's. Peers in
// this process's cluster are reached through MPI on a communicator of the cluster's members
// (MPICH does what it is best at), the others through the transport on the channel's
// context (message_transport.h); the channel hides which, behind one request type and MPI's
// rules of matching (MPI 4.0 §3.5, §3.8):
//
// - messages from one source are received in the order it sent them (each source has one
//   path, and each path keeps order);
// - a receive from MPI_ANY_SOURCE takes whichever matching message it finds first, from
//   either path; while it waits, the channel holds it back, and with it every later receive
//   that could match a message it could match, so that a message always goes to the
//   earliest posted receive that matches it (MPICH-G2 did the same: Karonis, Toonen, Foster,
//   "MPICH-G2: A Grid-enabled implementation of the Message Passing Interface", 2003).
//   Held-back receives move only when progress() runs, which every wait does;
// - a probe and the receives after it choose by one rule: a message a probe returned is
//   taken off its path (with every message its source sent before it, so that the source's
//   order holds) and set aside, and receives and probes look at what is set aside before
//   they look at either path. The next receive that could match a probed message then
//   takes it, wildcard or not, as in an MPI with one queue (programs rely on it: probe
//   from any source, then receive from any source the size the probe said);
// - matched probes, cancellation, and synchronous sends that complete only once the
//   receiver has matched them, on either path.
//
// Data of any datatype; across clusters it travels packed (MPI_Pack), unless its elements
// lie back to back. Ranks are the communicator's: for an intercommunicator, those of its
// remote group. Used by one thread at a time (the application's).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "datatype.h"
#include "progress.h"
#include "transport/message_transport.h"

namespace gridrt::detail {

enum class SendMode { kStandard, kSynchronous, kBuffered, kReady };

struct ChannelStatus {
  int source = MPI_ANY_SOURCE;  // the sender's rank in the channel, or MPI_PROC_NULL
  int tag = MPI_ANY_TAG;
  std::size_t bytes = 0;   // received
  bool truncated = false;  // the message was longer than the receive's buffer (MPI_ERR_TRUNCATE)
  bool cancelled = false;
};

class Channel;

// One send or receive of a channel, whichever way it travels.
class ChannelOp {
 public:
  enum class Path { kDone, kMpi, kRemote, kHeld };
  bool is_receive() const { return receive_; }
  // Whether waiting for it needs MPI to be polled (the transport completes remote ones by
  // itself, and wakes its waiters).
  bool needs_mpi() const { return path_ == Path::kMpi || path_ == Path::kHeld; }

 private:
  friend class Channel;
  Path path_ = Path::kDone;
  bool receive_ = false;
  bool complete_ = false;  // its status is final
  ChannelStatus status_;
  // What it moves: the caller's buffer, as `count` elements of `type`.
  void* buf_ = nullptr;
  int count_ = 0;
  MPI_Datatype type_ = MPI_BYTE;
  int source_ = MPI_ANY_SOURCE, tag_ = MPI_ANY_TAG;  // a receive's pattern
  MPI_Request mpi_ = MPI_REQUEST_NULL;
  std::shared_ptr<RemoteOp> remote_;
  std::vector<char> packed_;  // a remote receive of elements that do not lie back to back
  bool cancelled_ = false;
};
using OpPtr = std::shared_ptr<ChannelOp>;

// A message a matched probe took (MPI_Mprobe): received only by imrecv.
struct ChannelMessage {
  ChannelStatus status;
  MPI_Message mpi = MPI_MESSAGE_NULL;  // on the MPI path
  std::shared_ptr<Arrival> remote;     // on the transport
  bool proc_null = false;              // from MPI_PROC_NULL: receives nothing at once
};
using MessagePtr = std::shared_ptr<ChannelMessage>;

class Channel : public Pollable {
 public:
  // Rank i of the channel is global rank peers[i]; `local` is an MPI communicator holding this
  // process and every peer in its cluster, local_rank[i] peer i's rank there (-1 for peers
  // elsewhere), which the transport reaches on `context`. `job_size`: global ranks are below it.
  Channel(std::vector<int> peers, std::vector<int> local_rank, MPI_Comm local, MessageTransport* transport, std::uint32_t context,
          int job_size);
  ~Channel();
  Channel(const Channel&) = delete;

  int size() const { return static_cast<int>(peers_.size()); }
  MPI_Comm local() const { return local_; }
  MessageTransport* transport() const { return transport_; }
  bool reaches_locally(int peer) const { return local_rank_[peer] >= 0; }
  int local_rank_of(int peer) const { return local_rank_[peer]; }
  // The peer behind a rank of `local` (-1 for none): MPICH's statuses name those.
  int peer_of_local(int r) const { return r >= 0 && r < static_cast<int>(peer_of_local_.size()) ? peer_of_local_[r] : -1; }
  // Peers on both paths: a wildcard receive must look at both.
  bool spans() const { return has_local_ && has_remote_; }

  // dst / src: a rank, MPI_PROC_NULL, or (receiving) MPI_ANY_SOURCE; tag MPI_ANY_TAG when
  // receiving. A bad rank, tag or count throws ArgumentError of the MPI class it is.
  OpPtr isend(const void* buf, int count, MPI_Datatype type, int dst, int tag, SendMode mode = SendMode::kStandard);
  OpPtr irecv(void* buf, int count, MPI_Datatype type, int src, int tag);
  // A receive from any peer in this cluster, through MPI alone (never held back): how a
  // task queue's boss hears its local workers.
  OpPtr irecv_from_cluster(void* buf, int count, MPI_Datatype type, int tag);
  // Completed yet? The status is filled when it is. A failed operation (its peer's cluster
  // lost, the relay gone) throws Error.
  bool test(ChannelOp& op, ChannelStatus* status = nullptr);
  // Asks to withdraw it: a receive nothing matched yet is cancelled, anything else completes
  // as usual (then status.cancelled says which). It must still be completed by test.
  void cancel(ChannelOp& op);
  // Lets an unfinished operation go without completing it (MPI_Request_free). True when its
  // buffer may still be read or written after this: the caller must then keep it alive.
  bool abandon(ChannelOp& op);
  // Probes: whether a message a receive (src, tag) would match is here, and its status. The
  // matched one takes it, for imrecv alone.
  bool iprobe(int src, int tag, ChannelStatus* status);
  MessagePtr improbe(int src, int tag);
  OpPtr imrecv(const MessagePtr& message, void* buf, int count, MPI_Datatype type);

  // Matches held-back receives to what came; true if any moved. Every wait calls it (through
  // the Progress registry while anything is held back).
  bool progress();
  // Receives held back, or messages a probe set aside: a receive must then come through the
  // channel, not straight to MPI.
  bool holds_back() const { return !held_.empty() || !probed_.empty(); }
  // Pollable: registered while it holds receives back.
  bool poll() override;
  bool needs_mpi() const override { return true; }

 private:
  static OpPtr new_receive(void* buf, int count, MPI_Datatype type, int src, int tag, bool from_proc_null_peer);
  void check_peer(int r, bool receiving, const char* what) const;
  void check_tag(int tag, bool receiving) const;
  void post(ChannelOp& op);
  void receive_remote(ChannelOp& op, const std::shared_ptr<Arrival>* taken);
  struct Paths {
    bool local, remote;
  };
  Paths paths_of(int src) const;
  bool local_first(const Paths& p);
  MessagePtr claim(int src, int tag);
  bool peek(int src, int tag, ChannelStatus* found);
  void set_aside(const ChannelStatus& found, int tag);
  std::deque<MessagePtr>::iterator find_probed(int src, int tag);
  MessagePtr take_probed(int src, int tag);
  MessagePtr claim_local(int src, int tag);
  MessagePtr claim_remote(int src, int tag);
  void receive_claimed(ChannelOp& op, const MessagePtr& m);
  ChannelOp* match(ChannelOp& op);
  void hold(const OpPtr& op);
  static bool overlaps(const ChannelOp& a, int source, int tag);
  bool held_back_would_match(int source, int tag) const;
  int peer_of_global(int global) const {
    return global >= 0 && global < static_cast<int>(peer_of_global_.size()) ? peer_of_global_[global] : -1;
  }
  void finish_mpi(ChannelOp& op, const MPI_Status& st, bool truncated);
  void finish_remote(ChannelOp& op);

  std::vector<int> peers_, local_rank_;
  std::vector<int> peer_of_local_;   // rank in `local` -> peer (-1: not a peer)
  std::vector<int> peer_of_global_;  // global rank -> peer (-1: not a peer)
  MPI_Comm local_;
  MessageTransport* transport_;
  std::uint32_t context_;
  int tag_ub_ = 32767;
  bool has_local_ = false, has_remote_ = false;
  std::deque<OpPtr> held_;  // receives held back, in the order they were posted
  bool turn_ = false;       // which path a wildcard looks at first, alternately
  // Messages taken off their paths by probes, in the order each source sent them: the first
  // place receives, probes and matched probes look (only on a channel that spans both paths).
  std::deque<MessagePtr> probed_;
};

}  // namespace gridrt::detail
