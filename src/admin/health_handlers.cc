#include "admin/health_handlers.h"

#include <exception>
#include <nlohmann/json.hpp>
#include <string>

namespace kturn::admin {
namespace {

// stunnerd's error/ready body: {"status":<code>,"message":"<text>"} plus a newline. nlohmann
// escapes the message, which stunnerd's Fprintf does not; for its fixed messages the bytes match.
Response statusMessage(unsigned code, const std::string& message) {
  // ordered_json keeps stunnerd's key order, so the bytes match its Fprintf output.
  nlohmann::ordered_json body = {{"status", code}, {"message", message}};
  return Response{
      .status = code,
      .content_type = kJsonContentType,
      .body = body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n"};
}

}  // namespace

Handler liveHandler() {
  return [](const Request&) {
    return Response{.status = 200, .content_type = kJsonContentType, .body = "{}\n"};
  };
}

Handler readyHandler(const HealthState& state) {
  return [&state](const Request&) {
    if (state.ready()) return statusMessage(200, "READY");
    // stunnerd's body for its own states; kturn's capacity marks say what holds it back.
    if (state.status() == HealthStatus::kReady && state.overCapacity()) {
      return statusMessage(503, "over capacity");
    }
    return statusMessage(503, "stunnerd not ready");
  };
}

Handler statusHandler(StatusProvider provider, std::shared_ptr<BearerToken> token) {
  return [provider = std::move(provider), token = std::move(token)](const Request& request) {
    if (token) {
      // A token that cannot be read (the file gone or empty) locks /status, never opens it.
      const std::string want = token->current();
      if (want.empty() || !bearerAuthorized(request, want)) {
        return statusMessage(401, "a bearer token is required");
      }
    }
    try {
      // stunnerd writes json.Marshal's output without a trailing newline; so do we.
      return Response{.status = 200, .content_type = kJsonContentType, .body = provider().dump()};
    } catch (const std::exception& e) {
      return statusMessage(500, e.what());
    }
  };
}

Handler capacityHandler(const CapacityGate& gate) {
  return [&gate](const Request&) {
    const CapacityReport report = gate.report();
    return Response{.status = report.over_capacity ? 503u : 200u,
                    .content_type = kJsonContentType,
                    .body = toJson(report).dump() + "\n"};
  };
}

void registerHealthRoutes(AdminServer& server, const HealthState& state, StatusProvider provider,
                          std::shared_ptr<BearerToken> statusToken) {
  server.handle("/live", liveHandler());
  server.handle("/ready", readyHandler(state));
  server.handle("/status", statusHandler(std::move(provider), std::move(statusToken)));
}

}  // namespace kturn::admin
