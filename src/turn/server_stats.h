// The TURN core's counters, one shard per worker, summed at scrape time (docs/metrics.md).
// Plain integers: a shard is written only by its worker's thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace kturn::turn {

#define KTURN_SERVER_COUNTERS(X)                                                             \
  X(requests_binding, "Binding requests answered")                                           \
  X(requests_allocate, "Allocate requests")                                                  \
  X(requests_refresh, "Refresh requests")                                                    \
  X(requests_create_permission, "CreatePermission requests")                                 \
  X(requests_channel_bind, "ChannelBind requests")                                           \
  X(requests_connect, "Connect requests (RFC 6062)")                                         \
  X(requests_connection_bind, "ConnectionBind requests (RFC 6062)")                          \
  X(peer_connections_connected, "peer TCP connections made for a Connect")                   \
  X(peer_connections_failed, "Connect answered 447: the peer refused or did not answer")     \
  X(peer_connections_accepted, "peer TCP connections offered with a ConnectionAttempt")      \
  X(peer_connections_refused, "peer TCP connections closed at once: no permission")          \
  X(peer_connections_bound, "peer TCP connections joined to a data connection")              \
  X(peer_connections_unbound, "peer TCP connections closed: no ConnectionBind within 30 s")  \
  X(error_responses, "error responses sent")                                                 \
  X(allocations_created, "allocations created")                                              \
  X(allocations_deleted, "allocations deleted by Refresh with lifetime 0")                   \
  X(allocations_expired, "allocations that reached their lifetime")                          \
  X(allocations_closed, "allocations ended because their listener was removed")              \
  X(allocations_disconnected, "allocations ended because their TCP/TLS connection closed")   \
  X(allocations_rejected_quota, "Allocate refused with 486 (per-user quota)")                \
  X(allocations_rejected_source_quota, "Allocate refused with 486 (per-source quota)")       \
  X(allocations_rejected_capacity, "Allocate refused with 508 (no relay port or limit)")     \
  X(allocations_redirected, "Allocate redirected with 300: full, or over admin.capacity")    \
  X(mobility_moves, "allocations that moved to a new client address (RFC 8016)")             \
  X(mobility_refused, "MOBILITY-TICKETs refused: mobility off, forged, stale or misused")    \
  X(auth_missing, "TURN requests without MESSAGE-INTEGRITY (401 challenge)")                 \
  X(auth_bad_integrity, "requests with a wrong MESSAGE-INTEGRITY")                           \
  X(auth_unknown_user, "requests with an unknown or malformed username")                     \
  X(auth_expired, "requests with an expired ephemeral username")                             \
  X(auth_stale_nonce, "requests answered 438 Stale Nonce")                                   \
  X(auth_throttled, "requests dropped: too many failed authentications from the source")     \
  X(sources_blocked, "sources put in the kernel drop list (admin.limits.block_seconds)")     \
  X(permission_denied, "CreatePermission/ChannelBind refused with 403 (peer not routed)")    \
  X(permissions_rejected_capacity, "CreatePermission/ChannelBind refused with 508 (limit)")  \
  X(channels_rejected_capacity, "ChannelBind refused with 508 (channel limit)")              \
  X(client_packets_relayed, "packets relayed client to peer")                                \
  X(client_bytes_relayed, "payload bytes relayed client to peer")                            \
  X(peer_packets_relayed, "packets relayed peer to client")                                  \
  X(peer_bytes_relayed, "payload bytes relayed peer to client")                              \
  X(offload_packets_to_peer, "of client_packets_relayed: relayed by the kernel fast path")   \
  X(offload_bytes_to_peer, "of client_bytes_relayed: relayed by the kernel fast path")       \
  X(offload_packets_to_client, "of peer_packets_relayed: relayed by the kernel fast path")   \
  X(offload_bytes_to_client, "of peer_bytes_relayed: relayed by the kernel fast path")       \
  X(channels_offloaded, "channels handed to the kernel fast path")                           \
  X(channels_offload_refused, "offers of a channel the kernel fast path had no room for")    \
  X(drop_malformed, "datagrams dropped as malformed")                                        \
  X(drop_not_turn, "datagrams that are neither STUN nor ChannelData")                        \
  X(drop_no_allocation, "indications/ChannelData without an allocation")                     \
  X(drop_over_bandwidth, "datagrams dropped: allocation or listener over its bandwidth cap") \
  X(connection_reads_held, "peer connection reads held back by a bandwidth cap (RFC 6062)")  \
  X(drop_no_permission, "packets to or from a peer without a permission")                    \
  X(drop_peer_denied, "packets whose peer the current config no longer routes")              \
  X(drop_unknown_channel, "ChannelData on an unbound channel")                               \
  X(drop_no_buffer, "responses dropped for lack of output buffer")                           \
  X(drop_ignored, "responses and unknown indications ignored")

struct ServerStats {
#define KTURN_DECLARE_COUNTER(name, help) uint64_t name = 0;
  KTURN_SERVER_COUNTERS(KTURN_DECLARE_COUNTER)
#undef KTURN_DECLARE_COUNTER

  ServerStats& operator+=(const ServerStats& o) {
#define KTURN_ADD_COUNTER(name, help) name += o.name;
    KTURN_SERVER_COUNTERS(KTURN_ADD_COUNTER)
#undef KTURN_ADD_COUNTER
    return *this;
  }

  // fn(name, help, value) for each counter, for exporters.
  template <class Fn>
  void forEach(Fn&& fn) const {
#define KTURN_VISIT_COUNTER(name, help) fn(std::string_view(#name), std::string_view(help), name);
    KTURN_SERVER_COUNTERS(KTURN_VISIT_COUNTER)
#undef KTURN_VISIT_COUNTER
  }
};

// Packets and bytes each way: per cluster (rx from the cluster's peers, tx to them, as STUNner
// counts it) and, in the daemon, per listener.
struct TrafficCounters {
  uint64_t rx_packets = 0;
  uint64_t rx_bytes = 0;
  uint64_t tx_packets = 0;
  uint64_t tx_bytes = 0;
  TrafficCounters& operator+=(const TrafficCounters& o) {
    rx_packets += o.rx_packets;
    rx_bytes += o.rx_bytes;
    tx_packets += o.tx_packets;
    tx_bytes += o.tx_bytes;
    return *this;
  }
};

}  // namespace kturn::turn
