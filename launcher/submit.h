// Submitting a job to a broker and streaming it to its end: output lines prefixed with
// cluster and rank, the job's exit status, a one-line summary of failed ranks. Cancelling
// one of the user's jobs from anywhere.
#pragma once

#include <functional>
#include <string>

#include "common/messages.h"
#include "common/tls.h"

namespace gridrt {

struct SubmitOptions {
  std::string broker;  // HOST:PORT
  tls::Credentials creds;
  std::uint32_t flags = 0;  // wire::kSubmit* flags (common/wire.h)
  bool verbose = false;
  bool explain = false;  // print how each pair of the job's clusters connects, and the model's logical clusters
  std::string model;     // the model gridrun --model gives the job (its text), if any
  bool label = true;     // prefix output lines with [cluster:rank]
  int timeout_s = 0;     // > 0: the job is stopped once it has run this long (exit 124)
  // Polled while the job runs: a non-empty answer (e.g. "the embedded relay of cluster c0
  // exited with status 1") ends gridrun with status 1 and that message.
  std::function<std::string()> health;
};

// What gridrun exits with when --timeout stopped the job (as GNU timeout does).
inline constexpr int kTimedOutStatus = 124;

// Returns what gridrun exits with: the job's status, 2 when the broker refused the job
// (bad input), 1 when the broker could not be reached or vanished, 128+N on signal N,
// kTimedOutStatus when the time limit stopped it.
// With wire::kSubmitDryRun, prints the mapping the broker chose instead of running.
int submit_job(const JobSpec& spec, const SubmitOptions& opt);

// For --explain: how each pair of the job's clusters connects (explain_links), and the
// logical clusters the job's model (`model`'s text, else the one the broker keeps, in the
// topology) splits its clusters into, and why.
std::string explain_job(const Topology& t, const std::string& model);

// Asks the broker to cancel `job`, one of the user's own (creds), which may run from
// another gridrun: prints the broker's answer; 0 when the job is being stopped, 1 when the
// broker refused (not the user's job, or none running by that id) or could not be reached.
int cancel_job(std::uint64_t job, const std::string& broker, const tls::Credentials& creds);

// Asks the broker how the grid stands and prints it (clusters, relays up or down, free
// slots, running jobs with owner, size and age): 0, or 1 when it could not be asked.
int print_grid_status(const std::string& broker, const tls::Credentials& creds);

// The status as print_grid_status prints it (a pure function, for tests).
std::string describe_status(const GridStatus& st, const std::string& broker);

}  // namespace gridrt
