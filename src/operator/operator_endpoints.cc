#include "operator/operator_endpoints.h"

#include <string_view>

namespace kturn::op {
namespace {

admin::MetricFamily family(std::string_view name, std::string_view help, admin::MetricType type,
                           double value) {
  return admin::MetricFamily{.name = std::string(name),
                             .help = std::string(help),
                             .type = type,
                             .samples = {admin::Sample{.labels = {}, .value = value}},
                             .histograms = {}};
}

}  // namespace

admin::Handler healthzHandler() {
  return [](const admin::Request&) { return admin::Response{.status = 200, .body = "ok\n"}; };
}

admin::Handler readyzHandler(const Controller& controller) {
  return [&controller](const admin::Request&) {
    if (controller.stats().synced) return admin::Response{.status = 200, .body = "ok\n"};
    return admin::Response{.status = 503,
                           .body = "watches not synced: not every kind listed yet\n"};
  };
}

std::vector<admin::MetricFamily> operatorMetrics(const ControllerStats& stats, size_t cdsWatchers,
                                                 const cds::AccessStats& cdsAccess) {
  using admin::MetricType;
  const auto n = [](uint64_t v) { return static_cast<double>(v); };
  admin::MetricFamily requests{
      .name = "kturn_operator_cds_requests_total",
      .help =
          "CDS requests for configs by what access control decided (docs/cds.md): allowed "
          "(a token it accepted), open (an unauthenticated Gateway), unauthenticated (401), "
          "forbidden (403), busy (503, too many token reviews in flight).",
      .type = MetricType::kCounter,
      .samples = {},
      .histograms = {}};
  for (auto [outcome, value] : {std::pair{"allowed", cdsAccess.allowed},
                                {"open", cdsAccess.open},
                                {"unauthenticated", cdsAccess.unauthenticated},
                                {"forbidden", cdsAccess.forbidden},
                                {"busy", cdsAccess.busy}}) {
    requests.samples.push_back({.labels = {{"outcome", outcome}}, .value = n(value)});
  }
  std::vector<admin::MetricFamily> out = {
      family("kturn_operator_reconciles_total", "Renders of the whole cluster.",
             MetricType::kCounter, n(stats.reconciles)),
      family("kturn_operator_objects_applied_total",
             "Owned objects (Deployments, Services) applied by server-side apply.",
             MetricType::kCounter, n(stats.applied)),
      family("kturn_operator_objects_deleted_total", "Owned objects deleted.", MetricType::kCounter,
             n(stats.deleted)),
      family("kturn_operator_statuses_written_total", "Status subresources written.",
             MetricType::kCounter, n(stats.statusesWritten)),
      family("kturn_operator_writes_failed_total",
             "Applies, deletions and status writes the API server refused or did not answer; "
             "retried.",
             MetricType::kCounter, n(stats.writesFailed)),
      family("kturn_operator_configs_rejected_total",
             "Rendered dataplane configs that failed validation and were not served.",
             MetricType::kCounter, n(stats.configsRejected)),
      family("kturn_operator_gateways", "Gateways of this controller in the last render.",
             MetricType::kGauge, n(stats.gateways)),
      family("kturn_operator_cds_configs", "Dataplane configs served over CDS.", MetricType::kGauge,
             n(stats.configsServed)),
      family("kturn_operator_cds_watchers", "Open CDS watch connections (dataplane pods, auth).",
             MetricType::kGauge, n(cdsWatchers)),
      family("kturn_operator_leader",
             "1 while this replica leads (applies objects and writes statuses).",
             MetricType::kGauge, stats.leading ? 1 : 0),
      family("kturn_operator_synced", "1 once every watched kind has been listed.",
             MetricType::kGauge, stats.synced ? 1 : 0),
      family("kturn_operator_cds_token_reviews_total",
             "CDS access decisions made with the Kubernetes API (TokenReview and, when needed, "
             "SubjectAccessReview), the rest came from the few-second cache.",
             MetricType::kCounter, n(cdsAccess.reviews)),
      family("kturn_operator_cds_connections_refused_total",
             "CDS connections closed at once: over the total or per-address limit.",
             MetricType::kCounter, n(cdsAccess.connections_refused)),
      family("kturn_operator_cds_watches_expired_total",
             "CDS watches closed when the token that opened them expired (the client reconnects).",
             MetricType::kCounter, n(cdsAccess.watches_expired)),
  };
  out.push_back(std::move(requests));
  return out;
}

}  // namespace kturn::op
