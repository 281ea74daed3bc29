// libgridrt: process state, topology queries, point-to-point and the grid barrier.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "comm.h"
#include "state.h"

namespace gridrt {
namespace detail {

std::unique_ptr<State> g;

State& state() {
  if (!g) throw Error("gridrt: not initialised (call gridrt::init first)");
  return *g;
}

void check_rank(int r, const char* what) {
  if (r < 0 || r >= static_cast<int>(state().topo.size()))
    throw Error(std::string("gridrt: ") + what + " " + std::to_string(r) + " is not a rank of the job (size " +
                std::to_string(state().topo.size()) + ")");
}

bool is_local(int r) { return state().topo.cluster_of(static_cast<std::uint32_t>(r)) == state().cluster; }
int to_local(int r) { return r - static_cast<int>(state().topo.clusters[state().cluster].first_rank); }

// Waiting on MPI under the wait policy (design.md, "Waiting and progress"): MPICH busy-polls
// inside blocking calls, which on an oversubscribed node slows everything by 100x; testing a
// non-blocking request and yielding the CPU between tests does not.
void Pause::operator()() {
  switch (g->policy) {
    case WaitPolicy::kSpin: break;
    case WaitPolicy::kYield:
      if (std::chrono::steady_clock::now() - since_ < yield_for_) {
        sched_yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
        sleep_us_ = std::min(sleep_us_ * 2, max_sleep_us_);
      }
      break;
    case WaitPolicy::kSleep: std::this_thread::sleep_for(std::chrono::microseconds(50)); break;
  }
}

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string("gridrt: ") + what + ": " + std::string(text, static_cast<std::size_t>(len)));
}

void wait_mpi(MPI_Request* req, MPI_Status* st) {
  int flag = 0;
  Pause pause;
  for (;;) {
    check_mpi(MPI_Test(req, &flag, st), kMpiInCluster);
    if (flag) return;
    pause();
  }
}

// The settings of the README's table, read once at init. A bad value is an error naming the
// variable, its value and what it may be.

// One of `choices` by name; the first when the variable is unset.
template <typename T>
T choice_from_env(const char* name, std::initializer_list<std::pair<const char*, T>> choices) {
  const char* v = std::getenv(name);
  if (!v) return choices.begin()->second;
  std::string names;
  for (const auto& [text, value] : choices) {
    if (!std::strcmp(v, text)) return value;
    names += (names.empty() ? "" : ", ") + std::string(text);
  }
  throw Error(std::string("gridrt: ") + name + "='" + v + "' is not one of " + names);
}

// A whole number from `low` to `high`; `otherwise` when the variable is unset.
unsigned long long number_from_env(const char* name, unsigned long long otherwise, unsigned long long low, unsigned long long high,
                                   const char* unit) {
  const char* v = std::getenv(name);
  if (!v) return otherwise;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (!*v || *end || *v == '-' || n < low || n > high)
    throw Error(std::string("gridrt: ") + name + "='" + v + "' must be a number of " + unit + " from " + std::to_string(low) + " to " +
                std::to_string(high));
  return n;
}

std::shared_ptr<RemoteOp> remote_send(int dst, std::uint32_t context, int tag, const void* buf, std::size_t bytes) {
  try {
    return state().transport->send(dst, context, tag, buf, bytes);
  } catch (const std::runtime_error& e) {
    throw Error(std::string("gridrt: send to rank ") + std::to_string(dst) + ": " + e.what());
  }
}

std::shared_ptr<RemoteOp> remote_recv(void* buf, std::size_t capacity, int src, std::uint32_t context, int tag) {
  return state().transport->recv(buf, capacity, src, context, tag);
}

// What a failed remote operation was, for its error message.
std::string describe(const RemoteOp& op) {
  return op.buf ? "receive from rank " + std::to_string(op.pattern.source) : std::string("send");
}

void remote_wait(const std::shared_ptr<RemoteOp>& op) {
  try {
    state().transport->wait(op);
  } catch (const std::runtime_error& e) {
    throw Error("gridrt: " + describe(*op) + ": " + e.what());
  }
}

bool remote_test(const std::shared_ptr<RemoteOp>& op) {
  try {
    return state().transport->test(op);
  } catch (const std::runtime_error& e) {
    throw Error("gridrt: " + describe(*op) + ": " + e.what());
  }
}

bool remote_cancel(const std::shared_ptr<RemoteOp>& op) { return state().transport->cancel(op); }

std::optional<std::string> cluster_lost(int rank) { return state().transport->lost(rank); }
void mark_cluster_lost(std::uint32_t cluster, const std::string& why) { state().transport->mark_lost(cluster, why); }

}  // namespace detail

using detail::g;
using detail::state;

void init(int* argc, char*** argv, int required) {
  if (g) throw Error("gridrt: init called twice");
  const char* relay = std::getenv("GRIDRT_RELAY");
  const char* job = std::getenv("GRIDRT_JOB");
  const char* secret = std::getenv("GRIDRT_SECRET");
  const char* cluster = std::getenv("GRIDRT_CLUSTER");
  if (!relay || !job || !secret || !cluster)
    throw Error("gridrt: this program must be started by gridrun (GRIDRT_RELAY, GRIDRT_JOB, GRIDRT_SECRET and "
                "GRIDRT_CLUSTER are not set)");
  int provided = 0;
  MPI_Init_thread(argc, argv, required, &provided);
  if (provided < required) throw Error("gridrt: MPI provides thread level " + std::to_string(provided) + " < required " + std::to_string(required));
  auto s = std::make_unique<detail::State>();
  using detail::WaitPolicy;
  s->policy = detail::choice_from_env<WaitPolicy>("GRIDRT_WAIT", {{"yield", WaitPolicy::kYield}, {"spin", WaitPolicy::kSpin}, {"sleep", WaitPolicy::kSleep}});
  s->algo = detail::choice_from_env<Algo>("GRIDRT_COLL", {{"auto", Algo::kAuto}, {"hier", Algo::kHier}, {"flat", Algo::kFlat}});
  s->slice = detail::number_from_env("GRIDRT_SLICE", 64 * 1024, 1024, 1ull << 30, "bytes");
  s->node_level = detail::choice_from_env<bool>("GRIDRT_NODE_LEVEL", {{"off", false}, {"on", true}});
  const std::size_t window = detail::number_from_env("GRIDRT_WINDOW", 512 * 1024, detail::RelayTransport::kMinWindow, 1ull << 32, "bytes");
  const long timeout_s = static_cast<long>(detail::number_from_env("GRIDRT_INIT_TIMEOUT", 300, 1, 1000000, "seconds"));
  MPI_Comm_rank(MPI_COMM_WORLD, &s->local_rank);
  int local_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &local_size);
  MPI_Comm_dup(MPI_COMM_WORLD, &s->p2p);
  MPI_Comm_dup(MPI_COMM_WORLD, &s->world);
  int* ub = nullptr;
  int has = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &has);
  if (has && ub) s->tag_ub = *ub;

  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  try {
    s->transport = std::make_unique<detail::RelayTransport>(relay, std::strtoull(job, nullptr, 10), secret,
                                                            static_cast<std::uint32_t>(s->local_rank), host, window,
                                                            detail::ListenSpec::parse(std::getenv("GRIDRT_LISTEN")));
    s->topo = s->transport->wait_topology(std::chrono::seconds(timeout_s));
  } catch (const std::runtime_error& e) {
    throw Error(std::string("gridrt: init: ") + e.what());
  }
  const auto& clusters = s->topo.clusters;
  auto it = std::find_if(clusters.begin(), clusters.end(), [&](const ClusterPart& c) { return c.name == cluster; });
  if (it == clusters.end()) throw Error(std::string("gridrt: cluster '") + cluster + "' is not part of the job's topology");
  if (static_cast<int>(it->count) != local_size)
    throw Error("gridrt: the cluster's MPI job has " + std::to_string(local_size) + " processes, the topology says " +
                std::to_string(it->count));
  s->cluster = static_cast<std::uint32_t>(it - clusters.begin());
  s->rank = static_cast<int>(it->first_rank) + s->local_rank;
  s->transport->set_rank(s->rank);
  for (const auto& c : clusters) s->cluster_names.push_back(c.name);
  g = std::move(s);
  g->world_comm = detail::CommImpl::make_world();
}

void finalize() {
  if (!g) throw Error("gridrt: finalize without init");
  // Nobody leaves while others may still send to them through the relays.
  detail::finalize_barrier();
  g->world_comm.reset();  // (communicators the application still holds free theirs at exit)
  MPI_Comm_free(&g->p2p);
  MPI_Comm_free(&g->world);
  g->transport.reset();
  g.reset();
  MPI_Finalize();
}

bool initialized() { return g != nullptr; }
int rank() { return state().rank; }
int size() { return static_cast<int>(state().topo.size()); }

int num_groups() { return static_cast<int>(state().topo.groups.size()); }
const std::string& group_name() { return state().topo.groups[state().topo.rank_group[state().rank]]; }
int group_color() { return group_of(rank()); }
int group_of(int r) {
  detail::check_rank(r, "rank");
  return static_cast<int>(state().topo.rank_group[r]);
}
int group_color(const std::string& name) {
  const auto& gs = state().topo.groups;
  auto it = std::find(gs.begin(), gs.end(), name);
  if (it == gs.end()) throw Error("gridrt: no group named '" + name + "' in the JobProfile");
  return static_cast<int>(it - gs.begin());
}
const std::string& group_name_of(int color) {
  const auto& gs = state().topo.groups;
  if (color < 0 || color >= static_cast<int>(gs.size())) throw Error("gridrt: no group has color " + std::to_string(color));
  return gs[color];
}

int level_color(Level level, int r) {
  detail::check_rank(r, "rank");
  const Topology& t = state().topo;
  const std::uint32_t c = t.cluster_of(static_cast<std::uint32_t>(r));
  switch (level) {
    case Level::kSite: return static_cast<int>(t.clusters[c].site);
    case Level::kCluster: return static_cast<int>(c);
    case Level::kNode: return static_cast<int>(t.rank_node[r]);
  }
  throw Error("gridrt: unknown level " + std::to_string(static_cast<int>(level)));
}
int level_color(Level level) { return level_color(level, rank()); }

const std::string& level_name(Level level, int r) {
  const Topology& t = state().topo;
  const int color = level_color(level, r);
  switch (level) {
    case Level::kSite: return t.sites[color];
    case Level::kCluster: return state().cluster_names[color];
    case Level::kNode: return t.nodes[color];
  }
  throw Error("gridrt: unknown level");
}

int num_colors(Level level) {
  const Topology& t = state().topo;
  switch (level) {
    case Level::kSite: return static_cast<int>(t.sites.size());
    case Level::kCluster: return static_cast<int>(t.clusters.size());
    case Level::kNode: return static_cast<int>(t.nodes.size());
  }
  throw Error("gridrt: unknown level");
}

MPI_Comm cluster_comm() { return state().world; }
int cluster_first_rank() { return static_cast<int>(state().topo.clusters[state().cluster].first_rank); }

int depth(int r) {
  detail::check_rank(r, "rank");
  return 4;
}
std::vector<int> colors(int r) {
  return {0, level_color(Level::kSite, r), level_color(Level::kCluster, r), level_color(Level::kNode, r)};
}

namespace {
void check_tag(int tag, bool receiving) {
  if (tag == kAnyTag && receiving) return;
  if (tag < 0 || tag > kMaxTag) throw Error("gridrt: tag " + std::to_string(tag) + " is outside 0.." + std::to_string(kMaxTag));
  if (tag > state().tag_ub) throw Error("gridrt: tag " + std::to_string(tag) + " exceeds MPI_TAG_UB " + std::to_string(state().tag_ub));
}
}  // namespace

Request isend(const void* buf, std::size_t bytes, int dst, int tag) {
  detail::check_rank(dst, "destination");
  check_tag(tag, false);
  auto r = std::make_shared<detail::RequestState>();
  if (detail::is_local(dst)) {
    if (bytes > static_cast<std::size_t>(INT32_MAX)) throw Error("gridrt: a message inside a cluster is limited to 2 GiB");
    r->local = true;
    MPI_Isend(buf, static_cast<int>(bytes), MPI_BYTE, detail::to_local(dst), tag, state().p2p, &r->mpi);
  } else {
    r->remote = detail::remote_send(dst, detail::kP2P, tag, buf, bytes);
  }
  return Request(r);
}

Request irecv(void* buf, std::size_t capacity, int src, int tag) {
  detail::check_rank(src, "source");
  check_tag(tag, true);
  auto r = std::make_shared<detail::RequestState>();
  if (detail::is_local(src)) {
    r->local = true;
    const int cap = static_cast<int>(std::min<std::size_t>(capacity, INT32_MAX));
    MPI_Irecv(buf, cap, MPI_BYTE, detail::to_local(src), tag == kAnyTag ? MPI_ANY_TAG : tag, state().p2p, &r->mpi);
  } else {
    r->remote = detail::remote_recv(buf, capacity, src, detail::kP2P, tag);
  }
  return Request(r);
}

namespace {
void finish_local(detail::RequestState& r, const MPI_Status& st) {
  // st.MPI_ERROR is not set by single-request completion (MPI 4.0 §3.2.5), and errors are
  // fatal on these communicators, so there is nothing to check here.
  r.done = true;
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  r.status = {st.MPI_SOURCE == MPI_ANY_SOURCE || st.MPI_SOURCE < 0 ? -1 : st.MPI_SOURCE + cluster_first_rank(), st.MPI_TAG,
              static_cast<std::size_t>(count)};
}
void finish_remote(detail::RequestState& r) {
  r.done = true;
  if (r.remote->buf) r.status = {r.remote->got.source, r.remote->got.tag, r.remote->bytes};
}
}  // namespace

Status wait(Request& req) {
  if (!req.valid()) throw Error("gridrt: wait on an empty request");
  detail::RequestState& r = *req.state();
  if (!r.done) {
    if (r.local) {
      MPI_Status st;
      detail::wait_mpi(&r.mpi, &st);
      finish_local(r, st);
    } else if (r.remote) {
      detail::remote_wait(r.remote);
      finish_remote(r);
    }
  }
  return r.status;
}

bool test(Request& req, Status* status) {
  if (!req.valid()) throw Error("gridrt: test on an empty request");
  detail::RequestState& r = *req.state();
  if (!r.done) {
    if (r.local) {
      int flag = 0;
      MPI_Status st;
      MPI_Test(&r.mpi, &flag, &st);
      if (flag) finish_local(r, st);
    } else if (r.remote) {
      if (detail::remote_test(r.remote)) finish_remote(r);
    }
  }
  if (r.done && status) *status = r.status;
  return r.done;
}

void wait_all(std::vector<Request>& reqs) {
  // Remote requests block on the transport's condition variable; local ones are polled with
  // the wait policy. Waiting on them in order is enough: every one must complete anyway.
  for (auto& r : reqs) wait(r);
}

void send(const void* buf, std::size_t bytes, int dst, int tag) {
  Request r = isend(buf, bytes, dst, tag);
  wait(r);
}

Status recv(void* buf, std::size_t capacity, int src, int tag) {
  Request r = irecv(buf, capacity, src, tag);
  return wait(r);
}

void barrier() { Comm::world().barrier(); }

std::vector<std::string> lost_clusters() {
  std::vector<std::string> names;
  for (const auto& [index, why] : state().transport->lost_clusters()) names.push_back(state().topo.clusters[index].name);
  return names;
}

WanTraffic wan_traffic() {
  try {
    const auto c = state().transport->wan_count();
    return {c.messages, c.bytes};
  } catch (const std::runtime_error& e) {
    throw Error(std::string("gridrt: wan_traffic: ") + e.what());
  }
}

}  // namespace gridrt
