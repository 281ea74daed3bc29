#include "common/staging.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "common/log.h"

namespace gridrt {
namespace fs = std::filesystem;

namespace {

std::runtime_error sys_error(const std::string& what) { return std::runtime_error(what + ": " + std::strerror(errno)); }

std::string hex(const unsigned char* p, unsigned n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

void chown_to(const std::string& path, const std::optional<LocalAccount>& owner) {
  if (owner && ::lchown(path.c_str(), owner->uid, owner->gid) != 0) throw sys_error("cannot give " + path + " to " + owner->name);
}

// Creates the directories of `dir`/`name` below `dir`, each owned by `owner`.
std::string make_parents(const std::string& dir, const std::string& name, const std::optional<LocalAccount>& owner) {
  const fs::path target = fs::path(dir) / name;
  fs::path at = dir;
  for (const auto& part : fs::path(name).parent_path()) {
    at /= part;
    std::error_code ec;
    if (fs::create_directory(at, ec)) chown_to(at.string(), owner);
    if (ec) throw std::runtime_error("cannot create directory " + at.string() + ": " + ec.message());
  }
  return target.string();
}

}  // namespace

FileDigest digest_of_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw sys_error("cannot read " + path);
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  FileDigest d;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const auto e = sys_error("cannot read " + path);
      ::close(fd);
      throw e;
    }
    if (n == 0) break;
    EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<std::size_t>(n));
    d.size += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  d.sha256 = hex(md, len);
  return d;
}

bool is_sha256_hex(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

ContentCache::ContentCache(std::string dir, std::uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw std::runtime_error("cannot create the file cache " + dir_ + ": " + ec.message());
  // Users' programs and inputs: the relay's alone (jobs get copies, or links in their own
  // private directories).
  if (::chmod(dir_.c_str(), 0700) != 0) throw sys_error("cannot make the file cache " + dir_ + " private");
  // Temporary files of a relay that died while they arrived are of no use.
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (e.path().filename().string().rfind(".incoming-", 0) == 0) fs::remove(e.path(), ec);
}

std::optional<std::string> ContentCache::find(const std::string& sha256) const {
  if (!is_sha256_hex(sha256)) return std::nullopt;
  const std::string path = dir_ + "/" + sha256;
  if (::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) != 0) return std::nullopt;  // touched: used now
  return path;
}

std::string ContentCache::temp_path(const std::string& sha256) const {
  static std::mt19937_64 rng{std::random_device{}()};
  return dir_ + "/.incoming-" + sha256.substr(0, 16) + "-" + std::to_string(rng());
}

std::string ContentCache::admit(const std::string& temp, const std::string& sha256) {
  const FileDigest got = digest_of_file(temp);
  if (got.sha256 != sha256) {
    ::unlink(temp.c_str());
    throw std::runtime_error("the file that arrived has SHA-256 " + got.sha256 + ", not " + sha256 + " as asked: refused");
  }
  const std::string path = dir_ + "/" + sha256;
  if (::chmod(temp.c_str(), 0644) != 0 || ::rename(temp.c_str(), path.c_str()) != 0) {
    const auto e = sys_error("cannot put " + temp + " into the file cache as " + path);
    ::unlink(temp.c_str());
    throw e;
  }
  make_room(sha256);
  return path;
}

std::uint64_t ContentCache::bytes_held() const {
  std::uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec))
    if (is_sha256_hex(e.path().filename().string())) n += e.file_size(ec);
  return n;
}

void ContentCache::make_room(const std::string& keep) {
  struct Entry {
    fs::file_time_type used;
    std::uint64_t size;
    fs::path path;
  };
  std::vector<Entry> entries;
  std::uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (!is_sha256_hex(e.path().filename().string())) continue;
    const std::uint64_t size = e.file_size(ec);
    total += size;
    if (e.path().filename() != keep) entries.push_back({e.last_write_time(ec), size, e.path()});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.used < b.used; });
  for (const auto& e : entries) {
    if (total <= max_bytes_) break;
    // A job directory may hold a hard link to it: that copy stays until the job ends.
    if (fs::remove(e.path, ec)) total -= e.size;
    log::info("file cache ", dir_, ": dropped ", e.path.filename().string(), " (", human_bytes(e.size),
              ", used least lately) to stay within ", human_bytes(max_bytes_));
  }
}

IncomingFile::IncomingFile(std::string path, std::uint64_t expected, std::string what)
    : path_(std::move(path)), what_(std::move(what)), expected_(expected) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd_ < 0) throw sys_error("cannot create " + path_ + " for " + what_);
}

IncomingFile::~IncomingFile() {
  if (fd_ >= 0) discard();
}

void IncomingFile::write(std::uint64_t offset, std::string_view data) {
  if (fd_ < 0) throw std::runtime_error(what_ + ": a piece after its end");
  if (offset == 0 && received_ > 0) restart();  // its sender began again (a sending that broke off)
  if (offset == 0) restarting_ = false;
  if (offset != received_)
    throw std::runtime_error(what_ + ": a piece at byte " + std::to_string(offset) + " where " + std::to_string(received_) + " was next");
  if (data.size() > expected_ - received_)
    throw std::runtime_error(what_ + ": more than the " + std::to_string(expected_) + " bytes announced");
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw sys_error("cannot write " + path_ + " (" + what_ + ")");
    data.remove_prefix(static_cast<std::size_t>(n));
    received_ += static_cast<std::uint64_t>(n);
  }
}

void IncomingFile::finish() {
  if (received_ != expected_)
    throw std::runtime_error(what_ + ": ended after " + std::to_string(received_) + " of " + std::to_string(expected_) + " bytes");
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw sys_error("cannot write " + path_ + " (" + what_ + ")");
  }
  fd_ = -1;
}

void IncomingFile::restart() {
  if (fd_ < 0) throw std::runtime_error(what_ + ": asked again after its end");
  if (::ftruncate(fd_, 0) != 0 || ::lseek(fd_, 0, SEEK_SET) != 0) throw sys_error("cannot empty " + path_ + " (" + what_ + ")");
  received_ = 0;
  restarting_ = true;
}

void IncomingFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(path_.c_str());
}

void place_file(const std::string& from, const std::string& dir, const std::string& name, bool executable,
                const std::optional<LocalAccount>& owner) {
  const std::string to = make_parents(dir, name, owner);
  std::error_code ec;
  fs::remove(to, ec);
  // A hard link shares its mode and owner with the cache's file: only where nobody else's
  // job can be given the same inode with other rights (no account to give it to).
  if (owner || ::link(from.c_str(), to.c_str()) != 0) {
    if (!fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec))
      throw std::runtime_error("cannot copy " + from + " to " + to + ": " + ec.message());
  }
  if (::chmod(to.c_str(), executable ? 0755 : 0644) != 0) throw sys_error("cannot set the mode of " + to);
  chown_to(to, owner);
}

void link_file(const std::string& target, const std::string& dir, const std::string& name) {
  const std::string to = make_parents(dir, name, std::nullopt);
  std::error_code ec;
  fs::remove(to, ec);
  fs::create_symlink(target, to, ec);
  if (ec) throw std::runtime_error("cannot link " + to + " to " + target + ": " + ec.message());
}

void make_job_directory(const std::string& dir, const std::optional<LocalAccount>& owner) {
  std::error_code ec;
  fs::create_directories(fs::path(dir).parent_path(), ec);
  if (ec) throw std::runtime_error("cannot create " + fs::path(dir).parent_path().string() + ": " + ec.message());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw sys_error("cannot create the job directory " + dir);
  chown_to(dir, owner);
}

void remove_tree(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) log::warn("could not remove ", dir, ": ", ec.message());
}

std::uint64_t parse_bytes(const std::string& text, const std::string& what) {
  std::size_t end = 0;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  const std::string unit = text.substr(end);
  int shift = -1;
  for (const auto& [u, s] :
       {std::pair{"", 0}, {"K", 10}, {"KiB", 10}, {"M", 20}, {"MiB", 20}, {"G", 30}, {"GiB", 30}, {"T", 40}, {"TiB", 40}})
    if (unit == u) shift = s;
  if (end == 0 || end > 15 || shift < 0)
    throw std::invalid_argument(what + " takes a size (bytes, or with K, M, G or T), not '" + text + "'");
  return std::stoull(text.substr(0, end)) << shift;
}

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

}  // namespace gridrt
