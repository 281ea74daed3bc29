// One-line logging to stderr: "<time> <component> <level>: message". The level comes from
// GRIDRT_LOG (error|warn|info|debug, default warn) so daemons stay quiet unless asked.
#pragma once

#include <chrono>
#include <mutex>
#include <sstream>
#include <string>

namespace gridrt::log {

enum class Level { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

void set_component(std::string name);  // e.g. "broker", "relay c0"
bool enabled(Level l);
void write(Level l, const std::string& msg);

template <typename... Args> void emit(Level l, const Args&... args) {
  if (!enabled(l)) return;
  std::ostringstream os;
  (os << ... << args);
  write(l, os.str());
}
template <typename... Args> void error(const Args&... a) { emit(Level::kError, a...); }
template <typename... Args> void warn(const Args&... a) { emit(Level::kWarn, a...); }
template <typename... Args> void info(const Args&... a) { emit(Level::kInfo, a...); }
template <typename... Args> void debug(const Args&... a) { emit(Level::kDebug, a...); }

// What an operator should see at the default level though nothing is wrong: a daemon's
// start-up ("listening on ...", "registered ..."). Shown unless GRIDRT_LOG=error, or the
// daemon was told to keep quiet (gridrun's embedded grid, set_notices(false)).
void set_notices(bool on);
void write_notice(const std::string& msg);
template <typename... Args> void notice(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  write_notice(os.str());
}

// A warning that an attack can repeat thousands of times a second (failed handshakes,
// refused strangers): the first few of each interval are logged, the rest are counted and
// summarised in one line when the next interval begins.
class Repeated {
 public:
  explicit Repeated(std::string what, int burst = 3, std::chrono::steady_clock::duration interval = std::chrono::seconds(10))
      : what_(std::move(what)), burst_(burst), interval_(interval) {}
  template <typename... Args> void warn(const Args&... args) {
    if (!enabled(Level::kWarn)) return;
    if (!count()) return;
    std::ostringstream os;
    (os << ... << args);
    write(Level::kWarn, os.str());
  }

 private:
  bool count();  // true: log this one (after summarising what was held back, if any)
  std::mutex m_;
  std::string what_;
  int burst_;
  std::chrono::steady_clock::duration interval_;
  std::chrono::steady_clock::time_point window_;
  int logged_ = 0;
  long held_back_ = 0;
};

}  // namespace gridrt::log
