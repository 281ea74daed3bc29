#include "common/cli.h"

#include <cstdio>
#include <cstdlib>

namespace gridrt {

void parse_daemon_options(int argc, char** argv, const char* program, const char* usage,
                          const std::map<std::string, std::string*>& options, const std::vector<std::string>& required) {
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "%s: %s\n%s", program, why.c_str(), usage);
    std::exit(2);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      std::exit(0);
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
}

}  // namespace gridrt
