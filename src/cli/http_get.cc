#include "cli/http_get.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>

namespace kturn::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr uint64_t kMaxBody = 16 << 20;  // a /status of a big config carries many listeners
constexpr auto kToken = asio::as_tuple(asio::use_awaitable);

asio::awaitable<Result<HttpGetReply>> exchange(const HttpGetRequest& request) {
  auto executor = co_await asio::this_coro::executor;
  beast::tcp_stream stream(executor);
  // The deadline covers every step below: tcp_stream checks it on each async operation.
  stream.expires_after(request.timeout);
  asio::ip::tcp::resolver resolver(executor);
  auto [resolve_ec, endpoints] = co_await resolver.async_resolve(
      request.server.host, std::to_string(request.server.port), kToken);
  if (resolve_ec) co_return makeError(Error::Code::kIo, "resolve: " + resolve_ec.message());
  auto [connect_ec, connected] = co_await stream.async_connect(endpoints, kToken);
  if (connect_ec) co_return makeError(Error::Code::kIo, "connect: " + connect_ec.message());

  http::request<http::empty_body> get{http::verb::get, request.target, 11};
  get.set(http::field::host, request.server.hostPort());
  get.set(http::field::user_agent, "kturnctl");
  get.set(http::field::accept, "application/json");
  if (!request.bearer_token.empty()) {
    get.set(http::field::authorization, "Bearer " + request.bearer_token);
  }
  auto [write_ec, written] = co_await http::async_write(stream, get, kToken);
  if (write_ec) co_return makeError(Error::Code::kIo, "send: " + write_ec.message());
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBody);
  auto [read_ec, read] = co_await http::async_read(stream, buffer, parser, kToken);
  if (read_ec) co_return makeError(Error::Code::kIo, "read: " + read_ec.message());
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  http::response<http::string_body>& response = parser.get();
  co_return HttpGetReply{.status = response.result_int(),
                         .content_type = std::string(response[http::field::content_type]),
                         .body = std::move(response.body())};
}

}  // namespace

Result<HttpGetReply> httpGet(const HttpGetRequest& request) {
  const std::string where = "GET http://" + request.server.hostPort() + request.target;
  std::optional<Result<HttpGetReply>> reply;
  try {
    asio::io_context ioc;
    asio::co_spawn(
        ioc, [&]() -> asio::awaitable<void> { reply = co_await exchange(request); },
        [](std::exception_ptr) {});
    ioc.run();
  } catch (const std::exception& e) {
    return makeError(Error::Code::kInternal, where + ": " + e.what());
  }
  if (!reply) return makeError(Error::Code::kInternal, where + ": no result");
  if (!*reply) {
    std::string why = reply->error().message;
    if (why.find("timed out") != std::string::npos || why.find("timeout") != std::string::npos) {
      why += " (after " + std::to_string(request.timeout.count()) + " ms)";
    }
    return makeError(reply->error().code, where + ": " + why);
  }
  return std::move(*reply);
}

std::string errorMessage(const std::string& body) {
  const auto parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
    return parsed["message"].get<std::string>();
  }
  std::string trimmed = body.substr(0, 200);
  while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) {
    trimmed.pop_back();
  }
  return trimmed;
}

Result<admin::HttpEndpoint> parseServerUrl(const std::string& flag, const std::string& url,
                                           uint16_t default_port) {
  auto parsed = admin::parseHttpEndpoint(url, default_port);
  if (!parsed)
    return makeError(Error::Code::kInvalidArgument, flag + ": " + parsed.error().message);
  if (!*parsed) return makeError(Error::Code::kInvalidArgument, flag + ": empty URL");
  if ((*parsed)->port == 0) {
    return makeError(Error::Code::kInvalidArgument,
                     flag + " \"" + url + "\": port must be 1-65535");
  }
  return std::move(**parsed);
}

}  // namespace kturn::cli
