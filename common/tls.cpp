#include "common/tls.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>

namespace gridrt::tls {
namespace {

[[noreturn]] void fail(const std::string& what) {
  std::string text = what;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    text += ": ";
    text += buf;
  }
  throw TlsError(text);
}

template <typename T, void (*F)(T*)> struct Deleter {
  void operator()(T* p) const { F(p); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Deleter<X509, X509_free>>;

KeyPtr new_key() {
  EVP_PKEY* k = EVP_EC_gen("P-256");
  if (!k) fail("generating an EC P-256 key");
  return KeyPtr(k);
}

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ex = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ex || !X509_add_ext(cert, ex, -1)) fail("adding a certificate extension");
  X509_EXTENSION_free(ex);
}

CertPtr new_cert(const std::string& cn, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key, bool is_ca) {
  CertPtr cert(X509_new());
  if (!cert) fail("allocating a certificate");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 60L * 60 * 24 * 365);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer ? issuer : cert.get();
  if (is_ca) {
    add_ext(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(cert.get(), signer, NID_key_usage, "critical,digitalSignature");
    add_ext(cert.get(), signer, NID_ext_key_usage, "serverAuth,clientAuth");
  }
  add_ext(cert.get(), signer, NID_subject_key_identifier, "hash");
  if (!X509_sign(cert.get(), issuer_key, EVP_sha256())) fail("signing a certificate");
  return cert;
}

void write_pem(const std::string& path, bool secret, const std::function<int(FILE*)>& body) {
  // A key is created 0600 from the start: never readable by others, not even for a moment.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, secret ? 0600 : 0644);
  FILE* f = fd >= 0 ? ::fdopen(fd, "w") : nullptr;
  if (!f) throw TlsError("cannot write " + path);
  if (secret) ::fchmod(fd, 0600);  // also when the file existed with wider permissions
  const int ok = body(f);
  std::fclose(f);
  if (!ok) fail("writing " + path);
}

}  // namespace

boost::asio::ssl::context make_context(Role role, const Credentials& creds) {
  namespace ssl = boost::asio::ssl;
  ssl::context ctx(role == Role::kServer ? ssl::context::tls_server : ssl::context::tls_client);
  SSL_CTX* native = ctx.native_handle();
  if (!SSL_CTX_set_min_proto_version(native, TLS1_3_VERSION)) fail("requiring TLS 1.3");
  // AES-128-GCM first: as safe for this use and the cheapest on CPUs with AES instructions,
  // which matters on relays that encrypt every byte crossing sites.
  if (!SSL_CTX_set_ciphersuites(native, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"))
    fail("setting the TLS 1.3 cipher suites");
  if (SSL_CTX_load_verify_locations(native, creds.ca.c_str(), nullptr) != 1) fail("loading CA " + creds.ca);
  if (SSL_CTX_use_certificate_chain_file(native, creds.cert.c_str()) != 1) fail("loading certificate " + creds.cert);
  if (SSL_CTX_use_PrivateKey_file(native, creds.key.c_str(), SSL_FILETYPE_PEM) != 1) fail("loading key " + creds.key);
  if (SSL_CTX_check_private_key(native) != 1) fail("key " + creds.key + " does not match " + creds.cert);
  // Mutual authentication: both sides must present a certificate from the grid CA. Peers are
  // identified by the certificate's common name, not by host name (relays sit behind NAT).
  SSL_CTX_set_verify(native, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return ctx;
}

namespace {
constexpr const char* kPskIdentity = "gridrt job";
constexpr unsigned kPskLength = 32;

// The key: SHA-256 over a label and the job's secret, kept with the context.
struct PskKey {
  unsigned char key[kPskLength];
};
int psk_index() {
  static const int index = SSL_CTX_get_ex_new_index(
      0, nullptr, nullptr, nullptr, [](void*, void* p, CRYPTO_EX_DATA*, int, long, void*) { delete static_cast<PskKey*>(p); });
  return index;
}
const PskKey* key_of(SSL* ssl) { return static_cast<PskKey*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), psk_index())); }

unsigned int psk_client(SSL* ssl, const char*, char* identity, unsigned int max_identity, unsigned char* psk, unsigned int max_psk) {
  const PskKey* k = key_of(ssl);
  if (!k || max_psk < kPskLength || max_identity <= std::strlen(kPskIdentity)) return 0;
  std::strcpy(identity, kPskIdentity);
  std::memcpy(psk, k->key, kPskLength);
  return kPskLength;
}
unsigned int psk_server(SSL* ssl, const char* identity, unsigned char* psk, unsigned int max_psk) {
  const PskKey* k = key_of(ssl);
  if (!k || !identity || std::strcmp(identity, kPskIdentity) != 0 || max_psk < kPskLength) return 0;
  std::memcpy(psk, k->key, kPskLength);
  return kPskLength;
}
}  // namespace

boost::asio::ssl::context make_psk_context(Role role, const std::string& secret) {
  namespace ssl = boost::asio::ssl;
  ssl::context ctx(role == Role::kServer ? ssl::context::tls_server : ssl::context::tls_client);
  SSL_CTX* native = ctx.native_handle();
  if (!SSL_CTX_set_min_proto_version(native, TLS1_3_VERSION)) fail("requiring TLS 1.3");
  // The legacy PSK callbacks serve TLS 1.3 with a SHA-256 suite.
  if (!SSL_CTX_set_ciphersuites(native, "TLS_AES_128_GCM_SHA256")) fail("setting the TLS 1.3 cipher suite");
  auto* k = new PskKey;
  const std::string material = "gridrt direct connection key:" + secret;
  SHA256(reinterpret_cast<const unsigned char*>(material.data()), material.size(), k->key);
  SSL_CTX_set_ex_data(native, psk_index(), k);
  if (role == Role::kServer) SSL_CTX_set_psk_server_callback(native, psk_server);
  else SSL_CTX_set_psk_client_callback(native, psk_client);
  SSL_CTX_set_verify(native, SSL_VERIFY_NONE, nullptr);
  return ctx;
}

std::string peer_common_name(SSL* ssl) {
  X509* cert = ssl ? SSL_get1_peer_certificate(ssl) : nullptr;
  if (!cert) return {};
  char buf[256] = {0};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf);
  X509_free(cert);
  return buf;
}

struct Authority::Impl {
  KeyPtr key;
  CertPtr cert;
};

Authority::Authority(const std::string& name) : impl_(new Impl) {
  impl_->key = new_key();
  impl_->cert = new_cert(name, impl_->key.get(), nullptr, impl_->key.get(), true);
}
Authority::~Authority() { delete impl_; }

Authority Authority::load(const std::string& cert_path, const std::string& key_path) {
  Authority a;
  a.impl_ = new Impl;
  FILE* f = std::fopen(cert_path.c_str(), "r");
  if (!f) throw TlsError("cannot read CA certificate " + cert_path);
  a.impl_->cert.reset(PEM_read_X509(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  if (!a.impl_->cert) fail("reading CA certificate " + cert_path);
  f = std::fopen(key_path.c_str(), "r");
  if (!f) throw TlsError("cannot read CA key " + key_path);
  a.impl_->key.reset(PEM_read_PrivateKey(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  if (!a.impl_->key) fail("reading CA key " + key_path);
  if (X509_check_private_key(a.impl_->cert.get(), a.impl_->key.get()) != 1) fail(key_path + " is not the key of " + cert_path);
  return a;
}

std::string Authority::write_key(const std::string& dir) const {
  const std::string path = dir + "/ca.key";
  write_pem(path, true, [&](FILE* f) { return PEM_write_PrivateKey(f, impl_->key.get(), nullptr, nullptr, 0, nullptr, nullptr); });
  return path;
}

std::string Authority::write_ca(const std::string& dir) const {
  // Written aside and renamed: a daemon already started may be reading the file right now.
  const std::string path = dir + "/ca.pem";
  write_pem(path + ".tmp", false, [&](FILE* f) { return PEM_write_X509(f, impl_->cert.get()); });
  if (std::rename((path + ".tmp").c_str(), path.c_str()) != 0) throw TlsError("cannot write " + path);
  return path;
}

Credentials Authority::issue(const std::string& common_name, const std::string& dir, const std::string& file) const {
  KeyPtr key = new_key();
  CertPtr cert = new_cert(common_name, key.get(), impl_->cert.get(), impl_->key.get(), false);
  Credentials c{dir + "/" + file + ".pem", dir + "/" + file + ".key", write_ca(dir)};
  write_pem(c.cert, false, [&](FILE* f) { return PEM_write_X509(f, cert.get()); });
  write_pem(c.key, true, [&](FILE* f) { return PEM_write_PrivateKey(f, key.get(), nullptr, nullptr, 0, nullptr, nullptr); });
  return c;
}

}  // namespace gridrt::tls
