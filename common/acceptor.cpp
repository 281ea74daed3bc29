#include "common/acceptor.h"

#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <vector>

namespace gridrt {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

std::size_t raise_open_file_limit(std::size_t wanted) {
  rlimit l{};
  if (::getrlimit(RLIMIT_NOFILE, &l) != 0) return 0;
  if (l.rlim_cur < l.rlim_max) {
    rlimit raised = l;
    raised.rlim_cur = l.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) l = raised;
  }
  const auto limit = static_cast<std::size_t>(l.rlim_cur == RLIM_INFINITY ? SIZE_MAX : l.rlim_cur);
  if (limit < wanted)
    log::warn("open files are limited to ", limit, ", fewer than the ", wanted,
              " connections it may hold at once; past the limit it drops the oldest unauthenticated ones "
              "(raise the hard limit: ulimit -Hn, or LimitNOFILE= for a systemd service)");
  else log::info("open files limited to ", limit);
  return limit;
}

void reserve_socket_state(asio::io_context& io, std::size_t sockets) {
  std::vector<tcp::socket> open;
  open.reserve(sockets);
  boost::system::error_code ec;
  for (std::size_t i = 0; i < sockets; ++i) {
    open.emplace_back(io);
    open.back().open(tcp::v4(), ec);  // registers it with the reactor: its state is made now
    if (ec) break;
  }
}  // all closed: their states wait in the pool

namespace {
bool out_of_resources(const boost::system::error_code& ec) {
  return ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space || ec == asio::error::no_memory || ec.value() == ENFILE;
}
}  // namespace

asio::awaitable<boost::system::error_code> accept_next(tcp::acceptor& acceptor, tcp::socket& into,
                                                       const std::function<bool()>& drop_a_stranger, log::Repeated& warnings) {
  using namespace std::chrono_literals;
  for (;;) {
    boost::system::error_code ec;
    into = co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (!ec || ec == asio::error::operation_aborted) co_return ec;
    if (!out_of_resources(ec)) {
      // The connection was taken and is gone (reset before it was accepted, say): next.
      warnings.warn("accept: ", ec.message());
      continue;
    }
    const bool dropped = drop_a_stranger();
    warnings.warn("accept: ", ec.message(),
                  dropped ? "; the oldest unauthenticated connection is dropped to make room" : "; waiting for connections to end");
    // A moment for the dropped connection to close (its descriptor is freed then); longer
    // when only the end of authenticated connections can help.
    asio::steady_timer pause(acceptor.get_executor(), dropped ? 10ms : 250ms);
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!acceptor.is_open()) co_return asio::error::operation_aborted;
  }
}

}  // namespace gridrt
