// libFuzzer target: the JobProfile parser. Whatever a user's file holds, the parser returns a
// valid job (at least one process, no more than MPI can number) or throws InputError naming
// the place; any other exception or crash is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/jobprofile.h"
#include "common/xml.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gridrt;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const JobSpec spec = parse_job_profile("fuzz.xml", text, {{"GRIDRT_BIN", "/bin"}, {"GRIDRT_EXAMPLES", "/bin"}, {"HOME", "/root"}});
    if (spec.groups.empty() || spec.total_processes() == 0 || spec.total_processes() > kMaxJobProcesses) std::abort();
  } catch (const InputError&) {}
  return 0;
}
