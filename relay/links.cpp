// Routing between clusters and the relay-to-relay links (dialled by the relay whose cluster
// sorts first, accepted by the other; their own thread); across an emulated WAN, through the
// path that emulates it (relay/emulated_path.h).
#include <algorithm>
#include <cmath>
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
    PeerLink& pl = peer_link(c.name);
    // One link per pair of clusters, dialled by the side the other accepts connections
    // from (relay_link_dialer: the reverse direction when only we are reachable), so the
    // two never dial each other at once. The other side waits for our call.
    if (relay_link_dialer(t, job.start.cluster, i) != static_cast<int>(job.start.cluster)) continue;
    boost::system::error_code ec;
    pl.dial_to = tcp::endpoint(asio::ip::make_address(c.link_host, ec), c.link_port);
    if (!pl.link && !pl.dialling && !pl.down_since) dial(c.name, pl);
  }
}

void Relay::dial(const std::string& cluster, PeerLink& pl) {
  pl.dialling = true;
  asio::co_spawn(link_io_, dial_link(cluster, *pl.dial_to), asio::detached);
}

Relay::PeerLink& Relay::peer_link(const std::string& cluster) {
  auto& pl = links_[cluster];
  if (!pl) pl = std::make_unique<PeerLink>();
  return *pl;
}

void Relay::send_to_cluster(const std::string& cluster, Frame& f, const std::string* wan_to_site) {
  PeerLink& pl = peer_link(cluster);
  if (!opt_.wan.active() || !wan_to_site) return transmit(cluster, pl, f);
  if (!pl.emulated)
    pl.emulated = std::make_unique<EmulatedPath>(io_, wan_line(*wan_to_site), opt_.wan.pair(opt_.cluster.site, *wan_to_site).delay,
                                                 [this, cluster, &pl](Frame& arrived) { transmit(cluster, pl, arrived); });
  pl.emulated->send(f);
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

// Every frame for the other cluster is numbered and kept until that side acknowledges it,
// and goes on the connection if one is up; while none is, it waits in the session.
void Relay::transmit(const std::string& cluster, PeerLink& pl, Frame& f) {
  const LinkResume::Kept& k = pl.session.keep(std::move(f));
  if (pl.up) {
    hand_over(link_io_, [link = pl.link, header = k.header, body = k.body]() mutable { link->send_shared(header, std::move(body)); });
    return;
  }
  if (pl.session.kept_bytes() > kMaxLinkBacklog)
    give_up_link(cluster, "over " + std::to_string(kMaxLinkBacklog >> 20) + " MiB wait for it (" + pl.down_why + ")");
}

// Runs on the link thread: relay links do their TLS work there, beside the main thread
// that serves the cluster's processes and routes frames (two cores for the two halves of
// a relay's work). Everything that touches the relay's state is posted to the main thread.
asio::awaitable<void> Relay::dial_link(std::string cluster, tcp::endpoint ep) {
  TlsStream stream = opt_.encrypt_links ? TlsStream(link_io_, tls_client_) : TlsStream::unencrypted(tcp::socket(link_io_));
  const boost::system::error_code ec = co_await connect_tls(stream, ep, kHandshakeTimeout);
  std::string why = ec ? ec.message() : "";
  if (!ec && stream.encrypted() && tls::peer_common_name(stream.native_handle()) != tls::relay_name(cluster))
    why = "it presents a certificate named '" + tls::peer_common_name(stream.native_handle()) + "', not '" + tls::relay_name(cluster) + "'";
  if (!why.empty()) {
    std::ostringstream at;
    at << "at " << ep << ": " << why;
    asio::post(io_, [this, cluster, why = at.str()] { on_dial_failed(cluster, why); });
    co_return;
  }
  auto link = std::make_shared<TlsLink>(std::move(stream), "relay " + cluster);
  start_link(cluster, link);
  // Handed over before the link's first frame can be (its read loop starts after this returns).
  hand_over(io_, [this, cluster, link] { on_dialled(cluster, link); });
}

void Relay::on_dial_failed(const std::string& cluster, const std::string& why) {
  PeerLink& pl = peer_link(cluster);
  pl.dialling = false;
  if (stopped_) return;
  if (pl.down_since) {  // within the grace: again later
    log::info("redialling the relay of cluster ", cluster, " failed ", why);
    return redial_later(cluster, pl);
  }
  log::error("cannot link to the relay of cluster ", cluster, " ", why);
  cut_off(cluster, jobs_across(cluster), "cannot link to cluster " + cluster + " " + why);
  if (!pl.session.knows_peer()) pl.session.forget_peer();  // what waited for the first connection
}

// The dialler speaks first: its hello, then nothing until the other's answer (on_peer_hello).
void Relay::on_dialled(const std::string& cluster, const std::shared_ptr<TlsLink>& link) {
  PeerLink& pl = peer_link(cluster);
  pl.dialling = false;
  if (stopped_) return;
  pl.link = link;
  pl.up = false;
  hand_over(link_io_,
            [link, hello = pl.session.hello(opt_.cluster.name)] { link->send(wire::make_frame(Type::kLinkHello, hello.encode())); });
  log::info("linked to the relay of cluster ", cluster, "; waiting for its hello");
}

// Link thread: frames and the end of a link are handed to the main thread.
void Relay::start_link(const std::string& cluster, const std::shared_ptr<TlsLink>& link) {
  link->keep_alive(true);  // a hung relay is a lost link; idle, the heartbeats keep NAT mappings open
  link->report_pauses();
  link->start(
      [this, cluster, weak = std::weak_ptr<TlsLink>(link)](Frame& f) {
        if (auto l = weak.lock()) hand_over(io_, [this, cluster, l, f = std::move(f)]() mutable { on_link_frame(cluster, l, f); });
      },
      [this, cluster, link](const std::string& why) { asio::post(io_, [this, cluster, link, why] { on_link_lost(cluster, link, why); }); });
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
  // Until its LinkHello is taken (on the main thread, which knows the links), the link's
  // frames go nowhere; afterwards they are handed to the main thread like a dialled link's.
  auto name = std::make_shared<std::string>();  // link thread only
  std::weak_ptr<TlsLink> weak = link;
  link->keep_alive(true);
  link->report_pauses();
  link->start(
      [this, name, weak, cn](Frame& f) {
        auto l = weak.lock();
        if (!l) return;
        if (!name->empty()) {
          hand_over(io_, [this, cluster = *name, l, f = std::move(f)]() mutable { on_link_frame(cluster, l, f); });
          return;
        }
        if (f.header.type != Type::kLinkHello) return l->fail("the first frame must be LinkHello");
        LinkHello hello;
        try {
          hello = LinkHello::decode(f.body);
        } catch (const wire::BadBody& e) { return l->fail(std::string("bad LinkHello: ") + e.what()); }
        if (l->stream().encrypted() && cn != tls::relay_name(hello.cluster)) {
          log::warn("refusing a link from ", l->peer(), ": certificate '", cn, "' may not speak for cluster '", hello.cluster, "'");
          return l->fail("certificate '" + cn + "' may not speak for cluster '" + hello.cluster + "'");
        }
        *name = hello.cluster;
        l->set_peer("relay " + *name);
        hand_over(io_, [this, hello, l] { on_accepted_hello(hello.cluster, l, hello); });
      },
      [this, name, link](const std::string& why) {
        if (name->empty()) return;
        asio::post(io_, [this, cluster = *name, link, why] { on_link_lost(cluster, link, why); });
      });
}

// The side that accepts answers the dialler's hello with its own once it has taken it.
void Relay::on_accepted_hello(const std::string& cluster, const std::shared_ptr<TlsLink>& link, const LinkHello& hello) {
  if (stopped_) return;
  PeerLink& pl = peer_link(cluster);
  if (pl.link && pl.link != link) {
    // One link per pair of clusters. A second one while the first is up would take its
    // traffic (a replayed or stolen credential): it is refused, unless it resumes the
    // session of the first, whose connection then broke without this side noticing yet
    // (its packets dropped, or a reset that never reached us).
    const bool resumes = pl.session.knows_peer() && hello.peer_instance == pl.session.instance();
    if (!resumes) {
      log::warn("refusing a second link from cluster ", cluster, " (", link->peer(), "): one is up already");
      fail_link(link, "a link with cluster '" + cluster + "' is up already");
      return;
    }
    log::info("the relay of cluster ", cluster, " resumes the link on a new connection; the old one is closed");
    asio::post(link_io_, [old = pl.link] { old->close("replaced by a new connection resuming the link"); });
    if (!pl.down_since) {
      pl.down_since = std::chrono::steady_clock::now();
      pl.down_why = "the connection was replaced";
    }
  }
  pl.link = link;
  pl.up = false;
  on_peer_hello(cluster, pl, hello, true);
}

// Both hellos known: the session goes on (what the other side had not received is sent
// again), begins, or was over (the other relay restarted or gave the link up). The side
// that accepted the connection answers with its hello first.
void Relay::on_peer_hello(const std::string& cluster, PeerLink& pl, const LinkHello& hello, bool answer) {
  const std::shared_ptr<TlsLink> link = pl.link;
  if (hello.cluster != cluster) {
    log::warn("the relay of cluster ", cluster, " says it is cluster '", hello.cluster, "': closing the link");
    fail_link(link, "this link was dialled to cluster '" + cluster + "'");
    return;
  }
  const std::deque<LinkResume::Kept> before = pl.session.kept();  // shared bodies: no copy
  const LinkResume::Answer a = pl.session.on_hello(hello);
  if (a.outcome == LinkResume::Outcome::kRefused) {
    log::warn("cannot resume the link with cluster ", cluster, ": ", a.why);
    fail_link(link, "cannot resume the link: " + a.why);
    return;
  }
  if (a.outcome == LinkResume::Outcome::kPeerRestarted) {
    // What crossed the link before is lost with the other side's session: the jobs then
    // across it cannot go on whole. Frames of jobs begun since go into the new session.
    const std::vector<std::uint64_t> lost = pl.down_since ? pl.jobs_when_lost : jobs_across(cluster);
    cut_off(cluster, lost, "lost the link to cluster " + cluster + " (its relay " + a.why + ")");
    for (const auto& k : before)
      if (auto it = jobs_.find(k.header.job);
          it != jobs_.end() && !it->second->end.stopped && std::find(lost.begin(), lost.end(), k.header.job) == lost.end())
        pl.session.keep(Frame{k.header, *k.body});
    log::warn("the relay of cluster ", cluster, " ", a.why, ": a new link session begins");
  }
  std::vector<LinkResume::Kept> again(pl.session.kept().begin(), pl.session.kept().end());
  hand_over(link_io_, [link, again = std::move(again), ours = answer ? std::optional(pl.session.hello(opt_.cluster.name)) : std::nullopt] {
    if (ours) link->send(wire::make_frame(Type::kLinkHello, ours->encode()));
    for (const auto& k : again) link->send_shared(k.header, k.body);
  });
  pl.up = true;
  if (pl.down_since) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - *pl.down_since).count();
    log::warn("link with cluster ", cluster, " back after ", std::round(seconds * 10) / 10, " s (it broke: ", pl.down_why, "); ",
              pl.session.kept().size(), " frames that had not arrived sent again");
    pl.no_longer_down();
  } else {
    log::info("link with cluster ", cluster, " up (", a.outcome == LinkResume::Outcome::kResumed ? "resumed" : "new", " session)");
  }
}

// A connection that broke, or was closed: the link's jobs pause while it is dialled again
// (by the side that dials), for up to Options::link_grace.
void Relay::on_link_lost(const std::string& cluster, const std::shared_ptr<TlsLink>& link, const std::string& why) {
  auto it = links_.find(cluster);
  // A connection that never became the cluster's (refused, or replaced) takes nothing with it.
  if (it == links_.end() || it->second->link != link) return;
  PeerLink& pl = *it->second;
  pl.link = nullptr;
  pl.up = false;
  if (stopped_) return;
  const std::vector<std::uint64_t> across = jobs_across(cluster);
  if (across.empty() && pl.session.kept().empty() && !pl.down_since) {
    log::info("link with cluster ", cluster, " closed: ", why, " (no job crosses it)");
    return;  // the session stays: the next job's link resumes it
  }
  if (!pl.session.knows_peer() && !pl.down_since) return on_dial_failed(cluster, "(the connection broke before the hellos: " + why + ")");
  if (!pl.down_since) {
    pl.down_since = std::chrono::steady_clock::now();
    pl.down_why = why;
    pl.jobs_when_lost = across;
  }
  const auto grace = std::chrono::duration_cast<std::chrono::seconds>(opt_.link_grace).count();
  if (grace == 0) return give_up_link(cluster, why);
  const char* const again = pl.dial_to ? "dialling it again" : "waiting for it to dial again";
  // With no job across it, only frames of jobs that ended here wait (the last ones before the
  // other side acknowledged them): nothing pauses, and the other relay is most often only
  // stopping (gridrun's embedded grid at the end of every job), so it is no warning.
  if (across.empty())
    log::info("link with cluster ", cluster, " closed (", why, "); no job crosses it; ", pl.session.kept().size(),
              " frames it had not acknowledged wait for it: ", again, " for up to ", grace, " s");
  else
    log::warn("link with cluster ", cluster, " broke (", why,
              "): ", across.size() == 1 ? "the job" : std::to_string(across.size()) + " jobs", " across it pause; ", again, " for up to ",
              grace, " s");
  if (!pl.grace) {
    pl.grace = std::make_unique<asio::steady_timer>(io_);
    pl.grace->expires_after(opt_.link_grace);
    pl.grace->async_wait([this, cluster, grace](const boost::system::error_code& ec) {
      if (ec || stopped_) return;
      PeerLink& l = peer_link(cluster);
      l.grace.reset();
      if (l.down_since && !l.up) give_up_link(cluster, "down for " + std::to_string(grace) + " s, its grace: " + l.down_why);
    });
  }
  if (pl.dial_to && !pl.dialling) redial_later(cluster, pl);
}

void Relay::redial_later(const std::string& cluster, PeerLink& pl) {
  if (!pl.dial_to || stopped_) return;
  pl.redial_after = pl.redial_after.count() ? std::min(2 * pl.redial_after, std::chrono::milliseconds(kRedialMost)) : kRedialFirst;
  if (!pl.redial) pl.redial = std::make_unique<asio::steady_timer>(io_);
  pl.redial->expires_after(pl.redial_after);
  pl.redial->async_wait([this, cluster](const boost::system::error_code& ec) {
    if (ec || stopped_) return;
    PeerLink& l = peer_link(cluster);
    if (l.down_since && !l.link && !l.dialling) dial(cluster, l);
  });
}

// The link stayed down past its grace (or holds too much): the clusters are cut off from each
// other for the jobs across it, and the session ends (the other side learns so at the next
// connection).
void Relay::give_up_link(const std::string& cluster, const std::string& why) {
  PeerLink& pl = peer_link(cluster);
  log::warn("giving the link with cluster ", cluster, " up: ", why);
  cut_off(cluster, jobs_across(cluster), "lost the link to cluster " + cluster + " (" + why + ")");
  pl.session.forget_peer();
  pl.no_longer_down();
  if (pl.link) asio::post(link_io_, [link = pl.link] { link->close("the link was given up"); });
  pl.link = nullptr;
  pl.up = false;
}

void Relay::cut_off(const std::string& cluster, const std::vector<std::uint64_t>& ids, const std::string& why) {
  for (const std::uint64_t id : ids)
    if (auto it = jobs_.find(id); it != jobs_.end())
      if (const auto c = it->second->topo().index_of(cluster)) cannot_reach(*it->second, *c, why);
}

void Relay::fail_link(const std::shared_ptr<TlsLink>& link, const std::string& why) {
  asio::post(link_io_, [link, why] { link->fail(why); });
}

std::vector<std::uint64_t> Relay::jobs_across(const std::string& cluster) const {
  std::vector<std::uint64_t> ids;
  for (const auto& [id, job] : jobs_)
    if (!job->end.stopped && job->topo().index_of(cluster)) ids.push_back(id);
  return ids;
}

void Relay::on_link_frame(const std::string& cluster, const std::shared_ptr<TlsLink>& link, Frame& f) {
  PeerLink& pl = peer_link(cluster);
  if (link != pl.link) return;  // a connection replaced or given up: its last frames are not the session's
  if (f.header.type == Type::kLinkHello) {
    if (pl.up) {
      fail_link(link, "a second LinkHello");
      return;
    }
    try {
      return on_peer_hello(cluster, pl, LinkHello::decode(f.body), false);
    } catch (const wire::BadBody& e) {
      fail_link(link, std::string("bad LinkHello: ") + e.what());
      return;
    }
  }
  if (!pl.up) {
    fail_link(link, "frames before the LinkHello");
    return;
  }
  if (f.header.type == Type::kLinkAck) {
    if (!pl.session.acknowledged(f.header.seq))
      fail_link(link, "LinkAck of " + std::to_string(f.header.seq) + " frames, which were not sent");
    return;
  }
  if (const auto count = pl.session.received(f.body.size())) {
    Frame ack = wire::make_frame(Type::kLinkAck);
    ack.header.seq = *count;
    hand_over(link_io_, [link, ack = std::move(ack)]() mutable { link->send(std::move(ack)); });
  }
  if (!is_process_traffic(f.header.type)) {
    log::warn("ignoring ", wire::type_name(f.header.type), " frame on the link from cluster ", cluster);
    return;
  }
  auto it = jobs_.find(f.header.job);
  if (it == jobs_.end()) return;  // the job ended here already
  Job& job = *it->second;
  const std::uint32_t src_cluster = job.topo().cluster_of(static_cast<std::uint32_t>(f.header.src));
  if (src_cluster >= job.topo().clusters.size() || job.topo().clusters[src_cluster].name != cluster || !job.is_local(f.header.dst)) {
    log::warn("dropping a frame from cluster ", cluster, " with source ", f.header.src, " and destination ", f.header.dst,
              " that do not belong to it and to us");
    return;
  }
  deliver_local(job, f);
}

}  // namespace gridrt
