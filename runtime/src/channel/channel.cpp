#include "channel.h"

#include <algorithm>

#include "mpi_error.h"

namespace gridrt::detail {

namespace {
ChannelStatus from_proc_null() {
  ChannelStatus st;
  st.source = MPI_PROC_NULL;
  st.tag = MPI_ANY_TAG;
  return st;
}

std::size_t bytes_of(const MPI_Status& st) {
  MPI_Count n = 0;
  MPI_Get_elements_x(&st, MPI_BYTE, &n);
  return n == MPI_UNDEFINED ? 0 : static_cast<std::size_t>(n);
}

bool pattern_matches(int source, int tag, const ChannelStatus& m) {
  return (source == MPI_ANY_SOURCE || source == m.source) && (tag == MPI_ANY_TAG || tag == m.tag);
}
}  // namespace

Channel::Channel(std::vector<int> peers, std::vector<int> local_rank, MPI_Comm local, MessageTransport* transport, std::uint32_t context,
                 int job_size)
    : peers_(std::move(peers)), local_rank_(std::move(local_rank)), local_(local), transport_(transport), context_(context) {
  int local_size = 0;
  if (local_ != MPI_COMM_NULL) MPI_Comm_size(local_, &local_size);
  peer_of_local_.assign(static_cast<std::size_t>(local_size), -1);
  peer_of_global_.assign(static_cast<std::size_t>(job_size), -1);
  for (int i = 0; i < size(); ++i) {
    peer_of_global_[peers_[i]] = i;
    if (local_rank_[i] >= 0) {
      peer_of_local_[local_rank_[i]] = i;
      has_local_ = true;
    } else {
      has_remote_ = true;
    }
  }
  int* ub = nullptr;
  int has = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &has);
  if (has && ub) tag_ub_ = *ub;
}

Channel::~Channel() { progress::remove(this); }

void Channel::check_peer(int r, bool receiving, const char* what) const {
  if (r == MPI_PROC_NULL || (receiving && r == MPI_ANY_SOURCE)) return;
  if (r < 0 || r >= size())
    throw ArgumentError("gridrt: " + std::string(what) + " " + std::to_string(r) + " is not a rank of the communicator (size " +
                            std::to_string(size()) + ")",
                        MPI_ERR_RANK);
}

void Channel::check_tag(int tag, bool receiving) const {
  if (receiving && tag == MPI_ANY_TAG) return;
  if (tag < 0 || tag > tag_ub_)
    throw ArgumentError("gridrt: tag " + std::to_string(tag) + " is outside 0.." + std::to_string(tag_ub_) + " (MPI_TAG_UB)", MPI_ERR_TAG);
}

namespace {
void check_count(int count) {
  if (count < 0) throw ArgumentError("gridrt: a negative count (" + std::to_string(count) + ")", MPI_ERR_COUNT);
}
}  // namespace

// ---------------------------------------------------------------- sending

// A receive of `count` elements of `type` into buf, from (src, tag); complete at once, with
// MPI_PROC_NULL's status, when it is from MPI_PROC_NULL.
OpPtr Channel::new_receive(void* buf, int count, MPI_Datatype type, int src, int tag, bool from_proc_null_peer) {
  auto op = std::make_shared<ChannelOp>();
  op->receive_ = true;
  op->buf_ = buf;
  op->count_ = count;
  op->type_ = type;
  op->source_ = src;
  op->tag_ = tag;
  if (from_proc_null_peer) {
    op->complete_ = true;
    op->status_ = from_proc_null();
  }
  return op;
}

OpPtr Channel::isend(const void* buf, int count, MPI_Datatype type, int dst, int tag, SendMode mode) {
  check_peer(dst, false, "destination");
  check_tag(tag, false);
  check_count(count);
  auto op = std::make_shared<ChannelOp>();
  if (dst == MPI_PROC_NULL) {
    op->complete_ = true;
    op->status_ = from_proc_null();
    return op;
  }
  if (local_rank_[dst] >= 0) {
    const int to = local_rank_[dst];
    int rc = MPI_SUCCESS;
    switch (mode) {
      case SendMode::kStandard: rc = MPI_Isend(buf, count, type, to, tag, local_, &op->mpi_); break;
      case SendMode::kSynchronous: rc = MPI_Issend(buf, count, type, to, tag, local_, &op->mpi_); break;
      case SendMode::kBuffered: rc = MPI_Ibsend(buf, count, type, to, tag, local_, &op->mpi_); break;
      case SendMode::kReady: rc = MPI_Irsend(buf, count, type, to, tag, local_, &op->mpi_); break;
    }
    check_mpi(rc, kMpiInCluster);
    op->path_ = ChannelOp::Path::kMpi;
    return op;
  }
  // Across clusters the transport takes a copy at once; a buffered send is then complete
  // (MPI's Bsend completes locally), a ready send is a standard one.
  const Layout l(type, count);
  std::vector<char> packed;
  const void* data = buf;
  if (!l.contiguous) {
    packed = packed_copy(l, buf);
    data = packed.data();
  }
  try {
    op->remote_ = transport_->send(peers_[dst], context_, tag, data, l.packed, mode == SendMode::kSynchronous);
  } catch (const std::runtime_error& e) { throw Error("gridrt: send to rank " + std::to_string(peers_[dst]) + ": " + e.what()); }
  op->path_ = mode == SendMode::kBuffered ? ChannelOp::Path::kDone : ChannelOp::Path::kRemote;
  return op;
}

// ---------------------------------------------------------------- receiving

bool Channel::overlaps(const ChannelOp& a, int source, int tag) {
  return (a.source_ == MPI_ANY_SOURCE || source == MPI_ANY_SOURCE || a.source_ == source) &&
         (a.tag_ == MPI_ANY_TAG || tag == MPI_ANY_TAG || a.tag_ == tag);
}

bool Channel::held_back_would_match(int source, int tag) const {
  return std::any_of(held_.begin(), held_.end(), [&](const OpPtr& h) { return overlaps(*h, source, tag); });
}

OpPtr Channel::irecv(void* buf, int count, MPI_Datatype type, int src, int tag) {
  check_peer(src, true, "source");
  check_tag(tag, true);
  check_count(count);
  OpPtr op = new_receive(buf, count, type, src, tag, src == MPI_PROC_NULL);
  if (op->complete_) return op;
  // Behind a held-back receive that could take the same message, it waits its turn; a
  // wildcard spanning both paths is held back until something matches it.
  if (held_back_would_match(src, tag)) {
    hold(op);
  } else if (MessagePtr m = take_probed(src, tag)) {
    receive_claimed(*op, m);
  } else if (src == MPI_ANY_SOURCE && spans()) {
    if (!match(*op)) hold(op);
  } else {
    post(*op);
  }
  return op;
}

OpPtr Channel::irecv_from_cluster(void* buf, int count, MPI_Datatype type, int tag) {
  check_tag(tag, true);
  check_count(count);
  OpPtr op = new_receive(buf, count, type, MPI_ANY_SOURCE, tag, false);
  check_mpi(MPI_Irecv(buf, count, type, MPI_ANY_SOURCE, tag, local_, &op->mpi_), kMpiInCluster);
  op->path_ = ChannelOp::Path::kMpi;
  return op;
}

// A receive that nothing ahead of it competes with goes to its path, where MPICH or the
// transport matches it in order with the others posted there.
void Channel::post(ChannelOp& op) {
  if (op.source_ == MPI_ANY_SOURCE ? !has_remote_ : local_rank_[op.source_] >= 0) {
    const int from = op.source_ == MPI_ANY_SOURCE ? MPI_ANY_SOURCE : local_rank_[op.source_];
    check_mpi(MPI_Irecv(op.buf_, op.count_, op.type_, from, op.tag_, local_, &op.mpi_), kMpiInCluster);
    op.path_ = ChannelOp::Path::kMpi;
    return;
  }
  receive_remote(op, nullptr);
}

void Channel::receive_remote(ChannelOp& op, const std::shared_ptr<Arrival>* taken) {
  const Layout l(op.type_, op.count_);
  void* into = op.buf_;
  if (!l.contiguous) {
    op.packed_.resize(l.packed);
    into = op.packed_.data();
  }
  const std::int32_t from = op.source_ == MPI_ANY_SOURCE ? kAnySource : peers_[op.source_];
  op.remote_ = taken ? transport_->mrecv(*taken, into, l.packed) : transport_->recv(into, l.packed, from, context_, op.tag_);
  op.path_ = ChannelOp::Path::kRemote;
}

Channel::Paths Channel::paths_of(int src) const {
  if (src == MPI_ANY_SOURCE) return {has_local_, has_remote_};
  return {local_rank_[src] >= 0, local_rank_[src] < 0};
}

// For a wildcard the two paths are looked at in turn, each first every other time: neither
// can say which message came first, so neither is preferred.
bool Channel::local_first(const Paths& p) {
  turn_ = !turn_;
  return !p.remote || (p.local && turn_);
}

// Takes the oldest message (src, tag) matches that is here: one a probe set aside, else one
// on the paths it may come by (MPI's matched probe inside the cluster, the transport's
// outside).
MessagePtr Channel::claim(int src, int tag) {
  if (MessagePtr m = take_probed(src, tag)) return m;
  const Paths p = paths_of(src);
  const bool local_first = this->local_first(p);
  MessagePtr m = local_first ? claim_local(src, tag) : nullptr;
  if (!m && p.remote) m = claim_remote(src, tag);
  if (!m && p.local && !local_first) m = claim_local(src, tag);
  return m;
}

std::deque<MessagePtr>::iterator Channel::find_probed(int src, int tag) {
  return std::find_if(probed_.begin(), probed_.end(), [&](const MessagePtr& m) { return pattern_matches(src, tag, m->status); });
}

MessagePtr Channel::take_probed(int src, int tag) {
  if (probed_.empty()) return nullptr;
  const auto it = find_probed(src, tag);
  if (it == probed_.end()) return nullptr;
  MessagePtr m = *it;
  probed_.erase(it);
  return m;
}

MessagePtr Channel::claim_local(int src, int tag) {
  int flag = 0;
  MPI_Message msg = MPI_MESSAGE_NULL;
  MPI_Status st;
  check_mpi(MPI_Improbe(src == MPI_ANY_SOURCE ? MPI_ANY_SOURCE : local_rank_[src], tag, local_, &flag, &msg, &st), kMpiInCluster);
  if (!flag) return nullptr;
  auto m = std::make_shared<ChannelMessage>();
  m->mpi = msg;
  m->status.source = peer_of_local_[st.MPI_SOURCE];
  m->status.tag = st.MPI_TAG;
  m->status.bytes = bytes_of(st);
  return m;
}

MessagePtr Channel::claim_remote(int src, int tag) {
  auto a = transport_->improbe(src == MPI_ANY_SOURCE ? kAnySource : peers_[src], context_, tag);
  if (!a) return nullptr;
  auto m = std::make_shared<ChannelMessage>();
  m->remote = a;
  m->status.source = peer_of_global(a->env.source);
  m->status.tag = a->env.tag;
  m->status.bytes = a->total;
  return m;
}

void Channel::receive_claimed(ChannelOp& op, const MessagePtr& m) {
  if (m->remote) return receive_remote(op, &m->remote);
  check_mpi(MPI_Imrecv(op.buf_, op.count_, op.type_, &m->mpi, &op.mpi_), kMpiInCluster);
  op.path_ = ChannelOp::Path::kMpi;
}

// A held-back receive looks for its message itself. A message found goes to the earliest
// held-back receive it matches (it may have come after that one looked), else to `op`.
// Returns the receive that took it, or null when nothing was here.
ChannelOp* Channel::match(ChannelOp& op) {
  MessagePtr m = claim(op.source_, op.tag_);
  if (!m) return nullptr;
  auto h = std::find_if(held_.begin(), held_.end(), [&](const OpPtr& h) { return pattern_matches(h->source_, h->tag_, m->status); });
  ChannelOp* taker = h == held_.end() ? &op : h->get();
  receive_claimed(*taker, m);
  if (h != held_.end()) held_.erase(h);
  return taker;
}

void Channel::hold(const OpPtr& op) {
  op->path_ = ChannelOp::Path::kHeld;
  held_.push_back(op);
  progress::add(this);
}

bool Channel::progress() {
  bool moved = false;
  // Each held-back receive, in posted order, takes what is here for it; whenever one is
  // matched, the pass starts again from the oldest.
  for (std::size_t i = 0; i < held_.size();) {
    if (match(*held_[i])) {
      moved = true;
      i = 0;
    } else {
      ++i;
    }
  }
  // Those that nothing held back ahead of them competes with any more go to their paths
  // (a wildcard spanning both paths stays: only this loop can match it).
  std::deque<OpPtr> still;
  for (auto& op : held_) {
    const bool blocked = std::any_of(still.begin(), still.end(), [&](const OpPtr& h) { return overlaps(*h, op->source_, op->tag_); });
    if (blocked || (op->source_ == MPI_ANY_SOURCE && spans())) {
      still.push_back(op);
      continue;
    }
    post(*op);
    moved = true;
  }
  held_ = std::move(still);
  if (held_.empty()) progress::remove(this);
  return moved;
}

bool Channel::poll() {
  progress();
  return held_.empty();
}

// ---------------------------------------------------------------- completion

void Channel::finish_mpi(ChannelOp& op, const MPI_Status& st, bool truncated) {
  if (op.receive_) {
    op.status_.source =
        st.MPI_SOURCE >= 0 && st.MPI_SOURCE < static_cast<int>(peer_of_local_.size()) ? peer_of_local_[st.MPI_SOURCE] : st.MPI_SOURCE;
    op.status_.tag = st.MPI_TAG;
    op.status_.bytes = bytes_of(st);
    op.status_.truncated = truncated;
  }
  int cancelled = 0;
  MPI_Test_cancelled(&st, &cancelled);
  op.status_.cancelled = cancelled != 0;
}

void Channel::finish_remote(ChannelOp& op) {
  const RemoteOp& r = *op.remote_;
  if (op.receive_) {
    op.status_.source = peer_of_global(r.got.source);
    op.status_.tag = r.got.tag;
    op.status_.bytes = r.bytes;
    op.status_.truncated = r.truncated;
    if (!op.packed_.empty() && r.bytes > 0) {
      // Whole elements only: what a partial one held is not an element of the datatype.
      const Layout one(op.type_, 1);
      const int elements = one.packed ? static_cast<int>(r.bytes / one.packed) : 0;
      int pos = 0;
      PackableBuffer(op.buf_, elements, op.type_).unpack(op.packed_.data(), static_cast<int>(r.bytes), &pos, MPI_COMM_SELF);
    }
    op.packed_ = {};
  }
  op.remote_.reset();
}

bool Channel::test(ChannelOp& op, ChannelStatus* status) {
  while (!op.complete_) {
    switch (op.path_) {
      case ChannelOp::Path::kHeld:
        progress();
        if (op.path_ == ChannelOp::Path::kHeld) return false;
        continue;
      case ChannelOp::Path::kMpi: {
        int flag = 0;
        MPI_Status st;
        const int rc = MPI_Test(&op.mpi_, &flag, &st);
        bool truncated = false;
        if (rc != MPI_SUCCESS) {
          if (mpi_error_class(rc) != MPI_ERR_TRUNCATE) check_mpi(rc, kMpiInCluster);
          truncated = true;
          flag = 1;
        }
        if (!flag) return false;
        finish_mpi(op, st, truncated);
        break;
      }
      case ChannelOp::Path::kRemote:
        try {
          if (!transport_->test(op.remote_)) return false;
        } catch (const std::runtime_error& e) {
          throw Error(std::string("gridrt: ") + (op.receive_ ? "receive from rank " + std::to_string(op.source_) : std::string("send")) +
                      ": " + e.what());
        }
        finish_remote(op);
        break;
      case ChannelOp::Path::kDone: break;
    }
    op.path_ = ChannelOp::Path::kDone;
    op.complete_ = true;
  }
  if (status) *status = op.status_;
  return true;
}

void Channel::cancel(ChannelOp& op) {
  if (op.complete_) return;
  switch (op.path_) {
    case ChannelOp::Path::kHeld:
      held_.erase(std::find_if(held_.begin(), held_.end(), [&](const OpPtr& h) { return h.get() == &op; }));
      if (held_.empty()) progress::remove(this);
      op.path_ = ChannelOp::Path::kDone;
      op.status_.cancelled = true;
      return;
    case ChannelOp::Path::kMpi: check_mpi(MPI_Cancel(&op.mpi_), kMpiInCluster); return;
    case ChannelOp::Path::kRemote:
      if (op.receive_ && transport_->cancel(op.remote_)) {
        op.remote_.reset();
        op.path_ = ChannelOp::Path::kDone;
        op.status_.cancelled = true;
      }
      return;
    case ChannelOp::Path::kDone: return;
  }
}

bool Channel::abandon(ChannelOp& op) {
  if (op.complete_) return false;
  switch (op.path_) {
    case ChannelOp::Path::kMpi:
      MPI_Request_free(&op.mpi_);
      op.path_ = ChannelOp::Path::kDone;
      return true;
    case ChannelOp::Path::kHeld: cancel(op); return false;
    case ChannelOp::Path::kRemote:
      if (op.receive_ && !transport_->cancel(op.remote_)) return true;  // matched: data still comes in
      return false;
    case ChannelOp::Path::kDone: return false;
  }
  return false;
}

// ---------------------------------------------------------------- probes

bool Channel::iprobe(int src, int tag, ChannelStatus* status) {
  check_peer(src, true, "source");
  check_tag(tag, true);
  if (src == MPI_PROC_NULL) {
    *status = from_proc_null();
    return true;
  }
  // A message a held-back receive matches is that receive's (MPI would have matched it to
  // it already): it is handed over and the probe looks again.
  for (int round = 0; round < 8; ++round) {
    if (held_back_would_match(src, tag)) progress();
    if (const auto it = find_probed(src, tag); it != probed_.end()) {
      *status = (*it)->status;
      return true;
    }
    ChannelStatus found;
    if (!peek(src, tag, &found)) return false;
    if (spans()) {
      // The receive that follows may be a wildcard, which looks at both paths: the message
      // is set aside, where it looks first (the next round returns it, unless a held-back
      // receive takes it).
      set_aside(found, tag);
      continue;
    }
    // One path: receives take its messages in the order the probe sees them.
    if (!std::any_of(held_.begin(), held_.end(), [&](const OpPtr& h) { return pattern_matches(h->source_, h->tag_, found); })) {
      *status = found;
      return true;
    }
    progress();
  }
  return false;
}

// The oldest message (src, tag) matches on the paths, left where it is.
bool Channel::peek(int src, int tag, ChannelStatus* found) {
  const Paths p = paths_of(src);
  const bool local_first = this->local_first(p);
  for (const bool local : {local_first, !local_first}) {
    if (local && p.local) {
      int flag = 0;
      MPI_Status st;
      check_mpi(MPI_Iprobe(src == MPI_ANY_SOURCE ? MPI_ANY_SOURCE : local_rank_[src], tag, local_, &flag, &st), kMpiInCluster);
      if (flag) {
        found->source = peer_of_local_[st.MPI_SOURCE];
        found->tag = st.MPI_TAG;
        found->bytes = bytes_of(st);
        return true;
      }
    }
    Envelope env;
    std::size_t total = 0;
    if (!local && p.remote && transport_->iprobe(src == MPI_ANY_SOURCE ? kAnySource : peers_[src], context_, tag, &env, &total)) {
      found->source = peer_of_global(env.source);
      found->tag = env.tag;
      found->bytes = total;
      return true;
    }
  }
  return false;
}

// Takes the message a probe (any source or found.source, tag) found off its path, and with
// it every message its source sent before it: those do not match the probe's tag, but a
// receive that matches them must still get them before the probed one (MPI's order per
// source), and it looks at what is set aside first.
void Channel::set_aside(const ChannelStatus& found, int tag) {
  if (found.source < 0) return;  // (not a peer's: nothing a receive here could take)
  const bool local = local_rank_[found.source] >= 0;
  for (;;) {
    MessagePtr m = local ? claim_local(found.source, MPI_ANY_TAG) : claim_remote(found.source, MPI_ANY_TAG);
    if (!m) return;  // (cannot happen: nothing else takes messages off the paths meanwhile)
    probed_.push_back(m);
    if (tag == MPI_ANY_TAG || m->status.tag == tag) return;
  }
}

MessagePtr Channel::improbe(int src, int tag) {
  check_peer(src, true, "source");
  check_tag(tag, true);
  if (src == MPI_PROC_NULL) {
    auto m = std::make_shared<ChannelMessage>();
    m->proc_null = true;
    m->status = from_proc_null();
    return m;
  }
  // A message a held-back receive matches is that receive's: handed over, and looked again.
  for (;;) {
    if (held_back_would_match(src, tag)) progress();
    MessagePtr m = claim(src, tag);
    if (!m) return nullptr;
    auto h = std::find_if(held_.begin(), held_.end(), [&](const OpPtr& h) { return pattern_matches(h->source_, h->tag_, m->status); });
    if (h == held_.end()) return m;
    receive_claimed(**h, m);
    held_.erase(h);
    if (held_.empty()) progress::remove(this);
  }
}

OpPtr Channel::imrecv(const MessagePtr& message, void* buf, int count, MPI_Datatype type) {
  check_count(count);
  OpPtr op = new_receive(buf, count, type, message->status.source, message->status.tag, message->proc_null);
  if (op->complete_) return op;
  receive_claimed(*op, message);
  return op;
}

}  // namespace gridrt::detail
