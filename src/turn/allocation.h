// An allocation and the permissions and channel bindings it holds (RFC 8656 §2, §5, §9, §12).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kturn/transport_address.h"
#include "stun/integrity.h"
#include "stun/message.h"
#include "turn/ids.h"
#include "turn/time.h"
#include "turn/token_bucket.h"

namespace kturn::turn {

// Whether the current config admits a peer, cached per config epoch so the per-packet check is
// one integer compare until the config changes (peer_policy.h: checked for every relayed packet).
struct PolicyVerdict {
  uint64_t epoch = 0;  // 0: never checked
  bool allowed = false;
  ClusterId cluster = 0;  // the admitting endpoint's cluster
};

// RFC 8656 §9: a permission is an IP address (no port) with an expiry.
struct Permission {
  IpAddress peer;
  MonoTime expires;
  PolicyVerdict ip_verdict;        // some endpoint admits this IP
  PolicyVerdict any_port_verdict;  // an endpoint admits this IP on every port
};

// RFC 8656 §12: a channel number bound to a peer transport address.
struct ChannelBinding {
  uint16_t number = 0;
  TransportAddress peer;
  MonoTime expires;
  PolicyVerdict verdict;   // for `peer` exactly
  bool offloaded = false;  // handed to the kernel fast path (ChannelOffload)
};

// RFC 6062 §5: a TCP connection between a TCP allocation's relayed address and a peer, from the
// Connect or accept that made it until it closes. The bytes it carries never pass through the
// core: once bound, the I/O layer splices it to the client's data connection.
struct PeerConnection {
  enum class State : uint8_t {
    kConnecting,   // Connect: the I/O layer is connecting to the peer (it owns that timeout)
    kPendingBind,  // connected or accepted; closed unless a ConnectionBind comes by `deadline`
    kBound,        // joined to a client data connection
  };
  ConnectionId id = 0;
  TransportAddress peer;
  State state = State::kConnecting;
  MonoTime deadline;  // kPendingBind: 30 s after the connection was made (RFC 6062 §5.2, §5.3)
  // The Connect request, answered when the connection succeeds or fails.
  stun::TransactionId connect_transaction{};
  bool connect_sha256 = false;       // it carried MESSAGE-INTEGRITY-SHA256 only
  bool connect_fingerprint = false;  // it carried FINGERPRINT
};

struct Allocation {
  AllocationId id;
  FiveTuple five_tuple;
  ListenerId listener = 0;
  // REQUESTED-TRANSPORT: UDP (RFC 8656) or TCP (RFC 6062, over TCP/TLS client connections).
  TransportProtocol relay_protocol = TransportProtocol::kUdp;
  TransportAddress relayed;  // the relay socket's own address
  // The IP XOR-RELAYED-ADDRESS names instead of relayed.ip: a listener address that is not the
  // host's (a 1:1 NAT's public address), which peers reach the relay socket through.
  std::optional<IpAddress> relayed_public_ip;
  // The IPv6 relay of a dual allocation (ADDITIONAL-ADDRESS-FAMILY, RFC 8656 §7.2); `relayed`
  // is then the IPv4 one.
  std::optional<TransportAddress> relayed_additional;
  // Why a dual allocation got no IPv6 relay (440 or 508, sent as ADDRESS-ERROR-CODE); 0 if it
  // got one or asked for none.
  uint16_t additional_error = 0;
  MonoTime expires;
  // The Allocate request's transaction ID, to answer retransmissions (RFC 8656 §7.2).
  stun::TransactionId allocate_transaction{};
  std::optional<uint64_t> reservation_token;

  // The credentials the allocation was created with: later requests must use the same username
  // (RFC 8656 §5) and are checked with the same key, so a rotated shared secret does not strand
  // allocations made before the rotation.
  std::string username;
  stun::IntegrityKey key;
  // Made with an ACCESS-TOKEN (RFC 7635): later requests name any of the shared keys' kids, and
  // are checked with the mac-key of the latest token (a Refresh may bring a new one).
  bool oauth = false;
  // RFC 8016: the id its MOBILITY-TICKET names (0: the client did not ask for mobility) and the
  // moves so far, which a ticket must match (24 bits, wrapping).
  uint64_t mobility_id = 0;
  uint32_t mobility_generation = 0;

  std::vector<Permission> permissions;
  std::vector<ChannelBinding> channels;
  std::vector<PeerConnection> connections;  // TCP allocations only

  // For the session record written when the allocation ends.
  MonoTime created;
  int64_t created_unix = 0;
  uint64_t packets_to_peers = 0;
  uint64_t bytes_to_peers = 0;
  uint64_t packets_to_client = 0;
  uint64_t bytes_to_client = 0;
  // Bandwidth caps (ServerConfig::allocation_bytes_per_second), one per direction.
  TokenBucket budget_to_peers;
  TokenBucket budget_to_client;

  // The timer wheel slot this allocation is armed at, in monotonic seconds.
  int64_t armed_at = 0;

  // Whether the allocation has a relayed address of `family`: peers of any other family are
  // refused with 443.
  bool relays(AddressFamily family) const {
    return relayed.family() == family ||
           (relayed_additional && relayed_additional->family() == family);
  }

  Permission* findPermission(const IpAddress& ip);
  ChannelBinding* findChannel(uint16_t number);
  ChannelBinding* findChannel(const TransportAddress& peer);
  PeerConnection* findConnection(ConnectionId id);
  PeerConnection* findConnection(const TransportAddress& peer);
  // Unexpired permissions and channels: what admin.limits.max_permissions / max_channels count.
  // Expired ones linger until the allocation's next sweep (at most a second), and do not count.
  size_t activePermissions(MonoTime now) const;
  size_t activeChannels(MonoTime now) const;

  // Drops expired permissions and channels; returns the earliest remaining deadline including
  // the allocation's own expiry and the bind deadlines of its peer connections (which the
  // server expires itself, since the I/O layer must close them).
  MonoTime sweep(MonoTime now);
  MonoTime nextDeadline() const;
};

}  // namespace kturn::turn
