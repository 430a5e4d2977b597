// The /metrics route: renders what `collect` returns, on every scrape. Nothing is cached, so a
// scrape always sees the counters as they are (and costs one pass over the stats shards).
#pragma once

#include <functional>
#include <vector>

#include "admin/handler.h"
#include "admin/metric_family.h"

namespace kturn::admin {

// Runs on the admin thread: it must be thread-safe (read the shards' atomics) and quick. An
// exception becomes a 500, which Prometheus records as a failed scrape (up == 0).
using MetricsCollector = std::function<std::vector<MetricFamily>()>;

Handler metricsHandler(MetricsCollector collect);

}  // namespace kturn::admin
