#include "daemon/ice_server.h"

#include <nlohmann/json.hpp>

#include "config/turn_uri.h"
#include "turn/authenticator.h"

namespace kturn::daemon {

std::optional<std::string> iceServerEntry(const config::StunnerConfig& config,
                                          std::chrono::system_clock::time_point now,
                                          std::chrono::seconds ttl) {
  // Every listener, UDP first: a browser tries them in order of preference.
  nlohmann::json urls = nlohmann::json::array();
  for (const auto protocol :
       {config::ListenerProtocol::kTurnUdp, config::ListenerProtocol::kTurnTcp,
        config::ListenerProtocol::kTurnTls, config::ListenerProtocol::kTurnDtls}) {
    for (const config::Listener& l : config.listeners) {
      if (l.protocolType() != protocol) continue;
      std::string host = !l.public_address.empty() ? l.public_address : l.address;
      if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
      const int port = l.public_port != 0 ? l.public_port : l.port;
      urls.push_back(config::formatTurnUri(protocol, host, port));
    }
  }
  if (urls.empty()) return std::nullopt;

  nlohmann::json entry;
  entry["urls"] = std::move(urls);
  switch (config.auth.authType()) {
    case config::AuthType::kStatic:
      entry["username"] = config.auth.username().value_or("");
      entry["credential"] = config.auth.password().value_or("");
      break;
    case config::AuthType::kEphemeral: {
      const auto expiry =
          std::chrono::duration_cast<std::chrono::seconds>((now + ttl).time_since_epoch()).count();
      const std::string username = std::to_string(expiry) + ":kturn";
      entry["username"] = username;
      entry["credential"] = turn::restPassword(config.auth.secret().value_or(""), username);
      break;
    }
    default:
      return std::nullopt;
  }
  return entry.dump();
}

}  // namespace kturn::daemon
