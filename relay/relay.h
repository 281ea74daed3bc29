// gridrelay: one per cluster front-end (docs/architecture.md). It registers its cluster
// with the broker, starts its part of each job with the cluster's launch command (MPICH
// mpiexec), forwards output and exit statuses, and routes runtime frames between its local
// processes and the relays of other clusters (relay-to-relay links over mutual TLS).
//
// Three listeners/dialers, one session type each: the broker link (TLS, dialled), the
// relay links (TLS, dialled by the relay whose cluster name sorts first, accepted by the
// other), and local connections (TCP from the cluster's processes and their gridproc
// monitors, admitted by the job's secret). Relay links run on a thread of their own (their
// TLS work is most of a relay's); everything else on the caller's thread.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "common/admission.h"
#include "common/cgroup.h"
#include "common/grid.h"
#include "common/link.h"
#include "common/process.h"
#include "common/staging.h"
#include "common/tls.h"
#include "common/wan.h"
#include "relay/output_log.h"

namespace gridrt {

class Relay {
 public:
  struct Options {
    ClusterDesc cluster;
    tls::Credentials creds;
    tcp::endpoint broker;
    std::string gridproc;  // path of the per-process monitor started under mpiexec
    // Benchmarks only: relay links without TLS, so neither encrypted nor authenticated
    // (a link is trusted to be the cluster its LinkHello names). Both ends must agree.
    bool encrypt_links = true;
    // Test facility: the emulated WAN under every relay link's outgoing traffic to
    // clusters of other sites (common/wan.h).
    WanPlan wan;
    // The grid map file (common/grid_map.h): when set, each job's part runs under the local
    // account its submitter is mapped to (the relay must be root), and a submitter mapped
    // to none is refused. Empty: every job runs as the relay's own user.
    std::string grid_map;
    // Set: each job's part runs in a cgroup of its own below it (common/cgroup.h), and
    // whatever is left there when the part ends is killed. Unset: the monitors alone
    // contain the ranks (each is its rank's child subreaper).
    std::shared_ptr<JobCgroups> cgroups;
    // How long a connection may stay unauthenticated (tests shorten it).
    std::chrono::steady_clock::duration authenticate = limits::kAuthenticate;
    // How long jobs keep running without the broker: a broker that restarts within it takes
    // them back (docs/architecture.md, "When the broker restarts"); after it they are killed.
    std::chrono::steady_clock::duration broker_grace = std::chrono::seconds(60);
    // How long a broken relay-to-relay link may stay down (its jobs paused, redialled, what
    // the other side had not received sent again) before its cluster is cut off.
    std::chrono::steady_clock::duration link_grace = std::chrono::seconds(60);
    // The relay's cache of the files jobs brought (relay/stage_files.cpp): at most this many
    // bytes, the least lately used going first; a file fetched from a URL: at most this big.
    std::uint64_t cache_bytes = 8ull << 30;
    std::uint64_t fetch_limit = 4ull << 30;
    // How to fetch URLs of other schemes (the grid description's <fetcher>s).
    std::vector<Fetcher> fetchers{};
    // Relay links on a thread of their own (TLS off the thread that serves the cluster), or
    // on the main thread (one hand-off fewer per frame each way).
    bool link_thread = true;
  };
  Relay(asio::io_context& io, Options opt);
  ~Relay();

  void start();
  // What the standing daemon does before start() (not the grid gridrun embeds): the open
  // files it may need, and the sockets' state made up front (common/acceptor.h).
  void prepare_for_strangers();
  // Kills every job's processes and closes every connection.
  void stop();
  // Called once if the broker refuses this relay (e.g. an unknown cluster): a configuration
  // error that retrying cannot mend.
  std::function<void(const std::string&)> on_fatal;

  tcp::endpoint link_endpoint() const { return link_acceptor_.local_endpoint(); }
  tcp::endpoint local_endpoint() const { return local_acceptor_.local_endpoint(); }
  bool registered() const { return registered_; }
  std::size_t active_jobs() const { return jobs_.size(); }

 private:
  struct LocalConn;
  struct Job;
  struct PeerLink;
  // A part that ended lately: what the broker needs should it have to take the job back.
  struct Finished {
    wire::Frame part_done;
    OutputLog output;
    std::chrono::steady_clock::time_point until;
  };
  using LocalPtr = std::shared_ptr<LocalConn>;

  // Broker side.
  asio::awaitable<void> broker_loop();
  void on_broker_frame(wire::Frame& f);
  void handle_start(const wire::Frame& f);
  void handle_topology(const wire::Frame& f);
  void tell_processes(const wire::Frame& f);
  void handle_kill(const wire::Frame& f);
  void handle_replay(const wire::Frame& f);
  void to_broker(const wire::Frame& f);
  void report_to_broker(Job& job, const wire::Frame& f);  // kept: said again to a restarted broker
  void send_output(Job& job, wire::Frame& f);
  void lost_broker(const std::string& why);
  void resync_with_broker();
  void forget_old_parts();  // parts of finished_ kept past their time

  // Local processes.
  asio::awaitable<void> accept_local();
  void on_local_frame(const LocalPtr& conn, wire::Frame& f);
  void on_local_hello(const LocalPtr& conn, const wire::Frame& f);
  void on_local_closed(const LocalPtr& conn, const std::string& why);
  void stop_if_left_early(Job& job);

  // Other relays.
  asio::awaitable<void> accept_links();
  asio::awaitable<void> serve_link(tcp::socket s);
  asio::awaitable<void> dial_link(std::string cluster, tcp::endpoint ep);
  void on_link_frame(const std::string& cluster, const std::shared_ptr<TlsLink>& link, wire::Frame& f);
  void on_dialled(const std::string& cluster, const std::shared_ptr<TlsLink>& link);
  void on_dial_failed(const std::string& cluster, const std::string& why);
  void on_accepted_hello(const std::string& cluster, const std::shared_ptr<TlsLink>& link, const LinkHello& hello);
  void on_peer_hello(const std::string& cluster, PeerLink& pl, const LinkHello& hello, bool answer);
  void on_link_lost(const std::string& cluster, const std::shared_ptr<TlsLink>& link, const std::string& why);
  void start_link(const std::string& cluster, const std::shared_ptr<TlsLink>& link);
  void dial(const std::string& cluster, PeerLink& pl);
  void redial_later(const std::string& cluster, PeerLink& pl);
  void give_up_link(const std::string& cluster, const std::string& why);
  std::vector<std::uint64_t> jobs_across(const std::string& cluster) const;  // not stopped
  // The jobs `ids` (those still here) can no longer reach `cluster`, for `why` (cannot_reach).
  void cut_off(const std::string& cluster, const std::vector<std::uint64_t>& ids, const std::string& why);
  void fail_link(const std::shared_ptr<TlsLink>& link, const std::string& why);  // from the main thread
  void ensure_links(const Job& job);
  PeerLink& peer_link(const std::string& cluster);  // made on first use
  // wan_to_site: the site the frame crosses the WAN to, or null within this site.
  void send_to_cluster(const std::string& cluster, wire::Frame& f, const std::string* wan_to_site);
  WanLine& wan_line(const std::string& site);  // WAN emulation: the line to `site`
  void transmit(const std::string& cluster, PeerLink& pl, wire::Frame& f);

  // Routing and job life.
  void route(Job& job, wire::Frame& f);
  void deliver_local(Job& job, wire::Frame& f);
  void launch(Job& job);
  // Files that travel with the job (relay/stage_files.cpp).
  std::string stage_root() const;
  ContentCache& cache();
  void prepare_part(Job& job);
  void handle_file_data(const wire::Frame& f);
  void ask_files_again(Job& job);
  asio::awaitable<void> fetch_for(std::uint64_t id, StagedFile file);
  void run_fetcher(Job& job, const Fetcher& fetcher, const StagedFile& file);
  void fetched(std::uint64_t id, const StagedFile& file, const std::string& temp, std::string error);
  asio::awaitable<void> send_outputs(std::uint64_t id);
  // The file at `path` in FileData pieces named `name`, each handed to `send` while
  // `queued()` is below a bound (else it waits) and `alive()` holds; "" once all went, else
  // what stopped it (`receiver` names who went away). The file is opened as `reader` (the
  // job's account: it is in the job's directory, where the job may have put a link to
  // anything the relay could read).
  asio::awaitable<std::string> send_file_pieces(std::uint64_t id, const std::string& path, const std::string& name, std::int32_t tag,
                                                std::optional<LocalAccount> reader, const char* receiver,
                                                std::function<std::size_t()> queued, std::function<bool()> alive,
                                                std::function<void(const wire::Frame&)> send);
  // A cluster with a nodeDir: the part's files to a node's first process, and its node's
  // outputs back from the last.
  asio::awaitable<void> send_files_to_node(std::uint64_t id, std::weak_ptr<LocalConn> conn);
  void take_node_output(Job& job, LocalConn& conn, const wire::Frame& f);
  void fail_part(Job& job, const std::string& why);
  std::optional<LocalAccount> account_for(const Job& job) const;
  void read_launcher_output(Job& job, int fd, std::uint32_t stream);
  asio::awaitable<void> forward_launcher_output(std::uint64_t id, std::shared_ptr<asio::posix::stream_descriptor> pipe,
                                                std::uint32_t stream);
  void on_child_signal();
  void cannot_reach(Job& job, std::uint32_t cluster, const std::string& why);
  // Stops the part, saying why; with tell_broker, the broker stops the job and it ends with
  // `status` (1 unless a rank's own MPI_Abort(comm, 0) asked for 0).
  void kill_job(Job& job, const std::string& why, bool tell_broker = false, int status = 1);
  void maybe_finish(Job& job);
  void finish(Job& job);
  bool held_open(const Job& job) const;  // by its output pipes or a monitor's connection
  void watch_leftovers(Job& job, std::chrono::steady_clock::duration after);
  void end_leftovers(Job& job);
  int kill_leftovers(Job& job);  // in its cgroup, if it has one; how many
  void remove_cgroup(std::uint64_t id, int attempts_left);

  // A hand-off between the two halves of the relay that carries frames or puts a link into
  // service (to the main thread from a link's reader: its frames, its hello; to the link
  // thread from routing: frames to send, hellos, acknowledgements): queued for the other
  // thread where there is a link thread; done at once where one thread runs both. Queued,
  // each cost the relay a turn of its event loop that polled the sockets for nothing (an
  // epoll_wait that found no event) before the handler ran: one of the five system calls of a
  // forwarded frame. All of these go the same way, so that they keep the order they were
  // given in (a resumed link's hello and the frames sent again before new ones; a hello
  // before the frames read with it). A link's end and closes stay queued: on_link_lost runs
  // after the frames before it, never inside a call that is still using the link's state.
  template <typename Work> void hand_over(asio::io_context& to, Work&& work) {
    if (own_link_io_) asio::post(to, std::forward<Work>(work));
    else work();
  }

  asio::io_context& io_;  // main thread: broker, local processes, routing, job life
  // Link thread: relay-to-relay links (their TLS work); or the main thread's own loop
  // (Options::link_thread false).
  std::unique_ptr<asio::io_context> own_link_io_;
  asio::io_context& link_io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> link_work_;
  std::thread link_thread_;
  Options opt_;
  asio::ssl::context tls_server_;
  asio::ssl::context tls_client_;
  tcp::acceptor link_acceptor_;
  tcp::acceptor local_acceptor_;
  Admission link_admission_{link_io_.get_executor(), "relay's link port", limits::kDaemonPort};  // link thread only
  Admission local_admission_{io_.get_executor(), "relay's local port", limits::kLocalPort};      // main thread
  log::Repeated link_accept_failures_{"failed accepts on the relay's link port"};
  log::Repeated local_accept_failures_{"failed accepts on the relay's local port"};
  log::Repeated refused_links_{"refused connections on the link port"};
  log::Repeated refused_locals_{"refused connections on the local port"};
  std::shared_ptr<TlsLink> broker_;
  asio::signal_set child_signal_;
  std::map<std::uint64_t, std::unique_ptr<Job>> jobs_;
  std::unique_ptr<ContentCache> cache_;                         // made on first use (cache())
  std::map<pid_t, std::function<void(int)>> fetcher_children_;  // running fetchers: told their exit status
  std::map<std::uint64_t, Finished> finished_;
  asio::steady_timer broker_grace_;  // runs while jobs wait for the broker to come back
  std::map<std::string, std::unique_ptr<PeerLink>> links_;
  std::map<std::string, std::unique_ptr<WanLine>> wan_lines_;  // by WanPlan::Line name
  bool registered_ = false;
  bool broker_takes_jobs_back_ = false;  // it said so (kTakesJobsBack): jobs outlive its loss a while
  bool stopped_ = false;
};

}  // namespace gridrt
