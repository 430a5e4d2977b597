// auth: how TURN clients authenticate (pkg/apis/v1/auth.go, RFC 8489 §9.2 long-term credentials,
// and the TURN REST API draft for ephemeral credentials).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kturn/result.h"

namespace kturn::config {

enum class AuthType {
  kUnknown,
  kNone,       // no authentication
  kStatic,     // one fixed username/password pair
  kEphemeral,  // time-windowed username, password = base64(HMAC-SHA1(secret, username))
};

// Accepts "static", "ephemeral", "none" and the legacy aliases "plaintext" (static), "longterm"
// and "timewindowed" (ephemeral), in any letter case. Returns kUnknown otherwise.
AuthType parseAuthType(std::string_view text);
// Unix seconds ("1796066556") or an RFC 3339 UTC time ("2026-12-01T00:00:00Z").
std::optional<int64_t> parseTimestamp(std::string_view text);

// The canonical name STUNner writes back: "static", "ephemeral" or "none".
std::string_view toString(AuthType type);

// One entry of auth.oauth_keys: the key id and the AES-GCM key (16 bytes for A128GCM, 32 for
// A256GCM: the first bytes of the base64 key, which may be longer, as coturn takes them).
struct OAuthKey {
  std::string kid;
  std::string key;
};
Result<OAuthKey> parseOAuthKey(std::string_view text);

struct Auth {
  std::string type{};   // as written, normalized to the canonical name by validate()
  std::string realm{};  // default "stunner.l7mp.io"
  // Keys: "username" and "password" for static, "secret" for ephemeral. Other keys are kept.
  std::map<std::string, std::string> credentials{};
  // kturn extension, third-party authorization (RFC 7635): this server's name, sent in
  // THIRD-PARTY-AUTHORIZATION (default: the realm), and the keys it shares with the
  // authorization server, each "<kid>:<A256GCM|A128GCM>:<base64 key>".
  std::string oauth_server_name{};
  std::vector<std::string> oauth_keys{};

  AuthType authType() const { return parseAuthType(type); }
  std::optional<std::string_view> credential(std::string_view key) const;
  std::optional<std::string_view> username() const { return credential("username"); }
  std::optional<std::string_view> password() const { return credential("password"); }
  std::optional<std::string_view> secret() const { return credential("secret"); }
  // kturn extension for rotating the ephemeral shared secret without failed calls: the secret
  // being replaced keeps validating until `previous_secret_expiry` (unix seconds or RFC 3339
  // UTC). String values, so the credentials map keeps STUNner's map[string]string schema.
  std::optional<std::string_view> previousSecret() const { return credential("previous_secret"); }
  std::optional<int64_t> previousSecretExpiry() const;

  friend bool operator==(const Auth&, const Auth&) = default;
};

}  // namespace kturn::config
