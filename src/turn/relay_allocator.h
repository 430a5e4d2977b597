// The port the TURN core uses to obtain relayed transport addresses (RFC 8656 §7.2) and, for TCP
// allocations, to open and close peer connections (RFC 6062). The daemon implements it with real
// sockets; tests use a fake. Called on requests and allocation ends only, never per packet.
#pragma once

#include <cstdint>
#include <memory>
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
  // REQUESTED-TRANSPORT: kTcp opens a TCP relay (RFC 6062) that listens for peer connections
  // and connects to peers from the same address.
  TransportProtocol protocol = TransportProtocol::kUdp;
};

// Application bytes a peer connection relayed (RFC 6062), not yet counted by the core.
struct ConnectionTraffic {
  uint64_t to_peer = 0;    // from the client's data connection to the peer
  uint64_t to_client = 0;  // from the peer to the client's data connection
};

struct RelayGrant {
  TransportAddress relayed;
  std::optional<IpAddress> relayed_public_ip;  // Allocation::relayed_public_ip
  std::optional<uint64_t> reservation_token;   // set when reserve_next was honoured
  // For additional_ipv6: the IPv6 relay, or why there is none (the codes of open()).
  std::optional<TransportAddress> additional;
  Error::Code additional_error = Error::Code::kUnsupported;
};

// An allocation's relay, detached from one core's allocator to be attached to another's
// (RFC 8016 mobility): what it holds is the allocator's business.
class RelayHandle {
 public:
  virtual ~RelayHandle() = default;
};

class RelayAllocator {
 public:
  virtual ~RelayAllocator() = default;
  // Opens the relay for an allocation. Errors: kUnsupported when the family cannot be relayed
  // (440; for an IPv4 TCP relay, when the transport cannot: 442), kNotFound for an unknown
  // reservation token (508), kExhausted when no port is free (508).
  virtual Result<RelayGrant> open(const RelayRequest& request) = 0;
  // Releases the relay of an allocation that ended, both halves of a dual allocation. Must
  // tolerate unknown ids.
  virtual void close(AllocationId allocation) = 0;
  // Releases one half of a dual allocation (Refresh with REQUESTED-ADDRESS-FAMILY and LIFETIME
  // 0); the relay of the other family stays. Must tolerate unknown ids and families.
  virtual void closeFamily(AllocationId allocation, AddressFamily family) = 0;

  // RFC 6062, TCP allocations. Starts connecting `allocation`'s relayed address to `peer`; the
  // outcome comes back through Server::onPeerConnected(id, ...), within 30 s. False when no
  // attempt could be started (the Connect is answered 447 at once).
  virtual bool connectPeer(AllocationId allocation, ConnectionId id,
                           const TransportAddress& peer) = 0;
  // The ConnectionBind on the client data connection `data` succeeded: once its success
  // response is sent, bytes flow between that connection and peer connection `id`.
  virtual void bindConnection(ConnectionId id, const FiveTuple& data) = 0;
  // Closes peer connection `id` (never bound in time). An allocation's close() closes all of
  // its connections. Must tolerate unknown ids.
  virtual void closeConnection(ConnectionId id) = 0;
  // What peer connection `id` relayed since the last call (zero for unknown ids). The core
  // asks a connection's last counts before it closes the connection or writes the session
  // record, and the rest when the daemon calls Server::countConnectionTraffic().
  virtual ConnectionTraffic takeConnectionTraffic(ConnectionId id) = 0;

  // RFC 8016 mobility, UDP allocations only: takes the relay of `allocation` out of this
  // allocator without closing it (null for an unknown id); attach() gives it to `allocation` of
  // the allocator it moves to, which may be another worker's: the relay keeps its address and
  // what peers already sent to it.
  virtual std::unique_ptr<RelayHandle> detach(AllocationId allocation) = 0;
  virtual void attach(AllocationId allocation, std::unique_ptr<RelayHandle> relay) = 0;
};

}  // namespace kturn::turn
