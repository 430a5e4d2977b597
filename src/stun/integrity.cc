#include "stun/integrity.h"

#include <zlib.h>

#include <cstring>

#include "common/crypto.h"
#include "stun/byte_order.h"

namespace kturn::stun {
namespace {

// The HMAC input of an integrity attribute at `offset` is the message before it with the header
// length rewritten to end just after the attribute (RFC 8489 §14.5).
template <class MacFn>
IntegrityCheck checkMac(const MessageView& m, const Attribute& a, size_t mac_size, MacFn mac) {
  if (a.value.size() != mac_size) return IntegrityCheck::kInvalid;
  const auto bytes = m.bytes();
  uint8_t header[kHeaderSize];
  std::memcpy(header, bytes.data(), kHeaderSize);
  store16(header + 2, static_cast<uint16_t>(a.offset + 4 + mac_size - kHeaderSize));
  const auto digest =
      mac({header, kHeaderSize}, bytes.subspan(kHeaderSize, a.offset - kHeaderSize));
  return crypto::equalConstantTime({digest.data(), mac_size}, a.value) ? IntegrityCheck::kValid
                                                                       : IntegrityCheck::kInvalid;
}

}  // namespace

IntegrityKey longTermKey(std::string_view username, std::string_view realm,
                         std::string_view password, PasswordAlgorithm algorithm) {
  using crypto::asBytes;
  static constexpr uint8_t kColon = ':';
  const std::span<const uint8_t> colon{&kColon, 1};
  IntegrityKey key;
  if (algorithm == PasswordAlgorithm::kSha256) {
    const auto d =
        crypto::sha256({asBytes(username), colon, asBytes(realm), colon, asBytes(password)});
    std::memcpy(key.bytes.data(), d.data(), d.size());
    key.size = static_cast<uint8_t>(d.size());
  } else {
    const auto d =
        crypto::md5({asBytes(username), colon, asBytes(realm), colon, asBytes(password)});
    std::memcpy(key.bytes.data(), d.data(), d.size());
    key.size = static_cast<uint8_t>(d.size());
  }
  return key;
}

uint32_t crc32(std::span<const uint8_t> bytes) {
  // zlib's CRC-32 is FINGERPRINT's (ISO HDLC, reflected, init and final XOR all ones), computed
  // several bytes at a time rather than one table lookup per byte.
  return static_cast<uint32_t>(::crc32_z(0, bytes.data(), bytes.size()));
}

IntegrityCheck checkMessageIntegrity(const MessageView& message, std::span<const uint8_t> key) {
  if (const Attribute* a = message.find(attr::kMessageIntegrity)) {
    return checkMac(message, *a, 20, [&](std::span<const uint8_t> h, std::span<const uint8_t> b) {
      return crypto::hmacSha1(key, {h, b});
    });
  }
  if (const Attribute* a = message.find(attr::kMessageIntegritySha256)) {
    // RFC 8489 §14.6 allows truncation to 16..32 bytes in multiples of 4; kturn accepts only the
    // full 32 bytes it also sends, as coturn and pion do.
    return checkMac(message, *a, 32, [&](std::span<const uint8_t> h, std::span<const uint8_t> b) {
      return crypto::hmacSha256(key, {h, b});
    });
  }
  return IntegrityCheck::kAbsent;
}

IntegrityCheck checkFingerprint(const MessageView& message) {
  const Attribute* a = message.find(attr::kFingerprint);
  if (a == nullptr) return IntegrityCheck::kAbsent;
  if (a->value.size() != 4) return IntegrityCheck::kInvalid;
  const auto bytes = message.bytes();
  // The CRC covers the message up to FINGERPRINT with the length already including it, which is
  // the header as sent since FINGERPRINT is last.
  const uint32_t expected = crc32(bytes.first(a->offset)) ^ kFingerprintXor;
  return load32(a->value.data()) == expected ? IntegrityCheck::kValid : IntegrityCheck::kInvalid;
}

}  // namespace kturn::stun
