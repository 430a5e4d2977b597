#include "daemon/metrics.h"

#include <array>
#include <string>
#include <tuple>

#include "admin/kturn_metrics.h"
#include "admin/process_metrics.h"
#include "admin/stunner_metrics.h"
#include "kturn_offload.h"

namespace kturn::daemon {
namespace {

using admin::Labels;

Labels labels(std::initializer_list<std::pair<std::string_view, std::string_view>> pairs) {
  Labels out;
  for (const auto& [k, v] : pairs) out.emplace_back(std::string(k), std::string(v));
  return out;
}

template <class T>
const T& at(const std::vector<T>& v, size_t i) {
  static const T kEmpty{};
  return i < v.size() ? v[i] : kEmpty;
}

}  // namespace

std::vector<admin::MetricFamily> buildMetrics(const worker::WorkerStats& stats,
                                              const worker::ConfigSnapshot& dataplane,
                                              const admin::CapacityReport& capacity) {
  namespace st = admin::stunner;
  namespace ks = admin::kturn_series;
  std::vector<admin::MetricFamily> out;

  auto active = admin::familyOf(st::kAllocationsActive);
  active.samples.push_back({{}, static_cast<double>(stats.allocations)});
  out.push_back(std::move(active));

  auto connections = admin::familyOf(st::kListenerConnections);
  auto connections_total = admin::familyOf(st::kListenerConnectionsTotal);
  auto packets = admin::familyOf(st::kListenerPacketsTotal);
  auto bytes = admin::familyOf(st::kListenerBytesTotal);
  auto created = admin::familyOf(ks::kAllocationsCreatedTotal);
  auto expired = admin::familyOf(ks::kAllocationsExpiredTotal);
  auto ended = admin::familyOf(ks::kAllocationsEndedTotal);
  auto rejected = admin::familyOf(ks::kAllocationsRejectedTotal);
  auto permissions_rejected = admin::familyOf(ks::kPermissionsRejectedTotal);
  auto auth = admin::familyOf(ks::kAuthFailuresTotal);
  auto blocked = admin::familyOf(ks::kSourcesBlockedTotal);
  auto mobility = admin::familyOf(ks::kMobilityTotal);
  auto info = admin::familyOf(ks::kDataplaneInfo);
  info.samples.push_back({labels({{ks::kLabelRegion, dataplane.region}}), 1});
  auto relayed_packets = admin::familyOf(ks::kRelayedPacketsTotal);
  auto relayed_bytes = admin::familyOf(ks::kRelayedBytesTotal);
  auto drops = admin::familyOf(ks::kDropsTotal);
  auto closed = admin::familyOf(ks::kConnectionsClosedTotal);
  auto peer_connections = admin::familyOf(ks::kPeerConnectionsTotal);
  auto offload_packets = admin::familyOf(ks::kOffloadRelayedPacketsTotal);
  auto offload_bytes = admin::familyOf(ks::kOffloadRelayedBytesTotal);
  auto offload_refused = admin::familyOf(ks::kOffloadRefusedTotal);
  for (const worker::ListenerSpec& l : dataplane.listeners) {
    const worker::ListenerTraffic& t = at(stats.traffic, l.id);
    const turn::ServerStats& s = at(stats.turn_by_listener, l.id);
    const std::string_view name = l.name;
    connections.samples.push_back(
        {labels({{st::kLabelName, name}}), static_cast<double>(t.connections)});
    connections_total.samples.push_back(
        {labels({{st::kLabelName, name}}), static_cast<double>(t.connections_total)});
    packets.samples.push_back(
        {labels({{st::kLabelDirection, st::kDirectionRx}, {st::kLabelName, name}}),
         static_cast<double>(t.rx_packets)});
    packets.samples.push_back(
        {labels({{st::kLabelDirection, st::kDirectionTx}, {st::kLabelName, name}}),
         static_cast<double>(t.tx_packets)});
    bytes.samples.push_back(
        {labels({{st::kLabelDirection, st::kDirectionRx}, {st::kLabelName, name}}),
         static_cast<double>(t.rx_bytes)});
    bytes.samples.push_back(
        {labels({{st::kLabelDirection, st::kDirectionTx}, {st::kLabelName, name}}),
         static_cast<double>(t.tx_bytes)});

    const auto listener = [&](std::string_view key = {}, std::string_view value = {}) {
      return key.empty() ? labels({{ks::kLabelListener, name}})
                         : labels({{ks::kLabelListener, name}, {key, value}});
    };
    created.samples.push_back({listener(), static_cast<double>(s.allocations_created)});
    expired.samples.push_back({listener(), static_cast<double>(s.allocations_expired)});
    for (const auto& [reason, value] :
         {std::pair{ks::end_reason::kDeleted, s.allocations_deleted},
          std::pair{ks::end_reason::kExpired, s.allocations_expired},
          std::pair{ks::end_reason::kListenerClosed, s.allocations_closed},
          std::pair{ks::end_reason::kConnectionClosed, s.allocations_disconnected}}) {
      ended.samples.push_back({listener(ks::kLabelReason, reason), static_cast<double>(value)});
    }
    rejected.samples.push_back({listener(ks::kLabelReason, ks::reject_reason::kQuotaReached),
                                static_cast<double>(s.allocations_rejected_quota)});
    rejected.samples.push_back({listener(ks::kLabelReason, ks::reject_reason::kSourceQuotaReached),
                                static_cast<double>(s.allocations_rejected_source_quota)});
    rejected.samples.push_back(
        {listener(ks::kLabelReason, ks::reject_reason::kInsufficientCapacity),
         static_cast<double>(s.allocations_rejected_capacity)});
    rejected.samples.push_back({listener(ks::kLabelReason, ks::reject_reason::kTryAlternate),
                                static_cast<double>(s.allocations_redirected)});
    rejected.samples.push_back({listener(ks::kLabelReason, ks::reject_reason::kForbidden),
                                static_cast<double>(s.permission_denied)});
    permissions_rejected.samples.push_back(
        {listener(ks::kLabelReason, ks::capacity_reason::kPermissionLimit),
         static_cast<double>(s.permissions_rejected_capacity)});
    permissions_rejected.samples.push_back(
        {listener(ks::kLabelReason, ks::capacity_reason::kChannelLimit),
         static_cast<double>(s.channels_rejected_capacity)});
    blocked.samples.push_back({listener(), static_cast<double>(s.sources_blocked)});
    mobility.samples.push_back({listener(ks::kLabelOutcome, ks::mobility_outcome::kMoved),
                                static_cast<double>(s.mobility_moves)});
    mobility.samples.push_back({listener(ks::kLabelOutcome, ks::mobility_outcome::kRefused),
                                static_cast<double>(s.mobility_refused)});
    auth.samples.push_back({listener(ks::kLabelReason, ks::auth_reason::kUnknownUser),
                            static_cast<double>(s.auth_unknown_user)});
    auth.samples.push_back({listener(ks::kLabelReason, ks::auth_reason::kBadIntegrity),
                            static_cast<double>(s.auth_bad_integrity)});
    auth.samples.push_back({listener(ks::kLabelReason, ks::auth_reason::kStaleNonce),
                            static_cast<double>(s.auth_stale_nonce)});
    auth.samples.push_back({listener(ks::kLabelReason, ks::auth_reason::kExpiredCredential),
                            static_cast<double>(s.auth_expired)});
    auth.samples.push_back({listener(ks::kLabelReason, ks::auth_reason::kThrottled),
                            static_cast<double>(s.auth_throttled)});
    relayed_packets.samples.push_back({listener(ks::kLabelDirection, st::kDirectionRx),
                                       static_cast<double>(s.client_packets_relayed)});
    relayed_packets.samples.push_back({listener(ks::kLabelDirection, st::kDirectionTx),
                                       static_cast<double>(s.peer_packets_relayed)});
    relayed_bytes.samples.push_back({listener(ks::kLabelDirection, st::kDirectionRx),
                                     static_cast<double>(s.client_bytes_relayed)});
    relayed_bytes.samples.push_back({listener(ks::kLabelDirection, st::kDirectionTx),
                                     static_cast<double>(s.peer_bytes_relayed)});
    if (l.protocol == TransportProtocol::kUdp && !l.tls) {  // TURN-UDP: what the kernel can relay
      offload_packets.samples.push_back({listener(ks::kLabelDirection, st::kDirectionRx),
                                         static_cast<double>(s.offload_packets_to_peer)});
      offload_packets.samples.push_back({listener(ks::kLabelDirection, st::kDirectionTx),
                                         static_cast<double>(s.offload_packets_to_client)});
      offload_bytes.samples.push_back({listener(ks::kLabelDirection, st::kDirectionRx),
                                       static_cast<double>(s.offload_bytes_to_peer)});
      offload_bytes.samples.push_back({listener(ks::kLabelDirection, st::kDirectionTx),
                                       static_cast<double>(s.offload_bytes_to_client)});
      offload_refused.samples.push_back(
          {listener(), static_cast<double>(s.channels_offload_refused)});
    }
    for (const auto& [reason, value] :
         {std::pair{ks::drop_reason::kNoPermission, s.drop_no_permission},
          std::pair{ks::drop_reason::kPeerNotAllowed, s.drop_peer_denied},
          std::pair{ks::drop_reason::kNoAllocation, s.drop_no_allocation},
          std::pair{ks::drop_reason::kUnboundChannel, s.drop_unknown_channel},
          std::pair{ks::drop_reason::kMalformed, s.drop_malformed + s.drop_not_turn},
          std::pair{ks::drop_reason::kOverBandwidth, s.drop_over_bandwidth}}) {
      drops.samples.push_back({listener(ks::kLabelReason, reason), static_cast<double>(value)});
    }
    if (l.protocol == TransportProtocol::kTcp) {
      for (const auto& [reason, value] :
           {std::pair{ks::close_reason::kConnectionLimit, t.closed_limit},
            std::pair{ks::close_reason::kIdleTimeout, t.closed_idle},
            std::pair{ks::close_reason::kHandshakeTimeout, t.closed_handshake},
            std::pair{ks::close_reason::kTlsError, t.closed_tls},
            std::pair{ks::close_reason::kFramingError, t.closed_framing}}) {
        closed.samples.push_back({listener(ks::kLabelReason, reason), static_cast<double>(value)});
      }
      for (const auto& [event, value] :
           {std::pair{ks::peer_event::kConnected, s.peer_connections_connected},
            std::pair{ks::peer_event::kFailed, s.peer_connections_failed},
            std::pair{ks::peer_event::kAccepted, s.peer_connections_accepted},
            std::pair{ks::peer_event::kRefused, s.peer_connections_refused},
            std::pair{ks::peer_event::kBound, s.peer_connections_bound},
            std::pair{ks::peer_event::kUnbound, s.peer_connections_unbound},
            std::pair{ks::peer_event::kHandedOver, t.handed_over},
            std::pair{ks::peer_event::kHeld, s.connection_reads_held}}) {
        peer_connections.samples.push_back(
            {listener(ks::kLabelEvent, event), static_cast<double>(value)});
      }
    }
  }
  // STUNner's cluster series: traffic relayed to (tx) and from (rx) each cluster's peers.
  auto cluster_packets = admin::familyOf(st::kClusterPacketsTotal);
  auto cluster_bytes = admin::familyOf(st::kClusterBytesTotal);
  const auto& names = dataplane.turn->cluster_names;
  for (size_t id = 1; id < names.size(); ++id) {
    if (names[id].empty()) continue;  // a cluster of an earlier config
    const turn::TrafficCounters& t = at(stats.clusters, id);
    for (const auto& [direction, packets_value, bytes_value] :
         {std::tuple{st::kDirectionRx, t.rx_packets, t.rx_bytes},
          std::tuple{st::kDirectionTx, t.tx_packets, t.tx_bytes}}) {
      const Labels l = labels({{st::kLabelDirection, direction}, {st::kLabelName, names[id]}});
      cluster_packets.samples.push_back({l, static_cast<double>(packets_value)});
      cluster_bytes.samples.push_back({l, static_cast<double>(bytes_value)});
    }
  }

  auto durations = admin::familyOf(ks::kRequestDurationSeconds);
  const worker::RequestTimes& times = stats.request_times;
  static constexpr std::array<std::string_view, worker::RequestTimes::kMethods.size()> kMethodNames{
      ks::method::kBinding, ks::method::kAllocate, ks::method::kRefresh,
      ks::method::kCreatePermission, ks::method::kChannelBind};
  for (size_t m = 0; m < kMethodNames.size(); ++m) {
    admin::HistogramSample h;
    h.labels = labels({{ks::kLabelMethod, kMethodNames[m]}});
    for (size_t b = 0; b < worker::RequestTimes::kBounds.size(); ++b) {
      h.buckets.push_back({worker::RequestTimes::kBounds[b], times.counts[m][b]});
    }
    for (uint64_t c : times.counts[m]) h.count += c;
    h.sum = times.seconds[m];
    durations.histograms.push_back(std::move(h));
  }
  // The eBPF fast path: channels it holds, and what its program did (daemon-wide).
  auto gso = admin::familyOf(ks::kUdpGsoTrainsTotal);
  gso.samples.push_back({labels({{ks::kLabelOutcome, ks::gso_outcome::kSent}}),
                         static_cast<double>(stats.send_gso_trains)});
  gso.samples.push_back({labels({{ks::kLabelOutcome, ks::gso_outcome::kRefused}}),
                         static_cast<double>(stats.send_gso_fallbacks)});
  auto gro = admin::familyOf(ks::kUdpGroTrainsTotal);
  gro.samples.push_back({{}, static_cast<double>(stats.receive_gro_trains)});
  auto capacity_over = admin::familyOf(ks::kCapacityOver);
  capacity_over.samples.push_back({{}, capacity.over_capacity ? 1.0 : 0.0});
  auto capacity_headroom = admin::familyOf(ks::kCapacityHeadroom);
  for (const auto& [measure, m] :
       {std::pair{ks::capacity_measure::kAllocations, &capacity.allocations},
        {ks::capacity_measure::kRelayKbps, &capacity.relay_kbps},
        {ks::capacity_measure::kCpuPercent, &capacity.cpu_percent}}) {
    if (m->mark != 0) {
      capacity_headroom.samples.push_back({labels({{ks::kLabelMeasure, measure}}), m->headroom});
    }
  }
  auto offload_channels = admin::familyOf(ks::kOffloadChannels);
  offload_channels.samples.push_back({{}, static_cast<double>(stats.offload_channels)});
  auto offload_outcomes = admin::familyOf(ks::kOffloadDatagramsTotal);
  static_assert(ks::kOffloadOutcomes.size() == KTURN_STAT_COUNT);
  for (size_t i = 0; i < ks::kOffloadOutcomes.size(); ++i) {
    const uint64_t value = i < stats.offload_outcomes.size() ? stats.offload_outcomes[i] : 0;
    offload_outcomes.samples.push_back(
        {labels({{ks::kLabelOutcome, ks::kOffloadOutcomes[i]}}), static_cast<double>(value)});
  }
  for (auto* f : {&connections,
                  &connections_total,
                  &packets,
                  &bytes,
                  &cluster_packets,
                  &cluster_bytes,
                  &created,
                  &expired,
                  &ended,
                  &rejected,
                  &permissions_rejected,
                  &auth,
                  &blocked,
                  &mobility,
                  &info,
                  &capacity_over,
                  &capacity_headroom,
                  &relayed_packets,
                  &relayed_bytes,
                  &drops,
                  &closed,
                  &peer_connections,
                  &offload_packets,
                  &offload_bytes,
                  &offload_refused,
                  &offload_channels,
                  &offload_outcomes,
                  &gso,
                  &gro,
                  &durations}) {
    out.push_back(std::move(*f));
  }
  for (auto& f : admin::collectProcessMetrics()) out.push_back(std::move(f));
  return out;
}

}  // namespace kturn::daemon
