#include "auth/auth_handlers.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <variant>

#include "auth/ice_config.h"

namespace kturn::auth {
namespace {

// STUNner's content type, byte for byte.
constexpr const char* kJson = "application/json; charset=UTF-8";

// A username is the request's bytes, which need not be UTF-8: such bytes are written as U+FFFD,
// as Go's encoding/json writes them (the credential stays signed over the bytes received).
admin::Response jsonResponse(unsigned status, const nlohmann::json& body) {
  return {.status = status,
          .content_type = kJson,
          .body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"};
}

admin::Response errorResponse(unsigned status, std::string message) {
  return jsonResponse(status, {{"code", status}, {"message", std::move(message)}});
}

// What both endpoints share: checks, query, configs, credentials. Either the ICE servers (at
// least one) and the query, or the error response.
struct Minted {
  std::vector<IceServer> servers;
  IceQuery query;
};

// Every origin's configs as one set. With one origin, its own set as it is; with more, each id
// prefixed with its origin's index ("1:media/gateway"), since two clusters may both have a
// gateway media/gateway.
std::shared_ptr<const ConfigSet> merged(const ConfigSources& sources) {
  if (sources.size() == 1) return sources.front()->get();
  auto all = std::make_shared<ConfigSet>();
  for (size_t i = 0; i < sources.size(); ++i) {
    for (const auto& [id, config] : *sources[i]->get()) {
      all->emplace(std::to_string(i) + ":" + id, config);
    }
  }
  return all;
}

// In STUNner's order: a malformed query (400), then no config at all (500), then a service
// other than "turn" (400).
std::variant<Minted, admin::Response> mint(const ConfigSources& configs,
                                           const AuthHandlerOptions& options,
                                           const admin::Request& request, Endpoint endpoint) {
  if (!admin::bearerAuthorized(request, options.bearer_token)) {
    return errorResponse(401, "missing or invalid bearer token");
  }
  auto query = parseIceQuery(request.query, endpoint);
  if (!query) return errorResponse(400, query.error().message);
  if (!query->public_addr && !options.public_address.empty()) {
    query->public_addr = options.public_address;
  }
  const auto current = merged(configs);
  if (current->empty()) return errorResponse(500, "no dataplane configuration available");
  if (query->service != "turn") return errorResponse(400, R"("service" must be "turn")");
  IceServerList list = iceServers(*current, *query, options.clock(), options.regions);
  for (const Error& e : list.errors) spdlog::error("cannot mint a credential: {}", e.message);
  if (list.servers.empty()) {
    // STUNner answers 404 here too; naming why the selected gateways gave nothing is kinder.
    if (!list.errors.empty()) {
      return errorResponse(500,
                           "could not generate TURN credential: " + list.errors.front().message);
    }
    return errorResponse(404, "no valid listener found");
  }
  return Minted{std::move(list.servers), std::move(*query)};
}

}  // namespace

admin::Handler turnAuthHandler(ConfigSources configs, AuthHandlerOptions options) {
  return
      [configs = std::move(configs), options = std::move(options)](const admin::Request& request) {
        // "/" is a subtree pattern in the router's Go rules: other paths are not ours.
        if (request.path != "/") return errorResponse(404, "404 page not found");
        auto minted = mint(configs, options, request, Endpoint::kTurn);
        if (auto* error = std::get_if<admin::Response>(&minted)) return std::move(*error);
        // The TURN REST API has room for one server: the first gateway's, as STUNner's service
        // (which takes whichever its map yields first); with regions, the nearest.
        const Minted& m = std::get<Minted>(minted);
        const IceServer& first = m.servers.front();
        return jsonResponse(200, {{"username", first.credential.username},
                                  {"password", first.credential.password},
                                  {"ttl", m.query.ttl.count()},
                                  {"uris", first.urls}});
      };
}

admin::Handler liveHandler() {
  return [](const admin::Request&) { return admin::Response{.status = 200, .body = "ok\n"}; };
}

admin::Handler readyHandler(std::function<std::vector<std::string>()> unready) {
  return [unready = std::move(unready)](const admin::Request&) {
    const std::vector<std::string> reasons = unready();
    if (reasons.empty()) return admin::Response{.status = 200, .body = "ok\n"};
    std::string body;
    for (const std::string& reason : reasons) body += reason + "\n";
    return admin::Response{.status = 503, .body = std::move(body)};
  };
}

admin::Handler iceAuthHandler(ConfigSources configs, AuthHandlerOptions options) {
  return
      [configs = std::move(configs), options = std::move(options)](const admin::Request& request) {
        auto minted = mint(configs, options, request, Endpoint::kIce);
        if (auto* error = std::get_if<admin::Response>(&minted)) return std::move(*error);
        const Minted& m = std::get<Minted>(minted);
        nlohmann::json servers = nlohmann::json::array();
        for (const IceServer& server : m.servers) {
          servers.push_back({{"urls", server.urls},
                             {"username", server.credential.username},
                             {"credential", server.credential.password}});
        }
        return jsonResponse(200, {{"iceServers", std::move(servers)},
                                  {"iceTransportPolicy", m.query.ice_transport_policy}});
      };
}

}  // namespace kturn::auth
