// The multi-level task queue (gridrt/queue.hpp; docs/queues.md; Coti, Herault, Cappello 2009 §3.3, Figure 4).
//
// Every member is a node of one tree built from the topology: the super-master at the
// root, a boss for each group of each level below it (the root leads the groups it is in),
// workers at the leaves. A node talks only to its parent and its children, with the
// messages of protocol.h over a private duplicate of the communicator (MPI inside a
// cluster, the relays across clusters). The super-master keeps the Ledger (exactly once,
// requeue, termination); a boss keeps a pool of tasks fetched from above and serves its
// children from it, asking for the next chunk before it runs dry (ChunkSizer) so that the
// round trip to the level above is hidden. Single-threaded: everything moves inside the
// application's calls.
#include "gridrt/queue.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <unordered_map>

#include "access.h"
#include "comm.h"
#include "chunking.h"
#include "ledger.h"
#include "protocol.h"

namespace gridrt::detail {

namespace {
constexpr int kToParent = 1;
constexpr int kToChild = 2;
// A boss sends the results it gathered up at the latest this long after the first of them
// (or sooner: with a request, with tasks its children spawned, or when it has no task left).
constexpr double kFlushAge = 0.05;
// Waiting in next() for tasks or requests, when workers hold two tasks or more: a short
// yield, then sleeps up to kIdleSleepMax (state.h, Pause). A worker with a next task in hand
// is not left idle by a server that wakes a little late, while servers that yield for long
// take the CPU from the very workers they wait for (on this 2-core machine raytrace's phase
// 2 took 1.5x as long with the collectives' wait, docs/benchmarks.md).
constexpr std::chrono::microseconds kIdleYield{50};
constexpr int kIdleSleepMax = 250;

double seconds_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

class QueueNode : public ReleasedAtFinalize {
 public:
  QueueNode(const Comm& comm, QueueOptions o);
  ~QueueNode() override;
  // Its receives cancelled and its sends let go: what the destructor does, and what
  // finalize does while MPI is up, should the queue outlive it.
  void release() override;

  bool is_master() const { return parent_ < 0; }
  bool is_boss() const { return !children_.empty(); }
  void on_result(TaskQueue::ResultHandler h) { handler_ = std::move(h); }
  TaskId put(const void* data, std::size_t bytes);
  std::optional<Task> next();
  void done(const Task& t, const void* result, std::size_t bytes);
  void poll() { progress(); }
  const QueueStats& stats() const { return stats_; }

 private:
  // One posted receive: from any local child, from one remote child, or from the parent.
  struct Inbox {
    std::unique_ptr<char[]> buf;
    OpPtr op;
    int from = -1;  // the member it receives from; -1: any local child
    int tag = 0;
  };
  struct Child {
    int rank = -1;
    std::uint32_t want = 0;  // tasks it asked for, not yet answered
    bool lost = false;
    bool remote = false;          // in another cluster: it may be lost while this node goes on
    std::uint32_t subtree = 1;    // processes at and below it
    std::uint32_t producers = 0;  // of them, those that said they put no more
    // Below the top, for a remote child: the tasks handed to it whose results have not come
    // back through here, by id (with the order they were handed in), to take back if its
    // cluster is lost. The super-master's Ledger keeps this for its own children.
    std::unordered_map<TaskId, std::pair<std::uint64_t, queue::Task>> holds;
  };
  struct Outgoing {
    int to = -1;
    std::string bytes;
    OpPtr op;
  };

  void build_tree();
  void post(Inbox& in);
  bool test(Inbox& in, int* from, std::size_t* bytes);
  void cancel(Inbox& in);
  void send(int to, int tag, std::string bytes);
  bool progress();
  template <typename Message> Message decoded(const Inbox& in, int from, std::size_t bytes, Message (*decode)(const char*, std::size_t));
  void from_child(Inbox& in, int from, std::size_t bytes);
  void on_up(Child& c, queue::UpMessage m);
  void on_down(queue::DownMessage m);
  void child_lost(Child& c, const std::string& error);
  void take_result(int holder, TaskId id, const char* data, std::size_t bytes);
  queue::UpMessage& outbox();
  bool serve();
  bool send_up();
  void finish_all();
  void complete_sends(bool wait);
  void check_size(std::size_t bytes, const char* what) const;
  int consumers() const;
  std::size_t live_children() const;
  bool works() const { return is_master() ? o_.master_works : !is_boss() || o_.bosses_work; }

  Comm comm_;
  CommImpl* c_;
  QueueOptions o_;
  int parent_ = -1;
  std::vector<Child> children_;
  std::map<int, std::size_t> child_index_;  // member -> index in children_
  bool has_local_children_ = false;

  Inbox from_local_children_;
  std::vector<Inbox> from_remote_children_;
  Inbox from_parent_;
  std::deque<Outgoing> sending_;

  // At the super-master.
  queue::Ledger ledger_;
  TaskQueue::ResultHandler handler_;
  // At the others: tasks from above not yet run or handed down; what goes up next.
  std::deque<queue::Task> pool_;
  queue::UpMessage out_;
  double out_since_ = 0;
  bool asked_ = false;  // a request for tasks is on its way up
  double asked_at_ = 0;
  queue::ChunkSizer own_;  // this node's consumption rate and round trip

  bool finished_ = false;
  bool said_done_putting_ = false;
  std::optional<TaskId> running_;
  std::uint64_t spawned_ = 0;  // children put by the running task
  std::uint64_t root_puts_ = 0;
  std::uint64_t handed_ = 0;  // tasks handed down so far (Child::holds' order)
  QueueStats stats_;
};

QueueNode::QueueNode(const Comm& comm, QueueOptions o)
    : comm_(comm.dup()),
      c_(&Access::impl(comm_)),
      o_(std::move(o)),
      ledger_(o_.crash_limit),
      own_(queue::ChunkLimits{o_.first_chunk, 1, o_.max_chunk, o_.horizon_s}) {
  if (o_.root < 0 || o_.root >= c_->size())
    throw ArgumentError("gridrt: task queue root " + std::to_string(o_.root) + " is not a member (size " + std::to_string(c_->size()) +
                        ")");
  if (o_.max_message < 4096) throw ArgumentError("gridrt: task queue max_message below 4096 bytes");
  if (o_.max_chunk < 1 || o_.first_chunk < 1) throw ArgumentError("gridrt: task queue chunks of no task");
  if (o_.worker_window < 0) throw ArgumentError("gridrt: negative task queue worker_window");
  if (o_.worker_window == 0) o_.worker_window = o_.levels.empty() ? 1 : 2;
  build_tree();
  if (is_master()) ledger_.add_producers(c_->size());
  if (has_local_children_) post(from_local_children_);
  for (auto& in : from_remote_children_) post(in);
  if (parent_ >= 0) post(from_parent_);
}

QueueNode::~QueueNode() { release(); }

void QueueNode::release() {
  // Left before the end (an exception in the application, or still in scope at finalize):
  // nothing may still write into these buffers once they are gone.
  cancel(from_local_children_);
  for (auto& in : from_remote_children_) cancel(in);
  cancel(from_parent_);
  // A send still under way keeps its buffer: MPI may read it after the request is freed,
  // so the bytes are left to the end of the process rather than freed under it.
  for (auto& s : sending_)
    if (s.op && c_->channel->abandon(*s.op)) new std::string(std::move(s.bytes));
  sending_.clear();
}

// The tree (Coti, Herault, Cappello 2009 Figure 4): for each level, the members with the same colors down to it
// form a group led by the root if it is in it, else by its first member. A member's parent
// is the leader of its deepest group it does not lead, else the root.
void QueueNode::build_tree() {
  const int n = c_->size();
  const std::size_t levels = o_.levels.size();
  // leader[d][r]: the leader of r's group at levels[0..d] (its colors down to d).
  std::vector<std::vector<int>> leader(levels, std::vector<int>(n));
  std::vector<std::vector<int>> key(n);
  for (std::size_t d = 0; d < levels; ++d) {
    std::map<std::vector<int>, int> first;
    for (int r = 0; r < n; ++r) key[r].push_back(level_color(o_.levels[d], c_->members[r]));
    first.emplace(key[o_.root], o_.root);  // the root leads its own groups
    for (int r = 0; r < n; ++r) leader[d][r] = first.emplace(key[r], r).first->second;
  }
  std::vector<int> parent(n, o_.root);
  parent[o_.root] = -1;
  for (int r = 0; r < n; ++r)
    for (std::size_t d = levels; d-- > 0;)
      if (leader[d][r] != r) {
        parent[r] = leader[d][r];
        break;
      }
  std::vector<std::uint32_t> subtree(n, 1);
  for (int r = 0; r < n; ++r)
    for (int a = parent[r]; a >= 0; a = parent[a]) ++subtree[a];
  for (int r = 0; r < n; ++r) {
    const int p = parent[r];
    if (r == c_->me) parent_ = p;
    if (p != c_->me) continue;
    Child ch;
    ch.rank = r;
    ch.subtree = subtree[r];
    const bool local = c_->part_of[r] == c_->my_part();
    ch.remote = !local;
    has_local_children_ = has_local_children_ || local;
    child_index_[r] = children_.size();
    children_.push_back(ch);
    if (!local) {
      Inbox in;
      in.from = r;
      from_remote_children_.push_back(std::move(in));
    }
  }
  from_local_children_.tag = kToParent;
  for (auto& in : from_remote_children_) in.tag = kToParent;
  from_parent_.from = parent_;
  from_parent_.tag = kToChild;
}

void QueueNode::post(Inbox& in) {
  if (!in.buf) in.buf.reset(new char[o_.max_message]);  // not zeroed: untouched pages cost nothing
  Channel& ch = *c_->channel;
  const int size = static_cast<int>(o_.max_message);
  in.op =
      in.from < 0 ? ch.irecv_from_cluster(in.buf.get(), size, MPI_BYTE, in.tag) : ch.irecv(in.buf.get(), size, MPI_BYTE, in.from, in.tag);
}

bool QueueNode::test(Inbox& in, int* from, std::size_t* bytes) {
  ChannelStatus st;
  if (!in.op || !c_->channel->test(*in.op, &st)) return false;
  in.op.reset();
  *from = st.source;
  *bytes = st.bytes;
  return true;
}

void QueueNode::cancel(Inbox& in) {
  if (!in.op) return;
  Channel& ch = *c_->channel;
  ch.cancel(*in.op);
  // Matched already, its data is on its way into the buffer, which must outlive it.
  try {
    wait_until(state().messages, [&] { return Waited{ch.test(*in.op), in.op->needs_mpi()}; });
  } catch (const Error&) {}
  in.op.reset();
}

void QueueNode::send(int to, int tag, std::string bytes) {
  if (to == parent_) ++stats_.sent_up;
  else ++stats_.sent_down;
  Outgoing s;
  s.to = to;
  s.bytes = std::move(bytes);
  s.op = c_->channel->isend(s.bytes.data(), static_cast<int>(s.bytes.size()), MPI_BYTE, to, tag);
  sending_.push_back(std::move(s));
}

void QueueNode::complete_sends(bool wait) {
  Channel& ch = *c_->channel;
  while (!sending_.empty()) {
    Outgoing& s = sending_.front();
    try {
      if (wait) wait_until(state().messages, [&] { return Waited{ch.test(*s.op), s.op->needs_mpi()}; });
      else if (!ch.test(*s.op)) return;
    } catch (const Error&) {
      // To a lost cluster: its loss is dealt with where its messages are awaited.
      if (!cluster_lost(c_->members[s.to])) throw;
    }
    sending_.pop_front();
  }
}

void QueueNode::check_size(std::size_t bytes, const char* what) const {
  if (bytes + queue::kItemCost + queue::kHeaderCost > o_.max_message)
    throw ArgumentError(std::string("gridrt: a task queue ") + what + " of " + std::to_string(bytes) +
                        " bytes does not fit in max_message (" + std::to_string(o_.max_message) + " bytes)");
}

// One pass over everything that may have arrived, then the answers it calls for. True if
// anything moved.
bool QueueNode::progress() {
  bool moved = false;
  int from = -1;
  std::size_t bytes = 0;
  if (has_local_children_) {
    while (test(from_local_children_, &from, &bytes)) {
      from_child(from_local_children_, from, bytes);
      moved = true;
    }
  }
  for (auto& in : from_remote_children_) {
    Child& child = children_[child_index_.at(in.from)];
    if (child.lost) continue;
    try {
      if (!test(in, &from, &bytes)) continue;
    } catch (const Error& e) {
      child_lost(child, e.what());
      moved = true;
      continue;
    }
    from_child(in, from, bytes);
    moved = true;
  }
  bool from_above = false;
  try {
    from_above = parent_ >= 0 && !finished_ && test(from_parent_, &from, &bytes);
  } catch (const Error& e) {
    const std::optional<std::string> why = cluster_lost(c_->members[parent_]);
    if (!why) throw;
    throw Error("gridrt: task queue: the level above this process (rank " + std::to_string(c_->members[parent_]) + ") is gone: " + *why);
  }
  if (from_above) {
    queue::DownMessage m = decoded(from_parent_, from, bytes, queue::decode_down);
    if (!m.finish) post(from_parent_);
    on_down(std::move(m));
    moved = true;
  }
  moved = serve() || moved;
  if (is_master()) {
    if (!finished_ && ledger_.finished()) finish_all();
  } else {
    moved = send_up() || moved;
  }
  complete_sends(false);
  return moved;
}

// The message `in` holds from member `from`; garbage is an Error naming the sender.
template <typename Message>
Message QueueNode::decoded(const Inbox& in, int from, std::size_t bytes, Message (*decode)(const char*, std::size_t)) {
  try {
    return decode(in.buf.get(), bytes);
  } catch (const queue::ProtocolError& e) {
    throw Error("gridrt: task queue message from rank " + std::to_string(c_->members[from]) + ": " + e.what());
  }
}

// A child's message arrived in `in`: taken, and `in` waits for the next.
void QueueNode::from_child(Inbox& in, int from, std::size_t bytes) {
  queue::UpMessage m = decoded(in, from, bytes, queue::decode_up);
  post(in);
  on_up(children_[child_index_.at(from)], std::move(m));
}

// A child's message: its spawned tasks first, then its results (protocol.h), then who will
// put no more, then its request.
void QueueNode::on_up(Child& c, queue::UpMessage m) {
  c.producers += m.producers_done;
  if (is_master()) {
    for (auto& t : m.puts) ledger_.put(std::move(t));
    for (auto& r : m.results) take_result(c.rank, r.id, r.data.data(), r.data.size());
    ledger_.producers_done(static_cast<int>(m.producers_done));
  } else {
    queue::UpMessage& out = outbox();
    for (auto& t : m.puts) out.puts.push_back(std::move(t));
    for (auto& r : m.results) {
      c.holds.erase(r.id);
      out.results.push_back(std::move(r));
    }
    out.producers_done += m.producers_done;
  }
  if (m.want > 0) c.want = m.want;
}

// At the super-master: the result of task `id` from `holder` (a child, or itself), to the
// handler the first time.
void QueueNode::take_result(int holder, TaskId id, const char* data, std::size_t bytes) {
  switch (ledger_.complete(holder, id)) {
    case queue::Ledger::Result::kTaken:
      ++stats_.results;
      if (handler_) handler_(id, data, bytes);
      break;
    case queue::Ledger::Result::kDuplicate: ++stats_.duplicates; break;
    case queue::Ledger::Result::kUnknown:
      throw Error("gridrt: task queue: rank " + std::to_string(c_->members[holder]) + " returned a result for task " + std::to_string(id) +
                  ", which it was never given");
  }
}

// Below the top: what goes up next, its age counted from the first thing put in it.
queue::UpMessage& QueueNode::outbox() {
  if (out_.empty()) out_since_ = seconds_now();
  return out_;
}

void QueueNode::on_down(queue::DownMessage m) {
  asked_ = false;
  if (m.finish) {
    for (auto c : m.lost) mark_cluster_lost(c, "lost while the task queue ran (its super-master found)");
    if (!pool_.empty())
      throw Error("gridrt: task queue: told to finish by rank " + std::to_string(c_->members[parent_]) + " while holding " +
                  std::to_string(pool_.size()) + " tasks");
    finish_all();
    return;
  }
  own_.round_trip(seconds_now() - asked_at_);
  for (auto& t : m.tasks) pool_.push_back(std::move(t));
}

// Answers the children's requests: each at most its share of what waits here, so that the
// last tasks are spread over the children rather than queued behind one (Coti, Herault, Cappello 2009 §3.3,
// load balancing across queues); a request that finds nothing waits for tasks to come.
bool QueueNode::serve() {
  bool moved = false;
  const std::size_t live = live_children();
  for (auto& c : children_) {
    if (c.want == 0 || c.lost) continue;
    const std::size_t waiting = is_master() ? ledger_.waiting() : pool_.size();
    if (waiting == 0) break;
    const std::size_t n = queue::fair_share(c.want, waiting, live);
    const std::size_t room = o_.max_message - queue::kHeaderCost;
    queue::DownMessage m;
    if (is_master()) {
      for (auto& t : ledger_.take(c.rank, n, room, queue::kItemCost)) m.tasks.push_back(std::move(t));
    } else {
      std::size_t bytes = 0;
      while (!pool_.empty() && m.tasks.size() < n && (m.tasks.empty() || bytes + pool_.front().payload.size() + queue::kItemCost <= room)) {
        bytes += pool_.front().payload.size() + queue::kItemCost;
        if (c.remote) c.holds.emplace(pool_.front().id, std::make_pair(handed_++, pool_.front()));
        m.tasks.push_back(std::move(pool_.front()));
        pool_.pop_front();
      }
      own_.completed(m.tasks.size(), seconds_now());
    }
    c.want = 0;
    send(c.rank, kToChild, queue::encode(m));
    moved = true;
  }
  return moved;
}

// Processes whose tasks this node runs or hands down: its children not lost and, if it
// works, itself.
int QueueNode::consumers() const { return static_cast<int>(live_children()) + (works() ? 1 : 0); }

std::size_t QueueNode::live_children() const {
  return static_cast<std::size_t>(std::count_if(children_.begin(), children_.end(), [](const Child& c) { return !c.lost; }));
}

// What goes up: a request when this node will soon run dry (a worker: below its window; a
// boss: when what it has would not outlast a round trip, ChunkSizer::should_prefetch), with
// everything gathered so far; without a request, gathered results once they are many or
// old, and at once tasks spawned below (they may be the only work left), the producers'
// end, and everything when nothing is left here (the end of the queue is near).
bool QueueNode::send_up() {
  if (finished_ || is_master()) return false;
  std::uint32_t want = 0;
  if (!asked_ && said_done_putting_) {
    if (!is_boss()) {
      const std::size_t held = pool_.size() + (running_ ? 1 : 0);
      if (held < static_cast<std::size_t>(o_.worker_window)) want = static_cast<std::uint32_t>(o_.worker_window - held);
    } else if (queue::ChunkSizer::should_prefetch(pool_.size(), own_.rate(), own_.rtt(), consumers())) {
      const std::size_t chunk = own_.chunk() + static_cast<std::size_t>(consumers());
      want = static_cast<std::uint32_t>(std::min(o_.max_chunk - std::min(o_.max_chunk - 1, pool_.size()), chunk));
    }
  }
  const bool urgent =
      !out_.puts.empty() || out_.producers_done > 0 ||
      (!out_.results.empty() && (pool_.empty() || seconds_now() - out_since_ > kFlushAge || out_.results.size() >= o_.max_chunk));
  if (want == 0 && !(urgent && !out_.empty())) return false;
  // Cut into messages that fit, puts before results; the request rides on the last.
  const std::size_t room = o_.max_message - queue::kHeaderCost;
  while (true) {
    queue::UpMessage m;
    std::size_t bytes = 0;
    auto fits = [&](std::size_t n) { return bytes + n + queue::kItemCost <= room; };
    std::size_t puts = 0, results = 0;
    while (puts < out_.puts.size() && fits(out_.puts[puts].payload.size())) bytes += out_.puts[puts++].payload.size() + queue::kItemCost;
    if (puts == out_.puts.size())
      while (results < out_.results.size() && fits(out_.results[results].data.size()))
        bytes += out_.results[results++].data.size() + queue::kItemCost;
    const bool last = puts == out_.puts.size() && results == out_.results.size();
    m.puts.assign(std::make_move_iterator(out_.puts.begin()), std::make_move_iterator(out_.puts.begin() + static_cast<long>(puts)));
    out_.puts.erase(out_.puts.begin(), out_.puts.begin() + static_cast<long>(puts));
    m.results.assign(std::make_move_iterator(out_.results.begin()),
                     std::make_move_iterator(out_.results.begin() + static_cast<long>(results)));
    out_.results.erase(out_.results.begin(), out_.results.begin() + static_cast<long>(results));
    if (last) {
      m.producers_done = std::exchange(out_.producers_done, 0);
      m.want = want;
    }
    send(parent_, kToParent, queue::encode(m));
    if (last) break;
  }
  if (want > 0) {
    asked_ = true;
    asked_at_ = seconds_now();
  }
  return true;
}

// The end, passed down with the clusters this process knows lost (the super-master's, and
// so everyone's below: each marks them before it passes them on).
void QueueNode::finish_all() {
  finished_ = true;
  queue::DownMessage m{true, {}, {}};
  for (const std::uint32_t cluster : lost_cluster_indices()) m.lost.push_back(cluster);
  const std::string bytes = queue::encode(m);
  for (auto& c : children_)
    if (!c.lost) send(c.rank, kToChild, bytes);
}

// A child's messages cannot come: if its cluster was lost (gridrt::lost_clusters), what it
// held goes to the others and its processes count as done putting. At the super-master
// that is the Ledger's (Ledger::lose: a task lost with more than crash_limit clusters fails
// instead); a boss below the top (a site's, whose child is another cluster of the site)
// puts what it handed that child and got no result for back at the front of its pool, for
// its other children or itself; the level above still counts those tasks as this boss's.
// A boss left with nobody to run them, or anything else, is an Error naming it.
void QueueNode::child_lost(Child& c, const std::string& error) {
  const int rank = c_->members[c.rank];
  const std::optional<std::string> why = cluster_lost(rank);
  if (!why) throw Error(error);
  if (!o_.requeue_lost)
    throw Error("gridrt: task queue: " + *why + "; its tasks are not handed to others (QueueOptions::requeue_lost is off)");
  c.lost = true;
  c.want = 0;
  const std::uint32_t silent = c.subtree - c.producers;
  c.producers = c.subtree;
  if (is_master()) {
    stats_.requeued += ledger_.lose(c.rank);
    ledger_.producers_done(static_cast<int>(silent));
    return;
  }
  if (!c.holds.empty() && consumers() == 0)
    throw Error("gridrt: task queue: " + *why + "; no other process below rank " + std::to_string(c_->members[c_->me]) + " can run the " +
                std::to_string(c.holds.size()) + " task(s) it held");
  std::vector<std::pair<std::uint64_t, queue::Task>> back;
  for (auto& [id, held] : c.holds) back.push_back(std::move(held));
  c.holds.clear();
  std::sort(back.begin(), back.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (auto& [order, t] : back) pool_.push_front(std::move(t));  // the first handed out ends up first
  stats_.requeued += back.size();
  if (silent > 0) outbox().producers_done += silent;
}

TaskId QueueNode::put(const void* data, std::size_t bytes) {
  check_size(bytes, "task");
  TaskId id;
  if (running_) {
    id = queue::child_id(*running_, spawned_++);
  } else {
    if (said_done_putting_)
      throw ArgumentError(
          "gridrt: TaskQueue::put outside a task after this process's first next(): put tasks before it, or "
          "from inside a task (as its children)");
    id = queue::root_id(c_->me, root_puts_++);
  }
  queue::Task t{id, std::vector<char>(static_cast<const char*>(data), static_cast<const char*>(data) + bytes)};
  ++stats_.put;
  if (is_master()) ledger_.put(std::move(t));
  else outbox().puts.push_back(std::move(t));
  return id;
}

std::optional<Task> QueueNode::next() {
  if (running_) throw ArgumentError("gridrt: TaskQueue::next before done() of task " + std::to_string(*running_));
  if (!said_done_putting_) {
    said_done_putting_ = true;
    if (is_master()) ledger_.producers_done();
    else ++outbox().producers_done;
  }
  std::optional<Pause> pause;
  while (true) {
    detail::progress::poll_all();  // (what else the process has in flight moves on meanwhile)
    const bool moved = progress();
    if (works()) {
      std::optional<queue::Task> t;
      if (is_master()) {
        auto mine = ledger_.take(c_->me, 1, o_.max_message);
        if (!mine.empty()) t = std::move(mine.front());
      } else if (!pool_.empty()) {
        t = std::move(pool_.front());
        pool_.pop_front();
        own_.completed(1, seconds_now());
      }
      if (t) {
        running_ = t->id;
        spawned_ = 0;
        ++stats_.run;
        send_up();  // the next request leaves while this task runs
        return Task{t->id, std::move(t->payload)};
      }
    }
    if (finished_) {
      complete_sends(true);
      if (is_master() && !ledger_.failed().empty())
        throw Error("gridrt: task queue: " + std::to_string(ledger_.failed().size()) + " task(s) lost with more than " +
                    std::to_string(o_.crash_limit) + " clusters each were given up (crash limit)");
      return std::nullopt;
    }
    if (moved || !pause) {
      // Workers that hold a next task do not wait for a server that wakes a little late;
      // a worker of the classic single queue (window 1) does: serve it with the usual wait.
      if (o_.worker_window >= 2) pause.emplace(kIdleYield, kIdleSleepMax);
      else pause.emplace();
    } else {
      (*pause)();
    }
  }
}

void QueueNode::done(const Task& t, const void* result, std::size_t bytes) {
  if (!running_ || *running_ != t.id)
    throw ArgumentError("gridrt: TaskQueue::done for task " + std::to_string(t.id) + ", which is not the one next() gave last");
  check_size(bytes, "result");
  running_.reset();
  const char* p = static_cast<const char*>(result);
  if (is_master()) take_result(c_->me, t.id, p, bytes);
  else outbox().results.push_back(queue::Result{t.id, std::vector<char>(p, p + bytes)});
  progress();
}

}  // namespace gridrt::detail

namespace gridrt {

TaskQueue::TaskQueue(const Comm& comm, QueueOptions options) : node_(std::make_unique<detail::QueueNode>(comm, std::move(options))) {}
TaskQueue::~TaskQueue() = default;
bool TaskQueue::is_master() const { return node_->is_master(); }
bool TaskQueue::is_boss() const { return node_->is_boss(); }
void TaskQueue::on_result(ResultHandler handler) { node_->on_result(std::move(handler)); }
TaskId TaskQueue::put(const void* data, std::size_t bytes) { return node_->put(data, bytes); }
std::optional<Task> TaskQueue::next() { return node_->next(); }
void TaskQueue::done(const Task& task, const void* result, std::size_t bytes) { node_->done(task, result, bytes); }
void TaskQueue::poll() { node_->poll(); }
QueueStats TaskQueue::stats() const { return node_->stats(); }

}  // namespace gridrt
