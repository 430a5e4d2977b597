// Message integrity and fingerprint checks (RFC 8489 §9.2, §14.5-14.7).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "stun/constants.h"
#include "stun/message.h"

namespace kturn::stun {

// A long-term credential key: MD5 (16 bytes) or SHA-256 (32 bytes) of
// "username:realm:password" (RFC 8489 §9.2.2). Short-term keys are the password itself.
struct IntegrityKey {
  std::array<uint8_t, 32> bytes{};
  uint8_t size = 0;
  std::span<const uint8_t> span() const { return {bytes.data(), size}; }
};

IntegrityKey longTermKey(std::string_view username, std::string_view realm,
                         std::string_view password,
                         PasswordAlgorithm algorithm = PasswordAlgorithm::kMd5);

// CRC-32 (ISO-HDLC, as in zlib) of `bytes`.
uint32_t crc32(std::span<const uint8_t> bytes);

enum class IntegrityCheck : uint8_t { kAbsent, kValid, kInvalid };

// Checks MESSAGE-INTEGRITY (HMAC-SHA1) if present, else MESSAGE-INTEGRITY-SHA256.
IntegrityCheck checkMessageIntegrity(const MessageView& message, std::span<const uint8_t> key);
IntegrityCheck checkFingerprint(const MessageView& message);

}  // namespace kturn::stun
