// The C API: each call runs the C++ one and turns gridrt::Error into an error code, keeping
// the message for gridrt_last_error().
#include "gridrt/gridrt.h"

#include <string>

#include "gridrt/gridrt.hpp"

struct gridrt_request_s {
  gridrt::Request req;
};

namespace {
thread_local std::string last_error;

template <typename F>
int guarded(int code_on_error, F&& f) {
  try {
    f();
    return GRIDRT_SUCCESS;
  } catch (const std::exception& e) {
    last_error = e.what();
    return code_on_error;
  }
}
void fill(gridrt_status* out, const gridrt::Status& s) {
  if (out) *out = {s.source, s.tag, s.bytes};
}
bool valid_level(int level) { return level >= GRIDRT_LEVEL_SITE && level <= GRIDRT_LEVEL_NODE; }
}  // namespace

extern "C" {

int gridrt_init(int* argc, char*** argv) { return guarded(GRIDRT_ERR_STATE, [&] { gridrt::init(argc, argv); }); }
int gridrt_finalize(void) { return guarded(GRIDRT_ERR_STATE, [] { gridrt::finalize(); }); }
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
int gridrt_barrier(void) { return guarded(GRIDRT_ERR_COMM, [] { gridrt::barrier(); }); }

}  // extern "C"
