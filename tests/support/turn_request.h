// The one way tests, fuzz targets and micro benchmarks build the STUN/TURN messages a client
// sends: the header, the caller's attributes, long-term credentials (RFC 8489 §9.2.4) and
// FINGERPRINT last (§14.7). Free of gtest, so fuzz replay drivers and benchmarks include it too.
// A test that builds something deliberately odd (credentials out of order, padding to a size)
// uses stun::MessageBuilder itself.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "kturn/result.h"
#include "stun/constants.h"
#include "stun/message.h"
#include "stun/message_builder.h"

namespace kturn::testing {

// Adds a message's own attributes, the ones before the credentials.
using Fill = std::function<void(stun::MessageBuilder&)>;

// Long-term credentials (RFC 8489 §9.2). The views must outlive the build.
struct LongTermCredentials {
  std::string_view username;
  std::string_view realm;
  std::string_view nonce;
  // stun::longTermKey(username, realm, password[, algorithm]); RFC 7635: the token's mac-key.
  std::span<const uint8_t> key;
  // Set: a PASSWORD-ALGORITHM attribute after NONCE naming it (§14.11, no parameters).
  std::optional<stun::PasswordAlgorithm> password_algorithm{};
  bool sha256_integrity = false;  // MESSAGE-INTEGRITY-SHA256 (§14.6) instead of -INTEGRITY
};

struct TurnRequest {
  stun::Method method = stun::Method::kBinding;
  stun::MessageClass cls = stun::MessageClass::kRequest;
  stun::TransactionId transaction_id{};
  Fill fill{};
  // USERNAME, REALM, NONCE[, PASSWORD-ALGORITHM], then MESSAGE-INTEGRITY(-SHA256).
  std::optional<LongTermCredentials> credentials{};
  bool fingerprint = true;
};

// The message's bytes; an error when it does not fit in 1500 bytes.
inline Result<std::vector<uint8_t>> buildRequest(const TurnRequest& request) {
  uint8_t buf[1500];
  stun::MessageBuilder b(buf, request.method, request.cls, request.transaction_id);
  if (request.fill) request.fill(b);
  if (const auto& c = request.credentials) {
    b.addString(stun::attr::kUsername, c->username)
        .addString(stun::attr::kRealm, c->realm)
        .addString(stun::attr::kNonce, c->nonce);
    if (c->password_algorithm) {
      const auto algorithm = static_cast<uint16_t>(*c->password_algorithm);
      const uint8_t value[] = {static_cast<uint8_t>(algorithm >> 8),
                               static_cast<uint8_t>(algorithm), 0, 0};
      b.add(stun::attr::kPasswordAlgorithm, value);
    }
    if (c->sha256_integrity) {
      b.addMessageIntegritySha256(c->key);
    } else {
      b.addMessageIntegrity(c->key);
    }
  }
  if (request.fingerprint) b.addFingerprint();
  const auto out = b.finish();
  if (!out) return out.error();
  return std::vector<uint8_t>(out->begin(), out->end());
}

}  // namespace kturn::testing
