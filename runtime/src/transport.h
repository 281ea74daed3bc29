// The process side of the cross-site transport: one TCP connection to this cluster's relay,
// served by one I/O thread running Asio (the application thread never touches the socket and
// blocks on a condition variable, never spinning, while it waits for the relay).
//
// Flow control is end to end, per stream (source, destination, context): a sender may have
// at most `window` bytes (plus a fixed cost per frame) that the receiving *application* has
// not yet taken; the receiver grants credit back as its receives consume the data. So a
// slow receiver makes its senders wait, the relays in between never hold more than one
// window per stream, and nothing is ever dropped (design.md, "The cross-site transport").
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/ladder.h"
#include "common/link.h"
#include "common/messages.h"
#include "matching.h"

namespace gridrt::detail {

// One remote send or receive; the transport fills in the outcome.
struct RemoteOp {
  Envelope pattern;        // receive: what it waits for (tag < 0: any tag)
  void* buf = nullptr;     // receive: where the data goes
  std::size_t capacity = 0;
  bool done = false;
  std::string error;       // set instead of done when it failed
  Envelope got;            // receive: what matched
  std::size_t bytes = 0;   // receive: the message's size
};

// Whether and where this process accepts direct connections from other sites (GRIDRT_LISTEN
// as the relay sets it from the cluster's declared policy: "none", "any" or "LOW-HIGH").
struct ListenSpec {
  bool enabled = false;
  std::uint16_t port_min = 0, port_max = 0;  // 0: any port
  static ListenSpec parse(const char* text);  // throws std::runtime_error on a bad value
};

class RelayTransport {
 public:
  // Connects to `relay` and says hello for (job, secret, local_rank); `window` is the
  // flow-control window per stream, in bytes. With `listen` enabled it first opens a
  // listener for direct connections (on the address it reaches the relay from, inside
  // the port range) and announces it in the hello.
  RelayTransport(const std::string& relay, std::uint64_t job, const std::string& secret, std::uint32_t local_rank,
                 const std::string& hostname, std::size_t window, ListenSpec listen = {});
  ~RelayTransport();
  // "HOST:PORT" of the direct-connection listener, or "".
  const std::string& listening() const { return listening_; }

  // Blocks until the broker's topology arrives; throws if the connection fails or the
  // timeout passes (a process elsewhere that never joins must not hang this one forever).
  Topology wait_topology(std::chrono::seconds timeout);
  // This process's global rank: the source of everything it sends from now on.
  void set_rank(std::int32_t rank) { rank_ = rank; }

  // Sends a copy of `bytes` to `dst`, cut into fragments. The op completes when the last
  // fragment has been handed to the relay connection, as the receiver's window allows.
  std::shared_ptr<RemoteOp> send(std::int32_t dst, std::uint32_t context, std::int32_t tag, const void* buf, std::size_t bytes);
  std::shared_ptr<RemoteOp> recv(void* buf, std::size_t capacity, std::int32_t src, std::uint32_t context, std::int32_t tag);
  // Clusters the job goes on without (the broker's ClusterLost, or the task queue's word
  // for one it lost): what waits on their ranks fails, naming the cluster and why, and so
  // does anything later sent to them or received from them. By topology index.
  void mark_lost(std::uint32_t cluster, const std::string& why);
  std::map<std::uint32_t, std::string> lost_clusters();
  // Why `rank`'s cluster was lost, or nothing.
  std::optional<std::string> lost(std::int32_t rank);
  // Withdraws a receive that no message has matched yet, so that its buffer may go; false
  // if a message already matched it (it then completes as usual).
  bool cancel(const std::shared_ptr<RemoteOp>& op);
  // This process entered finalize: direct connections closing now are peers done with the job.
  void finalizing();
  // In a job that goes on without lost clusters (GRIDRT_ON_CLUSTER_LOSS=continue): finalize's
  // barrier is the broker's (comm.cpp, finalize_barrier). The part's leader says that all
  // its processes are in finalize; every process then waits for the broker's release.
  bool survives_cluster_loss() const { return survive_cluster_loss_; }
  void part_in_finalize();
  void wait_finalize_release();
  // What this process has sent to other sites through the relays so far (Data messages
  // and their payload bytes), as its relay counted it. The question follows everything
  // this process sent before on the same connection, so the answer includes all of it.
  struct WanCount {
    std::uint64_t messages = 0, bytes = 0;
  };
  WanCount wan_count();
  // Blocks (condition variable) until op completes; throws std::runtime_error on failure.
  void wait(const std::shared_ptr<RemoteOp>& op);
  bool test(const std::shared_ptr<RemoteOp>& op);

  static constexpr std::uint32_t kMore = wire::kMoreFragments;
  static constexpr std::size_t kFrameCost = 64;     // credit charged per frame beyond its body
  static constexpr std::size_t kMinWindow = 4096;
  static constexpr std::size_t kMaxFragment = 64 * 1024;

 private:
  // A message arriving from one stream, matched as soon as its first fragment is here.
  struct Incoming {
    Envelope env;
    std::string data;             // fragments not yet delivered (while unmatched)
    std::size_t withheld = 0;     // credit owed for them, granted when they are delivered
    std::size_t filled = 0;       // bytes delivered into the bound receive
    std::shared_ptr<RemoteOp> bound;
    bool complete = false;
  };
  struct Outgoing {
    std::string bytes;            // an encoded frame
    std::size_t cost = 0;
    std::shared_ptr<RemoteOp> completes;  // on the last fragment of a message
  };
  struct Stream {                 // outgoing, per (destination, context)
    std::int32_t dst = -1;
    std::int64_t credit = 0;
    std::deque<Outgoing> queue;
  };
  using StreamKey = std::pair<std::int32_t, std::uint32_t>;

  // The path to one peer process (the connection ladder, common/ladder.h). Decided on the
  // first frame for that peer and final, so that a stream's frames never take two paths;
  // frames wait in `held` while a direct connection is being made.
  struct Peer {
    enum class Path { kUndecided, kRelay, kDialling, kAwaitingCallBack, kDirect, kClosed };
    Path path = Path::kUndecided;
    std::shared_ptr<TlsLink> link;
    std::deque<std::string> held;
    std::unique_ptr<asio::steady_timer> timer;
  };

  void on_frame(wire::Frame& f);
  void on_data(wire::Frame& f);
  void on_closed(const std::string& why);
  void on_peer_frame(std::int32_t rank, wire::Frame& f);  // from a direct connection
  asio::awaitable<void> accept_loop();
  asio::awaitable<void> serve_direct(tcp::socket s);
  asio::awaitable<void> dial(std::int32_t rank, tcp::endpoint ep);
  void start_direct(std::int32_t rank, const std::shared_ptr<TlsLink>& link);
  void on_direct_closed(std::int32_t rank, const std::string& why);
  // The rest of these run with mu_ held.
  void bind(const std::shared_ptr<Incoming>& in, const std::shared_ptr<RemoteOp>& op);
  void deliver(Incoming& in, const char* data, std::size_t n);
  void finish_if_complete(Incoming& in);
  void grant(const Envelope& from, std::size_t bytes);
  void pump(Stream& s);
  void write(std::int32_t dst, std::string bytes);
  void write_relay(std::string bytes);
  void decide(std::int32_t dst, Peer& p);
  void call_back(std::int32_t peer);
  void fall_back(std::int32_t dst, Peer& p, const std::string& why);
  void go_direct(std::int32_t dst, Peer& p, const std::shared_ptr<TlsLink>& link);
  void signal_peer(wire::Type t, std::int32_t dst);
  void fail_all(const std::string& why);
  void fail_lost(std::uint32_t cluster);
  const std::string* lost_locked(std::int32_t rank) const;

  asio::io_context io_;
  std::shared_ptr<TcpLink> link_;
  std::thread thread_;
  const std::uint64_t job_;
  const std::size_t window_;
  std::int32_t rank_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Topology> topology_;
  std::optional<WanCount> wan_answer_;
  std::string failure_;
  std::map<std::uint32_t, std::string> lost_;  // cluster index -> "cluster NAME lost: why"
  MatchQueue<RemoteOp, Incoming> queue_;
  std::map<StreamKey, std::shared_ptr<Incoming>> current_;  // (source, context) -> message being received
  std::map<StreamKey, Stream> out_;                         // (destination, context) -> outgoing stream
  std::uint64_t seq_ = 0;
  // Direct connections.
  std::unique_ptr<asio::ssl::context> psk_server_, psk_client_;
  std::unique_ptr<tcp::acceptor> acceptor_;
  std::string listening_;
  std::map<std::int32_t, Peer> peers_;
  std::vector<std::int32_t> callbacks_waiting_;  // ConnectBack that came before the topology
  bool direct_allowed_ = true;  // GRIDRT_DIRECT=off keeps every pair on the relays
  bool survive_cluster_loss_ = false;  // GRIDRT_ON_CLUSTER_LOSS=continue (the job's profile)
  bool finalizing_ = false;
  bool finalize_released_ = false;  // the broker's Finalizing came
  bool closing_ = false;
};

}  // namespace gridrt::detail
