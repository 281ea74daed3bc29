// Routing between clusters and the relay-to-relay links (dialled by the relay whose cluster
// sorts first, accepted by the other; their own thread), with the emulated WAN line.
#include <algorithm>
#include <sstream>

#include "common/acceptor.h"
#include "common/ladder.h"
#include "common/messages.h"
#include "relay/relay_parts.h"

namespace gridrt {

using wire::Frame;
using wire::Type;

// ---------------------------------------------------------------- routing

void Relay::route(Job& job, Frame& f) {
  const std::uint32_t c = job.topo().cluster_of(static_cast<std::uint32_t>(f.header.dst));
  if (c == job.start.cluster) return deliver_local(job, f);
  // Between sites lies the wide-area network: what crosses it is counted, and emulated
  // (Options::wan); clusters of one site reach each other over its LAN.
  const bool wan = job.topo().clusters[c].site != job.topo().clusters[job.start.cluster].site;
  const bool payload = f.header.type == Type::kData || f.header.type == Type::kRest;
  if (wan && payload && job.is_local(f.header.src)) {
    auto& [messages, bytes] = job.wan_sent[static_cast<std::uint32_t>(f.header.src) - job.first];
    if (f.header.type == Type::kData && !(f.header.flags & wire::kMoreFragments)) ++messages;  // a message's (first part's) last fragment
    bytes += f.body.size();
  }
  send_to_cluster(job.topo().clusters[c].name, f, wan ? &job.topo().sites[job.topo().clusters[c].site] : nullptr);
}

// Frames are moved along, not copied: `f` is left empty.
void Relay::deliver_local(Job& job, Frame& f) {
  const std::uint32_t local = static_cast<std::uint32_t>(f.header.dst) - job.first;
  if (auto& c = job.procs[local]; c && !c->link->closed()) return c->link->send(std::move(f));
  job.pending_bytes += f.body.size();
  if (job.pending_bytes > kMaxPendingBytes) {
    if (!job.end.stopped) log::error("job ", job.id(), ": over ", kMaxPendingBytes, " bytes wait for ranks that never connected");
    return kill_job(job, "data for ranks that never connected", true);
  }
  job.pending[local].push_back(std::move(f));
}

void Relay::ensure_links(const Job& job) {
  const Topology& t = job.topo();
  for (std::uint32_t i = 0; i < t.clusters.size(); ++i) {
    const ClusterPart& c = t.clusters[i];
    if (i == job.start.cluster) continue;
    PeerLink* pl = &peer_link(c.name);
    // One link per pair of clusters, dialled by the side the other accepts connections
    // from (relay_link_dialer: the reverse direction when only we are reachable), so the
    // two never dial each other at once. The other side waits for our call.
    if (relay_link_dialer(t, job.start.cluster, i) == static_cast<int>(job.start.cluster) && !pl->up && !pl->dialling) {
      pl->dialling = true;
      boost::system::error_code ec;
      tcp::endpoint ep(asio::ip::make_address(c.link_host, ec), c.link_port);
      asio::co_spawn(link_io_, dial_link(c.name, ep), asio::detached);
    }
  }
}

Relay::PeerLink& Relay::peer_link(const std::string& cluster) {
  auto& pl = links_[cluster];
  if (!pl) pl = std::make_unique<PeerLink>();
  return *pl;
}

void Relay::send_to_cluster(const std::string& cluster, Frame& f, const std::string* wan_to_site) {
  PeerLink* pl = &peer_link(cluster);
  if (!opt_.wan.active() || !wan_to_site) return transmit(*pl, f);
  if (!pl->line) {
    pl->line = &wan_line(*wan_to_site);
    pl->delay = opt_.wan.pair(opt_.cluster.site, *wan_to_site).delay;
    pl->line_timer = std::make_unique<asio::steady_timer>(io_);
  }
  // Credits (flow control, 64 bytes) go ahead of the data queued on the line, as a router
  // that puts small control packets first (acknowledgement prioritisation) would: queued
  // behind a window of the other direction's data they would stall every stream across
  // the line by that data's clocking time, which no real WAN path's short queue does.
  // Nothing else overtakes: frames of one stream stay in order.
  const bool ahead = f.header.type == Type::kCredit;
  const auto now = WanLine::Clock::now();
  const auto arrival = (ahead ? now : pl->line->clocked_out(wire::kHeaderSize + f.body.size(), now)) + pl->delay;
  auto at = pl->on_the_line.end();
  if (ahead)
    at = std::upper_bound(pl->on_the_line.begin(), pl->on_the_line.end(), arrival, [](const auto& t, const auto& e) { return t < e.first; });
  const bool first = at == pl->on_the_line.begin();
  pl->on_the_line.emplace(at, arrival, std::move(f));
  if (first) wait_for_the_line(cluster, *pl);
}

// The line this site's traffic to `site` is clocked through (WanPlan::line): shared with
// the site's other relays on this machine, or this relay's own where that cannot be made.
WanLine& Relay::wan_line(const std::string& site) {
  const WanPlan::Line l = opt_.wan.line(opt_.cluster.site, site);
  auto& line = wan_lines_[l.name];
  if (line) return *line;
  try {
    std::ostringstream grid;  // the broker's address names the grid
    grid << opt_.broker;
    line = WanLine::shared(grid.str(), l.name, l.bytes_per_second);
  } catch (const std::system_error& e) {
    log::warn("emulated WAN line ", l.name, " is this relay's own, not shared with the site's other relays: ", e.what());
    line = std::make_unique<WanLine>(l.bytes_per_second);
  }
  return *line;
}

void Relay::wait_for_the_line(const std::string& cluster, PeerLink& pl) {
  pl.line_timer->expires_at(pl.on_the_line.front().first);
  pl.line_timer->async_wait([this, cluster](const boost::system::error_code& ec) {
    if (ec) return;  // stopping
    PeerLink& l = peer_link(cluster);
    const auto now = WanLine::Clock::now();
    while (!l.on_the_line.empty() && l.on_the_line.front().first <= now) {
      transmit(l, l.on_the_line.front().second);
      l.on_the_line.pop_front();
    }
    if (!l.on_the_line.empty()) wait_for_the_line(cluster, l);
  });
}

void Relay::transmit(PeerLink& pl, Frame& f) {
  if (pl.up) {
    asio::post(link_io_, [link = pl.link, f = std::move(f)]() mutable { link->send(std::move(f)); });
    return;
  }
  pl.queue.push_back(wire::encode(f));
}

// Runs on the link thread: relay links do their TLS work there, beside the main thread
// that serves the cluster's processes and routes frames (two cores for the two halves of
// a relay's work). Everything that touches the relay's state is posted to the main thread.
asio::awaitable<void> Relay::dial_link(std::string cluster, tcp::endpoint ep) {
  TlsStream stream = opt_.encrypt_links ? TlsStream(link_io_, tls_client_) : TlsStream::unencrypted(tcp::socket(link_io_));
  const boost::system::error_code ec = co_await connect_tls(stream, ep, kHandshakeTimeout);
  std::string why = ec ? ec.message() : "";
  if (!ec && stream.encrypted() && tls::peer_common_name(stream.native_handle()) != tls::relay_name(cluster))
    why = "it presents a certificate named '" + tls::peer_common_name(stream.native_handle()) + "', not '" +
          tls::relay_name(cluster) + "'";
  if (!why.empty()) {
    asio::post(io_, [this, cluster, ep, why] {
      peer_link(cluster).dialling = false;
      log::error("cannot link to the relay of cluster ", cluster, " at ", ep, ": ", why);
      for (auto& [id, job] : jobs_)
        if (const auto c = job->topo().index_of(cluster)) cannot_reach(*job, *c, "cannot link to cluster " + cluster + ": " + why);
      peer_link(cluster).queue.clear();
    });
    co_return;
  }
  auto link = std::make_shared<TlsLink>(std::move(stream), "relay " + cluster);
  link->send(wire::make_frame(Type::kLinkHello, opt_.cluster.name));
  start_link(cluster, link);
  asio::post(io_, [this, cluster, link, ep] {
    peer_link(cluster).dialling = false;
    on_link_up(cluster, link);
    log::info("linked to the relay of cluster ", cluster, " at ", ep);
  });
}

// Link thread: frames and the end of a link are handed to the main thread.
void Relay::start_link(const std::string& cluster, const std::shared_ptr<TlsLink>& link) {
  link->keep_alive(true);  // a hung relay is a lost link
  link->start([this, cluster](Frame& f) { asio::post(io_, [this, cluster, f = std::move(f)]() mutable { on_link_frame(cluster, f); }); },
              [this, cluster, link](const std::string& why) {
                asio::post(io_, [this, cluster, link, why] { on_link_lost(cluster, link, why); });
              });
}

asio::awaitable<void> Relay::accept_links() {
  // Out of descriptors, a stranger of the link port goes (on the link thread, which holds
  // them); that there is one is a guess, soon checked again.
  const auto drop_a_stranger = [this] {
    asio::post(link_io_, [this] { link_admission_.drop_oldest("out of file descriptors"); });
    return true;
  };
  while (!stopped_) {
    tcp::socket s(io_);
    if (co_await accept_next(link_acceptor_, s, drop_a_stranger, link_accept_failures_)) co_return;
    boost::system::error_code ec;
    tune_socket(s);
    // The link lives on the link thread: give it a socket of that thread's.
    tcp::socket moved(link_io_);
    moved.assign(tcp::v4(), s.release(ec), ec);
    if (!ec) asio::co_spawn(link_io_, serve_link(std::move(moved)), asio::detached);
  }
}

// One accepted relay link. (A member coroutine, not a capturing lambda: a lambda's captures
// die with the lambda object, before the coroutine resumes.)
asio::awaitable<void> Relay::serve_link(tcp::socket s) {
  boost::system::error_code ec;
  const auto remote = s.remote_endpoint(ec);
  TlsStream stream = opt_.encrypt_links ? TlsStream(std::move(s), tls_server_) : TlsStream::unencrypted(std::move(s));
  ec = co_await accept_tls(stream, link_admission_, opt_.authenticate);
  if (ec) {
    // A peer that hangs up before saying anything is the broker probing this port.
    if (ec == asio::error::eof) log::debug("TLS handshake with ", remote, " on the link port failed: ", ec.message());
    else refused_links_.warn("TLS handshake with ", remote, " on the link port failed: ", ec.message());
    co_return;
  }
  const std::string cn = tls::peer_common_name(stream.native_handle());
  auto link = std::make_shared<TlsLink>(std::move(stream), "relay link from " + remote.address().to_string() + " (" + cn + ")");
  // Until its LinkHello is accepted (on the main thread, which knows the links), the link's
  // frames go nowhere; afterwards they are handed to the main thread like a dialled link's.
  auto name = std::make_shared<std::string>();  // link thread only
  std::weak_ptr<TlsLink> weak = link;
  link->keep_alive(true);
  link->start(
      [this, name, weak, cn](Frame& f) {
        auto l = weak.lock();
        if (!l) return;
        if (!name->empty()) {
          asio::post(io_, [this, cluster = *name, f = std::move(f)]() mutable { on_link_frame(cluster, f); });
          return;
        }
        if (f.header.type != Type::kLinkHello || f.body.empty()) return l->fail("the first frame must be LinkHello");
        if (l->stream().encrypted() && cn != tls::relay_name(f.body)) {
          log::warn("refusing a link from ", l->peer(), ": certificate '", cn, "' may not speak for cluster '", f.body, "'");
          return l->fail("certificate '" + cn + "' may not speak for cluster '" + f.body + "'");
        }
        *name = f.body;
        l->set_peer("relay " + *name);
        asio::post(io_, [this, cluster = *name, l] {
          // One link per pair of clusters: a second one while the first is up would take
          // its traffic (a replayed or stolen credential); it is refused.
          if (auto it = links_.find(cluster); it != links_.end() && it->second->up) {
            log::warn("refusing a second link from cluster ", cluster, " (", l->peer(), "): one is up already");
            asio::post(link_io_, [l, cluster] { l->fail("a link with cluster '" + cluster + "' is up already"); });
            return;
          }
          on_link_up(cluster, l);
          log::info("accepted a link from the relay of cluster ", cluster);
        });
      },
      [this, name, link](const std::string& why) {
        if (name->empty()) return;
        asio::post(io_, [this, cluster = *name, link, why] { on_link_lost(cluster, link, why); });
      });
}

void Relay::on_link_up(const std::string& cluster, const std::shared_ptr<TlsLink>& link) {
  PeerLink* pl = &peer_link(cluster);
  pl->link = link;
  pl->up = true;
  asio::post(link_io_, [link, queue = std::move(pl->queue)]() mutable {
    for (auto& bytes : queue) link->send_bytes(std::move(bytes));
  });
  pl->queue.clear();
}

// A lost relay link may have taken frames with it: no job spanning that cluster can go on
// with both (cannot_reach); none is left waiting for data that will never come.
void Relay::on_link_lost(const std::string& cluster, const std::shared_ptr<TlsLink>& link, const std::string& why) {
  auto it = links_.find(cluster);
  // A link that never became the cluster's (refused, or replaced) takes nothing with it.
  if (it == links_.end() || it->second->link != link) return;
  it->second->up = false;
  if (stopped_) return;
  bool hit = false;
  for (auto& [id, job] : jobs_)
    if (const auto c = job->topo().index_of(cluster)) {
      hit = true;
      cannot_reach(*job, *c, "lost the link to cluster " + cluster + " (" + why + ")");
    }
  log::emit(hit ? log::Level::kWarn : log::Level::kInfo, "link with cluster ", cluster, " closed: ", why);
}

void Relay::on_link_frame(const std::string& cluster, Frame& f) {
  if (!is_process_traffic(f.header.type)) {
    log::warn("ignoring ", wire::type_name(f.header.type), " frame on the link from cluster ", cluster);
    return;
  }
  auto it = jobs_.find(f.header.job);
  if (it == jobs_.end()) return;  // the job ended here already
  Job& job = *it->second;
  const std::uint32_t src_cluster = job.topo().cluster_of(static_cast<std::uint32_t>(f.header.src));
  if (src_cluster >= job.topo().clusters.size() || job.topo().clusters[src_cluster].name != cluster ||
      !job.is_local(f.header.dst)) {
    log::warn("dropping a frame from cluster ", cluster, " with source ", f.header.src, " and destination ", f.header.dst,
              " that do not belong to it and to us");
    return;
  }
  deliver_local(job, f);
}

}  // namespace gridrt
