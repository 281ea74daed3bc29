// The JobProfile: QosCosGrid job XML (Coti, Herault, Cappello 2009, Figure 2) -> a validated JobSpec.
// docs/jobprofile.md lists every element understood.
#pragma once

#include <map>
#include <set>
#include <string>

#include "common/messages.h"
#include "common/xml.h"

namespace gridrt {

// Values for $NAME (or ${NAME}) in any text of the profile: --var NAME=VALUE, -n (NPROCS),
// and the launcher's own (GRIDRT_BIN).
using Variables = std::map<std::string, std::string>;

// Parses and validates `path`; throws InputError (file:line:column, element, what) on any bad
// input. Checks that the executable exists and is executable on this machine.
// `fetched`: URL schemes besides http and https that the grid's relays fetch (its <fetcher>s),
// accepted for the executable and input files; any other is refused.
JobSpec load_job_profile(const std::string& path, const Variables& vars, const std::set<std::string>& fetched = {});
JobSpec parse_job_profile(const std::string& path, const std::string& text, const Variables& vars,
                          const std::set<std::string>& fetched = {});

// The job of `gridrun -n N PROGRAM ARGS...`: one group of `processes` processes running
// PROGRAM (found on PATH when its name has no slash), in this working directory. Throws
// InputError when the program cannot be run.
JobSpec command_job(const std::string& program, const std::vector<std::string>& args, long processes);

// Sets NAME=VALUE in the job's environment, over what the profile set (gridrun --env).
void set_environment(JobSpec& spec, const std::string& name, const std::string& value);

}  // namespace gridrt
