// Identifiers shared between the TURN core and the I/O layer that drives it.
#pragma once

#include <cstdint>

namespace kturn::turn {

// A listener as numbered by the daemon; stable for the listener's life across config reloads.
using ListenerId = uint32_t;
// A cluster of the config, for per-cluster traffic counters; stable across configs for a name.
// 0: traffic not attributed to a cluster.
using ClusterId = uint16_t;

// An allocation's slot in its worker's table plus a generation, so an id that outlived its
// allocation never reaches a newer one. The I/O layer tags the allocation's relay socket with it.
struct AllocationId {
  uint32_t index = 0;
  uint32_t generation = 0;
  friend bool operator==(const AllocationId&, const AllocationId&) = default;
};

}  // namespace kturn::turn
