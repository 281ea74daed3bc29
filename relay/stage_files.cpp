// The files that travel with a job, at its cluster (docs/jobprofile.md, "Files that travel
// with the job"): before the part starts, its job directory is made and filled (contents
// from the relay's cache, asked of the submitter through the broker, or fetched from their
// URL); once the part is over, its outputs go back through the broker, and the directory
// goes.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "relay/http_fetch.h"
#include "relay/relay_parts.h"

namespace gridrt {

using wire::Frame;
using wire::Type;
using Role = StagedFile::Role;

namespace {

// While the broker's connection holds this much not yet sent, outputs wait.
constexpr std::size_t kOutputsQueued = 8u << 20;

bool needs_job_directory(const JobSpec& spec, bool carried_here) {
  for (const auto& f : spec.files)
    if (f.role != Role::kExecutable || f.is_url()) return true;
  return carried_here;
}

}  // namespace

// The root of this cluster's job directories and file cache: its stageDir, or a directory of
// the relay's own below the temporary directory (a cluster whose nodes share this machine's
// files). Made private to the relay's user: nobody else may put a file where a job will run it.
std::string Relay::stage_root() const {
  if (!opt_.cluster.stage_dir.empty()) return opt_.cluster.stage_dir;
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/gridrt-stage-" + std::to_string(::getuid()) + "/" + opt_.cluster.name;
}

ContentCache& Relay::cache() {
  if (!cache_) {
    const std::string root = stage_root();
    std::error_code ec;
    std::filesystem::create_directories(root, ec);
    struct stat st {};
    if (::lstat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw std::runtime_error("the staging directory " + root + " cannot be made: " + (ec ? ec.message() : "not a directory"));
    if (st.st_uid != ::getuid() || (st.st_mode & 022))
      throw std::runtime_error("the staging directory " + root + " is not this relay's alone (owned by uid " + std::to_string(st.st_uid) +
                               ", writable by others): refusing to put jobs' files there");
    // Others may pass through to their own job directories (0700 each), not list or read.
    ::chmod(root.c_str(), 0711);
    cache_ = std::make_unique<ContentCache>(root + "/cache", opt_.cache_bytes);
  }
  return *cache_;
}

// Makes the part's job directory (when it needs one) and puts its files there; launches it
// once all are in place. A file missing from the cache is asked of the submitter (FileWanted
// through the broker); a URL is fetched.
void Relay::prepare_part(Job& job) {
  const JobSpec& spec = job.start.spec;
  const bool carried_here = !opt_.cluster.stage_dir.empty();
  job.executable = spec.executable;
  job.workdir = spec.workdir_is_submitters && carried_here ? "" : spec.workdir;
  try {
    job.account = account_for(job);
    if (needs_job_directory(spec, carried_here)) {
      char suffix[16];
      std::snprintf(suffix, sizeof suffix, "%06x", static_cast<unsigned>(random_instance() & 0xffffff));
      // The job id alone may repeat: several grids (or a restarted broker without its state)
      // can share one staging directory.
      job.job_dir = stage_root() + "/job-" + std::to_string(job.id()) + "-" + suffix;
      cache();  // the root checked and made
      make_job_directory(job.job_dir, job.account);
      if (job.workdir.empty()) job.workdir = job.job_dir;
      // The nodes see neither: each node's first process carries the files to the same name
      // below nodeDir (send_files_to_node).
      if (!opt_.cluster.node_dir.empty())
        job.node_dir = opt_.cluster.node_dir + "/" + std::filesystem::path(job.job_dir).filename().string();
    }
    std::set<std::string> asked;
    for (const auto& f : spec.files) {
      if (f.role == Role::kOutput) continue;
      if (f.role == Role::kExecutable && (f.is_url() || carried_here))
        job.executable = (job.node_dir.empty() ? job.job_dir : job.node_dir) + "/" + f.name;
      if (f.is_url()) {
        const std::string scheme = f.source.substr(0, f.source.find("://"));
        const auto fetcher =
            std::find_if(opt_.fetchers.begin(), opt_.fetchers.end(), [&](const Fetcher& fe) { return fe.scheme == scheme; });
        if (scheme != "http" && scheme != "https" && fetcher == opt_.fetchers.end())
          throw std::runtime_error("no fetcher for " + scheme + ":// URLs here (" + f.source + "; the grid description's <fetcher>)");
        ++job.awaited;
        if (fetcher != opt_.fetchers.end()) run_fetcher(job, *fetcher, f);
        else asio::co_spawn(io_, fetch_for(job.id(), f), asio::detached);
      } else if (!carried_here) {
        // The nodes see the submitting machine's file where it is.
        if (f.role == Role::kInput) link_file(f.source, job.job_dir, f.name);
      } else if (const auto cached = cache().find(f.sha256)) {
        place_file(*cached, job.job_dir, f.name, f.executable, job.account);
      } else {
        ++job.awaited;
        if (!asked.insert(f.sha256).second) continue;
        job.incoming[f.sha256] = std::make_unique<IncomingFile>(cache().temp_path(f.sha256), f.size, "file '" + f.name + "'");
        to_broker(wire::make_frame(Type::kFileWanted, f.sha256, job.id()));
      }
    }
  } catch (const std::exception& e) {
    return fail_part(job, std::string("cannot prepare the job's files on cluster ") + opt_.cluster.name + ": " + e.what());
  }
  if (job.awaited == 0) return launch(job);
  log::info("job ", job.id(), ": waiting for ", job.awaited, " file(s) before it starts");
}

// Registered again with the broker, which may have restarted and lost what was on its way:
// each file still awaited from the submitter is asked for again, from its first byte.
void Relay::ask_files_again(Job& job) {
  for (auto& [digest, in] : job.incoming) {
    try {
      in->restart();
    } catch (const std::exception& e) {
      return fail_part(job, std::string("cannot take the job's files again on cluster ") + opt_.cluster.name + ": " + e.what());
    }
    log::info("job ", job.id(), ": asking again for a file (", in->path(), ")");
    to_broker(wire::make_frame(Type::kFileWanted, digest, job.id()));
  }
}

void Relay::handle_file_data(const Frame& f) {
  auto it = jobs_.find(f.header.job);
  if (it == jobs_.end()) return;
  Job& job = *it->second;
  const FilePiece piece = FilePiece::decode(f.body);
  auto in = job.incoming.find(piece.file);
  if (in == job.incoming.end()) return log::warn("job ", job.id(), ": a piece of a file it did not ask for (", piece.file, ")");
  if (in->second->restarting() && piece.offset != 0) return;  // the rest of a sending that broke off (ask_files_again)
  try {
    in->second->write(piece.offset, piece.data);
    if (f.header.flags & wire::kMorePieces) return;
    in->second->finish();
    const std::string path = cache().admit(in->second->path(), piece.file);
    job.incoming.erase(in);
    for (const auto& s : job.start.spec.files)
      if (s.carried() && s.sha256 == piece.file) {
        place_file(path, job.job_dir, s.name, s.executable, job.account);
        --job.awaited;
      }
  } catch (const std::exception& e) {
    return fail_part(job, std::string("a file of the job did not arrive whole on cluster ") + opt_.cluster.name + ": " + e.what());
  }
  if (job.awaited == 0 && job.mpiexec < 0 && !job.end.stopped) launch(job);
}

asio::awaitable<void> Relay::fetch_for(std::uint64_t id, StagedFile file) {
  std::string dir, error;
  {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) co_return;
    dir = it->second->job_dir;
  }
  const std::string temp = dir + "/.fetching-" + std::to_string(random_instance());
  try {
    const std::uint64_t bytes = co_await fetch_url(file.source, temp, FetchLimits{opt_.fetch_limit});
    log::info("job ", id, ": fetched ", file.source, " (", human_bytes(bytes), ")");
  } catch (const std::exception& e) { error = e.what(); }
  fetched(id, file, temp, error);
}

// A URL of a scheme the grid declares a fetcher for: its command, run as the job's account
// in the job's directory, writes the file; a non-zero exit (or a file larger than the
// relay's limit) fails the part.
void Relay::run_fetcher(Job& job, const Fetcher& fetcher, const StagedFile& file) {
  const std::string temp = job.job_dir + "/.fetching-" + std::to_string(random_instance());
  std::vector<std::string> argv;
  for (std::string w : fetcher.command) {
    for (const auto& [key, value] : {std::pair<std::string, std::string>{"{url}", file.source}, {"{file}", temp}})
      for (auto at = w.find(key); at != std::string::npos; at = w.find(key, at + value.size())) w.replace(at, key.size(), value);
    argv.push_back(w);
  }
  SpawnOptions so;
  so.workdir = job.job_dir;
  so.run_as = job.account;
  so.pipe_stderr = true;
  const Child c = spawn(argv, so);  // throws, naming the program: the part cannot start
  auto err = std::make_shared<asio::posix::stream_descriptor>(io_, c.stderr_fd);
  auto said = std::make_shared<std::string>();
  // What the fetcher says on its standard error names the failure (its last 2 KiB).
  auto read = std::make_shared<std::function<void()>>();
  auto buf = std::make_shared<std::array<char, 1024>>();
  *read = [err, said, buf, read] {
    err->async_read_some(asio::buffer(*buf), [err, said, buf, read](const boost::system::error_code& ec, std::size_t n) {
      said->append(buf->data(), n);
      if (said->size() > 2048) said->erase(0, said->size() - 2048);
      if (!ec) (*read)();
      else *read = nullptr;  // (breaks the cycle)
    });
  };
  (*read)();
  fetcher_children_[c.pid] = [this, id = job.id(), file, temp, argv0 = argv[0], said, err](int status) {
    std::string error;
    std::error_code ec;
    if (status != 0) {
      std::string words = *said;
      while (!words.empty() && (words.back() == '\n' || words.back() == ' ')) words.pop_back();
      if (const auto nl = words.rfind('\n'); nl != std::string::npos) words = words.substr(nl + 1);
      error = argv0 + " exited with status " + std::to_string(status) + (words.empty() ? "" : ": " + words);
    } else if (!std::filesystem::is_regular_file(temp, ec)) {
      error = argv0 + " exited 0 but wrote no file";
    } else if (std::filesystem::file_size(temp, ec) > opt_.fetch_limit) {
      error = "larger than the relay's limit of " + human_bytes(opt_.fetch_limit);
    } else {
      log::info("job ", id, ": fetched ", file.source, " with ", argv0);
    }
    fetched(id, file, temp, error);
  };
}

// A fetched file (in `temp`, or `error`) for job `id`: put in place, or the part fails.
void Relay::fetched(std::uint64_t id, const StagedFile& file, const std::string& temp, std::string error) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) {
    ::unlink(temp.c_str());
    return;
  }
  Job& job = *it->second;
  if (error.empty()) try {
      place_file(temp, job.job_dir, file.name, file.executable, job.account);
    } catch (const std::exception& e) { error = e.what(); }
  ::unlink(temp.c_str());
  if (!error.empty())
    return fail_part(job, "cannot fetch the job's file '" + file.name + "' on cluster " + opt_.cluster.name + ": " + error);
  if (--job.awaited == 0 && job.mpiexec < 0 && !job.end.stopped) launch(job);
}

// The part cannot run (its files, its account, its launch command): it ends at once, saying
// why; the broker ends the job.
void Relay::fail_part(Job& job, const std::string& why) {
  if (job.end.launch_exited) return;
  job.end.failure = why;
  job.end.launch_exited = true;
  job.end.launch_status = 127;
  job.incoming.clear();
  log::error("job ", job.id(), ": ", why);
  maybe_finish(job);
}

// The outputs the profile names, from where the processes ran, to the broker (which passes
// them to the submitter) before the part's end; each missing one is said in the output.
// Then the part finishes.
asio::awaitable<void> Relay::send_outputs(std::uint64_t id) {
  std::vector<StagedFile> outputs;
  std::string workdir;
  std::optional<LocalAccount> account;  // (the job's directory is its account's: see send_file_pieces)
  {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) co_return;
    for (const auto& f : it->second->start.spec.files)
      if (f.role == Role::kOutput) outputs.push_back(f);
    workdir = it->second->workdir;
    account = it->second->account;
  }
  // (Named, not temporaries of the co_await's expression: see send_files_to_node.)
  const std::function<std::size_t()> queued = [this] { return broker_ && registered_ ? broker_->queued_bytes() : 0; };
  const std::function<bool()> alive = [this, id] { return broker_ && registered_ && jobs_.count(id); };
  const std::function<void(const Frame&)> send = [this](const Frame& f) { to_broker(f); };
  for (const auto& out : outputs) {
    const std::string path = workdir + "/" + out.name;
    const std::string problem = co_await send_file_pieces(id, path, out.name, 0, account, "the broker", queued, alive, send);
    if (!problem.empty()) {
      auto it = jobs_.find(id);
      if (it == jobs_.end()) co_return;
      Frame note = wire::make_frame(Type::kOutput, "gridrelay: output file '" + out.name + "' " + problem, id);
      note.header.flags = kStderr;
      note.header.src = -1;
      send_output(*it->second, note);
    }
  }
  auto it = jobs_.find(id);
  if (it == jobs_.end()) co_return;
  it->second->outputs = Job::Outputs::kSent;
  finish(*it->second);
}

}  // namespace gridrt

namespace gridrt {

asio::awaitable<std::string> Relay::send_file_pieces(std::uint64_t id, const std::string& path, const std::string& name, std::int32_t tag,
                                                     std::optional<LocalAccount> reader, const char* receiver,
                                                     std::function<std::size_t()> queued, std::function<bool()> alive,
                                                     std::function<void(const Frame&)> send) {
  std::FILE* file = nullptr;
  int open_error = 0;
  {
    const FileAccessAs as(reader);
    file = std::fopen(path.c_str(), "rb");
    open_error = errno;  // (before the identity is given back)
  }
  struct stat st {};
  if (file && (::fstat(::fileno(file), &st) != 0 || !S_ISREG(st.st_mode))) {
    std::fclose(file);
    co_return "is not a regular file";
  }
  if (!file) co_return std::string("was not written (") + std::strerror(open_error) + ")";
  const auto size = static_cast<std::uint64_t>(st.st_size);
  asio::steady_timer pause(io_);
  std::string chunk, problem;
  for (std::uint64_t offset = 0;;) {
    while (alive() && queued() > kOutputsQueued) {
      pause.expires_after(std::chrono::milliseconds(5));
      co_await pause.async_wait(asio::use_awaitable);
    }
    if (!alive()) {
      problem = std::string("could not be sent: ") + receiver + " is away";
      break;
    }
    chunk.resize(std::min<std::uint64_t>(kFilePieceBytes, size - offset));
    const std::size_t n = chunk.empty() ? 0 : std::fread(chunk.data(), 1, chunk.size(), file);
    if (n != chunk.size()) {
      problem = "changed while it was read";
      break;
    }
    Frame f = wire::make_frame(Type::kFileData, FilePiece{name, size, offset, chunk}.encode(), id);
    f.header.tag = tag;
    offset += n;
    if (offset < size) f.header.flags = wire::kMorePieces;
    send(f);
    if (offset == size) break;
  }
  std::fclose(file);
  co_return problem;
}

// A node of a cluster with a nodeDir asks for the part's files: the executable and the inputs,
// from the job's directory here, then the names of the outputs it is to send back.
asio::awaitable<void> Relay::send_files_to_node(std::uint64_t id, std::weak_ptr<LocalConn> weak) {
  std::vector<StagedFile> files;
  std::string dir;
  std::vector<std::string> outputs;
  std::optional<LocalAccount> account;
  {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) co_return;
    for (const auto& f : it->second->start.spec.files) {
      if (f.role == Role::kOutput) outputs.push_back(f.name);
      else files.push_back(f);
    }
    dir = it->second->job_dir;
    account = it->second->account;
  }
  // (Named, not temporaries of the co_await's expression: GCC 12 destroys such temporaries
  // twice when they are not trivially destructible.)
  const std::function<bool()> alive = [this, id, weak] {
    auto c = weak.lock();
    return c && !c->link->closed() && jobs_.count(id);
  };
  const std::function<std::size_t()> queued = [weak] {
    auto c = weak.lock();
    return c ? c->link->queued_bytes() : 0;
  };
  const std::function<void(const Frame&)> send = [weak](const Frame& piece) {
    if (auto c = weak.lock()) c->link->send(piece);
  };
  for (const auto& f : files) {
    const std::string path = dir + "/" + f.name;
    const std::string problem = co_await send_file_pieces(id, path, f.name, f.role == Role::kExecutable ? 1 : 0, account,
                                                          "the node's process", queued, alive, send);
    if (!problem.empty()) {
      if (auto c = weak.lock()) c->link->fail("the job's file '" + f.name + "' " + problem);
      co_return;
    }
  }
  if (auto c = weak.lock(); c && alive()) {
    wire::Writer w;
    w.strs(outputs);
    c->link->send(wire::make_frame(Type::kFileWanted, w.take(), id));
  }
}

// A piece of an output from a node (a cluster with a nodeDir), sent by the node's last
// monitor: kept whole in the job's directory here, from which the outputs go back as a
// shared stageDir's would. Several nodes may send the same output: the copy of the node
// where the lowest rank ran is kept.
void Relay::take_node_output(Job& job, LocalConn& conn, const Frame& f) {
  FilePiece piece;
  try {
    piece = FilePiece::decode(f.body);
  } catch (const wire::BadBody& e) { return conn.link->fail(std::string("bad output piece: ") + e.what()); }
  const auto& files = job.start.spec.files;
  if (std::none_of(files.begin(), files.end(), [&](const StagedFile& s) { return s.role == Role::kOutput && s.name == piece.file; }))
    return conn.link->fail("'" + piece.file + "' is not an output of the job");
  if (piece.size > opt_.fetch_limit)
    return conn.link->fail("output '" + piece.file + "' is larger than the relay's limit of " + human_bytes(opt_.fetch_limit));
  const auto key = std::make_pair(conn.local_rank, piece.file);
  auto& in = job.node_outputs[key];
  const std::string from_node = "output '" + piece.file + "' of rank " + std::to_string(job.first + conn.local_rank) + "'s node";
  try {
    // As the job's account: its directory is the job's, with whatever links it put there.
    const FileAccessAs as(job.account);
    if (!in) in = std::make_unique<IncomingFile>(job.job_dir + "/.from-node-" + std::to_string(random_instance()), piece.size, from_node);
    in->write(piece.offset, piece.data);
    if (f.header.flags & wire::kMorePieces) return;
    in->finish();
    auto held = job.node_output_from.find(piece.file);
    if (held == job.node_output_from.end() || f.header.tag < held->second) {
      place_file(in->path(), job.job_dir, piece.file, false, job.account);
      job.node_output_from[piece.file] = f.header.tag;
    }
    ::unlink(in->path().c_str());
  } catch (const std::exception& e) {
    log::warn("job ", job.id(), ": ", e.what());
    job.node_outputs.erase(key);
    return conn.link->fail(e.what());
  }
  job.node_outputs.erase(key);
}

}  // namespace gridrt
