#include "cds/transport.h"

#include <openssl/ssl.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <exception>

namespace kturn::cds {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

constexpr uint64_t kMaxResponseBody = 16 << 20;  // configs carry base64 certificates

template <class Stream>
asio::awaitable<Result<HttpReply>> httpGet(Stream& stream, const Origin& origin,
                                           const std::string& target, const GetHeaders& headers) {
  const auto token = asio::as_tuple(asio::use_awaitable);
  http::request<http::empty_body> request{http::verb::get, target, 11};
  request.set(http::field::host, origin.hostPort());
  request.set(http::field::user_agent, headers.user_agent);
  request.set(http::field::accept, "application/json");
  if (!headers.bearer_token.empty()) {
    request.set(http::field::authorization, "Bearer " + std::string(headers.bearer_token));
  }
  auto [write_ec, written] = co_await http::async_write(stream, request, token);
  if (write_ec) co_return makeError(Error::Code::kIo, "sending request: " + write_ec.message());
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxResponseBody);
  auto [read_ec, read] = co_await http::async_read(stream, buffer, parser, token);
  if (read_ec) co_return makeError(Error::Code::kIo, "reading response: " + read_ec.message());
  http::response<http::string_body>& response = parser.get();
  co_return HttpReply{.status = response.result_int(),
                      .content_type = std::string(response[http::field::content_type]),
                      .body = std::move(response.body())};
}

}  // namespace

Result<std::shared_ptr<asio::ssl::context>> makeClientTlsContext(const std::string& ca_file,
                                                                 const std::string& ca_pem,
                                                                 bool insecure) {
  beast::error_code ec;
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1,
                   ec);
  if (!ec) {
    if (ca_file.empty() && ca_pem.empty()) ctx->set_default_verify_paths(ec);
    if (!ec && !ca_file.empty()) ctx->load_verify_file(ca_file, ec);
    if (!ec && !ca_pem.empty()) ctx->add_certificate_authority(asio::buffer(ca_pem), ec);
  }
  if (!ec) {
    ctx->set_verify_mode(insecure ? asio::ssl::verify_none : asio::ssl::verify_peer, ec);
  }
  if (ec) {
    return makeError(Error::Code::kInvalidArgument,
                     "TLS setup" + (ca_file.empty() ? "" : " (CA file " + ca_file + ")") +
                         (ca_pem.empty() ? "" : " (CA certificate from the environment)") + ": " +
                         ec.message());
  }
  return ctx;
}

asio::awaitable<beast::error_code> openStream(PlainStream& stream, const Origin& origin,
                                              std::chrono::steady_clock::duration timeout) {
  const auto token = asio::as_tuple(asio::use_awaitable);
  stream.expires_after(timeout);
  beast::error_code ec;
  const asio::ip::address literal = asio::ip::make_address(origin.host, ec);
  if (!ec) {
    auto [connect_ec] = co_await stream.async_connect(tcp::endpoint(literal, origin.port), token);
    co_return connect_ec;
  }
  tcp::resolver resolver(stream.get_executor());
  auto [resolve_ec, results] =
      co_await resolver.async_resolve(origin.host, std::to_string(origin.port), token);
  if (resolve_ec) co_return resolve_ec;
  auto [connect_ec, endpoint] = co_await stream.async_connect(results, token);
  co_return connect_ec;
}

asio::awaitable<beast::error_code> openStream(TlsStream& stream, const Origin& origin,
                                              std::chrono::steady_clock::duration timeout,
                                              bool verify_host) {
  beast::error_code ec = co_await openStream(beast::get_lowest_layer(stream), origin, timeout);
  if (ec) co_return ec;
  beast::error_code literal_ec;
  (void)asio::ip::make_address(origin.host, literal_ec);
  if (literal_ec) {  // RFC 6066 §3: SNI carries host names, never IP literals
    if (!SSL_set_tlsext_host_name(stream.native_handle(), origin.host.c_str())) {
      co_return beast::error_code(static_cast<int>(::ERR_get_error()),
                                  asio::error::get_ssl_category());
    }
  }
  if (verify_host) {
    stream.set_verify_callback(asio::ssl::host_name_verification(origin.host), ec);
    if (ec) co_return ec;
  }
  auto [handshake_ec] = co_await stream.async_handshake(asio::ssl::stream_base::client,
                                                        asio::as_tuple(asio::use_awaitable));
  co_return handshake_ec;
}

asio::awaitable<Result<HttpReply>> fetchDocument(PlainStream& stream, const Origin& origin,
                                                 const std::string& target,
                                                 std::chrono::steady_clock::duration timeout,
                                                 const GetHeaders& headers) {
  const beast::error_code ec = co_await openStream(stream, origin, timeout);
  if (ec) co_return makeError(Error::Code::kIo, "connecting: " + ec.message());
  co_return co_await httpGet(stream, origin, target, headers);
}

asio::awaitable<Result<HttpReply>> fetchDocument(TlsStream& stream, const Origin& origin,
                                                 const std::string& target,
                                                 std::chrono::steady_clock::duration timeout,
                                                 bool verify_host, const GetHeaders& headers) {
  const beast::error_code ec = co_await openStream(stream, origin, timeout, verify_host);
  if (ec) co_return makeError(Error::Code::kIo, "connecting: " + ec.message());
  co_return co_await httpGet(stream, origin, target, headers);
}

}  // namespace kturn::cds
