// gridproc's watch on the process manager's PMI socket (common/pmi_watch.h says why): the
// program gets one end of a socket pair as its PMI_FD, and what goes either way between it
// and the process manager's socket is passed on as it comes, except gridrt's announcement,
// which is taken out. The first bytes from the program's side say whether MPI was
// initialised through gridrt; if not, nothing of it reaches the process manager.
#pragma once

#include <poll.h>

#include <memory>
#include <string>

namespace gridrt {

class PmiProxy {
 public:
  enum class Seen { kNothingYet, kThroughGridrt, kPastGridrt };

  // Over the socket PMI_FD names in this process's environment (MPICH's hydra, also under
  // Slurm); null where there is none: a process manager that speaks PMI another way is not
  // watched.
  static std::unique_ptr<PmiProxy> from_environment();
  ~PmiProxy();
  PmiProxy(const PmiProxy&) = delete;
  PmiProxy& operator=(const PmiProxy&) = delete;

  // The program's PMI_FD: its end of the pair, inherited across exec.
  int program_end() const { return program_end_; }
  // Once the program is started: its end is closed here, so that the end of the last
  // process holding it is seen.
  void close_program_end();
  // The two sockets to poll, the process manager's and ours; an fd is -1 once done with.
  void fill(pollfd* two) const;
  // Moves what poll found ready in `two` (as fill made them); says what the program's
  // first bytes said.
  Seen move(const pollfd* two);
  Seen seen() const { return seen_; }

 private:
  PmiProxy(int manager, int ours, int program_end) : manager_(manager), ours_(ours), program_end_(program_end) {}
  void from_program(const char* data, std::size_t n);
  void close_ours();

  int manager_, ours_, program_end_;
  std::string first_;  // the program's first bytes, until they tell
  Seen seen_ = Seen::kNothingYet;
};

}  // namespace gridrt
