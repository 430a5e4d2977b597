// kturn's own Prometheus series, beyond STUNner's (stunner_metrics.h): the numbers an operator
// needs to tell a healthy gateway from one that is refusing or dropping work, and why. Declared
// once here so the daemon cannot misspell them; docs/metrics.md describes each one.
//
// Label values are fixed vocabularies (below) or config names, never client input.
#pragma once

#include <array>
#include <string_view>

#include "admin/metric_family.h"

namespace kturn::admin::kturn_series {

inline constexpr std::string_view kLabelListener = "listener";
inline constexpr std::string_view kLabelDirection = "direction";  // "rx" | "tx", as STUNner's
inline constexpr std::string_view kLabelReason = "reason";
inline constexpr std::string_view kLabelMethod = "method";
inline constexpr std::string_view kLabelEvent = "event";
inline constexpr std::string_view kLabelOutcome = "outcome";
inline constexpr std::string_view kLabelKind = "kind";  // "listener" | "cluster"
inline constexpr std::string_view kLabelName = "name";  // as the config names it

inline constexpr std::array<std::string_view, 1> kListener{kLabelListener};
inline constexpr std::array<std::string_view, 2> kListenerDirection{kLabelListener,
                                                                    kLabelDirection};
inline constexpr std::array<std::string_view, 2> kListenerReason{kLabelListener, kLabelReason};
inline constexpr std::string_view kLabelRegion = "region";
inline constexpr std::array<std::string_view, 1> kRegion{kLabelRegion};
inline constexpr std::array<std::string_view, 1> kMethod{kLabelMethod};
inline constexpr std::array<std::string_view, 2> kListenerEvent{kLabelListener, kLabelEvent};
inline constexpr std::array<std::string_view, 1> kOutcome{kLabelOutcome};
inline constexpr std::array<std::string_view, 2> kListenerOutcome{kLabelListener, kLabelOutcome};
inline constexpr std::array<std::string_view, 2> kKindName{kLabelKind, kLabelName};

// reason values of kAllocationsRejectedTotal: the TURN error each one answers with.
namespace reject_reason {
inline constexpr std::string_view kBadRequest = "bad_request";                      // 400
inline constexpr std::string_view kForbidden = "forbidden";                         // 403
inline constexpr std::string_view kAllocationMismatch = "allocation_mismatch";      // 437
inline constexpr std::string_view kFamilyNotSupported = "family_not_supported";     // 440
inline constexpr std::string_view kUnsupportedTransport = "unsupported_transport";  // 442
inline constexpr std::string_view kQuotaReached = "quota_reached";                  // 486
// 486 too, but for admin.limits.source_quota rather than the per-user admin.user_quota.
inline constexpr std::string_view kSourceQuotaReached = "source_quota_reached";     // 486
inline constexpr std::string_view kInsufficientCapacity = "insufficient_capacity";  // 508
// 300 Try Alternate: refused for capacity (full, or over the admin.capacity marks), and sent to
// listeners[].alternate_servers instead.
inline constexpr std::string_view kTryAlternate = "try_alternate";  // 300
}  // namespace reject_reason

// reason values of kPermissionsRejectedTotal: the allocation's limit that a CreatePermission or
// ChannelBind would have exceeded (both answered 508).
namespace capacity_reason {
inline constexpr std::string_view kPermissionLimit = "permission_limit";  // max_permissions
inline constexpr std::string_view kChannelLimit = "channel_limit";        // max_channels
}  // namespace capacity_reason

// reason values of kAuthFailuresTotal. The first, credential-less request of every client
// (answered 401 with a nonce, RFC 8489 §9.2) is the normal handshake and is not a failure.
namespace auth_reason {
inline constexpr std::string_view kUnknownUser = "unknown_user";
inline constexpr std::string_view kBadIntegrity = "bad_integrity";  // wrong password
inline constexpr std::string_view kStaleNonce = "stale_nonce";
inline constexpr std::string_view kExpiredCredential = "expired_credential";  // ephemeral auth
inline constexpr std::string_view kWrongRealm = "wrong_realm";
// Dropped unanswered: the source failed too often (a 401 flood, admin.auth throttle).
inline constexpr std::string_view kThrottled = "throttled";
}  // namespace auth_reason

// reason values of kAllocationsEndedTotal.
namespace end_reason {
inline constexpr std::string_view kDeleted = "deleted";  // Refresh with lifetime 0
inline constexpr std::string_view kExpired = "expired";
inline constexpr std::string_view kListenerClosed = "listener_closed";      // removed by a config
inline constexpr std::string_view kConnectionClosed = "connection_closed";  // TCP/TLS client left
}  // namespace end_reason

// reason values of kDropsTotal: packets kturn received and did not relay.
namespace drop_reason {
inline constexpr std::string_view kNoPermission = "no_permission";       // RFC 8656 §9
inline constexpr std::string_view kPeerNotAllowed = "peer_not_allowed";  // no route to peer
inline constexpr std::string_view kNoAllocation = "no_allocation";
inline constexpr std::string_view kUnboundChannel = "unbound_channel";
inline constexpr std::string_view kMalformed = "malformed";
inline constexpr std::string_view kSendFailed = "send_failed";        // socket error, buffer full
inline constexpr std::string_view kOverBandwidth = "over_bandwidth";  // admin.limits caps
}  // namespace drop_reason

// reason values of kConnectionsClosedTotal: why a TURN-TCP/TLS listener closed a client's
// connection (a connection the client closed itself is not counted).
namespace close_reason {
inline constexpr std::string_view kConnectionLimit = "connection_limit";  // over the cap at accept
inline constexpr std::string_view kIdleTimeout = "idle_timeout";          // no allocation, silent
inline constexpr std::string_view kHandshakeTimeout = "handshake_timeout";  // TLS not established
inline constexpr std::string_view kTlsError = "tls_error";  // failed handshake or record, a reset
inline constexpr std::string_view kFramingError = "framing_error";  // neither STUN nor ChannelData
}  // namespace close_reason

// method values of kRequestDurationSeconds.
namespace method {
inline constexpr std::string_view kBinding = "binding";
inline constexpr std::string_view kAllocate = "allocate";
inline constexpr std::string_view kRefresh = "refresh";
inline constexpr std::string_view kCreatePermission = "create_permission";
inline constexpr std::string_view kChannelBind = "channel_bind";
}  // namespace method

inline constexpr MetricSpec kAllocationsCreatedTotal{
    .name = "kturn_allocations_created_total",
    .help = "Number of TURN allocations created",
    .type = MetricType::kCounter,
    .label_names = kListener,
};

inline constexpr MetricSpec kAllocationsExpiredTotal{
    .name = "kturn_allocations_expired_total",
    .help = "Number of TURN allocations that ended because their lifetime ran out",
    .type = MetricType::kCounter,
    .label_names = kListener,
};

inline constexpr MetricSpec kAllocationsEndedTotal{
    .name = "kturn_allocations_ended_total",
    .help = "Number of TURN allocations that ended, by reason",
    .type = MetricType::kCounter,
    .label_names = kListenerReason,
};

inline constexpr MetricSpec kAllocationsRejectedTotal{
    .name = "kturn_allocations_rejected_total",
    .help = "Number of Allocate requests refused, by reason",
    .type = MetricType::kCounter,
    .label_names = kListenerReason,
};

inline constexpr MetricSpec kPermissionsRejectedTotal{
    .name = "kturn_permissions_rejected_total",
    .help =
        "Number of CreatePermission and ChannelBind requests refused with 508 because the "
        "allocation holds its limit of permissions or channels, by reason",
    .type = MetricType::kCounter,
    .label_names = kListenerReason,
};

inline constexpr MetricSpec kAuthFailuresTotal{
    .name = "kturn_auth_failures_total",
    .help = "Number of requests that failed authentication, by reason",
    .type = MetricType::kCounter,
    .label_names = kListenerReason,
};

inline constexpr MetricSpec kDataplaneInfo{
    .name = "kturn_dataplane_info",
    .help =
        "Always 1: its region label is the config's admin.region (the Gateway's "
        "kturn.io/region), to join other series by region",
    .type = MetricType::kGauge,
    .label_names = kRegion,
};

inline constexpr MetricSpec kConfigFaults{
    .name = "kturn_config_faults",
    .help =
        "1 for each listener or cluster of the last config that does not run as it says (it "
        "failed to load or to bind: left out, or kept at its running version; /status says which "
        "and why)",
    .type = MetricType::kGauge,
    .label_names = kKindName,
};

inline constexpr MetricSpec kSourcesBlockedTotal{
    .name = "kturn_sources_blocked_total",
    .help =
        "Number of times a source that kept failing authentication was put in the kernel "
        "drop list",
    .type = MetricType::kCounter,
    .label_names = kListener,
};

// outcome values of kMobilityTotal.
namespace mobility_outcome {
inline constexpr std::string_view kMoved = "moved";
inline constexpr std::string_view kRefused = "refused";
}  // namespace mobility_outcome

inline constexpr MetricSpec kMobilityTotal{
    .name = "kturn_mobility_total",
    .help =
        "RFC 8016 MOBILITY-TICKETs: allocations moved to a client's new address, and tickets "
        "refused (mobility off, forged, stale or naming another allocation)",
    .type = MetricType::kCounter,
    .label_names = kListenerOutcome,
};

inline constexpr MetricSpec kRelayedBytesTotal{
    .name = "kturn_relayed_bytes_total",
    .help = "Application bytes relayed between clients and peers (rx: from clients)",
    .type = MetricType::kCounter,
    .label_names = kListenerDirection,
};

inline constexpr MetricSpec kRelayedPacketsTotal{
    .name = "kturn_relayed_packets_total",
    .help = "Application packets relayed between clients and peers (rx: from clients)",
    .type = MetricType::kCounter,
    .label_names = kListenerDirection,
};

inline constexpr MetricSpec kDropsTotal{
    .name = "kturn_drops_total",
    .help = "Packets received and not relayed, by reason",
    .type = MetricType::kCounter,
    .label_names = kListenerReason,
};

inline constexpr MetricSpec kConnectionsClosedTotal{
    .name = "kturn_connections_closed_total",
    .help = "Client connections of TCP/TLS listeners closed by kturnd, by reason",
    .type = MetricType::kCounter,
    .label_names = kListenerReason,
};

// event values of kPeerConnectionsTotal: what became of the peer connections of TCP allocations
// (RFC 6062).
namespace peer_event {
inline constexpr std::string_view kConnected = "connected";  // a Connect's connection came up
inline constexpr std::string_view kFailed = "failed";        // a Connect answered 447
inline constexpr std::string_view kAccepted = "accepted";  // a peer connected in: ConnectionAttempt
inline constexpr std::string_view kRefused = "refused";    // a peer connected in without permission
inline constexpr std::string_view kBound = "bound";        // joined by a ConnectionBind
inline constexpr std::string_view kUnbound = "unbound";    // closed: no ConnectionBind in 30 s
// A ConnectionBind that reached another worker than the allocation's and was handed to it.
inline constexpr std::string_view kHandedOver = "handed_over";
// A bound connection's read held back by an admin.limits bandwidth cap: paced, not dropped.
inline constexpr std::string_view kHeld = "held";
}  // namespace peer_event

inline constexpr MetricSpec kPeerConnectionsTotal{
    .name = "kturn_peer_connections_total",
    .help = "Peer connections of TCP allocations (RFC 6062), by what became of them",
    .type = MetricType::kCounter,
    .label_names = kListenerEvent,
};

inline constexpr MetricSpec kOffloadRelayedPacketsTotal{
    .name = "kturn_offload_relayed_packets_total",
    .help = "Of kturn_relayed_packets_total: packets the eBPF fast path relayed in the kernel",
    .type = MetricType::kCounter,
    .label_names = kListenerDirection,
};

inline constexpr MetricSpec kOffloadRelayedBytesTotal{
    .name = "kturn_offload_relayed_bytes_total",
    .help = "Of kturn_relayed_bytes_total: bytes the eBPF fast path relayed in the kernel",
    .type = MetricType::kCounter,
    .label_names = kListenerDirection,
};

inline constexpr std::string_view kLabelMeasure = "measure";
inline constexpr std::array<std::string_view, 1> kMeasure{kLabelMeasure};
// measure values of kCapacityHeadroom: admin.capacity's marks.
namespace capacity_measure {
inline constexpr std::string_view kAllocations = "allocations";
inline constexpr std::string_view kRelayKbps = "relay_kbps";
inline constexpr std::string_view kCpuPercent = "cpu_percent";
}  // namespace capacity_measure

inline constexpr MetricSpec kCapacityOver{
    .name = "kturn_capacity_over",
    .help = "1 while a capacity mark (admin.capacity) holds /ready at 503, else 0",
    .type = MetricType::kGauge,
    .label_names = {},
};

inline constexpr MetricSpec kCapacityHeadroom{
    .name = "kturn_capacity_headroom",
    .help = "What is left below each admin.capacity mark (allocations, kbit/s, CPU percent)",
    .type = MetricType::kGauge,
    .label_names = kMeasure,
};

inline constexpr MetricSpec kOffloadChannels{
    .name = "kturn_offload_channels",
    .help = "Channels the eBPF fast path relays now",
    .type = MetricType::kGauge,
    .label_names = {},
};

// outcome values of kUdpGsoTrainsTotal.
namespace gso_outcome {
inline constexpr std::string_view kSent = "sent";        // one message, cut up by the kernel
inline constexpr std::string_view kRefused = "refused";  // sent again datagram by datagram
}  // namespace gso_outcome

inline constexpr MetricSpec kUdpGsoTrainsTotal{
    .name = "kturn_udp_gso_trains_total",
    .help =
        "Trains of UDP datagrams to one destination sent as one GSO message, or refused by "
        "the kernel and sent datagram by datagram",
    .type = MetricType::kCounter,
    .label_names = kOutcome,
};

inline constexpr MetricSpec kUdpGroTrainsTotal{
    .name = "kturn_udp_gro_trains_total",
    .help =
        "Trains of a client's or a peer's UDP datagrams the kernel handed over as one (UDP GRO), "
        "each relayed datagram by datagram",
    .type = MetricType::kCounter,
    .label_names = {},
};

// outcome values of kUdpDatagramsTotal.
namespace udp_outcome {
inline constexpr std::string_view kReceived = "received";
inline constexpr std::string_view kTruncated = "truncated";  // of received: too long, dropped
inline constexpr std::string_view kSent = "sent";
inline constexpr std::string_view kSendFailed = "send_failed";  // the kernel refused them
}  // namespace udp_outcome

inline constexpr MetricSpec kUdpDatagramsTotal{
    .name = "kturn_udp_datagrams_total",
    .help =
        "UDP datagrams the workers' listener and relay sockets received (truncated: longer than "
        "a receive slot, dropped) and sent (send_failed: refused by the kernel, dropped)",
    .type = MetricType::kCounter,
    .label_names = kOutcome,
};

inline constexpr std::array<std::string_view, 1> kDirection{kLabelDirection};
inline constexpr MetricSpec kUdpSyscallsTotal{
    .name = "kturn_udp_syscalls_total",
    .help =
        "recvmmsg (rx) and sendmmsg or sendmsg (tx) calls on the workers' UDP sockets: datagrams "
        "per call is how well they batch",
    .type = MetricType::kCounter,
    .label_names = kDirection,
};

inline constexpr MetricSpec kOffloadRefusedTotal{
    .name = "kturn_offload_refused_total",
    .help =
        "Channel offers the eBPF fast path had no room for (its maps full): relayed in user "
        "space",
    .type = MetricType::kCounter,
    .label_names = kListener,
};

// outcome values of kOffloadDatagramsTotal, indexed by bpf/kturn_offload.h's kturn_offload_stat.
inline constexpr std::array<std::string_view, 10> kOffloadOutcomes{
    "to_peer",    // ChannelData relayed to its peer
    "to_client",  // a peer's datagram relayed to its client
    "no_entry",   // ChannelData of a channel the kernel does not hold: to kturnd
    "expired",    // an entry past its expiry: to kturnd
    "length",     // ChannelData length not the datagram's (padding): to kturnd
    "ip",         // IPv4 options or fragment, IPv6 extension header: to kturnd
    "size",       // oversize or GSO: to kturnd
    "route",      // no route, forwarding off, MTU, family change: to kturnd
    "aborted",    // a kernel helper failed half-way: dropped
    "blocked",    // from a source in the drop list (admin.limits.block_seconds): dropped
};

inline constexpr MetricSpec kOffloadDatagramsTotal{
    .name = "kturn_offload_datagrams_total",
    .help = "Datagrams the eBPF fast path looked at, by what it did with them",
    .type = MetricType::kCounter,
    .label_names = kOutcome,
};

inline constexpr MetricSpec kRequestDurationSeconds{
    .name = "kturn_request_duration_seconds",
    .help = "Time to handle a STUN/TURN request, from receipt to response, by method",
    .type = MetricType::kHistogram,
    .label_names = kMethod,
};

// Upper bounds of kRequestDurationSeconds: request handling is microseconds when healthy; the
// upper buckets catch a worker that stalls.
inline constexpr std::array<double, 11> kRequestDurationBuckets{
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1};

inline constexpr std::array<const MetricSpec*, 26> kAllSeries{
    &kAllocationsCreatedTotal,
    &kAllocationsExpiredTotal,
    &kAllocationsEndedTotal,
    &kAllocationsRejectedTotal,
    &kPermissionsRejectedTotal,
    &kAuthFailuresTotal,
    &kSourcesBlockedTotal,
    &kMobilityTotal,
    &kDataplaneInfo,
    &kConfigFaults,
    &kCapacityOver,
    &kCapacityHeadroom,
    &kRelayedBytesTotal,
    &kRelayedPacketsTotal,
    &kDropsTotal,
    &kConnectionsClosedTotal,
    &kPeerConnectionsTotal,
    &kRequestDurationSeconds,
    &kOffloadRelayedPacketsTotal,
    &kOffloadRelayedBytesTotal,
    &kOffloadChannels,
    &kOffloadDatagramsTotal,
    &kUdpGsoTrainsTotal,
    &kUdpGroTrainsTotal,
    &kUdpDatagramsTotal,
    &kUdpSyscallsTotal,
};

}  // namespace kturn::admin::kturn_series
