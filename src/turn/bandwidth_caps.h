// The bandwidth caps (ServerConfig::allocation_bytes_per_second and listener_bytes_per_second):
// a token bucket per allocation and direction, held in the Allocation, and one per listener and
// direction, held here. Datagrams over a cap are dropped; peer connections (RFC 6062), which are
// byte streams, are paced instead. No allocation per packet: the listener table grows only when
// a new listener id first relays.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "turn/allocation.h"
#include "turn/ids.h"
#include "turn/server_config.h"
#include "turn/time.h"
#include "turn/token_bucket.h"

namespace kturn::turn {

class BandwidthCaps {
 public:
  enum class Direction : uint8_t { kToPeers = 0, kToClient = 1 };

  explicit BandwidthCaps(const ServerConfig& config) { apply(config); }
  // The rates of a new config; the buckets keep what they hold.
  void apply(const ServerConfig& config) {
    per_allocation_ = config.allocation_bytes_per_second;
    per_listener_ = config.listener_bytes_per_second;
  }
  bool enabled() const { return per_allocation_ != 0 || per_listener_ != 0; }

  // A datagram of `bytes` relayed one way by `a`: true if the allocation's cap, then its
  // listener's, holds it (each takes it); false to drop it.
  bool take(Allocation& a, Direction direction, uint64_t bytes, MonoTime now);

  // A peer connection of `a`: the bytes it may read now one way, the least of what the
  // allocation's and the listener's caps hold (UINT64_MAX without caps). Then spend() what it
  // read.
  uint64_t available(Allocation& a, Direction direction, MonoTime now);
  void spend(Allocation& a, Direction direction, uint64_t bytes);

 private:
  static TokenBucket& allocationBucket(Allocation& a, Direction direction) {
    return direction == Direction::kToPeers ? a.budget_to_peers : a.budget_to_client;
  }
  TokenBucket& listenerBucket(ListenerId listener, Direction direction);

  uint64_t per_allocation_ = 0;
  uint64_t per_listener_ = 0;
  std::vector<std::array<TokenBucket, 2>> listeners_;  // by ListenerId, then Direction
};

}  // namespace kturn::turn
