#include "common/wan.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace gridrt {
namespace {

// A non-negative number followed by one of `units` (name, factor); returns number x factor.
double number_with_unit(const std::string& text, const std::string& what,
                        std::initializer_list<std::pair<const char*, double>> units) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  if (used > 0 && std::isfinite(v) && v >= 0)
    for (const auto& [name, factor] : units)
      if (unit == name) return v * factor;
  std::string names;
  for (const auto& [name, factor] : units) names += (names.empty() ? "" : ", ") + std::string(name);
  throw std::invalid_argument("the " + what + " '" + text + "' must be a number and a unit (" + names + ")");
}

}  // namespace

WanSpec parse_wan_spec(const std::string& text) {
  const auto comma = text.find(',');
  const std::string delay = text.substr(0, comma);
  WanSpec s;
  const double seconds = number_with_unit(delay, "delay", {{"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}});
  if (seconds > 60) throw std::invalid_argument("the delay '" + delay + "' is more than a minute");
  s.delay = std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(seconds * 1e9)));
  if (comma != std::string::npos) {
    const std::string rate = text.substr(comma + 1);
    const double bits = number_with_unit(rate, "rate", {{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}});
    if (bits < 1e3) throw std::invalid_argument("the rate '" + rate + "' is below 1 kbit");
    s.bytes_per_second = bits / 8;
  }
  return s;
}

std::string describe(const WanSpec& spec) {
  char buf[96];
  const double ms = std::chrono::duration<double, std::milli>(spec.delay).count();
  if (spec.bytes_per_second > 0)
    std::snprintf(buf, sizeof buf, "%g ms one way, %g Mbit/s", ms, spec.bytes_per_second * 8 / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%g ms one way, no rate limit", ms);
  return buf;
}

WanLine::Clock::time_point WanLine::arrival(std::size_t bytes, Clock::time_point now) {
  const Clock::time_point start = std::max(now, line_free_);
  const auto clocking = spec_.bytes_per_second > 0
                            ? std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(bytes / spec_.bytes_per_second))
                            : Clock::duration::zero();
  line_free_ = start + clocking;
  return line_free_ + spec_.delay;
}

}  // namespace gridrt
