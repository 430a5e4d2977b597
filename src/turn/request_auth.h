// Request authentication (RFC 8489 §9.2 long-term credentials, RFC 7635 access tokens): decides
// whether a TURN request's credentials hold and keeps the state that takes, the nonces, the
// per-source failure throttle and the hand-off to the kernel drop list. It sends nothing; the
// server answers what it decides. Worker-local like the rest of the core.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "kturn/transport_address.h"
#include "stun/integrity.h"
#include "stun/message.h"
#include "turn/allocation.h"
#include "turn/auth_throttle.h"
#include "turn/ids.h"
#include "turn/nonce.h"
#include "turn/server_config.h"
#include "turn/server_stats.h"
#include "turn/source_blocker.h"
#include "turn/time.h"

namespace kturn::turn {

class RequestAuth {
 public:
  // `nonce_key`: random, drawn once for the process (every core takes the others' nonces).
  explicit RequestAuth(std::span<const uint8_t, 32> nonce_key) : nonces_(nonce_key) {}
  // Takes the sources that use up their authentication failures; null: none. Not owned.
  void setSourceBlocker(SourceBlocker* blocker) { blocker_ = blocker; }

  // One request to check: its message, where it came from, and the allocation of its 5-tuple
  // (or, for ConnectionBind, the one it names), if any.
  struct Request {
    const stun::MessageView& message;
    ListenerId listener;
    const FiveTuple& five_tuple;
    const Now& now;
    const Allocation* allocation;
  };
  struct Decision {
    enum class Kind : uint8_t {
      kAccepted,   // `key` checks the request and signs the response
      kChallenge,  // answer `code` (401 or 438) with REALM and a fresh NONCE
      kRefused,    // answer error `code`
      kDropped,    // the source is throttled: no answer, no HMAC spent
    };
    Kind kind = Kind::kRefused;
    int code = 0;
    stun::IntegrityKey key;
    bool oauth = false;  // accepted with an ACCESS-TOKEN
  };
  // Counts the failures in `stats`; a failure that uses up the source's allowance may also put
  // it in the drop list.
  Decision check(const ServerConfig& config, const Request& request, ServerStats& stats);

  // A fresh NONCE for a challenge to `client`, valid for the config's nonce lifetime.
  NonceGenerator::Nonce nonceFor(const ServerConfig& config, const TransportAddress& client,
                                 int64_t now_unix) const {
    return nonces_.make(client, now_unix + config.lifetimes.nonce.count());
  }

 private:
  static Decision challenge(int code) { return {Decision::Kind::kChallenge, code, {}, false}; }
  static Decision refused(int code) { return {Decision::Kind::kRefused, code, {}, false}; }
  // Credentials that were presented and are wrong (401 or 441): counts against the source.
  Decision rejectCredentials(const ServerConfig& config, const Request& request, int code,
                             ServerStats& stats);
  // The ACCESS-TOKEN path (RFC 7635): the mac-key of a token that decrypts with the key USERNAME
  // names and is within its lifetime; otherwise the refusal.
  std::optional<stun::IntegrityKey> tokenKey(const ServerConfig& config, const Request& request,
                                             std::string_view kid, ServerStats& stats,
                                             Decision& refusal);

  NonceGenerator nonces_;
  AuthThrottle throttle_;
  SourceBlocker* blocker_ = nullptr;
};

}  // namespace kturn::turn
