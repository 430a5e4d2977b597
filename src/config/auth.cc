#include "config/auth.h"

#include <charconv>
#include <cstdio>
#include <ctime>

#include "config/base64.h"
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

std::optional<int64_t> parseTimestamp(std::string_view text) {
  int64_t seconds = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (!text.empty() && ec == std::errc() && ptr == text.data() + text.size()) return seconds;
  // RFC 3339 in UTC: YYYY-MM-DDTHH:MM:SSZ.
  std::tm tm{};
  const std::string s(text);
  char zulu = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &zulu) != 7 ||
      (zulu != 'Z' && zulu != 'z') || s.size() != 20) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const time_t t = timegm(&tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return static_cast<int64_t>(t);
}

std::optional<int64_t> Auth::previousSecretExpiry() const {
  const auto v = credential("previous_secret_expiry");
  return v ? parseTimestamp(*v) : std::nullopt;
}

Result<OAuthKey> parseOAuthKey(std::string_view text) {
  const size_t first = text.find(':');
  const size_t second = first == std::string_view::npos ? first : text.find(':', first + 1);
  if (first == 0 || second == std::string_view::npos) {
    return makeError(Error::Code::kInvalidArgument, "want <kid>:<A256GCM|A128GCM>:<base64 key>");
  }
  const std::string_view alg = text.substr(first + 1, second - first - 1);
  const size_t size = alg == "A256GCM" ? 32 : alg == "A128GCM" ? 16 : 0;
  if (size == 0) {
    return makeError(Error::Code::kInvalidArgument,
                     "algorithm \"" + std::string(alg) + "\": want A256GCM or A128GCM");
  }
  const auto key = decodeBase64(text.substr(second + 1));
  if (!key || key->size() < size) {
    return makeError(Error::Code::kInvalidArgument, "the key must be base64 of at least " +
                                                        std::to_string(size) + " bytes for " +
                                                        std::string(alg));
  }
  return OAuthKey{std::string(text.substr(0, first)), key->substr(0, size)};
}

}  // namespace kturn::config
