// The seven Prometheus series stunnerd exports (internal/telemetry/telemetry.go and
// docs/MONITORING.md, STUNner v1.2.1), declared once so kturnd exports them under exactly the
// same names, help strings, types and label names and existing STUNner dashboards keep working.
// docs/metrics.md explains each series and what kturn counts into it.
//
// Labels:
//   name       the listener's or cluster's name from the dataplane config
//   direction  "rx" (received by the gateway) or "tx" (sent by the gateway)
//
// stunnerd exports through the OpenTelemetry Prometheus exporter, which also adds
// otel_scope_name/otel_scope_version labels to every point and a target_info series; kturn
// does not reproduce those exporter artifacts.
#pragma once

#include <array>
#include <string_view>

#include "admin/metric_family.h"

namespace kturn::admin::stunner {

inline constexpr std::string_view kLabelName = "name";
inline constexpr std::string_view kLabelDirection = "direction";
inline constexpr std::string_view kDirectionRx = "rx";  // telemetry.Incoming
inline constexpr std::string_view kDirectionTx = "tx";  // telemetry.Outgoing

inline constexpr std::array<std::string_view, 0> kNoLabels{};
inline constexpr std::array<std::string_view, 1> kNameLabel{kLabelName};
// The order kturn renders them in; Prometheus does not care, client_golang sorts by name.
inline constexpr std::array<std::string_view, 2> kDirectionNameLabels{kLabelDirection, kLabelName};

inline constexpr MetricSpec kAllocationsActive{
    .name = "stunner_allocations_active",
    .help = "Number of active allocations",
    .type = MetricType::kGauge,
    .label_names = kNoLabels,
};

inline constexpr MetricSpec kListenerPacketsTotal{
    .name = "stunner_listener_packets_total",
    .help = "Number of datagrams sent or received at a listener",
    .type = MetricType::kCounter,
    .label_names = kDirectionNameLabels,
};

inline constexpr MetricSpec kListenerBytesTotal{
    .name = "stunner_listener_bytes_total",
    .help = "Number of bytes sent or received at a listener",
    .type = MetricType::kCounter,
    .label_names = kDirectionNameLabels,
};

inline constexpr MetricSpec kListenerConnectionsTotal{
    .name = "stunner_listener_connections_total",
    .help = "Number of all downstream connections observed at a listener",
    .type = MetricType::kCounter,
    .label_names = kNameLabel,
};

// An OpenTelemetry Int64UpDownCounter in stunnerd, which its exporter renders as a gauge.
inline constexpr MetricSpec kListenerConnections{
    .name = "stunner_listener_connections",
    .help = "Number of active downstream connections at a listener",
    .type = MetricType::kGauge,
    .label_names = kNameLabel,
};

inline constexpr MetricSpec kClusterPacketsTotal{
    .name = "stunner_cluster_packets_total",
    .help = "Number of datagrams sent to or received from backends",
    .type = MetricType::kCounter,
    .label_names = kDirectionNameLabels,
};

inline constexpr MetricSpec kClusterBytesTotal{
    .name = "stunner_cluster_bytes_total",
    .help = "Number of bytes sent to or received from backends",
    .type = MetricType::kCounter,
    .label_names = kDirectionNameLabels,
};

inline constexpr std::array<const MetricSpec*, 7> kAllSeries{
    &kAllocationsActive,   &kListenerPacketsTotal, &kListenerBytesTotal, &kListenerConnectionsTotal,
    &kListenerConnections, &kClusterPacketsTotal,  &kClusterBytesTotal,
};

}  // namespace kturn::admin::stunner
