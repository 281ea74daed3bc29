#include "broker/job_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gridrt {
namespace fs = std::filesystem;
using wire::Reader;
using wire::Writer;

namespace {
constexpr std::string_view kMagic = "gridrt job state 1";
constexpr std::string_view kPrefix = "job-";

std::string failure(const std::string& what, const std::string& path) {
  return "cannot " + what + " " + path + ": " + std::strerror(errno);
}
}  // namespace

JobStore::JobStore(std::string dir) : dir_(std::move(dir)) {
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) throw std::runtime_error(failure("make the state directory", dir_));
  struct stat st;
  if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::runtime_error("the state directory " + dir_ + " is not a directory");
  if (st.st_mode & 077) ::chmod(dir_.c_str(), 0700);  // it holds the jobs' secrets
}

std::string JobStore::path_of(std::uint64_t id) const { return dir_ + "/" + std::string(kPrefix) + std::to_string(id); }

std::string JobStore::encode(const JobRecord& job, const std::vector<const PartRecord*>& parts) {
  Writer w;
  w.str(kMagic).u64(job.id).str(job.spec.encode());
  job.topology.encode(w);
  w.str(job.secret).str(job.submitter).u32(static_cast<std::uint32_t>(job.status.size()));
  for (int s : job.status) w.i32(s);
  w.i32(job.first_failure).u32(job.first_failed_rank).str(job.failure_note).strs(job.lost_notes);
  w.u8(job.killed).u8(job.finalize_released).u32(static_cast<std::uint32_t>(parts.size()));
  for (const PartRecord* p : parts) {
    w.str(p->cluster).u8(p->ready).u8(p->done).u8(p->lost).u8(p->finalizing);
    w.strs(p->hostnames).strs(p->endpoints);
  }
  return w.take();
}

JobStore::Saved JobStore::decode(std::string_view bytes) {
  Reader r(bytes);
  std::string magic;
  try {
    magic = r.str();
  } catch (const wire::BadBody&) {  // (garbage: say what it is not, not where it broke)
  }
  if (magic != kMagic) throw wire::BadBody("not a gridrt job state file (version 1)");
  Saved s;
  JobRecord& j = s.job;
  j.id = r.u64();
  j.spec = JobSpec::decode(r.str());
  j.topology = Topology::decode(r);
  j.secret = r.str();
  j.submitter = r.str();
  const std::uint32_t ranks = r.u32();
  if (ranks != j.topology.size())
    throw wire::BadBody("statuses for " + std::to_string(ranks) + " ranks in a job of " + std::to_string(j.topology.size()));
  for (std::uint32_t i = 0; i < ranks; ++i) j.status.push_back(r.i32());
  j.first_failure = r.i32();
  j.first_failed_rank = r.u32();
  j.failure_note = r.str();
  j.lost_notes = r.strs();
  j.killed = r.u8() != 0;
  j.finalize_released = r.u8() != 0;
  const std::uint32_t nparts = r.u32();
  if (nparts != j.topology.clusters.size())
    throw wire::BadBody("a job of " + std::to_string(j.topology.clusters.size()) + " clusters with " + std::to_string(nparts) + " parts");
  for (std::uint32_t i = 0; i < nparts; ++i) {
    PartRecord p;
    p.cluster = r.str();
    p.ready = r.u8() != 0;
    p.done = r.u8() != 0;
    p.lost = r.u8() != 0;
    p.finalizing = r.u8() != 0;
    p.hostnames = r.strs();
    p.endpoints = r.strs();
    s.parts.push_back(std::move(p));
  }
  r.end();
  return s;
}

void JobStore::save(const JobRecord& job, const std::vector<const PartRecord*>& parts) const {
  if (enabled()) replace(path_of(job.id), encode(job, parts));
}

std::uint64_t JobStore::next_id() const {
  if (!enabled()) return 1;
  std::ifstream in(dir_ + "/next-job-id");
  std::uint64_t id = 0;
  return in >> id && id > 0 ? id : 1;
}

void JobStore::save_next_id(std::uint64_t id) const {
  if (enabled()) replace(dir_ + "/next-job-id", std::to_string(id) + "\n");
}

void JobStore::replace(const std::string& path, const std::string& bytes) const {
  const std::string tmp = path + ".new";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error(failure("write", tmp));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = failure("write", tmp);
      ::close(fd);
      throw std::runtime_error(why);
    }
    done += static_cast<std::size_t>(n);
  }
  // On disk before it replaces the old state: a crash leaves one or the other, whole.
  if (::fsync(fd) != 0 || ::close(fd) != 0) throw std::runtime_error(failure("sync", tmp));
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error(failure("rename " + tmp + " to", path));
}

void JobStore::remove(std::uint64_t id) const {
  if (enabled()) ::unlink(path_of(id).c_str());
}

std::vector<JobStore::Saved> JobStore::load(std::vector<std::string>& unreadable) const {
  std::vector<Saved> out;
  if (!enabled()) return out;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0 || name.find('.') != std::string::npos) continue;  // job-N.new: a write cut short
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    try {
      Saved s = decode(bytes.str());
      if (name != std::string(kPrefix) + std::to_string(s.job.id)) throw wire::BadBody("it holds job " + std::to_string(s.job.id));
      out.push_back(std::move(s));
    } catch (const std::exception& e) { unreadable.push_back(entry.path().string() + ": " + e.what()); }
  }
  std::sort(out.begin(), out.end(), [](const Saved& a, const Saved& b) { return a.job.id < b.job.id; });
  return out;
}

}  // namespace gridrt
