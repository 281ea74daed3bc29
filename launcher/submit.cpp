#include "launcher/submit.h"
#include "launcher/job_files.h"

#include <signal.h>

#include <cstdio>
#include <functional>
#include <iomanip>
#include <sstream>

#include "common/grid.h"
#include "common/ladder.h"
#include "models/grid_model.h"
#include "common/link.h"

namespace gridrt {

using wire::Frame;
using wire::Type;

namespace {
// After losing the broker under a running job, how long gridrun tries to reach it again
// (a broker restarted on its state directory takes the job back), and how often at most.
constexpr auto kReconnectFor = std::chrono::seconds(60);
constexpr auto kReconnectBackOffMax = std::chrono::seconds(2);

// The broker's certificate must name it the broker; "" if it does, else why not.
std::string not_the_broker(TlsStream& stream, const std::string& broker) {
  const std::string cn = tls::peer_common_name(stream.native_handle());
  if (cn == tls::kBrokerName) return {};
  return broker + " is not the grid's broker: its certificate is named '" + cn + "', not '" + tls::kBrokerName + "'";
}

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
  if (const std::string why = not_the_broker(stream, broker); !why.empty()) {
    std::fprintf(stderr, "gridrun: %s\n", why.c_str());
    return nullptr;
  }
  auto link = std::make_shared<TlsLink>(std::move(stream), "broker");
  link->keep_alive(true);  // a hung broker: say so rather than wait forever
  return link;
}
}  // namespace

std::string explain_job(const Topology& t, const std::string& model) {
  const std::string links = explain_links(t);
  const std::string& text = model.empty() ? t.model : model;
  if (text.empty()) return links;
  try {
    const models::GridModel m = models::read_model_json(text, model.empty() ? "the broker's model" : "--model");
    std::string out;
    for (const auto& c : t.clusters)
      if (const auto it = m.logical.find(c.name); it != m.logical.end()) out += models::describe_logical_clusters(c.name, it->second);
    return links + (out.empty() ? "the model splits none of the job's clusters into logical clusters (each is one)\n"
                                : "logical clusters, from the model (the steps inside each cluster compose over them):\n" + out);
  } catch (const models::ModelError& e) { return links + "the model: " + e.what() + "\n"; }
}

int submit_job(const JobSpec& spec, const SubmitOptions& opt) {
  asio::io_context io;
  asio::ssl::context ctx = tls::make_context(tls::Role::kClient, opt.creds);
  std::shared_ptr<TlsLink> link = connect_broker(io, ctx, opt.broker);
  if (!link) return 1;
  // The number of the last line printed from each part (Output's seq): after a broker
  // restart its output is replayed from there, and what was printed already is not again.
  std::vector<std::uint64_t> printed;
  asio::steady_timer reconnect_timer(io);
  std::chrono::steady_clock::time_point reconnect_until;
  std::chrono::milliseconds back_off(250);
  bool reconnecting = false;
  bool takes_jobs_back = false;  // the broker said it would, should it restart (kTakesJobsBack)
  int status = 1;
  bool accepted = false, ended = false, interrupted = false, refused = false;
  Topology topo;
  std::uint64_t job_id = 0;
  asio::steady_timer give_up(io);
  asio::steady_timer health_timer(io);
  asio::steady_timer time_limit(io);
  std::function<void(int, const std::string&, const std::string&)> stop_job;
  auto prefix = [&](std::int32_t rank) {
    if (rank < 0 || static_cast<std::uint32_t>(rank) >= topo.size()) return std::string("[?] ");
    return "[" + topo.clusters[topo.cluster_of(static_cast<std::uint32_t>(rank))].name + ":" + std::to_string(rank) + "] ";
  };
  std::function<void()> reconnect;
  OutputFiles outputs(spec);
  const std::function<void(Frame&)> on_frame = [&](Frame& f) {
    switch (f.header.type) {
      case Type::kJobAccepted: {
        wire::Reader r(f.body);
        topo = Topology::decode(r);
        accepted = true;
        job_id = f.header.job;
        printed.assign(topo.clusters.size(), 0);
        takes_jobs_back = (f.header.flags & wire::kTakesJobsBack) != 0;
        if (opt.flags & wire::kSubmitDryRun) {
          std::fputs(describe_mapping(topo).c_str(), stdout);
          if (opt.explain) std::fputs(explain_job(topo, opt.model).c_str(), stdout);
          status = 0;
          ended = true;
          link->close("dry run done");
        } else {
          if (opt.verbose)
            std::fprintf(stderr, "gridrun: job %llu accepted: %u processes on %zu cluster(s)\n",
                         static_cast<unsigned long long>(f.header.job), topo.size(), topo.clusters.size());
          if (opt.timeout_s > 0) {
            time_limit.expires_after(std::chrono::seconds(opt.timeout_s));
            time_limit.async_wait([&](const boost::system::error_code& ec) {
              if (ec || ended) return;
              const std::string limit = std::to_string(opt.timeout_s) + " s";
              stop_job(kTimedOutStatus, "time limit of " + limit + " reached, gridrun --timeout",
                       "job " + std::to_string(job_id) + " reached its time limit of " + limit + " (--timeout): stopping it");
            });
          }
        }
        break;
      }
      case Type::kTopology: {  // complete, with where every process listens
        wire::Reader r(f.body);
        topo = Topology::decode(r);
        if (opt.explain) std::fputs(explain_job(topo, opt.model).c_str(), stderr);
        break;
      }
      case Type::kOutput: {
        if (f.header.seq != 0 && f.header.context < printed.size()) {  // 0: a note, not a numbered line
          if (f.header.seq <= printed[f.header.context]) break;        // replayed, printed already
          printed[f.header.context] = f.header.seq;
        }
        FILE* out = f.header.flags == kStderr ? stderr : stdout;
        // Rank -1: the launch command's own output (e.g. mpiexec's errors).
        std::string line = !opt.label                                ? std::string()
                           : f.header.src >= 0                       ? prefix(f.header.src)
                           : f.header.context < topo.clusters.size() ? "[" + topo.clusters[f.header.context].name + "] "
                                                                     : std::string("[?] ");
        line += f.body;
        line += '\n';
        std::fwrite(line.data(), 1, line.size(), out);
        break;
      }
      case Type::kNotice: std::fprintf(stderr, "gridrun: %s\n", f.body.c_str()); break;
      case Type::kFileWanted:  // a cluster's relay lacks one of the job's files
        for (const auto& file : spec.files)
          if (file.carried() && file.sha256 == f.body) {
            if (opt.verbose || file.size >= (64u << 20))
              std::fprintf(stderr, "gridrun: sending %s (%s) to the grid\n", file.source.c_str(), human_bytes(file.size).c_str());
            asio::co_spawn(
                io,
                send_staged_file(link, job_id, file, [&](const std::string& why) { std::fprintf(stderr, "gridrun: %s\n", why.c_str()); }),
                asio::detached);
            break;
          }
        break;
      case Type::kFileData: {  // a piece of an output file
        FilePiece piece;
        try {
          piece = FilePiece::decode(f.body);
        } catch (const wire::BadBody& e) {
          std::fprintf(stderr, "gridrun: a bad piece of an output file from the broker: %s\n", e.what());
          break;
        }
        if (f.header.context >= topo.clusters.size()) break;
        const std::string said = outputs.on_piece(topo.clusters[f.header.context].name, piece, !(f.header.flags & wire::kMorePieces));
        if (!said.empty()) std::fprintf(stderr, "gridrun: %s\n", said.c_str());
        break;
      }
      case Type::kError:
        std::fprintf(stderr, "gridrun: %s\n", f.body.c_str());
        if (!accepted) {
          status = f.header.tag == 2 ? 2 : 1;  // 2: the job does not fit the grid (bad input)
          refused = true;
        } else if (f.header.job == 0) {  // the broker hangs up on us (e.g. it does not know the job back)
          status = 1;
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
        time_limit.cancel();
        link->close("job ended");
        break;
      }
      default: break;
    }
  };
  const std::function<void(const std::string&)> on_closed = [&](const std::string& why) {
    if (!ended && !interrupted && !refused) {
      if (accepted && job_id != 0 && takes_jobs_back) {
        // A broker restarted on its state directory takes the job back: try to reach
        // it again for a while, with back-off.
        if (!reconnecting) {
          std::fprintf(stderr, "gridrun: lost the broker: %s; trying to reconnect for %lld s to take job %llu back\n", why.c_str(),
                       static_cast<long long>(kReconnectFor.count()), static_cast<unsigned long long>(job_id));
          reconnecting = true;
          reconnect_until = std::chrono::steady_clock::now() + kReconnectFor;
          back_off = std::chrono::milliseconds(250);
        }
        reconnect_timer.expires_after(back_off);
        reconnect_timer.async_wait([&](const boost::system::error_code& ec) {
          if (!ec) reconnect();
        });
        return;
      }
      if (accepted) std::fprintf(stderr, "gridrun: lost the broker: %s\n", why.c_str());
      else  // e.g. a certificate the grid's CA did not sign: TLS 1.3 reports it only now
        std::fprintf(stderr, "gridrun: the broker at %s closed the connection before accepting the job: %s\n", opt.broker.c_str(),
                     why.c_str());
      status = 1;
    }
    health_timer.cancel();
    reconnect_timer.cancel();
    time_limit.cancel();
    io.stop();
  };
  // One attempt to reach the broker again; on success the job is asked back (AttachJob,
  // with where the output stands), on failure another attempt follows, later, until
  // kReconnectFor is over.
  reconnect = [&] {
    if (interrupted) return io.stop();
    if (std::chrono::steady_clock::now() >= reconnect_until) {
      std::fprintf(stderr, "gridrun: the broker did not come back within %lld s: job %llu is lost to this gridrun\n",
                   static_cast<long long>(kReconnectFor.count()), static_cast<unsigned long long>(job_id));
      status = 1;
      health_timer.cancel();
      return io.stop();
    }
    auto stream = std::make_shared<TlsStream>(io, ctx);
    asio::co_spawn(io, connect_tls(*stream, parse_endpoint(opt.broker), std::chrono::seconds(5)),
                   [&, stream](std::exception_ptr, boost::system::error_code ec) {
                     std::string why = ec ? ec.message() : not_the_broker(*stream, opt.broker);
                     if (!why.empty()) {
                       back_off = std::min<std::chrono::milliseconds>(back_off * 2, kReconnectBackOffMax);
                       return on_closed(why);
                     }
                     link = std::make_shared<TlsLink>(std::move(*stream), "broker");
                     link->keep_alive(true);
                     link->start(on_frame, on_closed);
                     wire::Writer w;
                     w.u32(static_cast<std::uint32_t>(printed.size()));
                     for (auto seq : printed) w.u64(seq);
                     link->send(wire::make_frame(Type::kAttachJob, w.take(), job_id));
                     reconnecting = false;
                   });
  };
  link->start(on_frame, on_closed);
  Frame submit = wire::make_frame(Type::kSubmit, spec.encode());
  submit.header.flags = opt.flags;
  link->send(submit);
  // Stopping the job from here (a signal, the time limit): the broker stops it on every
  // cluster and gridrun waits (5 s at most) for its end, so that nothing is left running
  // when it returns. Stopping it again, or the wait running out: hang up, which makes the
  // broker stop the job too.
  stop_job = [&](int with_status, const std::string& reason, const std::string& message) {
    status = with_status;
    if (interrupted || job_id == 0) {
      interrupted = true;
      link->close("interrupted");
      return;
    }
    interrupted = true;
    std::fprintf(stderr, "gridrun: %s\n", message.c_str());
    link->send(wire::make_frame(Type::kKillJob, reason, job_id));
    give_up.expires_after(std::chrono::seconds(5));
    give_up.async_wait([&](const boost::system::error_code& e) {
      if (!e) link->close("interrupted");
    });
  };
  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_signal = [&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    const std::string name = sig == SIGINT ? "Ctrl-C" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
    stop_job(128 + sig, name, "interrupted (" + name + "), stopping job " + std::to_string(job_id) + " (Ctrl-C again to leave at once)");
    signals.async_wait(on_signal);
  };
  signals.async_wait(on_signal);
  // gridrun blocks SIGINT/SIGTERM while it starts the embedded grid; one that arrived
  // meanwhile is delivered now, to the handler above.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGINT);
  sigaddset(&term, SIGTERM);
  sigaddset(&term, SIGHUP);
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

namespace {
// One question to the broker: sends `request`, hands the first answer to `answer` (which
// says what gridrun exits with) and hangs up; 1 if the broker cannot be reached or closes
// the connection without answering.
int ask_broker(const std::string& broker, const tls::Credentials& creds, const Frame& request,
               const std::function<int(const Frame&)>& answer) {
  asio::io_context io;
  asio::ssl::context ctx = tls::make_context(tls::Role::kClient, creds);
  const auto link = connect_broker(io, ctx, broker);
  if (!link) return 1;
  int status = 1;
  bool answered = false;
  link->start(
      [&](Frame& f) {
        if (answered) return;
        answered = true;
        status = answer(f);
        link->close("answered");
      },
      [&](const std::string& why) {
        if (!answered) std::fprintf(stderr, "gridrun: the broker closed the connection: %s\n", why.c_str());
        io.stop();
      });
  link->send(request);
  io.run();
  return status;
}
}  // namespace

int cancel_job(std::uint64_t job, const std::string& broker, const tls::Credentials& creds) {
  return ask_broker(broker, creds, wire::make_frame(Type::kKillJob, "gridrun cancel", job), [](const Frame& f) {
    std::fprintf(stderr, "gridrun: %s\n", f.body.c_str());
    return f.header.type == Type::kNotice ? 0 : 1;
  });
}

namespace {
std::string duration_text(std::uint64_t s) {
  if (s < 120) return std::to_string(s) + " s";
  if (s < 7200) return std::to_string(s / 60) + " min";
  if (s < 172800) return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
  return std::to_string(s / 86400) + " d " + std::to_string(s % 86400 / 3600) + " h";
}
}  // namespace

std::string describe_status(const GridStatus& st, const std::string& broker) {
  std::ostringstream os;
  os << "broker " << broker << ": up " << duration_text(st.up_s)
     << (st.takes_jobs_back ? ", takes running jobs back if it restarts" : ", running jobs end if it stops") << "\n";
  std::size_t name_w = 7, site_w = 4;
  for (const auto& c : st.clusters) {
    name_w = std::max(name_w, c.name.size());
    site_w = std::max(site_w, c.site.size());
  }
  std::uint64_t slots = 0, free = 0;
  os << std::left << std::setw(static_cast<int>(name_w)) << "cluster"
     << "  " << std::setw(static_cast<int>(site_w)) << "site"
     << "  " << std::right << std::setw(5) << "slots"
     << "  " << std::setw(4) << "free"
     << "  relay\n";
  for (const auto& c : st.clusters) {
    const std::uint32_t f = c.relay_up && c.busy < c.slots ? c.slots - c.busy : 0;
    slots += c.slots;
    free += f;
    os << std::left << std::setw(static_cast<int>(name_w)) << c.name << "  " << std::setw(static_cast<int>(site_w)) << c.site << "  "
       << std::right << std::setw(5) << c.slots << "  " << std::setw(4) << f << "  " << (c.relay_up ? "up, " + c.relay : "DOWN") << "\n";
  }
  os << st.jobs.size() << " job(s) running, " << st.waiting << " waiting; " << free << " of " << slots << " slots free\n";
  if (st.jobs.empty()) return os.str();
  std::size_t owner_w = 5, app_w = 11;
  for (const auto& j : st.jobs) {
    owner_w = std::max(owner_w, j.owner.size());
    app_w = std::max(app_w, j.application.size());
  }
  os << std::right << std::setw(6) << "job"
     << "  " << std::left << std::setw(static_cast<int>(owner_w)) << "owner"
     << "  " << std::setw(static_cast<int>(app_w)) << "application"
     << "  " << std::right << std::setw(9) << "processes"
     << "  " << std::setw(8) << "age"
     << "  clusters\n";
  for (const auto& j : st.jobs) {
    std::string clusters;
    for (const auto& c : j.clusters) clusters += (clusters.empty() ? "" : " ") + c;
    os << std::right << std::setw(6) << j.id << "  " << std::left << std::setw(static_cast<int>(owner_w)) << j.owner << "  "
       << std::setw(static_cast<int>(app_w)) << j.application << "  " << std::right << std::setw(9) << j.processes << "  " << std::setw(8)
       << duration_text(j.age_s) << "  " << clusters << "\n";
  }
  return os.str();
}

int print_grid_status(const std::string& broker, const tls::Credentials& creds) {
  return ask_broker(broker, creds, wire::make_frame(Type::kStatus), [&](const Frame& f) {
    if (f.header.type != Type::kStatus) {
      std::fprintf(stderr, "gridrun: %s\n", f.body.c_str());
      return 1;
    }
    try {
      std::fputs(describe_status(GridStatus::decode(f.body), broker).c_str(), stdout);
      return 0;
    } catch (const wire::BadBody& e) {
      std::fprintf(stderr, "gridrun: the broker's answer is not a grid status: %s\n", e.what());
      return 1;
    }
  });
}

}  // namespace gridrt
