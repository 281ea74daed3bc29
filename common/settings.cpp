#include "common/settings.h"

#include <cstdlib>
#include <stdexcept>

#include "common/flow_control.h"

namespace gridrt::settings {

namespace {

constexpr unsigned kAll = kProcesses | kDaemons | kGridrun;

std::vector<Setting> make_table() {
  using W = std::vector<std::string>;
  return {
      {"GRIDRT_LOG", "warn", "log level of the daemons, gridrun and the job's processes",
       "daemons' and processes' log level: `error`, `warn`, `info`, `debug`", kAll, W{"warn", "error", "info", "debug"}},
      {"GRIDRT_DEAD_PEER_SECONDS", "30", "a peer that vanished or hangs is given up after this many seconds",
       "daemons' and processes': a connection whose peer vanished without closing it (a crashed host, a line that drops everything) "
       "or hangs (a stopped process, a stalled daemon) fails within this many seconds (heartbeats every sixth of it, TCP keepalive and "
       "`TCP_USER_TIMEOUT`); set it in the daemons' environment too",
       kAll, W{}, 3, 86400, "seconds"},
      {"GRIDRT_WAIT", "yield", "how a process waits on MPI", "how a process waits on MPI: `spin`, `yield` (the CPU to others), `sleep`",
       kProcesses, W{"yield", "spin", "sleep"}},
      {"GRIDRT_WINDOW", "524800 (512 KiB in whole frames), growing", "flow-control window per stream (fixed)",
       "flow-control window per stream, bytes (docs/protocol.md). Unset, each stream's window starts at 524800 bytes (512 KiB of messages "
       "in eight whole frames of 64 KiB, four of 128 KiB) and doubles, up to "
       "16 MiB, where its line carries more per round trip (a long fat WAN); set, it stays as set (`gridrun calibrate` warns where it "
       "holds a line back and names the value; the model's predictions and auto's choices follow the window the job keeps; "
       "docs/models.md)",
       kProcesses | kTools, W{}, flow::kMinWindowBytes, flow::kMaxWindowBytes, "bytes"},
      {"GRIDRT_INIT_TIMEOUT", "300", "how long gridrt::init waits for the others",
       "seconds `gridrt::init` (and `MPI_Init`) waits for the job's other processes to join", kProcesses, W{}, 1, 1000000, "seconds"},
      {"GRIDRT_FINALIZE_TIMEOUT", "20", "how long MPI_Finalize may take once everyone is there",
       "seconds `MPI_Finalize` may take once the whole job has reached finalize; past them a process stuck there leaves with status 0, "
       "saying so (docs/architecture.md)",
       kProcesses, W{}, 1, 1000000, "seconds"},
      {"GRIDRT_COLL", "auto", "the collectives' algorithm when the call does not say",
       "collectives' algorithm when the call does not say: `hier`, `flat`, `auto` (docs/algorithms.md)", kProcesses,
       W{"auto", "hier", "flat"}},
      {"GRIDRT_MODEL", "none", "a model file auto chooses by",
       "a model file (`gridrun calibrate`) every process can read: `auto` then chooses by its predictions (docs/models.md); over the "
       "model `gridrun --model` hands the job (`GRIDRT_MODEL_JSON`) and the one the broker keeps (`gridbroker --model`)",
       kProcesses, W{}},
      {"GRIDRT_EXPLAIN", "0", "1: log each distinct choice of auto",
       "`1`: member 0 of each communicator logs each distinct choice of `auto` with the predicted times of the candidates", kProcesses,
       W{"0", "1"}},
      {"GRIDRT_SLICE", "the model's choice, else 65536", "bytes per slice of the pipelined collectives",
       "bytes per slice of pipelined collectives", kProcesses, W{}, 1024, 1ull << 30, "bytes"},
      {"GRIDRT_ROUTE", "auto", "the route every hierarchical collective takes between clusters",
       "how every hierarchical scatter and gather crosses between clusters: `packed`, `ordered`, `binomial`, `chain` or `direct` "
       "(docs/algorithms.md, \"Routes of scatter and gather\"); every broadcast and commutative reduction: `packed`, `binomial` or "
       "`chain`; the hierarchical all-to-all: `agents`, or `groups` (the Local Group paper's rule, two clusters only); the hierarchical "
       "all-reduce: `heads`, `rooted` (a reduction then a broadcast), or `reduce-scatter` (through the heads in pieces, each folded by "
       "one head); the reduce-scatter: `heads` (each site's blocks through the heads) or `rooted` (a reduction then a scatter); `auto`: "
       "the model's least predicted, else `packed`, `agents` and `heads`; a route an operation does not have means its first",
       kProcesses, W{"auto", "packed", "ordered", "binomial", "chain", "direct", "agents", "groups", "heads", "rooted", "reduce-scatter"}},
      {"GRIDRT_GATHER_PIECES", "auto", "pieces of the hierarchical gather's step inside a cluster",
       "the hierarchical gather's step inside a cluster in this many paced pieces (`1`: MPICH's one gather); `auto`: as the cluster's "
       "many-to-one model says, where the model has one (docs/models.md)",
       kProcesses, W{"auto"}, 1, 65536, "pieces"},
      {"GRIDRT_NODE_LEVEL", "off", "on: collectives enter every node of a cluster once",
       "`on`: inside a cluster spanning several nodes, collectives enter every node once (gridrt's node level) instead of leaving the "
       "nodes to MPICH (docs/algorithms.md, \"Node level\", says why it is off by default)",
       kProcesses, W{"off", "on"}},
      {"GRIDRT_CLUSTER_STEPS", "model", "steps inside a cluster composed over its logical clusters",
       "inside a cluster the model splits into logical clusters: `model` composes each step over them where the model predicts it "
       "faster than MPICH's own steps over the whole cluster, `composed` always, `mpich` never (docs/algorithms.md, \"Node level\")",
       kProcesses, W{"model", "composed", "mpich"}},
      {"GRIDRT_DIRECT", "on", "off: all cross-cluster traffic through the relays",
       "`off` keeps all cross-cluster traffic on the relays, whatever the grid allows", kProcesses, W{"on", "off"}},
      {"GRIDRT_MPI_LAYER", "on", "off: the application has MPICH alone",
       "`off`: the process monitor does not load the MPI layer into the application, which then has MPICH alone (each cluster its own "
       "`MPI_COMM_WORLD`; docs/mpi.md)",
       kProcesses, W{"on", "off"}},
      {"GRIDRT_LINK_ENCRYPTION", "tls", "none: the embedded grid's relay links without TLS (benchmarks only)",
       "for gridrun's embedded grid: `none` starts its relays with `--link-encryption none` — relay links without TLS, **for "
       "benchmarks only** (no privacy, no authentication)",
       kGridrun, W{"tls", "none"}},
      {"GRIDRT_LINK_THREAD", "auto", "the embedded grid's relays' --link-thread",
       "for gridrun's embedded grid: its relays' `--link-thread` (`on`: relay links on a thread of their own; `off`: on the relay's one "
       "thread; `auto`: on where the machine has 4 or more CPUs; docs/operating.md)",
       kGridrun, W{"auto", "on", "off"}},
      {"MPIEXEC_TIMEOUT", "none", "as --timeout, where the option is not given",
       "seconds, as `--timeout` where the option is not given (as MPICH's `mpiexec` takes it); gridrun keeps the time, not the "
       "clusters' `mpiexec`",
       kGridrun, W{}},
      // What gridrt sets for the processes it starts.
      {"GRIDRT_RELAY", "", "", "the relay's address the process joins the job through", kByGridrt, W{}},
      {"GRIDRT_JOB", "", "", "the job's number", kByGridrt, W{}, 1, ~0ull, ""},
      {"GRIDRT_SECRET", "", "", "the job's secret, which the process proves itself to its relay with", kByGridrt, W{}},
      {"GRIDRT_CLUSTER", "", "", "the name of the process's cluster", kByGridrt, W{}},
      {"GRIDRT_LISTEN", "", "", "where the process listens for direct connections from other clusters' processes (`none`: it does not)",
       kByGridrt, W{}},
      {"GRIDRT_MODEL_JSON", "", "", "the model `gridrun --model` hands the job, as text", kByGridrt, W{}},
      {"GRIDRT_ON_CLUSTER_LOSS", "", "", "`continue` when the JobProfile says so (docs/jobprofile.md)", kByGridrt, W{"stop", "continue"}},
      {"GRIDRT_FILE_SYSTEMS", "", "", "the file systems the cluster's nodes share with others, as the grid declares them (docs/grid.md)",
       kByGridrt, W{}},
      {"GRIDRT_NODE_DIR", "", "", "a node's own directory for the job's files, where the nodes share none with the relay", kByGridrt, W{}},
      {"GRIDRT_GRIDRUN", "", "", "gridrun's path, to `gridrun calibrate`'s job", kByGridrt, W{}},
  };
}

std::string one_of(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) out += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  return out;
}

// What a setting may be, said to the user.
std::string what_it_may_be(const Setting& s) {
  if (!s.is_number()) return "one of " + one_of(s.words);
  std::string out =
      "a number" + (*s.unit ? " of " + std::string(s.unit) : "") + " from " + std::to_string(s.low) + " to " + std::to_string(s.high);
  if (!s.words.empty()) out += ", or " + one_of(s.words);
  return out;
}

}  // namespace

const std::vector<Setting>& table() {
  static const std::vector<Setting> rows = make_table();
  return rows;
}

const Setting& find(const std::string& name) {
  for (const Setting& s : table())
    if (name == s.name) return s;
  throw std::logic_error("gridrt: the setting " + name + " is not in the settings table (common/settings.cpp)");
}

std::optional<std::string> value(const std::string& name) {
  const Setting& s = find(name);
  const char* v = std::getenv(s.name);
  if (!v || (!*v && !s.is_number() && s.words.empty())) return std::nullopt;
  const std::string text = v;
  for (const std::string& w : s.words)
    if (text == w) return text;
  if (s.is_number()) {
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*v && !*end && *v != '-' && n >= s.low && n <= s.high) return text;
  } else if (s.words.empty()) {
    return text;
  }
  throw std::invalid_argument(name + "='" + text + "' must be " + what_it_may_be(s));
}

std::optional<unsigned long long> number(const std::string& name) {
  const std::optional<std::string> v = value(name);
  if (!v || !find(name).is_number()) return std::nullopt;
  for (const std::string& w : find(name).words)
    if (*v == w) return std::nullopt;
  return std::strtoull(v->c_str(), nullptr, 10);
}

std::optional<std::string> first_bad(unsigned readers) {
  for (const Setting& s : table()) {
    if (!(s.readers & readers)) continue;
    try {
      value(s.name);
    } catch (const std::invalid_argument& e) { return e.what(); }
  }
  return std::nullopt;
}

std::string help(unsigned readers) {
  std::string out = "Settings (environment variables; docs/settings.md has each in full):\n";
  for (const Setting& s : table()) {
    if (!(s.readers & readers) || (s.readers & kByGridrt)) continue;
    const std::string head = "  " + std::string(s.name);
    const std::string values = s.is_number() || !s.words.empty() ? what_it_may_be(s) : "text";
    out += head + std::string(head.size() < 28 ? 28 - head.size() : 1, ' ') + s.summary + "\n" + std::string(28, ' ') + values +
           "; unset: " + s.fallback + "\n";
  }
  return out;
}

std::string markdown() {
  auto rows = [](bool by_gridrt) {
    std::string out;
    for (const Setting& s : table()) {
      if (static_cast<bool>(s.readers & kByGridrt) != by_gridrt) continue;
      std::string readers;
      for (auto [bit, who] : {std::pair{kProcesses, "processes"}, {kDaemons, "daemons"}, {kGridrun, "gridrun"}, {kTools, "tools"}})
        if (s.readers & bit) readers += (readers.empty() ? "" : ", ") + std::string(who);
      const std::string values = s.is_number() || !s.words.empty() ? what_it_may_be(s) : "text";
      out += "| `" + std::string(s.name) + "` | " + (by_gridrt ? "" : std::string(s.fallback) + " | " + readers + " | ") + values + " | " +
             s.meaning + " |\n";
    }
    return out;
  };
  return "# Settings\n\n"
         "gridrt reads these from the environment. Every value is checked where it is read: a bad one stops the program that reads "
         "it with a message naming the variable, its value and what it may be (gridrun, gridbroker and gridrelay before they start, "
         "a job's processes in `MPI_Init`). Set them for a job in gridrun's environment with `--env NAME=VALUE` (or `--env NAME`), or "
         "in the JobProfile's `<environment>`; the daemons' in their own environment. `gridrun --help`, `gridrelay --help` and "
         "`gridbroker --help` list the ones each reads.\n\n"
         "This page is written from the settings table (`common/settings.cpp`) by `gridrun settings --markdown`; a test keeps the "
         "two the same.\n\n"
         "| variable | unset | read by | values | what |\n|---|---|---|---|---|\n" +
         rows(false) +
         "\n## Set by gridrt\n\n"
         "gridrt sets these for the processes it starts (the relay, from the job's description and the grid's); they are listed so "
         "that a program's environment can be read, not to be set by hand.\n\n"
         "| variable | values | what |\n|---|---|---|\n" +
         rows(true);
}

}  // namespace gridrt::settings
