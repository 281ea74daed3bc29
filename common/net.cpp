#include <stdexcept>

#include "common/link.h"

namespace gridrt {

tcp::endpoint parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    throw std::invalid_argument("'" + text + "' is not HOST:PORT");
  const std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  unsigned long p = 0;
  try {
    std::size_t used = 0;
    p = std::stoul(port, &used);
    if (used != port.size() || p > 65535) throw std::invalid_argument(port);
  } catch (const std::exception&) {
    throw std::invalid_argument("'" + text + "': port '" + port + "' is not a number from 0 to 65535");
  }
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
  if (ec) throw std::invalid_argument("'" + text + "': '" + host + "' is not an IP address");
  return {addr, static_cast<unsigned short>(p)};
}

void on_termination_signal(asio::io_context& io, std::function<void(int)> stop) {
  auto signals = std::make_shared<asio::signal_set>(io, SIGINT, SIGTERM);
  signals->async_wait([signals, stop = std::move(stop)](const boost::system::error_code& ec, int sig) {
    if (!ec) stop(sig);
  });
}

}  // namespace gridrt
