// Weighted least squares for the models' fits (docs/models.md): a straight line y = a*x + b,
// or one through the origin, y = a*x, minimising sum w_k (y_k - model)^2; and the median of
// repeated measurements. Pure arithmetic, tested against hand-computed fits.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace gridrt::models {

// The median of samples (0 for none): what a measurement of repeated trials reports.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

struct Point {
  double x = 0, y = 0, w = 1;  // w: the weight (1 / variance, or 1 / y^2 for relative error)
};

struct Line {
  double slope = 0, intercept = 0;
  double sse = 0;   // the weighted sum of squared residuals of the points it was fitted on
  bool ok = false;  // false for fewer than two distinct x (or one, through the origin)
  double at(double x) const { return slope * x + intercept; }
};

// y = a*x + b.
inline Line fit_line(const std::vector<Point>& pts) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& p : pts) {
    sw += p.w;
    sx += p.w * p.x;
    sy += p.w * p.y;
    sxx += p.w * p.x * p.x;
    sxy += p.w * p.x * p.y;
  }
  Line l;
  const double det = sw * sxx - sx * sx;
  if (pts.size() < 2 || det <= 1e-300 * (sw * sxx + 1)) return l;
  l.slope = (sw * sxy - sx * sy) / det;
  l.intercept = (sy - l.slope * sx) / sw;
  for (const auto& p : pts) l.sse += p.w * (p.y - l.at(p.x)) * (p.y - l.at(p.x));
  l.ok = true;
  return l;
}

// y = a*x.
inline Line fit_through_origin(const std::vector<Point>& pts) {
  double sxx = 0, sxy = 0;
  for (const auto& p : pts) {
    sxx += p.w * p.x * p.x;
    sxy += p.w * p.x * p.y;
  }
  Line l;
  if (pts.empty() || sxx <= 0) return l;
  l.slope = sxy / sxx;
  for (const auto& p : pts) l.sse += p.w * (p.y - l.at(p.x)) * (p.y - l.at(p.x));
  l.ok = true;
  return l;
}

// y = a*x + b through the point of least x (the start-up, measured), a fitted on the others'
// rise above it: a time per byte, which the large sizes decide, as they should (a free line
// through all sizes gives a start-up the small sizes do not show, negative even).
inline Line fit_through_least_x(std::vector<Point> pts) {
  Line l;
  if (pts.size() < 2) return l;
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  const Point first = pts.front();
  for (auto& p : pts) {
    p.x -= first.x;
    p.y -= first.y;
  }
  l = fit_through_origin(pts);
  l.intercept = first.y - l.slope * first.x;
  return l;
}

}  // namespace gridrt::models
