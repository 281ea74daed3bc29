#include "earth.h"

#include <algorithm>
#include <cmath>

namespace raytrace {

Model standard_model(int sectors, double step_km) {
  Model m;
  m.radius = {6371, 6351, 5971, 5701, 5000, 4500, 4000, 3480};
  m.velocity = {6.0, 8.0, 8.9, 10.2, 11.0, 12.0, 13.0};
  m.sectors = sectors;
  m.step_km = step_km;
  return m;
}

namespace {
// In shell k the ray's chord passes at distance d = p v_k from the centre; a point on it at
// radius r is sqrt(r^2 - d^2) from the chord's foot and acos(d / r) from it in angle.
double along(double r, double d) { return std::sqrt(std::max(0.0, r * r - d * d)); }
double angle(double r, double d) { return std::acos(std::clamp(d / r, -1.0, 1.0)); }
}  // namespace

Leg shoot(const Model& m, double p) {
  Leg down;
  for (std::size_t k = 0; k < m.velocity.size(); ++k) {
    const double d = p * m.velocity[k], top = m.radius[k], bottom = m.radius[k + 1];
    if (d >= top) break;  // cannot enter: it turned at the boundary above
    const bool turns = d > bottom;
    const double to = turns ? d : bottom;
    const double len = along(top, d) - along(to, d);
    down.distance += angle(top, d) - angle(to, d);
    down.length += len;
    down.time += len / m.velocity[k];
    if (turns) break;
  }
  return Leg{2 * down.distance, 2 * down.time, 2 * down.length};
}

Ray trace(const Model& m, double from, double to, std::vector<std::int64_t>& coverage) {
  constexpr double kPi = 3.14159265358979323846;
  double delta = std::remainder(to - from, 2 * kPi);  // in (-pi, pi]: the shorter way round
  const double dir = delta < 0 ? -1 : 1;
  delta = std::fabs(delta);
  // The turning branch: from the ray grazing the core (largest distance) to the one leaving
  // the surface horizontally (none); the distance falls as p grows.
  const std::size_t last = m.velocity.size() - 1;
  double lo = m.radius[last + 1] / m.velocity[last] * (1 + 1e-12), hi = m.radius[0] / m.velocity[0];
  Ray ray;
  if (delta <= 0 || delta > shoot(m, lo).distance) return ray;
  for (int i = 0; i < 100 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (shoot(m, mid).distance > delta ? lo : hi) = mid;
  }
  ray.arrived = true;
  ray.p = 0.5 * (lo + hi);
  const Leg leg = shoot(m, ray.p);
  ray.time = leg.time;
  // The cells: walk the way down in steps, each step's length to the cell of its middle,
  // and the same to the mirror cell on the way up (the path is symmetric about its turning
  // point, at half the distance).
  const double sector = 2 * kPi / m.sectors;
  auto add = [&](std::size_t shell, double at, double km) {
    const double a = from + dir * at;
    const int s = static_cast<int>(std::floor(a / sector)) % m.sectors;
    const std::int64_t metres = std::llround(km * 1000);
    coverage[shell * static_cast<std::size_t>(m.sectors) + static_cast<std::size_t>(s < 0 ? s + m.sectors : s)] += metres;
    ray.length_m += metres;
  };
  double entered = 0;  // angle where the ray entered the shell
  for (std::size_t k = 0; k < m.velocity.size(); ++k) {
    const double d = ray.p * m.velocity[k], top = m.radius[k], bottom = m.radius[k + 1];
    if (d >= top) break;
    const bool turns = d > bottom;
    const double foot = entered + angle(top, d);  // where the chord passes closest to the centre
    const double t_top = along(top, d), t_end = turns ? 0 : along(bottom, d);
    for (double t = t_top; t > t_end;) {
      const double next = std::max(t_end, t - m.step_km);
      const double mid = 0.5 * (t + next);
      const double at = foot - std::atan2(mid, d);
      add(k, at, t - next);
      add(k, leg.distance - at, t - next);
      t = next;
    }
    entered = foot - std::atan2(t_end, d);
    if (turns) break;
  }
  return ray;
}

}  // namespace raytrace
