// What `gridrun calibrate`'s sample run (launcher/gridcalibrate.cpp) may change in the
// runtime of its own job, and nothing more: the route and slice its hierarchical
// collectives take, and the flow-control window of the streams it opens. Each setting holds
// for the life of the object that made it and is put back when it ends, so that a sample
// run cannot leave its own choices behind for the calls after it. Exported by libgridrt in
// its private interface (runtime/exports/gridrt.map), not installed.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/flow_control.h"

namespace gridrt::calibration {

// Every hierarchical collective of this process takes `route` (a name as GRIDRT_ROUTE
// takes it: packed, heads, reduce-scatter, ...) and cuts its pipelined steps into `slice`
// bytes, as GRIDRT_ROUTE and GRIDRT_SLICE would have them. Throws gridrt::ArgumentError for
// a route that does not exist or a slice out of GRIDRT_SLICE's range.
class CollectiveTuning {
 public:
  CollectiveTuning(const std::string& route, std::size_t slice);
  ~CollectiveTuning();
  CollectiveTuning(const CollectiveTuning&) = delete;
  CollectiveTuning& operator=(const CollectiveTuning&) = delete;

 private:
  struct Before;  // what it put back
  std::unique_ptr<Before> before_;
};

// The streams this process opens from now on (a communicator made later, the streams to
// processes it has not yet talked to) start with `window`.
class StreamWindow {
 public:
  explicit StreamWindow(flow::Window window);
  ~StreamWindow();
  StreamWindow(const StreamWindow&) = delete;
  StreamWindow& operator=(const StreamWindow&) = delete;

 private:
  flow::Window before_;
};

// The slices the predictions play: the size the runtime takes where neither the model nor
// GRIDRT_SLICE says, the smallest the model chooses among, and how many slices a message of
// `bytes` is cut into when `slice` is asked (never more than the runtime's most).
std::size_t default_slice();
std::size_t smallest_slice();
int slice_count(std::size_t bytes, std::size_t slice);

}  // namespace gridrt::calibration
