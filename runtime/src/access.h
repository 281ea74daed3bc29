// The runtime's one way into the handles the public header gives applications (Comm,
// Request in gridrt/gridrt.hpp): their implementations stay private there, so that the
// header hands out no internal type, and the parts of the runtime that must reach them
// (the task queue, the point-to-point requests) do so here, by name.
#pragma once

#include <memory>

#include "gridrt/gridrt.hpp"

namespace gridrt::detail {

struct Access {
  static CommImpl& impl(const Comm& c) { return c.impl(); }
  static Request request(std::shared_ptr<RequestState> s) { return Request(std::move(s)); }
  static RequestState* state(const Request& r) { return r.state_.get(); }
};

}  // namespace gridrt::detail
