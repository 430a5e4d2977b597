#include "admin/metrics_handler.h"

#include "admin/prometheus_text.h"

namespace kturn::admin {

Handler metricsHandler(MetricsCollector collect) {
  return [collect = std::move(collect)](const Request&) {
    const std::vector<MetricFamily> families = collect();
    return Response{
        .status = 200, .content_type = kPrometheusContentType, .body = renderPrometheus(families)};
  };
}

}  // namespace kturn::admin
