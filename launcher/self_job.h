// Tools that run themselves as a grid job (gridbench, gridcalibrate): the program starts
// gridrun on a JobProfile that runs the same program, with `--worker` first and the same
// arguments, on every slot ($NPROCS), and passes on what the processes print, without
// gridrun's [cluster:rank] prefixes (only one rank prints: the tools make rank 0 do it).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace gridrt {

// `tool` names the program in messages; `gridrun` is the launcher's path; `grid_args` go to
// gridrun before the JobProfile, `worker_args` to the workers after --worker. Each line the
// job prints goes to `line` (with its newline). Returns gridrun's exit status.
int run_self_as_job(const std::string& tool, const std::string& gridrun, const std::vector<std::string>& grid_args,
                    const std::vector<std::string>& worker_args, const std::function<void(const std::string&)>& line);

// main() of such a tool: `work` in the job's processes (argv[1] is --worker), `launch`
// otherwise; an exception ends it with "NAME: what" on stderr and status 1.
int self_job_main(const char* name, int argc, char** argv, int (*work)(int, char**), int (*launch)(int, char**));

}  // namespace gridrt
