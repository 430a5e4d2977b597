// The operator's own health and metrics endpoints, where STUNner's operator has them
// (controller-runtime's --health-probe-bind-address :8081 with /healthz and /readyz,
// --metrics-bind-address :8080 with /metrics).
#pragma once

#include <vector>

#include "admin/handler.h"
#include "admin/metric_family.h"
#include "cds/access.h"
#include "operator/controller.h"

namespace kturn::op {

// /readyz: 200 once every watched kind has been listed (the operator renders and serves CDS from
// a whole cluster), 503 naming why before. /healthz is the process answering at all.
admin::Handler readyzHandler(const Controller& controller);
admin::Handler healthzHandler();

// The kturn_operator_* series: the controller's counters, leadership and sync, CDS watchers and
// what CDS access control refused.
std::vector<admin::MetricFamily> operatorMetrics(const ControllerStats& stats, size_t cdsWatchers,
                                                 const cds::AccessStats& cdsAccess = {});

}  // namespace kturn::op
