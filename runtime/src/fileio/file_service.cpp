#include "file_service.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/wire.h"

namespace gridrt::fileio {

namespace {

enum class Message : std::uint8_t {
  kWrite = 1,  // id, extents, then the data
  kRead,       // id, atomic (u8), extents          -> reply: the bytes
  kSize,       // id                                -> reply: the size
  kReply,      // id, error class, error text, then the data
};

// At most this many extents, and bytes, in one request: a hostile count or length must not
// make the server allocate (the requesters send 4 MiB at most).
constexpr std::uint64_t kMostExtents = std::uint64_t{1} << 24;
constexpr std::uint64_t kMostBytes = std::uint64_t{64} << 20;

void put_extents(wire::Writer& w, const std::vector<Extent>& extents) {
  w.u64(extents.size());
  for (const Extent& e : extents) w.u64(e.offset).u64(e.length);
}

std::vector<Extent> get_extents(wire::Reader& r) {
  const std::uint64_t n = r.u64();
  if (n > kMostExtents) throw wire::BadBody("a request of " + std::to_string(n) + " extents");
  std::vector<Extent> out(n);
  std::uint64_t bytes = 0;
  for (Extent& e : out) {
    e.offset = r.u64();
    e.length = r.u64();
    if (e.offset > (std::uint64_t{1} << 62) || e.length > kMostBytes) throw wire::BadBody("an extent beyond any file");
    if ((bytes += e.length) > kMostBytes) throw wire::BadBody("a request of more than " + std::to_string(kMostBytes) + " bytes");
  }
  return out;
}

std::uint32_t class_of(int error) { return error == ENOSPC || error == EDQUOT ? ErrorClass::kNoSpace : ErrorClass::kIo; }

Reply failure(std::uint32_t error_class, const std::string& what) {
  Reply r;
  r.error_class = error_class;
  r.error = what;
  return r;
}

// The open-file-description lock over the bytes `extents` span (`take` false: none).
class RangeLock {
 public:
  RangeLock(int fd, bool take, bool exclusive, const std::vector<Extent>& extents) : fd_(fd) {
    if (!take || extents.empty()) return;
    std::uint64_t lo = extents.front().offset, hi = lo;
    for (const Extent& e : extents) {
      lo = std::min(lo, e.offset);
      hi = std::max(hi, e.offset + e.length);
    }
    if (hi == lo) return;  // (nothing to lock: a length of 0 would lock to the end of the file)
    range_ = lock(exclusive ? F_WRLCK : F_RDLCK, lo, hi - lo);
    int rc = 0;
    while ((rc = fcntl(fd_, F_OFD_SETLKW, &range_)) != 0 && errno == EINTR) {}
    held_ = rc == 0;
    error_ = rc == 0 ? 0 : errno;
  }
  // Why the lock could not be taken (0: taken, or none needed).
  int error() const { return error_; }
  ~RangeLock() {
    if (!held_) return;
    range_.l_type = F_UNLCK;
    fcntl(fd_, F_OFD_SETLK, &range_);
  }
  RangeLock(const RangeLock&) = delete;
  RangeLock& operator=(const RangeLock&) = delete;

 private:
  static struct flock lock(short type, std::uint64_t start, std::uint64_t length) {
    struct flock l {};
    l.l_type = type;
    l.l_whence = SEEK_SET;
    l.l_start = static_cast<off_t>(start);
    l.l_len = static_cast<off_t>(length);
    l.l_pid = 0;  // (open-file-description locks)
    return l;
  }
  int fd_;
  struct flock range_ {};
  bool held_ = false;
  int error_ = 0;
};

// A lock the file system refused: the access is not made (as ROMIO fails where its locks do).
Reply lock_failure(const std::string& name, int error) {
  return failure(ErrorClass::kIo, "'" + name + "': locking its bytes: " + std::strerror(error));
}

}  // namespace

struct FileService::Descriptor {
  int fd = -1;
  std::string name;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

FileService::~FileService() = default;

void FileService::serve(std::uint32_t context, int fd, std::string name) {
  auto d = std::make_shared<Descriptor>();
  d->fd = fd;
  d->name = std::move(name);
  std::lock_guard lock(mu_);
  files_[context] = std::move(d);
}

void FileService::withdraw(std::uint32_t context) {
  std::shared_ptr<Descriptor> gone;  // (closed once no request being applied holds it)
  std::lock_guard lock(mu_);
  if (auto it = files_.find(context); it != files_.end()) {
    gone = std::move(it->second);
    files_.erase(it);
  }
}

void FileService::deliver_part(std::int32_t src, std::uint32_t context, std::string_view part, std::uint64_t total, bool first, bool last) {
  if (first && last) return apply(src, context, part);
  std::string whole;
  {
    std::lock_guard lock(mu_);
    std::string& in = incoming_[{src, context}];
    if (first) {
      in.clear();
      in.reserve(std::min(total, kMostBytes + 4096));  // (what a request may be; the sender says `total`)
    }
    in.append(part);
    if (!last) return;
    whole = std::move(in);
    incoming_.erase({src, context});
  }
  apply(src, context, whole);
}

void FileService::forget(const std::function<bool(std::int32_t)>& gone) {
  std::lock_guard lock(mu_);
  std::erase_if(incoming_, [&](const auto& entry) { return gone(entry.first.first); });
}

std::string FileService::write_head(std::uint64_t id, const std::vector<Extent>& extents) {
  wire::Writer w;
  w.u8(static_cast<std::uint8_t>(Message::kWrite)).u64(id);
  put_extents(w, extents);
  return w.take();
}

std::string FileService::read_head(std::uint64_t id, bool atomic, const std::vector<Extent>& extents) {
  wire::Writer w;
  w.u8(static_cast<std::uint8_t>(Message::kRead)).u64(id).u8(atomic ? 1 : 0);
  put_extents(w, extents);
  return w.take();
}

std::string FileService::size_head(std::uint64_t id) {
  wire::Writer w;
  w.u8(static_cast<std::uint8_t>(Message::kSize)).u64(id);
  return w.take();
}

bool FileService::take_reply(std::uint64_t id, Reply* out) {
  std::lock_guard lock(mu_);
  auto it = replies_.find(id);
  if (it == replies_.end()) return false;
  *out = std::move(it->second);
  replies_.erase(it);
  return true;
}

void FileService::apply(std::int32_t src, std::uint32_t context, std::string_view body) {
  std::uint64_t id = 0;
  Reply reply;
  try {
    wire::Reader r(body);
    const auto type = static_cast<Message>(r.u8());
    id = r.u64();
    if (type == Message::kReply) {
      Reply in;
      in.error_class = r.u32();
      in.error = r.str();
      in.data.assign(body.substr(r.consumed()));
      std::lock_guard lock(mu_);
      replies_[id] = std::move(in);
      return;
    }
    std::shared_ptr<Descriptor> file;
    {
      std::lock_guard lock(mu_);
      if (auto it = files_.find(context); it != files_.end()) file = it->second;
    }
    if (!file) {
      reply = failure(ErrorClass::kFile, "the file is not open here (closed, or never opened by its cluster)");
    } else if (type == Message::kSize) {
      r.end();
      struct stat st {};
      if (::fstat(file->fd, &st) != 0) reply = failure(ErrorClass::kIo, "'" + file->name + "': " + std::strerror(errno));
      else reply.data = std::to_string(st.st_size);
    } else if (type == Message::kWrite || type == Message::kRead) {
      if (type == Message::kWrite) {
        const std::vector<Extent> extents = get_extents(r);
        reply = write(*file, extents, body.substr(r.consumed()));
      } else {
        const bool atomic = r.u8() != 0;
        const std::vector<Extent> extents = get_extents(r);
        r.end();
        reply = read(*file, atomic, extents);
      }
    } else {
      reply = failure(ErrorClass::kIntern, "a file request of unknown type " + std::to_string(static_cast<int>(type)));
    }
  } catch (const wire::BadBody& e) { reply = failure(ErrorClass::kIntern, std::string("a malformed file request: ") + e.what()); }
  wire::Writer w;
  w.u8(static_cast<std::uint8_t>(Message::kReply)).u64(id).u32(reply.error_class).str(reply.error);
  send_(src, context, w.take(), reply.data);
}

Reply FileService::write(const Descriptor& file, const std::vector<Extent>& extents, std::string_view data) {
  std::uint64_t total = 0;
  for (const Extent& e : extents) total += e.length;
  if (total != data.size())
    return failure(ErrorClass::kIntern, "a write of " + std::to_string(total) + " bytes came with " + std::to_string(data.size()));
  // Always under the lock (not only in atomic mode): ROMIO's processes of the file's own
  // cluster write noncontiguous data by reading, modifying and writing back whole spans
  // (data sieving) under their record lock; a served write between their read and their
  // write would be lost (MPICH's io/i_noncontig_coll2 lost 1168 values so).
  RangeLock lock(file.fd, true, true, extents);
  if (lock.error()) return lock_failure(file.name, lock.error());
  const char* from = data.data();
  for (const Extent& e : extents) {
    for (std::uint64_t done = 0; done < e.length;) {
      const ssize_t n = ::pwrite(file.fd, from + done, e.length - done, static_cast<off_t>(e.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        return failure(n < 0 ? class_of(errno) : ErrorClass::kIo, "'" + file.name + "': writing " + std::to_string(e.length) +
                                                                      " bytes at " + std::to_string(e.offset) + ": " +
                                                                      (n < 0 ? std::strerror(errno) : "nothing written"));
      done += static_cast<std::uint64_t>(n);
    }
    from += e.length;
  }
  return {};
}

Reply FileService::read(const Descriptor& file, bool atomic, const std::vector<Extent>& extents) {
  std::uint64_t total = 0;
  for (const Extent& e : extents) total += e.length;
  RangeLock lock(file.fd, atomic, false, extents);
  if (lock.error()) return lock_failure(file.name, lock.error());
  Reply reply;
  reply.data.resize(total);
  std::uint64_t got = 0;
  for (const Extent& e : extents) {
    std::uint64_t done = 0;
    while (done < e.length) {
      const ssize_t n = ::pread(file.fd, reply.data.data() + got + done, e.length - done, static_cast<off_t>(e.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        return failure(ErrorClass::kIo, "'" + file.name + "': reading " + std::to_string(e.length) + " bytes at " +
                                            std::to_string(e.offset) + ": " + std::strerror(errno));
      if (n == 0) break;  // the end of the file: what comes before it is the read's
      done += static_cast<std::uint64_t>(n);
    }
    got += done;
    if (done < e.length) break;
  }
  reply.data.resize(got);
  return reply;
}

}  // namespace gridrt::fileio
