// The steps of collectives waited on (Step, comm.h: point-to-point on the communicator's
// channel, MPI collectives on `local`, chains of stages over the node level), and the order
// the collective calls of one communicator run in (CollectiveOp).
#include <algorithm>
#include <map>
#include <set>

#include "cluster_steps.h"

namespace gridrt::detail {

namespace {
void check_size(const Step& s, const ChannelStatus& st) {
  if (s.expect == Step::kNoExpectation || (st.bytes == s.expect && !st.truncated)) return;
  const std::string got = st.truncated ? "more than " + std::to_string(s.expect) : std::to_string(st.bytes);
  throw Error("gridrt: a collective's message from rank " + std::to_string(s.from) + " has " + got + " bytes where " +
              std::to_string(s.expect) + " were expected: every member must pass the same counts, datatype and root");
}

// Tests a step not done yet; true once it is. `pass` counts the passes over steps, for the
// chains (cluster_steps.h).
bool test_step(Step& s, std::uint64_t pass) {
  if (s.done) return true;
  if (s.op) {
    ChannelStatus st;
    if (!s.channel->test(*s.op, &st)) return false;
    s.done = true;
    check_size(s, st);
  } else if (s.chain) {
    s.done = advance(*s.chain, pass);
  } else {
    int flag = 0;
    check_mpi(MPI_Test(&s.mpi, &flag, MPI_STATUS_IGNORE), kMpiInCluster);
    s.done = flag != 0;
  }
  return s.done;
}

bool pending_on_mpi(const Step& s) { return !s.done && (s.op ? s.op->needs_mpi() : true); }
}  // namespace

bool steps_done(std::vector<Step>* all, Step* one) {
  static std::uint64_t passes = 0;
  const std::uint64_t pass = ++passes;
  bool every = true;
  if (all)
    for (auto& s : *all) every = test_step(s, pass) && every;
  return one ? test_step(*one, pass) : every;
}

bool steps_need_mpi(const std::vector<Step>* all, const Step* one) {
  if (one && pending_on_mpi(*one)) return true;
  return all && std::any_of(all->begin(), all->end(), pending_on_mpi);
}

// ---------------------------------------------------------------- the order of collectives

namespace {
// Ticket `t` of c's collectives is over (finished, or given up before it ran): the next may start.
void collective_over(CommImpl& c, std::uint64_t t, std::set<std::uint64_t>& over) {
  over.insert(t);
  while (over.count(c.collectives_finished)) over.erase(c.collectives_finished++);
}
std::map<const CommImpl*, std::set<std::uint64_t>> over_early;  // tickets over before their turn
}  // namespace

CollectiveOp::CollectiveOp(std::shared_ptr<CommImpl> comm, Async<> task)
    : comm_(std::move(comm)), task_(std::move(task)), ticket_(comm_->collectives_called++) {}

CollectiveOp::~CollectiveOp() {
  progress::remove(this);
  if (!counted_) {  // given up (its caller failed): later ones must not wait for it
    collective_over(*comm_, ticket_, over_early[comm_.get()]);
    if (over_early[comm_.get()].empty()) over_early.erase(comm_.get());
  }
}

bool CollectiveOp::poll() {
  if (!started_) {
    if (comm_->collectives_finished != ticket_) return false;
    started_ = true;
    task_.start(flow_);
  }
  if (!flow_.poll()) return false;
  if (!counted_) {
    counted_ = true;
    auto& over = over_early[comm_.get()];
    collective_over(*comm_, ticket_, over);
    if (over.empty()) over_early.erase(comm_.get());
  }
  return true;
}

void CollectiveOp::rethrow() const {
  if (flow_.error) std::rethrow_exception(flow_.error);
}

std::shared_ptr<CollectiveOp> start_collective(std::shared_ptr<CommImpl> comm, Async<> task) {
  auto op = std::make_shared<CollectiveOp>(std::move(comm), std::move(task));
  if (!op->poll()) progress::add(op.get());
  return op;
}

void wait_collective(CollectiveOp& op) {
  wait_until(state().messages, [&] { return Waited{op.poll(), false}; });
  op.rethrow();
}

void run_collective(std::shared_ptr<CommImpl> comm, Async<> task) {
  auto op = start_collective(std::move(comm), std::move(task));
  wait_collective(*op);
}

}  // namespace gridrt::detail
