// gridbroker: see broker.h and docs/architecture.md.
#include <cstdio>
#include <cstring>
#include <iostream>

#include "broker/broker.h"
#include "models/grid_model.h"
#include "common/cli.h"
#include "common/staging.h"
#include "common/watchdog.h"
#include "common/xml.h"

namespace {
const char* kUsage = R"(usage: gridbroker --grid FILE --listen HOST:PORT --cert PEM --key PEM --ca PEM
                  [--port-file FILE]

The central service of a gridrt grid: relays register their clusters with it, gridrun
submits jobs to it. Every connection is mutual TLS 1.3 from the grid CA.

  --grid FILE        grid description (docs/grid.md): the clusters relays may register as
  --listen HOST:PORT address to listen on; port 0 lets the kernel choose
  --cert/--key PEM   this broker's certificate and key, issued by the grid CA
  --ca PEM           the grid CA: peers must present a certificate it signed
  --port-file FILE   write the port actually listened on to FILE (for port 0)
  --quiet            no start-up line (gridrun's embedded grid)
  --journal FILE     append a line for every job started, refused or ended: when,
                     which user (their certificate's name), what, where, how it ended.
                     Keep one per grid: job ids continue after the last one it holds,
                     and jobs a crash cut off get their end line at the next start
  --state-dir DIR    write every running job's state ahead to DIR (made 0700; it holds
                     the jobs' secrets). A broker killed or crashed and started again on
                     the same DIR takes its running jobs back: relays keep them running
                     meanwhile (gridrelay --broker-grace) and gridrun reconnects; the
                     output goes on where it stopped. Parts or launchers not back within
                     60 s are lost. (Stopped with SIGTERM, the broker kills its jobs.)
  --model FILE       the grid's performance model (gridrun calibrate; docs/models.md),
                     handed to every job with its topology: auto then chooses every
                     collective's algorithm by its predictions. Re-read on restart
  --stage-limit SIZE the most a job's files may hold that travel from the submitting
                     machine (the executable, inputs), and its outputs that come back
                     (default 4G; K, M, G, T as powers of 1024)
  --stage-quota SIZE the most a user's running jobs may have carried at once
                     (default 16G); a job past either is refused before anything is sent
  --help             this text
  --version          print gridrt's version
Logging goes to stderr; set GRIDRT_LOG=info or debug for more.
)";
}

int main(int argc, char** argv) {
  using namespace gridrt;
  log::set_component("broker");
  std::string grid_path, listen, port_file, journal, state_dir, model, stage_limit, stage_quota;
  bool quiet = false;
  tls::Credentials creds;
  parse_daemon_options(argc, argv, "gridbroker", kUsage,
                       {{"--grid", &grid_path},
                        {"--listen", &listen},
                        {"--cert", &creds.cert},
                        {"--key", &creds.key},
                        {"--ca", &creds.ca},
                        {"--port-file", &port_file},
                        {"--journal", &journal},
                        {"--state-dir", &state_dir},
                        {"--model", &model},
                        {"--stage-limit", &stage_limit},
                        {"--stage-quota", &stage_quota}},
                       {"--grid", "--listen", "--cert", "--key", "--ca"}, {{"--quiet", &quiet}});
  if (quiet) log::set_notices(false);
  try {
    asio::io_context io;
    const Grid grid = load_grid(grid_path);
    std::string model_json;
    if (!model.empty()) {
      try {
        model_json = models::read_model_text(model);  // checked here, not in every process
      } catch (const models::ModelError& e) {
        std::fprintf(stderr, "gridbroker: --model: %s\n", e.what());
        return 2;
      }
    }
    Broker::StageLimits limits;
    try {
      if (!stage_limit.empty()) limits.per_job = parse_bytes(stage_limit, "--stage-limit");
      if (!stage_quota.empty()) limits.per_user = parse_bytes(stage_quota, "--stage-quota");
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "gridbroker: %s\n", e.what());
      return 2;
    }
    Broker broker(io, grid, creds, parse_endpoint(listen));
    broker.set_stage_limits(limits);
    if (!model_json.empty()) broker.set_model(model_json);
    broker.prepare_for_strangers();
    if (!state_dir.empty()) broker.set_state_dir(state_dir);  // before the journal: jobs taken back are not cut off
    if (!journal.empty()) broker.set_journal(journal);
    const auto ep = broker.endpoint();
    log::notice("listening on ", ep.address().to_string(), ":", ep.port(), " for the ", grid.clusters.size(), " cluster(s) of ", grid_path,
                state_dir.empty() ? "" : ", state in " + state_dir, journal.empty() ? "" : ", journal " + journal,
                model.empty() ? "" : ", model " + model);
    if (!port_file.empty()) {
      FILE* f = std::fopen((port_file + ".tmp").c_str(), "w");
      if (!f) throw std::runtime_error("cannot write " + port_file);
      std::fprintf(f, "%u\n", ep.port());
      std::fclose(f);
      std::rename((port_file + ".tmp").c_str(), port_file.c_str());
    }
    const auto watchdog = watch_daemon_loop(io);  // a held loop stops the whole grid's service
    on_termination_signal(io, [&](int) {
      broker.stop();  // tells the relays to kill running jobs and closes every connection
      io.stop();
    });
    io.run();
    // Let those last frames go out: run until every connection has closed after its last
    // frames, for at most 500 ms (timers, the watchdog's among them, keep the loop busy,
    // so running it until it has nothing left to do would always take the 500 ms).
    io.restart();
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (!broker.flushed() && std::chrono::steady_clock::now() < until) io.run_for(std::chrono::milliseconds(5));
  } catch (const InputError& e) {  // a bad grid description: bad input, as for gridrun
    std::fprintf(stderr, "gridbroker: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gridbroker: %s\n", e.what());
    return 1;
  }
  return 0;
}
