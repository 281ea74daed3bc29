// The embedded default grid: a broker and one relay per cluster on this machine, with
// throw-away credentials in a private temporary directory. Everything it starts dies with
// it (destructor, signals, and PR_SET_PDEATHSIG if gridrun itself is killed).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/grid.h"
#include "common/tls.h"

namespace gridrt {

class EmbeddedGrid {
 public:
  // Writes the grid description and credentials, starts the broker and the relays.
  // Throws std::runtime_error naming what could not be started.
  // `grid` is `grid_xml` parsed; the daemons get the text. `relay_options` go to every
  // relay's command line (link encryption, WAN emulation).
  EmbeddedGrid(Grid grid, const std::string& grid_xml, const std::string& bin_dir, const std::vector<std::string>& relay_options = {});
  ~EmbeddedGrid();  // stops the daemons and removes the directory
  EmbeddedGrid(const EmbeddedGrid&) = delete;

  std::string broker_endpoint() const { return "127.0.0.1:" + std::to_string(broker_port_); }
  const tls::Credentials& user_credentials() const { return user_; }
  const Grid& grid() const { return grid_; }
  // Stops the daemons (idempotent).
  void shutdown();
  // "" while every daemon runs; else which one exited, and how.
  std::string dead_daemon();

 private:
  std::string dir_;
  Grid grid_;
  tls::Credentials user_;
  pid_t broker_ = -1;
  std::vector<pid_t> relays_;  // parallel to grid_.clusters
  unsigned broker_port_ = 0;
};

}  // namespace gridrt
