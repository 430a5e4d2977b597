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

// RFC 6062 CONNECTION-ID: a TCP connection between a TCP allocation's relay and a peer. Its top
// 8 bits name the worker whose core owns the allocation, so a ConnectionBind arriving at another
// worker is handed to the owner; 0 is never an id.
using ConnectionId = uint32_t;
constexpr uint8_t connectionOwner(ConnectionId id) { return static_cast<uint8_t>(id >> 24); }

}  // namespace kturn::turn
