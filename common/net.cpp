#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "common/link.h"
#include "common/settings.h"

namespace gridrt {

tcp::endpoint parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) throw std::invalid_argument("'" + text + "' is not HOST:PORT");
  const std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  unsigned long p = 0;
  try {
    std::size_t used = 0;
    p = std::stoul(port, &used);
    if (used != port.size() || p > 65535) throw std::invalid_argument(port);
  } catch (const std::exception&) { throw std::invalid_argument("'" + text + "': port '" + port + "' is not a number from 0 to 65535"); }
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) throw std::invalid_argument("'" + text + "': '" + host + "' is not an IP address");
  return {addr, static_cast<unsigned short>(p)};
}

int dead_peer_seconds() {
  static const int seconds = [] {
    // (Checked by the programs before they start and by gridrt::init.)
    try {
      return static_cast<int>(settings::number("GRIDRT_DEAD_PEER_SECONDS").value_or(30));
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "gridrt: %s; taking 30\n", e.what());
      return 30;
    }
  }();
  return seconds;
}

void tune_socket(tcp::socket& s) {
  boost::system::error_code ec;
  s.set_option(tcp::no_delay(true), ec);
  // Probes start after a third of the time without traffic and go every ninth: six unanswered
  // ones make the whole time. Failures to set these are harmless (the defaults stay).
  const int t = dead_peer_seconds(), on = 1, idle = std::max(1, t / 3), interval = std::max(1, t / 9), count = 6;
  const unsigned user_timeout_ms = static_cast<unsigned>(t) * 1000;
  const int fd = s.native_handle();
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

void on_termination_signal(asio::io_context& io, std::function<void(int)> stop) {
  auto signals = std::make_shared<asio::signal_set>(io, SIGINT, SIGTERM);
  signals->async_wait([signals, stop = std::move(stop)](const boost::system::error_code& ec, int sig) {
    if (!ec) stop(sig);
  });
}

}  // namespace gridrt
