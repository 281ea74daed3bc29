// examples/raytrace's earth model: rays obey what Snell's law in a sphere of shells gives.
#include <gtest/gtest.h>

#include <cmath>

#include "earth.h"

namespace {
constexpr double kDeg = 3.14159265358979323846 / 180;
}

// A ray that arrives lands where it was aimed (within the bisection's tolerance), the
// lengths it adds to the cells sum to its path's length, and its time is its path's
// shells' lengths over their speeds: at least the chord over the fastest speed, at most
// the path over the slowest. Farther than the ray grazing the core, nothing arrives.
TEST(RaytraceModel, RaysLandOnTheirReceiversAndFillTheCellsTheyCross) {
  const raytrace::Model m = raytrace::standard_model(720, 2);
  std::vector<std::int64_t> cells(static_cast<std::size_t>(m.cells()), 0);
  int arrived = 0;
  for (double deg : {12.0, 25.0, 40.0, 60.0, 80.0, 95.0}) {
    const double from = 0.3, to = from + deg * kDeg;
    std::int64_t before = 0;
    for (auto v : cells) before += v;
    const raytrace::Ray r = raytrace::trace(m, from, to, cells);
    if (!r.arrived) continue;
    ++arrived;
    const raytrace::Leg leg = raytrace::shoot(m, r.p);
    EXPECT_NEAR(leg.distance / kDeg, deg, 0.05) << deg;
    std::int64_t after = 0;
    for (auto v : cells) after += v;
    EXPECT_EQ(after - before, r.length_m) << deg;
    // Each step is rounded to the metre: far below 0.2% over a path.
    EXPECT_NEAR(static_cast<double>(r.length_m) / 1000, leg.length, 0.002 * leg.length) << deg;
    const double chord = 2 * m.radius[0] * std::sin(deg * kDeg / 2);
    EXPECT_GT(r.time, chord / 13.0) << deg;
    EXPECT_LT(r.time, leg.length / 6.0) << deg;
  }
  EXPECT_GE(arrived, 5);
  // Traced the other way round, the same ray: the same time.
  std::vector<std::int64_t> scratch(cells.size(), 0);
  EXPECT_EQ(raytrace::trace(m, 1.0, 1.0 + 50 * kDeg, scratch).time, raytrace::trace(m, 1.0 + 50 * kDeg, 1.0, scratch).time);
  EXPECT_FALSE(raytrace::trace(m, 0, 150 * kDeg, scratch).arrived);
}
