#include "relay/part_end.h"

#include <signal.h>

#include <algorithm>

namespace gridrt {

std::chrono::steady_clock::duration wait_for_reports(const PartEnd& end, std::chrono::steady_clock::duration authenticate,
                                                     std::chrono::steady_clock::duration after_failure) {
  const bool all_will_report = end.launch_status == 0 && !end.stopped;
  return all_will_report ? authenticate : after_failure;
}

bool statuses_settled(const PartEnd& end) {
  if (!end.launch_exited) return false;
  const bool all_known = std::find(end.rank_status.begin(), end.rank_status.end(), -1) == end.rank_status.end();
  return all_known || end.grace_over || !end.failure.empty();
}

PartDone part_done(const PartEnd& end, const std::string& launch) {
  PartDone done;
  done.message = end.failure;
  bool any_reported = false;
  for (int st : end.rank_status) {
    any_reported = any_reported || st != -1;
    if (st == -1) st = end.stopped ? 128 + SIGTERM : end.launch_status != 0 ? end.launch_status : 255;
    done.statuses.push_back(static_cast<std::uint32_t>(st));
  }
  if (done.message.empty() && end.launch_status != 0 && !end.stopped && !any_reported)
    done.message =
        "launch command '" + launch + "' exited with status " + std::to_string(end.launch_status) + " before any process started";
  return done;
}

}  // namespace gridrt
