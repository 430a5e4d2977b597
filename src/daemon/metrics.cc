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

// kturn's per-listener series, one row per sample: the family, the label beside `listener`
// (none: empty), and where the value comes from (a TURN core counter, plus a second one when
// two add up, or a counter of the listener's sockets). A series and its samples are declared
// here once; buildMetrics() makes the families from the table, in its order.
enum class Which : uint8_t { kAll, kTurnUdp, kTcp };  // the listeners a row applies to
struct ListenerRow {
  const admin::MetricSpec* spec;
  std::string_view label;
  std::string_view value;
  uint64_t turn::ServerStats::*counter = nullptr;
  uint64_t turn::ServerStats::*plus = nullptr;
  uint64_t worker::ListenerTraffic::*traffic = nullptr;
  Which which = Which::kAll;
};

namespace ks = admin::kturn_series;
using S = turn::ServerStats;
using T = worker::ListenerTraffic;
constexpr std::string_view kRx = admin::stunner::kDirectionRx;
constexpr std::string_view kTx = admin::stunner::kDirectionTx;
constexpr std::string_view kReason = ks::kLabelReason;

// clang-format off
constexpr ListenerRow kListenerRows[] = {
  {&ks::kAllocationsCreatedTotal, {}, {}, &S::allocations_created},
  {&ks::kAllocationsExpiredTotal, {}, {}, &S::allocations_expired},
  {&ks::kAllocationsEndedTotal, kReason, ks::end_reason::kDeleted, &S::allocations_deleted},
  {&ks::kAllocationsEndedTotal, kReason, ks::end_reason::kExpired, &S::allocations_expired},
  {&ks::kAllocationsEndedTotal, kReason, ks::end_reason::kListenerClosed, &S::allocations_closed},
  {&ks::kAllocationsEndedTotal, kReason, ks::end_reason::kConnectionClosed,
   &S::allocations_disconnected},
  {&ks::kAllocationsRejectedTotal, kReason, ks::reject_reason::kQuotaReached,
   &S::allocations_rejected_quota},
  {&ks::kAllocationsRejectedTotal, kReason, ks::reject_reason::kSourceQuotaReached,
   &S::allocations_rejected_source_quota},
  {&ks::kAllocationsRejectedTotal, kReason, ks::reject_reason::kInsufficientCapacity,
   &S::allocations_rejected_capacity},
  {&ks::kAllocationsRejectedTotal, kReason, ks::reject_reason::kTryAlternate,
   &S::allocations_redirected},
  {&ks::kAllocationsRejectedTotal, kReason, ks::reject_reason::kForbidden, &S::permission_denied},
  {&ks::kPermissionsRejectedTotal, kReason, ks::capacity_reason::kPermissionLimit,
   &S::permissions_rejected_capacity},
  {&ks::kPermissionsRejectedTotal, kReason, ks::capacity_reason::kChannelLimit,
   &S::channels_rejected_capacity},
  {&ks::kAuthFailuresTotal, kReason, ks::auth_reason::kUnknownUser, &S::auth_unknown_user},
  {&ks::kAuthFailuresTotal, kReason, ks::auth_reason::kBadIntegrity, &S::auth_bad_integrity},
  {&ks::kAuthFailuresTotal, kReason, ks::auth_reason::kStaleNonce, &S::auth_stale_nonce},
  {&ks::kAuthFailuresTotal, kReason, ks::auth_reason::kExpiredCredential, &S::auth_expired},
  {&ks::kAuthFailuresTotal, kReason, ks::auth_reason::kThrottled, &S::auth_throttled},
  {&ks::kSourcesBlockedTotal, {}, {}, &S::sources_blocked},
  {&ks::kMobilityTotal, ks::kLabelOutcome, ks::mobility_outcome::kMoved, &S::mobility_moves},
  {&ks::kMobilityTotal, ks::kLabelOutcome, ks::mobility_outcome::kRefused, &S::mobility_refused},
  {&ks::kRelayedPacketsTotal, ks::kLabelDirection, kRx, &S::client_packets_relayed},
  {&ks::kRelayedPacketsTotal, ks::kLabelDirection, kTx, &S::peer_packets_relayed},
  {&ks::kRelayedBytesTotal, ks::kLabelDirection, kRx, &S::client_bytes_relayed},
  {&ks::kRelayedBytesTotal, ks::kLabelDirection, kTx, &S::peer_bytes_relayed},
  {&ks::kDropsTotal, kReason, ks::drop_reason::kNoPermission, &S::drop_no_permission},
  {&ks::kDropsTotal, kReason, ks::drop_reason::kPeerNotAllowed, &S::drop_peer_denied},
  {&ks::kDropsTotal, kReason, ks::drop_reason::kNoAllocation, &S::drop_no_allocation},
  {&ks::kDropsTotal, kReason, ks::drop_reason::kUnboundChannel, &S::drop_unknown_channel},
  {&ks::kDropsTotal, kReason, ks::drop_reason::kMalformed, &S::drop_malformed, &S::drop_not_turn},
  {&ks::kDropsTotal, kReason, ks::drop_reason::kOverBandwidth, &S::drop_over_bandwidth},
  // TURN-UDP: what the kernel fast path can relay.
  {&ks::kOffloadRelayedPacketsTotal, ks::kLabelDirection, kRx, &S::offload_packets_to_peer,
   nullptr, nullptr, Which::kTurnUdp},
  {&ks::kOffloadRelayedPacketsTotal, ks::kLabelDirection, kTx, &S::offload_packets_to_client,
   nullptr, nullptr, Which::kTurnUdp},
  {&ks::kOffloadRelayedBytesTotal, ks::kLabelDirection, kRx, &S::offload_bytes_to_peer, nullptr,
   nullptr, Which::kTurnUdp},
  {&ks::kOffloadRelayedBytesTotal, ks::kLabelDirection, kTx, &S::offload_bytes_to_client,
   nullptr, nullptr, Which::kTurnUdp},
  {&ks::kOffloadRefusedTotal, {}, {}, &S::channels_offload_refused, nullptr, nullptr,
   Which::kTurnUdp},
  // TURN-TCP and TURN-TLS: connections, and RFC 6062 peer connections.
  {&ks::kConnectionsClosedTotal, kReason, ks::close_reason::kConnectionLimit, nullptr, nullptr,
   &T::closed_limit, Which::kTcp},
  {&ks::kConnectionsClosedTotal, kReason, ks::close_reason::kIdleTimeout, nullptr, nullptr,
   &T::closed_idle, Which::kTcp},
  {&ks::kConnectionsClosedTotal, kReason, ks::close_reason::kHandshakeTimeout, nullptr, nullptr,
   &T::closed_handshake, Which::kTcp},
  {&ks::kConnectionsClosedTotal, kReason, ks::close_reason::kTlsError, nullptr, nullptr,
   &T::closed_tls, Which::kTcp},
  {&ks::kConnectionsClosedTotal, kReason, ks::close_reason::kFramingError, nullptr, nullptr,
   &T::closed_framing, Which::kTcp},
  {&ks::kPeerConnectionsTotal, ks::kLabelEvent, ks::peer_event::kConnected,
   &S::peer_connections_connected, nullptr, nullptr, Which::kTcp},
  {&ks::kPeerConnectionsTotal, ks::kLabelEvent, ks::peer_event::kFailed,
   &S::peer_connections_failed, nullptr, nullptr, Which::kTcp},
  {&ks::kPeerConnectionsTotal, ks::kLabelEvent, ks::peer_event::kAccepted,
   &S::peer_connections_accepted, nullptr, nullptr, Which::kTcp},
  {&ks::kPeerConnectionsTotal, ks::kLabelEvent, ks::peer_event::kRefused,
   &S::peer_connections_refused, nullptr, nullptr, Which::kTcp},
  {&ks::kPeerConnectionsTotal, ks::kLabelEvent, ks::peer_event::kBound,
   &S::peer_connections_bound, nullptr, nullptr, Which::kTcp},
  {&ks::kPeerConnectionsTotal, ks::kLabelEvent, ks::peer_event::kUnbound,
   &S::peer_connections_unbound, nullptr, nullptr, Which::kTcp},
  {&ks::kPeerConnectionsTotal, ks::kLabelEvent, ks::peer_event::kHandedOver, nullptr, nullptr,
   &T::handed_over, Which::kTcp},
  {&ks::kPeerConnectionsTotal, ks::kLabelEvent, ks::peer_event::kHeld,
   &S::connection_reads_held, nullptr, nullptr, Which::kTcp},
};
// clang-format on

// Each family's rows together, so that listenerFamilies() makes each family once.
constexpr bool rowsOfAFamilyAreTogether() {
  for (size_t i = 0; i < std::size(kListenerRows); ++i) {
    for (size_t j = i + 2; j < std::size(kListenerRows); ++j) {
      // By name: GCC's sanitizer builds do not take address comparisons of distinct objects
      // as constant expressions.
      if (kListenerRows[j].spec->name == kListenerRows[i].spec->name &&
          kListenerRows[j - 1].spec->name != kListenerRows[i].spec->name) {
        return false;
      }
    }
  }
  return true;
}
static_assert(rowsOfAFamilyAreTogether(), "kListenerRows: keep a family's rows together");

bool applies(Which which, const worker::ListenerSpec& l) {
  switch (which) {
    case Which::kAll:
      return true;
    case Which::kTurnUdp:
      return l.protocol == TransportProtocol::kUdp && !l.tls;
    case Which::kTcp:
      return l.protocol == TransportProtocol::kTcp;
  }
  return false;
}

// The families of kListenerRows, each once, in the table's order, with every listener's samples.
std::vector<admin::MetricFamily> listenerFamilies(const worker::WorkerStats& stats,
                                                  const worker::ConfigSnapshot& snapshot) {
  std::vector<admin::MetricFamily> out;
  std::vector<const admin::MetricSpec*> specs;
  for (const ListenerRow& row : kListenerRows) {
    if (specs.empty() || specs.back() != row.spec) {
      specs.push_back(row.spec);
      out.push_back(admin::familyOf(*row.spec));
    }
  }
  for (const worker::ListenerSpec& l : snapshot.listeners) {
    const worker::ListenerTraffic& t = at(stats.traffic, l.id);
    const turn::ServerStats& s = at(stats.turn_by_listener, l.id);
    size_t family = 0;
    for (const ListenerRow& row : kListenerRows) {
      if (specs[family] != row.spec) ++family;
      if (!applies(row.which, l)) continue;
      uint64_t value = row.counter != nullptr ? s.*row.counter : t.*row.traffic;
      if (row.plus != nullptr) value += s.*row.plus;
      out[family].samples.push_back(
          {row.label.empty() ? labels({{ks::kLabelListener, l.name}})
                             : labels({{ks::kLabelListener, l.name}, {row.label, row.value}}),
           static_cast<double>(value)});
    }
  }
  return out;
}

}  // namespace

std::vector<admin::MetricFamily> buildMetrics(const worker::WorkerStats& stats,
                                              const worker::ConfigSnapshot& snapshot,
                                              const admin::CapacityReport& capacity,
                                              const std::vector<config::ConfigFault>& faults) {
  namespace st = admin::stunner;
  std::vector<admin::MetricFamily> out;

  auto active = admin::familyOf(st::kAllocationsActive);
  active.samples.push_back({{}, static_cast<double>(stats.allocations)});
  out.push_back(std::move(active));

  auto connections = admin::familyOf(st::kListenerConnections);
  auto connections_total = admin::familyOf(st::kListenerConnectionsTotal);
  auto packets = admin::familyOf(st::kListenerPacketsTotal);
  auto bytes = admin::familyOf(st::kListenerBytesTotal);
  auto info = admin::familyOf(ks::kDataplaneInfo);
  info.samples.push_back({labels({{ks::kLabelRegion, snapshot.region}}), 1});
  for (const worker::ListenerSpec& l : snapshot.listeners) {
    const worker::ListenerTraffic& t = at(stats.traffic, l.id);
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
  }
  // STUNner's cluster series: traffic relayed to (tx) and from (rx) each cluster's peers.
  auto cluster_packets = admin::familyOf(st::kClusterPacketsTotal);
  auto cluster_bytes = admin::familyOf(st::kClusterBytesTotal);
  const auto& names = snapshot.turn->cluster_names;
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
  auto datagrams = admin::familyOf(ks::kUdpDatagramsTotal);
  for (const auto& [outcome, value] :
       {std::pair{ks::udp_outcome::kReceived, stats.datagrams_received},
        {ks::udp_outcome::kTruncated, stats.datagrams_truncated},
        {ks::udp_outcome::kSent, stats.datagrams_sent},
        {ks::udp_outcome::kSendFailed, stats.send_dropped}}) {
    datagrams.samples.push_back(
        {labels({{ks::kLabelOutcome, outcome}}), static_cast<double>(value)});
  }
  auto syscalls = admin::familyOf(ks::kUdpSyscallsTotal);
  syscalls.samples.push_back(
      {labels({{ks::kLabelDirection, kRx}}), static_cast<double>(stats.receive_syscalls)});
  syscalls.samples.push_back(
      {labels({{ks::kLabelDirection, kTx}}), static_cast<double>(stats.send_syscalls)});
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
  auto config_faults = admin::familyOf(ks::kConfigFaults);
  for (const config::ConfigFault& f : faults) {
    config_faults.samples.push_back(
        {labels({{ks::kLabelKind, f.kind}, {ks::kLabelName, f.name}}), 1});
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
  for (auto* f :
       {&connections, &connections_total, &packets, &bytes, &cluster_packets, &cluster_bytes}) {
    out.push_back(std::move(*f));
  }
  for (auto& f : listenerFamilies(stats, snapshot)) out.push_back(std::move(f));
  for (auto* f : {&info, &capacity_over, &capacity_headroom, &config_faults, &offload_channels,
                  &offload_outcomes, &gso, &gro, &datagrams, &syscalls, &durations}) {
    out.push_back(std::move(*f));
  }
  for (auto& f : admin::collectProcessMetrics()) out.push_back(std::move(f));
  return out;
}

}  // namespace kturn::daemon
