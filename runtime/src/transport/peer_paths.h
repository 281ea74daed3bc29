// The paths from one process to its peers in other clusters: the connection ladder
// (common/ladder.h) as the process side walks it. A pair's path is decided with its first
// frame and kept, so that a stream's frames never take two paths: through the relays, or a
// direct TLS connection (TLS-PSK with the job's secret) that one of the two dials, directly
// or, when only the other side can, after asking it through the relays (a reverse
// connection); frames wait while a connection is being made and go through the relays if it
// cannot be. This process's listener for such connections lives here too.
//
// It shares its transport's lock (relay_transport.h): the transport calls it with the lock
// held, and its own handlers on the I/O thread take it.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/admission.h"
#include "common/link.h"
#include "common/link_resume.h"
#include "common/log.h"
#include "control_plane.h"

namespace gridrt::detail {

// Whether and where this process accepts direct connections from other sites (GRIDRT_LISTEN
// as the relay sets it from the cluster's declared policy: "none", "any" or "LOW-HIGH").
struct ListenSpec {
  bool enabled = false;
  std::uint16_t port_min = 0, port_max = 0;   // 0: any port
  static ListenSpec parse(const char* text);  // throws std::runtime_error on a bad value
};

class PeerPaths {
 public:
  // What the paths need of their transport.
  struct Host {
    std::function<void(std::string)> write_relay;  // a frame through the relays (lock held)
    std::function<void(wire::Frame&)> deliver;     // a peer's frame a direct connection brought (no lock held)
    std::function<void(const std::string&)> fail;  // the transport cannot go on (lock held)
  };
  // `allowed`: false keeps every pair on the relays (GRIDRT_DIRECT=off). `survive_loss`: in a
  // job that goes on without lost clusters, a direct connection that closes is reported to the
  // relay as a loss (the broker decides which cluster goes) and frames to that peer are
  // dropped; otherwise sending to it fails the transport.
  PeerPaths(asio::io_context& io, std::mutex& mu, const ControlPlane& control, std::uint64_t job, const std::string& secret, bool allowed,
            bool survive_loss, Host host);

  // Makes the TLS contexts and, if `spec` is enabled, opens the listener for direct
  // connections on `host` (the address this node reaches its relay from: its address on the
  // cluster's network, which the declared policy says other sites can reach) inside the
  // spec's port range, and starts accepting (listening() stays "" if no port was free).
  void open(const ListenSpec& spec, const asio::ip::address& host);
  const std::string& listening() const { return listening_; }

  // The rest run with the lock held.
  // Writes a frame for `dst` on its pair's path (deciding it on the first frame).
  void write(std::int32_t dst, std::string bytes);
  // Whether `dst`'s frames go through the relays (the path decided now if it was not): there
  // one write may hold several frames; a direct connection keeps and counts them one by one.
  bool relayed(std::int32_t dst);
  void connect_back(std::int32_t peer);   // the peer asked us to dial it (ConnectBack)
  void direct_failed(std::int32_t peer);  // it could not (DirectFailed)
  // The peer's direct connection with us broke; it had received `count` frames on it
  // (DirectResume): the rest go through the relays.
  void direct_resume(std::int32_t peer, std::uint64_t count);
  void planned();                            // topology and rank are known now: answer waiting ConnectBacks
  void finalizing() { finalizing_ = true; }  // direct connections closing now are peers done with the job
  // The transport is closing: no more accepting or dialling; what is queued goes out, then
  // the connections close.
  void close();

 private:
  struct Peer {
    // kResuming: the direct connection broke; frames wait until what it lost is sent again
    // through the relays, which the pair then keeps to.
    enum class Path { kUndecided, kRelay, kDialling, kAwaitingCallBack, kDirect, kResuming, kClosed };
    Path path = Path::kUndecided;
    std::shared_ptr<TlsLink> link;
    std::deque<std::string> held;
    std::unique_ptr<asio::steady_timer> timer;
    // What went on the direct connection and the peer has not acknowledged (LinkAck), to be
    // sent again should it break; and how much of it the peer says it received (its
    // DirectResume), when that came before this side saw the connection break.
    KeptFrames sent;
    std::optional<std::uint64_t> peer_received;
    std::string broke;      // why it broke
    bool said_bye = false;  // the peer closes it on purpose (an Error frame: it leaves, or finalizes)
  };

  asio::awaitable<void> accept_loop();
  asio::awaitable<void> serve_direct(tcp::socket s);
  asio::awaitable<void> dial(std::int32_t rank, tcp::endpoint ep);
  void start_direct(std::int32_t rank, const std::shared_ptr<TlsLink>& link);
  // `received`: the frames the connection brought (I/O thread only), final once it closed.
  void on_direct_closed(std::int32_t rank, const std::string& why, const ReceivedCount& received);
  void on_peer_frame(std::int32_t rank, wire::Frame& f, TlsLink& link, ReceivedCount& received);
  void finish_resume(std::int32_t rank, Peer& p);                           // lock held
  void give_up_direct(std::int32_t rank, Peer& p, const std::string& why);  // lock held
  // With the lock held:
  void decide(std::int32_t dst, Peer& p);
  void call_back(std::int32_t peer);
  void fall_back(std::int32_t dst, Peer& p, const std::string& why);
  void go_direct(std::int32_t dst, Peer& p, const std::shared_ptr<TlsLink>& link);
  void signal_peer(wire::Type t, std::int32_t dst);

  asio::io_context& io_;
  std::mutex& mu_;
  const ControlPlane& control_;
  const std::uint64_t job_;
  const std::string secret_;
  const bool allowed_, survive_loss_;
  Host host_;
  std::unique_ptr<asio::ssl::context> psk_server_, psk_client_;
  std::unique_ptr<tcp::acceptor> acceptor_;
  // Who may hold this process's direct port before the handshake proves the job's secret.
  Admission strangers_;
  log::Repeated accept_failures_{"failed accepts on the direct port"};
  log::Repeated refused_direct_{"direct connections refused"};
  std::string listening_;
  std::map<std::int32_t, Peer> peers_;
  std::vector<std::int32_t> callbacks_waiting_;  // ConnectBacks that came before we could plan
  bool finalizing_ = false;
  bool closing_ = false;
};

}  // namespace gridrt::detail
