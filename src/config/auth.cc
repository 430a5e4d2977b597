#include "config/auth.h"

#include "config/text_util.h"

namespace kturn::config {

AuthType parseAuthType(std::string_view text) {
  const std::string t = toLower(text);
  if (t == "static" || t == "plaintext") return AuthType::kStatic;
  // "timewindowed" is only known to stunner-auth-service, not to stunnerd; accepting it costs
  // nothing and lets the auth service's and the dataplane's configs agree.
  if (t == "ephemeral" || t == "longterm" || t == "timewindowed") return AuthType::kEphemeral;
  if (t == "none") return AuthType::kNone;
  return AuthType::kUnknown;
}

std::string_view toString(AuthType type) {
  switch (type) {
    case AuthType::kNone:
      return "none";
    case AuthType::kStatic:
      return "static";
    case AuthType::kEphemeral:
      return "ephemeral";
    case AuthType::kUnknown:
      break;
  }
  return "<unknown>";
}

std::optional<std::string_view> Auth::credential(std::string_view key) const {
  const auto it = credentials.find(std::string(key));
  if (it == credentials.end()) return std::nullopt;
  return std::string_view(it->second);
}

}  // namespace kturn::config
