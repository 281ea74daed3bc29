#include "common/messages.h"

namespace gridrt {

using wire::Reader;
using wire::Writer;

std::uint64_t JobSpec::total_processes() const {
  std::uint64_t n = 0;
  for (const auto& g : groups) n += g.count;
  return n;
}

namespace {
void write_spec(Writer& w, const JobSpec& s) {
  w.str(s.app_id).str(s.task_id).u32(static_cast<std::uint32_t>(s.groups.size()));
  for (const auto& g : s.groups) w.str(g.name).u32(g.count);
  w.str(s.executable).strs(s.args).u32(static_cast<std::uint32_t>(s.env.size()));
  for (const auto& [k, v] : s.env) w.str(k).str(v);
  w.str(s.workdir).u32(s.survive_cluster_loss ? 1 : 0).u32(s.workdir_is_submitters ? 1 : 0);
  w.u32(static_cast<std::uint32_t>(s.files.size()));
  for (const auto& f : s.files)
    w.u32(static_cast<std::uint32_t>(f.role)).str(f.name).str(f.source).str(f.sha256).u64(f.size).u32(f.executable ? 1 : 0);
}
JobSpec read_spec(Reader& r) {
  JobSpec s;
  s.app_id = r.str();
  s.task_id = r.str();
  const std::uint32_t ngroups = r.u32();
  if (ngroups == 0) throw wire::BadBody("job: no process group");
  for (std::uint32_t i = 0; i < ngroups; ++i) {
    GroupSpec g;
    g.name = r.str();
    g.count = r.u32();
    if (g.count == 0) throw wire::BadBody("job: group '" + g.name + "' has no processes");
    s.groups.push_back(std::move(g));
  }
  if (s.total_processes() > kMaxJobProcesses)
    throw wire::BadBody("job: " + std::to_string(s.total_processes()) + " processes, more than MPI can number (" +
                        std::to_string(kMaxJobProcesses) + ")");
  s.executable = r.str();
  s.args = r.strs();
  const std::uint32_t nenv = r.u32();
  for (std::uint32_t i = 0; i < nenv; ++i) {
    auto k = r.str();
    s.env.emplace_back(std::move(k), r.str());
  }
  s.workdir = r.str();
  s.survive_cluster_loss = r.u32() != 0;
  s.workdir_is_submitters = r.u32() != 0;
  const std::uint32_t nfiles = r.u32();
  for (std::uint32_t i = 0; i < nfiles; ++i) {
    StagedFile f;
    const std::uint32_t role = r.u32();
    if (role > static_cast<std::uint32_t>(StagedFile::Role::kOutput)) throw wire::BadBody("job: a file of unknown role");
    f.role = static_cast<StagedFile::Role>(role);
    f.name = r.str();
    // The relay writes and reads these names inside a job directory: none may leave it.
    if (!safe_relative_name(f.name)) throw wire::BadBody("job: file name '" + f.name + "' is not a relative path inside the job");
    f.source = r.str();
    f.sha256 = r.str();
    f.size = r.u64();
    f.executable = r.u32() != 0;
    s.files.push_back(std::move(f));
  }
  return s;
}
}  // namespace

std::uint64_t JobSpec::carried_bytes() const {
  std::uint64_t n = 0;
  for (const auto& f : files)
    if (f.carried()) n += f.size;
  return n;
}

bool safe_relative_name(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.front() == '/' || name.back() == '/') return false;
  if (name.find('\0') != std::string_view::npos) return false;
  for (std::size_t start = 0; start <= name.size();) {
    const std::size_t end = std::min(name.find('/', start), name.size());
    const std::string_view part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

std::string FilePiece::encode() const { return Writer().str(file).u64(size).u64(offset).str(data).take(); }
FilePiece FilePiece::decode(std::string_view body) {
  Reader r(body);
  FilePiece m;
  m.file = r.str();
  m.size = r.u64();
  m.offset = r.u64();
  m.data = r.str();
  r.end();
  return m;
}

std::string JobSpec::encode() const {
  Writer w;
  write_spec(w, *this);
  return w.take();
}
JobSpec JobSpec::decode(std::string_view body) {
  Reader r(body);
  JobSpec s = read_spec(r);
  r.end();
  return s;
}

std::string RelayRegistration::encode() const {
  Writer w;
  w.str(cluster).str(link_host).u32(link_port).u32(static_cast<std::uint32_t>(jobs.size()));
  for (auto j : jobs) w.u64(j);
  return w.take();
}
RelayRegistration RelayRegistration::decode(std::string_view body) {
  Reader r(body);
  RelayRegistration m;
  m.cluster = r.str();
  m.link_host = r.str();
  m.link_port = static_cast<std::uint16_t>(r.u32());
  const std::uint32_t n = r.u32();  // each read checks the body holds it
  for (std::uint32_t i = 0; i < n; ++i) m.jobs.push_back(r.u64());
  r.end();
  return m;
}

std::uint32_t Topology::cluster_of(std::uint32_t rank) const {
  for (std::uint32_t c = 0; c < clusters.size(); ++c)
    if (rank >= clusters[c].first_rank && rank < clusters[c].first_rank + clusters[c].count) return c;
  return static_cast<std::uint32_t>(clusters.size());
}

std::optional<std::uint32_t> Topology::index_of(const std::string& cluster) const {
  for (std::uint32_t c = 0; c < clusters.size(); ++c)
    if (clusters[c].name == cluster) return c;
  return std::nullopt;
}

void Topology::encode(Writer& w) const {
  w.strs(groups).strs(sites).u32(static_cast<std::uint32_t>(clusters.size()));
  for (const auto& c : clusters)
    w.str(c.name)
        .u32(c.site)
        .u32(c.first_rank)
        .u32(c.count)
        .str(c.link_host)
        .u32(c.link_port)
        .u8(c.reachable)
        .u8(c.outbound)
        .u8(c.accepts)
        .str(c.ports);
  w.u32s(rank_group).strs(nodes).u32s(rank_node).strs(rank_endpoint).str(model);
}

Topology Topology::decode(Reader& r) {
  Topology t;
  t.groups = r.strs();
  t.sites = r.strs();
  const std::uint32_t n = r.u32();
  for (std::uint32_t i = 0; i < n; ++i) {
    ClusterPart c;
    c.name = r.str();
    c.site = r.u32();
    c.first_rank = r.u32();
    c.count = r.u32();
    c.link_host = r.str();
    c.link_port = static_cast<std::uint16_t>(r.u32());
    c.reachable = r.u8() != 0;
    c.outbound = r.u8() != 0;
    c.accepts = r.u8() != 0;
    c.ports = r.str();
    t.clusters.push_back(std::move(c));
  }
  t.rank_group = r.u32s();
  t.nodes = r.strs();
  t.rank_node = r.u32s();
  t.rank_endpoint = r.strs();
  t.model = r.str();
  if (!t.rank_endpoint.empty() && t.rank_endpoint.size() != t.rank_group.size())
    throw wire::BadBody("topology: endpoints do not match the ranks");
  // Consistency: a topology that indexes out of its own tables is as bad as a truncated one.
  for (auto g : t.rank_group)
    if (g >= t.groups.size()) throw wire::BadBody("topology: group index out of range");
  for (auto nd : t.rank_node)
    if (nd >= t.nodes.size()) throw wire::BadBody("topology: node index out of range");
  std::uint32_t next = 0;
  for (const auto& c : t.clusters) {
    if (c.first_rank != next || c.site >= t.sites.size()) throw wire::BadBody("topology: clusters not contiguous");
    next += c.count;
  }
  if (next != t.rank_group.size()) throw wire::BadBody("topology: cluster ranks do not cover the job");
  return t;
}

std::string PartStart::encode() const {
  Writer w;
  w.u64(job).str(secret).str(user).u32(cluster);
  topology.encode(w);
  write_spec(w, spec);
  return w.take();
}
PartStart PartStart::decode(std::string_view body) {
  Reader r(body);
  PartStart m;
  m.job = r.u64();
  m.secret = r.str();
  m.user = r.str();
  m.cluster = r.u32();
  m.topology = Topology::decode(r);
  m.spec = read_spec(r);
  r.end();
  if (m.cluster >= m.topology.clusters.size()) throw wire::BadBody("StartPart: cluster index out of range");
  return m;
}

std::string ProcHello::encode() const { return Writer().str(secret).u32(local_rank).str(hostname).str(listen).take(); }
ProcHello ProcHello::decode(std::string_view body) {
  Reader r(body);
  ProcHello m;
  m.secret = r.str();
  m.local_rank = r.u32();
  m.hostname = r.str();
  m.listen = r.str();
  r.end();
  return m;
}

std::string PartReady::encode() const { return Writer().strs(hostnames).strs(endpoints).take(); }
PartReady PartReady::decode(std::string_view body) {
  Reader r(body);
  PartReady m;
  m.hostnames = r.strs();
  m.endpoints = r.strs();
  r.end();
  return m;
}

std::string PartDone::encode() const { return Writer().u32s(statuses).str(message).take(); }
PartDone PartDone::decode(std::string_view body) {
  Reader r(body);
  PartDone m;
  m.statuses = r.u32s();
  m.message = r.str();
  r.end();
  return m;
}

std::string JobEnd::encode() const { return Writer().i32(status).str(summary).take(); }
JobEnd JobEnd::decode(std::string_view body) {
  Reader r(body);
  JobEnd m;
  m.status = r.i32();
  m.summary = r.str();
  r.end();
  return m;
}

std::string LinkHello::encode() const { return Writer().str(cluster).u64(instance).u64(peer_instance).u64(received).take(); }
LinkHello LinkHello::decode(std::string_view body) {
  Reader r(body);
  LinkHello m;
  m.cluster = r.str();
  m.instance = r.u64();
  m.peer_instance = r.u64();
  m.received = r.u64();
  r.end();
  if (m.cluster.empty()) throw wire::BadBody("LinkHello names no cluster");
  if (m.instance == 0) throw wire::BadBody("LinkHello's instance is 0");
  if (m.peer_instance == 0 && m.received != 0) throw wire::BadBody("LinkHello counts frames received from no relay");
  return m;
}

std::string GridStatus::encode() const {
  Writer w;
  w.u32(static_cast<std::uint32_t>(clusters.size()));
  for (const auto& c : clusters) w.str(c.name).str(c.site).u32(c.slots).u32(c.busy).u8(c.relay_up ? 1 : 0).str(c.relay);
  w.u32(static_cast<std::uint32_t>(jobs.size()));
  for (const auto& j : jobs) w.u64(j.id).str(j.owner).str(j.application).u32(j.processes).strs(j.clusters).u64(j.age_s);
  return w.u32(waiting).u64(up_s).u8(takes_jobs_back ? 1 : 0).take();
}

GridStatus GridStatus::decode(std::string_view body) {
  Reader r(body);
  GridStatus m;
  for (std::uint32_t i = 0, n = r.u32(); i < n; ++i) {  // every entry takes bytes: a lying count runs out
    Cluster c;
    c.name = r.str();
    c.site = r.str();
    c.slots = r.u32();
    c.busy = r.u32();
    c.relay_up = r.u8() != 0;
    c.relay = r.str();
    m.clusters.push_back(std::move(c));
  }
  for (std::uint32_t i = 0, n = r.u32(); i < n; ++i) {
    Job j;
    j.id = r.u64();
    j.owner = r.str();
    j.application = r.str();
    j.processes = r.u32();
    j.clusters = r.strs();
    j.age_s = r.u64();
    m.jobs.push_back(std::move(j));
  }
  m.waiting = r.u32();
  m.up_s = r.u64();
  m.takes_jobs_back = r.u8() != 0;
  r.end();
  return m;
}

}  // namespace gridrt
