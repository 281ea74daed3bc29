// Unmodified MPI programs across clusters: the plain MPI programs of tests/mpi (built
// against MPICH alone, no gridrt header or library), Debian's NetPIPE, and a Fortran
// program, run by `gridrun -n N PROGRAM` on grids of two and three clusters of unequal
// sizes, through the MPI layer the process monitor loads into them. And the layer itself:
// every MPI function accounted for, nothing of it calling MPI but through PMPI, MPICH
// unchanged without gridrun.
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>

#include "run_support.h"

namespace {

const std::string kLib = GRIDRT_LIB_DIR;

// The grids the programs run on: two clusters of 2 and 1 slots, three of 1, 2 and 2 at
// three sites, and three clusters at two sites (two sharing a site's LAN).
struct Grid {
  std::string path;
  int processes;
  std::string what;
};
std::vector<Grid> grids() {
  return {{grid_with_sites({{"A", 2}, {"B", 1}}), 3, "2 clusters of 2 and 1"},
          {grid_with_sites({{"A", 1}, {"B", 2}, {"C", 2}}), 5, "3 clusters of 1, 2 and 2"},
          {grid_with_sites({{"A", 2}, {"A", 1}, {"B", 1}}), 4, "3 clusters at 2 sites"}};
}

Outcome run(const Grid& g, const std::string& program, const std::vector<std::string>& args = {}) {
  std::vector<std::string> argv = {"--grid", g.path, "-n", std::to_string(g.processes), program};
  argv.insert(argv.end(), args.begin(), args.end());
  return gridrun(argv);
}

// A run of one of the test programs (whose report starts "PROGRAM: ") passed its checks on
// `processes` processes; `what` says where it ran.
void passed(const Outcome& r, const std::string& program, int processes, const std::string& what) {
  EXPECT_EQ(r.status, 0) << what << "\n" << r.out << r.err;
  EXPECT_NE(r.out.find(program + ": "), std::string::npos) << what << "\n" << r.out << r.err;
  EXPECT_NE(r.out.find(" checks passed on " + std::to_string(processes) + " processes"), std::string::npos) << what << "\n"
                                                                                                            << r.out << r.err;
}

// Runs tests/mpi/`program` on every grid; it must pass its checks everywhere.
void passes_everywhere(const std::string& program, const std::vector<std::string>& args = {}) {
  for (const Grid& g : grids()) passed(run(g, kMpiTests + "/mpi_" + program, args), program, g.processes, g.what);
  expect_nothing_left();
}

// Two grids of the programs' kind whose clusters all declare `dir` one file system.
std::vector<Grid> grids_sharing(const std::string& dir, const std::string& tag) {
  const std::string scratch = "<fileSystem name=\"scratch\" path=\"" + dir + "\"/>";
  return {{grid_with_sites({{"A", 2}, {"B", 1}}, scratch, tag), 3, "2 clusters of 2 and 1"},
          {grid_with_sites({{"A", 1}, {"B", 2}, {"C", 2}}, scratch, tag), 5, "3 clusters of 1, 2 and 2"}};
}

// Sets an environment variable for the scope (gridrun's embedded grid passes its
// environment on to the job's processes).
struct Env {
  std::string name;
  Env(const std::string& n, const std::string& value) : name(n) { ::setenv(n.c_str(), value.c_str(), 1); }
  ~Env() { ::unsetenv(name.c_str()); }
};

// Runs a shell command, returning what it printed.
std::string shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  for (std::size_t n; p && (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  if (p) ::pclose(p);
  return out;
}

}  // namespace

TEST(MpiLayer, PointToPointInEveryModeWithMpisMatchingAndOrdering) { passes_everywhere("p2p"); }

// A probe from any source, then a receive from any source of the probed size, thousands of
// times while messages come from the prober's own cluster and from the others at once: the
// receive takes the probed message (an MPI with one queue does, and programs rely on it).
TEST(MpiLayer, AWildcardReceiveAfterAProbeTakesTheProbedMessage) {
  passes_everywhere("probe");
  const Outcome r = gridrun({"--clusters", "2", "--ranks-per-cluster", "2", "-n", "4", kMpiTests + "/mpi_probe", "1000"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(" checks passed on 4 processes"), std::string::npos) << r.out << r.err;
  expect_nothing_left();
}

// Yorick's parallel interpreter (Debian's mpy.mpich2, built against this machine's MPICH),
// unmodified, with the test suite Debian ships: its message loop probes from any source and
// then receives from any source. Across two clusters of two it prints what it prints under
// MPICH alone (lines of different ranks may come in another order).
TEST(MpiLayer, YoricksParallelTestSuiteAcrossTwoClusters) {
  const std::string suite = "/usr/share/doc/yorick-mpy-common/examples/testmp.i.gz";
  if (::access("/usr/bin/mpy.mpich2", X_OK) != 0 || ::access(suite.c_str(), R_OK) != 0)
    GTEST_SKIP() << "Yorick's mpy.mpich2 is missing (scripts/install-deps.sh installs yorick-mpy-mpich2)";
  const std::string dir = ::testing::TempDir() + "/yorick";
  fs::create_directories(dir);
  shell("zcat " + suite + " > " + dir + "/testmp.i");
  std::ofstream(dir + "/run.i") << "mp_include, \"" << dir << "/testmp.i\";\ntestmp;\ntestmp1, 3;\nquit;\n";
  auto sorted_lines = [](const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  const std::string alone = shell("timeout 120 mpiexec.mpich -n 4 mpy.mpich2 -batch " + dir + "/run.i 2>&1");
  ASSERT_NE(alone.find("testmp3 passed on all 4 ranks"), std::string::npos) << "under MPICH alone:\n" << alone;
  const Outcome r = gridrun(
      {"--clusters", "2", "--ranks-per-cluster", "2", "--no-label", "--timeout", "120", "-n", "4", "mpy.mpich2", "-batch", dir + "/run.i"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(sorted_lines(r.out), sorted_lines(alone)) << "across clusters:\n" << r.out << r.err << "\nunder MPICH alone:\n" << alone;
  expect_nothing_left();
}

TEST(MpiLayer, EveryCollectiveBlockingNonBlockingAndPersistent) {
  passes_everywhere("coll");
  Env flat("GRIDRT_COLL", "flat");
  passes_everywhere("coll");
}

// Also: a communicator of one cluster's processes sends nothing across sites (the relays
// count what crosses; with direct connections off, all of it goes through them).
TEST(MpiLayer, CommunicatorsGroupsAttributesTopologiesAndErrors) {
  Env relays_only("GRIDRT_DIRECT", "off");
  passes_everywhere("comms");
}

// One-sided communication on MPI_COMM_WORLD: fence, PSCW and passive target with derived
// datatypes at both ends, a fetch-and-op counter, a compare-and-swap mutex, exclusive locks
// and accumulates from every cluster on one element, dynamic windows, errors, and a get
// from a target computing for a second without calling MPI, done long before it ends.
TEST(MpiLayer, OneSidedCommunicationInEverySynchronisationMode) { passes_everywhere("rma", {"30", "1", "strict"}); }

// MPI-IO across clusters: one file that every process writes and reads through views,
// ordered and shared pointers, non-blocking and split collectives, atomic mode and MPI's
// error classes (and from Fortran), on two and three clusters of unequal sizes: on a file
// system that every cluster declares (<fileSystem>), on the embedded grid (whose clusters
// share this machine's files), with one cluster mounting the file system at another path;
// and where the clusters share none, the file living in one cluster (rank 0's, or the one
// the info key gridrt_file_cluster names).
TEST(MpiLayer, OneFileThatEveryProcessReadsAndWritesAcrossClusters) {
  char made[] = "/tmp/gridrt-files-XXXXXX";
  ASSERT_NE(::mkdtemp(made), nullptr);
  const std::string dir = made;
  const std::string program = kMpiTests + "/mpi_files";
  for (const Grid& g : grids_sharing(dir, "-scratch")) {
    passed(run(g, program, {dir}), "files", g.processes, g.what);
    passed(run(g, kMpiTests + "/mpi_fortran_io", {dir}), "fortran_io", g.processes, g.what);  // (Fortran: use mpi)
  }
  passed(gridrun({"-n", "4", program, dir}), "files", 4, "the embedded grid (3 and 1)");
  // One file system that cluster c1 mounts elsewhere (here a symbolic link to the
  // directory): its processes name the files by their own path.
  const std::string elsewhere = dir + "-elsewhere";
  std::filesystem::create_directory_symlink(dir, elsewhere);
  const std::string mounts = ::testing::TempDir() + "/grid-mounted-elsewhere.xml";
  std::ofstream(mounts) << "<grid>\n"
                        << "<cluster name=\"c0\" site=\"A\" slots=\"2\"><relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>"
                        << "<network nodes=\"private\" inbound=\"no\"/><launch>mpiexec -launcher fork -n {np}</launch>"
                        << "<fileSystem name=\"scratch\" path=\"" << dir << "\"/>"
                        << "</cluster>\n"
                        << "<cluster name=\"c1\" site=\"B\" slots=\"1\"><relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>"
                        << "<network nodes=\"private\" inbound=\"no\"/><launch>mpiexec -launcher fork -n {np}</launch>"
                        << "<fileSystem name=\"scratch\" path=\"" << elsewhere << "\"/></cluster>\n</grid>\n";
  passed(gridrun({"--grid", mounts, "-n", "3", program, dir, "in-c1", elsewhere}), "files", 3, "c1 mounting the file system elsewhere");
  std::filesystem::remove(elsewhere);
  // Clusters that declare no file system they share: every file lives in the cluster of
  // rank 0 (but one the program places in the last rank's), whose processes serve the
  // others' accesses. On three clusters c1's processes name a directory they do not have:
  // they never touch the files themselves (the last rank is c2's).
  for (const Grid& g : {grids()[0], grids()[1]}) {
    std::vector<std::string> args = {dir};
    if (g.processes == 5) args = {dir, "in-c1", "/nonexistent-gridrt-dir"};
    passed(run(g, program, args), "files", g.processes, g.what + ", no shared file system");
    passed(run(g, kMpiTests + "/mpi_fortran_io", {dir}), "fortran_io", g.processes, g.what + ", no shared file system");
  }
  std::filesystem::remove_all(dir);
  expect_nothing_left();
}

// A parallel HDF5 program built with Debian's HDF5 for MPICH (h5pcc.mpich), across clusters
// that share a file system and across clusters that do not: collective create, every rank's hyperslab of one dataset, an
// attribute, reading back on another decomposition; its file's h5dump is that of the file
// the same program writes under MPICH alone.
TEST(MpiLayer, AParallelHdf5ProgramWritesTheFileMpichAloneWrites) {
  if (::access("/usr/bin/h5pcc.mpich", X_OK) != 0 || ::access("/usr/bin/h5dump", X_OK) != 0)
    GTEST_SKIP() << "h5pcc.mpich or h5dump is missing (scripts/install-deps.sh test installs libhdf5-mpich-dev, hdf5-tools)";
  char made[] = "/tmp/gridrt-hdf5-XXXXXX";
  ASSERT_NE(::mkdtemp(made), nullptr);
  const std::string dir = made;
  const std::string program = dir + "/hdf5";
  // (in its directory: h5pcc leaves its object file where it runs)
  ASSERT_EQ(std::system(("cd " + dir + " && h5pcc.mpich -I" + std::string(GRIDRT_MPI_SOURCES_DIR) + " -o " + program + " " +
                         GRIDRT_MPI_SOURCES_DIR + "/hdf5.c >" + dir + "/build.log 2>&1")
                            .c_str()),
            0)
      << shell("cat " + dir + "/build.log");
  const auto dump = [&](const std::string& file) { return shell("h5dump " + file + " | tail -n +2"); };  // (not the name)
  std::vector<Grid> all = grids_sharing(dir, "-hdf5");
  all.push_back(grids()[0]);  // (no shared file system: the file lives in the cluster of rank 0)
  for (Grid& g : all) {
    const std::string n = std::to_string(g.processes);
    const std::string grid_file = dir + "/grid" + n + (&g == &all.back() ? "-in-one-cluster" : "") + ".h5";
    const std::string alone = shell("timeout 60 mpiexec.mpich -n " + n + " " + program + " " + dir + "/alone" + n + ".h5 2>&1");
    EXPECT_NE(alone.find("checks passed on " + n + " processes"), std::string::npos) << alone;
    passed(run(g, program, {grid_file}), "hdf5", g.processes, g.what);
    const std::string expected = dump(dir + "/alone" + n + ".h5");
    EXPECT_NE(expected.find("DATASET \"values\""), std::string::npos) << expected;
    EXPECT_EQ(dump(grid_file), expected) << g.what;
  }
  std::filesystem::remove_all(dir);
  expect_nothing_left();
}

// A Fortran coarray program built with OpenCoarrays for MPICH (`caf`, as its users build
// them), across clusters: every image right, as under mpiexec alone (with MPICH's own
// shared-memory path off: MPIR_CVAR_NOLOCAL=1, without which MPICH 4.0.2 gives coarray
// programs wrong values here).
TEST(MpiLayer, AFortranCoarrayProgramOfOpenCoarrays) {
  if (::access("/usr/bin/caf.mpich", X_OK) != 0)
    GTEST_SKIP() << "caf.mpich is missing (scripts/install-deps.sh installs libcoarrays-mpich-dev)";
  char made[] = "/tmp/gridrt-coarray-XXXXXX";
  ASSERT_NE(::mkdtemp(made), nullptr);
  const std::string dir = made;
  const std::string program = dir + "/coarray";
  ASSERT_EQ(std::system(("caf.mpich -o " + program + " " + GRIDRT_MPI_SOURCES_DIR + "/coarray.f90 >" + dir + "/build.log 2>&1").c_str()), 0)
      << shell("cat " + dir + "/build.log");
  const std::string alone = shell("MPIR_CVAR_NOLOCAL=1 timeout 60 mpiexec.mpich -n 4 " + program + " 2>/dev/null | sort");
  EXPECT_EQ(count(alone, ": ok"), 4) << alone;
  for (const Grid& g : grids()) {
    const Outcome r = run(g, program);
    EXPECT_EQ(r.status, 0) << g.what << "\n" << r.out << r.err;
    EXPECT_EQ(count(r.out, ": ok"), g.processes) << g.what << "\n" << r.out << r.err;
    EXPECT_EQ(count(r.out, "WRONG"), 0) << g.what << "\n" << r.out;
  }
  std::filesystem::remove_all(dir);
  expect_nothing_left();
}

// A program of the Global Arrays family on Debian's ARMCI-MPI for MPICH (built as its users
// build them: mpicc.mpich ... -larmci-mpich), which holds lock_all epochs open, flushes,
// fetch-and-ops and accumulates: every check passes across clusters.
TEST(MpiLayer, AnArmciProgramOnArmciMpi) {
  if (::access("/usr/lib/x86_64-linux-gnu/libarmci-mpich.a", R_OK) != 0)
    GTEST_SKIP() << "libarmci-mpich.a is missing (scripts/install-deps.sh installs libarmci-mpi-dev)";
  char made[] = "/tmp/gridrt-armci-XXXXXX";
  ASSERT_NE(::mkdtemp(made), nullptr);
  const std::string dir = made, program = dir + "/armci";
  ASSERT_EQ(
      std::system(
          ("mpicc.mpich -o " + program + " " + GRIDRT_MPI_SOURCES_DIR + "/armci.c -larmci-mpich >" + dir + "/build.log 2>&1").c_str()),
      0)
      << shell("cat " + dir + "/build.log");
  for (const Grid& g : grids()) {
    const Outcome r = run(g, program, {"50"});
    EXPECT_EQ(r.status, 0) << g.what << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("armci: "), std::string::npos) << g.what << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find(" checks passed on " + std::to_string(g.processes) + " processes"), std::string::npos) << g.what << "\n"
                                                                                                                << r.out << r.err;
  }
  std::filesystem::remove_all(dir);
  expect_nothing_left();
}

TEST(MpiLayer, IntercommunicatorsBetweenGroupsThatSpanClusters) { passes_everywhere("intercomm"); }

TEST(MpiLayer, NeighbourhoodCollectivesOnEveryTopologyAndPersistentOnesInAnyOrder) { passes_everywhere("neighbors"); }

// The shipped example: an unmodified program splitting MPI_COMM_WORLD by JobProfile group
// (each group on its own cluster of the embedded grid) and by cluster.
TEST(MpiLayer, TheShippedExampleSplitsTheWorldByGroupAndByCluster) {
  const Outcome r = gridrun({std::string(GRIDRT_SOURCE_DIR) + "/jobprofiles/mpi-split.xml"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("group 0 'masters': 2 processes, their world ranks add up to 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("group 1 'workers': 1 processes, their world ranks add up to 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("world rank 2 leads a cluster of 1 processes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 processes in MPI_COMM_WORLD, 2 clusters holding 3 of them"), std::string::npos) << r.out;
  expect_nothing_left();
}

TEST(MpiLayer, LifeCycleAndThreadLevels) {
  const Grid g = grids()[0];
  const Outcome r = run(g, kMpiTests + "/mpi_world");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("world: 3 processes, thread level " + std::to_string(MPI_THREAD_SERIALIZED)), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("MPI_THREAD_MULTIPLE is not supported across clusters"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("world: 30 checks passed on 3 processes"), std::string::npos) << r.out << r.err;
  expect_nothing_left();
}

TEST(MpiLayer, AbortEndsTheWholeJobWithItsCodeAndNamesTheRank) {
  const Grid g = grids()[1];
  const Outcome r = run(g, kMpiTests + "/mpi_abort", {"7"});
  EXPECT_EQ(r.status, 7) << r.out << r.err;
  EXPECT_NE(r.err.find("[c2:4] gridrt: rank 4 ends the job: MPI_Abort(MPI_COMM_WORLD, 7)"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("rank 4 (cluster c2) exited with status 7"), std::string::npos) << r.err;
  expect_nothing_left();
  // With code 0 the aborting rank's exit looks like a rank that is done: the job must still
  // end at once (the others wait for it in a receive), with status 0 as mpiexec's.
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome zero = run(g, kMpiTests + "/mpi_abort", {"0"});
  EXPECT_EQ(zero.status, 0) << zero.out << zero.err;
  EXPECT_NE(zero.err.find("[c2:4] gridrt: rank 4 ends the job: MPI_Abort(MPI_COMM_WORLD, 0)"), std::string::npos) << zero.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  expect_nothing_left();
}

// A rank that leaves early while the others wait for it ends the job within seconds, named
// with its exit status, instead of holding them until a timeout: returning from main
// without MPI_Finalize (rank 3, the first of cluster c2) ...
TEST(MpiLayer, ARankThatLeavesWithoutFinalizeStopsTheJobAndIsNamed) {
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome r = run(grids()[1], kMpiTests + "/mpi_leave", {"no-finalize", "3"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  // (Status 0, as main returned; a sanitized build's leak check at exit may change it.)
  EXPECT_TRUE(std::regex_search(r.err, std::regex("cluster c2: rank 3 exited with status [0-9]+ without calling gridrt::finalize "
                                                  "\\(MPI_Finalize\\)")))
      << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  expect_nothing_left();
}

// ... and exiting before MPI_Init (rank 4, the second of cluster c2).
TEST(MpiLayer, ARankThatNeverInitializesStopsTheJobAndIsNamed) {
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome r = run(grids()[1], kMpiTests + "/mpi_leave", {"no-init", "c2"});
  EXPECT_NE(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("rank 4 (cluster c2) exited with status 0 before it joined the job"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  expect_nothing_left();
}

// Launch wrappers between gridproc and the MPI program (setting the environment, timing, a
// shell script that execs it or runs it as a child and then reports): the layer reaches the
// MPI program through them, and every one gives one MPI_COMM_WORLD of all the processes
// across the clusters. A program that never calls MPI, started by such a script before the
// MPI program with the layer in its environment, runs as it would without it.
TEST(MpiLayer, LaunchWrappersHandTheLayerOnToTheMpiProgram) {
  const std::string dir = ::testing::TempDir() + "/wrappers";
  fs::create_directories(dir);
  const std::string execs = dir + "/execs.sh", child = dir + "/child.sh";
  std::ofstream(execs) << "#!/bin/sh\nexport WRAPPED=1\nhostname > /dev/null && echo \"before MPI: $(echo ran)\"\nexec \"$@\"\n";
  std::ofstream(child) << "#!/bin/bash\n\"$@\"\nrc=$?\necho \"wrapper: the program ended with $rc\"\nexit $rc\n";
  fs::permissions(execs, fs::perms::owner_all);
  fs::permissions(child, fs::perms::owner_all);
  const Grid g = grids()[1];
  const std::string world = kMpiTests + "/mpi_world";
  const std::string processes = "world: " + std::to_string(g.processes) + " processes";
  const std::string passed = "world: 50 checks passed on " + std::to_string(g.processes) + " processes";
  const std::vector<std::vector<std::string>> wrappers = {
      {"env", "OMP_NUM_THREADS=1"}, {execs}, {child}, {"/usr/bin/time", "-f", "%e s"}, {"nice", "-n", "1"}};
  for (const auto& wrapper : wrappers) {
    if (::access(wrapper[0].c_str(), X_OK) != 0 && wrapper[0][0] == '/') {
      ADD_FAILURE() << wrapper[0] << " is missing (scripts/install-deps.sh installs it)";
      continue;
    }
    std::vector<std::string> args = wrapper;
    args.push_back(world);
    const Outcome r = run(g, args[0], std::vector<std::string>(args.begin() + 1, args.end()));
    EXPECT_EQ(r.status, 0) << wrapper[0] << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find(processes), std::string::npos) << wrapper[0] << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find(passed), std::string::npos) << wrapper[0] << "\n" << r.out << r.err;
    if (wrapper[0] == execs) { EXPECT_EQ(count(r.out, "before MPI: ran"), g.processes) << r.out; }
    if (wrapper[0] == child) { EXPECT_EQ(count(r.out, "wrapper: the program ended with 0"), g.processes) << r.out; }
  }
  expect_nothing_left();
}

// A wrapper that takes the layer out of the environment: the MPI program would initialise
// MPI as a job of its cluster alone. It is stopped before MPICH hears of it, and the job
// ends at once, naming the rank and the likely cause.
TEST(MpiLayer, AProgramThatInitialisesMpiWithoutTheLayerStopsTheJobAndSaysWhy) {
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome r = run(grids()[0], "env", {"-u", "LD_PRELOAD", kMpiTests + "/mpi_world"});
  EXPECT_NE(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(
      std::regex_search(r.err, std::regex("gridrun: job [0-9]+ failed: cluster c[01]: rank [0-2] initialised MPI without gridrt's MPI "
                                          "layer and was stopped \\(it would have run as an MPI job of its cluster alone\\): "
                                          "did a launch wrapper take LD_PRELOAD out of the environment")))
      << r.err;
  EXPECT_EQ(r.out.find("world: 2 processes"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("world: 1 processes"), std::string::npos) << r.out;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  expect_nothing_left();
}

// What the layer does not cover across clusters, called by a program that ignores the
// error (MPI_ERRORS_RETURN, or a handler of its own): each rank says so once per function on
// stderr, naming itself, the function and why, however often the program calls it.
TEST(MpiLayer, AnUnsupportedCallIsSaidOnceWhateverTheErrorHandler) {
  const Grid g = grids()[1];
  const Outcome r = run(g, kMpiTests + "/mpi_unsupported");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("unsupported: " + std::to_string(3 * g.processes + g.processes) + " checks passed on 5 processes"),
            std::string::npos)
      << r.out << r.err;
  const std::string said =
      " MPI_Psend_init is not supported on a communicator that spans clusters (partitioned communication; docs/mpi.md)";
  EXPECT_EQ(count(r.err, said), g.processes) << r.err;
  for (int rank = 0; rank < g.processes; ++rank)
    EXPECT_NE(r.err.find("gridrt: rank " + std::to_string(rank) + ":" + said), std::string::npos) << r.err;
  expect_nothing_left();
}

TEST(MpiLayer, AFortranProgram) {
  for (const Grid& g : grids()) {
    const Outcome r = run(g, kMpiTests + "/mpi_fortran");
    EXPECT_EQ(r.status, 0) << g.what << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("fortran: checks passed on " + std::to_string(g.processes) + " processes"), std::string::npos) << r.out << r.err;
  }
  expect_nothing_left();
}

// Debian's NetPIPE, unmodified, between two clusters: its integrity check up to 1.5 MB (every
// byte of every message compared), then its measurements with synchronous sends.
// mpi_f08's bindings call MPICH past the layer: refused at MPI_Init, not answered per cluster.
TEST(MpiLayer, AnMpiF08ProgramIsRefusedClearly) {
  const Outcome r = run(grids()[0], kMpiTests + "/mpi_fortran_f08");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("uses Fortran's mpi_f08 module, which the MPI layer does not cover across clusters"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("f08 rank"), std::string::npos) << r.out;
  expect_nothing_left();
}

TEST(MpiLayer, NetPipeUnmodifiedBetweenTwoClusters) {
  if (::access("/usr/bin/NPmpich2", X_OK) != 0) GTEST_SKIP() << "NPmpich2 is missing (scripts/install-deps.sh installs netpipe-mpich2)";
  const std::string grid = grid_with_sites({{"A", 1}, {"B", 1}});
  Outcome r = gridrun({"--grid", grid, "-n", "2", "NPmpich2", "-i", "-n", "3", "-u", "1600000"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  const std::string said = r.out + r.err;  // (NetPIPE writes its progress to stderr)
  const std::regex passed(R"(\[c0:0\] +\d+: +(\d+) bytes +3 times --> +Integrity check passed)");
  std::size_t checked = 0, largest = 0;
  for (auto it = std::sregex_iterator(said.begin(), said.end(), passed); it != std::sregex_iterator(); ++it, ++checked)
    largest = std::max<std::size_t>(largest, std::stoul((*it)[1]));
  EXPECT_GE(checked, 30u) << said;
  EXPECT_GE(largest, 1000000u) << said;
  EXPECT_EQ(said.find("Integrity check failed"), std::string::npos) << said;
  r = gridrun({"--grid", grid, "-n", "2", "NPmpich2", "-S", "-n", "5", "-u", "65536"});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("65536 bytes      5 times -->"), std::string::npos) << r.out << r.err;
  expect_nothing_left();
}

// The quick mode's arguments: the program's own follow it; bad ones are named.
TEST(MpiLayer, QuickModeTakesTheProgramsArgumentsAndNamesBadInput) {
  Outcome r = gridrun({"--grid", grids()[0].path, "-np", "3", "--", kMpiTests + "/mpi_abort", "9"});
  EXPECT_EQ(r.status, 9) << r.out << r.err;
  r = gridrun({"-n", "2", "no-such-program-anywhere"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("program 'no-such-program-anywhere': not found on PATH"), std::string::npos) << r.err;
  const std::string plain = ::testing::TempDir() + "/not-a-program";
  std::ofstream(plain) << "data\n";
  fs::permissions(plain, fs::perms::owner_read | fs::perms::owner_write);
  r = gridrun({"-n", "2", plain});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("is not executable"), std::string::npos) << r.err;
  r = gridrun({"--var", "X=1", "-n", "2", "hostname"});
  EXPECT_EQ(r.status, 2);
  r = gridrun({"--clusters", "2", "--ranks-per-cluster", "1", "-n", "2", "hostname"});  // not an MPI program: runs as is
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[c1:1] "), std::string::npos) << r.out;
  expect_nothing_left();
}

// Without gridrun (no job to join) a program with the layer loaded is MPICH's alone:
// MPI_COMM_WORLD is mpiexec's, MPI_THREAD_MULTIPLE is given.
TEST(MpiLayer, WithoutGridrunTheLayerLeavesMpichAsItIs) {
  const std::string out = shell("LD_PRELOAD=" + kLib + "/libgridmpi.so.0 mpiexec -launcher fork -n 3 " + kMpiTests + "/mpi_world 2>&1");
  EXPECT_NE(out.find("world: 3 processes, thread level " + std::to_string(MPI_THREAD_MULTIPLE)), std::string::npos) << out;
  EXPECT_NE(out.find("world: 30 checks passed on 3 processes"), std::string::npos) << out;
  EXPECT_EQ(out.find("not supported"), std::string::npos) << out;
  // The same checks pass as under MPICH alone.
  const std::string plain = shell("mpiexec -launcher fork -n 3 " + kMpiTests + "/mpi_p2p 2>&1");
  const std::string p2p = shell("LD_PRELOAD=" + kLib + "/libgridmpi.so.0 mpiexec -launcher fork -n 3 " + kMpiTests + "/mpi_p2p 2>&1");
  const std::regex passed("p2p: [0-9]+ checks passed on 3 processes\n");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(plain, m, passed)) << plain;
  EXPECT_EQ(p2p, m.str()) << p2p;
}

// The shared libraries export their interfaces and nothing else (runtime/exports/*.map):
// libgridrt what its installed headers declare (GRIDRT_0) and the interface the MPI layer
// and the calibration job call (GRIDRT_LAYER_0), none of its internals, Boost, OpenSSL or
// the standard library's code compiled into it; libgridmpi the MPI API alone.
TEST(MpiLayer, TheLibrariesExportTheirInterfacesAndNothingElse) {
  std::string headers;
  for (const char* h : {"gridrt.hpp", "queue.hpp", "gridrt.h"})
    headers += slurp(std::string(GRIDRT_SOURCE_DIR) + "/runtime/include/gridrt/" + h);
  std::istringstream rt(shell("nm -D --defined-only --with-symbol-versions " + kLib + "/libgridrt.so | c++filt"));
  int public_names = 0, layer_names = 0;
  for (std::string line; std::getline(rt, line);) {
    const std::size_t at = line.rfind("@@");
    if (line.size() < 20 || line[17] == 'A') continue;  // the version nodes themselves
    ASSERT_NE(at, std::string::npos) << "an export without a version: " << line;
    std::string name = line.substr(19, at - 19);
    const std::string version = line.substr(at + 2);
    // The name the header declares: the last component before the arguments, without the
    // prefixes of a class's type information and the ABI tags.
    for (const char* prefix : {"typeinfo name for ", "typeinfo for ", "vtable for "})
      if (name.rfind(prefix, 0) == 0) name = name.substr(std::strlen(prefix));
    if (version == "GRIDRT_LAYER_0") {
      ++layer_names;
      EXPECT_TRUE(std::regex_search(name, std::regex("^gridrt::(detail|rma|fileio|calibration|settings|Topology)::"))) << line;
      continue;
    }
    ASSERT_EQ(version, "GRIDRT_0") << line;
    ++public_names;
    name = std::regex_replace(name.substr(0, name.find('(')), std::regex("\\[abi:[a-z0-9]+\\]"), "");
    if (name.rfind("gridrt::", 0) != 0) {
      EXPECT_EQ(name.rfind("gridrt_", 0), 0u) << "a C symbol outside the C API: " << line;
    } else {
      name = name.substr(name.rfind("::") + 2);
      if (name[0] == '~') name = name.substr(1);  // (a destructor: its class's name)
    }
    EXPECT_TRUE(std::regex_search(headers, std::regex("\\b" + name + "\\b"))) << name << " is exported but no installed header declares it";
  }
  EXPECT_GE(public_names, 100);
  EXPECT_GE(layer_names, 50);
  std::istringstream mpi(shell("nm -D --defined-only " + kLib + "/libgridmpi.so"));
  for (std::string line; std::getline(mpi, line);) {
    if (line.size() > 19 && line[17] != 'A') {
      EXPECT_TRUE(std::regex_search(line.substr(19), std::regex("^(MPI_|MPIX_|MPICHX_|GRIDRT_|mpi_)"))) << "libgridmpi exports " << line;
    }
  }
}

// Every MPI function of the installed MPICH is accounted for (mpi_api.py's coverage table):
// those the layer implements or guards are defined by libgridmpi, the rest are MPICH's own
// and take no handle of the layer. Neither libgridrt nor the layer calls MPI but through
// PMPI: a layer loaded in front of MPICH is never re-entered.
TEST(MpiLayer, EveryFunctionIsAccountedForAndTheRuntimeCallsOnlyPmpi) {
  const std::string table = slurp(GRIDRT_MPI_COVERAGE);
  const std::string defined = shell("nm -D --defined-only " + kLib + "/libgridmpi.so");
  std::istringstream in(table);
  std::map<std::string, int> kinds;
  int functions = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    ++functions;
    const std::string name = line.substr(0, line.find(' '));
    const bool layer = line.find("implemented") != std::string::npos || line.find("fails") != std::string::npos;
    ++kinds[layer ? "layer" : "mpich"];
    if (layer) { EXPECT_NE(defined.find(" T " + name + "\n"), std::string::npos) << name << " is not defined by libgridmpi"; }
  }
  EXPECT_GE(functions, 600);
  EXPECT_GE(kinds["layer"], 250);
  EXPECT_EQ(defined.find(" T PMPI_"), std::string::npos) << "libgridmpi must not define PMPI_ names";
  for (const std::string lib : {"libgridrt.so", "libgridmpi.so"}) {
    const std::string undefined = shell("nm -D --undefined-only " + kLib + "/" + lib);
    // (MPICH's constant objects, MPI_UNWEIGHTED say, are capitals; its functions MPI_Send and the like)
    EXPECT_FALSE(std::regex_search(undefined, std::regex(" MPI_[A-Z][a-z]"))) << lib << " calls MPI_ functions:\n" << undefined;
    EXPECT_NE(undefined.find(" PMPI_"), std::string::npos) << lib;
  }
}
