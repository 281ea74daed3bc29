// MPI's return codes as gridrt errors: the runtime's own MPI calls (on communicators whose
// errors are returned, not fatal) throw gridrt::Error naming what failed and MPI's reason,
// with the MPI error class for the MPI layer to pass on.
#pragma once

#include <string>

#include "gridrt/gridrt.hpp"

namespace gridrt::detail {

inline constexpr const char* kMpiInCluster = "MPI inside the cluster";

inline std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

inline int mpi_error_class(int rc) {
  int c = MPI_ERR_OTHER;
  MPI_Error_class(rc, &c);
  return c;
}

inline void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  throw Error(std::string("gridrt: ") + what + ": " + mpi_error_text(rc), mpi_error_class(rc));
}

}  // namespace gridrt::detail
