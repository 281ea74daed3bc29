// The life cycle under the MPI layer: MPI_Init joins the grid job (gridrt::init) when
// gridrun started the process, and is MPICH's alone otherwise; MPI_Finalize leaves it;
// MPI_Abort ends the whole job.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>

#include "common/settings.h"
#include "layer.h"

namespace {

// Whether gridrun started this process: whether it set these, right or not (gridrt::init
// checks them, and says what is wrong).
bool started_by_gridrun() {
  try {
    return gridrt::settings::value("GRIDRT_JOB") && gridrt::settings::value("GRIDRT_RELAY");
  } catch (const std::invalid_argument&) { return true; }
}

// The thread levels across clusters: the runtime's waits and registries are the process's,
// moved by one thread at a time (its own I/O thread never calls MPI): up to
// MPI_THREAD_SERIALIZED. MULTIPLE is refused as MPI allows, by providing less, and said.
int grid_thread_level(int required) {
  if (required <= MPI_THREAD_SERIALIZED) return required;
  std::fprintf(stderr,
               "gridrt: MPI_THREAD_MULTIPLE is not supported across clusters: this process runs at MPI_THREAD_SERIALIZED "
               "(calls from one thread at a time; docs/mpi.md)\n");
  return MPI_THREAD_SERIALIZED;
}

int join(int* argc, char*** argv, int required, int* provided) {
  gridmpi::leave_ld_preload();
  if (!started_by_gridrun()) return PMPI_Init_thread(argc, argv, required, provided);
  const int level = grid_thread_level(required);
  try {
    gridrt::init(argc, argv, level);
  } catch (const std::exception& e) {
    // Nothing can go on without the job: say why and stop this process (and so the job).
    std::fprintf(stderr, "%s\n", e.what());
    std::fflush(nullptr);
    std::_Exit(1);
  }
  if (provided) PMPI_Query_thread(provided);
  return MPI_SUCCESS;
}

// The layer hears of the runtime's init and finalize, also in programs written against
// gridrt's own API (gridrt::init). It stays in LD_PRELOAD until this process initialises
// MPI: a wrapper it was loaded into first (env, time, a shell script, numactl) hands it on
// to the program the wrapper starts, which is the one that joins the job.
__attribute__((constructor)) void load() { gridrt::detail::layer_hooks = {&gridmpi::on_initialized, &gridmpi::on_finalizing}; }

}  // namespace

// What a process that initialised MPI starts (a shell command, say) is not part of the job:
// it does not load the layer.
void gridmpi::leave_ld_preload() {
  const char* preload = std::getenv("LD_PRELOAD");
  if (!preload) return;
  std::string kept, entry;
  const std::string all = preload;
  for (std::size_t at = 0; at <= all.size();) {
    const std::size_t end = all.find_first_of(": ", at);
    entry = all.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (!entry.empty() && entry.find("libgridmpi.so") == std::string::npos) kept += (kept.empty() ? "" : ":") + entry;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  if (kept.empty()) ::unsetenv("LD_PRELOAD");
  else ::setenv("LD_PRELOAD", kept.c_str(), 1);
}

int GRIDMPI(Init)(int* argc, char*** argv) {
  int provided = 0;
  return join(argc, argv, MPI_THREAD_SINGLE, &provided);
}

int GRIDMPI(Init_thread)(int* argc, char*** argv, int required, int* provided) { return join(argc, argv, required, provided); }

int GRIDMPI(Finalize)(void) {
  if (!gridrt::initialized()) return PMPI_Finalize();
  try {
    gridrt::finalize();  // (its barrier, then the layer lets go of its state, then MPICH's)
  } catch (const std::exception& e) { gridmpi::abort_job(1, std::string("MPI_Finalize: ") + e.what()); }
  return MPI_SUCCESS;
}

int GRIDMPI(Abort)(MPI_Comm comm, int errorcode) {
  if (!gridmpi::active()) return PMPI_Abort(comm, errorcode);
  std::string where = "MPI_COMM_WORLD";
  if (comm != MPI_COMM_WORLD) {
    char name[MPI_MAX_OBJECT_NAME] = {0};
    int len = 0;
    if (comm != MPI_COMM_NULL && PMPI_Comm_get_name(comm, name, &len) == MPI_SUCCESS && len > 0) where = name;
    else where = "a communicator";
  }
  // MPI lets an implementation end every process of the job, whatever the communicator.
  gridmpi::abort_job(errorcode, "MPI_Abort(" + where + ", " + std::to_string(errorcode) + ")");
}

// ---------------------------------------------------------------- mpi_f08

// MPICH's mpi_f08 bindings call MPICH's PMPI_ entry points directly, past the layer: such a
// program would run as one MPICH job per cluster and get cluster-local answers. In a grid
// job its MPI_Init refuses, saying why; outside one it is MPICH's.
namespace {
[[noreturn]] void refuse_f08() {
  std::fprintf(stderr,
               "gridrt: this program uses Fortran's mpi_f08 module, which the MPI layer does not cover across clusters; "
               "use 'use mpi' or mpif.h instead (docs/mpi.md)\n");
  std::fflush(nullptr);
  std::_Exit(2);
}
template <typename F> F mpich_f08(const char* name) { return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name)); }
}  // namespace

extern "C" void mpi_init_f08_(int* ierror) {
  if (started_by_gridrun()) refuse_f08();
  mpich_f08<void (*)(int*)>("mpi_init_f08_")(ierror);
}

extern "C" void mpi_init_thread_f08_(int* required, int* provided, int* ierror) {
  if (started_by_gridrun()) refuse_f08();
  mpich_f08<void (*)(int*, int*, int*)>("mpi_init_thread_f08_")(required, provided, ierror);
}
