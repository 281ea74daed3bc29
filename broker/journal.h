// The broker's journal (gridbroker --journal FILE): one line per job started, refused and
// ended and per refused attempt, for whoever must account for the grid's use
// (docs/security.md). It is also what the broker knows of its own past: started again on
// the same file, it numbers new jobs after every id the file holds, so that an id names
// one job for the life of the journal, and closes with an end line every job that a
// crash cut off (started, never ended).
//
// A line is "<UTC time> <text>", with control characters escaped so that nothing a peer
// sends can forge a line; each is flushed as it is written, so what was journaled survives
// a crash of the broker.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace gridrt {

class Journal {
 public:
  Journal() = default;  // none: lines go nowhere, job ids start at 1
  // Reads what `path` holds, then appends to it. Throws std::runtime_error if it cannot.
  explicit Journal(const std::string& path);

  void record(const std::string& text);
  // The first job id not in the journal (1 for a new one).
  std::uint64_t next_job_id() const { return last_id_ + 1; }
  // Jobs the journal saw start and never end, in id order.
  const std::vector<std::uint64_t>& cut_off() const { return cut_off_; }
  // Ends each of them with a line saying `why`, but those `still_running` (jobs a broker
  // took back from its state directory: they end as usual).
  void end_cut_off(const std::string& why, const std::set<std::uint64_t>& still_running = {});

  // What a started and an end line begin with (after the time): the broker writes its
  // records with these, and reading a journal back looks for exactly these words.
  static std::string started(std::uint64_t job) { return "job " + std::to_string(job) + " started "; }
  static std::string ended(std::uint64_t job) { return "job " + std::to_string(job) + " ended "; }

 private:
  std::unique_ptr<std::ofstream> out_;
  std::uint64_t last_id_ = 0;
  std::vector<std::uint64_t> cut_off_;
};

}  // namespace gridrt
