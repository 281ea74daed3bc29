// One-line logging to stderr: "<time> <component> <level>: message". The level comes from
// GRIDRT_LOG (error|warn|info|debug, default warn) so daemons stay quiet unless asked.
#pragma once

#include <sstream>
#include <string>

namespace gridrt::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

void set_component(std::string name);  // e.g. "broker", "relay c0"
bool enabled(Level l);
void write(Level l, const std::string& msg);

template <typename... Args>
void emit(Level l, const Args&... args) {
  if (!enabled(l)) return;
  std::ostringstream os;
  (os << ... << args);
  write(l, os.str());
}
template <typename... Args> void error(const Args&... a) { emit(Level::kError, a...); }
template <typename... Args> void warn(const Args&... a) { emit(Level::kWarn, a...); }
template <typename... Args> void info(const Args&... a) { emit(Level::kInfo, a...); }
template <typename... Args> void debug(const Args&... a) { emit(Level::kDebug, a...); }

}  // namespace gridrt::log
