// A connected pair of TCP sockets over loopback, both on one io_context: the two ends of a
// connection for in-process tests of what runs over one.
#pragma once

#include <utility>

#include "common/tls_stream.h"

namespace gridrt::test_support {

inline std::pair<tcp::socket, tcp::socket> socket_pair(asio::io_context& io) {
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket a(io), b(io);
  a.connect(acceptor.local_endpoint());
  acceptor.accept(b);
  return {std::move(a), std::move(b)};
}

}  // namespace gridrt::test_support
