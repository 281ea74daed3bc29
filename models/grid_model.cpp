#include "models/grid_model.h"

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "models/least_squares.h"

namespace gridrt::models {

namespace pt = boost::property_tree;

Correction fit_correction(const std::vector<std::pair<double, double>>& predicted_measured) {
  std::vector<Point> pts;
  for (const auto& [x, y] : predicted_measured)
    if (x > 0 && y > 0) pts.push_back({x, y, 1 / (y * y)});
  Correction c;
  if (pts.size() == 1) c.scale = pts[0].y / pts[0].x;  // (a barrier: one size) its ratio
  if (pts.size() < 2) return c;
  // A line must give every sample a time (it may cross zero below them: see apply()).
  double least = pts.front().x, largest = pts.front().x;
  for (const Point& p : pts) least = std::min(least, p.x), largest = std::max(largest, p.x);
  const Line line = fit_line(pts);
  if (line.ok && line.slope > 0.2 && line.slope < 5 && line.at(least) > 0) return {line.slope, line.intercept, least, largest};
  const Line ratio = fit_through_origin(pts);
  if (ratio.ok && ratio.slope > 0) c.scale = ratio.slope;
  return c;
}

GridModel GridModel::with_typical() const {
  GridModel m = *this;
  if (!inside.empty()) m.inside.emplace("*", inside.begin()->second);
  if (!within_site.empty()) m.within_site.emplace("*", within_site.begin()->second);
  if (!between_sites.empty()) m.between_sites.emplace(std::make_pair("*", "*"), between_sites.begin()->second);
  if (!many_to_one.empty()) m.many_to_one.emplace("*", many_to_one.begin()->second);
  return m;
}

namespace {
// `key`'s entry of `table`, else its typical one (`typical`); null when neither is there.
template <typename Key, typename Value>
const Value* with_typical_of(const std::map<Key, Value>& table, const Key& key, const Key& typical) {
  auto it = table.find(key);
  if (it == table.end()) it = table.find(typical);
  return it == table.end() ? nullptr : &it->second;
}
// The same, else an error saying `lacking`.
template <typename Key>
const PLogP& entry(const std::map<Key, PLogP>& table, const Key& key, const Key& typical, const std::string& lacking) {
  const PLogP* p = with_typical_of(table, key, typical);
  if (!p) throw ModelError("the model has no measurement " + lacking);
  return *p;
}
}  // namespace

const ManyToOneModel* GridModel::gathers_of(const std::string& cluster) const {
  return with_typical_of<std::string, ManyToOneModel>(many_to_one, cluster, "*");
}

const PLogP& GridModel::link(const std::string& a, const std::string& sa, const std::string& b, const std::string& sb) const {
  if (a == b) return entry<std::string>(inside, a, "*", "inside cluster '" + a + "'");
  if (sa == sb) return entry<std::string>(within_site, sa, "*", "between clusters of site '" + sa + "'");
  return entry<std::pair<std::string, std::string>>(between_sites, {sa, sb}, {"*", "*"}, "from site '" + sa + "' to site '" + sb + "'");
}

namespace {

constexpr const char* kFormat = "gridrt-model/1";

double number(const pt::ptree& t, const std::string& what) {
  const std::string v = t.get_value<std::string>();
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) { used = 0; }
  if (used == 0 || used != v.size() || !std::isfinite(x) || x < 0)
    throw ModelError(what + " must be a non-negative number, not '" + v + "'");
  return x;
}

const pt::ptree& child(const pt::ptree& t, const std::string& key, const std::string& where) {
  const auto c = t.get_child_optional(key);
  if (!c) throw ModelError(where + ": '" + key + "' is missing");
  return *c;
}

// [[bytes, us], ...] with sizes increasing: a quantity by size, in seconds.
BySize by_size(const pt::ptree& t, const std::string& where) {
  BySize out;
  for (const auto& [key, point] : t) {
    std::vector<double> xy;
    for (const auto& [k, v] : point) xy.push_back(number(v, where));
    if (!key.empty() || xy.size() != 2) throw ModelError(where + " must be a list of [bytes, microseconds] pairs");
    if (!out.points.empty() && xy[0] <= out.points.back().first) throw ModelError(where + ": sizes must increase");
    out.points.emplace_back(xy[0], xy[1] * 1e-6);
  }
  if (out.points.empty()) throw ModelError(where + " is empty");
  return out;
}

PLogP plogp(const pt::ptree& t, const std::string& where) {
  PLogP p;
  p.L = number(child(t, "L_us", where), where + ".L_us") * 1e-6;
  p.g = by_size(child(t, "g_us", where), where + ".g_us");
  if (const auto os = t.get_child_optional("os_us")) p.os = by_size(*os, where + ".os_us");
  if (const auto orecv = t.get_child_optional("or_us")) p.orecv = by_size(*orecv, where + ".or_us");
  if (const auto wake = t.get_child_optional("wake_us")) p.wake = number(*wake, where + ".wake_us") * 1e-6;
  return p;
}

// A list of numbers (`where` names it in errors).
std::vector<double> numbers(const pt::ptree& t, const std::string& where) {
  std::vector<double> out;
  for (const auto& [key, v] : t) {
    if (!key.empty()) throw ModelError(where + " must be a list of numbers");
    out.push_back(number(v, where));
  }
  return out;
}

// A process count or a size in bytes: a whole number.
std::uint64_t whole(double x, const std::string& where) {
  if (x != std::floor(x) || x > 1e15) throw ModelError(where + " must be a whole number, not " + std::to_string(x));
  return static_cast<std::uint64_t>(x);
}

// [[n, bytes], ...]: a threshold by process count.
std::map<int, std::uint64_t> by_count(const pt::ptree& t, const std::string& where) {
  std::map<int, std::uint64_t> out;
  for (const auto& [key, pair] : t) {
    const std::vector<double> v = numbers(pair, where);
    if (!key.empty() || v.size() != 2 || v[0] < 2) throw ModelError(where + " must be a list of [processes (2 or more), bytes] pairs");
    out[static_cast<int>(whole(v[0], where))] = whole(v[1], where);
  }
  return out;
}

// A cluster's many-to-one model (models/many_to_one.h), times in microseconds.
ManyToOneModel many_to_one(const pt::ptree& t, const std::string& where) {
  ManyToOneModel m;
  m.C = number(child(t, "C_us", where), where + ".C_us") * 1e-6;
  m.t = number(child(t, "t_us_per_byte", where), where + ".t_us_per_byte") * 1e-6;
  m.inv_beta0 = number(child(t, "inv_beta0_us_per_byte", where), where + ".inv_beta0_us_per_byte") * 1e-6;
  if (const auto k = t.get_child_optional("kappa1")) m.kappa1 = number(*k, where + ".kappa1");
  if (const auto k = t.get_child_optional("kappa2")) m.kappa2 = number(*k, where + ".kappa2");
  if (const auto M2 = t.get_child_optional("M2")) m.M2 = whole(number(*M2, where + ".M2"), where + ".M2");
  if (const auto M1 = t.get_child_optional("M1")) m.M1 = by_count(*M1, where + ".M1");
  if (const auto Mc = t.get_child_optional("Mc")) m.Mc = by_count(*Mc, where + ".Mc");
  if (const auto levels = t.get_child_optional("levels_us"))
    for (const double us : numbers(*levels, where + ".levels_us")) m.levels.push_back(us * 1e-6);
  if (!std::is_sorted(m.levels.begin(), m.levels.end())) throw ModelError(where + ".levels_us must be ascending");
  // [[n, bytes, f_1, ..., f_k], ...]: one frequency per level, each in 0..1, summing to at most 1.
  if (const auto freq = t.get_child_optional("frequencies"))
    for (const auto& [key, row] : *freq) {
      const std::vector<double> v = numbers(row, where + ".frequencies");
      const std::string what = where + ".frequencies";
      if (!key.empty() || v.size() != 2 + m.levels.size())
        throw ModelError(what + " must be a list of [processes, bytes, one frequency per level] rows (" + std::to_string(m.levels.size()) +
                         " levels)");
      double sum = 0;
      for (std::size_t i = 2; i < v.size(); ++i) sum += v[i];
      if (sum > 1 + 1e-6) throw ModelError(what + ": a row's frequencies add up to more than 1");
      m.frequencies[{static_cast<int>(whole(v[0], what)), whole(v[1], what)}] = std::vector<double>(v.begin() + 2, v.end());
    }
  return m;
}

// A declared cluster's nodes and the latencies between them (models/logical_clusters.h),
// in microseconds; its logical clusters follow from them by the partition rule.
LogicalClusters logical_clusters(const pt::ptree& t, const std::string& where) {
  std::vector<std::string> nodes;
  for (const auto& [key, v] : child(t, "nodes", where)) {
    if (!key.empty()) throw ModelError(where + ".nodes must be a list of node names");
    const std::string name = v.get_value<std::string>();
    if (name.empty() || std::find(nodes.begin(), nodes.end(), name) != nodes.end())
      throw ModelError(where + ".nodes: node names must be given, each once ('" + name + "')");
    nodes.push_back(name);
  }
  if (nodes.size() < 2) throw ModelError(where + ".nodes: at least two nodes");
  std::vector<std::vector<double>> latency;
  for (const auto& [key, row] : child(t, "latency_us", where)) {
    std::vector<double> us = numbers(row, where + ".latency_us");
    if (!key.empty() || us.size() != nodes.size())
      throw ModelError(where + ".latency_us must be a " + std::to_string(nodes.size()) + " x " + std::to_string(nodes.size()) +
                       " matrix (a row per node)");
    for (double& x : us) x *= 1e-6;
    latency.push_back(std::move(us));
  }
  if (latency.size() != nodes.size())
    throw ModelError(where + ".latency_us must have a row per node (" + std::to_string(nodes.size()) + ")");
  const double tolerance = t.get_child_optional("tolerance") ? number(t.get_child("tolerance"), where + ".tolerance") : 1.20;
  if (tolerance < 1) throw ModelError(where + ".tolerance must be at least 1");
  const double noise = t.get_child_optional("noise_us") ? number(t.get_child("noise_us"), where + ".noise_us") * 1e-6 : 0;
  LogicalClusters l = LogicalClusters::of(std::move(nodes), std::move(latency), tolerance, noise);
  // The pLogP measured per logical cluster and per pair of them, named by the partition's
  // numbers (drawn from the latencies above: the same in every reader).
  auto group = [&](const pt::ptree& v, const std::string& what) {
    const double g = number(v, what);
    if (g != std::floor(g) || g < 0 || g >= l.groups())
      throw ModelError(what + " must be a logical cluster's number, 0 to " + std::to_string(l.groups() - 1) + " (the latencies make " +
                       std::to_string(l.groups()) + ")");
    return static_cast<int>(g);
  };
  if (const auto inside = t.get_child_optional("plogp_inside"))
    for (const auto& [key, e] : *inside) {
      const std::string what = where + ".plogp_inside";
      if (!key.empty()) throw ModelError(what + " must be a list of {\"group\": g, \"plogp\": ...}");
      l.inside[group(child(e, "group", what), what + ".group")] = plogp(child(e, "plogp", what), what);
    }
  if (const auto between = t.get_child_optional("plogp_between"))
    for (const auto& [key, e] : *between) {
      const std::string what = where + ".plogp_between";
      std::vector<int> g;
      for (const auto& [k, v] : child(e, "groups", what)) g.push_back(group(v, what + ".groups"));
      if (!key.empty() || g.size() != 2 || g[0] >= g[1])
        throw ModelError(what + " must be a list of {\"groups\": [a, b] (a < b), \"plogp\": ...}");
      l.between[{g[0], g[1]}] = plogp(child(e, "plogp", what), what);
    }
  return l;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string points_json(const BySize& b) {
  std::string out = "[";
  for (const auto& [m, s] : b.points) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s[%.0f, %.3f]", out.size() > 1 ? ", " : "", m, s * 1e6);
    out += buf;
  }
  return out + "]";
}

std::string g6(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

std::string by_count_json(const std::map<int, std::uint64_t>& t) {
  std::string out = "[", sep;
  for (const auto& [n, bytes] : t) out += sep + "[" + std::to_string(n) + ", " + std::to_string(bytes) + "]", sep = ", ";
  return out + "]";
}

std::string many_to_one_json(const ManyToOneModel& m) {
  std::string out = "{\"C_us\": " + g6(m.C * 1e6) + ", \"t_us_per_byte\": " + g6(m.t * 1e6) +
                    ", \"inv_beta0_us_per_byte\": " + g6(m.inv_beta0 * 1e6) + ", \"kappa1\": " + g6(m.kappa1) +
                    ", \"kappa2\": " + g6(m.kappa2) + ",\n      \"M1\": " + by_count_json(m.M1) + ", \"Mc\": " + by_count_json(m.Mc) +
                    ", \"M2\": " + std::to_string(m.M2) + ",\n      \"levels_us\": [";
  std::string sep;
  for (const double l : m.levels) out += sep + g6(l * 1e6), sep = ", ";
  out += "],\n      \"frequencies\": [";
  sep = "";
  for (const auto& [key, f] : m.frequencies) {
    out += sep + "[" + std::to_string(key.first) + ", " + std::to_string(key.second);
    for (const double x : f) out += ", " + g6(x);
    out += "]", sep = ", ";
  }
  return out + "]}";
}

std::string plogp_json(const PLogP& p) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f", p.L * 1e6);
  std::string out = "{\"L_us\": " + std::string(buf) + ", \"g_us\": " + points_json(p.g);
  if (!p.os.points.empty()) out += ", \"os_us\": " + points_json(p.os);
  if (!p.orecv.points.empty()) out += ", \"or_us\": " + points_json(p.orecv);
  if (p.wake > 0) {
    std::snprintf(buf, sizeof buf, "%.3f", p.wake * 1e6);
    out += ", \"wake_us\": " + std::string(buf);
  }
  return out + "}";
}

std::string logical_clusters_json(const LogicalClusters& l) {
  std::string out = "{\"nodes\": [", sep;
  for (const auto& n : l.nodes) out += sep + quoted(n), sep = ", ";
  out += "], \"tolerance\": " + g6(l.tolerance);
  if (l.noise > 0) out += ", \"noise_us\": " + g6(l.noise * 1e6);
  out += ",\n      \"latency_us\": [";
  sep = "";
  for (const auto& row : l.latency) {
    out += sep + "[";
    std::string in;
    for (const double x : row) out += in + g6(x * 1e6), in = ", ";
    out += "]", sep = ", ";
  }
  out += "]";
  if (!l.inside.empty()) {
    out += ",\n      \"plogp_inside\": [";
    sep = "";
    for (const auto& [g, p] : l.inside)
      out += sep + "{\"group\": " + std::to_string(g) + ", \"plogp\": " + plogp_json(p) + "}", sep = ",\n        ";
    out += "]";
  }
  if (!l.between.empty()) {
    out += ",\n      \"plogp_between\": [";
    sep = "";
    for (const auto& [ab, p] : l.between)
      out += sep + "{\"groups\": [" + std::to_string(ab.first) + ", " + std::to_string(ab.second) + "], \"plogp\": " + plogp_json(p) + "}",
          sep = ",\n        ";
    out += "]";
  }
  return out + "}";
}

}  // namespace

GridModel read_model_json(const std::string& text, const std::string& source) {
  pt::ptree root;
  std::istringstream in(text);
  try {
    pt::read_json(in, root);
  } catch (const pt::json_parser_error& e) { throw ModelError(source + ":" + std::to_string(e.line()) + ": not JSON: " + e.message()); }
  try {
    if (root.get<std::string>("format", "") != kFormat) throw ModelError("'format' must be \"" + std::string(kFormat) + "\"");
    GridModel m;
    m.grid = root.get<std::string>("grid", "");
    m.measured = root.get<std::string>("measured", "");
    if (const auto n = root.get_child_optional("measurements")) m.measurements = static_cast<int>(number(*n, "measurements"));
    if (const auto s = root.get_child_optional("seconds")) m.seconds = number(*s, "seconds");
    if (const auto inside = root.get_child_optional("inside"))
      for (const auto& [cluster, p] : *inside) m.inside[cluster] = plogp(p, "inside." + cluster);
    if (const auto within = root.get_child_optional("within_site"))
      for (const auto& [site, p] : *within) m.within_site[site] = plogp(p, "within_site." + site);
    // {"from": s, "to": t, "plogp": ...} one direction; {"sites": [s, t], ...} both alike
    // (["*", "*"]: the typical pair, GridModel::with_typical).
    if (const auto between = root.get_child_optional("between_sites"))
      for (const auto& [key, entry] : *between) {
        std::vector<std::string> sites;
        const bool both = static_cast<bool>(entry.get_child_optional("sites"));
        if (both) {
          for (const auto& [k, v] : child(entry, "sites", "between_sites")) sites.push_back(v.get_value<std::string>());
        } else {
          sites = {child(entry, "from", "between_sites").get_value<std::string>(),
                   child(entry, "to", "between_sites").get_value<std::string>()};
        }
        if (sites.size() != 2 || (sites[0] == sites[1] && sites[0] != "*")) throw ModelError("between_sites: an entry must name two sites");
        const PLogP p = plogp(child(entry, "plogp", "between_sites"), "between_sites." + sites[0] + "-" + sites[1]);
        m.between_sites[{sites[0], sites[1]}] = p;
        if (both) m.between_sites[{sites[1], sites[0]}] = p;
      }
    if (const auto access = root.get_child_optional("access"))
      for (const auto& [k, v] : *access) m.access.insert(v.get_value<std::string>());
    if (const auto corrections = root.get_child_optional("corrections"))
      for (const auto& [key, c] : *corrections)
        m.corrections[key] = {number(child(c, "scale", "corrections." + key), "corrections." + key + ".scale"),
                              c.get_child_optional("offset_us") ? c.get<double>("offset_us") * 1e-6 : 0.0,
                              c.get_child_optional("from_us") ? c.get<double>("from_us") * 1e-6 : 0.0,
                              c.get_child_optional("to_us") ? c.get<double>("to_us") * 1e-6 : 0.0};
    if (const auto slices = root.get_child_optional("slice_cost_us"))
      for (const auto& [key, v] : *slices) m.slice_costs[key] = number(v, "slice_cost_us." + key) * 1e-6;
    if (const auto gathers = root.get_child_optional("many_to_one"))
      for (const auto& [cluster, g] : *gathers) m.many_to_one[cluster] = many_to_one(g, "many_to_one." + cluster);
    if (const auto logical = root.get_child_optional("logical_clusters"))
      for (const auto& [cluster, l] : *logical) m.logical[cluster] = logical_clusters(l, "logical_clusters." + cluster);
    if (m.empty()) throw ModelError("no measurement (inside, within_site, between_sites, many_to_one or logical_clusters)");
    return m;
  } catch (const ModelError& e) { throw ModelError(source + ": " + e.what()); } catch (const pt::ptree_error& e) {
    throw ModelError(source + ": " + e.what());
  }
}

std::string read_model_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ModelError(path + ": cannot read the model file");
  std::ostringstream text;
  text << in.rdbuf();
  read_model_json(text.str(), path);
  return text.str();
}

GridModel load_model(const std::string& path) { return read_model_json(read_model_text(path), path); }

std::string model_json(const GridModel& m) {
  std::string out = "{\n  \"format\": \"" + std::string(kFormat) + "\",\n  \"grid\": " + quoted(m.grid) +
                    ",\n  \"measured\": " + quoted(m.measured) + ",\n  \"measurements\": " + std::to_string(m.measurements);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", m.seconds);
  out += ",\n  \"seconds\": " + std::string(buf) + ",\n  \"inside\": {";
  std::string sep = "\n    ";
  for (const auto& [c, p] : m.inside) out += sep + quoted(c) + ": " + plogp_json(p), sep = ",\n    ";
  out += "\n  },\n  \"within_site\": {";
  sep = "\n    ";
  for (const auto& [s, p] : m.within_site) out += sep + quoted(s) + ": " + plogp_json(p), sep = ",\n    ";
  out += "\n  },\n  \"between_sites\": [";
  sep = "\n    ";
  for (const auto& [st, p] : m.between_sites)
    out += sep + "{\"from\": " + quoted(st.first) + ", \"to\": " + quoted(st.second) + ", \"plogp\": " + plogp_json(p) + "}",
        sep = ",\n    ";
  out += "\n  ],\n  \"access\": [";
  sep = "";
  for (const auto& s : m.access) out += sep + quoted(s), sep = ", ";
  out += "],\n  \"corrections\": {";
  sep = "\n    ";
  for (const auto& [key, c] : m.corrections) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "{\"scale\": %.4f, \"offset_us\": %.1f, \"from_us\": %.1f, \"to_us\": %.1f}", c.scale, c.offset * 1e6,
                  c.from * 1e6, c.to * 1e6);
    out += sep + quoted(key) + ": " + buf, sep = ",\n    ";
  }
  out += "\n  }";
  if (!m.slice_costs.empty()) {
    out += ",\n  \"slice_cost_us\": {";
    sep = "";
    for (const auto& [key, t] : m.slice_costs) {
      char buf[32];
      std::snprintf(buf, sizeof buf, ": %.1f", t * 1e6);
      out += sep + quoted(key) + buf, sep = ", ";
    }
    out += "}";
  }
  if (!m.many_to_one.empty()) {
    out += ",\n  \"many_to_one\": {";
    sep = "\n    ";
    for (const auto& [c, g] : m.many_to_one) out += sep + quoted(c) + ": " + many_to_one_json(g), sep = ",\n    ";
    out += "\n  }";
  }
  if (!m.logical.empty()) {
    out += ",\n  \"logical_clusters\": {";
    sep = "\n    ";
    for (const auto& [c, l] : m.logical) out += sep + quoted(c) + ": " + logical_clusters_json(l), sep = ",\n    ";
    out += "\n  }";
  }
  return out + "\n}\n";
}

namespace {
std::string describe_plogp(const PLogP& p) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "L %.1f us, g(0) %.1f us, g(64 KiB) %.1f us (%.1f MB/s)", p.L * 1e6, p.gap(0) * 1e6, p.gap(65536) * 1e6,
                p.gap(65536) > p.gap(0) ? 65536 / (p.gap(65536) - p.gap(0)) / 1e6 : 0.0);
  std::string out = buf;
  if (p.wake > 0) {
    std::snprintf(buf, sizeof buf, ", a waiting receiver %.1f us later", p.wake * 1e6);
    out += buf;
  }
  return out;
}

std::string kib(std::uint64_t bytes) {
  char buf[32];
  if (bytes % 1024 == 0) std::snprintf(buf, sizeof buf, "%llu KiB", static_cast<unsigned long long>(bytes / 1024));
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

}  // namespace

std::string describe_many_to_one(const std::string& cluster, const ManyToOneModel& g) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "  gathers inside cluster %s: C %.1f us, t %.3g ns/B, ", cluster.c_str(), g.C * 1e6, g.t * 1e9);
  std::string out = buf;
  if (g.inv_beta0 > 0) std::snprintf(buf, sizeof buf, "root link %.1f MB/s, ", 1e-6 / g.inv_beta0);
  else std::snprintf(buf, sizeof buf, "root link not resolved by the ping-pong, ");
  out += buf;
  std::snprintf(buf, sizeof buf, "kappa1 %.2f, kappa2 %.2f\n", g.kappa1, g.kappa2);
  out += buf;
  if (g.M1.empty()) return out + "    no escalation measured: gathers are not split\n";
  out += "    escalate from M1 =";
  std::string sep = " ";
  for (const auto& [n, M] : g.M1) out += sep + kib(M) + " (" + std::to_string(n) + " processes)", sep = ", ";
  out += g.M2 > 0 ? "; none from M2 = " + kib(g.M2) : "; up to the largest size measured";
  out += "\n    levels:";
  for (const double l : g.levels) {
    std::snprintf(buf, sizeof buf, " %.0f ms", l * 1e3);
    out += buf;
  }
  return out + "\n    gathers from M1 on are split in paced pieces where that is expected to be faster\n";
}

std::string describe_model(const GridModel& m) {
  std::string out =
      "model of " + (m.grid.empty() ? std::string("a grid") : m.grid) + (m.measured.empty() ? "" : ", measured " + m.measured);
  char buf[96];
  std::snprintf(buf, sizeof buf, " (%d measurements, %.1f s)\n", m.measurements, m.seconds);
  out += buf;
  for (const auto& [c, p] : m.inside) out += "  inside cluster " + c + ": " + describe_plogp(p) + "\n";
  for (const auto& [s, p] : m.within_site) out += "  between clusters of site " + s + ": " + describe_plogp(p) + "\n";
  for (const auto& [st, p] : m.between_sites) out += "  from site " + st.first + " to site " + st.second + ": " + describe_plogp(p) + "\n";
  for (const auto& s : m.access) out += "  site " + s + "'s traffic to other sites shares one access line\n";
  for (const auto& [key, t] : m.slice_costs) {
    std::snprintf(buf, sizeof buf, ": every slice %.1f us beyond its messages\n", t * 1e6);
    out += "  " + key + buf;
  }
  for (const auto& [key, c] : m.corrections) {
    char buf[192];
    std::snprintf(buf, sizeof buf, "  %s: measured = %.3f x predicted %+.1f us (from a sample run", key.c_str(), c.scale, c.offset * 1e6);
    out += buf;
    if (c.offset < 0 && c.from > 0) {
      std::snprintf(buf, sizeof buf, "; below %.1f us predicted, %.3f x predicted", c.from * 1e6, c.scale + c.offset / c.from);
      out += buf;
    }
    if (c.to > 0) {
      std::snprintf(buf, sizeof buf, "; above %.1f us predicted, %.3f x predicted", c.to * 1e6, c.scale + c.offset / c.to);
      out += buf;
    }
    out += ")\n";
  }
  for (const auto& [c, g] : m.many_to_one) out += describe_many_to_one(c, g);
  for (const auto& [c, l] : m.logical) out += describe_logical_clusters(c, l);
  return out;
}

std::string describe_logical_clusters(const std::string& cluster, const LogicalClusters& l) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "  cluster %s: %zu nodes in %d logical cluster%s (latency within %.0f%% of each node's and group's least",
                cluster.c_str(), l.nodes.size(), l.groups(), l.groups() == 1 ? "" : "s", (l.tolerance - 1) * 100);
  std::string out = buf;
  if (l.noise > 0) {
    std::snprintf(buf, sizeof buf, ", + %.1f us of the measurements' noise", l.noise * 1e6);
    out += buf;
  }
  out += "):";
  for (int g = 0; g < l.groups(); ++g) {
    out += " {";
    std::string sep;
    for (std::size_t v = 0; v < l.nodes.size(); ++v)
      if (l.group[v] == g) out += sep + l.nodes[v], sep = " ";
    out += "}";
  }
  out += "\n    latency (us):";
  for (std::size_t a = 0; a < l.nodes.size(); ++a) {
    out += "\n      " + l.nodes[a] + ":";
    for (std::size_t b = 0; b < l.nodes.size(); ++b) {
      if (a == b) std::snprintf(buf, sizeof buf, " %8s", "-");
      else std::snprintf(buf, sizeof buf, " %8.1f", l.latency[a][b] * 1e6);
      out += buf;
    }
  }
  // The pairs measured for them: latency and the gap of 64 KiB.
  auto line = [&](const std::string& what, const PLogP& p) {
    std::snprintf(buf, sizeof buf, "\n    pLogP %s: L %.1f us, g(64 KiB) %.1f us", what.c_str(), p.L * 1e6, p.gap(65536) * 1e6);
    out += buf;
  };
  for (const auto& [g, p] : l.inside) line("inside logical cluster " + std::to_string(g), p);
  for (const auto& [ab, p] : l.between)
    line("between logical clusters " + std::to_string(ab.first) + " and " + std::to_string(ab.second), p);
  return out + "\n";
}

}  // namespace gridrt::models
