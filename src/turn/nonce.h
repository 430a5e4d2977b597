// Stateless, expiring nonces bound to the client's IP address (RFC 8489 §9.2, "nonce" and
// §9.2.4 "438 Stale Nonce"). A nonce is its own expiry time plus a MAC over that time and the
// client's IP under a per-process key, hex-encoded: the server keeps no state per client, a nonce
// is useless from another address, and expiry needs no timer. Not the port: a client's other
// connections (RFC 6062 data connections, a TCP reconnect) share its nonce, as they do in coturn,
// and coturn's turnutils_uclient relies on that; the credentials still guard every request.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "kturn/transport_address.h"

namespace kturn::turn {

class NonceGenerator {
 public:
  static constexpr size_t kSize = 32;  // 16 bytes hex: 4 expiry + 12 MAC
  using Nonce = std::array<char, kSize>;

  // `key` is random bytes the caller draws once (the core never reads an RNG itself).
  explicit NonceGenerator(std::span<const uint8_t, 32> key);

  Nonce make(const TransportAddress& client, int64_t expires_unix) const;

  enum class Check : uint8_t { kValid, kStale, kInvalid };
  // kStale for a nonce this server made for this client that has expired; kInvalid for anything
  // else (forged, malformed, other client). Both are answered with 438 and a fresh nonce.
  Check check(std::string_view nonce, const TransportAddress& client, int64_t now_unix) const;

 private:
  std::array<uint8_t, 12> mac(const IpAddress& client, uint32_t expires) const;
  std::array<uint8_t, 32> key_;
};

}  // namespace kturn::turn
