// Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format):
//
//   # HELP stunner_listener_packets_total Number of datagrams sent or received at a listener
//   # TYPE stunner_listener_packets_total counter
//   stunner_listener_packets_total{direction="rx",name="udp"} 42
//   # HELP kturn_request_duration_seconds ...
//   # TYPE kturn_request_duration_seconds histogram
//   kturn_request_duration_seconds_bucket{method="allocate",le="0.001"} 3
//   kturn_request_duration_seconds_bucket{method="allocate",le="+Inf"} 4
//   kturn_request_duration_seconds_sum{method="allocate"} 0.0042
//   kturn_request_duration_seconds_count{method="allocate"} 4
//
// Escaping: label values escape '\', '"' and newline; HELP text escapes '\' and newline.
// Values print in shortest round-trip form ("42", "0.25", "1e+21"), and +Inf, -Inf, NaN.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "admin/metric_family.h"

namespace kturn::admin {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

// Renders the families in the given order. Characters not allowed in metric and label names
// are replaced by '_' so a mistake shows as an odd name rather than an unparsable scrape.
std::string renderPrometheus(std::span<const MetricFamily> families);

// Exposed for tests and for callers building label values by hand.
std::string escapeLabelValue(std::string_view value);
std::string escapeHelp(std::string_view help);
std::string formatValue(double value);

}  // namespace kturn::admin
