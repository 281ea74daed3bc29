// Which local account runs a grid user's processes on this cluster. Grid sites have long
// answered this with a map file kept by the site's administrator, from the names in users'
// certificates to local Unix accounts (the Globus Toolkit's grid-mapfile); a relay reads
// one in the same spirit (docs/security.md):
//
//   # certificate name    local account
//   "user alice"          alice
//   "user bob"            gridbob
//
// One entry per line: the certificate's common name in double quotes, white space, the
// account's name. Blank lines and lines starting with '#' are ignored. A name may appear
// once; an account may serve several names.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/process.h"

namespace gridrt {

class GridMap {
 public:
  // Throws InputError ("FILE:LINE: what") for an unreadable file or a malformed line.
  static GridMap load(const std::string& path);
  static GridMap parse(const std::string& text, const std::string& path);

  // The account name mapped to a certificate's common name, if any.
  std::optional<std::string> account_of(const std::string& certificate_name) const;
  std::size_t size() const { return accounts_.size(); }

 private:
  std::map<std::string, std::string> accounts_;
};

// The local account called `name` from the system's user database, with its groups.
// Throws std::runtime_error when there is no such account, or when it is root's (uid 0):
// no grid user's job ever runs as root.
LocalAccount local_account(const std::string& name);

}  // namespace gridrt
