// Thin wrappers over OpenSSL 3 for the few primitives STUN/TURN needs (no hand-written
// crypto). Nothing here allocates: digest contexts live on the stack, and HMAC is
// RFC 2104 composed over OpenSSL's digests (crypto.cc says why).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kturn::crypto {

using Sha1Digest = std::array<uint8_t, 20>;
using Sha256Digest = std::array<uint8_t, 32>;
using Md5Digest = std::array<uint8_t, 16>;
using ByteSpan = std::span<const uint8_t>;

inline ByteSpan asBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// HMAC over the concatenation of `parts`.
Sha1Digest hmacSha1(ByteSpan key, std::initializer_list<ByteSpan> parts);
Sha256Digest hmacSha256(ByteSpan key, std::initializer_list<ByteSpan> parts);

Md5Digest md5(std::initializer_list<ByteSpan> parts);
Sha256Digest sha256(std::initializer_list<ByteSpan> parts);

// Constant-time comparison for MACs and passwords.
bool equalConstantTime(ByteSpan a, ByteSpan b);

// RFC 4648 base64 with padding, as Go's base64.StdEncoding (STUNner's credentials, PEM fields).
std::string base64Encode(ByteSpan data);
// Accepts padded standard base64; whitespace is not allowed. nullopt on any invalid input.
std::optional<std::vector<uint8_t>> base64Decode(std::string_view text);

// AES-GCM (AES-128 or AES-256 by the key's size, 16 or 32 bytes) with a 16-byte tag: RFC 7635's
// A128GCM and A256GCM access tokens. `out` holds the plaintext's (ciphertext's) size. Decrypt
// returns false when the key size is not 16 or 32, the IV is empty or the tag does not verify
// (then `out` holds nothing usable).
bool aesGcmEncrypt(ByteSpan key, ByteSpan iv, ByteSpan aad, ByteSpan plaintext, uint8_t* out,
                   std::span<uint8_t, 16> tag);
bool aesGcmDecrypt(ByteSpan key, ByteSpan iv, ByteSpan aad, ByteSpan ciphertext,
                   std::span<const uint8_t, 16> tag, uint8_t* out);

// Cryptographically secure random bytes. Not for the sans-I/O core: callers pass randomness in.
void randomBytes(std::span<uint8_t> out);

}  // namespace kturn::crypto
