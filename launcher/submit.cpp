#include "launcher/submit.h"

#include <signal.h>

#include <cstdio>
#include <functional>

#include "broker/broker.h"
#include "common/grid.h"
#include "common/ladder.h"
#include "common/link.h"

namespace gridrt {

using wire::Frame;
using wire::Type;

namespace {
// A TLS link to the broker at `broker` (HOST:PORT) whose certificate names it the broker,
// or null after saying on stderr why not.
std::shared_ptr<TlsLink> connect_broker(asio::io_context& io, asio::ssl::context& ctx, const std::string& broker) {
  TlsStream stream(io, ctx);
  boost::system::error_code ec;
  asio::co_spawn(io, connect_tls(stream, parse_endpoint(broker), std::chrono::seconds(10)),
                 [&ec](std::exception_ptr, boost::system::error_code result) { ec = result; });
  io.run();
  io.restart();
  if (ec) {
    std::fprintf(stderr, "gridrun: cannot reach the broker at %s: %s\n", broker.c_str(), ec.message().c_str());
    return nullptr;
  }
  if (const std::string cn = tls::peer_common_name(stream.native_handle()); cn != tls::kBrokerName) {
    std::fprintf(stderr, "gridrun: %s is not the grid's broker: its certificate is named '%s', not '%s'\n", broker.c_str(),
                 cn.c_str(), tls::kBrokerName.c_str());
    return nullptr;
  }
  auto link = std::make_shared<TlsLink>(std::move(stream), "broker");
  link->keep_alive(true);  // a hung broker: say so rather than wait forever
  return link;
}
}  // namespace

int submit_job(const JobSpec& spec, const SubmitOptions& opt) {
  asio::io_context io;
  asio::ssl::context ctx = tls::make_context(tls::Role::kClient, opt.creds);
  const auto link = connect_broker(io, ctx, opt.broker);
  if (!link) return 1;
  int status = 1;
  bool accepted = false, ended = false, interrupted = false, refused = false;
  Topology topo;
  std::uint64_t job_id = 0;
  asio::steady_timer give_up(io);
  asio::steady_timer health_timer(io);
  auto prefix = [&](std::int32_t rank) {
    if (rank < 0 || static_cast<std::uint32_t>(rank) >= topo.size()) return std::string("[?] ");
    return "[" + topo.clusters[topo.cluster_of(static_cast<std::uint32_t>(rank))].name + ":" + std::to_string(rank) + "] ";
  };
  link->start(
      [&](Frame& f) {
        switch (f.header.type) {
          case Type::kJobAccepted: {
            wire::Reader r(f.body);
            topo = Topology::decode(r);
            accepted = true;
            job_id = f.header.job;
            if (opt.flags & kSubmitDryRun) {
              std::fputs(describe_mapping(topo).c_str(), stdout);
              if (opt.explain) std::fputs(explain_links(topo).c_str(), stdout);
              status = 0;
              ended = true;
              link->close("dry run done");
            } else if (opt.verbose) {
              std::fprintf(stderr, "gridrun: job %llu accepted: %u processes on %zu cluster(s)\n",
                           static_cast<unsigned long long>(f.header.job), topo.size(), topo.clusters.size());
            }
            break;
          }
          case Type::kTopology: {  // complete, with where every process listens
            wire::Reader r(f.body);
            topo = Topology::decode(r);
            if (opt.explain) std::fputs(explain_links(topo).c_str(), stderr);
            break;
          }
          case Type::kOutput: {
            FILE* out = f.header.flags == kStderr ? stderr : stdout;
            // Rank -1: the launch command's own output (e.g. mpiexec's errors).
            std::string line = f.header.src >= 0 ? prefix(f.header.src)
                               : f.header.context < topo.clusters.size() ? "[" + topo.clusters[f.header.context].name + "] "
                                                                         : std::string("[?] ");
            line += f.body;
            line += '\n';
            std::fwrite(line.data(), 1, line.size(), out);
            break;
          }
          case Type::kNotice:
            std::fprintf(stderr, "gridrun: %s\n", f.body.c_str());
            break;
          case Type::kError:
            std::fprintf(stderr, "gridrun: %s\n", f.body.c_str());
            if (!accepted) {
              status = f.header.tag == 2 ? 2 : 1;  // 2: the job does not fit the grid (bad input)
              refused = true;
            }
            break;
          case Type::kJobEnd: {
            const JobEnd end = JobEnd::decode(f.body);
            if (!interrupted) status = end.status;
            if (!end.summary.empty()) std::fprintf(stderr, "gridrun: %s\n", end.summary.c_str());
            // The broker may report a lost relay before the health check sees it die: a dead
            // daemon is the grid's failure (1), whichever is noticed first.
            if (opt.health && end.status != 0)
              if (const std::string why = opt.health(); !why.empty()) {
                std::fprintf(stderr, "gridrun: %s\n", why.c_str());
                status = 1;
              }
            ended = true;
            give_up.cancel();
            link->close("job ended");
            break;
          }
          default:
            break;
        }
      },
      [&](const std::string& why) {
        if (!ended && !interrupted && !refused) {
          if (accepted)
            std::fprintf(stderr, "gridrun: lost the broker: %s\n", why.c_str());
          else  // e.g. a certificate the grid's CA did not sign: TLS 1.3 reports it only now
            std::fprintf(stderr, "gridrun: the broker at %s closed the connection before accepting the job: %s\n",
                         opt.broker.c_str(), why.c_str());
          status = 1;
        }
        health_timer.cancel();
        io.stop();
      });
  Frame submit = wire::make_frame(Type::kSubmit, spec.encode());
  submit.header.flags = opt.flags;
  link->send(submit);
  // First Ctrl-C: ask the broker to stop the job and wait (up to 5 s) for every part to end,
  // so nothing is left running. Second Ctrl-C, or the wait running out: hang up, which
  // makes the broker stop the job too.
  asio::signal_set signals(io, SIGINT, SIGTERM);
  std::function<void(const boost::system::error_code&, int)> on_signal = [&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    status = 128 + sig;
    if (interrupted || job_id == 0) {
      interrupted = true;
      link->close("interrupted");
      return;
    }
    interrupted = true;
    std::fprintf(stderr, "gridrun: interrupted, stopping job %llu (Ctrl-C again to leave at once)\n",
                 static_cast<unsigned long long>(job_id));
    link->send(wire::make_frame(Type::kKillJob, "Ctrl-C", job_id));
    give_up.expires_after(std::chrono::seconds(5));
    give_up.async_wait([&](const boost::system::error_code& e) {
      if (!e) link->close("interrupted");
    });
    signals.async_wait(on_signal);
  };
  signals.async_wait(on_signal);
  // gridrun blocks SIGINT/SIGTERM while it starts the embedded grid; one that arrived
  // meanwhile is delivered now, to the handler above.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGINT);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_UNBLOCK, &term, nullptr);
  std::function<void(const boost::system::error_code&)> check_health = [&](const boost::system::error_code& ec) {
    if (ec || !opt.health) return;
    if (const std::string why = opt.health(); !why.empty()) {
      std::fprintf(stderr, "gridrun: %s\n", why.c_str());
      status = 1;
      interrupted = true;  // no second message about the broker
      link->close(why);
      return;
    }
    health_timer.expires_after(std::chrono::milliseconds(100));
    health_timer.async_wait(check_health);
  };
  check_health({});
  io.run();
  std::fflush(stdout);
  return status;
}

int cancel_job(std::uint64_t job, const std::string& broker, const tls::Credentials& creds) {
  asio::io_context io;
  asio::ssl::context ctx = tls::make_context(tls::Role::kClient, creds);
  const auto link = connect_broker(io, ctx, broker);
  if (!link) return 1;
  int status = 1;
  link->start(
      [&](Frame& f) {
        if (f.header.type != Type::kNotice && f.header.type != Type::kError) return;
        std::fprintf(stderr, "gridrun: %s\n", f.body.c_str());
        status = f.header.type == Type::kNotice ? 0 : 1;
        link->close("answered");
      },
      [&](const std::string& why) {
        if (status != 0) std::fprintf(stderr, "gridrun: the broker closed the connection: %s\n", why.c_str());
        io.stop();
      });
  link->send(wire::make_frame(Type::kKillJob, "gridrun cancel", job));
  io.run();
  return status;
}

}  // namespace gridrt
