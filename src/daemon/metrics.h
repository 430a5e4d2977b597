// Maps the workers' counters onto Prometheus series (docs/metrics.md): STUNner's names for what
// STUNner has, kturn_* for the rest. Label values come from config names only.
#pragma once

#include <vector>

#include "admin/metric_family.h"
#include "daemon/dataplane.h"
#include "daemon/worker.h"

namespace kturn::daemon {

std::vector<admin::MetricFamily> buildMetrics(const WorkerStats& stats, const Dataplane& dataplane);

}  // namespace kturn::daemon
