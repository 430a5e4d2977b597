// The port the TURN core uses to obtain relayed transport addresses (RFC 8656 §7.2). The daemon
// implements it with real UDP sockets; tests use a fake. Called on Allocate and on allocation
// end only, never per packet.
#pragma once

#include <cstdint>
#include <optional>

#include "kturn/result.h"
#include "kturn/transport_address.h"
#include "turn/ids.h"

namespace kturn::turn {

struct RelayRequest {
  AllocationId allocation;
  ListenerId listener = 0;
  FiveTuple five_tuple;
  AddressFamily family = AddressFamily::kIPv4;
  bool even_port = false;     // EVEN-PORT present
  bool reserve_next = false;  // EVEN-PORT's R bit: keep port+1 for a later RESERVATION-TOKEN
  std::optional<uint64_t> reservation_token;  // use the port reserved under this token
  bool dont_fragment = false;                 // DONT-FRAGMENT: set DF on relayed IPv4 packets
};

struct RelayGrant {
  TransportAddress relayed;
  std::optional<uint64_t> reservation_token;  // set when reserve_next was honoured
};

class RelayAllocator {
 public:
  virtual ~RelayAllocator() = default;
  // Opens the relay for an allocation. Errors: kUnsupported when the family cannot be relayed
  // (440), kNotFound for an unknown reservation token (508), kExhausted when no port is free
  // (508).
  virtual Result<RelayGrant> open(const RelayRequest& request) = 0;
  // Releases the relay of an allocation that ended. Must tolerate unknown ids.
  virtual void close(AllocationId allocation) = 0;
};

}  // namespace kturn::turn
