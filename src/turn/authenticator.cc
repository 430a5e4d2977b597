#include "turn/authenticator.h"

#include <charconv>

#include "common/crypto.h"

namespace kturn::turn {

std::string restPassword(std::string_view secret, std::string_view username) {
  const auto mac = crypto::hmacSha1(crypto::asBytes(secret), {crypto::asBytes(username)});
  return crypto::base64Encode(mac);
}

std::optional<int64_t> restUsernameExpiry(std::string_view username) {
  const std::string_view ts = username.substr(0, username.find(':'));
  int64_t expiry = 0;
  const auto [ptr, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), expiry);
  if (ts.empty() || ec != std::errc() || ptr != ts.data() + ts.size()) return std::nullopt;
  return expiry;
}

Authenticator::Outcome Authenticator::lookup(const ServerConfig& config, std::string_view username,
                                             int64_t now_unix, stun::PasswordAlgorithm algorithm) {
  switch (config.auth_mode) {
    case AuthMode::kNone:
      return {std::nullopt, AuthFailure::kDisabled};
    case AuthMode::kStatic:
      if (username != config.static_username) return {std::nullopt, AuthFailure::kUnknownUser};
      return {stun::longTermKey(username, config.realm, config.static_password, algorithm), {}};
    case AuthMode::kEphemeral: {
      const auto expiry = restUsernameExpiry(username);
      if (!expiry) return {std::nullopt, AuthFailure::kMalformedUser};
      if (*expiry < now_unix) return {std::nullopt, AuthFailure::kExpired};
      const std::string password = restPassword(config.shared_secret, username);
      return {stun::longTermKey(username, config.realm, password, algorithm), {}};
    }
  }
  return {std::nullopt, AuthFailure::kUnknownUser};
}

}  // namespace kturn::turn
