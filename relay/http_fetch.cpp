#include "relay/http_fetch.h"

#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace gridrt {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::use_awaitable;
using tcp = asio::ip::tcp;

struct Url {
  bool tls = false;
  std::string host, port, target;
};

Url parse(const std::string& url) {
  Url u;
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    u.tls = true;
    rest = url.substr(8);
  } else {
    throw std::runtime_error("'" + url + "' is not an http:// or https:// URL");
  }
  const auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  u.target = slash == std::string::npos ? "/" : rest.substr(slash);
  if (const auto hash = u.target.find('#'); hash != std::string::npos) u.target.resize(hash);
  if (authority.find('@') != std::string::npos) throw std::runtime_error("'" + url + "': user names in URLs are not supported");
  u.port = u.tls ? "443" : "80";
  // [v6]:port, host:port, host
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) throw std::runtime_error("'" + url + "': malformed host");
    if (close + 1 < authority.size() && authority[close + 1] == ':') u.port = authority.substr(close + 2);
    authority = authority.substr(1, close - 1);
  } else if (const auto colon = authority.rfind(':'); colon != std::string::npos) {
    u.port = authority.substr(colon + 1);
    authority.resize(colon);
  }
  if (authority.empty()) throw std::runtime_error("'" + url + "' names no host");
  u.host = authority;
  return u;
}

// A relative Location resolved against the URL it answered.
std::string resolve(const Url& from, const std::string& location) {
  if (location.find("://") != std::string::npos) return location;
  const std::string origin = std::string(from.tls ? "https://" : "http://") + from.host + ":" + from.port;
  if (!location.empty() && location.front() == '/') return origin + location;
  const auto slash = from.target.rfind('/');
  return origin + from.target.substr(0, slash + 1) + location;
}

struct Answer {
  unsigned status = 0;
  std::string location;
  std::uint64_t bytes = 0;
};

// One GET over `stream` (connected, and through TLS where asked), the body into `path`.
template <typename Stream>
asio::awaitable<Answer> get(Stream& stream, const Url& u, const std::string& url, const std::string& path, const FetchLimits& lim) {
  auto& lowest = beast::get_lowest_layer(stream);
  http::request<http::empty_body> req{http::verb::get, u.target, 11};
  req.set(http::field::host, u.host);
  req.set(http::field::user_agent, "gridrt-relay");
  lowest.expires_after(lim.step_timeout);
  co_await http::async_write(stream, req, use_awaitable);
  beast::flat_buffer buffer;
  http::response_parser<http::file_body> parser;
  parser.body_limit(lim.max_bytes);
  beast::error_code ec;
  parser.get().body().open(path.c_str(), beast::file_mode::write_new, ec);
  if (ec) throw std::runtime_error("cannot create " + path + ": " + ec.message());
  while (!parser.is_done()) {
    lowest.expires_after(lim.step_timeout);  // a body takes as long as it takes, while it moves
    co_await http::async_read_some(stream, buffer, parser, asio::redirect_error(use_awaitable, ec));
    if (ec == http::error::body_limit)
      throw std::runtime_error(url + ": larger than the relay's limit of " + std::to_string(lim.max_bytes) + " bytes");
    if (ec == beast::error::timeout)
      throw std::runtime_error(url + ": nothing came for " + std::to_string(lim.step_timeout.count()) + " s");
    if (ec) throw std::runtime_error(url + ": " + ec.message());
    // A redirection's or an error's body is of no interest: stop at its header.
    if (parser.is_header_done() && parser.get().result_int() != 200) break;
  }
  Answer a;
  a.status = parser.get().result_int();
  a.location = std::string(parser.get()[http::field::location]);
  a.bytes = parser.content_length() ? *parser.content_length() : 0;
  parser.get().body().close();
  co_return a;
}

}  // namespace

asio::awaitable<std::uint64_t> fetch_url(std::string url, std::string path, FetchLimits lim) {
  auto ex = co_await asio::this_coro::executor;
  std::string current = url;
  for (int redirects = 0;; ++redirects) {
    const Url u = parse(current);
    tcp::resolver resolver(ex);
    beast::error_code ec;
    const auto endpoints = co_await resolver.async_resolve(u.host, u.port, asio::redirect_error(use_awaitable, ec));
    if (ec) throw std::runtime_error(current + ": cannot resolve " + u.host + ": " + ec.message());
    beast::tcp_stream tcp_stream(ex);
    tcp_stream.expires_after(lim.step_timeout);
    co_await tcp_stream.async_connect(endpoints, asio::redirect_error(use_awaitable, ec));
    if (ec) throw std::runtime_error(current + ": cannot connect to " + u.host + ":" + u.port + ": " + ec.message());
    std::remove(path.c_str());
    Answer a;
    try {
      if (u.tls) {
        asio::ssl::context ctx(asio::ssl::context::tls_client);
        ctx.set_default_verify_paths();
        ctx.set_verify_mode(asio::ssl::verify_peer);
        ctx.set_verify_callback(asio::ssl::host_name_verification(u.host));
        beast::ssl_stream<beast::tcp_stream> tls(std::move(tcp_stream), ctx);
        if (!SSL_set_tlsext_host_name(tls.native_handle(), u.host.c_str()))
          throw std::runtime_error(current + ": cannot set the TLS server name");
        co_await tls.async_handshake(asio::ssl::stream_base::client, asio::redirect_error(use_awaitable, ec));
        if (ec) throw std::runtime_error(current + ": TLS handshake with " + u.host + " failed: " + ec.message());
        a = co_await get(tls, u, current, path, lim);
      } else {
        a = co_await get(tcp_stream, u, current, path, lim);
      }
    } catch (const boost::system::system_error& e) { throw std::runtime_error(current + ": " + e.code().message()); }
    if (a.status == 200) {
      std::error_code fec;
      co_return static_cast<std::uint64_t>(std::filesystem::file_size(path, fec));
    }
    if (a.status >= 300 && a.status < 400 && !a.location.empty()) {
      if (redirects == kMaxRedirects) throw std::runtime_error(url + ": more than " + std::to_string(kMaxRedirects) + " redirections");
      current = resolve(u, a.location);
      continue;
    }
    throw std::runtime_error(current + ": the server answered HTTP " + std::to_string(a.status));
  }
}

}  // namespace gridrt
