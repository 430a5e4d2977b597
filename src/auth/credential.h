// Credentials kturn-auth hands out, minted from the auth section of a dataplane config the way
// STUNner's auth service does (stunner-auth-service internal/handler/ice.go):
//   static     the configured username and password, as they are;
//   ephemeral  username "<expiry-unix>:<user-id>" (user id possibly empty, then "<expiry>:"),
//              password base64(HMAC-SHA1(secret, username)) (TURN REST API draft, §2.2).
// Always minted with the current secret: during a rotation (docs/config.md) kturnd accepts the
// previous secret too, but new credentials must outlive it.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "config/auth.h"
#include "kturn/result.h"

namespace kturn::auth {

// STUNner's auth service default (internal/config DefaultTimeout): one day.
inline constexpr std::chrono::seconds kDefaultTtl{86400};

struct Credential {
  std::string username;
  std::string password;

  friend bool operator==(const Credential&, const Credential&) = default;
};

// kUnsupported for auth type "none" (no TURN credential exists), kInvalidArgument when the
// config lacks the credential fields its type needs.
Result<Credential> mintCredential(const config::Auth& auth, std::string_view user_id,
                                  std::chrono::system_clock::time_point now,
                                  std::chrono::seconds ttl);

}  // namespace kturn::auth
