// Every bad JobProfile, grid description and grid map gets one message naming file:line:column and
// the element; good ones give exactly what they say.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <regex>

#include "common/grid.h"
#include "common/grid_map.h"
#include "common/jobprofile.h"
#include "common/ladder.h"

using namespace gridrt;

namespace {

// A profile with two groups; pieces can be replaced to make each bad case.
std::string profile(const std::string& topology_extra = "",
                    const std::string& count_a = "<processesCount><value>2</value></processesCount>", const std::string& url = "/bin/true",
                    const std::string& exec_extra = "", const std::string& ref_b = "b") {
  return "<grmsJob appId=\"app\">\n"
         " <task taskId=\"t1\">\n"
         "  <resourcesDescription>\n"
         "   <topology>\n"
         "    <group groupId=\"a\"/>\n"
         "    <group groupId=\"b\"/>\n" +
         topology_extra + "    <processes><groupIdReference groupId=\"a\"/>" + count_a +
         "</processes>\n"
         "    <processes><groupIdReference groupId=\"" +
         ref_b +
         "\"/><processesCount><value>1</value></processesCount></processes>\n"
         "   </topology>\n"
         "  </resourcesDescription>\n"
         "  <execution type=\"mpich\">\n"
         "   <executable><execFile><file><url>" +
         url + "</url></file></execFile></executable>\n" + exec_extra +
         "  </execution>\n"
         " </task>\n"
         "</grmsJob>\n";
}

// Parses `text` as job.xml; returns the error message ("" if it parsed).
std::string job_error(const std::string& text, const Variables& vars = {}) {
  try {
    parse_job_profile("job.xml", text, vars);
  } catch (const InputError& e) { return e.what(); }
  return "";
}

void expect_error(const std::string& msg, const std::string& location, const std::string& element, const std::string& what) {
  EXPECT_EQ(msg.rfind(location, 0), 0u) << msg;
  EXPECT_NE(msg.find(element), std::string::npos) << msg;
  EXPECT_NE(msg.find(what), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
}

}  // namespace

TEST(JobProfile, GoodProfileGivesGroupsArgsEnvAndWorkdir) {
  const std::string extra =
      "   <arguments><value>first</value><value>$X</value><value>${X}-3</value><value>echo $$HOME $$$X</value></arguments>\n"
      "   <environment><variable name=\"A\">1</variable><variable name=\"B\">$X</variable></environment>\n"
      "   <workingDirectory>/tmp</workingDirectory>\n"
      "   <processesCount><value>$NPROCS</value></processesCount>\n";
  const JobSpec s =
      parse_job_profile("job.xml", profile("", "<processesCount><value>2</value></processesCount>", "file:///bin/true", extra),
                        {{"X", "two"}, {"NPROCS", "3"}});
  ASSERT_EQ(s.groups.size(), 2u);
  EXPECT_EQ(s.groups[0].name, "a");
  EXPECT_EQ(s.groups[0].count, 2u);
  EXPECT_EQ(s.groups[1].count, 1u);
  EXPECT_EQ(s.executable, "/bin/true");
  EXPECT_EQ(s.args, (std::vector<std::string>{"first", "two", "two-3", "echo $HOME $two"}));
  EXPECT_EQ(s.env, (std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", "two"}}));
  EXPECT_EQ(s.workdir, "/tmp");
  EXPECT_EQ(s.app_id, "app");
  EXPECT_EQ(s.task_id, "t1");
}

// <onClusterLoss>: stop (the default) or continue, and the choice survives the wire.
TEST(JobProfile, OnClusterLossIsStopOrContinue) {
  auto with = [](const std::string& extra) { return profile("", "<processesCount><value>2</value></processesCount>", "/bin/true", extra); };
  EXPECT_FALSE(parse_job_profile("job.xml", with(""), {}).survive_cluster_loss);
  EXPECT_FALSE(parse_job_profile("job.xml", with("<onClusterLoss>stop</onClusterLoss>"), {}).survive_cluster_loss);
  const JobSpec s = parse_job_profile("job.xml", with("<onClusterLoss>$L</onClusterLoss>"), {{"L", "continue"}});
  EXPECT_TRUE(s.survive_cluster_loss);
  EXPECT_TRUE(JobSpec::decode(s.encode()).survive_cluster_loss);
  expect_error(job_error(with("<onClusterLoss>retry</onClusterLoss>")), "job.xml:13:", "<onClusterLoss>",
               "onClusterLoss is 'retry'; expected stop or continue");
}

TEST(JobProfile, MalformedXml) {
  expect_error(job_error("<grmsJob appId=\"x\">\n  <task>\n</grmsJob>\n"), "job.xml:3:", "", "malformed XML");
}

TEST(JobProfile, UndefinedGroupReference) {
  expect_error(job_error(profile("", "<processesCount><value>2</value></processesCount>", "/bin/true", "", "nope")), "job.xml:8:16",
               "<groupIdReference>", "undefined group 'nope'");
}

TEST(JobProfile, GroupWithoutProcesses) {
  expect_error(job_error(profile("    <group groupId=\"lonely\"/>\n")), "job.xml:7:5", "<group>", "group 'lonely' has no processes");
}

TEST(JobProfile, CountMissingZeroNegativeNotANumber) {
  expect_error(job_error(profile("", "")), "job.xml:7:", "<processes>", "missing element <processesCount>");
  expect_error(job_error(profile("", "<processesCount></processesCount>")), "job.xml:7:", "<processesCount>", "missing element <value>");
  expect_error(job_error(profile("", "<processesCount><value>0</value></processesCount>")), "job.xml:7:", "<value>", "at least 1, got 0");
  expect_error(job_error(profile("", "<processesCount><value>-4</value></processesCount>")), "job.xml:7:", "<value>", "got -4");
  expect_error(job_error(profile("", "<processesCount><value>many</value></processesCount>")), "job.xml:7:", "<value>",
               "'many' is not a number");
  expect_error(job_error(profile("", "<processesCount><value>2x</value></processesCount>")), "job.xml:7:", "<value>", "not a number");
}

TEST(JobProfile, UndefinedVariable) {
  const std::string msg = job_error(profile("", "<processesCount><value>$NPROCS</value></processesCount>"));
  expect_error(msg, "job.xml:7:", "(/grmsJob/task/resourcesDescription/topology/processes/processesCount/value)",
               "undefined variable $NPROCS");
  EXPECT_NE(msg.find("-n N"), std::string::npos) << msg;
  expect_error(job_error(profile("", "<processesCount><value>2</value></processesCount>", "$DIR/x")), "job.xml:12:32", "<url>",
               "undefined variable $DIR (give --var DIR=VALUE)");
}

TEST(JobProfile, UnsupportedUrlSchemeSaysWhichAreSupported) {
  const std::string msg = job_error(profile("", "<processesCount><value>2</value></processesCount>", "gsiftp://host.domain.com/~/hello"));
  expect_error(msg, "job.xml:12:32", "<url>", "unsupported URL scheme 'gsiftp'");
  EXPECT_NE(msg.find("file:// URLs of the submitting machine"), std::string::npos) << msg;
  EXPECT_NE(msg.find("http:// and https:// URLs, which each cluster's relay fetches"), std::string::npos) << msg;
}

TEST(JobProfile, ExecutableMissingOrNotExecutable) {
  expect_error(job_error(profile("", "<processesCount><value>2</value></processesCount>", "/no/such/program")), "job.xml:12:32", "<url>",
               "'/no/such/program' does not exist");
  const std::string plain = ::testing::TempDir() + "/gridrt-not-executable";
  std::ofstream(plain) << "data";
  ::chmod(plain.c_str(), 0644);
  expect_error(job_error(profile("", "<processesCount><value>2</value></processesCount>", plain)), "job.xml:12:32", "<url>",
               "is not executable");
}

TEST(JobProfile, ExecutionCountMustMatchTheGroups) {
  expect_error(job_error(profile("", "<processesCount><value>2</value></processesCount>", "/bin/true",
                                 "   <processesCount><value>5</value></processesCount>\n")),
               "job.xml:13:", "<processesCount>", "asks for 5 processes but the groups hold 3");
}

// Groups whose sizes sum past what MPI can number (here past 2^32, where a 32-bit sum
// wraps to a small number) are refused at the topology, and the mapping never sees them.
TEST(JobProfile, GroupSizesThatOverflowAreRefused) {
  std::string groups;
  for (int g = 0; g < 4295; ++g) {
    const std::string id = "x" + std::to_string(g);
    groups += "<group groupId=\"" + id + "\"/><processes><groupIdReference groupId=\"" + id +
              "\"/><processesCount><value>1000000</value></processesCount></processes>\n";
  }
  expect_error(job_error(profile(groups)), "job.xml:4:", "<topology>", "the groups hold 4295000003 processes, more than MPI can number");
}

// A working directory the file system refuses to look at (a name longer than 255 bytes)
// is an input error at its element, not an exception from the file system library.
TEST(JobProfile, UnusableWorkingDirectoryIsAnInputError) {
  const std::string wd = "<workingDirectory>/tmp/" + std::string(300, 'd') + "</workingDirectory>\n";
  expect_error(job_error(profile("", "<processesCount><value>2</value></processesCount>", "/bin/true", wd)),
               "job.xml:13:", "<workingDirectory>", "cannot be used: File name too long");
  expect_error(job_error(profile("", "<processesCount><value>2</value></processesCount>", "/bin/true",
                                 "<workingDirectory>/no/such/dir</workingDirectory>\n")),
               "job.xml:13:", "<workingDirectory>", "working directory '/no/such/dir' does not exist");
}

// The mapping sums slots and processes in 64 bits: too big is refused, never looped on.
TEST(Mapping, CountsBeyond32BitsAreRefused) {
  JobSpec spec;
  spec.groups.assign(4295, {"g", 1'000'000});
  std::vector<ClusterOffer> clusters(2);
  clusters[0].name = "c0";
  clusters[1].name = "c1";
  clusters[0].site = clusters[1].site = "s0";
  clusters[0].slots = clusters[1].slots = 3;
  try {
    map_job(spec, clusters);
    FAIL() << "mapped a job of 4,295,000,000 processes on 6 slots";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the job needs 4295000000 processes but the grid has 6 slots"), std::string::npos) << e.what();
  }
}

TEST(JobProfile, DuplicateGroupAndWrongRoot) {
  expect_error(job_error(profile("    <group groupId=\"a\"/>\n")), "job.xml:7:", "<group>", "declared twice");
  expect_error(job_error("<job/>"), "job.xml:1:1", "<job>", "root element must be <grmsJob>");
}

TEST(JobProfile, ShippedProfilesParse) {
  const Variables vars{{"NPROCS", "4"}, {"GRIDRT_BIN", GRIDRT_BIN_DIR}, {"GRIDRT_EXAMPLES", GRIDRT_BIN_DIR}};
  const JobSpec hello = load_job_profile(GRIDRT_SOURCE_DIR "/jobprofiles/helloworld.xml", vars);
  EXPECT_EQ(hello.total_processes(), 4u);
  const JobSpec two = load_job_profile(GRIDRT_SOURCE_DIR "/jobprofiles/two-groups.xml", vars);
  ASSERT_EQ(two.groups.size(), 2u);
  EXPECT_NE(two.groups[0].count, two.groups[1].count);
}

// ---------------------------------------------------------------- grid description

namespace {
std::string cluster(const std::string& attrs, const std::string& relay = "<relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>",
                    const std::string& launch = "<launch>mpiexec -n {np}</launch>") {
  return "  <cluster " + attrs + ">\n    " + relay + "\n    " + launch + "\n  </cluster>\n";
}
std::string grid_error(const std::string& body) {
  try {
    parse_grid("grid.xml", "<grid>\n" + body + "</grid>\n");
  } catch (const InputError& e) { return e.what(); }
  return "";
}
}  // namespace

TEST(Grid, GoodGridAndDefault) {
  const Grid g =
      parse_grid("grid.xml", "<grid>\n" + cluster("name=\"x\" site=\"s\" slots=\"4\"") + cluster("name=\"y\" slots=\"2\"") + "</grid>");
  ASSERT_EQ(g.clusters.size(), 2u);
  EXPECT_EQ(g.clusters[1].site, "y");  // site defaults to the cluster's name
  EXPECT_EQ(g.total_slots(), 6u);
  EXPECT_EQ(g.clusters[0].launch, (std::vector<std::string>{"mpiexec", "-n", "{np}"}));
  const Grid d = parse_grid("default", default_grid_xml());
  EXPECT_EQ(d.clusters.size(), 2u);
  EXPECT_EQ(d.total_slots(), 6u);
}

TEST(Grid, BadInputs) {
  expect_error(grid_error("<cluster name=\"x\">"), "grid.xml:", "", "malformed XML");
  expect_error(grid_error(""), "grid.xml:1:1", "<grid>", "no <cluster> declared");
  expect_error(grid_error(cluster("slots=\"2\"")), "grid.xml:2:3", "<cluster>", "missing attribute name");
  expect_error(grid_error(cluster("name=\"x\" slots=\"2\"") + cluster("name=\"x\" slots=\"1\"")), "grid.xml:6:3", "<cluster>",
               "'x' is declared twice");
  expect_error(grid_error(cluster("name=\"x\" slots=\"zero\"")), "grid.xml:2:3", "<cluster>", "'zero' is not a number");
  expect_error(grid_error(cluster("name=\"x\" slots=\"0\"")), "grid.xml:2:3", "<cluster>", "at least 1");
  expect_error(grid_error(cluster("name=\"x\" slots=\"1\"", "<relay link=\"nohost\" local=\"127.0.0.1:0\"/>")), "grid.xml:3:5", "<relay>",
               "'nohost' is not HOST:PORT");
  expect_error(grid_error(cluster("name=\"x\" slots=\"1\"", "<relay link=\"127.0.0.1:99999\" local=\"127.0.0.1:0\"/>")), "grid.xml:3:5",
               "<relay>", "not a number from 0 to 65535");
  expect_error(grid_error(cluster("name=\"x\" slots=\"1\"", "<relay local=\"127.0.0.1:0\"/>")), "grid.xml:3:5", "<relay>",
               "missing attribute link");
  expect_error(grid_error(cluster("name=\"x\" slots=\"1\"", "<relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>", "")), "grid.xml:2:3",
               "<cluster>", "missing element <launch>");
  expect_error(
      grid_error(cluster("name=\"x\" slots=\"1\"", "<relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>", "<launch>mpiexec</launch>")),
      "grid.xml:4:5", "<launch>", "must contain {np}");
  expect_error(grid_error(cluster("name=\"x\" slots=\"1\" stageDir=\"/s\" nodeDir=\"tmp\"")), "grid.xml:2:3", "<cluster>",
               "nodeDir 'tmp' must be an absolute path");
  expect_error(grid_error(cluster("name=\"x\" slots=\"1\" nodeDir=\"/tmp\"")), "grid.xml:2:3", "<cluster>", "nodeDir needs a stageDir");
  const std::string relay = "<relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>", launch = "<launch>mpiexec -n {np}</launch>\n    ";
  expect_error(grid_error(cluster("name=\"x\" slots=\"1\"", relay, launch + "<fileSystem name=\"gpfs\" path=\"gpfs\"/>")), "grid.xml:5:5",
               "<fileSystem>", "fileSystem path 'gpfs' must be an absolute path");
  expect_error(grid_error(cluster("name=\"x\" slots=\"1\"", relay, launch + "<fileSystem name=\"a;b\" path=\"/g\"/>")), "grid.xml:5:5",
               "<fileSystem>", "must not contain '=' or ';'");
  expect_error(grid_error(cluster("name=\"x\" slots=\"1\"", relay, launch + "<fileSystem path=\"/g\"/>")), "grid.xml:5:5", "<fileSystem>",
               "missing attribute name");
  expect_error(grid_error(cluster("name=\"x\" slots=\"1\"", relay,
                                  launch + "<fileSystem name=\"g\" path=\"/g\"/><fileSystem name=\"g\" path=\"/h\"/>")),
               "grid.xml:5:", "<fileSystem>", "file system 'g' is declared twice in cluster 'x'");
}

// Clusters say which file systems their nodes mount, each at its own path; the embedded
// grid's clusters all share this machine's.
TEST(Grid, FileSystemsTheClustersMount) {
  const std::string relay = "<relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>", launch = "<launch>mpiexec -n {np}</launch>";
  const Grid g = parse_grid(
      "grid.xml", "<grid>\n" +
                      cluster("name=\"a\" slots=\"1\"", relay,
                              launch + "<fileSystem name=\"gpfs\" path=\"/gpfs/\"/><fileSystem name=\"home\" path=\"/home\"/>") +
                      cluster("name=\"b\" slots=\"1\"", relay, launch + "<fileSystem name=\"gpfs\" path=\"/mnt//gpfs\"/>") + "</grid>");
  ASSERT_EQ(g.clusters[0].file_systems.size(), 2u);
  EXPECT_EQ(g.clusters[0].file_systems[0].name, "gpfs");
  EXPECT_EQ(g.clusters[0].file_systems[0].path, "/gpfs");
  EXPECT_EQ(g.clusters[0].file_systems[1].path, "/home");
  ASSERT_EQ(g.clusters[1].file_systems.size(), 1u);
  EXPECT_EQ(g.clusters[1].file_systems[0].path, "/mnt/gpfs");
  for (const auto& c : parse_grid("default", default_grid_xml(3)).clusters) {
    ASSERT_EQ(c.file_systems.size(), 1u) << c.name;
    EXPECT_EQ(c.file_systems[0].name, "this-machine");
    EXPECT_EQ(c.file_systems[0].path, "/");
  }
}

// ---------------------------------------------------------------- mapping

namespace {
JobSpec job(std::vector<GroupSpec> groups) {
  JobSpec s;
  s.groups = std::move(groups);
  return s;
}
std::vector<ClusterOffer> offers(std::vector<std::uint32_t> slots) {
  std::vector<ClusterOffer> o;
  for (std::size_t i = 0; i < slots.size(); ++i)
    o.push_back({"c" + std::to_string(i), "s" + std::to_string(i / 2), slots[i], "h", 1, true, true, false, ""});
  return o;
}
}  // namespace

TEST(Mapping, GroupsStayWholeAndSpreadOverClusters) {
  const Topology t = map_job(job({{"masters", 2}, {"workers", 1}}), offers({3, 3}));
  ASSERT_EQ(t.clusters.size(), 2u);
  EXPECT_EQ(t.clusters[0].name, "c0");
  EXPECT_EQ(t.clusters[0].count, 2u);
  EXPECT_EQ(t.clusters[1].count, 1u);
  EXPECT_EQ(t.rank_group, (std::vector<std::uint32_t>{0, 0, 1}));
  EXPECT_EQ(t.sites.size(), 1u);  // c0 and c1 share site s0
}

TEST(Mapping, LargeGroupSpansClustersWithContiguousRanksInGroupOrder) {
  const Topology t = map_job(job({{"a", 4}, {"b", 1}}), offers({3, 3}));
  ASSERT_EQ(t.clusters.size(), 2u);
  EXPECT_EQ(t.clusters[0].count, 3u);
  EXPECT_EQ(t.clusters[1].first_rank, 3u);
  // c1 holds a's 4th process and b: group order inside the cluster.
  EXPECT_EQ(t.rank_group, (std::vector<std::uint32_t>{0, 0, 0, 0, 1}));
  EXPECT_NE(describe_mapping(t).find("cluster c1 (site s0): rank 3 (1 process)"), std::string::npos) << describe_mapping(t);
}

TEST(Mapping, UnusedClustersAreLeftOutAndTooFewSlotsFail) {
  EXPECT_EQ(map_job(job({{"a", 2}}), offers({3, 3})).clusters.size(), 1u);
  try {
    map_job(job({{"a", 5}, {"b", 2}}), offers({3, 3}));
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 7 processes but the grid has 6 slots (c0: 3, c1: 3)"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- network policy and links

TEST(Grid, NetworkPolicy) {
  const Grid g = parse_grid("grid.xml", "<grid>\n" +
                                            cluster("name=\"a\" slots=\"1\"",
                                                    "<relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>\n"
                                                    "    <network frontend=\"unreachable\" nodes=\"private\" inbound=\"no\"/>") +
                                            cluster("name=\"b\" slots=\"1\"",
                                                    "<relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>\n"
                                                    "    <network ports=\"40000-40100\"/>") +
                                            "</grid>");
  EXPECT_FALSE(g.clusters[0].network.frontend_reachable);
  EXPECT_FALSE(g.clusters[0].network.nodes_public);
  EXPECT_FALSE(g.clusters[0].network.inbound);
  EXPECT_TRUE(g.clusters[1].network.frontend_reachable);
  EXPECT_EQ(g.clusters[1].network.port_min, 40000);
  EXPECT_EQ(g.clusters[1].network.port_max, 40100);
  auto bad = [](const std::string& attrs) {
    return grid_error(
        cluster("name=\"x\" slots=\"1\"", "<relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>\n    <network " + attrs + "/>"));
  };
  expect_error(bad("frontend=\"maybe\""), "grid.xml:4:5", "<network>", "frontend='maybe' must be 'reachable' or 'unreachable'");
  expect_error(bad("inbound=\"1\""), "grid.xml:4:5", "<network>", "inbound='1' must be 'yes' or 'no'");
  expect_error(bad("ports=\"9-3\""), "grid.xml:4:5", "<network>", "ports='9-3' must be a range LOW-HIGH");
  expect_error(bad("ports=\"0-70000\""), "grid.xml:4:5", "<network>", "must be a range");
}

TEST(Links, DialerFollowsReachabilityForEveryCombination) {
  for (int ra = 0; ra < 2; ++ra)
    for (int rb = 0; rb < 2; ++rb) {
      Topology t;
      t.clusters = {{"beta", 0, 0, 1, "h", 1, ra == 1, true, false, ""}, {"alpha", 0, 1, 1, "h", 2, rb == 1, true, false, ""}};
      const int d = relay_link_dialer(t, 0, 1);
      EXPECT_EQ(d, relay_link_dialer(t, 1, 0)) << "both sides must agree";
      if (ra && rb) {
        EXPECT_EQ(d, 1);  // both reachable: "alpha" sorts first and dials
      } else if (rb) {
        EXPECT_EQ(d, 0);  // only alpha accepts: beta dials
      } else if (ra) {
        EXPECT_EQ(d, 1);  // only beta accepts: alpha dials (reverse connection)
      } else {
        EXPECT_EQ(d, -1);
        EXPECT_NE(unlinkable_pairs(t).find("the relays of beta and alpha both accept no connection"), std::string::npos);
      }
      if (ra || rb) { EXPECT_TRUE(unlinkable_pairs(t).empty()); }
    }
}

TEST(Links, ExplainNamesTheDialerAndWhy) {
  Topology t;
  t.clusters = {{"a", 0, 0, 1, "h", 1, true, true, false, ""},
                {"b", 0, 1, 1, "h", 2, true, true, false, ""},
                {"c", 0, 2, 1, "h", 3, false, true, false, ""}};
  const std::string e = explain_links(t);
  EXPECT_NE(e.find("a <-> b: relayed (neither side's processes can open a connection to the other's) through the relays' link, "
                   "dialled by a (both relays accept connections; the first by name dials)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("a <-> c: relayed (neither side's processes can open a connection to the other's) through the relays' link, "
                   "dialled by c (a accepts connections, c does not)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("b <-> c: relayed (neither side's processes can open a connection to the other's) through the relays' link, "
                   "dialled by c (b accepts connections, c does not)"),
            std::string::npos)
      << e;
}

TEST(Ladder, PlanForEveryCombinationOfPolicy) {
  // Two clusters of one rank each; every combination of "accepts" (endpoint) and
  // "outbound" on both sides.
  for (int mask = 0; mask < 16; ++mask) {
    const bool acc0 = mask & 1, out0 = mask & 2, acc1 = mask & 4, out1 = mask & 8;
    Topology t;
    t.groups = {"g"};
    t.sites = {"s"};
    t.clusters = {{"x", 0, 0, 1, "h", 1, true, out0, acc0, ""}, {"y", 0, 1, 1, "h", 2, true, out1, acc1, ""}};
    t.rank_group = {0, 0};
    t.rank_endpoint = {acc0 ? "10.0.0.1:7000" : "", acc1 ? "10.0.0.2:7000" : ""};
    const PairPlan p = plan_pair(t, 0, 1), q = plan_pair(t, 1, 0);
    EXPECT_EQ(p.technique, q.technique) << mask;
    EXPECT_EQ(p.dialer, q.dialer) << mask;
    const bool zero_dials = acc1 && out0, one_dials = acc0 && out1;
    if (zero_dials) {
      EXPECT_EQ(p.technique, Technique::kDirect);
      EXPECT_EQ(p.dialer, 0) << mask;  // the lower rank when both can
    } else if (one_dials) {
      EXPECT_EQ(p.technique, Technique::kDirect);
      EXPECT_EQ(p.dialer, 1) << mask;
    } else {
      EXPECT_EQ(p.technique, Technique::kRelayed) << mask;
    }
  }
  Topology same;
  same.clusters = {{"x", 0, 0, 2, "h", 1, true, true, true, ""}};
  same.rank_group = {0, 0};
  EXPECT_EQ(plan_pair(same, 0, 1).technique, Technique::kLocal);
}

// The grid map: certificate names (quoted, with their spaces) to local accounts.
TEST(GridMap, MapsQuotedCertificateNamesToAccounts) {
  const GridMap map =
      GridMap::parse("# who runs as whom\n\n  \"user alice\"\talice \r\n\"user bob smith\" bob\n\"user carl\" alice\n", "map");
  EXPECT_EQ(map.size(), 3u);
  EXPECT_EQ(map.account_of("user alice"), "alice");
  EXPECT_EQ(map.account_of("user bob smith"), "bob");
  EXPECT_EQ(map.account_of("user carl"), "alice");
  EXPECT_EQ(map.account_of("user bob"), std::nullopt);
  EXPECT_EQ(map.account_of("alice"), std::nullopt);
}

TEST(GridMap, EveryMalformedLineIsNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\"user a\" a\nuser b b\n", "map:2: expected a certificate name in double quotes"},
      {"\"user a a\n", "map:1: the certificate name's closing quote is missing"},
      {"\n\n\"user a\"\n", "map:3: no local account after \"user a\""},
      {"\"user a\" a b\n", "map:1: one local account per certificate name; unexpected 'b'"},
      {"\"\" a\n", "map:1: empty certificate name"},
      {"\"user a\" a\n\"user a\" b\n", "map:2: \"user a\" is mapped twice"},
  };
  for (const auto& [text, error] : cases) {
    try {
      GridMap::parse(text, "map");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) { EXPECT_EQ(std::string(e.what()).rfind(error, 0), 0u) << e.what(); }
  }
  try {
    GridMap::load("/nonexistent/grid-mapfile");
    ADD_FAILURE() << "a missing file was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/grid-mapfile: cannot read the grid map file"), std::string::npos) << e.what();
  }
}

TEST(GridMap, NoGridUserRunsAsRootOrAsAnAccountThatIsNot) {
  try {
    local_account("root");
    ADD_FAILURE() << "root's account was given";
  } catch (const std::runtime_error& e) { EXPECT_NE(std::string(e.what()).find("is root's (uid 0)"), std::string::npos) << e.what(); }
  try {
    local_account("gridrt-no-such-account");
    ADD_FAILURE() << "an account that does not exist was given";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no local account 'gridrt-no-such-account'"), std::string::npos) << e.what();
  }
  const LocalAccount nobody = local_account("nobody");  // in every Debian system
  EXPECT_NE(nobody.uid, 0u);
  EXPECT_FALSE(nobody.groups.empty());
}
