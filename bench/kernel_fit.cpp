// Fits the runtime's contention signature and many-to-one model to the kernel tier's
// measurements (bench/kernel_tier.py, which runs it; docs/benchmarks.md, "Contention and
// escalations on real TCP") and says how well they predict what was not used to fit them.
//
//   kernel_fit [--signature-count N] [--kappa1 N,M] [--kappa2 N,M] [--model FILE --cluster NAME]
//              < kernel_tier's JSON lines
//
// The all-to-all contention signature (models/contention_signature.h) is fitted on the
// all-to-alls of each process count in turn, at the saturated sizes (the bandwidth term at
// least 9 times the start-up: below, MPICH's small-message algorithm takes log2 n rounds,
// not the direct exchange the model describes), with alpha and beta from the ping-pong's half
// round trips, and predicts every other count at the saturated sizes; the table of every
// case is printed for one count (--signature-count, default: the second largest). The many-to-one model (models/many_to_one.h): C, t and
// 1/beta0 from the ping-pong's small sizes, kappa1 from the gathers at --kappa1 (default: the largest count, the smallest size), kappa2
// from those at --kappa2 (default: the largest count and size), then the escalations of the whole sweep. Prints a report, then one JSON
// line with the fitted figures and the split gather's piece count for every (n, M) swept. --model writes a model file (docs/models.md) for
// a grid whose cluster NAME is these nodes: the pair inside it from the ping-pong, its gathers from the sweep, so that gridrt's own gather
// runs there as the model says.
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/cli.h"
#include "models/contention_signature.h"
#include "models/grid_model.h"
#include "models/many_to_one.h"

namespace {

namespace pt = boost::property_tree;
using namespace gridrt::models;

const char kUsage[] =
    "usage: kernel_fit [--signature-count N] [--kappa1 N,M] [--kappa2 N,M] [--model FILE --cluster NAME] < measurements\n"
    "Fits the all-to-all contention signature and the many-to-one model to kernel_tier's JSON\n"
    "lines (bench/kernel_tier.py) and reports their prediction errors on the cases not fitted.\n"
    "--model FILE writes them as a gridrt model file for a grid whose cluster NAME is these nodes.\n";

struct Measurements {
  std::vector<PointToPointSample> pingpong;                               // medians per size
  std::map<std::pair<int, std::uint64_t>, std::vector<double>> alltoall;  // seconds per (n, m)
  std::vector<GatherSample> gathers;                                      // one gather, not paced
};

std::vector<double> series(const pt::ptree& line, const char* key) {
  std::vector<double> v;
  for (const auto& item : line.get_child(key)) v.push_back(item.second.get_value<double>() * 1e-6);
  return v;
}

Measurements read(std::istream& in) {
  Measurements m;
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    if (text.empty() || text[0] != '{') continue;
    pt::ptree line;
    try {
      std::istringstream s(text);
      pt::read_json(s, line);
      const std::string op = line.get<std::string>("op");
      if (line.get_child_optional("algo")) continue;  // gridbench's line (gridrt's own gather on the nodes), not kernel_tier's
      if (op == "pingpong") {
        m.pingpong.push_back({line.get<std::uint64_t>("m"), median_of(series(line, "rtt_us")) / 2, median_of(series(line, "send_us"))});
      } else if (op == "alltoall") {
        m.alltoall[{line.get<int>("n"), line.get<std::uint64_t>("m")}].push_back(line.get<double>("us") * 1e-6);
      } else if (op == "gather" && line.get<int>("pieces") == 1 && line.get<int>("paced", 0) == 0) {
        m.gathers.push_back({line.get<int>("n"), line.get<std::uint64_t>("m"), line.get<double>("us") * 1e-6});
      }
    } catch (const std::exception& e) { throw std::runtime_error("line " + std::to_string(number) + ": " + e.what()); }
  }
  return m;
}

std::pair<int, std::uint64_t> pair_option(const std::string& text, const char* name) {
  const auto comma = text.find(',');
  if (comma == std::string::npos) throw std::runtime_error(std::string(name) + " takes N,M: " + text);
  return {std::stoi(text.substr(0, comma)), std::stoull(text.substr(comma + 1))};
}

double relative_error(double predicted, double measured) { return std::fabs(predicted - measured) / measured; }

std::string percent_summary(std::vector<double> errors) {
  if (errors.empty()) return "none";
  char buf[96];
  std::snprintf(buf, sizeof buf, "median %.1f%%, max %.1f%% (%zu cases)", 100 * median_of(errors),
                100 * *std::max_element(errors.begin(), errors.end()), errors.size());
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::string count_text, k1_text, k2_text, model_path, cluster;
  gridrt::parse_daemon_options(argc, argv, "kernel_fit", kUsage,
                               {{"--signature-count", &count_text},
                                {"--kappa1", &k1_text},
                                {"--kappa2", &k2_text},
                                {"--model", &model_path},
                                {"--cluster", &cluster}},
                               {});
  if (model_path.empty() != cluster.empty()) {
    std::fprintf(stderr, "kernel_fit: --model and --cluster go together\n%s", kUsage);
    return 2;
  }
  int signature_count = 0;
  std::pair<int, std::uint64_t> k1{0, 0}, k2{0, 0};
  try {
    if (!count_text.empty()) signature_count = std::stoi(count_text);
    if (!k1_text.empty()) k1 = pair_option(k1_text, "--kappa1");
    if (!k2_text.empty()) k2 = pair_option(k2_text, "--kappa2");
    const Measurements m = read(std::cin);
    if (m.pingpong.size() < 2) throw std::runtime_error("no ping-pong of two sizes or more among the measurements");
    pt::ptree out;

    // Hockney alpha, beta: the smallest size's half round trip, and the slope above it.
    std::vector<Point> hockney;
    for (const auto& p : m.pingpong) hockney.push_back({static_cast<double>(p.M), p.half_round_trip, 1});
    const Line ab = fit_through_least_x(hockney);
    std::printf("point to point: alpha %.1f us, beta %.2f ns/B (%.1f Mbit/s)\n", ab.intercept * 1e6, ab.slope * 1e9, 8e-6 / ab.slope);

    if (!m.alltoall.empty()) {
      std::set<int> counts;
      for (const auto& [key, v] : m.alltoall) counts.insert(key.first);
      if (signature_count == 0) signature_count = counts.size() > 1 ? *std::prev(counts.end(), 2) : *counts.begin();
      // "Saturated": sizes whose bandwidth term is at least 9 times the start-up (Eq. 1 is
      // then at least 90% bandwidth).
      auto saturated = [&](std::uint64_t size) { return ab.slope * static_cast<double>(size) >= 9 * ab.intercept; };
      auto fitted_at = [&](int count) {
        std::vector<AlltoallSample> fit_on;
        for (const auto& [key, v] : m.alltoall)  // the regime the signature describes
          if (key.first == count && saturated(key.second)) fit_on.push_back({key.second, median_of(v)});
        return fit_contention_signature(count, ab.intercept, ab.slope, fit_on);
      };
      auto describe = [](const ContentionSignature& sig) {
        char buf[128];
        const bool has_M = sig.M != std::numeric_limits<std::uint64_t>::max();
        std::snprintf(buf, sizeof buf, "gamma %.3f, delta %.1f us, M %s", sig.gamma, sig.delta * 1e6,
                      has_M ? std::to_string(sig.M).c_str() : "none");
        return std::string(buf);
      };
      // Every count in turn as the one fitted at: how well it predicts the others.
      std::printf("contention signature fitted at each count n', predicting the other counts (saturated sizes, median of each cell):\n");
      for (const int count : counts) {
        const ContentionSignature sig = fitted_at(count);
        std::vector<double> eq5, eq1;
        for (const auto& [key, v] : m.alltoall) {
          if (key.first == count || !saturated(key.second)) continue;
          const double measured = median_of(v), size = static_cast<double>(key.second);
          eq5.push_back(relative_error(sig.predict(key.first, size), measured));
          eq1.push_back(relative_error((key.first - 1) * (ab.intercept + ab.slope * size), measured));
        }
        std::printf("  n' = %d: %s; eq. 5 %s; contention-free eq. 1 %s\n", count, describe(sig).c_str(), percent_summary(eq5).c_str(),
                    percent_summary(eq1).c_str());
      }
      const ContentionSignature sig = fitted_at(signature_count);
      std::printf("fitted at n' = %d, every case:\n", signature_count);
      std::printf("  %4s %9s %12s %12s %7s %12s %7s %10s\n", "n", "m", "measured_us", "eq5_us", "err", "eq1_us", "err", "per_peer_us");
      for (const auto& [key, v] : m.alltoall) {
        const auto [n, size] = key;
        const double measured = median_of(v), eq5 = sig.predict(n, static_cast<double>(size));
        const double eq1 = (n - 1) * (ab.intercept + ab.slope * static_cast<double>(size));
        std::printf("  %4d %9llu %12.0f %12.0f %6.1f%% %12.0f %6.1f%% %10.0f%s\n", n, static_cast<unsigned long long>(size), measured * 1e6,
                    eq5 * 1e6, 100 * relative_error(eq5, measured), eq1 * 1e6, 100 * relative_error(eq1, measured),
                    measured * 1e6 / (n - 1), n == signature_count ? "  (fitted)" : "");
      }
      out.put("signature.count", signature_count);
      out.put("signature.alpha_us", sig.alpha * 1e6);
      out.put("signature.beta_ns", sig.beta * 1e9);
      out.put("signature.gamma", sig.gamma);
      out.put("signature.delta_us", sig.delta * 1e6);
      out.put("signature.M", sig.M == std::numeric_limits<std::uint64_t>::max() ? 0 : sig.M);
    }

    GridModel grid_model;
    if (!m.gathers.empty()) {
      KappaAt at1{k1.first, k1.second}, at2{k2.first, k2.second};
      const ManyToOneModel model = fit_many_to_one(m.pingpong, m.gathers, &at1, &at2);
      k1 = {at1.n, at1.M};
      k2 = {at2.n, at2.M};
      std::printf("many-to-one: C %.1f us, t %.3f ns/B, 1/beta0 %.2f ns/B, kappa1 %.2f (at %d, %llu B), kappa2 %.2f (at %d, %llu B)\n",
                  model.C * 1e6, model.t * 1e9, model.inv_beta0 * 1e9, model.kappa1, k1.first, static_cast<unsigned long long>(k1.second),
                  model.kappa2, k2.first, static_cast<unsigned long long>(k2.second));
      std::string levels;
      for (const double l : model.levels) levels += " " + std::to_string(static_cast<long>(l * 1e3)) + " ms";
      std::printf("  escalation levels:%s; M2 %s\n", levels.empty() ? " none" : levels.c_str(),
                  model.M2 ? std::to_string(model.M2).c_str() : "not found (none, or still escalating at the largest size)");
      std::map<std::pair<int, std::uint64_t>, std::vector<double>> cells;
      for (const auto& g : m.gathers) cells[{g.n, g.M}].push_back(g.seconds);
      std::printf("  %4s %9s %6s %6s %12s %12s %12s %12s %6s %6s\n", "n", "M", "M1(n)", "Mc(n)", "median_us", "linear_us", "mean_us",
                  "expected_us", "split", "paced");
      for (const auto& [key, v] : cells) {
        const auto [n, M] = key;
        double mean = 0;
        for (const double x : v) mean += x / static_cast<double>(v.size());
        const auto m1 = model.M1.find(n), mc = model.Mc.find(n);
        const int pieces = model.split_pieces(n, M);
        std::printf("  %4d %9llu %6s %6s %12.0f %12.0f %12.0f %12.0f %6d %6d\n", n, static_cast<unsigned long long>(M),
                    m1 == model.M1.end() ? "-" : std::to_string(m1->second).c_str(),
                    mc == model.Mc.end() ? "-" : std::to_string(mc->second).c_str(), median_of(v) * 1e6,
                    model.linear(n, static_cast<double>(M)) * 1e6, mean * 1e6, model.expected(n, M) * 1e6, pieces,
                    model.paced_pieces(n, M));
        pt::ptree cell;
        cell.put("n", n);
        cell.put("M", M);
        cell.put("pieces", pieces);
        cell.put("paced", model.paced_pieces(n, M));
        out.add_child("split.cells.", cell);
      }
      out.put("many_to_one.C_us", model.C * 1e6);
      out.put("many_to_one.t_ns", model.t * 1e9);
      out.put("many_to_one.inv_beta0_ns", model.inv_beta0 * 1e9);
      out.put("many_to_one.kappa1", model.kappa1);
      out.put("many_to_one.kappa2", model.kappa2);
      out.put("many_to_one.M2", model.M2);
      for (const auto& [n, M1] : model.M1) out.put("many_to_one.M1." + std::to_string(n), M1);
      for (const double l : model.levels) out.add("many_to_one.levels_ms.", l * 1e3);
      grid_model.many_to_one[cluster] = model;
    }
    if (!model_path.empty()) {
      // The pair inside the cluster in pLogP terms: L the smallest size's half round trip,
      // g(M) the rest of each size's.
      PLogP inside;
      inside.L = m.pingpong.front().half_round_trip;
      for (const auto& p : m.pingpong) inside.g.points.emplace_back(static_cast<double>(p.M), std::max(1e-7, p.half_round_trip - inside.L));
      grid_model.inside[cluster] = inside;
      grid_model.grid = "the kernel tier's nodes as cluster " + cluster;
      grid_model.measurements = 1;
      std::ofstream file(model_path);
      file << model_json(grid_model);
      if (!file) throw std::runtime_error(model_path + ": cannot write the model file");
    }
    std::ostringstream json;
    pt::write_json(json, out, false);
    std::cout << json.str();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel_fit: %s\n", e.what());
    return 2;
  }
  return 0;
}
