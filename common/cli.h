// Command lines of the daemons: "--name value" options declared once, with the usage text.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gridrt {

// Fills the strings of `options` from argv. "--help" prints `usage` and exits 0; an unknown
// option, a missing value, or a missing one of `required` prints why and `usage` and exits 2.
void parse_daemon_options(int argc, char** argv, const char* program, const char* usage,
                          const std::map<std::string, std::string*>& options, const std::vector<std::string>& required);

}  // namespace gridrt
