// ACCESS-TOKEN (RFC 7635 §6.2, third-party authorization): a self-contained token an
// authorization server encrypts for this TURN server with a key they share, carrying the
// session key the client signs its requests with. The layout is coturn's, which its
// turnutils_uclient -J and existing OAuth deployments use:
//
//   token      = nonce-length (16 bits) | nonce | AES-GCM(encrypted block) | tag (16 bytes)
//   encrypted  = key-length (16 bits) | mac-key | timestamp (64 bits) | lifetime (32 bits)
//
// AES-128-GCM or AES-256-GCM by the shared key's size (A128GCM, A256GCM), with the server name
// (THIRD-PARTY-AUTHORIZATION) as additional authenticated data. The timestamp is NTP-like:
// seconds since the epoch in its top 48 bits, a fraction in the low 16. The request's USERNAME
// names the shared key (its kid) and its MESSAGE-INTEGRITY is keyed with the mac-key itself;
// coturn's clients use the first 16 bytes of a 20-byte mac-key for HMAC-SHA1, which the server
// accepts too (server.cc).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace kturn::turn {

struct AccessToken {
  std::array<uint8_t, 32> mac_key{};  // 20 bytes (MESSAGE-INTEGRITY) or 32 (-SHA256)
  uint8_t mac_key_size = 0;
  int64_t issued_unix = 0;  // the timestamp's seconds
  uint32_t lifetime = 0;    // seconds
};

inline constexpr size_t kAccessTokenNonceSize = 12;

// Decrypts and parses `token` with `key` (16 or 32 bytes) and `server_name`. nullopt when the
// token is malformed, does not decrypt (wrong key, server name or a forged byte: the tag
// fails), or carries a mac-key of another size than 20 or 32 bytes.
std::optional<AccessToken> decodeAccessToken(std::span<const uint8_t> token,
                                             std::string_view server_name,
                                             std::span<const uint8_t> key);

// The token an authorization server issues (for tests and tools): `nonce` is 12 random bytes.
// Returns its size in `out` (which must hold 2 + 12 + 2 + mac_key_size + 12 + 16 bytes), 0 on
// a bad key size.
size_t encodeAccessToken(const AccessToken& token, std::string_view server_name,
                         std::span<const uint8_t> key,
                         std::span<const uint8_t, kAccessTokenNonceSize> nonce,
                         std::span<uint8_t> out);

}  // namespace kturn::turn
