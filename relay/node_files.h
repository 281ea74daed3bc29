// A node that sees neither the submitting machine's files nor the relay's (a cluster with a
// nodeDir, docs/grid.md "Files"): the job's directory on the node's own disk, filled by the
// first of the job's processes to start there with the part's files, asked of the relay over
// its monitor's connection; when the node's last process ends, the outputs go back the same
// way and the directory goes.
//
// The monitors of one node meet in a lock file in the directory (flock): the first to hold it
// alone fills the directory and marks it ready; each then holds it shared while its program
// runs; the one that finds it free once its program ended is the node's last. The file also
// keeps what they share: ready or not, the lowest rank that ran on the node (the relay keeps
// the outputs of the node where the part's lowest rank ran, should several send the same),
// and the names of the outputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gridrt {

class NodeFiles {
 public:
  // Makes `dir` this user's (or finds it so) and fills it unless another process of the node
  // did; `relay` is the monitor's connection to the relay, past its hello. Throws
  // std::runtime_error naming what failed.
  NodeFiles(int relay, std::uint64_t job, std::string dir, std::uint32_t local_rank);
  ~NodeFiles();
  NodeFiles(const NodeFiles&) = delete;
  NodeFiles& operator=(const NodeFiles&) = delete;
  const std::string& dir() const { return dir_; }
  // The program ended. On the node's last process: the outputs it finds go to the relay, and
  // the directory is removed. False when the relay's connection broke on the way.
  bool finish();

 private:
  struct Shared {
    bool ready = false;
    std::int32_t lowest_rank = -1;
    std::vector<std::string> outputs;
  };
  Shared read_shared() const;
  void write_shared(const Shared& s) const;
  std::vector<std::string> fetch();  // the part's files from the relay; returns the outputs' names

  int relay_;
  std::uint64_t job_;
  std::string dir_;
  std::uint32_t local_rank_;
  int lock_ = -1;
};

}  // namespace gridrt
