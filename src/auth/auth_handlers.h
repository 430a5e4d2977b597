// The HTTP handlers of kturn-auth, STUNner's auth service API (stunner-auth-service
// api/stunner.yaml), served by the admin HTTP server (admin/admin_server.h):
//   GET /     TURN REST API response {"username","password","ttl","uris"}
//   GET /ice  RTCConfiguration {"iceServers":[{"urls","username","credential"}],
//                               "iceTransportPolicy"}
// Query parameters and how the configs of several gateways combine in ice_config.h: /ice has one
// iceServers entry per gateway with a selected listener, / the first of them. Errors: 400 for a
// bad query (service other than "turn"), 401 without the bearer token when one is configured,
// 404 when no listener is selected, 500 when no config is held (none arrived yet, or every one
// was deleted) or no selected gateway can mint a credential. Error bodies are JSON
// {"code":<status>,"message":"..."}.
//
// kturn adds the probes of its chart: GET /live (200 while the process serves) and GET /ready
// (200 once every origin's state has been read; 503 before that and while shutting down, so a
// rolled pod takes requests only when it can answer them and leaves the Service before it
// stops answering).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "admin/handler.h"
#include "auth/config_holder.h"
#include "auth/region_policy.h"

namespace kturn::auth {

struct AuthHandlerOptions {
  // When not empty, requests must carry "Authorization: Bearer <token>".
  std::string bearer_token{};
  // The host of every URI when a request names none (public-addr): STUNNER_PUBLIC_ADDR, as
  // stunner-auth-service reads it. Empty: each listener's public address, else its address.
  std::string public_address{};
  std::function<std::chrono::system_clock::time_point()> clock = std::chrono::system_clock::now;
  // kturn: the order of regions (--region-network, --region-order).
  RegionPolicy regions{};
};

// The configs of every origin kturn-auth follows (one holder each); answers are built from all
// of them. The holders must outlive the handler.
using ConfigSources = std::vector<const ConfigHolder*>;

admin::Handler turnAuthHandler(ConfigSources configs, AuthHandlerOptions options);
admin::Handler liveHandler();
// `unready()` names what keeps the service from being ready, one reason each (an origin not
// read yet, a shutdown in progress); nothing: ready. Called on the server's thread.
admin::Handler readyHandler(std::function<std::vector<std::string>()> unready);
admin::Handler iceAuthHandler(ConfigSources configs, AuthHandlerOptions options);
// One origin.
inline admin::Handler turnAuthHandler(const ConfigHolder& configs, AuthHandlerOptions options) {
  return turnAuthHandler(ConfigSources{&configs}, std::move(options));
}
inline admin::Handler iceAuthHandler(const ConfigHolder& configs, AuthHandlerOptions options) {
  return iceAuthHandler(ConfigSources{&configs}, std::move(options));
}

}  // namespace kturn::auth
