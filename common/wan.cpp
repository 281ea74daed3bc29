#include "common/wan.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <system_error>

namespace gridrt {
namespace {

// A non-negative number followed by one of `units` (name, factor); returns number x factor.
double number_with_unit(const std::string& text, const std::string& what, std::initializer_list<std::pair<const char*, double>> units) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) { used = 0; }
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
  if (spec.bytes_per_second > 0) std::snprintf(buf, sizeof buf, "%g ms one way, %g Mbit/s", ms, spec.bytes_per_second * 8 / 1e6);
  else std::snprintf(buf, sizeof buf, "%g ms one way, no rate limit", ms);
  return buf;
}

bool WanPlan::active() const {
  if (between_sites.active() || !access.empty() || (access_for_all && between_sites.bytes_per_second > 0)) return true;
  for (const auto& [sites, spec] : pairs)
    if (spec.active()) return true;
  return false;
}

WanSpec WanPlan::pair(const std::string& a, const std::string& b) const {
  const auto it = pairs.find(a < b ? std::make_pair(a, b) : std::make_pair(b, a));
  return it == pairs.end() ? between_sites : it->second;
}

WanPlan::Line WanPlan::line(const std::string& from, const std::string& to) const {
  if (const auto it = access.find(from); it != access.end())
    return {from + ">*", it->second > 0 ? it->second : between_sites.bytes_per_second};
  if (access_for_all) return {from + ">*", between_sites.bytes_per_second};
  return {from + ">" + to, pair(from, to).bytes_per_second};
}

std::set<std::string> WanPlan::named_sites() const {
  std::set<std::string> out;
  for (const auto& [sites, spec] : pairs) out.insert({sites.first, sites.second});
  for (const auto& [site, rate] : access) out.insert(site);
  return out;
}

std::string WanPlan::describe() const {
  std::string out = "between sites " + gridrt::describe(between_sites);
  for (const auto& [sites, spec] : pairs) out += "; " + sites.first + "-" + sites.second + " " + gridrt::describe(spec);
  if (access_for_all) out += "; every site's outgoing traffic shares one access line";
  for (const auto& [site, rate] : access) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g Mbit/s", line(site, "").bytes_per_second * 8 / 1e6);
    out += "; " + site + "'s outgoing traffic shares one access line of " + buf;
  }
  return out;
}

bool apply_wan_option(WanPlan& plan, const std::string& option, const std::string& value) {
  if (option == "--emulate-wan") {
    plan.between_sites = parse_wan_spec(value);
  } else if (option == "--emulate-wan-pair") {
    const auto colon = value.find(':'), equals = value.find('=');
    if (colon == std::string::npos || equals == std::string::npos || colon == 0 || equals < colon + 2 || equals + 1 >= value.size())
      throw std::invalid_argument("'" + value + "' must be SITE:SITE=DELAY[,RATE], e.g. site0:site1=30ms,50mbit");
    const std::string a = value.substr(0, colon), b = value.substr(colon + 1, equals - colon - 1);
    if (a == b) throw std::invalid_argument("'" + value + "' names site '" + a + "' twice: a pair needs two sites");
    plan.pairs[a < b ? std::make_pair(a, b) : std::make_pair(b, a)] = parse_wan_spec(value.substr(equals + 1));
  } else if (option == "--emulate-wan-access") {
    const auto equals = value.find('=');
    const std::string site = value.substr(0, equals);
    if (site.empty()) throw std::invalid_argument("'" + value + "' must be SITE[=RATE] or all");
    if (site == "all" && equals == std::string::npos) {
      plan.access_for_all = true;
    } else {
      const double rate = equals == std::string::npos
                              ? 0
                              : number_with_unit(value.substr(equals + 1), "rate", {{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}}) / 8;
      if (equals != std::string::npos && rate < 1e3 / 8) throw std::invalid_argument("the rate in '" + value + "' is below 1 kbit");
      plan.access[site] = rate;  // 0: the default rate, whatever it is when the line is used
    }
  } else {
    return false;
  }
  return true;
}

// ---------------------------------------------------------------- lines

namespace {
std::int64_t ns_of(WanLine::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
WanLine::Clock::time_point time_of(std::int64_t ns) {
  return WanLine::Clock::time_point(std::chrono::duration_cast<WanLine::Clock::duration>(std::chrono::nanoseconds(ns)));
}
// FNV-1a, 64 bits: a short, stable name for a shared object whatever the sites are called.
std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
}  // namespace

std::unique_ptr<WanLine> WanLine::shared(const std::string& grid, const std::string& name, double bytes_per_second) {
  static_assert(std::atomic<std::int64_t>::is_always_lock_free, "a line shared between processes needs a lock-free atomic");
  auto line = std::make_unique<WanLine>(bytes_per_second);
  char shm[64];
  std::snprintf(shm, sizeof shm, "/gridrt-wan-%u-%016llx", static_cast<unsigned>(::geteuid()),
                static_cast<unsigned long long>(fnv1a(grid + "|" + name)));
  const int fd = ::shm_open(shm, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), std::string("shm_open ") + shm);
  // Made zero-filled (the line free since ever) by whichever relay comes first; a later
  // ftruncate to the same size changes nothing.
  void* p = ::ftruncate(fd, sizeof(std::int64_t)) == 0 ? ::mmap(nullptr, sizeof(std::int64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                                       : MAP_FAILED;
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) throw std::system_error(err, std::generic_category(), std::string("mapping ") + shm);
  line->mapped_ = p;
  line->shm_name_ = shm;
  line->free_ = static_cast<std::atomic<std::int64_t>*>(p);
  return line;
}

WanLine::~WanLine() {
  if (!mapped_) return;
  ::munmap(mapped_, sizeof(std::int64_t));
  // Gone from the name space; relays that mapped it keep their mapping (a relay of this
  // site started later would get a line of its own: the grid's relays start together).
  ::shm_unlink(shm_name_.c_str());
}

WanLine::Clock::time_point WanLine::clocked_out(std::size_t bytes, Clock::time_point now) {
  const std::int64_t clocking = bytes_per_second_ > 0 ? std::llround(static_cast<double>(bytes) / bytes_per_second_ * 1e9) : 0;
  std::int64_t was = free_->load(std::memory_order_relaxed), done = 0;
  do done = std::max(was, ns_of(now)) + clocking;
  while (!free_->compare_exchange_weak(was, done, std::memory_order_relaxed));
  return time_of(done);
}

}  // namespace gridrt
