// The submitting side of the files that travel with a job (docs/jobprofile.md, "Files that
// travel with the job"): a staged file sent to the grid piece by piece when the broker asks
// for it, and the outputs that come back written into DIR/CLUSTER/NAME.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>

#include "common/link.h"
#include "common/messages.h"
#include "common/staging.h"

namespace gridrt {

// Sends `file` (from where it lies here) as FileData pieces of job `job`, while `link` has
// little queued (the rest waits, a piece at a time: a large file never sits in memory).
// Reports a file that cannot be read or changed since the job was submitted with `error`.
asio::awaitable<void> send_staged_file(std::shared_ptr<TlsLink> link, std::uint64_t job, StagedFile file,
                                       std::function<void(const std::string&)> error);

// Output files coming back, each part's into the output's directory/CLUSTER/NAME: written
// under a temporary name and renamed when whole, so that a file there is always complete.
class OutputFiles {
 public:
  explicit OutputFiles(const JobSpec& spec) : spec_(spec) {}
  // A piece from `cluster`; returns what to tell the user once a file is whole or failed
  // (its path, or why), "" otherwise.
  std::string on_piece(const std::string& cluster, const FilePiece& piece, bool last);

 private:
  const JobSpec& spec_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<IncomingFile>> open_;  // (cluster, name)
  std::set<std::pair<std::string, std::string>> failed_;                               // the rest of their pieces is ignored
};

}  // namespace gridrt
