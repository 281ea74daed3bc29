// gridrelay: see relay.h and docs/architecture.md.
#include <sched.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstdio>
#include <filesystem>

#include "common/cli.h"
#include "common/grid_map.h"
#include "common/heap.h"
#include "common/watchdog.h"
#include "common/xml.h"
#include "relay/relay.h"

namespace {
// The CPUs this process may run on (its affinity: a container's or a cgroup's share, not
// the machine's count).
int cpus_to_run_on() {
  cpu_set_t set;
  return ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

const char* kUsage = R"(usage: gridrelay --grid FILE --cluster NAME --broker HOST:PORT --cert PEM --key PEM --ca PEM

The relay of one cluster: run it on the cluster's front-end. It registers the cluster with
the broker, starts the cluster's part of each job with the launch command of the grid
description, and carries the job's traffic to and from other clusters.

  --grid FILE         grid description (docs/grid.md) holding this cluster
  --cluster NAME      which cluster of the grid this relay serves
  --broker HOST:PORT  the broker to register with (retried every second until reachable)
  --cert/--key PEM    this relay's certificate and key, issued by the grid CA
  --ca PEM            the grid CA
  --grid-mapfile FILE which local account runs each grid user's processes (docs/security.md):
                      lines '"user alice" alice' (certificate name, account); re-read for
                      every job; a user not in it is refused. Needs the relay to run as
                      root. Without it every job runs as the relay's own user, and users'
                      jobs are not isolated from each other.
  --single-user       this relay serves one user's own grid (gridrun's embedded grid): its
                      jobs run as its user by design, so it does not warn that users are
                      not isolated
  --quiet             no start-up line (gridrun's embedded grid)
  --cgroup auto|off|DIR
                      where each job's part gets a cgroup (v2) of its own, whose processes
                      are all killed when the part ends, whatever they did to leave it
                      (docs/security.md): auto (the default) below the relay's own cgroup
                      when the relay may make cgroups there (root, or delegated), DIR below
                      that directory of the unified hierarchy (refused if it cannot), off
                      for none. Without one, each rank's monitor alone contains what the
                      rank starts.
  --broker-grace SECONDS
                      how long this cluster's jobs keep running when the broker is lost
                      (default 60): a broker restarted on its --state-dir within it takes
                      them back; after it they are killed
  --cache-size SIZE   the most the cache of jobs' files may hold (default 8G; K, M, G,
                      T as powers of 1024): in the cluster's stageDir (docs/grid.md), or
                      below $TMPDIR; the files used least lately go first
  --fetch-limit SIZE  the largest file a job may have fetched from an http(s) URL
                      (default 4G)
  --link-grace SECONDS
                      how long a broken link to another cluster's relay may stay down
                      before that cluster is cut off (default 60, or the grid description's
                      linkGrace): meanwhile the jobs across it pause, it is dialled again,
                      and what the other side had not received is sent again
  --gridproc PATH     the per-process monitor (default: gridproc next to this program)
  --link-encryption tls|none
                      relay-to-relay links over mutual TLS 1.3 (the default), or, for
                      benchmarks only, unencrypted and unauthenticated (every relay of the
                      grid must then say none)
  --link-thread auto|on|off
                      relay links on a thread of their own (on: their TLS work off the
                      thread that serves the cluster, for a front-end with a core to
                      spare), or on the relay's one thread (off: no hand-off between
                      threads, two wake-ups fewer per frame); auto, the default: on where
                      this machine has 4 or more CPUs, else off
  --emulate-wan DELAY[,RATE]
                      test facility: what this relay sends to clusters of other sites
                      crosses an emulated WAN line, DELAY one way (us, ms, s) at RATE (kbit, mbit,
                      gbit), e.g. 10ms,100mbit, shared with the site's other relays on this
                      machine; over the grid description's <wan> (docs/grid.md)
  --emulate-wan-pair A:B=DELAY[,RATE]
                      between sites A and B instead (repeatable)
  --emulate-wan-access SITE[=RATE]|all
                      SITE's traffic to every other site shares one access line (repeatable)
  --help              this text
  --version           print gridrt's version
Logging goes to stderr; set GRIDRT_LOG=info or debug for more.
)";

// The relay's job cgroups as --cgroup asks (common/cgroup.h), or none. Where the relay
// chose (auto) and cannot, it says so, loudly on a shared grid (a grid map), where users'
// jobs should not be able to outlive their jobs; where the operator named a directory, it
// refuses to start.
std::shared_ptr<gridrt::JobCgroups> job_cgroups(const std::string& where, bool shared_grid) {
  using namespace gridrt;
  if (where == "off") {
    log::info("--cgroup off: each job's ranks are contained by their monitors only");
    return nullptr;
  }
  try {
    auto made = std::make_shared<JobCgroups>(where == "auto" ? "" : where);
    log::info("each job's part runs in a cgroup of its own below ", made->dir());
    return made;
  } catch (const std::exception& e) {
    if (where != "auto") throw std::invalid_argument(std::string("--cgroup: ") + e.what());
    const std::string text = std::string("jobs' processes are contained by their monitors only, not by cgroups: ") + e.what();
    if (shared_grid) log::warn(text);
    else log::info(text);
    return nullptr;
  }
}
}  // namespace

int main(int argc, char** argv) {
  using namespace gridrt;
  log::set_component("relay");
  keep_freed_heap_for_reuse();
  std::string grid_path, cluster, broker, gridproc, link_encryption = "tls", link_thread = "auto", grid_map, broker_grace = "60",
                                                    cgroup = "auto", link_grace, cache_size, fetch_limit;
  bool single_user = false, quiet = false;
  tls::Credentials creds;
  std::vector<std::pair<std::string, std::string>> wan_options;
  parse_daemon_options(argc, argv, "gridrelay", kUsage,
                       {{"--grid", &grid_path},
                        {"--cluster", &cluster},
                        {"--broker", &broker},
                        {"--cert", &creds.cert},
                        {"--key", &creds.key},
                        {"--ca", &creds.ca},
                        {"--gridproc", &gridproc},
                        {"--grid-mapfile", &grid_map},
                        {"--link-encryption", &link_encryption},
                        {"--link-thread", &link_thread},
                        {"--broker-grace", &broker_grace},
                        {"--cgroup", &cgroup},
                        {"--link-grace", &link_grace},
                        {"--cache-size", &cache_size},
                        {"--fetch-limit", &fetch_limit}},
                       {"--grid", "--cluster", "--broker", "--cert", "--key", "--ca"},
                       {{"--single-user", &single_user}, {"--quiet", &quiet}},
                       {"--emulate-wan", "--emulate-wan-pair", "--emulate-wan-access"}, &wan_options);
  if (quiet) log::set_notices(false);
  if (gridproc.empty()) gridproc = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "gridproc").string();
  if (link_encryption != "tls" && link_encryption != "none") {
    std::fprintf(stderr, "gridrelay: --link-encryption must be tls or none, not '%s'\n", link_encryption.c_str());
    return 2;
  }
  if (link_thread != "auto" && link_thread != "on" && link_thread != "off") {
    std::fprintf(stderr, "gridrelay: --link-thread must be auto, on or off, not '%s'\n", link_thread.c_str());
    return 2;
  }
  // A number of seconds from 0 to 86400, or -1 (said on stderr) when it is not one.
  const auto seconds_of = [](const char* option, const std::string& text) -> long {
    char* end = nullptr;
    const long seconds = std::strtol(text.c_str(), &end, 10);
    if (!text.empty() && !*end && seconds >= 0 && seconds <= 86400) return seconds;
    std::fprintf(stderr, "gridrelay: %s must be a number of seconds from 0 to 86400, not '%s'\n", option, text.c_str());
    return -1;
  };
  const long grace = seconds_of("--broker-grace", broker_grace);
  const long link_grace_option = link_grace.empty() ? 0 : seconds_of("--link-grace", link_grace);
  if (grace < 0 || link_grace_option < 0) return 2;
  if (!grid_map.empty() && ::geteuid() != 0) {
    std::fprintf(stderr, "gridrelay: --grid-mapfile needs the relay to run as root, to start each user's processes under their account\n");
    return 2;
  }
  int status = 0;
  try {
    if (!grid_map.empty()) {
      const std::size_t users = GridMap::load(grid_map).size();  // a malformed map stops the relay here
      log::info("jobs run under the local accounts that ", grid_map, " gives their users (", users, " mapped)");
    } else if (!single_user) {
      log::warn("no --grid-mapfile: every job runs as this relay's user (uid ", ::geteuid(),
                "), so users' jobs are not isolated from each other");
    }
    Grid grid = load_grid(grid_path);
    // The grid description's emulated WAN, then the options over it.
    for (const auto& [option, value] : wan_options) {
      try {
        apply_wan_option(grid.wan, option, value);
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "gridrelay: %s: %s\n", option.c_str(), e.what());
        return 2;
      }
    }
    const WanPlan& wan = grid.wan;
    const ClusterDesc* desc = grid.find(cluster);
    if (!desc) {
      std::fprintf(stderr, "gridrelay: cluster '%s' is not in %s\n", cluster.c_str(), grid_path.c_str());
      return 2;
    }
    asio::io_context io;
    Relay::Options options{
        *desc, creds, parse_endpoint(broker), gridproc, link_encryption == "tls", wan, grid_map, job_cgroups(cgroup, !grid_map.empty())};
    options.broker_grace = std::chrono::seconds(grace);
    if (!link_grace.empty()) options.link_grace = std::chrono::seconds(link_grace_option);
    else if (grid.link_grace_seconds) options.link_grace = std::chrono::seconds(*grid.link_grace_seconds);
    try {
      if (!cache_size.empty()) options.cache_bytes = parse_bytes(cache_size, "--cache-size");
      if (!fetch_limit.empty()) options.fetch_limit = parse_bytes(fetch_limit, "--fetch-limit");
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "gridrelay: %s\n", e.what());
      return 2;
    }
    options.fetchers = grid.fetchers;
    // A thread of its own pays where a core can do the links' TLS work beside the cluster's;
    // on fewer cores, all shared with the job, its two wake-ups per frame are pure cost
    // (1 KiB round trips through two relays on two cores: 244 against 355 us).
    options.link_thread = link_thread == "on" || (link_thread == "auto" && cpus_to_run_on() >= 4);
    Relay relay(io, options);
    relay.prepare_for_strangers();
    if (wan.active()) log::info("emulating a WAN under relay links: ", wan.describe());
    if (link_encryption == "none")
      log::warn("relay links are NOT encrypted nor authenticated (--link-encryption none): for benchmarks only");
    relay.on_fatal = [&](const std::string& why) {
      std::fprintf(stderr, "gridrelay: the broker refused cluster '%s': %s\n", cluster.c_str(), why.c_str());
      status = 1;
      relay.stop();
      io.stop();
    };
    relay.start();
    const auto watchdog = watch_daemon_loop(io);  // a held loop stops the cluster's traffic
    on_termination_signal(io, [&](int) {
      relay.stop();
      io.stop();
    });
    io.run();
  } catch (const InputError& e) {  // a bad grid description: bad input, as for gridrun
    std::fprintf(stderr, "gridrelay: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {  // an option that cannot be honoured
    std::fprintf(stderr, "gridrelay: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gridrelay: %s\n", e.what());
    return 1;
  }
  return status;
}
