#include "k8s/api_connection.h"

#include <openssl/ssl.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <charconv>
#include <limits>

namespace kturn::k8s {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

// A list of 10,000 EndpointSlices is tens of MiB; the default 8 MiB limit would cut it.
constexpr uint64_t kMaxBodyBytes = 512ull << 20;

Error ioError(const std::string& what, const beast::error_code& ec) {
  return makeError(Error::Code::kIo, what + ": " + ec.message());
}

bool isIpLiteral(const std::string& host) {
  beast::error_code ec;
  (void)asio::ip::make_address(host, ec);
  return !ec;
}

}  // namespace

Result<std::shared_ptr<asio::ssl::context>> makeTlsContext(const RestConfig& config) {
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  beast::error_code ec;
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                       asio::ssl::context::no_tlsv1_1,
                   ec);
  if (!ec) {
    if (config.caPem.empty()) {
      ctx->set_default_verify_paths(ec);
    } else {
      ctx->add_certificate_authority(asio::buffer(config.caPem), ec);
    }
  }
  if (ec) return makeError(Error::Code::kInvalidArgument, "TLS: CA: " + ec.message());
  if (!config.clientCertPem.empty()) {
    ctx->use_certificate_chain(asio::buffer(config.clientCertPem), ec);
    if (ec) return makeError(Error::Code::kInvalidArgument, "TLS: client cert: " + ec.message());
    ctx->use_private_key(asio::buffer(config.clientKeyPem), asio::ssl::context::pem, ec);
    if (ec) return makeError(Error::Code::kInvalidArgument, "TLS: client key: " + ec.message());
  }
  ctx->set_verify_mode(
      config.insecureSkipTlsVerify ? asio::ssl::verify_none : asio::ssl::verify_peer, ec);
  if (ec) return makeError(Error::Code::kInvalidArgument, "TLS: " + ec.message());
  return ctx;
}

ApiConnection::ApiConnection(const RestConfig& config, std::shared_ptr<asio::ssl::context> tls)
    : host_(config.host),
      hostHeader_(isIpLiteral(config.host) && config.host.find(':') != std::string::npos
                      ? "[" + config.host + "]:" + std::to_string(config.port)
                      : config.host + ":" + std::to_string(config.port)),
      tlsContext_(std::move(tls)) {
  if (tlsContext_) {
    tls_ = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ioc_, *tlsContext_);
  } else {
    plain_ = std::make_unique<beast::tcp_stream>(ioc_);
  }
}

ApiConnection::~ApiConnection() = default;

beast::tcp_stream& ApiConnection::lowest() {
  return tls_ ? beast::get_lowest_layer(*tls_) : *plain_;
}

// Starts an async operation with `start(handler)` and runs the io_context until it completes.
// The deadline on the socket closes it when the time is up, which completes the operation with
// beast::error::timeout.
template <class Start>
beast::error_code ApiConnection::run(Start&& start, std::chrono::milliseconds timeout) {
  if (cancelled_) return asio::error::operation_aborted;
  beast::error_code result = asio::error::would_block;
  lowest().expires_after(timeout);
  start([&result](beast::error_code ec, auto&&...) { result = ec; });
  ioc_.restart();
  while (result == asio::error::would_block && ioc_.run_one() > 0) {
  }
  if (cancelled_ && !result) result = asio::error::operation_aborted;
  return result;
}

Result<std::unique_ptr<ApiConnection>> ApiConnection::open(const RestConfig& config,
                                                           std::shared_ptr<asio::ssl::context> tls,
                                                           std::chrono::milliseconds timeout) {
  if (config.tls && !tls) return makeError(Error::Code::kInvalidArgument, "TLS context missing");
  std::unique_ptr<ApiConnection> c(
      new ApiConnection(config, config.tls ? std::move(tls) : nullptr));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()));
  };
  tcp::resolver resolver(c->ioc_);
  beast::error_code ec;
  tcp::resolver::results_type endpoints;
  ec = c->run(
      [&](auto handler) {
        resolver.async_resolve(
            config.host, std::to_string(config.port),
            [&endpoints, handler](beast::error_code e, tcp::resolver::results_type r) mutable {
              endpoints = std::move(r);
              handler(e);
            });
      },
      left());
  if (ec) return ioError("resolve " + config.host, ec);
  ec = c->run([&](auto handler) { c->lowest().async_connect(endpoints, handler); }, left());
  if (ec) return ioError("connect " + config.url(), ec);
  if (c->tls_) {
    const std::string name = config.tlsServerName.empty() ? config.host : config.tlsServerName;
    if (!isIpLiteral(name) && !SSL_set_tlsext_host_name(c->tls_->native_handle(), name.c_str())) {
      return makeError(Error::Code::kIo, "TLS: cannot set SNI " + name);
    }
    if (!config.insecureSkipTlsVerify) {
      c->tls_->set_verify_callback(asio::ssl::host_name_verification(name), ec);
      if (ec) return ioError("TLS", ec);
    }
    ec = c->run(
        [&](auto handler) { c->tls_->async_handshake(asio::ssl::stream_base::client, handler); },
        left());
    if (ec) return ioError("TLS handshake with " + config.url(), ec);
  }
  return c;
}

Result<void> ApiConnection::send(const HttpRequest& request, std::chrono::milliseconds timeout) {
  http::request<http::string_body> req;
  const std::optional<http::verb> verb = [&]() -> std::optional<http::verb> {
    const http::verb v = http::string_to_verb(request.method);
    if (v == http::verb::unknown) return std::nullopt;
    return v;
  }();
  if (!verb) return makeError(Error::Code::kInvalidArgument, "bad method " + request.method);
  req.method(*verb);
  req.target(request.target);
  req.version(11);
  req.set(http::field::host, hostHeader_);
  req.set(http::field::user_agent, "kturn-operator");
  req.set(http::field::accept, "application/json");
  if (!request.token.empty()) req.set(http::field::authorization, "Bearer " + request.token);
  if (!request.contentType.empty()) req.set(http::field::content_type, request.contentType);
  if (!request.body.empty() || request.method != "GET") req.body() = request.body;
  req.prepare_payload();
  const beast::error_code ec = run(
      [&](auto handler) {
        if (tls_) {
          http::async_write(*tls_, req, handler);
        } else {
          http::async_write(*plain_, req, handler);
        }
      },
      timeout);
  if (ec) return ioError(request.method + " " + request.target, ec);
  return {};
}

Result<HttpResponse> ApiConnection::roundTrip(const HttpRequest& request,
                                              std::chrono::milliseconds timeout) {
  if (Result<void> sent = send(request, timeout); !sent) return sent.error();
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBodyBytes);
  const beast::error_code ec = run(
      [&](auto handler) {
        if (tls_) {
          http::async_read(*tls_, buffer_, parser, handler);
        } else {
          http::async_read(*plain_, buffer_, parser, handler);
        }
      },
      timeout);
  if (ec) return ioError(request.method + " " + request.target + ": response", ec);
  HttpResponse out{static_cast<int>(parser.get().result_int()), std::move(parser.get().body())};
  if (const auto header = parser.get().find(http::field::retry_after);
      header != parser.get().end()) {
    const std::string_view text = header->value();
    int seconds = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (error == std::errc() && end == text.data() + text.size() && seconds >= 0) {
      out.retryAfterSeconds = seconds;
    }
  }
  return out;
}

Result<HttpResponse> ApiConnection::startStream(const HttpRequest& request,
                                                std::chrono::milliseconds timeout) {
  if (Result<void> sent = send(request, timeout); !sent) return sent.error();
  stream_.emplace();
  stream_->body_limit(std::numeric_limits<uint64_t>::max());
  const beast::error_code ec = run(
      [&](auto handler) {
        if (tls_) {
          http::async_read_header(*tls_, buffer_, *stream_, handler);
        } else {
          http::async_read_header(*plain_, buffer_, *stream_, handler);
        }
      },
      timeout);
  if (ec) return ioError(request.method + " " + request.target + ": response", ec);
  HttpResponse out{static_cast<int>(stream_->get().result_int()), {}};
  if (out.status != 200) {  // an error Status object: read it whole
    char chunk[4096];
    while (out.body.size() < (1u << 20)) {
      Result<size_t> n = readSome(chunk, sizeof chunk, timeout);
      if (!n || *n == 0) break;
      out.body.append(chunk, *n);
    }
  }
  return out;
}

Result<size_t> ApiConnection::readSome(char* data, size_t size, std::chrono::milliseconds timeout) {
  if (stream_->is_done()) return size_t{0};
  stream_->get().body().data = data;
  stream_->get().body().size = size;
  beast::error_code ec = run(
      [&](auto handler) {
        if (tls_) {
          http::async_read_some(*tls_, buffer_, *stream_, handler);
        } else {
          http::async_read_some(*plain_, buffer_, *stream_, handler);
        }
      },
      timeout);
  if (ec == http::error::need_buffer) ec = {};
  if (ec) return ioError("watch stream", ec);
  return size - stream_->get().body().size;
}

Result<std::optional<std::string>> ApiConnection::readLine(std::chrono::milliseconds idle) {
  if (!stream_) return makeError(Error::Code::kInternal, "readLine without startStream");
  char chunk[16384];
  for (;;) {
    const size_t newline = pending_.find('\n');
    if (newline != std::string::npos) {
      std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return std::optional<std::string>(std::move(line));
    }
    if (stream_->is_done()) {
      if (pending_.empty()) return std::optional<std::string>();
      std::string rest = std::move(pending_);
      pending_.clear();
      return std::optional<std::string>(std::move(rest));
    }
    Result<size_t> n = readSome(chunk, sizeof chunk, idle);
    if (!n) return n.error();
    pending_.append(chunk, *n);
  }
}

void ApiConnection::cancel() {
  cancelled_ = true;
  // Runs on the connection's thread, inside its io_context: closing the socket completes the
  // pending operation with an error.
  asio::post(ioc_, [this] {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().cancel();
  });
}

}  // namespace kturn::k8s
