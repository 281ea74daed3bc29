#include "calibration.h"

#include <optional>

#include "coll/algorithms.h"
#include "common/settings.h"
#include "coll/part_trees.h"
#include "state.h"

namespace gridrt::calibration {

struct CollectiveTuning::Before {
  std::optional<detail::Route> route;
  std::optional<std::size_t> slice;
};

CollectiveTuning::CollectiveTuning(const std::string& route, std::size_t slice) {
  const std::optional<detail::Route> r = detail::route_named(route);
  if (!r) throw ArgumentError("gridrt: calibration: no route named '" + route + "' (" + detail::route_names() + ")");
  const settings::Setting& range = settings::find("GRIDRT_SLICE");
  if (slice < range.low || slice > range.high)
    throw ArgumentError("gridrt: calibration: a slice of " + std::to_string(slice) + " bytes is not from " + std::to_string(range.low) +
                        " to " + std::to_string(range.high));
  detail::State& s = detail::state();
  before_ = std::make_unique<Before>(Before{s.route, s.slice});
  s.route = r;
  s.slice = slice;
}

CollectiveTuning::~CollectiveTuning() {
  if (detail::g) {
    detail::g->route = before_->route;
    detail::g->slice = before_->slice;
  }
}

StreamWindow::StreamWindow(flow::Window window) : before_(detail::state().window) { detail::use_window(window); }
StreamWindow::~StreamWindow() {
  if (detail::g) detail::use_window(before_);
}

std::size_t default_slice() { return detail::kDefaultSlice; }
std::size_t smallest_slice() { return detail::kSmallestSlice; }
int slice_count(std::size_t bytes, std::size_t slice) {
  return detail::SliceSizes(static_cast<double>(bytes), static_cast<double>(slice)).count();
}

}  // namespace gridrt::calibration
