// Maps the workers' counters onto Prometheus series (docs/metrics.md): STUNner's names for what
// STUNner has, kturn_* for the rest. Label values come from config names only.
#pragma once

#include <vector>

#include "admin/capacity_gate.h"
#include "admin/metric_family.h"
#include "config/validator.h"
#include "worker/config_snapshot.h"
#include "worker/worker.h"

namespace kturn::daemon {

// `capacity`: the readiness marks' state (admin.capacity), for kturn_capacity_*; `faults`: the
// listeners and clusters of the last config that do not run as it says, for kturn_config_faults.
std::vector<admin::MetricFamily> buildMetrics(const worker::WorkerStats& stats,
                                              const worker::ConfigSnapshot& snapshot,
                                              const admin::CapacityReport& capacity = {},
                                              const std::vector<config::ConfigFault>& faults = {});

}  // namespace kturn::daemon
