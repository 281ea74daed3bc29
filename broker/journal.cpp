#include "broker/journal.h"

#include <cstdio>
#include <ctime>
#include <map>
#include <regex>
#include <stdexcept>

namespace gridrt {

Journal::Journal(const std::string& path) {
  bool ends_with_newline = true;
  {
    std::ifstream in(path);
    static const std::regex job_line(R"(^\S+ job (\d{1,19}) (started|ended) )");
    std::map<std::uint64_t, bool> open;  // job -> still running as far as the journal knows
    for (std::string line; std::getline(in, line);) {
      ends_with_newline = !in.eof();
      std::smatch m;
      if (!std::regex_search(line, m, job_line)) continue;  // refusals, or a line a crash cut short
      const std::uint64_t id = std::stoull(m[1]);
      if (id > last_id_) last_id_ = id;
      if (m[2] == "started") open[id] = true;
      else open.erase(id);
    }
    for (const auto& [id, running] : open) cut_off_.push_back(id);
  }
  out_ = std::make_unique<std::ofstream>(path, std::ios::app);
  if (!*out_) throw std::runtime_error("cannot append to the journal " + path);
  if (!ends_with_newline) *out_ << '\n';  // a line a crash cut short stays alone
}

void Journal::record(const std::string& text) {
  if (!out_) return;
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::string safe;
  for (const unsigned char c : text) {
    if (c >= 0x20 && c != 0x7f) {
      safe += static_cast<char>(c);
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    safe += hex;
  }
  *out_ << ts << ' ' << safe << std::endl;  // flushed: the record survives a crash
}

void Journal::end_cut_off(const std::string& why, const std::set<std::uint64_t>& still_running) {
  for (const std::uint64_t id : cut_off_)
    if (!still_running.count(id)) record(ended(id) + "without a status: " + why);
  cut_off_.clear();
}

}  // namespace gridrt
