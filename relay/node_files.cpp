// The job's directory on a node of a cluster with a nodeDir (relay/node_files.h).
#include "relay/node_files.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "common/link.h"
#include "common/messages.h"
#include "common/process.h"
#include "common/staging.h"
#include "common/wire.h"

namespace gridrt {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLockFile = ".gridrt-node";

std::runtime_error sys_failure(const std::string& what) { return std::runtime_error(what + ": " + std::strerror(errno)); }

// A name the relay gives a file of the job: inside the directory, as the JobProfile's names
// are (checked there too; a relay's word is not taken for it).
bool inside(const std::string& name) {
  if (name.empty() || name.front() == '/' || name == kLockFile) return false;
  for (const auto& part : fs::path(name))
    if (part == "..") return false;
  return true;
}

}  // namespace

NodeFiles::NodeFiles(int relay, std::uint64_t job, std::string dir, std::uint32_t local_rank)
    : relay_(relay), job_(job), dir_(std::move(dir)), local_rank_(local_rank) {
  std::error_code ec;
  fs::create_directories(fs::path(dir_).parent_path(), ec);
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) throw sys_failure("cannot make the job's directory " + dir_ + " on this node");
  struct stat st {};
  if (::lstat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid())
    throw std::runtime_error("the job's directory " + dir_ + " on this node is not a directory of this user's");
  lock_ = ::open((dir_ + "/" + kLockFile).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_ < 0) throw sys_failure("cannot open " + dir_ + "/" + kLockFile);
  if (::flock(lock_, LOCK_EX) != 0) throw sys_failure("cannot lock " + dir_ + "/" + kLockFile);
  Shared s = read_shared();
  if (!s.ready) {
    s.outputs = fetch();
    s.ready = true;
  }
  if (s.lowest_rank < 0 || local_rank_ < static_cast<std::uint32_t>(s.lowest_rank)) s.lowest_rank = static_cast<std::int32_t>(local_rank_);
  write_shared(s);
  ::flock(lock_, LOCK_SH);  // (held while the program runs: finish() knows the last by it)
}

NodeFiles::~NodeFiles() {
  if (lock_ >= 0) ::close(lock_);
}

NodeFiles::Shared NodeFiles::read_shared() const {
  std::string text;
  char buf[4096];
  ::lseek(lock_, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(lock_, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  Shared s;
  if (text.empty()) return s;  // the first process here
  wire::Reader r(text);
  s.ready = r.u8() != 0;
  s.lowest_rank = r.i32();
  s.outputs = r.strs();
  return s;
}

void NodeFiles::write_shared(const Shared& s) const {
  wire::Writer w;
  w.u8(s.ready ? 1 : 0).i32(s.lowest_rank).strs(s.outputs);
  const std::string text = w.take();
  if (::ftruncate(lock_, 0) != 0 || ::pwrite(lock_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
    throw sys_failure("cannot write " + dir_ + "/" + kLockFile);
}

// Asks the relay for the part's files and writes each whole under a temporary name, then
// into place (the executable 0755, the rest 0644), beating while they come: the relay takes a
// silent monitor for hung.
std::vector<std::string> NodeFiles::fetch() {
  if (!send_all(relay_, wire::encode(wire::make_frame(wire::Type::kFileWanted, {}, job_))))
    throw std::runtime_error("the relay's connection broke before the job's files were asked for");
  const auto beat = Liveness::from_dead_peer_setting().beat;
  auto last_sent = std::chrono::steady_clock::now();
  wire::Decoder decoder;
  std::unique_ptr<IncomingFile> in;
  std::string name;
  char buf[65536];
  for (;;) {
    wire::Frame f;
    const auto got = decoder.next(f);
    if (got == wire::Decoder::Status::kBad) throw std::runtime_error("the relay sent a bad frame: " + decoder.error());
    if (got == wire::Decoder::Status::kNeedMore) {
      pollfd p{relay_, POLLIN, 0};
      const int r = ::poll(&p, 1, static_cast<int>(beat.count()));
      if (std::chrono::steady_clock::now() - last_sent >= beat) {
        send_all(relay_, wire::encode(wire::make_frame(wire::Type::kHeartbeat, {}, job_)));
        last_sent = std::chrono::steady_clock::now();
      }
      if (r <= 0) continue;
      const ssize_t n = ::read(relay_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw std::runtime_error("the relay's connection closed before the job's files had all come (the relay's log says why)");
      decoder.feed(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (f.header.type == wire::Type::kFileWanted) {  // all sent: the outputs' names
      wire::Reader r(f.body);
      return r.strs();
    }
    if (f.header.type != wire::Type::kFileData) continue;  // (heartbeats)
    const FilePiece piece = FilePiece::decode(f.body);
    if (!inside(piece.file)) throw std::runtime_error("the relay named a file outside the job's directory: '" + piece.file + "'");
    if (piece.offset == 0) {
      name = piece.file;
      in = std::make_unique<IncomingFile>(dir_ + "/.arriving-" + std::to_string(local_rank_), piece.size, "the job's file '" + name + "'");
    }
    if (!in || piece.file != name) throw std::runtime_error("a piece of '" + piece.file + "' came without its beginning");
    in->write(piece.offset, piece.data);
    if (f.header.flags & wire::kMorePieces) continue;
    in->finish();
    place_file(in->path(), dir_, name, f.header.tag == 1, std::nullopt);
    ::unlink(in->path().c_str());
    in.reset();
  }
}

bool NodeFiles::finish() {
  if (::flock(lock_, LOCK_EX | LOCK_NB) != 0) return true;  // others of the node still run: the last sends
  bool relay_ok = true;
  try {
    const Shared s = read_shared();
    std::string piece_data;
    for (const auto& name : s.outputs) {
      const std::string path = dir_ + "/" + name;
      std::ifstream file(path, std::ios::binary);
      std::error_code ec;
      if (!inside(name) || !file || !fs::is_regular_file(path, ec)) continue;  // not written here (the relay says so if no node wrote it)
      const std::uint64_t size = fs::file_size(path, ec);
      for (std::uint64_t offset = 0; relay_ok;) {
        piece_data.resize(std::min<std::uint64_t>(kFilePieceBytes, size - offset));
        // A file that shrank while it was read stops here: the relay never completes this
        // node's copy and keeps another node's, or says the output was not written.
        if (!file.read(piece_data.data(), static_cast<std::streamsize>(piece_data.size()))) break;
        wire::Frame f = wire::make_frame(wire::Type::kFileData, FilePiece{name, size, offset, piece_data}.encode(), job_);
        f.header.tag = s.lowest_rank;
        offset += piece_data.size();
        if (offset < size) f.header.flags = wire::kMorePieces;
        relay_ok = send_all(relay_, wire::encode(f));
        if (offset >= size) break;
      }
    }
  } catch (const std::exception&) {
    // (the lock file unreadable: nothing to send, the directory still goes)
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
  return relay_ok;
}

}  // namespace gridrt
