// RFC 8016 mobility across the daemon's workers. A client that changes address sends its Refresh
// with MOBILITY-TICKET from the new address, and the kernel hands that 5-tuple to whichever
// worker SO_REUSEPORT picks, often not the one whose core holds the allocation (the ticket says
// which does). That core checks the request and gives up the allocation, relay and all; the
// receiving core adopts it under the new 5-tuple and answers the Refresh, so from then on the
// client's datagrams and its allocation are on the same worker. Rare (once per address change);
// nothing here is on a packet's path.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kturn/transport_address.h"
#include "turn/allocation.h"
#include "turn/ids.h"
#include "turn/relay_allocator.h"

namespace kturn::turn {

// The Refresh that asks for a move, as received: where from, on which listener, its bytes.
struct MoveRequest {
  ListenerId listener = 0;
  FiveTuple five_tuple;
  std::vector<uint8_t> packet;
};

// An allocation in transit between two cores, out of the first one's tables.
struct MovedAllocation {
  std::unique_ptr<Allocation> allocation;
  std::unique_ptr<RelayHandle> relay;
};

// How a core reaches the core of another worker (the daemon's workers; tests wire two cores).
class MobilityRouter {
 public:
  virtual ~MobilityRouter() = default;
  // Hands `request` to the core of worker `owner` (Server::releaseForMove), whose answer comes
  // back to this core (Server::adoptMoved) or, if the owner refuses, goes to the client from
  // the owner. False when there is no such worker: the core answers 437 itself.
  virtual bool requestMove(uint8_t owner, MoveRequest request) = 0;
};

}  // namespace kturn::turn
