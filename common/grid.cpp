#include "common/grid.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <cstdio>
#include <set>
#include <sstream>
#include <stdexcept>

#include "common/link.h"
#include "common/xml.h"

namespace gridrt {

const ClusterDesc* Grid::find(const std::string& name) const {
  for (const auto& c : clusters)
    if (c.name == name) return &c;
  return nullptr;
}

std::uint64_t Grid::total_slots() const {
  std::uint64_t n = 0;
  for (const auto& c : clusters) n += c.slots;
  return n;
}

namespace {

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::string endpoint_attr(const XmlFile& f, const pugi::xml_node& n, const char* name) {
  const std::string v = f.attribute(n, name);
  try {
    parse_endpoint(v);
  } catch (const std::invalid_argument& e) { f.fail(n, std::string("attribute ") + name + ": " + e.what()); }
  return v;
}

bool yes_no(const XmlFile& f, const pugi::xml_node& n, const char* attr, const char* yes, const char* no, bool dflt) {
  const pugi::xml_attribute a = n.attribute(attr);
  if (!a) return dflt;
  const std::string v = a.value();
  if (v == yes) return true;
  if (v == no) return false;
  f.fail(n, std::string("attribute ") + attr + "='" + v + "' must be '" + yes + "' or '" + no + "'");
}

NetworkPolicy parse_network(const XmlFile& f, const pugi::xml_node& n) {
  NetworkPolicy p;
  p.frontend_reachable = yes_no(f, n, "frontend", "reachable", "unreachable", true);
  p.nodes_public = yes_no(f, n, "nodes", "public", "private", true);
  p.inbound = yes_no(f, n, "inbound", "yes", "no", true);
  p.outbound = yes_no(f, n, "outbound", "yes", "no", true);
  if (const pugi::xml_attribute ports = n.attribute("ports")) {
    const std::string v = ports.value();
    unsigned lo = 0, hi = 0;
    char dash = 0, extra = 0;
    if (std::sscanf(v.c_str(), "%u%c%u%c", &lo, &dash, &hi, &extra) != 3 || dash != '-' || lo == 0 || lo > hi || hi > 65535)
      f.fail(n, "attribute ports='" + v + "' must be a range LOW-HIGH of ports from 1 to 65535");
    p.port_min = static_cast<std::uint16_t>(lo);
    p.port_max = static_cast<std::uint16_t>(hi);
  }
  return p;
}

// "DELAY[,RATE]" from an element's delay and rate attributes (delay alone, or 0ms and a rate).
std::string line_spec(const pugi::xml_node& n) {
  const std::string delay = n.attribute("delay") ? n.attribute("delay").value() : "0ms";
  return n.attribute("rate") ? delay + "," + n.attribute("rate").value() : delay;
}

// <wan delay= rate= access="all"> <between sites="A B" delay= rate=/> <access site="A" rate=/> </wan>:
// the same settings as the --emulate-wan options (common/wan.h), checked against the sites.
WanPlan parse_wan(const XmlFile& f, const pugi::xml_node& n, const std::set<std::string>& sites) {
  WanPlan plan;
  auto apply = [&](const pugi::xml_node& at, const char* option, const std::string& value) {
    try {
      apply_wan_option(plan, option, value);
    } catch (const std::invalid_argument& e) { f.fail(at, e.what()); }
  };
  auto known = [&](const pugi::xml_node& at, const std::string& site) {
    if (!sites.count(site)) f.fail(at, "site '" + site + "' is not the site of any cluster declared");
  };
  apply(n, "--emulate-wan", line_spec(n));
  for (pugi::xml_node b : n.children("between")) {
    const std::vector<std::string> two = split_words(f.attribute(b, "sites"));
    if (two.size() != 2) f.fail(b, "attribute sites must name two sites, e.g. sites=\"A B\"");
    for (const auto& s : two) known(b, s);
    apply(b, "--emulate-wan-pair", two[0] + ":" + two[1] + "=" + line_spec(b));
  }
  for (pugi::xml_node a : n.children("access")) {
    const std::string site = f.attribute(a, "site");
    known(a, site);
    apply(a, "--emulate-wan-access", a.attribute("rate") ? site + "=" + a.attribute("rate").value() : site);
  }
  if (n.attribute("access")) {
    if (std::string(n.attribute("access").value()) != "all") f.fail(n, "attribute access must be 'all' (or absent)");
    apply(n, "--emulate-wan-access", "all");
  }
  for (pugi::xml_node other : n.children())
    if (other.type() == pugi::node_element && std::string(other.name()) != "between" && std::string(other.name()) != "access")
      f.fail(other, "unexpected element <" + std::string(other.name()) + "> in <wan> (expected <between> or <access>)");
  return plan;
}

Grid parse(const XmlFile& f) {
  const pugi::xml_node root = f.doc().child("grid");
  if (!root) {
    const pugi::xml_node any = f.doc().document_element();
    if (!any) throw InputError(f.path() + ":1:1: empty document; expected <grid>");
    f.fail(any, "the root element must be <grid>");
  }
  Grid g;
  g.source = f.path();
  std::set<std::string> names;
  for (pugi::xml_node c : root.children("cluster")) {
    ClusterDesc d;
    d.name = f.attribute(c, "name");
    if (!names.insert(d.name).second) f.fail(c, "cluster '" + d.name + "' is declared twice");
    d.site = c.attribute("site") ? f.attribute(c, "site") : d.name;
    d.slots = parse_count(f, c, f.attribute(c, "slots"));
    const pugi::xml_node relay = f.child(c, "relay");
    d.link = endpoint_attr(f, relay, "link");
    d.local = endpoint_attr(f, relay, "local");
    if (pugi::xml_node net = c.child("network")) d.network = parse_network(f, net);
    for (auto [attr, dir] : {std::pair<const char*, std::string*>{"stageDir", &d.stage_dir}, {"nodeDir", &d.node_dir}}) {
      if (!c.attribute(attr)) continue;
      *dir = f.attribute(c, attr);
      if (dir->front() != '/') f.fail(c, std::string(attr) + " '" + *dir + "' must be an absolute path");
      *dir = std::filesystem::path(*dir).lexically_normal().string();
      if (dir->size() > 1 && dir->back() == '/') dir->pop_back();
    }
    if (!d.node_dir.empty() && d.stage_dir.empty())
      f.fail(c, "nodeDir needs a stageDir: the job's files reach the relay there before they go on to the nodes");
    for (pugi::xml_node fs : c.children("fileSystem")) {
      ClusterDesc::FileSystem m{f.attribute(fs, "name"), f.attribute(fs, "path")};
      // (the processes are told them as NAME=PATH;...: neither may hold what separates them)
      if (m.name.find_first_of("=;") != std::string::npos)  // (attribute() refuses an empty one)
        f.fail(fs, "fileSystem name '" + m.name + "' must not contain '=' or ';'");
      if (m.path.front() != '/' || m.path.find(';') != std::string::npos)
        f.fail(fs, "fileSystem path '" + m.path + "' must be an absolute path without ';'");
      m.path = std::filesystem::path(m.path).lexically_normal().string();
      if (m.path.size() > 1 && m.path.back() == '/') m.path.pop_back();
      for (const auto& other : d.file_systems)
        if (other.name == m.name) f.fail(fs, "file system '" + m.name + "' is declared twice in cluster '" + d.name + "'");
      d.file_systems.push_back(std::move(m));
    }
    const pugi::xml_node launch = f.child(c, "launch");
    d.launch = split_words(f.text(launch));
    if (std::find(d.launch.begin(), d.launch.end(), "{np}") == d.launch.end())
      f.fail(launch, "the launch command must contain {np} (replaced with the number of processes)");
    g.clusters.push_back(std::move(d));
  }
  if (g.clusters.empty()) f.fail(root, "no <cluster> declared");
  for (pugi::xml_node fetcher : root.children("fetcher")) {
    Fetcher fe;
    fe.scheme = f.attribute(fetcher, "scheme");
    const bool word =
        std::isalpha(static_cast<unsigned char>(fe.scheme[0])) && std::all_of(fe.scheme.begin(), fe.scheme.end(), [](char ch) {
          return std::islower(static_cast<unsigned char>(ch)) || std::isdigit(static_cast<unsigned char>(ch)) || ch == '+' || ch == '-' ||
                 ch == '.';
        });
    if (!word) f.fail(fetcher, "scheme '" + fe.scheme + "' is not a URL scheme (lower-case letters, digits, + - .)");
    if (fe.scheme == "file" || fe.scheme == "http" || fe.scheme == "https")
      f.fail(fetcher, "the " + fe.scheme + " scheme needs no fetcher: gridrt carries or fetches those itself");
    for (const auto& other : g.fetchers)
      if (other.scheme == fe.scheme) f.fail(fetcher, "a second fetcher for scheme '" + fe.scheme + "'");
    fe.command = split_words(f.attribute(fetcher, "command"));
    const auto has = [&](const char* w) {
      return std::any_of(fe.command.begin(), fe.command.end(), [&](const std::string& word) { return word.find(w) != std::string::npos; });
    };
    if (!has("{url}") || !has("{file}")) f.fail(fetcher, "the fetcher's command must contain {url} and {file}");
    g.fetchers.push_back(std::move(fe));
  }
  if (const pugi::xml_attribute grace = root.attribute("linkGrace")) {
    const std::string text = grace.value();
    char* end = nullptr;
    const long seconds = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end || seconds < 0 || seconds > 86400)
      f.fail(root, "attribute linkGrace must be a number of seconds from 0 to 86400, not '" + text + "'");
    g.link_grace_seconds = static_cast<int>(seconds);
  }
  if (const pugi::xml_node wan = root.child("wan")) {
    std::set<std::string> sites;
    for (const auto& c : g.clusters) sites.insert(c.site);
    g.wan = parse_wan(f, wan, sites);
  }
  return g;
}

}  // namespace

Grid load_grid(const std::string& path) {
  XmlFile f(path);
  return parse(f);
}

Grid parse_grid(const std::string& source, const std::string& text) {
  XmlFile f(source, &text);
  return parse(f);
}

std::string default_grid_xml(int clusters, int slots, bool shared_files) {
  std::ostringstream os;
  os << "<grid name=\"embedded\">\n";
  for (int i = 0; i < clusters; ++i) {
    os << "  <cluster name=\"c" << i << "\" site=\"site" << i << "\" slots=\"" << slots << "\">\n"
       << "    <relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>\n"
       << "    <network nodes=\"private\" inbound=\"no\"/>\n"
       << "    <launch>mpiexec -launcher fork -n {np}</launch>\n";
    if (shared_files) os << "    <fileSystem name=\"this-machine\" path=\"/\"/>\n";  // (every cluster here sees the machine's files)
    os << "  </cluster>\n";
  }
  os << "</grid>\n";
  return os.str();
}

ClusterOffer offer_of(const ClusterDesc& c, const std::string& link_host, std::uint16_t link_port, bool reachable) {
  const NetworkPolicy& n = c.network;
  ClusterOffer o{c.name, c.site, c.slots, link_host, link_port, reachable, n.outbound, n.nodes_public && n.inbound, ""};
  if (o.accepts && n.port_min) o.ports = std::to_string(n.port_min) + "-" + std::to_string(n.port_max);
  return o;
}

Topology map_job(const JobSpec& spec, const std::vector<ClusterOffer>& clusters) {
  std::uint64_t slots = 0;  // 64 bits: neither sum can wrap, so "fits" below is exact
  for (const auto& c : clusters) slots += c.slots;
  const std::uint64_t need = spec.total_processes();
  if (clusters.empty()) throw InputError("no cluster is available to run the job");
  if (need > slots) {
    std::ostringstream os;
    os << "the job needs " << need << " processes but the grid has " << slots << " slots (";
    for (std::size_t i = 0; i < clusters.size(); ++i) os << (i ? ", " : "") << clusters[i].name << ": " << clusters[i].slots;
    os << ")";
    throw InputError(os.str());
  }
  // placed[c][g]: processes of group g on cluster c.
  std::vector<std::uint32_t> free_slots;
  for (const auto& c : clusters) free_slots.push_back(c.slots);
  std::vector<std::vector<std::uint32_t>> placed(clusters.size(), std::vector<std::uint32_t>(spec.groups.size(), 0));
  auto freest = [&] { return static_cast<std::size_t>(std::max_element(free_slots.begin(), free_slots.end()) - free_slots.begin()); };
  for (std::size_t g = 0; g < spec.groups.size(); ++g) {
    std::uint32_t left = spec.groups[g].count;
    while (left > 0) {  // terminates: the total fits, so the freest cluster has room
      const std::size_t c = freest();
      if (free_slots[c] == 0) throw std::logic_error("map_job: no free slot left for a job that fits");
      const std::uint32_t take = std::min(left, free_slots[c]);
      placed[c][g] += take;
      free_slots[c] -= take;
      left -= take;
    }
  }
  Topology t;
  for (const auto& g : spec.groups) t.groups.push_back(g.name);
  for (std::size_t c = 0; c < clusters.size(); ++c) {
    std::uint32_t count = 0;
    for (auto n : placed[c]) count += n;
    if (count == 0) continue;
    auto site = std::find(t.sites.begin(), t.sites.end(), clusters[c].site);
    if (site == t.sites.end()) site = t.sites.insert(t.sites.end(), clusters[c].site);
    t.clusters.push_back({clusters[c].name, static_cast<std::uint32_t>(site - t.sites.begin()), t.size(), count, clusters[c].link_host,
                          clusters[c].link_port, clusters[c].reachable, clusters[c].outbound, clusters[c].accepts, clusters[c].ports});
    for (std::size_t g = 0; g < spec.groups.size(); ++g)
      t.rank_group.insert(t.rank_group.end(), placed[c][g], static_cast<std::uint32_t>(g));
  }
  return t;
}

std::string describe_mapping(const Topology& t) {
  std::ostringstream os;
  for (std::uint32_t g = 0; g < t.groups.size(); ++g) {
    os << "group " << t.groups[g] << " (color " << g << ")\n";
    for (const auto& c : t.clusters) {
      std::vector<std::uint32_t> ranks;
      for (std::uint32_t r = c.first_rank; r < c.first_rank + c.count; ++r)
        if (t.rank_group[r] == g) ranks.push_back(r);
      if (ranks.empty()) continue;
      os << "  -> cluster " << c.name << " (site " << t.sites[c.site] << "): rank" << (ranks.size() > 1 ? "s " : " ");
      // Ranks of a group on a cluster are contiguous by construction.
      os << ranks.front();
      if (ranks.size() > 1) os << "-" << ranks.back();
      os << " (" << ranks.size() << (ranks.size() == 1 ? " process)\n" : " processes)\n");
    }
  }
  return os.str();
}

}  // namespace gridrt
