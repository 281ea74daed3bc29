// The settings gridrt reads from the environment: one table (name, default, meaning, the
// values it may take), from which every value is checked where it is read, every tool's
// --help lists the settings it reads, and docs/settings.md is written (`gridrun settings
// --markdown`; a test keeps the two the same). Reading a setting that is not in the table
// is a programming error (std::logic_error), so none can be read unchecked or undocumented.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gridrt::settings {

// Who reads a setting: what --help lists and docs/settings.md says.
enum Reader : unsigned {
  kProcesses = 1,  // the job's processes (libgridrt, the MPI layer)
  kDaemons = 2,    // gridbroker, gridrelay
  kGridrun = 4,    // gridrun (and its embedded grid)
  kTools = 8,      // gridbench, gridrun calibrate's job
  kByGridrt = 16,  // set by gridrt itself for the processes it starts: not the user's to set
};

struct Setting {
  const char* name;
  const char* fallback;  // what holds when it is unset, as said to the user
  const char* summary;   // one line, for --help
  const char* meaning;   // in full, for docs/settings.md (Markdown)
  unsigned readers;      // Reader bits
  // The values it may take: one of `words`; or a whole number from `low` to `high` in
  // `unit` (and then also one of `words`, if any); or, with neither, any text.
  std::vector<std::string> words;
  unsigned long long low = 0, high = 0;
  const char* unit = nullptr;
  bool is_number() const { return unit != nullptr; }
};

const std::vector<Setting>& table();
const Setting& find(const std::string& name);  // std::logic_error for a name not in the table

// The setting's value, checked against its row: nothing when unset (or, for text, empty);
// std::invalid_argument naming the variable, its value and what it may be, when it is not
// one of them.
std::optional<std::string> value(const std::string& name);
// A number's value (nothing when unset or one of its words).
std::optional<unsigned long long> number(const std::string& name);
// Every setting of `readers` that is set, checked: the first bad one's message, or nothing.
std::optional<std::string> first_bad(unsigned readers);

// The settings of `readers` (not those gridrt sets) for a program's --help, each on a line.
std::string help(unsigned readers);
// docs/settings.md, every row.
std::string markdown();

}  // namespace gridrt::settings
