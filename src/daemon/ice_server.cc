#include "daemon/ice_server.h"

#include <nlohmann/json.hpp>

#include "config/turn_uri.h"
#include "turn/authenticator.h"

namespace kturn::daemon {

std::optional<std::string> iceServerEntry(const config::StunnerConfig& config,
                                          std::chrono::system_clock::time_point now,
                                          std::chrono::seconds ttl) {
  const config::Listener* listener = nullptr;
  for (const config::Listener& l : config.listeners) {
    if (l.protocolType() == config::ListenerProtocol::kTurnUdp) {
      listener = &l;
      break;
    }
  }
  if (listener == nullptr) return std::nullopt;

  std::string host =
      !listener->public_address.empty() ? listener->public_address : listener->address;
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  const int port = listener->public_port != 0 ? listener->public_port : listener->port;

  nlohmann::json entry;
  entry["urls"] = {config::formatTurnUri(config::ListenerProtocol::kTurnUdp, host, port)};
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
