// Accepting connections on a daemon's listening port when strangers press on it: the file
// descriptors and the memory each connection needs, and what to do when they run out.
#pragma once

#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange without it
#include <boost/asio.hpp>
#include <cstddef>
#include <functional>

#include "common/log.h"

namespace gridrt {

// Raises this process's limit of open files (the soft one) as far as the system lets it
// (the hard one), as servers do: the caps on unauthenticated connections alone take more
// than a login's usual 1024. Logs the limit; warns, naming both, when it is below `wanted`
// (the connections the daemon may hold at once). Returns the limit.
std::size_t raise_open_file_limit(std::size_t wanted);

// Asio keeps the reactor's state of every socket that was ever open (about 170 bytes each)
// in a pool that only grows. Made on demand during a flood of connections, those objects
// land between the flood's freed handshake buffers, and each keeps a page of the heap from
// going back to the system. Made here, at start-up, up to the connections `io` may hold at
// once (`sockets` open together, then closed), they lie together and are reused later.
// Stops early, harmlessly, if descriptors run out.
void reserve_socket_state(boost::asio::io_context& io, std::size_t sockets);

// Accepts the next connection into `into`; returns an error only when the acceptor was
// closed (operation_aborted). Out of file descriptors (EMFILE, ENFILE) or kernel memory,
// accept(2) fails and leaves the connection queued, so the port stays readable and a loop
// that tries again at once spins at full CPU (and logs each failure). Here
// `drop_a_stranger` is asked to close the port's oldest unauthenticated connection, which
// frees a descriptor so that a real peer still gets in (it returns false when there is
// none), and accepting resumes a moment later. Failures are logged through `warnings`
// (summarised when they repeat).
boost::asio::awaitable<boost::system::error_code> accept_next(boost::asio::ip::tcp::acceptor& acceptor, boost::asio::ip::tcp::socket& into,
                                                              const std::function<bool()>& drop_a_stranger, log::Repeated& warnings);

}  // namespace gridrt
