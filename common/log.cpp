#include "common/log.h"

#include "common/settings.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace gridrt::log {
namespace {
std::string& component() {
  static std::string c = "gridrt";
  return c;
}
Level threshold() {
  static const Level l = [] {
    // (The programs check it before they start; a process that logs before gridrt::init
    // checked it is told here, once.)
    std::optional<std::string> v;
    try {
      v = settings::value("GRIDRT_LOG");
    } catch (const std::invalid_argument& e) { std::fprintf(stderr, "gridrt: %s; logging at warn\n", e.what()); }
    if (v == "error") return Level::kError;
    if (v == "info") return Level::kInfo;
    if (v == "debug") return Level::kDebug;
    return Level::kWarn;
  }();
  return l;
}
const char* names[] = {"error", "warn", "info", "debug"};
bool notices = true;
void write_line(const char* level, const std::string& msg);
}  // namespace

void set_component(std::string name) { component() = std::move(name); }

bool enabled(Level l) { return l <= threshold(); }

void write(Level l, const std::string& msg) { write_line(names[static_cast<int>(l)], msg); }

void set_notices(bool on) { notices = on; }

void write_notice(const std::string& msg) {
  if (notices && enabled(Level::kWarn)) write_line("notice", msg);
}

namespace {
void write_line(const char* level, const std::string& msg) {
  static std::mutex m;
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  localtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%H:%M:%S", &tm);
  std::lock_guard<std::mutex> lock(m);
  std::fprintf(stderr, "%s.%03d %s %s: %s\n", ts, static_cast<int>(ms), component().c_str(), level, msg.c_str());
}
}  // namespace

bool Repeated::count() {
  std::lock_guard<std::mutex> lock(m_);
  const auto now = std::chrono::steady_clock::now();
  if (now - window_ >= interval_) {
    if (held_back_ > 0) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - window_).count();
      write(Level::kWarn, std::to_string(held_back_) + " more " + what_ + " in the last " + std::to_string(ms / 1000.0).substr(0, 5) +
                              " s, not logged one by one");
    }
    window_ = now;
    logged_ = 0;
    held_back_ = 0;
  }
  if (logged_ < burst_) {
    ++logged_;
    return true;
  }
  ++held_back_;
  return false;
}

}  // namespace gridrt::log
