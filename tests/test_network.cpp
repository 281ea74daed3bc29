// A real three-site test network in network namespaces: a "wan" namespace routes
// between three site front-ends, each its own namespace with its own iptables rules:
//   site a: public, behind a firewall that admits only its relay's port range;
//   site b: public front-end, nodes would be private behind NAT (MASQUERADE) on it;
//   site c: accepts no inbound connection at all.
// The broker runs in "wan", one relay per site in its namespace, and their MPICH jobs
// inside those namespaces. Only addresses inside these namespaces are used; everything is
// torn down afterwards, also when a test fails. Without root or without `ip netns` and
// iptables the tests are skipped, saying why.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/ssl.hpp>  // Asio's own TLS: an independent test client
#include <chrono>
#include <regex>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/link.h"
#include "common/messages.h"
#include "common/process.h"
#include "common/tls.h"
#include "run_support.h"

using namespace std::chrono_literals;

namespace {

int sh(const std::string& cmd) {
  const int st = std::system((cmd + " >/dev/null 2>&1").c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

struct Site {
  std::string name;     // cluster name
  std::string ns;       // its front-end's namespace (where the relay runs)
  std::string addr;     // the front-end's address on the wan side
  std::string gateway;  // the wan namespace's address towards it
  int link_port;        // its relay's link port
  std::string node_ns;  // the site's compute node (where the job's processes run)
  std::string inside;   // the front-end's address on the site's own network
  std::string node;     // the node's address
};

class ThreeSites : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = netns_unusable(); !why.empty()) GTEST_SKIP() << "the three-site network cannot be built: " << why;
    if (sh("command -v iptables") != 0) GTEST_SKIP() << "iptables is not installed (scripts/install-deps.sh installs it)";
    prefix_ = "grt" + std::to_string(::getpid() % 100000) + "-";
    wan_ = prefix_ + "wan";
    sites_ = {{"a", prefix_ + "a", "10.231.1.2", "10.231.1.1", 7105, prefix_ + "a1", "10.232.1.1", "10.232.1.2"},
              {"b", prefix_ + "b", "10.231.2.2", "10.231.2.1", 7200, prefix_ + "b1", "10.232.2.1", "10.232.2.2"},
              {"c", prefix_ + "c", "10.231.3.2", "10.231.3.1", 7300, prefix_ + "c1", "10.232.3.1", "10.232.3.2"}};
    dir_ = ::testing::TempDir() + "/" + prefix_ + "lab";
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Peers that vanish without a word are noticed after 6 s here (tune_socket), not 30.
    ::setenv("GRIDRT_DEAD_PEER_SECONDS", "6", 1);
    build_network();
    make_credentials();
    write_grid();
    start_daemons();
  }

  void TearDown() override {
    for (pid_t p : daemons_) ::kill(p, SIGTERM);
    for (pid_t p : daemons_) ::waitpid(p, nullptr, 0);
    daemons_.clear();
    for (const auto& s : sites_) {
      sh("ip netns del " + s.node_ns);
      sh("ip netns del " + s.ns);
    }
    if (!wan_.empty()) sh("ip netns del " + wan_);
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void run_or_fail(const std::string& cmd) { ASSERT_EQ(sh(cmd), 0) << cmd; }

  void build_network() {
    run_or_fail("ip netns add " + wan_);
    run_or_fail("ip netns exec " + wan_ + " ip link set lo up");
    run_or_fail("ip netns exec " + wan_ + " sysctl -w net.ipv4.ip_forward=1");
    for (std::size_t i = 0; i < sites_.size(); ++i) {
      const Site& s = sites_[i];
      const std::string in = "w" + std::to_string(i), out = "s" + std::to_string(i);
      run_or_fail("ip netns add " + s.ns);
      run_or_fail("ip netns exec " + s.ns + " ip link set lo up");
      run_or_fail("ip link add " + prefix_ + in + " netns " + wan_ + " type veth peer name " + prefix_ + out + " netns " + s.ns);
      run_or_fail("ip netns exec " + wan_ + " ip addr add " + s.gateway + "/24 dev " + prefix_ + in);
      run_or_fail("ip netns exec " + wan_ + " ip link set " + prefix_ + in + " up");
      run_or_fail("ip netns exec " + s.ns + " ip addr add " + s.addr + "/24 dev " + prefix_ + out);
      run_or_fail("ip netns exec " + s.ns + " ip link set " + prefix_ + out + " up");
      run_or_fail("ip netns exec " + s.ns + " ip route add default via " + s.gateway);
    }
    // Each site's compute node sits on the site's own network behind its front-end.
    for (std::size_t i = 0; i < sites_.size(); ++i) {
      const Site& s = sites_[i];
      const std::string fe = prefix_ + "f" + std::to_string(i), nd = prefix_ + "n" + std::to_string(i);
      run_or_fail("ip netns add " + s.node_ns);
      run_or_fail("ip netns exec " + s.node_ns + " ip link set lo up");
      run_or_fail("ip link add " + fe + " netns " + s.ns + " type veth peer name " + nd + " netns " + s.node_ns);
      run_or_fail("ip netns exec " + s.ns + " ip addr add " + s.inside + "/24 dev " + fe);
      run_or_fail("ip netns exec " + s.ns + " ip link set " + fe + " up");
      run_or_fail("ip netns exec " + s.ns + " sysctl -w net.ipv4.ip_forward=1");
      run_or_fail("ip netns exec " + s.node_ns + " ip addr add " + s.node + "/24 dev " + nd);
      run_or_fail("ip netns exec " + s.node_ns + " ip link set " + nd + " up");
      run_or_fail("ip netns exec " + s.node_ns + " ip route add default via " + s.inside);
    }
    // Site a: public node addresses (the wan routes to them) behind a firewall on the
    // front-end that admits only a port range from outside, to the relay and to the node.
    const std::string wan_if_a = prefix_ + "s0";
    run_or_fail("ip netns exec " + wan_ + " ip route add 10.232.1.0/24 via " + sites_[0].addr);
    for (const char* chain : {"INPUT", "FORWARD"}) {
      const std::string a = "ip netns exec " + sites_[0].ns + " iptables -A " + chain + " -i " + wan_if_a + " ";
      run_or_fail(a + "-m state --state ESTABLISHED,RELATED -j ACCEPT");
      run_or_fail(a + "-p tcp --dport 7100:7110 -j ACCEPT");
      run_or_fail(a + "-j DROP");
    }
    // Site b: private nodes; their traffic leaves masqueraded as the front-end (NAT).
    run_or_fail("ip netns exec " + sites_[1].ns + " iptables -t nat -A POSTROUTING -s 10.232.2.0/24 -o " + prefix_ + "s1 -j MASQUERADE");
    // Site c: private nodes, and no inbound connection from outside at all.
    for (const char* chain : {"INPUT", "FORWARD"}) {
      const std::string c = "ip netns exec " + sites_[2].ns + " iptables -A " + chain + " -i " + prefix_ + "s2 ";
      run_or_fail(c + "-m state --state ESTABLISHED,RELATED -j ACCEPT");
      run_or_fail(c + "-j DROP");
    }
    // (and no NAT: c's nodes cannot reach other sites at all, only their front-end)
  }

  void make_credentials() {
    const std::string ca = dir_ + "/ca";
    run_or_fail(kBin + "/gridrun ca init " + ca + " 'lab CA'");
    run_or_fail(kBin + "/gridrun ca issue " + ca + " broker");
    run_or_fail(kBin + "/gridrun ca issue " + ca + " user lab");
    for (const auto& s : sites_) run_or_fail(kBin + "/gridrun ca issue " + ca + " relay " + s.name);
    run_or_fail(kBin + "/gridrun ca issue " + ca + " relay d");
    // Another grid's CA, for the strangers.
    run_or_fail(kBin + "/gridrun ca init " + dir_ + "/other 'other CA'");
    run_or_fail(kBin + "/gridrun ca issue " + dir_ + "/other user mallory");
    run_or_fail(kBin + "/gridrun ca issue " + dir_ + "/other relay b");
  }

  void write_grid() {
    if (node_disks_) {
      // A node with a disk of its own: a mount namespace where every site's stageDir is an
      // empty file system, and so is dir_/nodes (the node's disk, where its nodeDir is).
      fs::create_directories(dir_ + "/nodes");
      std::ofstream script(dir_ + "/node-disk");
      script << "#!/bin/sh\nexec unshare --mount --propagation private sh -c 'for d in";
      for (const auto& s : sites_) script << " " << dir_ << "/stage-" << s.name;
      script << " " << dir_
             << "/nodes; do mkdir -p \"$d\" && mount -t tmpfs gridrt-node \"$d\" || exit 1; done; exec \"$0\" \"$@\"' \"$@\"\n";
      script.close();
      fs::permissions(dir_ + "/node-disk", fs::perms::owner_all);
    }
    std::ofstream g(dir_ + "/grid.xml");
    g << "<grid" << (link_grace_.empty() ? "" : " linkGrace=\"" + link_grace_ + "\"") << ">\n";
    const std::string c_frontend = misdeclare_c_ ? "reachable" : "unreachable";
    const std::string network[] = {"<network frontend=\"reachable\" nodes=\"public\" inbound=\"yes\" ports=\"7100-7110\"/>",
                                   "<network frontend=\"reachable\" nodes=\"private\" inbound=\"no\" outbound=\"yes\"/>",
                                   "<network frontend=\"" + c_frontend + "\" nodes=\"private\" inbound=\"no\" outbound=\"no\"/>"};
    for (std::size_t i = 0; i < sites_.size(); ++i) {
      const Site& s = sites_[i];
      g << "  <cluster name=\"" << s.name << "\" site=\"site-" << s.name << "\" slots=\"1\""
        << (staged_ ? " stageDir=\"" + dir_ + "/stage-" + s.name + "\"" : "")
        << (node_disks_ ? " nodeDir=\"" + dir_ + "/nodes/" + s.name + "\"" : "") << ">\n"
        << "    <relay link=\"" << s.addr << ":" << s.link_port << "\" local=\"" << s.inside << ":" << s.link_port + 50 << "\"/>\n"
        << "    " << network[i] << "\n"
        << "    <launch>ip netns exec " << s.node_ns << (node_disks_ ? " " + dir_ + "/node-disk" : "")
        << " mpiexec -launcher fork -n {np}</launch>\n  </cluster>\n";
    }
    // A cluster with no relay running: its (valid) certificate is what a forger holds.
    g << "  <cluster name=\"d\" slots=\"1\"><relay link=\"127.0.0.1:0\" local=\"127.0.0.1:0\"/>"
         "<launch>mpiexec -n {np}</launch></cluster>\n";
    g << "</grid>\n";
  }

  // `ip netns exec NS program args...` as a child of the test, output to dir_/name.log.
  pid_t start_in(const std::string& ns, const std::string& name, std::vector<std::string> argv) { return start_in(ns, name, {}, argv); }
  // The same, `argv` run by the command `wrapper` (which ends by exec'ing it).
  pid_t start_in(const std::string& ns, const std::string& name, const std::vector<std::string>& wrapper, std::vector<std::string> argv) {
    argv.insert(argv.begin(), wrapper.begin(), wrapper.end());
    argv.insert(argv.begin(), {"ip", "netns", "exec", ns});
    const pid_t pid = ::fork();
    if (pid == 0) {
      std::freopen((dir_ + "/" + name + ".log").c_str(), "w", stdout);
      ::dup2(1, 2);  // one file, one offset: stdout and stderr interleaved as they come
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      ::execvp("ip", args.data());
      ::_exit(127);
    }
    return pid;
  }

  void start_daemons() {
    const std::string ca = dir_ + "/ca";
    daemons_.push_back(start_in(wan_, "broker",
                                {kBin + "/gridbroker", "--grid", dir_ + "/grid.xml", "--listen", "0.0.0.0:7000", "--cert",
                                 ca + "/broker.pem", "--key", ca + "/broker.key", "--ca", ca + "/ca.pem", "--journal", dir_ + "/journal"}));
    // Sites that do not see the submitting side's files: each relay (and all it starts) in a
    // mount namespace of its own where dir_/submit is an empty file system.
    std::vector<std::string> hide;
    if (staged_) {
      fs::create_directories(dir_ + "/submit");
      hide = {"unshare",
              "--mount",
              "--propagation",
              "private",
              "sh",
              "-c",
              "mount -t tmpfs -o size=1m gridrt-hidden \"$0\" && exec \"$@\"",
              dir_ + "/submit"};
    }
    for (const auto& s : sites_)
      daemons_.push_back(
          start_in(s.ns, "relay-" + s.name, hide,
                   {kBin + "/gridrelay", "--grid", dir_ + "/grid.xml", "--cluster", s.name, "--broker", s.gateway + ":7000", "--cert",
                    ca + "/relay-" + s.name + ".pem", "--key", ca + "/relay-" + s.name + ".key", "--ca", ca + "/ca.pem"}));
    // Registration: the broker's journal has nothing to say yet, so ask it for a dry run
    // until all three clusters are there.
    for (int i = 0; i < 100; ++i) {
      if (gridrun({"--dry-run", kSrc + "/jobprofiles/three-sites.xml"}).status == 0) return;
      std::this_thread::sleep_for(100ms);
    }
    FAIL() << "the relays did not register:\n" << slurp(dir_ + "/broker.log") << slurp(dir_ + "/relay-a.log");
  }

  struct Outcome {
    int status;
    std::string out;
  };
  // gridrun in the wan namespace, submitting to the broker as `user` (a user-NAME.pem in
  // `ca_dir`); started in the background, logging to dir_/log.log.
  pid_t start_gridrun(std::vector<std::string> args, const std::string& log = "gridrun", const std::string& user = "user-lab",
                      const std::string& ca_dir = "ca") {
    const std::string ca = dir_ + "/" + ca_dir;
    std::vector<std::string> argv = {kBin + "/gridrun",        "--broker", "127.0.0.1:7000",   "--cert", ca + "/" + user + ".pem", "--key",
                                     ca + "/" + user + ".key", "--ca",     dir_ + "/ca/ca.pem"};
    argv.insert(argv.end(), args.begin(), args.end());
    return start_in(wan_, log, argv);
  }
  Outcome finish(pid_t pid, const std::string& log = "gridrun") {
    int st = 0;
    ::waitpid(pid, &st, 0);
    return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), slurp(dir_ + "/" + log + ".log")};
  }
  Outcome gridrun(std::vector<std::string> args) { return finish(start_gridrun(std::move(args))); }

  // A job of the three sites that keeps ping-ponging for about `seconds`; returns once its
  // first round went through every site. Its processes log at info level (which paths they
  // took, and why), for the tests' failure messages.
  pid_t start_long_job(int seconds) {
    std::string text = slurp(kSrc + "/jobprofiles/three-sites.xml");
    const std::string args = "<value>100000</value>", end = "</arguments>";
    text.replace(
        text.find(args), args.size(),
        args + "<value>--rounds</value><value>" + std::to_string(seconds * 10) + "</value><value>--round-ms</value><value>100</value>");
    text.replace(text.find(end), end.size(), end + "<environment><variable name=\"GRIDRT_LOG\">info</variable></environment>");
    std::ofstream(dir_ + "/long.xml") << text;
    const pid_t pid = start_gridrun({dir_ + "/long.xml"}, "long");
    for (int i = 0; i < 300 && slurp(dir_ + "/long.log").find("(first round)") == std::string::npos; ++i) std::this_thread::sleep_for(50ms);
    return pid;
  }

  // An unmodified MPI job of the three sites (tests/mpi/stream.c) streaming checksummed
  // messages between every two processes both ways, with an all-reduce and a broadcast each
  // round: `rounds` of 64 KiB messages, 100 ms apart; returns once its first round is done.
  pid_t start_stream_job(int rounds) {
    std::string text = slurp(kSrc + "/jobprofiles/three-sites.xml");
    const std::string program = "$GRIDRT_EXAMPLES/hello",
                      args = "<arguments><value>--pingpong-bytes</value><value>100000</value></arguments>";
    text.replace(text.find(program), program.size(), std::string(GRIDRT_MPI_TESTS_DIR) + "/mpi_stream");
    text.replace(text.find(args), args.size(),
                 "<arguments><value>" + std::to_string(rounds) + "</value><value>65536</value><value>100</value></arguments>");
    std::ofstream(dir_ + "/stream.xml") << text;
    fs::remove(dir_ + "/stream.log");  // a job before this one's: its first round is not this one's
    const pid_t pid = start_gridrun({dir_ + "/stream.xml"}, "stream");
    for (int i = 0; i < 300 && slurp(dir_ + "/stream.log").find("round 0") == std::string::npos; ++i) std::this_thread::sleep_for(50ms);
    EXPECT_NE(slurp(dir_ + "/stream.log").find("round 0"), std::string::npos) << "the stream did not get going:\n"
                                                                              << slurp(dir_ + "/stream.log");
    return pid;
  }

  // Cuts the relay link between sites c and a (c dialled a's relay) for `d`: what a's relay
  // sends c is dropped, or answered with a reset (`how`: an iptables target).
  void cut_link_for(const std::string& how, std::chrono::milliseconds d) {
    const std::string rule = "INPUT -p tcp --sport " + std::to_string(sites_[0].link_port) + " -j " + how;
    run_or_fail("ip netns exec " + sites_[2].ns + " iptables -I " + rule);
    std::this_thread::sleep_for(d);
    run_or_fail("ip netns exec " + sites_[2].ns + " iptables -D " + rule);
  }

  // A task queue over the three sites (tests/queue_check, 600 tasks of up to 20 ms) that
  // goes on without a lost cluster; returns once site c's process has run 5 tasks.
  pid_t start_queue_job() {
    std::string text = slurp(kSrc + "/jobprofiles/three-sites.xml");
    const std::string program = "$GRIDRT_EXAMPLES/hello",
                      args = "<arguments><value>--pingpong-bytes</value><value>100000</value></arguments>";
    text.replace(text.find(program), program.size(), kTestBin + "/queue_check");
    text.replace(text.find(args), args.size(),
                 "<arguments><value>--tasks</value><value>600</value><value>--max-us</value><value>20000</value>"
                 "<value>--progress</value><value>5</value></arguments><onClusterLoss>continue</onClusterLoss>");
    std::ofstream(dir_ + "/queue.xml") << text;
    const pid_t pid = start_gridrun({dir_ + "/queue.xml"}, "queue");
    for (int i = 0; i < 300 && slurp(dir_ + "/queue.log").find("rank 2 has run 5 tasks") == std::string::npos; ++i)
      std::this_thread::sleep_for(50ms);
    EXPECT_NE(slurp(dir_ + "/queue.log").find("rank 2 has run 5 tasks"), std::string::npos) << "the queue did not get going:\n"
                                                                                            << slurp(dir_ + "/queue.log");
    return pid;
  }

  // The queue job ended well without site `lost` (gridrun said why: `why`), every result
  // checked by its super-master, and nothing of the lost site's part is left running.
  void expect_went_on_without(pid_t job, std::size_t lost, const std::string& why) {
    const Outcome r = finish(job, "queue");
    const std::string& name = sites_[lost].name;
    EXPECT_EQ(r.status, 0) << r.out << "broker:\n" << slurp(dir_ + "/broker.log");
    EXPECT_NE(r.out.find("queue checks passed: 600 tasks"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(", lost " + name + "\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("gridrun: lost cluster " + name + ": " + why), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("finished without the cluster it lost"), std::string::npos) << r.out;
    EXPECT_TRUE(namespace_empties(sites_[lost].node_ns, std::chrono::seconds(15))) << "site " << name << "'s processes are left";
  }

  // Whether every process in namespace `ns` is gone within `wait`.
  bool namespace_empties(const std::string& ns, std::chrono::seconds wait) {
    const auto until = std::chrono::steady_clock::now() + wait;
    do {
      FILE* p = ::popen(("ip netns pids " + ns).c_str(), "r");
      char buf[64];
      const bool any = p && std::fgets(buf, sizeof buf, p) != nullptr;
      if (p) ::pclose(p);
      if (!any) return true;
      std::this_thread::sleep_for(100ms);
    } while (std::chrono::steady_clock::now() < until);
    return false;
  }

  // Runs `body` in a child process inside namespace `ns`; returns its exit status.
  int in_netns(const std::string& ns, const std::function<int()>& body) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY);
      if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) ::_exit(90);
      ::_exit(body());
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

  // A process in namespace `ns` accepting (and dropping) TCP connections on `port`.
  pid_t serve_in(const std::string& ns, int port) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY);
      if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) ::_exit(90);
      gridrt::asio::io_context io;
      gridrt::tcp::acceptor acc(io, gridrt::tcp::endpoint(gridrt::tcp::v4(), static_cast<unsigned short>(port)));
      for (;;) acc.accept();
    }
    return pid;
  }

  // Whether a TCP connection from namespace `ns` to addr:port succeeds within 2 s.
  bool can_connect(const std::string& ns, const std::string& addr, int port) {
    return sh("ip netns exec " + ns + " timeout 2 bash -c 'exec 3<>/dev/tcp/" + addr + "/" + std::to_string(port) + "'") == 0;
  }

  bool misdeclare_c_ = false;  // declare site c reachable, which it is not
  bool staged_ = false;        // each cluster has a stageDir, and its relay does not see dir_/submit
  bool node_disks_ = false;    // and a nodeDir: its node sees neither the stageDir nor the others' disks
  // How long a broken relay link may stay down: short here, where links are cut for good
  // (empty: the relays' default, 60 s).
  std::string link_grace_ = "4";
  std::string prefix_, wan_, dir_;
  std::vector<Site> sites_;
  std::vector<pid_t> daemons_;
};

}  // namespace

TEST_F(ThreeSites, FirewallsAndNatAreReal) {
  // Front-ends.
  EXPECT_TRUE(can_connect(wan_, sites_[0].addr, sites_[0].link_port)) << "a admits its relay's port range";
  EXPECT_FALSE(can_connect(wan_, sites_[0].addr, 22)) << "a's firewall drops other ports";
  EXPECT_TRUE(can_connect(wan_, sites_[1].addr, sites_[1].link_port));
  EXPECT_FALSE(can_connect(wan_, sites_[2].addr, sites_[2].link_port)) << "c accepts no inbound connection";
  // Nodes: a's are public but only its port range gets through; b's and c's are private.
  const pid_t in_range = serve_in(sites_[0].node_ns, 7101), out_of_range = serve_in(sites_[0].node_ns, 7150),
              private_b = serve_in(sites_[1].node_ns, 7101);
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(can_connect(wan_, sites_[0].node, 7101)) << "a's node is reachable inside the port range";
  EXPECT_FALSE(can_connect(wan_, sites_[0].node, 7150)) << "a's firewall drops the node's other ports";
  EXPECT_FALSE(can_connect(wan_, sites_[1].node, 7101)) << "b's node has a private address";
  for (pid_t p : {in_range, out_of_range, private_b}) {
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
  // b's node dials out through NAT; c's front-end dials out, its node cannot.
  EXPECT_TRUE(can_connect(sites_[1].node_ns, sites_[0].addr, sites_[0].link_port)) << "b's node dials out through NAT";
  EXPECT_FALSE(can_connect(sites_[2].node_ns, sites_[0].addr, sites_[0].link_port)) << "c's node cannot reach other sites";
  EXPECT_TRUE(can_connect(sites_[2].ns, sites_[0].addr, sites_[0].link_port)) << "c's front-end dials out";
}

TEST_F(ThreeSites, JobSpansAllThreeSitesWithTheExpectedTechniques) {
  const Outcome r = gridrun({"--explain", kSrc + "/jobprofiles/three-sites.xml"});
  ASSERT_EQ(r.status, 0) << r.out << "\nbroker:\n" << slurp(dir_ + "/broker.log") << "relay c:\n" << slurp(dir_ + "/relay-c.log");
  // The ladder: b's processes dial a's (public, in a's port range) through b's NAT; when a
  // speaks first it asks b to call back (a reverse connection). c's cannot reach anyone.
  EXPECT_NE(r.out.find("a <-> b: direct, dialled by b's processes (a's processes accept connections (10.232.1.2:71"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("b's do not; when a speaks first it asks b to connect back)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a <-> c: relayed (neither side's processes can open a connection to the other's) through the relays' link, dialled "
                       "by c (a accepts connections, c does not)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("b <-> c: relayed (neither side's processes can open a connection to the other's) through the relays' link, dialled "
                       "by c (b accepts connections, c does not)"),
            std::string::npos)
      << r.out;
  for (const char* line : {"[a:0] rank=0 size=3 group=east color=0 cluster=a", "[b:1] rank=1 size=3 group=south color=1 cluster=b",
                           "[c:2] rank=2 size=3 group=west color=2 cluster=c", "[a:0] pingpong rank 0 <-> rank 1 (cluster b): 100000 bytes",
                           "[a:0] pingpong rank 0 <-> rank 2 (cluster c): 100000 bytes", "[a:0] barrier passed by 3 processes"})
    EXPECT_NE(r.out.find(line), std::string::npos) << "missing: " << line << "\n" << r.out;
  const std::string journal = slurp(dir_ + "/journal");
  EXPECT_TRUE(std::regex_search(journal, std::regex(R"(started for user lab \(\S+ \(user lab\)\): app three-sites, 3 processes)")))
      << journal;
}

TEST_F(ThreeSites, ProcessesRunOnTheSitesNodesAndConnectDirectlyWhereTheyCan) {
  const pid_t job = start_long_job(3);
  // Every hello of the job lives in its site's node namespace, not on the front-end.
  int seen = 0;
  for (const auto& proc : processes_now()) {
    if (proc.exe != kBin + "/hello") continue;
    for (const auto& s : sites_)
      if ((" " + proc.environ).find(" GRIDRT_CLUSTER=" + s.name + " ") != std::string::npos) {
        std::string ns;
        FILE* p = ::popen(("ip netns identify " + std::to_string(proc.pid)).c_str(), "r");
        char line[256] = {0};
        if (p && std::fgets(line, sizeof line, p)) ns = line;
        if (p) ::pclose(p);
        EXPECT_EQ(ns, s.node_ns + "\n") << "cluster " << s.name;
        ++seen;
      }
  }
  EXPECT_EQ(seen, 3);
  // The direct connection between a's and b's processes is real: on a's node, a TCP
  // connection to a port of a's range from b's front-end address (b's nodes are behind NAT).
  FILE* p = ::popen(("ip netns exec " + sites_[0].node_ns + " ss -Htn state established").c_str(), "r");
  std::string established;
  char line[512];
  while (p && std::fgets(line, sizeof line, p)) established += line;
  if (p) ::pclose(p);
  EXPECT_NE(established.find(sites_[0].node + ":71"), std::string::npos) << established << "job:\n" << slurp(dir_ + "/long.log");
  EXPECT_NE(established.find(sites_[1].addr + ":"), std::string::npos) << "b's NAT address\n" << established;
  EXPECT_EQ(finish(job, "long").status, 0);
}

namespace {
// Reads frames until the peer closes; returns the bodies of the Error frames.
template <typename Stream> std::string errors_until_closed(Stream& s) {
  std::string errors;
  gridrt::wire::Decoder d;
  char buf[4096];
  boost::system::error_code ec;
  for (;;) {
    const std::size_t n = s.read_some(gridrt::asio::buffer(buf), ec);
    if (ec) break;
    d.feed(buf, n);
    gridrt::wire::Frame f;
    while (d.next(f) == gridrt::wire::Decoder::Status::kFrame)
      if (f.header.type == gridrt::wire::Type::kError) errors += f.body;
  }
  return errors;
}
}  // namespace

TEST_F(ThreeSites, StrangersAndForgeriesAreRefusedWhileTheJobRunsOn) {
  using namespace gridrt;
  const pid_t job = start_long_job(6);

  // 1. A user whose certificate another CA signed.
  const Outcome mallory = finish(start_gridrun({kSrc + "/jobprofiles/three-sites.xml"}, "mallory", "user-mallory", "other"), "mallory");
  EXPECT_EQ(mallory.status, 1) << mallory.out;
  EXPECT_NE(mallory.out.find("unknown ca"), std::string::npos) << mallory.out;

  // 2. A relay with a certificate from another CA, claiming cluster b.
  const pid_t rogue =
      start_in(sites_[1].ns, "rogue-relay",
               {kBin + "/gridrelay", "--grid", dir_ + "/grid.xml", "--cluster", "b", "--broker", sites_[1].gateway + ":7000", "--cert",
                dir_ + "/other/relay-b.pem", "--key", dir_ + "/other/relay-b.key", "--ca", dir_ + "/ca/ca.pem"});
  std::this_thread::sleep_for(1500ms);
  ::kill(rogue, SIGTERM);
  ::waitpid(rogue, nullptr, 0);

  // 3. A process with a wrong job secret, at site a's relay.
  const int wrong_secret = in_netns(sites_[0].node_ns, [&] {  // from the site's node
    asio::io_context io;
    tcp::socket s(io);
    s.connect(parse_endpoint(sites_[0].inside + ":" + std::to_string(sites_[0].link_port + 50)));
    ProcHello hello{"0123456789abcdef0123456789abcdef", 0, "intruder", ""};
    asio::write(s, asio::buffer(wire::encode(wire::make_frame(wire::Type::kProcHello, hello.encode(), 1))));
    return errors_until_closed(s) == "unknown job or wrong job secret" ? 0 : 1;
  });
  EXPECT_EQ(wrong_secret, 0);

  // 4. Frames forged for the running job by a relay that is not part of it (cluster d's
  //    certificate is valid), and a second link claiming cluster c, which has one up.
  //    `speak_as` opens a link to a's relay from the wan with `relay`'s credentials, sends
  //    `bytes`, and returns the Error frames a's relay answers until it hangs up (or, with
  //    wait_for_close false, after a moment).
  auto speak_as = [&](const std::string& relay, const std::string& bytes, bool wait_for_close) {
    return in_netns(wan_, [&] {
      asio::io_context io;
      auto ctx = tls::make_context(tls::Role::kClient,
                                   {dir_ + "/ca/relay-" + relay + ".pem", dir_ + "/ca/relay-" + relay + ".key", dir_ + "/ca/ca.pem"});
      asio::ssl::stream<tcp::socket> s(io, ctx);
      s.next_layer().connect(parse_endpoint(sites_[0].addr + ":" + std::to_string(sites_[0].link_port)));
      s.handshake(asio::ssl::stream_base::client);
      asio::write(s, asio::buffer(bytes));
      if (!wait_for_close) {
        std::this_thread::sleep_for(300ms);
        return 0;
      }
      return errors_until_closed(s) == "a link with cluster '" + relay + "' is up already" ? 0 : 1;
    });
  };
  std::string forged = wire::encode(wire::make_frame(wire::Type::kLinkHello, LinkHello{"d", 42, 0, 0}.encode()));
  for (int i = 0; i < 3; ++i) {
    wire::Frame f = wire::make_frame(wire::Type::kData, "forged payload", 1);
    f.header.src = 2;  // rank 2 is on cluster c, not d
    f.header.dst = 0;
    f.header.tag = 1;
    forged += wire::encode(f);
  }
  EXPECT_EQ(speak_as("d", forged, false), 0);
  EXPECT_EQ(speak_as("c", wire::encode(wire::make_frame(wire::Type::kLinkHello, LinkHello{"c", 42, 0, 0}.encode())), true), 0);

  // The job was undisturbed: every round's data checked out, and it ended well.
  const Outcome r = finish(job, "long");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("[a:0] pingpong rank 0 <-> rank 2 (cluster c): 100000 bytes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(last round)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("is wrong"), std::string::npos) << r.out;

  // And every refusal was logged where it happened.
  const std::string broker = slurp(dir_ + "/broker.log"), relay_a = slurp(dir_ + "/relay-a.log");
  EXPECT_NE(broker.find("TLS handshake with"), std::string::npos) << broker;
  EXPECT_NE(relay_a.find("unknown job 1 or wrong job secret"), std::string::npos) << relay_a;
  EXPECT_NE(relay_a.find("dropping a frame from cluster d with source 2"), std::string::npos) << relay_a;
  EXPECT_NE(relay_a.find("refusing a second link from cluster c"), std::string::npos) << relay_a;
}

TEST_F(ThreeSites, ARelayLinkKilledMidTransferFailsTheJobClearly) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t job = start_long_job(8);
  // Site c dialled a's relay at port 7105: reset that connection from c's side.
  run_or_fail("ip netns exec " + sites_[2].ns + " iptables -I INPUT -p tcp --sport " + std::to_string(sites_[0].link_port) +
              " -j REJECT --reject-with tcp-reset");
  const Outcome r = finish(job, "long");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("failed: cluster "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": lost the link to cluster "), std::string::npos) << r.out << "relay a:\n"
                                                                          << slurp(dir_ + "/relay-a.log") << "relay c:\n"
                                                                          << slurp(dir_ + "/relay-c.log");
  EXPECT_EQ(r.out.find("is wrong"), std::string::npos) << r.out;  // never wrong data
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60)) << "must not hang";
}

// A link that breaks twice: the first time for 2 s, within its grace (4 s here), it is
// dialled again and the job goes on; the second time for good, and the grace runs out again
// (each break has one of its own), which fails the job naming the lost link.
TEST_F(ThreeSites, ALinkThatBreaksTwiceComesBackOnceAndIsLostPastItsGraceTheSecondTime) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t job = start_stream_job(300);
  cut_link_for("REJECT --reject-with tcp-reset", 2s);
  const auto relays = [&] { return slurp(dir_ + "/relay-a.log") + slurp(dir_ + "/relay-c.log"); };
  for (int i = 0; i < 300 && relays().find("back after") == std::string::npos; ++i) std::this_thread::sleep_for(50ms);
  ASSERT_NE(relays().find("back after"), std::string::npos) << "the link did not come back:\n" << relays();
  EXPECT_EQ(slurp(dir_ + "/stream.log").find("FAILED"), std::string::npos) << slurp(dir_ + "/stream.log");
  run_or_fail("ip netns exec " + sites_[2].ns + " iptables -I INPUT -p tcp --sport " + std::to_string(sites_[0].link_port) +
              " -j REJECT --reject-with tcp-reset");
  const Outcome r = finish(job, "stream");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("lost the link to cluster "), std::string::npos) << r.out << relays();
  EXPECT_NE(r.out.find("(down for "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("is wrong"), std::string::npos) << r.out;  // never wrong data
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60)) << "must not hang";
}

// The same broken link under a job whose profile lets it go on without a lost cluster: both
// ends report it, the broker weighs the reports and drops one of the two (c: on a tie the
// higher index, so that rank 0, the queue's super-master, stays), the queue hands c's tasks
// to a and b, and the job ends well with every result checked.
TEST_F(ThreeSites, ARelayLinkKilledUnderAJobThatGoesOnLosesOneOfItsTwoClusters) {
  const pid_t job = start_queue_job();
  run_or_fail("ip netns exec " + sites_[2].ns + " iptables -I INPUT -p tcp --sport " + std::to_string(sites_[0].link_port) +
              " -j REJECT --reject-with tcp-reset");
  expect_went_on_without(job, 2, "cut off from cluster a (cluster a lost the link to cluster c (");
}

// A link that goes silent (its packets dropped, nothing closes it: a cut WAN line) is noticed
// by the relays' sockets within GRIDRT_DEAD_PEER_SECONDS (6 s here) and handled as a broken
// link: the job that goes on loses c and ends well.
TEST_F(ThreeSites, ASilentRelayLinkIsNoticedAndTheJobGoesOnWithoutOneEnd) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t job = start_queue_job();
  run_or_fail("ip netns exec " + sites_[2].ns + " iptables -I INPUT -p tcp --sport " + std::to_string(sites_[0].link_port) + " -j DROP");
  expect_went_on_without(job, 2, "cut off from cluster a (cluster ");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(40)) << "noticed in about 6 s, not TCP's 15 minutes";
}

// A relay that dies (SIGKILL) under a job that goes on: the broker loses its cluster, the
// job ends well on the other two, and the dead relay's processes end by themselves (their
// relay connection is gone), none left behind.
TEST_F(ThreeSites, ARelayThatDiesUnderAJobThatGoesOnLosesOnlyItsCluster) {
  const pid_t job = start_queue_job();
  const pid_t relay_b = daemons_[2];
  ::kill(relay_b, SIGKILL);
  ::waitpid(relay_b, nullptr, 0);
  std::erase(daemons_, relay_b);
  expect_went_on_without(job, 1, "lost the relay of cluster b (");
}

// The same network, with the relays' default grace for a broken link (60 s).
class ThreeSitesPatient : public ThreeSites {
 protected:
  ThreeSitesPatient() { link_grace_ = ""; }

  // The stream job across a cut of `how` for `seconds` ends well, every message and every
  // collective checked, and the relays logged the pause (`logged`).
  void expect_stream_survives(const std::string& how, int seconds, const std::string& logged) {
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t job = start_stream_job(40);
    cut_link_for(how, std::chrono::seconds(seconds));
    const Outcome r = finish(job, "stream");
    const std::string relays = "relay a:\n" + slurp(dir_ + "/relay-a.log") + "relay c:\n" + slurp(dir_ + "/relay-c.log");
    EXPECT_EQ(r.status, 0) << r.out << relays;
    EXPECT_NE(r.out.find("stream: 40 rounds, 80 messages of 65536 bytes received here"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("checks passed on 3 processes"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("FAILED"), std::string::npos) << r.out;
    EXPECT_NE(relays.find(logged), std::string::npos) << relays;
    // The job paused for the cut: 40 rounds of 100 ms alone take 4 s.
    EXPECT_GT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(seconds)) << r.out;
  }
};

// TCP carries a link through two seconds of dropped packets by itself (retransmissions):
// the relays only notice the silence.
TEST_F(ThreeSitesPatient, ALinkWhosePacketsAreDroppedForTwoSecondsPausesTheJobOnly) { expect_stream_survives("DROP", 2, "s of silence"); }

// A reset ends the connection: c dials a again, and each side sends what the other had not
// received.
TEST_F(ThreeSitesPatient, ALinkResetForTwoSecondsIsDialledAgainAndLosesNothing) {
  expect_stream_survives("REJECT --reject-with tcp-reset", 2, "link with cluster c back after");
}

// Twenty seconds of dropped packets outlast TCP's patience (GRIDRT_DEAD_PEER_SECONDS, 6 s
// here): both connections end, and the link comes back when the line does.
TEST_F(ThreeSitesPatient, ALinkDroppedForTwentySecondsComesBackAndLosesNothing) {
  expect_stream_survives("DROP", 20, "link with cluster a back after");
}

TEST_F(ThreeSitesPatient, ALinkResetForTwentySecondsComesBackAndLosesNothing) {
  expect_stream_survives("REJECT --reject-with tcp-reset", 20, "link with cluster c back after");
}

// The direct connection between the processes of sites a and b (b's node dials a's, through
// b's NAT) broken by a reset, or silenced for longer than GRIDRT_DEAD_PEER_SECONDS: each side
// tells the other through the relays what it received, sends the rest again that way, and the
// pair goes on through the relays (while the cut lasts, too).
TEST_F(ThreeSitesPatient, ADirectConnectionThatBreaksGoesOnThroughTheRelaysAndLosesNothing) {
  for (const auto& [how, seconds] : std::vector<std::pair<std::string, int>>{{"DROP", 20}, {"REJECT --reject-with tcp-reset", 2}}) {
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t job = start_stream_job(40);
    const std::string rule = "FORWARD -s " + sites_[0].node + " -p tcp -j " + how;
    run_or_fail("ip netns exec " + sites_[1].ns + " iptables -I " + rule);
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    run_or_fail("ip netns exec " + sites_[1].ns + " iptables -D " + rule);
    const Outcome r = finish(job, "stream");
    EXPECT_EQ(r.status, 0) << how << "\n" << r.out;
    EXPECT_NE(r.out.find("stream: 40 rounds, 80 messages of 65536 bytes received here"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("checks passed on 3 processes"), std::string::npos) << r.out;
    for (const char* side : {"rank 0: the direct connection with rank 1 broke", "rank 1: the direct connection with rank 0 broke"})
      EXPECT_NE(r.out.find(side), std::string::npos) << how << ": " << side << "\n" << r.out;
    EXPECT_NE(r.out.find("frames that had not arrived sent again through the relays"), std::string::npos) << r.out;
    if (how == "DROP") {
      EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(seconds + 15)) << "the pair went on through the relays";
    }
  }
}

// Site c is declared reachable, which its firewall makes false: the broker's probe finds
// out, the other relays do not try to dial c, c dials them, and the job runs.
// Three sites whose nodes do not see the submitting side's files: the program exists only
// there (dir_/submit, an empty file system in each relay's mount namespace), travels with the
// job through the broker to each site's stageDir, runs everywhere, and its outputs come back.
class ThreeSitesStaged : public ThreeSites {
 protected:
  ThreeSitesStaged() { staged_ = true; }

  // Runs the staged program on the three sites, twice; the processes must have run from
  // dir_/`where`SITE (stage-SITE, the stageDir; nodes/SITE, the nodeDir).
  void run_staged_job(const std::string& where) {
    const std::string submit = fs::path(dir_ + "/submit").lexically_normal().string();
    fs::copy_file(std::string(GRIDRT_MPI_TESTS_DIR) + "/mpi_staged", submit + "/staged");
    std::ofstream(submit + "/in.txt") << "the input of the three sites\n";
    // The sites do not see it: the relays' mount namespaces hide the submitter's directory.
    for (std::size_t i = 0; i < sites_.size(); ++i)
      EXPECT_NE(sh("nsenter --target " + std::to_string(daemons_[i + 1]) + " --mount -- test -e " + submit + "/staged"), 0)
          << "site " << sites_[i].name << " sees the submitter's program";
    std::string text = slurp(kSrc + "/jobprofiles/three-sites.xml");
    const std::string program = "$GRIDRT_EXAMPLES/hello",
                      args = "<arguments><value>--pingpong-bytes</value><value>100000</value></arguments>";
    text.replace(text.find(program), program.size(), "file://" + submit + "/staged");
    text.replace(text.find(args), args.size(),
                 "<arguments><value>input.txt</value><value>result.txt</value></arguments><stageInOut>"
                 "<file name=\"input.txt\" type=\"in\"><location type=\"URL\">" +
                     submit +
                     "/in.txt</location></file>"
                     "<file name=\"result.txt\" type=\"out\"><location type=\"URL\">" +
                     dir_ + "/results</location></file></stageInOut>");
    std::ofstream(dir_ + "/staged.xml") << text;
    Outcome r = finish(start_gridrun({"-v", dir_ + "/staged.xml"}, "staged"), "staged");
    ASSERT_EQ(r.status, 0) << r.out << slurp(dir_ + "/relay-a.log");
    EXPECT_NE(r.out.find("checks passed on 3 processes"), std::string::npos) << r.out;
    for (const auto& s : sites_) {
      const std::string stage = fs::path(dir_ + "/" + where + s.name).lexically_normal().string();
      EXPECT_NE(r.out.find("runs " + stage + "/job-"), std::string::npos) << s.name << "\n" << r.out;
      const std::string result = slurp(dir_ + "/results/" + s.name + "/result.txt");
      EXPECT_NE(result.find("read: the input of the three sites"), std::string::npos) << s.name << ": '" << result << "'";
    }
    // The broker asked once per content, for all three sites.
    EXPECT_NE(r.out.find("sending " + submit + "/staged"), std::string::npos) << r.out;
    // A second run finds both in every site's cache: nothing is sent.
    fs::remove_all(dir_ + "/results");
    r = finish(start_gridrun({"-v", dir_ + "/staged.xml"}, "staged-again"), "staged-again");
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_EQ(r.out.find("sending "), std::string::npos) << r.out;
    for (const auto& s : sites_) EXPECT_TRUE(fs::exists(dir_ + "/results/" + s.name + "/result.txt")) << s.name;
  }
};

TEST_F(ThreeSitesStaged, AProgramOnlyTheSubmitterHasRunsOnEverySiteAndItsOutputsComeBack) { run_staged_job("stage-"); }

// The same where no node shares a file system with its relay either (a nodeDir each): the
// node's first process carries the files from the relay to the node's own disk.
class ThreeSitesNodeDisks : public ThreeSitesStaged {
 protected:
  ThreeSitesNodeDisks() { node_disks_ = true; }
};

TEST_F(ThreeSitesNodeDisks, AProgramOnlyTheSubmitterHasRunsFromEachNodesOwnDisk) { run_staged_job("nodes/"); }

class ThreeSitesMisdeclared : public ThreeSites {
 protected:
  ThreeSitesMisdeclared() { misdeclare_c_ = true; }
};

TEST_F(ThreeSitesMisdeclared, TheBrokersProbeOverridesAWrongDeclaration) {
  const Outcome r = gridrun({"--explain", kSrc + "/jobprofiles/three-sites.xml"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("a <-> c: relayed (neither side's processes can open a connection to the other's) through the relays' link, dialled "
                       "by c (a accepts connections, c does not)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[a:0] barrier passed by 3 processes"), std::string::npos) << r.out;
  EXPECT_NE(slurp(dir_ + "/broker.log")
                .find("cluster c is declared reachable but its relay's link address 10.231.3.2:7300 does not "
                      "answer the broker's probe: treating it as unreachable"),
            std::string::npos)
      << slurp(dir_ + "/broker.log");
}
