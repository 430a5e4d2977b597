#include "cli/http_get.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <cctype>
#include <exception>
#include <nlohmann/json.hpp>
#include <optional>

#include "cds/transport.h"

namespace kturn::cli {

namespace asio = boost::asio;

namespace {

asio::awaitable<Result<HttpGetReply>> exchange(const HttpGetRequest& request) {
  cds::PlainStream stream(co_await asio::this_coro::executor);
  const cds::Origin origin{.tls = false, .host = request.server.host, .port = request.server.port};
  // The timeout bounds resolving, connecting, sending and reading together.
  Result<cds::HttpReply> reply =
      co_await cds::fetchDocument(stream, origin, request.target, request.timeout,
                                  {.user_agent = "kturnctl", .bearer_token = request.bearer_token});
  if (!reply) co_return reply.error();
  co_return HttpGetReply{.status = reply->status,
                         .content_type = std::move(reply->content_type),
                         .body = std::move(reply->body)};
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
