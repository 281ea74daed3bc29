// TLS in one place: mutual TLS 1.3 contexts from a grid CA, and the small certificate
// authority the embedded grid and the tests use to make throw-away credentials.
// Every failure throws TlsError carrying OpenSSL's own error text.
#pragma once

#include <boost/asio/ssl/context.hpp>
#include <stdexcept>
#include <string>

namespace gridrt::tls {

struct TlsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Paths of the PEM files one party presents: its certificate, its key, and the CA it trusts.
struct Credentials {
  std::string cert;
  std::string key;
  std::string ca;
};

enum class Role { kServer, kClient };

// TLS 1.3 only; the peer must present a certificate signed by `ca` (both roles).
boost::asio::ssl::context make_context(Role role, const Credentials& creds);

// TLS 1.3 with a pre-shared key instead of certificates: for direct connections between the
// processes of one job, which share the job's secret (the key is derived from it). Only a
// peer holding the same key completes the handshake.
boost::asio::ssl::context make_psk_context(Role role, const std::string& secret);

// The common name of the peer's verified certificate ("" if none).
std::string peer_common_name(SSL* ssl);

// Who a party is comes from its certificate's common name (docs/security.md):
//   "broker"            the grid's broker
//   "relay <cluster>"   the relay of one cluster
//   "user <name>"       someone who may submit jobs
inline const std::string kBrokerName = "broker";
inline std::string relay_name(const std::string& cluster) { return "relay " + cluster; }
inline bool is_user_name(const std::string& cn) { return cn.rfind("user ", 0) == 0 && cn.size() > 5; }
// A grid administrator: may see the grid and cancel anyone's job (not submit).
inline bool is_admin_name(const std::string& cn) { return cn.rfind("admin ", 0) == 0 && cn.size() > 6; }

// A certificate authority held in memory (EC P-256 keys, SHA-256 signatures).
class Authority {
 public:
  explicit Authority(const std::string& name);  // a fresh self-signed CA
  // An existing CA from its PEM certificate and key (as write_ca and write_key made them).
  static Authority load(const std::string& cert_path, const std::string& key_path);
  ~Authority();
  Authority(const Authority&) = delete;
  Authority& operator=(const Authority&) = delete;
  Authority(Authority&& o) noexcept : impl_(o.impl_) { o.impl_ = nullptr; }

  // Writes <dir>/ca.pem.
  std::string write_ca(const std::string& dir) const;
  // Writes <dir>/ca.key (mode 0600): whoever holds it can issue certificates for the grid.
  std::string write_key(const std::string& dir) const;
  // Issues a certificate for `common_name`, writes <dir>/<file>.pem and <dir>/<file>.key
  // (mode 0600) and returns the credentials (with this CA as the trusted one).
  Credentials issue(const std::string& common_name, const std::string& dir, const std::string& file) const;

 private:
  struct Impl;
  Authority() = default;
  Impl* impl_ = nullptr;
};

}  // namespace gridrt::tls
