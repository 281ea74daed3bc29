#include "common/cli.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/settings.h"
#include "gridrt/version.h"

namespace gridrt {

std::string version_line(const char* program) { return std::string(program) + " (gridrt) " + GRIDRT_VERSION; }

void answer_help_or_version(const std::string& arg, const char* program, const char* usage) {
  if (arg == "--help" || arg == "-h") {
    std::fputs(usage, stdout);
    std::exit(0);
  }
  if (arg == "--version") {
    std::puts(version_line(program).c_str());
    std::exit(0);
  }
}

void parse_daemon_options(int argc, char** argv, const char* program, const char* usage, const std::map<std::string, std::string*>& options,
                          const std::vector<std::string>& required, const std::map<std::string, bool*>& flags,
                          const std::vector<std::string>& repeated, std::vector<std::pair<std::string, std::string>>* occurrences) {
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "%s: %s\n%s", program, why.c_str(), usage);
    std::exit(2);
  };
  // --help: the options, then the settings the daemons read (common/settings.h).
  const std::string help = std::string(usage) + "\n" + settings::help(settings::kDaemons);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    answer_help_or_version(a, program, help.c_str());
    if (const auto flag = flags.find(a); flag != flags.end()) {
      *flag->second = true;
      continue;
    }
    if (occurrences && std::find(repeated.begin(), repeated.end(), a) != repeated.end()) {
      if (i + 1 >= argc) fail(a + " needs a value");
      occurrences->emplace_back(a, argv[++i]);
      continue;
    }
    const auto it = options.find(a);
    if (it == options.end()) fail("unknown option '" + a + "'");
    if (i + 1 >= argc) fail(a + " needs a value");
    *it->second = argv[++i];
  }
  std::string missing;
  for (const auto& r : required)
    if (options.at(r)->empty()) missing += (missing.empty() ? "" : ", ") + r;
  if (!missing.empty()) fail("missing " + missing);
  if (const auto bad = settings::first_bad(settings::kDaemons)) {
    std::fprintf(stderr, "%s: %s\n", program, bad->c_str());
    std::exit(2);
  }
}

}  // namespace gridrt
