// Long-term credential lookup for STUNner's auth modes (docs/auth.md): static (one
// username/password) and ephemeral (TURN REST API, draft-uberti-behave-turn-rest-00 §2.2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "stun/integrity.h"
#include "turn/server_config.h"

namespace kturn::turn {

enum class AuthFailure : uint8_t {
  kUnknownUser,    // static mode, username differs
  kExpired,        // ephemeral username whose expiry has passed
  kMalformedUser,  // ephemeral username without a numeric expiry
  kDisabled,       // auth mode "none": TURN is not offered
};

// The REST password for `username`: base64(HMAC-SHA1(secret, username)).
std::string restPassword(std::string_view secret, std::string_view username);

// Parses the expiry of a TURN REST username "<expiry>:<user>" (or a bare "<expiry>").
std::optional<int64_t> restUsernameExpiry(std::string_view username);

class Authenticator {
 public:
  // Returns the long-term key for `username` under `config`, or why there is none. `now_unix`
  // checks ephemeral expiry. Costs one HMAC and one MD5: called per authenticated request, never
  // per relayed packet.
  struct Outcome {
    std::optional<stun::IntegrityKey> key;
    AuthFailure failure = AuthFailure::kUnknownUser;
  };
  static Outcome lookup(const ServerConfig& config, std::string_view username, int64_t now_unix,
                        stun::PasswordAlgorithm algorithm = stun::PasswordAlgorithm::kMd5);
};

}  // namespace kturn::turn
