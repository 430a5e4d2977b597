#include "auth/auth_handlers.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <variant>

#include "auth/ice_config.h"
#include "common/crypto.h"

namespace kturn::auth {
namespace {

constexpr const char* kJson = "application/json; charset=utf-8";

admin::Response jsonResponse(unsigned status, const nlohmann::json& body) {
  return {.status = status, .content_type = kJson, .body = body.dump() + "\n"};
}

admin::Response errorResponse(unsigned status, std::string message) {
  return jsonResponse(status, {{"code", status}, {"message", std::move(message)}});
}

bool authorized(const std::string& token, const admin::Request& request) {
  if (token.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  const std::string_view header = request.authorization;
  if (header.size() <= kBearer.size() || header.substr(0, kBearer.size()) != kBearer) return false;
  return crypto::equalConstantTime(crypto::asBytes(header.substr(kBearer.size())),
                                   crypto::asBytes(token));
}

// What both endpoints share: checks, query, config, credential. Either the ICE server and the
// query, or the error response.
struct Minted {
  IceServer server;
  IceQuery query;
};

std::variant<Minted, admin::Response> mint(const ConfigHolder& configs,
                                           const AuthHandlerOptions& options,
                                           const admin::Request& request) {
  if (!authorized(options.bearer_token, request)) {
    return errorResponse(401, "missing or invalid bearer token");
  }
  auto query = parseIceQuery(request.query);
  if (!query) return errorResponse(400, query.error().message);
  if (query->service != "turn") return errorResponse(400, R"("service" must be "turn")");
  const auto config = configs.get();
  if (config == nullptr) return errorResponse(500, "no dataplane configuration available");
  auto server = iceServer(*config, *query, options.clock());
  if (!server) {
    spdlog::error("cannot mint a credential: {}", server.error().message);
    return errorResponse(500, "could not generate TURN credential: " + server.error().message);
  }
  if (server->urls.empty()) return errorResponse(404, "no valid listener found");
  return Minted{std::move(*server), std::move(*query)};
}

}  // namespace

admin::Handler turnAuthHandler(const ConfigHolder& configs, AuthHandlerOptions options) {
  return [&configs, options = std::move(options)](const admin::Request& request) {
    // "/" is a subtree pattern in the router's Go rules: other paths are not ours.
    if (request.path != "/") return errorResponse(404, "404 page not found");
    auto minted = mint(configs, options, request);
    if (auto* error = std::get_if<admin::Response>(&minted)) return std::move(*error);
    const Minted& m = std::get<Minted>(minted);
    return jsonResponse(200, {{"username", m.server.credential.username},
                              {"password", m.server.credential.password},
                              {"ttl", m.query.ttl.count()},
                              {"uris", m.server.urls}});
  };
}

admin::Handler iceAuthHandler(const ConfigHolder& configs, AuthHandlerOptions options) {
  return [&configs, options = std::move(options)](const admin::Request& request) {
    auto minted = mint(configs, options, request);
    if (auto* error = std::get_if<admin::Response>(&minted)) return std::move(*error);
    const Minted& m = std::get<Minted>(minted);
    const nlohmann::json server = {{"urls", m.server.urls},
                                   {"username", m.server.credential.username},
                                   {"credential", m.server.credential.password}};
    return jsonResponse(200, {{"iceServers", nlohmann::json::array({server})},
                              {"iceTransportPolicy", m.query.ice_transport_policy}});
  };
}

}  // namespace kturn::auth
