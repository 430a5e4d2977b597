// The TURN core's view of a configuration: an immutable snapshot that the daemon builds from the
// STUNner dataplane config and swaps into each worker (docs/architecture.md §5).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kturn/transport_address.h"
#include "turn/ids.h"
#include "turn/restricted_peers.h"
#include "turn/time.h"

namespace kturn::turn {

enum class AuthMode : uint8_t {
  kNone,       // STUN only: Binding is answered, every TURN request is refused
  kStatic,     // one username and password (long-term credentials, RFC 8489 §9.2)
  kEphemeral,  // TURN REST API: username "<expiry>:<user>", password base64(HMAC-SHA1(secret,
               // username))
};

// One allowed peer range: an address prefix and an inclusive port range (a STUNner cluster
// endpoint "IP[/prefix][:<min-max>]").
struct PeerRange {
  IpAddress prefix;
  uint8_t prefix_length = 32;
  uint16_t min_port = 0;
  uint16_t max_port = 65535;
  ClusterId cluster = 0;  // the cluster the endpoint belongs to, for traffic counters
  // The cluster's `protocol`: TCP endpoints are the only peers of TCP allocations (RFC 6062);
  // UDP allocations relay to every endpoint, as STUNner does.
  TransportProtocol protocol = TransportProtocol::kUdp;

  bool contains(const TransportAddress& peer) const;
  // Whether any port of this IP is admitted: the test for CreatePermission, which names no port.
  bool containsIp(const IpAddress& ip) const;
};

// What one listener relays to: the union of the endpoints of the clusters its routes name.
// Restricted peers (restricted_peers.h: loopback, link-local, metadata, ...) are admitted only by
// an endpoint that itself lies inside their restricted range (127.0.0.1/32 admits 127.0.0.1,
// 0.0.0.0/0 does not), and the server's own listener addresses never (a TURN-in-TURN loop).
struct ListenerPolicy {
  ListenerId id = 0;
  std::string name;
  std::vector<PeerRange> peers;
  // The transport addresses kturnd listens on; a wildcard address matches restricted peers
  // (loopback, ...) on the same port.
  std::vector<TransportAddress> own_addresses;
  // TURN-UDP: clients send ChannelData in the clear over UDP, which the kernel fast path can
  // relay (ChannelOffload). False for TURN-DTLS, TURN-TCP and TURN-TLS.
  bool offloadable = false;
  // Where an Allocate refused for capacity is redirected (RFC 8489 §10): 300 Try Alternate with
  // the first of these of the client's family in ALTERNATE-SERVER, and alternate_domain in
  // ALTERNATE-DOMAIN when `secure` (TURN-TLS, TURN-DTLS). Empty: 508, as without.
  std::vector<TransportAddress> alternate_servers;
  std::string alternate_domain;
  bool secure = false;

  bool allowsIp(const IpAddress& ip) const;
  bool allows(const TransportAddress& peer) const { return admitting(peer) != nullptr; }
  // The first endpoint that admits `peer`, or null.
  const PeerRange* admitting(const TransportAddress& peer) const;
  // The first endpoint that admits every port of `ip` (then no per-packet port check is
  // needed), or null.
  const PeerRange* admittingAllPorts(const IpAddress& ip) const;
  // For TCP allocations: the first endpoint of a TCP cluster that admits `peer` (or, with
  // ip_only, some port of its IP), or null.
  const PeerRange* admittingTcp(const TransportAddress& peer, bool ip_only = false) const;

 private:
  bool isOwnAddress(const TransportAddress& peer) const;
};

struct Lifetimes {
  Seconds allocation_default{600};  // RFC 8656 §3.2
  Seconds allocation_max{3600};     // RFC 8656 §7.2
  Seconds permission{300};          // RFC 8656 §9
  Seconds channel{600};             // RFC 8656 §12
  Seconds nonce{600};               // coturn's stale-nonce default
};

struct ServerConfig {
  AuthMode auth_mode = AuthMode::kNone;
  std::string realm = "stunner.l7mp.io";
  std::string static_username;
  std::string static_password;
  std::string shared_secret;
  // Secrets being rotated out: REST credentials minted with one still validate until its
  // `valid_until` (unix seconds), so a rotation fails no call (kturn extension).
  struct PreviousSecret {
    std::string secret;
    int64_t valid_until = 0;
  };
  std::vector<PreviousSecret> previous_secrets;
  // Third-party authorization (RFC 7635, access_token.h): the keys shared with the
  // authorization server, by kid (16 or 32 bytes: A128GCM, A256GCM), and this server's name
  // (THIRD-PARTY-AUTHORIZATION, the tokens' additional data). No keys: no OAuth.
  struct OAuthKey {
    std::string kid;
    std::vector<uint8_t> key;
  };
  std::vector<OAuthKey> oauth_keys;
  std::string oauth_server_name;
  Lifetimes lifetimes;
  // 0 means unlimited. Per user counts allocations of one username (the user id part for
  // ephemeral credentials is not split out: each REST username is its own user, as in coturn).
  uint32_t max_allocations_per_user = 0;
  uint32_t max_allocations = 0;  // in this Server (one worker's share)
  // Allocations per client source IP address (every port and transport) in this Server: one
  // worker's share of admin.limits.source_quota, 0 = unlimited. Over it Allocate gets 486.
  uint32_t max_allocations_per_source = 0;
  // Unexpired permissions (RFC 8656 §9) and channel bindings (§12) one allocation may hold; a
  // CreatePermission or ChannelBind that would add one more gets 508. Refreshes always pass.
  uint32_t max_permissions_per_allocation = 64;
  uint32_t max_channels_per_allocation = 64;
  // Byte-rate caps per direction, 0 = none: each allocation, and each listener in this Server
  // (one worker's share of the listener's cap). Datagrams over the cap are dropped and counted.
  uint64_t allocation_bytes_per_second = 0;
  uint64_t listener_bytes_per_second = 0;
  std::string software = "kturn";
  // Failed authentications allowed per source address and window before that address's
  // authenticated requests are dropped unanswered until the window ends.
  uint32_t auth_failures_per_window = 20;
  int64_t auth_failure_window_seconds = 10;
  // A source that uses up its failures is also handed to the SourceBlocker, if any, for this
  // long (0: never). Sources in `trusted_sources` are neither throttled nor blocked.
  int64_t block_seconds = 60;
  std::vector<IpPrefix> trusted_sources;
  bool trusted(const IpAddress& ip) const;
  // RFC 8016 mobility (admin.mobility): MOBILITY-TICKETs for TURN-UDP allocations.
  bool mobility = false;
  std::vector<ListenerPolicy> listeners;
  // Names of the clusters by ClusterId (index 0 unused), for the metrics.
  std::vector<std::string> cluster_names;

  const ListenerPolicy* listener(ListenerId id) const;
};

using ServerConfigPtr = std::shared_ptr<const ServerConfig>;

}  // namespace kturn::turn
