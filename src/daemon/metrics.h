// Maps the workers' counters onto Prometheus series (docs/metrics.md): STUNner's names for what
// STUNner has, kturn_* for the rest. Label values come from config names only.
#pragma once

#include <vector>

#include "admin/capacity_gate.h"
#include "admin/metric_family.h"
#include "worker/config_snapshot.h"
#include "worker/worker.h"

namespace kturn::daemon {

// `capacity`: the readiness marks' state (admin.capacity), for kturn_capacity_*.
std::vector<admin::MetricFamily> buildMetrics(const worker::WorkerStats& stats,
                                              const worker::ConfigSnapshot& snapshot,
                                              const admin::CapacityReport& capacity = {});

}  // namespace kturn::daemon
