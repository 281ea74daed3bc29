// Seismic rays through a layered spherical earth, as Ray2mesh traces them (Coti, Herault, Cappello 2009 §3.3:
// Snell-Descartes' law in spherical geometry, from a source to a receiver), in a great-circle
// section: shells of constant velocity, in which a ray is a straight chord, refracted at
// each boundary so that its ray parameter p = r sin(i) / v stays the same: in shell k the
// chord passes at p v_k from the centre. A ray from the surface goes down until that
// distance exceeds a shell's inner radius (it turns inside the shell) or its outer one (it
// turns at the boundary), and comes back up symmetrically.
//
// Pure computation, no communication: the example's workers call it, and so do its checks.
#pragma once

#include <cstdint>
#include <vector>

namespace raytrace {

struct Model {
  std::vector<double> radius;    // shell boundaries, km, outermost (the surface) first; one more than velocity
  std::vector<double> velocity;  // km/s in each shell
  int sectors = 720;             // cells per shell around the section
  double step_km = 5;            // sampling step along a ray for the cells it crosses
  int cells() const { return static_cast<int>(velocity.size()) * sectors; }
};

// A PREM-like mantle in seven shells down to the core-mantle boundary.
Model standard_model(int sectors, double step_km);

// Angular distance (rad) a ray of parameter p travels from the surface back to it, and its
// travel time (s) and path length (km).
struct Leg {
  double distance = 0, time = 0, length = 0;
};
Leg shoot(const Model& m, double p);

// The ray from a surface point at angle `from` (rad) to one at `to`: its parameter found by
// bisection on the turning branch (rays that turn in the mantle: direct P waves), the time
// it takes, and the length (m) it runs in each cell, added to `coverage` (Model::cells()
// entries, integer metres so that sums do not depend on their order). A receiver farther
// than the ray grazing the core gets no direct ray: arrived false, nothing added.
struct Ray {
  bool arrived = false;
  double p = 0, time = 0;
  std::int64_t length_m = 0;  // the sum of what was added to coverage
};
Ray trace(const Model& m, double from, double to, std::vector<std::int64_t>& coverage);

}  // namespace raytrace
