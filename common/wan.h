// WAN emulation, a test facility (docs/benchmarks.md): so that hierarchy can be
// measured on one machine, each relay can make what it sends on relay links cross an
// emulated wide-area line — a serial line of a given rate followed by a one-way delay.
// Every relay shapes its outgoing link traffic to other sites, so each direction between two
// sites sees the delay and the rate once, as on a symmetric WAN path; the relays of one
// site share their lines (WanLine::shared), so a site of several clusters has one WAN
// line per pair of sites (or one access line), not one per cluster.
//
// Why inside the relay and not a proxy process between relays: a relay link may be dialled
// by either side (reverse connections), and the relays learn each other's link address
// from the broker; a proxy would need its own addresses threaded through registration.
// Shaping at the sender gives the same timing with no extra hop or process.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

namespace gridrt {

struct WanSpec {
  std::chrono::nanoseconds delay{0};  // one way
  double bytes_per_second = 0;        // 0: no rate limit
  bool active() const { return delay.count() > 0 || bytes_per_second > 0; }
};

// "DELAY[,RATE]": DELAY a number with us, ms or s ("10ms", "0.5ms"); RATE a number with
// kbit, mbit or gbit ("100mbit"). Throws std::invalid_argument naming what is wrong.
WanSpec parse_wan_spec(const std::string& text);
std::string describe(const WanSpec& spec);  // "10 ms one way, 100 Mbit/s"

// The emulated WAN of a grid: a delay and a rate for each pair of sites, and the lines
// a site's outgoing traffic shares (docs/grid.md, "An emulated WAN"). A site's traffic to
// another site is clocked through one line, shared by all of its relays (clusters), at the
// pair's rate, then travels for the pair's delay; a site with an access link instead
// clocks everything it sends to every other site through that one line at the access rate
// (the one-port assumption of the papers' models), then the pair's delay.
struct WanPlan {
  WanSpec between_sites;                                         // every pair not named below
  std::map<std::pair<std::string, std::string>, WanSpec> pairs;  // (a, b) with a < b
  std::map<std::string, double> access;                          // site -> access line's bytes per second (0: the default rate)
  bool access_for_all = false;                                   // every site not in `access` has one at between_sites' rate

  bool active() const;
  WanSpec pair(const std::string& a, const std::string& b) const;  // either order
  // The line what `from` sends to `to` is clocked through: its name, the same in every
  // relay ("A>B" for the pair's, "A>*" for A's access line), and its rate (0: none).
  struct Line {
    std::string name;
    double bytes_per_second = 0;
  };
  Line line(const std::string& from, const std::string& to) const;
  std::set<std::string> named_sites() const;  // the sites its pairs and access lines name
  std::string describe() const;               // one line, for logs and --explain
};

// The command-line forms, the same for gridrun, gridbench and gridrelay; each returns
// false for an option that is not one of them and throws std::invalid_argument naming
// what is wrong:
//   --emulate-wan DELAY[,RATE]               between every two sites not named otherwise
//   --emulate-wan-pair A:B=DELAY[,RATE]      between sites A and B (both ways)
//   --emulate-wan-access SITE[=RATE]|all     SITE's outgoing WAN traffic shares one line
//                                            (at RATE, or the default rate)
bool apply_wan_option(WanPlan& plan, const std::string& option, const std::string& value);
inline bool is_wan_option(const std::string& option) {
  return option == "--emulate-wan" || option == "--emulate-wan-pair" || option == "--emulate-wan-access";
}

// The serial part of an emulated line: messages are clocked out in order at its rate, each
// after the one before (the delay that follows is the pair's: WanPlan::pair). A line of one
// relay's own, or one shared (shared()) by every process of this machine that opens the
// same name: the relays of one site, separate processes, then clock their traffic through
// one line, as a site's share of one WAN link.
class WanLine {
 public:
  using Clock = std::chrono::steady_clock;
  explicit WanLine(double bytes_per_second) : bytes_per_second_(bytes_per_second), free_(&own_) {}  // 0: no rate limit
  // The line `name` of the grid whose broker is `grid` (its address: one grid's relays
  // agree on it, another grid's lines are others), kept in a small shared-memory object.
  // Throws std::system_error when it cannot be made.
  static std::unique_ptr<WanLine> shared(const std::string& grid, const std::string& name, double bytes_per_second);
  ~WanLine();
  WanLine(const WanLine&) = delete;
  WanLine& operator=(const WanLine&) = delete;

  // When the line has clocked out `bytes` handed over at `now` (after all before them).
  Clock::time_point clocked_out(std::size_t bytes, Clock::time_point now);

 private:
  double bytes_per_second_;
  std::atomic<std::int64_t> own_{0};  // when the line is free, ns on the steady clock
  std::atomic<std::int64_t>* free_;   // own_, or in the shared object
  void* mapped_ = nullptr;
  std::string shm_name_;
};

}  // namespace gridrt
