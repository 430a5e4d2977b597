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
  // ADDITIONAL-ADDRESS-FAMILY IPv6 (RFC 8656 §7.2 dual allocation): an IPv6 relay as well as
  // the IPv4 one (`family`). Failing to open it does not fail the allocation.
  bool additional_ipv6 = false;
};

struct RelayGrant {
  TransportAddress relayed;
  std::optional<uint64_t> reservation_token;  // set when reserve_next was honoured
  // For additional_ipv6: the IPv6 relay, or why there is none (the codes of open()).
  std::optional<TransportAddress> additional;
  Error::Code additional_error = Error::Code::kUnsupported;
};

class RelayAllocator {
 public:
  virtual ~RelayAllocator() = default;
  // Opens the relay for an allocation. Errors: kUnsupported when the family cannot be relayed
  // (440), kNotFound for an unknown reservation token (508), kExhausted when no port is free
  // (508).
  virtual Result<RelayGrant> open(const RelayRequest& request) = 0;
  // Releases the relay of an allocation that ended, both halves of a dual allocation. Must
  // tolerate unknown ids.
  virtual void close(AllocationId allocation) = 0;
  // Releases one half of a dual allocation (Refresh with REQUESTED-ADDRESS-FAMILY and LIFETIME
  // 0); the relay of the other family stays. Must tolerate unknown ids and families.
  virtual void closeFamily(AllocationId allocation, AddressFamily family) = 0;
};

}  // namespace kturn::turn
