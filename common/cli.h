// Command lines of the daemons: "--name value" options declared once, with the usage text.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gridrt {

// "PROGRAM (gridrt) VERSION", what every tool's --version prints.
std::string version_line(const char* program);

// What every tool does with "--help" (or "-h") and "--version" wherever they come: prints
// `usage` or the version line of `program` and exits 0. Returns for any other argument.
void answer_help_or_version(const std::string& arg, const char* program, const char* usage);

// Fills the strings of `options` from argv. "--help" prints `usage` and the settings the
// daemons read (common/settings.h) and exits 0, "--version" the version line; an unknown
// option, a missing value, or a missing one of `required` prints why and `usage` and exits 2,
// as does a bad setting of the daemons' (checked once the options are read).
// `flags` are options without a value: present sets them true. `repeated` options may
// come several times, each occurrence's value appended, with its option, in order.
void parse_daemon_options(int argc, char** argv, const char* program, const char* usage, const std::map<std::string, std::string*>& options,
                          const std::vector<std::string>& required, const std::map<std::string, bool*>& flags = {},
                          const std::vector<std::string>& repeated = {},
                          std::vector<std::pair<std::string, std::string>>* occurrences = nullptr);

}  // namespace gridrt
