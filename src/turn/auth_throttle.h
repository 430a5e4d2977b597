// Per-source-address limit on failed authentications, so a 401 flood from one address cannot
// burn the worker's CPU on HMACs and starve well-behaved clients (docs/security.md). A fixed table
// indexed by a hash of the address: constant memory, no allocation; a collision merely resets
// the other address's count. Worker-local like the rest of the core.
#pragma once

#include <array>
#include <cstdint>

#include "kturn/transport_address.h"

namespace kturn::turn {

class AuthThrottle {
 public:
  struct Limits {
    uint32_t max_failures = 20;  // per window; 0 disables the throttle
    int64_t window_seconds = 10;
  };

  // False while `ip` has used up its failures in the current window: its authenticated
  // requests are then dropped before any HMAC is computed.
  bool allows(const IpAddress& ip, int64_t now_seconds, const Limits& limits) const;
  // Returns true for the failure that uses up the allowance (the source is throttled from now
  // until its window ends), false for every other.
  bool recordFailure(const IpAddress& ip, int64_t now_seconds, const Limits& limits);

 private:
  static constexpr size_t kSlots = 4096;
  struct Slot {
    IpAddress ip;
    int64_t window_start = 0;
    uint32_t failures = 0;
  };
  static size_t slotOf(const IpAddress& ip) {
    const auto b = ip.bytes();
    return hashBytes(b.data(), b.size(), 0x6b7475726e) % kSlots;
  }
  std::array<Slot, kSlots> slots_{};
};

}  // namespace kturn::turn
