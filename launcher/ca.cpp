#include "launcher/ca.h"

#include <cstdio>
#include <filesystem>
#include <string>

#include "common/tls.h"

namespace gridrt {
namespace {

const char* kUsage = R"(usage: gridrun ca init DIR [NAME]
       gridrun ca issue DIR broker
       gridrun ca issue DIR relay CLUSTER
       gridrun ca issue DIR user NAME
       gridrun ca issue DIR admin NAME

Makes the grid's certificate authority and the certificates of its parties. A party's role
is the name in its certificate (docs/security.md): "broker", "relay CLUSTER", "user NAME",
"admin NAME" (an operator: sees the grid, may cancel anyone's job, submits none).

  init DIR [NAME]   create DIR/ca.pem (give it to every party) and DIR/ca.key (keep it
                    secret: whoever holds it can admit anyone to the grid); NAME defaults
                    to "gridrt CA". Refuses to overwrite an existing CA.
  issue DIR ...     with the CA in DIR, issue a certificate and a new key:
                    DIR/broker.pem+.key, DIR/relay-CLUSTER.pem+.key, DIR/user-NAME.pem+.key
                    or DIR/admin-NAME.pem+.key
                    (keys are created readable by their owner only)
)";

int usage(const std::string& why) {
  std::fprintf(stderr, "gridrun ca: %s\n%s", why.c_str(), kUsage);
  return 2;
}

}  // namespace

int ca_command(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string verb = argv[1];
  if (argc < 3) return usage("missing DIR");
  const std::string dir = argv[2];
  try {
    if (verb == "init") {
      if (argc > 4) return usage("init takes DIR and an optional NAME");
      if (fs::exists(dir + "/ca.key")) {
        std::fprintf(stderr, "gridrun ca: %s/ca.key exists already; not overwriting a CA\n", dir.c_str());
        return 1;
      }
      // The directory holds the CA's key and every key issued with it: its owner's only,
      // whatever the umask (an existing directory is the administrator's choice).
      if (fs::create_directories(dir)) fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
      tls::Authority ca(argc == 4 ? argv[3] : "gridrt CA");
      std::printf("%s\n%s\n", ca.write_ca(dir).c_str(), ca.write_key(dir).c_str());
      return 0;
    }
    if (verb != "issue") return usage("unknown command '" + verb + "'");
    if (argc < 4) return usage("issue needs a role: broker, relay CLUSTER, user NAME or admin NAME");
    const std::string role = argv[3];
    std::string name, file;
    if (role == "broker" && argc == 4) {
      name = tls::kBrokerName;
      file = "broker";
    } else if ((role == "relay" || role == "user" || role == "admin") && argc == 5 && *argv[4]) {
      const std::string who = argv[4];
      if (who.find_first_of("/ \t\n") != std::string::npos) return usage("'" + who + "' may not contain '/' or white space");
      name = role == "relay" ? tls::relay_name(who) : role + " " + who;
      file = role + "-" + who;
    } else {
      return usage("issue takes: broker | relay CLUSTER | user NAME | admin NAME");
    }
    const tls::Authority ca = tls::Authority::load(dir + "/ca.pem", dir + "/ca.key");
    const tls::Credentials c = ca.issue(name, dir, file);
    std::printf("%s\n%s\n", c.cert.c_str(), c.key.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gridrun ca: %s\n", e.what());
    return 1;
  }
}

}  // namespace gridrt
