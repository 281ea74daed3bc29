// libgridrt: process state, topology queries, point-to-point and the grid barrier.
#include <set>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "access.h"
#include "comm.h"
#include "common/pmi_watch.h"
#include "common/settings.h"
#include "finalize_deadline.h"
#include "state.h"
#include "coll/cluster_steps.h"
#include "models/flow_window.h"
#include "transport/relay_transport.h"

namespace gridrt {
namespace detail {

std::unique_ptr<State> g;
LayerHooks layer_hooks;

namespace {
std::set<ReleasedAtFinalize*>& released_at_finalize() {
  static auto* live = new std::set<ReleasedAtFinalize*>;  // never destroyed: objects may outlive static destruction
  return *live;
}
}  // namespace
ReleasedAtFinalize::ReleasedAtFinalize() { released_at_finalize().insert(this); }
ReleasedAtFinalize::~ReleasedAtFinalize() { released_at_finalize().erase(this); }
void release_all_at_finalize() {
  const std::set<ReleasedAtFinalize*> live = released_at_finalize();  // release() may not remove, but be safe
  for (ReleasedAtFinalize* o : live) o->release();
}

State::State() = default;
State::~State() = default;

State& state() {
  if (!g) throw Error("gridrt: not initialised (call gridrt::init first)");
  return *g;
}

void use_window(flow::Window window) {
  State& s = state();
  s.window = window;
  if (s.transport) s.transport->set_window(window);
}

void check_rank(int r, const char* what) {
  if (r < 0 || r >= static_cast<int>(state().topo.size()))
    throw ArgumentError(std::string("gridrt: ") + what + " " + std::to_string(r) + " is not a rank of the job (size " +
                            std::to_string(state().topo.size()) + ")",
                        MPI_ERR_RANK);
}

// finalize's barrier: nobody leaves while others may still send to it. In a job that goes
// on without lost clusters, a cluster may be lost while the others wait here, and those
// waiting cannot agree among themselves who took part; so the broker, which decides what is
// lost, ends this barrier: each cluster's processes meet (MPI), its leader tells the broker
// (Finalizing), and every process leaves when the broker says that every cluster not lost
// did the same (docs/protocol.md, "Losing a cluster").
void finalize_barrier() {
  RelayTransport& t = *state().transport;
  t.finalizing();
  if (!t.survives_cluster_loss()) return Comm::world().barrier();
  std::shared_ptr<CommImpl> world = state().world_comm;
  Step arrived = cluster_arrive(*world);
  wait_until(state().messages, [&] {
    std::vector<Step>* none = nullptr;
    return Waited{steps_done(none, &arrived), true};
  });
  if (world->is_leader()) t.part_in_finalize();
  t.wait_finalize_release();
}

void wait_mpi(MPI_Request* req, MPI_Status* st) {
  wait_until(g ? g->messages : nullptr, [&] {
    int flag = 0;
    check_mpi(MPI_Test(req, &flag, st), kMpiInCluster);
    return Waited{flag != 0, true};
  });
}

// The settings (common/settings.h), read once at init: a bad value is an Error naming the
// variable, its value and what it may be.
std::optional<std::string> setting(const char* name) {
  try {
    return settings::value(name);
  } catch (const std::invalid_argument& e) { throw Error(std::string("gridrt: ") + e.what()); }
}

// One of `choices` by name; the first (the table's default) when the variable is unset. The
// table and `choices` name the same values, or the runtime was built wrong.
template <typename T> T choice_from_env(const char* name, const std::vector<std::pair<std::string, T>>& choices) {
  const settings::Setting& row = settings::find(name);
  bool same = row.words.size() == choices.size() && row.fallback == choices.front().first;
  for (const auto& choice : choices) same = same && std::find(row.words.begin(), row.words.end(), choice.first) != row.words.end();
  if (!same) throw std::logic_error(std::string("gridrt: the settings table and the runtime differ on ") + name);
  const std::optional<std::string> v = setting(name);
  for (const auto& [text, value] : choices)
    if (v && text == *v) return value;
  return choices.front().second;
}

// The number set, or `otherwise` where the variable is unset (or one of its words).
unsigned long long number_from_env(const char* name, unsigned long long otherwise) {
  setting(name);
  return settings::number(name).value_or(otherwise);
}

std::optional<std::string> cluster_lost(int rank) { return state().transport->lost(rank); }

void leave_unfinalized(const std::string& why, int job_status) {
  if (!g || !g->transport) return;
  g->transport->leaving_unfinalized(std::chrono::milliseconds(500), why, job_status);
  g->transport->halt();
}
std::vector<std::uint32_t> lost_cluster_indices() {
  std::vector<std::uint32_t> out;
  for (const auto& [index, why] : state().transport->lost_clusters()) out.push_back(index);
  return out;
}
void mark_cluster_lost(std::uint32_t cluster, const std::string& why) { state().transport->mark_lost(cluster, why); }

}  // namespace detail

using detail::g;
using detail::state;

void init(int* argc, char*** argv, int required) {
  if (g) throw Error("gridrt: init called twice");
  const auto relay = detail::setting("GRIDRT_RELAY"), job = detail::setting("GRIDRT_JOB"), secret = detail::setting("GRIDRT_SECRET"),
             cluster = detail::setting("GRIDRT_CLUSTER");
  if (!relay || !job || !secret || !cluster)
    throw Error(
        "gridrt: this program must be started by gridrun (GRIDRT_RELAY, GRIDRT_JOB, GRIDRT_SECRET and "
        "GRIDRT_CLUSTER are not set)");
  int provided = 0;
  gridrt::pmi_watch::announce_joining();  // (before MPI_Init speaks to the process manager)
  MPI_Init_thread(argc, argv, required, &provided);
  if (provided < required)
    throw Error("gridrt: MPI provides thread level " + std::to_string(provided) + " < required " + std::to_string(required));
  // Every setting the processes read, checked before any is used.
  if (const auto bad = settings::first_bad(settings::kProcesses | settings::kByGridrt)) throw Error("gridrt: " + *bad);
  auto s = std::make_unique<detail::State>();
  using detail::WaitPolicy;
  detail::wait_policy = detail::choice_from_env<WaitPolicy>(
      "GRIDRT_WAIT", {{"yield", WaitPolicy::kYield}, {"spin", WaitPolicy::kSpin}, {"sleep", WaitPolicy::kSleep}});
  s->algo = detail::choice_from_env<Algo>("GRIDRT_COLL", {{"auto", Algo::kAuto}, {"hier", Algo::kHier}, {"flat", Algo::kFlat}});
  using detail::Route;
  std::vector<std::pair<std::string, std::optional<Route>>> routes{{"auto", std::nullopt}};
  for (Route r : detail::kEveryRoute) routes.emplace_back(detail::route_name(r), r);
  s->route = detail::choice_from_env<std::optional<Route>>("GRIDRT_ROUTE", routes);
  if (detail::setting("GRIDRT_SLICE")) s->slice = detail::number_from_env("GRIDRT_SLICE", 0);
  if (const auto pieces = detail::number_from_env("GRIDRT_GATHER_PIECES", 0)) s->gather_pieces = static_cast<int>(pieces);
  s->node_level = detail::choice_from_env<bool>("GRIDRT_NODE_LEVEL", {{"off", false}, {"on", true}});
  s->cluster_steps = detail::choice_from_env<detail::ClusterSteps>(
      "GRIDRT_CLUSTER_STEPS",
      {{"model", detail::ClusterSteps::kModel}, {"composed", detail::ClusterSteps::kComposed}, {"mpich", detail::ClusterSteps::kMpich}});
  s->explain = detail::choice_from_env<bool>("GRIDRT_EXPLAIN", {{"0", false}, {"1", true}});
  // The grid's model (docs/models.md): a file named by GRIDRT_MODEL, the text gridrun
  // --model hands over (GRIDRT_MODEL_JSON), or the one the broker keeps (with the topology).
  try {
    if (const auto model = detail::setting("GRIDRT_MODEL"))
      s->model = std::make_shared<const models::GridModel>(models::load_model(*model));
    else if (const auto json = detail::setting("GRIDRT_MODEL_JSON"))
      s->model = std::make_shared<const models::GridModel>(models::read_model_json(*json, "GRIDRT_MODEL_JSON"));
  } catch (const models::ModelError& e) { throw Error(std::string("gridrt: ") + e.what()); }
  try {
    s->window = models::window_from_env();
  } catch (const std::invalid_argument& e) { throw Error(std::string("gridrt: ") + e.what()); }
  const flow::Window window = s->window;
  const long timeout_s = static_cast<long>(detail::number_from_env("GRIDRT_INIT_TIMEOUT", 300));
  s->finalize_timeout = std::chrono::seconds(detail::number_from_env("GRIDRT_FINALIZE_TIMEOUT", 20));
  s->pmi_fd = detail::pmi_fd_from_env();
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
    s->transport = std::make_unique<detail::RelayTransport>(
        *relay, *settings::number("GRIDRT_JOB"), *secret, static_cast<std::uint32_t>(s->local_rank), host, window,
        detail::ListenSpec::parse(detail::setting("GRIDRT_LISTEN").value_or("none").c_str()));
    s->topo = s->transport->wait_topology(std::chrono::seconds(timeout_s));
    if (!s->model && !s->topo.model.empty()) {
      try {
        s->model = std::make_shared<const models::GridModel>(models::read_model_json(s->topo.model, "the broker's model"));
      } catch (const models::ModelError& e) { std::fprintf(stderr, "gridrt: auto follows its measured rules: %s\n", e.what()); }
    }
  } catch (const std::runtime_error& e) { throw Error(std::string("gridrt: init: ") + e.what()); }
  const auto& clusters = s->topo.clusters;
  auto it = std::find_if(clusters.begin(), clusters.end(), [&](const ClusterPart& c) { return c.name == *cluster; });
  if (it == clusters.end()) throw Error("gridrt: cluster '" + *cluster + "' is not part of the job's topology");
  if (static_cast<int>(it->count) != local_size)
    throw Error("gridrt: the cluster's MPI job has " + std::to_string(local_size) + " processes, the topology says " +
                std::to_string(it->count));
  s->cluster = static_cast<std::uint32_t>(it - clusters.begin());
  s->rank = static_cast<int>(it->first_rank) + s->local_rank;
  s->transport->set_rank(s->rank);
  s->messages = s->transport.get();
  for (const auto& c : clusters) s->cluster_names.push_back(c.name);
  g = std::move(s);
  detail::name_this_node();
  // A process that exits without finalize (an error thrown out of main, exit(1)) must not
  // have the transport's I/O thread running while exit() destroys what it uses: this
  // handler, registered after everything that thread touched was made, runs before their
  // destructors (atexit runs in reverse order) and stops it.
  // It first tells the relay, which stops the job naming this rank: the others would
  // otherwise wait for it (in a collective, in finalize) until a timeout.
  static const bool halt_registered =
      std::atexit([] { detail::leave_unfinalized("without calling gridrt::finalize (MPI_Finalize)"); }) == 0;
  (void)halt_registered;
  g->world_comm = detail::CommImpl::make_world();
  // gridrt's own point-to-point between global ranks: every rank a peer, those of this
  // cluster through MPI on a private duplicate of its world.
  const int n = static_cast<int>(g->topo.size()), first = static_cast<int>(it->first_rank);
  std::vector<int> peers(n), local_rank(n, -1);
  for (int r = 0; r < n; ++r) {
    peers[r] = r;
    if (r >= first && r < first + local_size) local_rank[r] = r - first;
  }
  g->p2p_channel = std::make_shared<detail::Channel>(peers, local_rank, g->p2p, g->messages, detail::kP2P, n);
  if (detail::layer_hooks.initialized) detail::layer_hooks.initialized();
}

void finalize() {
  if (!g) throw Error("gridrt: finalize without init");
  // Nobody leaves while others may still send to them through the relays.
  detail::finalize_barrier();
  if (detail::layer_hooks.finalizing) detail::layer_hooks.finalizing();
  detail::release_all_at_finalize();
  g->world_comm.reset();  // (communicators the application still holds free theirs at exit)
  g->p2p_channel.reset();
  MPI_Comm_free(&g->p2p);
  MPI_Comm_free(&g->world);
  g->transport.reset();
  const auto limit = g->finalize_timeout;
  const int rank = g->rank, pmi_fd = g->pmi_fd;
  g.reset();
  const detail::FinalizeDeadline deadline(limit, rank, pmi_fd);
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
std::vector<int> colors(int r) { return {0, level_color(Level::kSite, r), level_color(Level::kCluster, r), level_color(Level::kNode, r)}; }

namespace detail {
// One of gridrt's point-to-point operations, on the channel between global ranks.
struct RequestState {
  OpPtr op;
  bool done = false;
  Status status;
};
}  // namespace detail

namespace {
int byte_count(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT32_MAX)) throw ArgumentError("gridrt: a message is limited to 2 GiB", MPI_ERR_COUNT);
  return static_cast<int>(bytes);
}

Request start(detail::OpPtr op) {
  auto r = std::make_shared<detail::RequestState>();
  r->op = std::move(op);
  return detail::Access::request(r);
}

// Tests a request; a message longer than its receive's buffer is an error, as a lost peer is.
bool test_request(detail::RequestState& r) {
  if (r.done) return true;
  detail::ChannelStatus st;
  if (!state().p2p_channel->test(*r.op, &st)) return false;
  r.done = true;
  if (!r.op->is_receive()) return true;
  if (st.truncated)
    throw Error("gridrt: message from rank " + std::to_string(st.source) + " (tag " + std::to_string(st.tag) +
                    ") truncated: the receive buffer is too small",
                MPI_ERR_TRUNCATE);
  r.status = {st.source, st.tag, st.bytes};
  return true;
}
}  // namespace

Request isend(const void* buf, std::size_t bytes, int dst, int tag) {
  if (dst != MPI_PROC_NULL) detail::check_rank(dst, "destination");
  if (tag == kAnyTag) throw ArgumentError("gridrt: a send needs a tag, not kAnyTag", MPI_ERR_TAG);
  return start(state().p2p_channel->isend(buf, byte_count(bytes), MPI_BYTE, dst, tag));
}

Request irecv(void* buf, std::size_t capacity, int src, int tag) {
  if (src != MPI_ANY_SOURCE && src != MPI_PROC_NULL) detail::check_rank(src, "source");
  const int cap = static_cast<int>(std::min<std::size_t>(capacity, INT32_MAX));
  return start(state().p2p_channel->irecv(buf, cap, MPI_BYTE, src, tag == kAnyTag ? MPI_ANY_TAG : tag));
}

Status wait(Request& req) {
  if (!req.valid()) throw Error("gridrt: wait on an empty request");
  detail::RequestState& r = *detail::Access::state(req);
  detail::wait_until(state().messages, [&] { return detail::Waited{test_request(r), r.op->needs_mpi()}; });
  return r.status;
}

bool test(Request& req, Status* status) {
  if (!req.valid()) throw Error("gridrt: test on an empty request");
  detail::RequestState& r = *detail::Access::state(req);
  detail::progress::poll_all();
  const bool done = test_request(r);
  if (done && status) *status = r.status;
  return done;
}

void wait_all(std::vector<Request>& reqs) {
  // Waiting on them in order is enough: every one must complete anyway.
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
  } catch (const std::runtime_error& e) { throw Error(std::string("gridrt: wan_traffic: ") + e.what()); }
}

}  // namespace gridrt
