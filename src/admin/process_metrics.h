// The standard process_* series (the names Prometheus client libraries export, which STUNner
// gets from client_golang's process collector and its docs/MONITORING.md lists), read from
// /proc/self at scrape time. Linux only; on read errors the affected series are left out.
#pragma once

#include <vector>

#include "admin/metric_family.h"

namespace kturn::admin {

// process_cpu_seconds_total, process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds.
std::vector<MetricFamily> collectProcessMetrics();

}  // namespace kturn::admin
