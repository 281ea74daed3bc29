#include "common/grid_map.h"

#include <grp.h>
#include <pwd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/xml.h"  // InputError

namespace gridrt {

GridMap GridMap::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read the grid map file: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

GridMap GridMap::parse(const std::string& text, const std::string& path) {
  GridMap map;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    auto fail = [&](const std::string& what) { throw InputError(path + ":" + std::to_string(number) + ": " + what); };
    const auto start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] == '#') continue;
    if (line[start] != '"') fail("expected a certificate name in double quotes, e.g. \"user alice\" alice");
    const auto close = line.find('"', start + 1);
    if (close == std::string::npos) fail("the certificate name's closing quote is missing");
    const std::string name = line.substr(start + 1, close - start - 1);
    if (name.empty()) fail("empty certificate name");
    std::istringstream rest(line.substr(close + 1));
    std::string account, extra;
    if (!(rest >> account)) fail("no local account after \"" + name + "\"");
    if (rest >> extra) fail("one local account per certificate name; unexpected '" + extra + "'");
    if (!map.accounts_.emplace(name, account).second) fail("\"" + name + "\" is mapped twice");
  }
  return map;
}

std::optional<std::string> GridMap::account_of(const std::string& certificate_name) const {
  const auto it = accounts_.find(certificate_name);
  if (it == accounts_.end()) return std::nullopt;
  return it->second;
}

LocalAccount local_account(const std::string& name) {
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  const int err = ::getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (!found) throw std::runtime_error("no local account '" + name + "'" + (err ? std::string(": ") + std::strerror(err) : ""));
  if (entry.pw_uid == 0) throw std::runtime_error("local account '" + name + "' is root's (uid 0): a grid user's job never runs as root");
  LocalAccount a{name, entry.pw_uid, entry.pw_gid, {}, entry.pw_dir ? entry.pw_dir : "/"};
  int count = 32;
  a.groups.resize(count);
  while (::getgrouplist(name.c_str(), entry.pw_gid, a.groups.data(), &count) < 0) a.groups.resize(count);
  a.groups.resize(count);
  return a;
}

}  // namespace gridrt
