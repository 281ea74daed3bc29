// The broker's write-ahead job state (gridbroker --state-dir DIR): one file per running job
// holding all the broker knows of it — its profile, mapping, secret, submitter, which parts
// are ready, done or lost, every exit status seen, why it is stopping. Each change is
// written (to a new file, synced, renamed over the old one) before the broker acts on it, so
// that a broker killed at any moment and started again on the same directory finds every
// job as it last decided about it, and takes back the relays and launchers that reconnect
// (docs/architecture.md, "When the broker restarts"). A job's file goes when it ends.
//
// The files hold the jobs' secrets: the directory is made 0700 and each file 0600.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/messages.h"

namespace gridrt {

struct PartRecord {
  std::string cluster;
  bool ready = false;
  bool done = false;
  bool lost = false;        // failed in a job that goes on without it
  bool finalizing = false;  // in such a job: all its processes are in finalize
  std::vector<std::string> hostnames;
  std::vector<std::string> endpoints;
};

struct JobRecord {
  std::uint64_t id = 0;
  JobSpec spec;
  Topology topology;
  std::string secret;
  std::string submitter;    // its certificate's name
  std::vector<int> status;  // per global rank, -1 while unknown
  int first_failure = 0;    // first non-zero status seen, in arrival order
  std::uint32_t first_failed_rank = UINT32_MAX;
  std::string failure_note;             // why the job was stopped, if it was
  std::vector<std::string> lost_notes;  // clusters lost, for the summary
  bool killed = false;
  bool finalize_released = false;
};

class JobStore {
 public:
  JobStore() = default;  // none: nothing is written, nothing survives a restart
  // Uses `dir`, made (0700) if missing. Throws std::runtime_error naming it if it cannot.
  explicit JobStore(std::string dir);
  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  // Replaces the job's file; throws std::runtime_error naming it if it cannot.
  void save(const JobRecord& job, const std::vector<const PartRecord*>& parts) const;
  // The next job id, kept in DIR/next-job-id so that ids never repeat across restarts, with
  // or without a journal: read (1 if none), and written as each job starts.
  std::uint64_t next_id() const;
  void save_next_id(std::uint64_t id) const;
  void remove(std::uint64_t id) const;

  struct Saved {
    JobRecord job;
    std::vector<PartRecord> parts;
  };
  // Every job file, in id order. A file that cannot be read back (a crash cut its write
  // short cannot: writes are renamed into place; a disk fault, an edit) is named in
  // `unreadable` with the reason, and left where it is.
  std::vector<Saved> load(std::vector<std::string>& unreadable) const;

  // The encoding of a job's file (and its inverse, throwing wire::BadBody).
  static std::string encode(const JobRecord& job, const std::vector<const PartRecord*>& parts);
  static Saved decode(std::string_view bytes);

 private:
  std::string path_of(std::uint64_t id) const;
  void replace(const std::string& path, const std::string& bytes) const;  // durably, whole
  std::string dir_;
};

}  // namespace gridrt
