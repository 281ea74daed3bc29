// The process side of the cross-site transport: one TCP connection to this cluster's relay,
// read by one I/O thread running Asio. A thread that sends writes a lone frame to the socket
// itself when nothing is queued before it (common/link.h, write_from_any_thread), so the
// frame does not wait for the I/O thread to wake; the application thread blocks on a
// condition variable, never spinning, while it waits for the relay.
//
// Flow control is end to end, per stream (source, destination, context): the sending side
// (sender.h) has at most `window` bytes (plus a fixed cost per frame) in flight that the
// receiving process has not yet granted back; the receiving side (receiver.h) grants them as
// its receives take the data, or as it buffers data no receive has taken yet, up to its
// budget for such data. So a slow receiver makes its senders wait, the relays in between
// never hold more than one window per stream, and nothing is ever dropped
// (docs/protocol.md). Both are pure, and so is the control plane (control_plane.h: the
// topology, lost clusters, finalize); the paths to peers (the connection ladder) are
// peer_paths.h. This file gives them their socket to the relay, their thread and one lock,
// and routes what arrives: two-sided data to the receiver, one-sided fragments to the
// process's one-sided engine, credit and matches to the sender, the rest to the control plane.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/frame_pool.h"
#include "common/link.h"
#include "common/messages.h"
#include "control_plane.h"
#include "common/flow_control.h"
#include "message_transport.h"
#include "peer_paths.h"
#include "receiver.h"
#include "sender.h"

namespace gridrt::detail {

class RelayTransport : public MessageTransport {
 public:
  // Connects to `relay` and says hello for (job, secret, local_rank); `window` is the
  // flow-control window per stream (common/flow_control.h). With `listen` enabled it first opens a
  // listener for direct connections (on the address it reaches the relay from, inside
  // the port range) and announces it in the hello.
  RelayTransport(const std::string& relay, std::uint64_t job, const std::string& secret, std::uint32_t local_rank,
                 const std::string& hostname, flow::Window window, ListenSpec listen = {},
                 std::size_t unexpected_budget = Receiver::kUnexpectedBudget);
  ~RelayTransport();
  // Stops the I/O thread where it stands, without a goodbye: for a process that exits
  // without gridrt::finalize (an error, or main returning), before exit() tears down what
  // that thread uses. The transport can then only be destroyed.
  void halt();
  // Tells the relay that this process is leaving without gridrt::finalize, and `why` (an
  // Error frame from its rank, with the status the job is to end with, then the connection
  // closed once it is out), waiting for that at most `within`: the relay then stops the job
  // naming the rank and why, instead of the others waiting for it. Before halt().
  void leaving_unfinalized(std::chrono::milliseconds within, const std::string& why, int job_status);
  // "HOST:PORT" of the direct-connection listener, or "".
  const std::string& listening() const { return paths_.listening(); }

  // Blocks until the broker's topology arrives; throws if the connection fails or the
  // timeout passes (a process elsewhere that never joins must not hang this one forever).
  Topology wait_topology(std::chrono::seconds timeout);
  // This process's global rank: the source of everything it sends from now on (credit for
  // data that came before is granted now).
  void set_rank(std::int32_t rank);

  // The flow-control window of the streams begun from now on (those begun before keep
  // theirs): for calibration, whose own streams measure the lines with a window that does
  // not limit them and whose sample run then calls the collectives as the jobs will, with
  // theirs (launcher/gridcalibrate.cpp).
  void set_window(flow::Window window);

  // MessageTransport (message_transport.h). A send is cut into fragments; it is written as
  // the receiver's window allows.
  std::shared_ptr<RemoteOp> send(std::int32_t dst, std::uint32_t context, std::int32_t tag, const void* buf, std::size_t bytes,
                                 bool synchronous = false) override;
  std::shared_ptr<RemoteOp> send_with_head(std::int32_t dst, std::uint32_t context, std::string_view head, const void* buf,
                                           std::size_t bytes) override;
  std::shared_ptr<RemoteOp> recv(void* buf, std::size_t capacity, std::int32_t src, std::uint32_t context, std::int32_t tag) override;
  std::shared_ptr<Arrival> improbe(std::int32_t src, std::uint32_t context, std::int32_t tag) override;
  bool iprobe(std::int32_t src, std::uint32_t context, std::int32_t tag, Envelope* env, std::size_t* total) override;
  std::shared_ptr<RemoteOp> mrecv(const std::shared_ptr<Arrival>& message, void* buf, std::size_t capacity) override;
  bool cancel(const std::shared_ptr<RemoteOp>& op) override;
  bool test(const std::shared_ptr<RemoteOp>& op) override;
  void wait(const std::shared_ptr<RemoteOp>& op) override;
  std::uint64_t activity() override;
  void await_activity(std::uint64_t seen, std::chrono::microseconds at_most) override;
  void set_one_sided_sink(OneSidedSink sink, LossSink lost = {}) override;
  // Clusters the job goes on without (the broker's ClusterLost, or the task queue's word
  // for one it lost): what waits on their ranks fails, naming the cluster and why, and so
  // does anything later sent to them or received from them. By topology index.
  void mark_lost(std::uint32_t cluster, const std::string& why);
  std::map<std::uint32_t, std::string> lost_clusters();
  // Why `rank`'s cluster was lost, or nothing.
  std::optional<std::string> lost(std::int32_t rank);
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
  using WanCount = ControlPlane::WanCount;
  WanCount wan_count();
  static constexpr std::uint32_t kMore = wire::kMoreFragments;
  static constexpr std::uint32_t kSynchronous = wire::kSynchronous;
  static constexpr std::uint32_t kRendezvous = wire::kRendezvous;
  static constexpr std::size_t kRendezvousAbove = flow::kRendezvousAbove;
  static constexpr std::size_t kFrameCost = flow::kFrameCost;  // credit charged per frame beyond its body

 private:
  std::shared_ptr<RemoteOp> send_message(std::int32_t dst, std::uint32_t context, std::int32_t tag, std::string_view head, const void* buf,
                                         std::size_t bytes, bool synchronous);
  void on_frame(wire::Frame& f);
  void on_data(wire::Frame& f);
  void on_one_sided(wire::Frame& f);
  void on_matched(const wire::Frame& f);
  void on_control(const wire::Frame& f);
  void on_closed(const std::string& why);
  // The rest of these run with mu_ held.
  void grant(const Envelope& from, std::size_t bytes, bool may_wait);
  void give_held_credit(std::int32_t peer, std::string* ahead_of = nullptr);
  void write_to(std::int32_t dst, std::string frame);
  void tell_matched(const Envelope& from, std::uint64_t number);
  void notify();
  void write_relay(std::string bytes);
  void fail_all(const std::string& why);
  void fail_lost(std::uint32_t cluster);

  // Who runs io_ (reads and writes the sockets, runs the timers): the I/O thread, or an
  // application thread while it waits in this transport. A thread that waits would otherwise
  // sleep until the I/O thread, woken by the socket, wakes it in turn: two wake-ups for every
  // frame it waits for, each a context switch or more. So a waiting thread takes io_ over and
  // is woken by the socket itself; it keeps io_ when it goes back to the application (the
  // next wait finds it its own, at no cost), and the I/O thread takes io_ back only once no
  // thread has waited for kTakeBack — the application computes, and the connection must
  // still be read (credit, heartbeats, data to buffer). It is how MPICH's own progress
  // engine is run by the thread that waits; the I/O thread keeps a connection served that
  // an application thread leaves alone.
  static constexpr std::chrono::microseconds kTakeBack{1000};
  void io_thread_loop();
  // Runs io_ on this thread until `ready` (read with mu_ held) or `until`; false, having
  // run nothing, where another application thread runs io_ now or io_ is shut down (the
  // caller then waits on cv_).
  bool run_io_until(const std::function<bool()>& ready, std::chrono::steady_clock::time_point until);
  bool take_io();
  void leave_io();

  asio::io_context io_;
  std::shared_ptr<TcpLink> link_;
  // Buffers of the frames the relay connection wrote, for the next to be encoded into
  // (shared with the connection, which may outlive this).
  std::shared_ptr<FramePool> frame_pool_ = std::make_shared<FramePool>();
  std::thread thread_;
  std::mutex turn_mu_;  // the turn's state, below; never held while io_ runs
  std::condition_variable turn_cv_;
  bool app_has_io_ = false;         // an application thread took io_ over (and may hold it still)
  bool app_in_io_ = false;          // ... and is running it now
  bool io_thread_running_ = false;  // the I/O thread is inside io_.run()
  bool io_stop_asked_ = false;      // an application thread stopped io_ to take it over
  bool io_quit_ = false;            // halt(): the I/O thread ends
  std::chrono::steady_clock::time_point app_left_io_;
  const std::uint64_t job_;
  std::mutex mu_;
  std::condition_variable cv_;
  ControlPlane control_;
  std::string failure_;
  std::uint64_t activity_ = 0;                                                // bumped, with cv_ notified, by every completion and arrival
  std::vector<std::pair<Envelope, std::size_t>> owed_;                        // credit for data that came before our rank was known
  std::map<std::int32_t, std::map<std::uint32_t, std::size_t>> held_credit_;  // by sender and context: waits for our next frame to it
  // Held credit is written in front of a frame smaller than this (give_held_credit); a larger
  // one would be copied whole to make room for it.
  static constexpr std::size_t kCreditRidesBelow = 16 * 1024;
  Receiver receiver_;
  Sender sender_;
  const bool survive_cluster_loss_;  // GRIDRT_ON_CLUSTER_LOSS=continue (the job's profile)
  PeerPaths paths_;
  // One-sided messages: their sink, and the streams in the middle of a message.
  OneSidedSink one_sided_;
  LossSink one_sided_lost_;
  std::map<std::pair<std::int32_t, std::uint32_t>, bool> one_sided_within_;
};

}  // namespace gridrt::detail
