#include "auth/credential.h"

#include "turn/authenticator.h"

namespace kturn::auth {

Result<Credential> mintCredential(const config::Auth& auth, std::string_view user_id,
                                  std::chrono::system_clock::time_point now,
                                  std::chrono::seconds ttl) {
  switch (auth.authType()) {
    case config::AuthType::kStatic: {
      const auto username = auth.username();
      const auto password = auth.password();
      if (!username || !password) {
        return makeError(Error::Code::kInvalidArgument,
                         "invalid config: no username or password (auth: static)");
      }
      return Credential{std::string(*username), std::string(*password)};
    }
    case config::AuthType::kEphemeral: {
      const auto secret = auth.secret();
      if (!secret) {
        return makeError(Error::Code::kInvalidArgument,
                         "invalid config: no shared secret (auth: ephemeral)");
      }
      const auto expiry =
          std::chrono::duration_cast<std::chrono::seconds>((now + ttl).time_since_epoch());
      std::string username = std::to_string(expiry.count()) + ":" + std::string(user_id);
      std::string password = turn::restPassword(*secret, username);
      return Credential{std::move(username), std::move(password)};
    }
    case config::AuthType::kNone:
      // No credential is checked, so an empty one is the answer, as stunner-auth-service gives.
      return Credential{};
    case config::AuthType::kUnknown:
      break;
  }
  return makeError(Error::Code::kInvalidArgument, "invalid config: unknown auth type");
}

}  // namespace kturn::auth
