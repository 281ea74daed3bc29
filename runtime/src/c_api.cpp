// The C API: each call runs the C++ one and turns gridrt::Error into an error code, keeping
// the message for gridrt_last_error().
#include "gridrt/gridrt.h"

#include <memory>
#include <optional>
#include <string>

#include "gridrt/gridrt.hpp"
#include "gridrt/queue.hpp"

struct gridrt_queue_s {
  std::unique_ptr<gridrt::TaskQueue> queue;
  std::optional<gridrt::Task> current;  // what gridrt_queue_next handed out last
};
struct gridrt_request_s {
  gridrt::Request req;
};
struct gridrt_comm_s {
  gridrt::Comm comm;
};

namespace {
thread_local std::string last_error;

// Runs f; an exception becomes `on_argument` (gridrt::ArgumentError) or `on_other`, its
// message kept for gridrt_last_error().
template <typename F> int run(F&& f, int on_argument, int on_other) {
  try {
    f();
    return GRIDRT_SUCCESS;
  } catch (const gridrt::ArgumentError& e) {
    last_error = e.what();
    return on_argument;
  } catch (const std::exception& e) {
    last_error = e.what();
    return on_other;
  }
}
template <typename F> int guarded(int code_on_error, F&& f) { return run(std::forward<F>(f), code_on_error, code_on_error); }
void fill(gridrt_status* out, const gridrt::Status& s) {
  if (out) *out = {s.source, s.tag, s.bytes};
}
bool valid_level(int level) { return level >= GRIDRT_LEVEL_SITE && level <= GRIDRT_LEVEL_NODE; }

const gridrt::Comm& comm_of(gridrt_comm c) {
  if (!c) throw gridrt::ArgumentError("gridrt: a NULL communicator handle");
  return c->comm;
}
gridrt::Algo algo_of(int algo) {
  switch (algo) {
    case GRIDRT_ALGO_DEFAULT: return gridrt::Algo::kDefault;
    case GRIDRT_ALGO_AUTO: return gridrt::Algo::kAuto;
    case GRIDRT_ALGO_HIER: return gridrt::Algo::kHier;
    case GRIDRT_ALGO_FLAT: return gridrt::Algo::kFlat;
  }
  throw gridrt::ArgumentError("gridrt: unknown collective algorithm " + std::to_string(algo));
}
// Collectives and the task queue fail with GRIDRT_ERR_ARG for what the caller got wrong
// (gridrt::ArgumentError), GRIDRT_ERR_COMM for the rest (a peer or relay gone).
template <typename F> int classified(F&& f) { return run(std::forward<F>(f), GRIDRT_ERR_ARG, GRIDRT_ERR_COMM); }
template <typename F> int collective(gridrt_comm c, int algo, F&& f) {
  return classified([&] { f(comm_of(c), algo_of(algo)); });
}
// Where a call's result goes: a NULL one is the caller's error.
template <typename T> T* out_param(T* out, const char* call) {
  if (!out) throw gridrt::ArgumentError(std::string(call) + ": out is NULL");
  return out;
}
void handle(gridrt_comm* out, gridrt::Comm c) { *out = c.valid() ? new gridrt_comm_s{std::move(c)} : nullptr; }
}  // namespace

extern "C" {

int gridrt_init(int* argc, char*** argv) {
  return guarded(GRIDRT_ERR_STATE, [&] { gridrt::init(argc, argv); });
}
int gridrt_finalize(void) {
  return guarded(GRIDRT_ERR_STATE, [] { gridrt::finalize(); });
}
const char* gridrt_last_error(void) { return last_error.c_str(); }

int gridrt_rank(void) { return gridrt::initialized() ? gridrt::rank() : -1; }
int gridrt_size(void) { return gridrt::initialized() ? gridrt::size() : -1; }
const char* gridrt_group_name(void) { return gridrt::initialized() ? gridrt::group_name().c_str() : nullptr; }

int gridrt_group_color(const char* name) {
  int color = -1;
  guarded(GRIDRT_ERR_ARG, [&] { color = gridrt::group_color(name ? name : ""); });
  return color;
}
const char* gridrt_color_group_name(int color) {
  const char* name = nullptr;
  guarded(GRIDRT_ERR_ARG, [&] { name = gridrt::group_name_of(color).c_str(); });
  return name;
}
int gridrt_group_of(int rank) {
  int color = -1;
  guarded(GRIDRT_ERR_ARG, [&] { color = gridrt::group_of(rank); });
  return color;
}
int gridrt_level_color(int level, int rank) {
  int color = -1;
  if (!valid_level(level)) return -1;
  guarded(GRIDRT_ERR_ARG, [&] { color = gridrt::level_color(static_cast<gridrt::Level>(level), rank); });
  return color;
}
const char* gridrt_level_name(int level, int rank) {
  const char* name = nullptr;
  if (!valid_level(level)) return nullptr;
  guarded(GRIDRT_ERR_ARG, [&] { name = gridrt::level_name(static_cast<gridrt::Level>(level), rank).c_str(); });
  return name;
}
int gridrt_depth(int rank) {
  int d = -1;
  guarded(GRIDRT_ERR_ARG, [&] { d = gridrt::depth(rank); });
  return d;
}
int gridrt_colors(int rank, int* colors, int capacity) {
  return guarded(GRIDRT_ERR_ARG, [&] {
    const auto c = gridrt::colors(rank);
    if (!colors || capacity < static_cast<int>(c.size())) throw gridrt::Error("gridrt_colors: capacity below depth");
    for (std::size_t i = 0; i < c.size(); ++i) colors[i] = c[i];
  });
}

int gridrt_send(const void* buf, size_t bytes, int dst, int tag) {
  return guarded(GRIDRT_ERR_COMM, [&] { gridrt::send(buf, bytes, dst, tag); });
}
int gridrt_recv(void* buf, size_t capacity, int src, int tag, gridrt_status* status) {
  return guarded(GRIDRT_ERR_COMM, [&] { fill(status, gridrt::recv(buf, capacity, src, tag)); });
}
int gridrt_isend(const void* buf, size_t bytes, int dst, int tag, gridrt_request* req) {
  return guarded(GRIDRT_ERR_COMM, [&] { *req = new gridrt_request_s{gridrt::isend(buf, bytes, dst, tag)}; });
}
int gridrt_irecv(void* buf, size_t capacity, int src, int tag, gridrt_request* req) {
  return guarded(GRIDRT_ERR_COMM, [&] { *req = new gridrt_request_s{gridrt::irecv(buf, capacity, src, tag)}; });
}
int gridrt_wait(gridrt_request* req, gridrt_status* status) {
  return guarded(GRIDRT_ERR_COMM, [&] {
    if (!req || !*req) throw gridrt::Error("gridrt_wait: null request");
    fill(status, gridrt::wait((*req)->req));
    delete *req;
    *req = nullptr;
  });
}
int gridrt_test(gridrt_request* req, int* done, gridrt_status* status) {
  return guarded(GRIDRT_ERR_COMM, [&] {
    if (!req || !*req) throw gridrt::Error("gridrt_test: null request");
    gridrt::Status s;
    *done = gridrt::test((*req)->req, &s) ? 1 : 0;
    if (*done) {
      fill(status, s);
      delete *req;
      *req = nullptr;
    }
  });
}
int gridrt_barrier(void) {
  return guarded(GRIDRT_ERR_COMM, [] { gridrt::barrier(); });
}

int gridrt_wan_traffic(unsigned long long* messages, unsigned long long* bytes) {
  return guarded(GRIDRT_ERR_COMM, [&] {
    const gridrt::WanTraffic t = gridrt::wan_traffic();
    *messages = t.messages;
    *bytes = t.bytes;
  });
}

int gridrt_comm_world(gridrt_comm* out) {
  return run([&] { handle(out_param(out, "gridrt_comm_world"), gridrt::Comm::world()); }, GRIDRT_ERR_ARG, GRIDRT_ERR_STATE);
}
int gridrt_comm_split(gridrt_comm comm, int color, int key, gridrt_comm* out) {
  return classified([&] { handle(out_param(out, "gridrt_comm_split"), comm_of(comm).split(color, key)); });
}
int gridrt_comm_dup(gridrt_comm comm, gridrt_comm* out) {
  return classified([&] { handle(out_param(out, "gridrt_comm_dup"), comm_of(comm).dup()); });
}
int gridrt_comm_free(gridrt_comm* comm) {
  if (comm) {
    delete *comm;
    *comm = nullptr;
  }
  return GRIDRT_SUCCESS;
}
int gridrt_comm_rank(gridrt_comm comm, int* rank) {
  return guarded(GRIDRT_ERR_ARG, [&] { *rank = comm_of(comm).rank(); });
}
int gridrt_comm_size(gridrt_comm comm, int* size) {
  return guarded(GRIDRT_ERR_ARG, [&] { *size = comm_of(comm).size(); });
}
int gridrt_comm_global_rank(gridrt_comm comm, int rank, int* global_rank) {
  return guarded(GRIDRT_ERR_ARG, [&] { *global_rank = comm_of(comm).global_rank(rank); });
}
int gridrt_comm_barrier(gridrt_comm comm, int algo) {
  return collective(comm, algo, [&](const gridrt::Comm& c, gridrt::Algo a) { c.barrier(a); });
}
int gridrt_bcast(void* buf, int count, MPI_Datatype type, int root, gridrt_comm comm, int algo) {
  return collective(comm, algo, [&](const gridrt::Comm& c, gridrt::Algo a) { c.bcast(buf, count, type, root, a); });
}
int gridrt_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, int root, gridrt_comm comm, int algo) {
  return collective(comm, algo, [&](const gridrt::Comm& c, gridrt::Algo a) { c.reduce(sendbuf, recvbuf, count, type, op, root, a); });
}
int gridrt_allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, gridrt_comm comm, int algo) {
  return collective(comm, algo, [&](const gridrt::Comm& c, gridrt::Algo a) { c.allreduce(sendbuf, recvbuf, count, type, op, a); });
}
int gridrt_gather(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, int root, gridrt_comm comm, int algo) {
  return collective(comm, algo, [&](const gridrt::Comm& c, gridrt::Algo a) { c.gather(sendbuf, recvbuf, count, type, root, a); });
}
int gridrt_gatherv(const void* sendbuf, int sendcount, void* recvbuf, const int* recvcounts, const int* displs, MPI_Datatype type, int root,
                   gridrt_comm comm, int algo) {
  return collective(comm, algo, [&](const gridrt::Comm& c, gridrt::Algo a) {
    c.gatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, type, root, a);
  });
}
int gridrt_scatter(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, int root, gridrt_comm comm, int algo) {
  return collective(comm, algo, [&](const gridrt::Comm& c, gridrt::Algo a) { c.scatter(sendbuf, recvbuf, count, type, root, a); });
}
int gridrt_scatterv(const void* sendbuf, const int* sendcounts, const int* displs, void* recvbuf, int recvcount, MPI_Datatype type,
                    int root, gridrt_comm comm, int algo) {
  return collective(comm, algo, [&](const gridrt::Comm& c, gridrt::Algo a) {
    c.scatterv(sendbuf, sendcounts, displs, recvbuf, recvcount, type, root, a);
  });
}
int gridrt_allgather(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, gridrt_comm comm, int algo) {
  return collective(comm, algo, [&](const gridrt::Comm& c, gridrt::Algo a) { c.allgather(sendbuf, recvbuf, count, type, a); });
}
int gridrt_allgatherv(const void* sendbuf, int sendcount, void* recvbuf, const int* recvcounts, const int* displs, MPI_Datatype type,
                      gridrt_comm comm, int algo) {
  return collective(comm, algo,
                    [&](const gridrt::Comm& c, gridrt::Algo a) { c.allgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, type, a); });
}
int gridrt_alltoall(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, gridrt_comm comm, int algo) {
  return collective(comm, algo, [&](const gridrt::Comm& c, gridrt::Algo a) { c.alltoall(sendbuf, recvbuf, count, type, a); });
}
int gridrt_alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, void* recvbuf, const int* recvcounts,
                     const int* rdispls, MPI_Datatype type, gridrt_comm comm, int algo) {
  return collective(comm, algo, [&](const gridrt::Comm& c, gridrt::Algo a) {
    c.alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, type, a);
  });
}

int gridrt_reduce_scatter_block(const void* sendbuf, void* recvbuf, int count, MPI_Datatype type, MPI_Op op, gridrt_comm comm, int algo) {
  return collective(comm, algo,
                    [&](const gridrt::Comm& c, gridrt::Algo a) { c.reduce_scatter_block(sendbuf, recvbuf, count, type, op, a); });
}

int gridrt_reduce_scatter(const void* sendbuf, void* recvbuf, const int* counts, MPI_Datatype type, MPI_Op op, gridrt_comm comm, int algo) {
  return collective(comm, algo, [&](const gridrt::Comm& c, gridrt::Algo a) { c.reduce_scatter(sendbuf, recvbuf, counts, type, op, a); });
}

void gridrt_queue_options_init(gridrt_queue_options* o) {
  const gridrt::QueueOptions d;
  *o = gridrt_queue_options{};
  o->num_levels = static_cast<int>(d.levels.size());
  for (std::size_t i = 0; i < d.levels.size(); ++i) o->levels[i] = static_cast<int>(d.levels[i]);
  o->root = d.root;
  o->bosses_work = d.bosses_work;
  o->master_works = d.master_works;
  o->worker_window = d.worker_window;
  o->requeue_lost = d.requeue_lost;
}

int gridrt_queue_create(gridrt_comm comm, const gridrt_queue_options* options, gridrt_queue* out) {
  return classified([&] {
    gridrt::QueueOptions o;
    if (options) {
      if (options->num_levels < 0 || options->num_levels > GRIDRT_QUEUE_MAX_LEVELS)
        throw gridrt::ArgumentError("gridrt: task queue with " + std::to_string(options->num_levels) + " levels");
      o.levels.clear();
      for (int i = 0; i < options->num_levels; ++i) {
        if (!valid_level(options->levels[i])) throw gridrt::ArgumentError("gridrt: unknown level " + std::to_string(options->levels[i]));
        o.levels.push_back(static_cast<gridrt::Level>(options->levels[i]));
      }
      o.root = options->root;
      o.bosses_work = options->bosses_work != 0;
      o.master_works = options->master_works != 0;
      o.worker_window = options->worker_window;
      o.requeue_lost = options->requeue_lost != 0;
    }
    *out = new gridrt_queue_s{std::make_unique<gridrt::TaskQueue>(comm_of(comm), o), std::nullopt};
  });
}

int gridrt_queue_free(gridrt_queue* queue) {
  if (queue) {
    delete *queue;
    *queue = nullptr;
  }
  return GRIDRT_SUCCESS;
}

namespace {
gridrt_queue_s& queue_of(gridrt_queue q) {
  if (!q) throw gridrt::ArgumentError("gridrt: a NULL task queue handle");
  return *q;
}
}  // namespace

int gridrt_queue_is_master(gridrt_queue queue, int* is_master) {
  return guarded(GRIDRT_ERR_ARG, [&] { *is_master = queue_of(queue).queue->is_master(); });
}

int gridrt_queue_on_result(gridrt_queue queue, gridrt_result_fn fn, void* arg) {
  return guarded(GRIDRT_ERR_ARG, [&] {
    queue_of(queue).queue->on_result([fn, arg](gridrt::TaskId id, const char* data, std::size_t bytes) { fn(id, data, bytes, arg); });
  });
}

int gridrt_queue_put(gridrt_queue queue, const void* data, size_t bytes, uint64_t* id) {
  return classified([&] {
    const gridrt::TaskId t = queue_of(queue).queue->put(data, bytes);
    if (id) *id = t;
  });
}

int gridrt_queue_next(gridrt_queue queue, gridrt_task* task, int* got) {
  return classified([&] {
    gridrt_queue_s& q = queue_of(queue);
    q.current = q.queue->next();
    *got = q.current.has_value();
    if (*got) *task = gridrt_task{q.current->id, q.current->payload.data(), q.current->payload.size()};
  });
}

int gridrt_queue_done(gridrt_queue queue, const gridrt_task* task, const void* result, size_t bytes) {
  return classified([&] {
    gridrt_queue_s& q = queue_of(queue);
    if (!task || !q.current || q.current->id != task->id)
      throw gridrt::ArgumentError("gridrt: gridrt_queue_done for a task that is not the one gridrt_queue_next gave last");
    q.queue->done(*q.current, result, bytes);
    q.current.reset();
  });
}

int gridrt_queue_poll(gridrt_queue queue) {
  return classified([&] { queue_of(queue).queue->poll(); });
}

}  // extern "C"
