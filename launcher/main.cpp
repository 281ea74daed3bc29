// gridrun: submit a JobProfile and follow it to its end. See --help and README.md.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <signal.h>

#include "common/cli.h"
#include "common/grid.h"
#include "common/jobprofile.h"
#include "common/ladder.h"
#include "common/log.h"
#include "common/settings.h"
#include "common/wire.h"
#include "common/wan.h"
#include "models/grid_model.h"
#include "launcher/ca.h"
#include "launcher/embedded.h"
#include "launcher/submit.h"

namespace {

const char* kUsage = R"(usage: gridrun [options] -n N PROGRAM [ARGS...]
       gridrun [options] JOBPROFILE.xml
       gridrun status --broker HOST:PORT --cert PEM --key PEM --ca PEM
       gridrun cancel JOB --broker HOST:PORT --cert PEM --key PEM --ca PEM
       gridrun ca ...      (the grid's certificate authority: gridrun ca --help)
       gridrun calibrate [grid options] [--output FILE]   (measure the grid: --help)
       gridrun settings [--markdown]   (the settings gridrt reads from the environment)

Runs an MPI program, or the job a JobProfile describes, as one MPI job across the clusters
of a grid: every cluster runs its part as an ordinary MPICH job behind its relay, and
gridrt connects the parts. MPI_COMM_WORLD holds every process of the job: an unmodified MPI
program runs across clusters (docs/mpi.md). Output lines are prefixed with [cluster:rank].

The first argument that is not an option is the JobProfile if it ends in .xml, else the
program; what follows the program is its arguments (and `--` ends the options). A program
runs as a job of one group of N processes, in gridrun's working directory; it is found on
PATH if its name has no slash.

Job options:
  -n N, -np N          number of processes (default: every slot of the embedded grid);
                       with a JobProfile: sets $NPROCS in it
  --var NAME=VALUE     sets $NAME in the profile (repeatable)
  --url-scheme SCHEME  the grid's relays fetch SCHEME:// URLs (a <fetcher> of its grid
                       description, docs/grid.md): the profile may name files so (an
                       embedded grid's fetchers count without it; http and https always)
  --env NAME=VALUE     sets NAME in every process's environment (repeatable; over the
                       profile's <environment>); --env NAME passes on gridrun's own value
  -genv NAME VALUE     the same, as mpiexec writes it; -genvlist NAME,... passes on
                       gridrun's values of those
  --model FILE         the grid's model (from gridrun calibrate): auto then chooses
                       each collective's algorithm from its predictions (docs/models.md)
  --timeout SECONDS    stop the job once it has run this long (default: MPIEXEC_TIMEOUT
                       if set, else none); gridrun then exits 124
  --label, -l          prefix every output line with [cluster:rank] (the default)
  --no-label           print the processes' lines as they are
  --dry-run            print how the groups map onto clusters and ranks, run nothing
  --explain            print how each pair of clusters connects, and why, and the
                       logical clusters the model (--model, or the broker's) splits
                       clusters into, with the latencies behind them; the processes
                       then say each choice auto makes (GRIDRT_EXPLAIN=1). With
                       --dry-run: and run nothing
  -v, --verbose        say what gridrun is doing (job id, daemons' log level info)
  --version            print gridrt's version and exit

Grid options:
  (none)               use the embedded default grid: a broker and one relay per cluster
                       started on this machine for this job, with fresh certificates in
                       a private temporary directory, all removed afterwards
  --grid FILE          grid description for the embedded grid (docs/grid.md), instead of
                       the default of 2 clusters x 3 slots
  --clusters C         the default grid with C clusters (each its own site) ...
  --ranks-per-cluster R
                       ... of R slots each (defaults 2 and 3)
  --unshared-files     the default grid's clusters declare no file system they share:
                       a file a job opens across clusters then lives in one cluster (rank
                       0's, or the one its info key gridrt_file_cluster names) and the
                       others reach it through the relays (docs/mpi.md, "Files")
  --emulate-wan DELAY[,RATE]
                       test facility: relay links between sites (every cluster of
                       the default grid is a site) cross an emulated WAN line, DELAY
                       one way (us, ms, s) and RATE (kbit, mbit, gbit) each way,
                       e.g. 10ms,100mbit; a site's clusters share its lines
  --emulate-wan-pair A:B=DELAY[,RATE]
                       between sites A and B instead (repeatable; the default
                       grid's sites are site0, site1, ...)
  --emulate-wan-access SITE[=RATE]|all
                       SITE's traffic to all other sites shares one access line
                       (repeatable); docs/grid.md, "An emulated WAN"
  --broker HOST:PORT   submit to a running broker instead (needs the three below)
  --cert PEM --key PEM your user certificate and key, issued by the grid's CA
  --ca PEM             the grid's CA certificate

Variables always defined: NPROCS (see -n), GRIDRT_BIN (the directory of gridrun) and
GRIDRT_EXAMPLES (where gridrt's example programs are: beside gridrun in a build tree,
PREFIX/libexec/gridrt/examples once installed).

Environment and working directory, the same on the embedded grid and a standing one: the
processes start in gridrun's current directory (or the profile's <workingDirectory>),
which must exist on the clusters' nodes; their environment is their relay's (on the
embedded grid, gridrun's own), without the daemons' own GRIDRT_LOG, plus the profile's
<environment> and --env/-genv/-genvlist, plus what gridrt sets (GRIDRT_*, PMI_*).

Exit status: 0 when every process exited 0; otherwise the first non-zero status of a
process (128+N for signal N), with a one-line summary of the failed ranks on stderr;
2 for bad input (the message names file:line:column and the element); 1 when the grid
could not run the job (broker unreachable, daemons failed to start); 124 when --timeout
stopped it; 128+N when gridrun got signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), the job
then stopped everywhere before gridrun returns.
A profile with <onClusterLoss>continue</onClusterLoss> goes on without a cluster whose
process failed, whose relay died or that was cut off from the others: gridrun says so
("lost cluster C: ...") and the status is that of the clusters not lost.
)";

const char* kCancelUsage = R"(usage: gridrun cancel JOB --broker HOST:PORT --cert PEM --key PEM --ca PEM

Cancels job JOB of a standing grid (its id: gridrun -v prints it, the broker's journal
records it), one of your own, from wherever it was submitted: the broker stops it on every
cluster, and the gridrun that follows it ends with status 130, as after Ctrl-C.

  --broker HOST:PORT   the grid's broker
  --cert PEM --key PEM your user certificate and key (the job's submitter's)
  --ca PEM             the grid's CA certificate

Exit status: 0 when the job is being stopped; 1 when the broker refused (no job of yours
runs with that id) or could not be reached; 2 for bad usage.
)";

const char* kStatusUsage = R"(usage: gridrun status --broker HOST:PORT --cert PEM --key PEM --ca PEM

Prints how a standing grid stands: each cluster with its site, slots, free slots and
whether its relay is up; how many jobs run and wait; each running job with its id, owner,
application, processes, age and clusters. Any user of the grid may ask.

Exit status: 0 when the broker answered; 1 when it could not be reached or refused; 2 for
bad usage.
)";

int status_command(int argc, char** argv) {
  using namespace gridrt;
  std::string broker;
  tls::Credentials creds;
  parse_daemon_options(argc, argv, "gridrun status", kStatusUsage,
                       {{"--broker", &broker}, {"--cert", &creds.cert}, {"--key", &creds.key}, {"--ca", &creds.ca}},
                       {"--broker", "--cert", "--key", "--ca"});
  try {
    return print_grid_status(broker, creds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gridrun status: %s\n", e.what());
    return 1;
  }
}

int cancel_command(int argc, char** argv) {
  using namespace gridrt;
  const std::string id = argc > 1 ? argv[1] : "";
  if (id == "--help" || id == "-h") {
    std::fputs(kCancelUsage, stdout);
    return 0;
  }
  // 1 to 19 digits, not 0: a job id as the broker numbers them (64 bits).
  const bool digits = !id.empty() && id.size() <= 19 && id.find_first_not_of("0123456789") == std::string::npos;
  const std::uint64_t job = digits ? std::stoull(id) : 0;
  if (job == 0) {
    std::fprintf(
        stderr, "gridrun cancel: %s\n%s",
        id.empty() || id[0] == '-' ? "which job? Give its id first." : ("'" + id + "' is not a job id (a positive number)").c_str(),
        kCancelUsage);
    return 2;
  }
  std::string broker;
  tls::Credentials creds;
  parse_daemon_options(argc - 1, argv + 1, "gridrun cancel", kCancelUsage,
                       {{"--broker", &broker}, {"--cert", &creds.cert}, {"--key", &creds.key}, {"--ca", &creds.ca}},
                       {"--broker", "--cert", "--key", "--ca"});
  try {
    return cancel_job(job, broker, creds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gridrun cancel: %s\n", e.what());
    return 1;
  }
}

// The clusters of a grid description as the broker will offer them once all registered.
std::vector<gridrt::ClusterOffer> offers_of(const gridrt::Grid& grid) {
  std::vector<gridrt::ClusterOffer> offers;
  for (const auto& c : grid.clusters) offers.push_back(gridrt::offer_of(c, "", 0, c.network.frontend_reachable));
  return offers;
}

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "gridrun: %s\n(gridrun --help explains the options)\n", msg.c_str());
  std::exit(2);
}

int positive_number(const std::string& option, const std::string& text, int most) {
  const bool digits = !text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
  const int v = digits ? std::atoi(text.c_str()) : 0;
  if (v < 1 || v > most) usage_error(option + " takes a number from 1 to " + std::to_string(most) + ", got '" + text + "'");
  return v;
}

// gridrun calibrate: gridcalibrate does it, beside gridrun in a build tree, in libexec/gridrt
// once installed; it starts its job through this gridrun.
int calibrate_command(int argc, char** argv) {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  const std::filesystem::path bin = self.parent_path();
  std::filesystem::path tool = bin / "gridcalibrate";
  std::error_code ec;
  if (!std::filesystem::exists(tool, ec)) tool = (bin / GRIDRT_LIBEXEC_FROM_BIN / "gridcalibrate").lexically_normal();
  ::setenv("GRIDRT_GRIDRUN", self.c_str(), 1);
  std::vector<char*> args = {const_cast<char*>(tool.c_str())};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(tool.c_str(), args.data());
  std::fprintf(stderr, "gridrun calibrate: cannot run %s: %s\n", tool.c_str(), std::strerror(errno));
  return 127;
}

// gridrun settings: every setting of the table (common/settings.h), as --help lists them or,
// with --markdown, as docs/settings.md has them.
int settings_command(int argc, char** argv) {
  const std::string a = argc > 1 ? argv[1] : "";
  if (a == "--markdown") {
    std::fputs(gridrt::settings::markdown().c_str(), stdout);
    return 0;
  }
  if (!a.empty() && a != "--help" && a != "-h") {
    std::fprintf(stderr, "gridrun settings: unknown option '%s'\nusage: gridrun settings [--markdown]\n", a.c_str());
    return 2;
  }
  using gridrt::settings::Reader;
  std::fputs(gridrt::settings::help(Reader::kProcesses | Reader::kDaemons | Reader::kGridrun | Reader::kTools).c_str(), stdout);
  return 0;
}

// Where the example programs are: their installed directory, or gridrun's own in a build tree.
std::string examples_dir(const std::string& bin_dir) {
  const auto installed = (std::filesystem::path(bin_dir) / GRIDRT_EXAMPLES_FROM_BIN).lexically_normal();
  std::error_code ec;
  return std::filesystem::is_directory(installed, ec) ? installed.string() : bin_dir;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gridrt;
  log::set_component("gridrun");
  if (argc > 1 && std::string(argv[1]) == "ca") return ca_command(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "cancel") return cancel_command(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "status") return status_command(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "calibrate") return calibrate_command(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "settings") return settings_command(argc - 1, argv + 1);
  // --help: the options, then the settings gridrun and the job's processes read.
  const std::string usage = std::string(kUsage) + "\n" + settings::help(settings::kGridrun | settings::kProcesses);
  // The job's lines appear as they come, also when gridrun's output goes to a file or pipe.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::string profile, program, grid_path, nprocs;
  std::vector<std::string> program_args;
  Variables vars;
  std::set<std::string> url_schemes;  // besides http(s): fetched by the grid's relays (--url-scheme, <fetcher>)
  SubmitOptions sub;
  bool dry_run = false;
  std::string clusters, ranks_per_cluster, timeout;
  bool unshared_files = false;
  std::vector<std::pair<std::string, std::string>> emulate_wan;  // the --emulate-wan* options, in order
  if (const auto t = settings::value("MPIEXEC_TIMEOUT")) {       // as mpiexec takes it; gridrun keeps the time, not mpiexec
    timeout = *t;
    ::unsetenv("MPIEXEC_TIMEOUT");
  }
  std::vector<std::pair<std::string, std::string>> env;  // --env and its kin, in order
  auto pass_on = [&](const std::string& name) {
    const char* v = std::getenv(name.c_str());
    if (!v) usage_error("--env " + name + ": gridrun's environment has no " + name + " to pass on");
    env.emplace_back(name, v);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    answer_help_or_version(a, "gridrun", usage.c_str());
    if (a == "-n" || a == "-np") {
      nprocs = value();
    } else if (a == "--") {
      if (i + 1 >= argc) usage_error("-- must be followed by the program to run");
      program = argv[++i];
      program_args.assign(argv + i + 1, argv + argc);
      break;
    } else if (a == "--url-scheme") {
      url_schemes.insert(value());
    } else if (a == "--var") {
      const std::string kv = value();
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) usage_error("--var takes NAME=VALUE, got '" + kv + "'");
      vars[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else if (a == "--model") {
      // The grid's model for auto's choices (docs/models.md): checked here, and its text
      // handed to every process in its environment, wherever the processes run (over the
      // model the broker may keep).
      try {
        sub.model = models::read_model_text(value());
        env.emplace_back("GRIDRT_MODEL_JSON", sub.model);
      } catch (const models::ModelError& e) { usage_error(std::string("--model: ") + e.what()); }
    } else if (a == "--env") {
      const std::string kv = value();
      const auto eq = kv.find('=');
      if (eq == 0 || kv.empty()) usage_error("--env takes NAME=VALUE or NAME, got '" + kv + "'");
      if (eq == std::string::npos) pass_on(kv);
      else env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (a == "-genv") {
      const std::string name = value();
      if (name.empty() || name.find('=') != std::string::npos) usage_error("-genv takes NAME VALUE, got '" + name + "'");
      env.emplace_back(name, value());
    } else if (a == "-genvlist") {
      const std::string names = value();
      for (std::size_t at = 0; at <= names.size();) {
        const std::size_t comma = std::min(names.find(',', at), names.size());
        if (comma == at) usage_error("-genvlist takes NAME,NAME,..., got '" + names + "'");
        pass_on(names.substr(at, comma - at));
        at = comma + 1;
      }
    } else if (a == "--timeout") {
      timeout = value();
    } else if (a == "--label" || a == "-l") {
      sub.label = true;
    } else if (a == "--no-label") {
      sub.label = false;
    } else if (a == "--dry-run") {
      dry_run = true;
    } else if (a == "--explain") {
      sub.explain = true;
      env.emplace_back("GRIDRT_EXPLAIN", "1");
    } else if (a == "-v" || a == "--verbose") {
      sub.verbose = true;
    } else if (a == "--grid") {
      grid_path = value();
    } else if (a == "--clusters") {
      clusters = value();
    } else if (a == "--ranks-per-cluster") {
      ranks_per_cluster = value();
    } else if (a == "--unshared-files") {
      unshared_files = true;
    } else if (is_wan_option(a)) {
      emulate_wan.emplace_back(a, value());
    } else if (a == "--broker") {
      sub.broker = value();
    } else if (a == "--cert") {
      sub.creds.cert = value();
    } else if (a == "--key") {
      sub.creds.key = value();
    } else if (a == "--ca") {
      sub.creds.ca = value();
    } else if (!a.empty() && a[0] == '-') {
      usage_error("unknown option '" + a + "'");
    } else if (a.size() > 4 && a.compare(a.size() - 4, 4, ".xml") == 0) {
      if (!profile.empty()) usage_error("only one JobProfile may be given ('" + profile + "' and '" + a + "')");
      profile = a;
    } else {  // the program: the rest is its own
      program = a;
      program_args.assign(argv + i + 1, argv + argc);
      break;
    }
  }
  if (profile.empty() && program.empty()) usage_error("no program or JobProfile given");
  if (!profile.empty() && !program.empty())
    usage_error("a JobProfile ('" + profile + "') and a program ('" + program + "') given: one or the other");
  if (!program.empty() && !vars.empty()) usage_error("--var fills in a JobProfile; a program takes its own arguments");
  const bool embedded = sub.broker.empty();
  if (!embedded && (sub.creds.cert.empty() || sub.creds.key.empty() || sub.creds.ca.empty()))
    usage_error("--broker needs --cert, --key and --ca");
  if (!embedded && !grid_path.empty()) usage_error("--grid describes the embedded grid; it cannot go with --broker");
  const bool sized = !clusters.empty() || !ranks_per_cluster.empty() || unshared_files;
  if (sized && (!embedded || !grid_path.empty()))
    usage_error(
        "--clusters, --ranks-per-cluster and --unshared-files shape the default embedded grid; they cannot go with --grid or "
        "--broker");
  if (!timeout.empty()) sub.timeout_s = positive_number("--timeout (or MPIEXEC_TIMEOUT)", timeout, 31'536'000);
  const int num_clusters = clusters.empty() ? 2 : positive_number("--clusters", clusters, 64);
  const int slots_per_cluster = ranks_per_cluster.empty() ? 3 : positive_number("--ranks-per-cluster", ranks_per_cluster, 1024);
  std::vector<std::string> relay_options;
  WanPlan wan_check;
  for (const auto& [option, value] : emulate_wan) {
    if (!embedded) usage_error(option + " applies to the embedded grid; it cannot go with --broker");
    try {
      apply_wan_option(wan_check, option, value);
    } catch (const std::invalid_argument& e) { usage_error(option + ": " + e.what()); }
    relay_options.insert(relay_options.end(), {option, value});
  }
  // gridrun's settings, and the processes' (on the embedded grid their environment is
  // gridrun's): a bad one is bad input, refused before anything starts.
  if (const auto bad = settings::first_bad(settings::kGridrun | settings::kProcesses)) usage_error(*bad);
  // Benchmarks measure the relay path without TLS this way (docs/benchmarks.md).
  if (const auto e = settings::value("GRIDRT_LINK_ENCRYPTION")) relay_options.insert(relay_options.end(), {"--link-encryption", *e});
  if (const auto t = settings::value("GRIDRT_LINK_THREAD")) relay_options.insert(relay_options.end(), {"--link-thread", *t});
  if (sub.verbose && !settings::value("GRIDRT_LOG")) ::setenv("GRIDRT_LOG", "info", 1);

  const std::string bin_dir = std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
  try {
    std::string grid_xml;
    Grid grid;
    if (embedded) {
      if (grid_path.empty()) {
        grid_xml = default_grid_xml(num_clusters, slots_per_cluster, !unshared_files);
        grid = parse_grid("embedded default grid", grid_xml);
      } else {
        std::ifstream in(grid_path);
        if (!in) throw InputError(grid_path + ": cannot read the file: " + std::strerror(errno));
        grid_xml.assign(std::istreambuf_iterator<char>(in), {});
        grid = parse_grid(grid_path, grid_xml);
      }
      // The sites the --emulate-wan* options name must be the grid's (a typo would
      // otherwise leave a pair unemulated without a word).
      std::set<std::string> sites;
      for (const auto& c : grid.clusters) sites.insert(c.site);
      for (const auto& site : wan_check.named_sites())
        if (!sites.count(site)) usage_error("--emulate-wan-pair/-access: site '" + site + "' is not a site of " + grid.source);
    }
    if (!nprocs.empty()) {
      const bool ok = nprocs.find_first_not_of("0123456789") == std::string::npos && std::atol(nprocs.c_str()) > 0;
      if (!ok) usage_error("-n takes a positive number, got '" + nprocs + "'");
      vars["NPROCS"] = nprocs;
    } else if (embedded && !vars.count("NPROCS")) {
      vars["NPROCS"] = std::to_string(grid.total_slots());
    }
    vars.emplace("GRIDRT_BIN", bin_dir);
    vars.emplace("GRIDRT_EXAMPLES", examples_dir(bin_dir));
    if (!program.empty() && !vars.count("NPROCS")) usage_error("-n N is needed to run a program on a grid given by --broker");
    for (const auto& fe : grid.fetchers) url_schemes.insert(fe.scheme);
    JobSpec spec = program.empty() ? load_job_profile(profile, vars, url_schemes)
                                   : command_job(program, program_args, std::atol(vars["NPROCS"].c_str()));
    for (const auto& [name, v] : env) set_environment(spec, name, v);
    // Where the processes start when the profile does not say: here, as with mpiexec and srun
    // (on clusters that see this machine's files; elsewhere in the job's directory). A job
    // with files of its own to put and find (<stageInOut>) starts in its job directory.
    const bool has_own_files =
        std::any_of(spec.files.begin(), spec.files.end(), [](const StagedFile& f) { return f.role != StagedFile::Role::kExecutable; });
    if (spec.workdir.empty() && !has_own_files) {
      spec.workdir = std::filesystem::current_path().string();
      spec.workdir_is_submitters = true;
    }

    if (dry_run && embedded) {
      const Topology t = map_job(spec, offers_of(grid));
      std::fputs(describe_mapping(t).c_str(), stdout);
      if (sub.explain) std::fputs(explain_job(t, sub.model).c_str(), stdout);
      return 0;  // (with --broker, the broker maps the job: submit_job prints the same)
    }
    if (dry_run) sub.flags |= wire::kSubmitDryRun;
    if (!embedded) return submit_job(spec, sub);

    // Checked before anything starts: a job the grid cannot hold is bad input.
    map_job(spec, offers_of(grid));
    // Ctrl-C during start-up must not leave daemons or keys behind: SIGINT/SIGTERM stay
    // blocked until submit_job has its handler in place (it unblocks them), and the
    // EmbeddedGrid destructor cleans up on every path out of here.
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, nullptr);
    EmbeddedGrid eg(grid, grid_xml, bin_dir, relay_options);
    sub.broker = eg.broker_endpoint();
    sub.creds = eg.user_credentials();
    sub.flags |= wire::kSubmitWaitForGrid;
    sub.health = [&eg] { return eg.dead_daemon(); };
    return submit_job(spec, sub);
  } catch (const InputError& e) {
    std::fprintf(stderr, "gridrun: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gridrun: %s\n", e.what());
    return 1;
  }
}
