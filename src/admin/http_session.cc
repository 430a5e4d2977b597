#include "admin/http_session.h"

#include <boost/asio/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <exception>
#include <string>
#include <utility>

namespace kturn::admin {
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace net = boost::asio;

namespace {

constexpr auto kDrainTimeout = std::chrono::milliseconds(500);

Response textResponse(unsigned status, std::string body) {
  return Response{
      .status = status, .content_type = "text/plain; charset=utf-8", .body = std::move(body)};
}

bool isHttpParseError(const beast::error_code& ec) {
  return &ec.category() == &http::make_error_code(http::error::bad_target).category();
}

// Splits an origin-form ("/a?b") or absolute-form ("http://h/a?b", RFC 9112 §3.2.2) target.
bool splitTarget(std::string_view target, Request& out) {
  if (target.starts_with("http://") || target.starts_with("https://")) {
    const size_t authority = target.find("//") + 2;
    const size_t slash = target.find('/', authority);
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
  }
  if (target.empty() || target.front() != '/') return false;
  const size_t q = target.find('?');
  out.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) out.query = std::string(target.substr(q + 1));
  return true;
}

}  // namespace

HttpSession::HttpSession(net::ip::tcp::socket socket, const Router& router,
                         const AdminServer::Options& options, size_t& active_connections)
    : stream_(std::move(socket)),
      router_(router),
      options_(options),
      active_connections_(active_connections) {
  ++active_connections_;
}

HttpSession::~HttpSession() { --active_connections_; }

void HttpSession::readRequest() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(options_.max_header_bytes));
  parser_->body_limit(options_.max_body_bytes);
  // One deadline for the whole request: a client trickling bytes does not extend it.
  stream_.expires_after(options_.request_timeout);
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code ec, size_t) { self->onRead(ec); });
}

void HttpSession::onRead(beast::error_code ec) {
  if (ec == http::error::header_limit) return reject(431, "Request Header Fields Too Large\n");
  if (ec == http::error::body_limit) return reject(413, "Request Entity Too Large\n");
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return close();
  if (ec && isHttpParseError(ec)) return reject(400, "Bad Request\n");
  if (ec) return close();  // timeout, reset, or the server shutting down

  const HttpRequest& request = parser_->get();
  const bool head = request.method() == http::verb::head;
  send(dispatch(request), head, request.keep_alive());
}

Response HttpSession::dispatch(const HttpRequest& request) const {
  Request req;
  req.method = std::string(request.method_string());
  req.target = std::string(request.target());
  if (auto it = request.find(http::field::authorization); it != request.end()) {
    req.authorization = std::string(it->value());
  }
  if (!splitTarget(req.target, req)) return textResponse(400, "Bad Request\n");
  if (request.method() != http::verb::get && request.method() != http::verb::head) {
    return textResponse(405, "Method Not Allowed\n");
  }
  const Handler* handler = router_.find(req.path);
  if (handler == nullptr) return textResponse(404, "404 page not found\n");  // Go's text
  try {
    return (*handler)(req);
  } catch (const std::exception& e) {
    return textResponse(500, std::string("internal error: ") + e.what() + "\n");
  } catch (...) {
    return textResponse(500, "internal error\n");
  }
}

void HttpSession::send(Response response, bool head, bool keep_alive) {
  response_ = {};
  response_.version(11);
  response_.result(response.status);
  response_.set(http::field::server, "kturn");
  response_.set(http::field::content_type, response.content_type);
  if (response.status == 405) response_.set(http::field::allow, "GET, HEAD");
  response_.keep_alive(keep_alive);
  // HEAD announces the length GET would send but carries no body (RFC 9110 §9.3.2).
  response_.content_length(response.body.size());
  if (!head) response_.body() = std::move(response.body);
  stream_.expires_after(options_.write_timeout);
  http::async_write(stream_, response_,
                    [self = shared_from_this(), close = !keep_alive](beast::error_code ec, size_t) {
                      self->onWrite(ec, close);
                    });
}

void HttpSession::onWrite(beast::error_code ec, bool close_after) {
  if (ec) return close();
  if (close_after) {
    beast::error_code ignored;
    stream_.socket().shutdown(net::ip::tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kDrainTimeout);
    return drain();
  }
  readRequest();
}

void HttpSession::reject(unsigned status, const char* reason) {
  send(textResponse(status, reason), /*head=*/false, /*keep_alive=*/false);
}

void HttpSession::drain() {
  // The deadline armed in onWrite() bounds the whole drain; each read only discards.
  stream_.async_read_some(net::buffer(drain_buffer_),
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            if (ec) return self->close();
                            self->drain();
                          });
}

void HttpSession::close() {
  beast::error_code ignored;
  stream_.socket().shutdown(net::ip::tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
}

}  // namespace kturn::admin
