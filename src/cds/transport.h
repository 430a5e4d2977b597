// Client-side connection setup shared by CdsClient's one-shot GET and its watcher: resolve,
// connect, TLS handshake (https/wss), each step bounded by the caller's deadline; and one HTTP
// GET over such a stream, which kturnctl's plain-HTTP commands (cli/http_get.h) use too.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "cds/origin.h"
#include "kturn/result.h"

namespace kturn::cds {

using PlainStream = boost::beast::tcp_stream;
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

// A client TLS context: TLS 1.2+, peer verification against `ca_file` and `ca_pem` (PEM, either
// may be empty) or, when both are empty, the system trust store; none if `insecure`. Never
// throws.
Result<std::shared_ptr<boost::asio::ssl::context>> makeClientTlsContext(const std::string& ca_file,
                                                                        const std::string& ca_pem,
                                                                        bool insecure);

// Resolves `origin.host` (skipped for IP literals) and connects. The deadline is armed on the
// stream (tcp_stream::expires_after) and left armed for what the caller does next.
boost::asio::awaitable<boost::beast::error_code> openStream(
    PlainStream& stream, const Origin& origin, std::chrono::steady_clock::duration timeout);
// The same, then SNI (host names only), host name verification and the TLS handshake.
boost::asio::awaitable<boost::beast::error_code> openStream(
    TlsStream& stream, const Origin& origin, std::chrono::steady_clock::duration timeout,
    bool verify_host);

struct HttpReply {
  unsigned status = 0;
  std::string content_type;
  std::string body;
};

// What a GET sends besides Host and "Accept: application/json".
struct GetHeaders {
  std::string_view user_agent = "kturn-cds-client";
  std::string_view bearer_token{};  // "Authorization: Bearer <token>" when not empty
};

// openStream(), then GET `target` (Accept: application/json) and read the whole answer, body
// capped at 16 MiB (configs carry base64 certificates). The deadline covers all of it. kIo for
// a failure to connect, send or read ("connecting: ...", "reading response: ..."); any HTTP
// status is a reply.
boost::asio::awaitable<Result<HttpReply>> fetchDocument(PlainStream& stream, const Origin& origin,
                                                        const std::string& target,
                                                        std::chrono::steady_clock::duration timeout,
                                                        const GetHeaders& headers = {});
boost::asio::awaitable<Result<HttpReply>> fetchDocument(TlsStream& stream, const Origin& origin,
                                                        const std::string& target,
                                                        std::chrono::steady_clock::duration timeout,
                                                        bool verify_host,
                                                        const GetHeaders& headers = {});

}  // namespace kturn::cds
